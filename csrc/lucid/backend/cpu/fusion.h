#pragma once
// Elementwise fusion for the CPU executable: a chain of float32/bool
// elementwise nodes over one shape runs as one pass over memory, tile by
// tile, so intermediates stay in registers-sized buffers instead of memory.
// Each instruction uses the same scalar definitions as the eager kernels
// (math.h), so fused and eager results are bit-identical.
#include <cstdint>
#include <vector>

#include "lucid/graph/ir.h"

namespace lucid::cpu {

struct FusedInstr {
  OpKind kind;      // Unary, Binary, Where, Cast
  uint8_t op = 0;   // UnaryOp / BinaryOp
  int dst = -1;     // register
  int src[3] = {-1, -1, -1};
};

// One operand read from memory: a full tensor of the group's shape, or a
// one-element tensor broadcast to it.
struct FusedInput {
  int value = -1;
  int reg = -1;
  bool scalar = false;
  bool is_bool = false;
};

struct FusedOutput {
  int value = -1;
  int reg = -1;
  bool is_bool = false;
};

struct FusedGroup {
  std::vector<int> nodes;  // graph node indices, in order
  int64_t numel = 0;
  int num_regs = 0;
  std::vector<FusedInput> inputs;
  std::vector<FusedOutput> outputs;
  std::vector<FusedInstr> code;
};

// Whether node `node` can join a fused group (float32/bool elementwise).
bool fusable_node(const graph::Graph& g, int node);
// Groups runs of two or more consecutive fusable nodes over one shape.
// `last_use[v]` is the last node reading value v (>= nodes.size() for
// outputs and writebacks); a value read after its group is materialized.
std::vector<FusedGroup> plan_fusion(const graph::Graph& g, const std::vector<int>& last_use);

// Runs a group: `in_ptrs[k]` addresses inputs[k], `out_ptrs[k]` outputs[k].
void run_fused(const FusedGroup& grp, const std::vector<const void*>& in_ptrs, const std::vector<void*>& out_ptrs);

}  // namespace lucid::cpu
