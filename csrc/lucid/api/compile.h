#pragma once
// Compiled steps for native apps, the C++ counterparts of lucid.compile:
//   - FusedStep: forward + loss + backward + optimizer update traced once
//     per signature into one executable (Python's fused_step);
//   - CompiledOptimizer: an optimizer step over every parameter of every
//     group as one executable (Python's compile_optimizer).
// Both use the core's GraphTracer, the eager tape run under the tracer for
// backward, each engine's update_with_ops with host scalar feeds, and
// graph::compile + graph::ExecutableCache: the same executables Python runs.
//
//   lucid::optim::Optimizer opt("adam", {w, b}, {{"lr", 1e-2}});
//   lucid::compile::FusedStep step([&](const std::vector<lucid::Tensor>& in) {
//     return lucid::mean(lucid::square(lucid::linear(in[0], w, b) - in[1]));
//   }, opt);
//   lucid::Tensor loss = step({x, y});   // parameters and state updated in place
//
// A trace records the path the step function took on the first call with a
// given signature (like torch.jit.trace): branches on data are baked in, and
// reading a value inside the step function (data<T>()) raises.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lucid/api/optimizer.h"
#include "lucid/core/tensor.h"
#include "lucid/graph/cache.h"
#include "lucid/optim/engine.h"

namespace lucid::compile {

// Builds the loss from the step's inputs (the model input, then targets):
// a scalar tensor. Parameters are captured by the function (closures).
using StepFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

struct CacheInfo {
  uint64_t hits = 0;
  uint64_t misses = 0;
  size_t entries = 0;
  double compile_seconds = 0;
  std::string last_miss;  // why the last compile happened ("first call", "inputs changed: ...")
};

// An engine optimizer (one param group) and its hyper-parameters, read on
// every call; both must outlive the step that uses them.
struct EngineGroup {
  optim::EngineOptimizer* engine = nullptr;
  const optim::Hyper* hyper = nullptr;
};

namespace detail {
// A group as one call sees it.
struct GroupView {
  optim::EngineOptimizer* engine;
  optim::Hyper hyper;
};
using GroupSource = std::function<std::vector<GroupView>()>;
}  // namespace detail

class FusedStep {
 public:
  // The parameters are the optimizer's.
  FusedStep(StepFunction fn, optim::Optimizer& optimizer, size_t cache_size = 8);
  // `params`: every parameter the step function uses (frozen ones too; their
  // requires_grad is part of the signature); it must hold every optimized one.
  FusedStep(StepFunction fn, std::vector<Tensor> params, optim::Optimizer& optimizer, size_t cache_size = 8);
  FusedStep(StepFunction fn, std::vector<Tensor> params, std::vector<EngineGroup> groups, size_t cache_size = 8);

  // Behaves like zero_grad(); loss = fn(inputs); backward(loss);
  // optimizer.step() and returns the loss, as one executable run. Every
  // check happens before anything runs: a bad input or hyper-parameter
  // throws and leaves parameters, state and step counts as they were.
  Tensor operator()(const std::vector<Tensor>& inputs);

  CacheInfo cache_info() const;
  size_t cache_size() const { return cache_.capacity(); }
  void set_cache_size(size_t n) { cache_.set_capacity(n); }
  const graph::ExecutableCache& cache() const { return cache_; }

 private:
  struct Entry {
    std::shared_ptr<graph::Executable> executable;
    double compile_seconds = 0;
    std::vector<std::pair<size_t, size_t>> slots;  // (group, index) updated by the executable
  };
  using Parts = std::vector<std::pair<std::string, std::string>>;
  std::vector<Tensor> params() const;
  Parts signature(const std::vector<Tensor>& inputs, const std::vector<detail::GroupView>& groups) const;
  Entry trace(const std::vector<Tensor>& inputs, const std::vector<detail::GroupView>& groups);

  StepFunction fn_;
  std::function<std::vector<Tensor>()> params_;
  detail::GroupSource groups_;
  graph::ExecutableCache cache_;
  std::unordered_map<std::string, Entry> entries_;
  Parts last_signature_;
  std::string last_miss_;
};

class CompiledOptimizer {
 public:
  explicit CompiledOptimizer(optim::Optimizer& optimizer, size_t cache_size = 8);
  explicit CompiledOptimizer(std::vector<EngineGroup> groups, size_t cache_size = 8);

  // Like the optimizer's step() (parameters without a gradient are
  // skipped), as one executable over every updated parameter. The state is
  // the engines' own, so eager and compiled steps can be mixed.
  void step();

  CacheInfo cache_info() const;
  size_t cache_size() const { return cache_.capacity(); }
  void set_cache_size(size_t n) { cache_.set_capacity(n); }

 private:
  detail::GroupSource groups_;
  graph::ExecutableCache cache_;
  std::string last_miss_;
};

// What a compiled update of one group depends on beyond shapes: the
// structural flags of its rule and the identity of its state buffers.
std::string engine_structure(const optim::EngineOptimizer& engine, const optim::Hyper& hyper);

}  // namespace lucid::compile
