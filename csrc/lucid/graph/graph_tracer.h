#pragma once
// The concrete tracer: records primitive calls into a Graph.
//
// Memory is tracked per storage, as PyTorch's functionalization does: every
// storage a trace touches (a concrete tensor's memory, captured whole as a
// 1-D buffer, or a traced value's placeholder) has current contents, and a
// tensor is a layout in them. Reading a tensor is a view of the contents
// (free when contiguous); writing through a tensor -- any view of any
// storage -- replaces the contents, so every alias reads the new values and
// a captured buffer gets a writeback.
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lucid/graph/ir.h"
#include "lucid/graph/trace_hook.h"

namespace lucid::graph {

class GraphTracer final : public Tracer {
 public:
  // A symbolic tensor for a step argument / a host scalar feed.
  Tensor add_input(const TensorMeta& meta);
  Tensor add_feed(const TensorMeta& meta);
  void add_output(const Tensor& t);
  // The value id holding `t`'s current contents in this trace (capturing a
  // concrete tensor's memory).
  int value_of(const Tensor& t);
  // Captures `t` as a buffer supplied on every run instead of at trace time
  // (in the order of these calls): Executable::run's `bound` argument.
  void bind_per_call(const Tensor& t);
  // Makes `t` an owner of memory the trace captured through another handle
  // (a parameter read only through p.detach()), so that a later
  // `t.data = ...` invalidates the executable. Nothing if not captured.
  void own_if_captured(const Tensor& t);

  std::vector<Tensor> record(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                             const std::vector<TensorMeta>& output_metas) override;
  void assign(const Tensor& target, const Tensor& value) override;
  Tensor random_key(uint64_t count) override;

  // Makes every writeback recorded since `before` (a copy of writebacks()
  // taken earlier) conditional: where(cond, contents before, new contents).
  // A compiled step with a GradScaler guards the optimizer update this way,
  // so an overflow step leaves parameters and state as they were.
  void guard_writebacks_since(const std::vector<Writeback>& before, const Tensor& cond);
  const std::vector<Writeback>& writebacks() const { return graph_.writebacks; }

  // Feeds that must be filled with fresh random keys on every run, with the
  // number of draws each one covers.
  const std::vector<std::pair<int, uint64_t>>& random_key_feeds() const { return random_key_feeds_; }
  Graph& graph() { return graph_; }
  // Ends the trace: drops what it knew about storages (the graph keeps its
  // own references to captured ones).
  Graph take_graph();

 private:
  // The current contents of one storage: a 1-D value of all its elements
  // (`flat`), or a value laid out row-major over all of them (`whole`),
  // whichever the last write left; the other is derived when needed.
  struct Contents {
    std::shared_ptr<Storage> storage;  // kept alive so its address stays unique for the trace
    TensorMeta flat_meta;              // [elements], dtype, device
    int capture = -1;                  // concrete memory: its capture
    int flat = -1;
    int whole = -1;
    uint64_t writes = 0;                             // writes recorded so far
    std::vector<std::pair<Layout, int>> reads;       // values read since the last write, by layout
  };

  Tensor new_value(int value);  // a symbolic tensor with memory of its own
  Contents& contents_of(const Tensor& t);
  void add_owner(const Contents& c, const Tensor& t);  // t reaches c's captured memory
  int flat_value(Contents& c);
  int read(Contents& c, const Layout& layout, const TensorMeta& meta);
  void write(Contents& c, const Layout& layout, int value);
  int node(const PrimitivePtr& prim, const std::vector<int>& inputs, const TensorMeta& meta);

  Graph graph_;
  std::unordered_map<const Storage*, Contents> contents_;
  std::vector<const Storage*> storage_of_capture_;
  std::vector<std::pair<int, uint64_t>> random_key_feeds_;  // (feed index, draws)
};

}  // namespace lucid::graph
