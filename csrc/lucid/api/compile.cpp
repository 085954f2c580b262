#include "lucid/api/compile.h"

#include <chrono>
#include <sstream>
#include <unordered_set>

#include "lucid/api/autograd.h"
#include "lucid/graph/executable.h"
#include "lucid/graph/trace.h"

namespace lucid::compile {

namespace {

using detail::GroupSource;
using detail::GroupView;

std::string meta_key(const TensorMeta& m) {
  return shape_str(m.shape) + " " + dtype_name(m.dtype) + " " + m.device.str();
}

std::string ptr_key(const void* p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

// Reads every group's hyper-parameters and validates them with the
// gradients: a bad edit throws before anything runs.
std::vector<GroupView> checked_groups(const GroupSource& source) {
  std::vector<GroupView> groups = source();
  for (const auto& g : groups) g.engine->check(g.hyper);
  return groups;
}

GroupSource optimizer_source(optim::Optimizer& opt) {
  return [&opt] {
    std::vector<GroupView> out;
    for (size_t g = 0; g < opt.num_groups(); ++g) out.push_back({&opt.engine(g), opt.hyper(g)});
    return out;
  };
}

GroupSource engine_source(std::vector<EngineGroup> groups) {
  for (size_t g = 0; g < groups.size(); ++g)
    LUCID_CHECK(groups[g].engine && groups[g].hyper, "engine group ", g, " has no engine or no hyper-parameters");
  return [groups = std::move(groups)] {
    std::vector<GroupView> out;
    for (const auto& g : groups) out.push_back({g.engine, *g.hyper});
    return out;
  };
}

std::vector<double> host_scalars(const std::vector<GroupView>& groups,
                                 const std::vector<std::pair<size_t, size_t>>& slots) {
  std::vector<double> out;
  for (auto [gi, i] : slots) {
    const auto s = groups[gi].engine->host_scalars(i, groups[gi].hyper);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

void advance_steps(const std::vector<GroupView>& groups, const std::vector<std::pair<size_t, size_t>>& slots) {
  for (auto [gi, i] : slots) groups[gi].engine->advance(i, groups[gi].hyper);
}

// Emits parameter i of group g's update with one float64 feed per host scalar.
void emit_update(graph::GraphTracer& tracer, const GroupView& group, size_t i, const Tensor& param,
                 const Tensor& grad) {
  group.engine->init_state(i, group.hyper);  // concrete buffers, even under the tracer
  std::vector<Tensor> feeds;
  for (size_t k = 0; k < group.engine->host_scalar_names().size(); ++k)
    feeds.push_back(tracer.add_feed({{}, DType::Float64, Device{}}));
  group.engine->update_with_ops(i, param, grad, feeds, group.hyper);
}

std::shared_ptr<graph::Executable> compile_trace(graph::GraphTracer& tracer, DeviceType device) {
  std::vector<graph::RandomKeyFeed> random_feeds;
  for (auto [feed, draws] : tracer.random_key_feeds()) random_feeds.push_back({feed, draws});
  return graph::compile(tracer.take_graph(), std::move(random_feeds), device);
}

void check_no_active_trace() {
  LUCID_CHECK_T(Error, graph::Tracer::current() == nullptr,
                "a compiled step cannot be traced while another trace is active");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string join(const std::vector<std::pair<std::string, std::string>>& parts) {
  std::string out;
  for (const auto& [name, value] : parts) out += name + "=" + value + "\n";
  return out;
}

std::string describe_change(const std::vector<std::pair<std::string, std::string>>& old,
                            const std::vector<std::pair<std::string, std::string>>& now) {
  if (old.empty()) return "first call";
  std::string out;
  for (size_t k = 0; k < now.size(); ++k) {
    const std::string before = k < old.size() ? old[k].second : "";
    if (before == now[k].second) continue;
    if (!out.empty()) out += "; ";
    out += now[k].first + " changed: " + before + " -> " + now[k].second;
  }
  return out.empty() ? "captured buffers were rebound (e.g. a parameter's storage was replaced)" : out;
}

// Restores the parameters' real gradients when a trace ends (or fails).
class GradRestore {
 public:
  explicit GradRestore(const std::vector<Tensor>& params) : params_(params) {
    for (const Tensor& p : params_) saved_.push_back(p.grad());
  }
  ~GradRestore() {
    for (size_t k = 0; k < params_.size(); ++k) Tensor(params_[k]).set_grad(saved_[k]);
  }
  GradRestore(const GradRestore&) = delete;
  GradRestore& operator=(const GradRestore&) = delete;

 private:
  std::vector<Tensor> params_, saved_;
};

}  // namespace

std::string engine_structure(const optim::EngineOptimizer& engine, const optim::Hyper& hyper) {
  std::ostringstream os;
  os << "flags=" << engine.algorithm().flag_bits(hyper) << " buffers=" << engine.algorithm().needed_buffers(hyper)
     << " state=[";
  for (size_t i = 0; i < engine.num_params(); ++i) {
    const optim::ParamState& st = engine.state(i);
    os << (i ? ";" : "") << st.exists;
    for (const Tensor& b : st.buffers) os << "," << (b.defined() ? b.storage().get() : nullptr);
  }
  os << "]";
  return os.str();
}

// ------------------------------------------------------------------ FusedStep
FusedStep::FusedStep(StepFunction fn, optim::Optimizer& optimizer, size_t cache_size)
    : fn_(std::move(fn)), params_([&optimizer] { return optimizer.params(); }),
      groups_(optimizer_source(optimizer)), cache_(cache_size) {
  LUCID_CHECK_T(TypeError, bool(fn_), "the step function must be callable");
}

FusedStep::FusedStep(StepFunction fn, std::vector<Tensor> params, optim::Optimizer& optimizer, size_t cache_size)
    : fn_(std::move(fn)), params_([params = std::move(params)] { return params; }),
      groups_(optimizer_source(optimizer)), cache_(cache_size) {
  LUCID_CHECK_T(TypeError, bool(fn_), "the step function must be callable");
}

FusedStep::FusedStep(StepFunction fn, std::vector<Tensor> params, std::vector<EngineGroup> groups, size_t cache_size)
    : fn_(std::move(fn)), params_([params = std::move(params)] { return params; }),
      groups_(engine_source(std::move(groups))), cache_(cache_size) {
  LUCID_CHECK_T(TypeError, bool(fn_), "the step function must be callable");
}

std::vector<Tensor> FusedStep::params() const { return params_(); }

FusedStep::Parts FusedStep::signature(const std::vector<Tensor>& inputs, const std::vector<GroupView>& groups) const {
  Parts parts;
  std::string s;
  for (const Tensor& a : inputs) s += "(" + meta_key(a.meta()) + ")";
  parts.emplace_back("inputs", s);
  s.clear();
  for (const Tensor& p : params()) s += "(" + ptr_key(p.impl()) + " " + (p.requires_grad() ? "grad " : "") + meta_key(p.meta()) + ")";
  parts.emplace_back("parameters", s);
  s.clear();
  std::string structure;
  for (const auto& g : groups) {
    s += "(" + ptr_key(g.engine);
    for (size_t i = 0; i < g.engine->num_params(); ++i) s += " " + ptr_key(g.engine->param(i).impl());
    s += ")";
    structure += "(" + engine_structure(*g.engine, g.hyper) + ")";
  }
  parts.emplace_back("groups", s);
  parts.emplace_back("optimizer", structure);
  return parts;
}

Tensor FusedStep::operator()(const std::vector<Tensor>& inputs) {
  LUCID_CHECK_T(TypeError, !inputs.empty(), "a compiled step needs at least the model input");
  for (size_t i = 0; i < inputs.size(); ++i)
    LUCID_CHECK_T(TypeError, inputs[i].defined(), "compiled step: argument ", i, " is an undefined tensor");
  std::vector<GroupView> groups = checked_groups(groups_);
  Parts parts = signature(inputs, groups);
  std::string key = join(parts);
  std::shared_ptr<graph::Executable> exe = cache_.get(key);
  auto it = entries_.find(key);
  if (!exe || it == entries_.end() || !exe->bindings_valid()) {
    last_miss_ = exe ? "captured buffers were rebound (e.g. a parameter's storage was replaced)"
                     : describe_change(last_signature_, parts);
    Entry entry = trace(inputs, groups);
    // Tracing may create optimizer state: key the entry by the signature
    // it will be looked up with from now on.
    parts = signature(inputs, groups);
    key = join(parts);
    for (const std::string& evicted : cache_.put(key, entry.executable, entry.compile_seconds))
      entries_.erase(evicted);
    it = entries_.insert_or_assign(key, std::move(entry)).first;
  }
  last_signature_ = std::move(parts);
  const Entry& entry = it->second;
  std::vector<Tensor> outs = entry.executable->run(inputs, host_scalars(groups, entry.slots));
  advance_steps(groups, entry.slots);
  return outs[0];
}

FusedStep::Entry FusedStep::trace(const std::vector<Tensor>& inputs, const std::vector<GroupView>& groups) {
  const auto start = std::chrono::steady_clock::now();
  check_no_active_trace();
  const std::vector<Tensor> all_params = params();
  std::unordered_set<const TensorImpl*> known;
  for (const Tensor& p : all_params) known.insert(p.impl());
  for (const auto& g : groups)
    for (size_t i = 0; i < g.engine->num_params(); ++i)
      if (!known.count(g.engine->param(i).impl()))
        fail<Error>("fused step: the optimizer holds a parameter that is not one of the step's parameters; "
                    "pass every optimized parameter");
  std::vector<Tensor> params;
  for (const Tensor& p : all_params)
    if (p.requires_grad()) params.push_back(p);

  graph::GraphTracer tracer;
  std::vector<Tensor> sym;
  for (const Tensor& a : inputs) sym.push_back(tracer.add_input(a.meta()));
  Entry entry;
  {
    GradRestore restore(params);
    graph::TraceScope scope(&tracer);
    autograd::GradModeGuard grad_on(true);
    Tensor loss = fn_(sym);
    if (!loss.defined() || loss.numel() != 1)
      fail<Error>("the step function must return a scalar tensor to compile a training step");
    // The eager loop starts from zero_grad(): every gradient is fresh.
    for (Tensor& p : params) p.set_grad(Tensor());
    autograd::backward(loss);
    tracer.add_output(loss.detach());
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      for (size_t i = 0; i < groups[gi].engine->num_params(); ++i) {
        const Tensor& p = groups[gi].engine->param(i);
        const Tensor g = p.grad();
        if (!g.defined() || !p.requires_grad()) continue;  // no gradient: skipped, as in the eager step
        emit_update(tracer, groups[gi], i, p, g);
        entry.slots.emplace_back(gi, i);
      }
    }
  }
  entry.executable = compile_trace(tracer, inputs[0].device().type);
  entry.compile_seconds = seconds_since(start);
  return entry;
}

CacheInfo FusedStep::cache_info() const {
  return {cache_.hits(), cache_.misses(), cache_.size(), cache_.compile_seconds(), last_miss_};
}

// ---------------------------------------------------------- CompiledOptimizer
CompiledOptimizer::CompiledOptimizer(optim::Optimizer& optimizer, size_t cache_size)
    : groups_(optimizer_source(optimizer)), cache_(cache_size) {}

CompiledOptimizer::CompiledOptimizer(std::vector<EngineGroup> groups, size_t cache_size)
    : groups_(engine_source(std::move(groups))), cache_(cache_size) {}

void CompiledOptimizer::step() {
  std::vector<GroupView> groups = checked_groups(groups_);  // validates everything before anything changes
  std::vector<std::pair<size_t, size_t>> slots;
  std::vector<Tensor> grads;
  std::string grads_key;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (size_t i = 0; i < groups[gi].engine->num_params(); ++i) {
      Tensor g = groups[gi].engine->param(i).grad();
      if (!g.defined()) continue;
      slots.emplace_back(gi, i);
      grads.push_back(g);
      grads_key += "(" + std::to_string(gi) + "," + std::to_string(i) + " " + meta_key(g.meta()) + ")";
    }
  }
  if (slots.empty()) return;
  auto structure = [&] {
    std::string s;
    for (const auto& g : groups) s += "(" + ptr_key(g.engine) + " " + engine_structure(*g.engine, g.hyper) + ")";
    return s;
  };
  std::string key = grads_key + "\n" + structure();
  std::shared_ptr<graph::Executable> exe = cache_.get(key);
  if (!exe || !exe->bindings_valid()) {
    last_miss_ = cache_.size() == 0 ? "first call" : "signature changed";
    const auto start = std::chrono::steady_clock::now();
    check_no_active_trace();
    graph::GraphTracer tracer;
    {
      graph::TraceScope scope(&tracer);
      autograd::NoGradGuard no_grad;
      for (size_t k = 0; k < slots.size(); ++k) {
        auto [gi, i] = slots[k];
        emit_update(tracer, groups[gi], i, groups[gi].engine->param(i), tracer.add_input(grads[k].meta()));
      }
    }
    exe = compile_trace(tracer, groups[slots[0].first].engine->param(slots[0].second).device().type);
    key = grads_key + "\n" + structure();  // tracing may create state
    cache_.put(key, exe, seconds_since(start));
  }
  exe->run(grads, host_scalars(groups, slots));
  advance_steps(groups, slots);
}

CacheInfo CompiledOptimizer::cache_info() const {
  return {cache_.hits(), cache_.misses(), cache_.size(), cache_.compile_seconds(), last_miss_};
}

}  // namespace lucid::compile
