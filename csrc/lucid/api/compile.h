#pragma once
// Compiled steps for native apps, the C++ counterparts of lucid.compile:
//   - FusedStep: forward + loss + backward (+ clipping, accumulation, loss
//     scaling) + optimizer update as one executable (Python's fused_step /
//     train_step);
//   - CompiledOptimizer: an optimizer step over every parameter of every
//     group as one executable (Python's compile_optimizer).
// Both are thin front ends over compile::CompiledStep (lucid/compile/step.h),
// the object Python's entry points use too: the same signature check,
// cache, feeds, step counts and executables.
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
#include <optional>
#include <string>
#include <vector>

#include "lucid/api/optimizer.h"
#include "lucid/compile/grad_scaler.h"
#include "lucid/compile/step.h"
#include "lucid/core/tensor.h"
#include "lucid/optim/engine.h"

namespace lucid::compile {

// Builds the loss from the step's inputs (the model input, then targets):
// a scalar tensor. Parameters are captured by the function (closures).
using StepFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// An engine optimizer (one param group) and its hyper-parameters, read on
// every call; both must outlive the step that uses them.
struct EngineGroup {
  optim::EngineOptimizer* engine = nullptr;
  const optim::Hyper* hyper = nullptr;
};

// What a FusedStep does besides the update (Python's fused_step keywords).
struct StepOptions {
  size_t cache_size = 8;
  std::optional<double> clip_grad_norm;  // clip by total norm (the norm is the last result of run())
  double norm_type = 2.0;
  std::optional<double> clip_grad_value;
  int64_t accumulate = 1;                 // micro-batches per call, along every input's dim 0
  GradScalerState* grad_scaler = nullptr;  // loss scaling; must outlive the step
};

class FusedStep {
 public:
  // The parameters are the optimizer's.
  FusedStep(StepFunction fn, optim::Optimizer& optimizer, size_t cache_size = 8);
  FusedStep(StepFunction fn, optim::Optimizer& optimizer, const StepOptions& options);
  // `params`: every parameter the step function uses (frozen ones too; their
  // requires_grad is part of the signature); it must hold every optimized one.
  FusedStep(StepFunction fn, std::vector<Tensor> params, optim::Optimizer& optimizer, size_t cache_size = 8);
  FusedStep(StepFunction fn, std::vector<Tensor> params, std::vector<EngineGroup> groups, size_t cache_size = 8);

  // Behaves like zero_grad(); loss = fn(inputs); backward(loss);
  // optimizer.step() and returns the loss, as one executable run. Every
  // check happens before anything runs: a bad input or hyper-parameter
  // throws and leaves parameters, state and step counts as they were.
  Tensor operator()(const std::vector<Tensor>& inputs);
  // The same, returning every result: the loss, then the total gradient
  // norm when clipping by norm.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  CacheInfo cache_info() const { return step_->cache_info(); }
  size_t cache_size() const { return step_->cache_size(); }
  void set_cache_size(size_t n) { step_->set_cache_size(n); }
  CompiledStep& compiled_step() { return *step_; }

 private:
  FusedStep(StepFunction fn, std::function<std::vector<Tensor>()> params,
            std::function<std::vector<Group>()> groups, const StepOptions& options);
  std::function<std::vector<Tensor>()> params_;
  std::function<std::vector<Group>()> groups_;
  GradScalerState* scaler_;
  std::unique_ptr<CompiledStep> step_;
};

class CompiledOptimizer {
 public:
  explicit CompiledOptimizer(optim::Optimizer& optimizer, size_t cache_size = 8);
  explicit CompiledOptimizer(std::vector<EngineGroup> groups, size_t cache_size = 8);

  // Like the optimizer's step() (parameters without a gradient are
  // skipped), as one executable over every updated parameter. The state is
  // the engines' own, so eager and compiled steps can be mixed.
  void step();

  CacheInfo cache_info() const { return step_->cache_info(); }
  size_t cache_size() const { return step_->cache_size(); }
  void set_cache_size(size_t n) { step_->set_cache_size(n); }

 private:
  std::function<std::vector<Group>()> groups_;
  std::unique_ptr<CompiledStep> step_;
};

}  // namespace lucid::compile
