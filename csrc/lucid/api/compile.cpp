#include "lucid/api/compile.h"

namespace lucid::compile {

namespace {

std::function<std::vector<Group>()> optimizer_groups(optim::Optimizer& opt) {
  return [&opt] {
    std::vector<Group> out;
    for (size_t g = 0; g < opt.num_groups(); ++g) out.push_back({&opt.engine(g), std::make_shared<const optim::Hyper>(opt.hyper(g))});
    return out;
  };
}

std::function<std::vector<Group>()> engine_groups(std::vector<EngineGroup> groups) {
  for (size_t g = 0; g < groups.size(); ++g)
    LUCID_CHECK(groups[g].engine && groups[g].hyper, "engine group ", g, " has no engine or no hyper-parameters");
  return [groups = std::move(groups)] {
    std::vector<Group> out;
    for (const auto& g : groups) out.push_back({g.engine, std::make_shared<const optim::Hyper>(*g.hyper)});
    return out;
  };
}

Forward loss_forward(StepFunction fn) {
  LUCID_CHECK_T(TypeError, bool(fn), "the step function must be callable");
  return [fn = std::move(fn)](const std::vector<Tensor>& inputs) {
    Tensor loss = fn(inputs);
    if (!loss.defined() || loss.numel() != 1)
      fail<Error>("the step function must return a scalar tensor to compile a training step");
    return std::vector<Tensor>{loss};
  };
}

StepOptions with_cache_size(size_t n) {
  StepOptions o;
  o.cache_size = n;
  return o;
}

}  // namespace

FusedStep::FusedStep(StepFunction fn, std::function<std::vector<Tensor>()> params,
                     std::function<std::vector<Group>()> groups, const StepOptions& options)
    : params_(std::move(params)), groups_(std::move(groups)), scaler_(options.grad_scaler) {
  StepConfig config;
  config.mode = StepMode::Update;
  config.cache_size = options.cache_size;
  config.clip_norm = options.clip_grad_norm;
  config.norm_type = options.norm_type;
  config.clip_value = options.clip_grad_value;
  config.accumulate = options.accumulate;
  step_ = std::make_unique<CompiledStep>(std::move(config), loss_forward(std::move(fn)));
}

FusedStep::FusedStep(StepFunction fn, optim::Optimizer& optimizer, size_t cache_size)
    : FusedStep(std::move(fn), optimizer, with_cache_size(cache_size)) {}

FusedStep::FusedStep(StepFunction fn, optim::Optimizer& optimizer, const StepOptions& options)
    : FusedStep(std::move(fn), [&optimizer] { return optimizer.params(); }, optimizer_groups(optimizer), options) {}

FusedStep::FusedStep(StepFunction fn, std::vector<Tensor> params, optim::Optimizer& optimizer, size_t cache_size)
    : FusedStep(std::move(fn), [params = std::move(params)] { return params; }, optimizer_groups(optimizer),
                with_cache_size(cache_size)) {}

FusedStep::FusedStep(StepFunction fn, std::vector<Tensor> params, std::vector<EngineGroup> groups, size_t cache_size)
    : FusedStep(std::move(fn), [params = std::move(params)] { return params; }, engine_groups(std::move(groups)),
                with_cache_size(cache_size)) {}

std::vector<Tensor> FusedStep::run(const std::vector<Tensor>& inputs) {
  Call call;
  call.args = inputs;
  call.groups = groups_();
  call.params = params_();
  if (scaler_ && scaler_->enabled) call.scaler = scaler_;
  return (*step_)(std::move(call));
}

Tensor FusedStep::operator()(const std::vector<Tensor>& inputs) { return run(inputs)[0]; }

CompiledOptimizer::CompiledOptimizer(optim::Optimizer& optimizer, size_t cache_size)
    : groups_(optimizer_groups(optimizer)) {
  StepConfig config;
  config.mode = StepMode::OptimizerUpdate;
  config.cache_size = cache_size;
  step_ = std::make_unique<CompiledStep>(std::move(config), nullptr);
}

CompiledOptimizer::CompiledOptimizer(std::vector<EngineGroup> groups, size_t cache_size)
    : groups_(engine_groups(std::move(groups))) {
  StepConfig config;
  config.mode = StepMode::OptimizerUpdate;
  config.cache_size = cache_size;
  step_ = std::make_unique<CompiledStep>(std::move(config), nullptr);
}

void CompiledOptimizer::step() {
  Call call;
  call.groups = groups_();
  (*step_)(std::move(call));
}

}  // namespace lucid::compile
