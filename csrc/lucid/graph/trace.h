#pragma once
// The concrete tracer: records primitive calls into a Graph. Concrete
// tensors an op touches are captured (bound to their live storage); in-place
// writes to them become writebacks, and later reads in the same trace see the
// written value.
#include <unordered_map>

#include "lucid/graph/ir.h"
#include "lucid/graph/tracer.h"

namespace lucid::graph {

class GraphTracer final : public Tracer {
 public:
  // A symbolic tensor for a step argument / a host scalar feed.
  Tensor add_input(const TensorMeta& meta);
  Tensor add_feed(const TensorMeta& meta);
  void add_output(const Tensor& t);
  // The value id of a tensor in this trace (capturing a concrete one).
  int value_of(const Tensor& t);
  // Captures `t` as a buffer supplied on every run instead of at trace time
  // (in the order of these calls): Executable::run's `bound` argument.
  void bind_per_call(const Tensor& t);

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
  // Drops the bookkeeping of captured storages (the graph keeps its own refs).
  Graph take_graph();

 private:
  Tensor symbolic(int value);
  int capture(const Tensor& t);

  Graph graph_;
  std::unordered_map<const Storage*, int> capture_of_;  // storage -> capture index
  std::unordered_map<const Storage*, int> current_;     // storage -> value holding its contents now
  std::vector<std::pair<int, uint64_t>> random_key_feeds_;  // (feed index, draws)
};

}  // namespace lucid::graph
