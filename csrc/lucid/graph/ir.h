#pragma once
// The graph IR a trace produces and backends compile: values (each one
// tensor, by meta) and nodes (one primitive call each), in recording order,
// which is a valid topological order.
#include <memory>
#include <string>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/primitive.h"

namespace lucid::graph {

enum class ValueKind : uint8_t {
  Input,    // a step argument, bound per call
  Feed,     // a host-computed scalar (hyper-parameter, step factor, random key)
  Capture,  // a live buffer (parameter, state, buffer, constant), bound at trace time
  Node,     // produced by a node
};

struct Value {
  TensorMeta meta;
  ValueKind kind = ValueKind::Node;
  int producer = -1;   // node index for ValueKind::Node
  int index = -1;      // input/feed/capture index, or the node's output number
};

struct Node {
  PrimitivePtr prim;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
};

// A live buffer the graph reads (and maybe writes back).
struct Capture {
  int value = -1;                        // the value holding its contents at entry
  std::shared_ptr<Storage> storage;      // kept alive by the graph
  // Every tensor the trace read or wrote this memory through (a parameter and
  // a detached handle of it, say): a later `.data = ...` on any of them is a
  // rebinding the cached executable must not miss.
  std::vector<std::weak_ptr<TensorImpl>> owners;
  // Bound anew on every run (Executable::run's `bound`), for buffers whose
  // owner changes between calls (an accumulated .grad); `storage` then holds
  // the last binding.
  bool bound_per_call = false;
};

// New contents for a captured buffer, written when the step completes.
struct Writeback {
  int capture = -1;
  int value = -1;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;    // value ids, in argument order
  std::vector<int> feeds;     // value ids, in feed order
  std::vector<Capture> captures;
  std::vector<int> outputs;   // value ids returned by a run
  std::vector<Writeback> writebacks;

  int add_value(const TensorMeta& meta, ValueKind kind, int producer, int index);
  // Appends a node for `prim` on `inputs`; returns its output value ids.
  std::vector<int> add_node(const PrimitivePtr& prim, const std::vector<int>& inputs,
                            const std::vector<TensorMeta>& output_metas);
  std::string dump() const;  // human-readable listing, for debugging and tests
};

}  // namespace lucid::graph
