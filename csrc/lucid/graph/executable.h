#pragma once
// A compiled graph: one call runs the whole traced step (forward, backward,
// optimizer update) with no Python and no eager dispatch. Backends provide
// the implementation (backend/cpu/executable.cpp, backend/metal/...).
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lucid/graph/ir.h"

namespace lucid::graph {

struct RandomKeyFeed {
  int feed = -1;        // index into Graph::feeds
  uint64_t draws = 0;   // numbers the key covers (the generator advances by this)
};

class Executable {
 public:
  virtual ~Executable() = default;
  // `inputs` bind the step arguments (validated against the traced metas);
  // `scalars` fill the non-random feeds in order; `bound` supplies the
  // captures bound per call, in capture order. Writes back captured buffers
  // and returns the graph outputs as new tensors. Runs of one executable are
  // serialised: it owns one scratch arena and one set of feed buffers.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<double>& scalars,
                          const std::vector<Tensor>& bound = {});
  // False when a captured tensor no longer owns the buffer it was bound to
  // (e.g. `p.data = ...` after compiling): the caller must trace again.
  bool bindings_valid() const;

  virtual std::string describe() const = 0;

  // Per-step timing, for finding where a step's time goes. While enabled,
  // every run adds each schedule entry's wall time to its total; backends
  // without it report nothing.
  struct ProfileEntry {
    std::string step;     // e.g. "matmul [64,256] <- [64,784] x [784,256]"
    double seconds = 0;   // summed over the profiled runs
  };
  virtual void set_profiling(bool on) { (void)on; }
  virtual std::vector<ProfileEntry> profile() const { return {}; }
  virtual uint64_t profiled_runs() const { return 0; }
  size_t num_scalar_feeds() const { return scalar_feeds_.size(); }
  size_t num_bound() const { return bound_captures_.size(); }
  const Graph& graph() const { return graph_; }

  // Executable runs on this thread, for the cost-model check (one run per step).
  static uint64_t run_count();

 protected:
  Executable(Graph graph, std::vector<RandomKeyFeed> random_feeds);
  // Runs with feeds already laid out in `feed_values` (one host tensor per feed).
  virtual std::vector<Tensor> execute(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feed_values) = 0;

  Graph graph_;
  std::vector<RandomKeyFeed> random_feeds_;
  std::vector<int> scalar_feeds_;  // feed indices filled from `scalars`
  std::vector<Tensor> feed_buffers_;
  std::vector<int> bound_captures_;  // capture indices bound per call
  std::mutex run_mutex_;
};

using Compiler = std::shared_ptr<Executable> (*)(Graph graph, std::vector<RandomKeyFeed> random_feeds);
void register_compiler(DeviceType device, Compiler c);
// Optimises `graph` (passes.h) and compiles it for `device`.
std::shared_ptr<Executable> compile(Graph graph, std::vector<RandomKeyFeed> random_feeds, DeviceType device);
// Optimises `graph` and hands it to `compiler` instead of a device's: how
// tests run a backend's lowering on the host (e.g. the Metal plans).
using CompileFn = std::function<std::shared_ptr<Executable>(Graph, std::vector<RandomKeyFeed>)>;
std::shared_ptr<Executable> compile(Graph graph, std::vector<RandomKeyFeed> random_feeds, const CompileFn& compiler);

}  // namespace lucid::graph
