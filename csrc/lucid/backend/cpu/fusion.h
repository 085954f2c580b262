#pragma once
// Elementwise fusion for the CPU executable: elementwise nodes of float32,
// bfloat16, float16 and bool values over one shape (with operands broadcast
// into it) run as one pass over memory, tile by tile, so intermediates stay
// in cache-sized buffers instead of memory.
// Each instruction uses the same scalar definitions as the eager kernels
// (math.h), so fused and eager results are bit-identical: registers hold
// float32, and a result of a 16-bit dtype is rounded to it as the eager
// kernel rounds its float32 result when it stores it.
#include <cstdint>
#include <vector>

#include "lucid/graph/ir.h"

namespace lucid::cpu {

struct FusedInstr {
  OpKind kind;      // Unary, Binary, Where, Cast
  uint8_t op = 0;   // UnaryOp / BinaryOp
  DType dtype = DType::Float32;  // of the result: Float16/BFloat16 results are rounded to it
  int dst = -1;                  // register
  int src[3] = {-1, -1, -1};
};

// One operand read from memory: a full tensor of the group's shape, a
// one-element tensor, or a tensor broadcast to the group's shape. A
// broadcast operand is described in the group's index space, with adjacent
// dims merged: element at group coordinates c is at sum(c[d] * strides[d]).
struct FusedInput {
  int value = -1;
  int reg = -1;
  bool scalar = false;
  DType dtype = DType::Float32;
  std::vector<int64_t> dims, strides;  // broadcast operands only (innermost last)
  bool broadcast() const { return !dims.empty(); }
};

struct FusedOutput {
  int value = -1;
  int reg = -1;
  DType dtype = DType::Float32;
};

struct FusedGroup {
  std::vector<int> nodes;  // graph node indices, in order
  int64_t numel = 0;
  int num_regs = 0;
  std::vector<FusedInput> inputs;
  std::vector<FusedOutput> outputs;
  std::vector<FusedInstr> code;
};

// Whether node `node` can join a fused group (elementwise over float32 and
// bool values, and bfloat16 and float16 ones where `sixteen_bit`, or a
// broadcast_to of such a tensor).
bool fusable_node(const graph::Graph& g, int node, bool sixteen_bit);
// Groups fusable nodes over one output shape into groups of two or more.
// Members need not be adjacent: a group runs at the place of its last
// member, so it stops growing once a node outside it reads one of its
// values. `last_use[v]` is the last node reading value v (>= nodes.size()
// for outputs and writebacks); a value read after its group is materialized.
// `sixteen_bit`: whether the runner of the groups computes bfloat16 and
// float16 values (run_fused does; the CUDA code generator not yet).
std::vector<FusedGroup> plan_fusion(const graph::Graph& g, const std::vector<int>& last_use, bool sixteen_bit);

// Runs a group: `in_ptrs[k]` addresses inputs[k], `out_ptrs[k]` outputs[k].
void run_fused(const FusedGroup& grp, const std::vector<const void*>& in_ptrs, const std::vector<void*>& out_ptrs);

}  // namespace lucid::cpu
