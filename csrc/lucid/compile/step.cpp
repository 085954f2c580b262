#include "lucid/compile/step.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <unordered_set>

#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/core/profiler.h"
#include "lucid/graph/graph_tracer.h"
#include "lucid/ops/ops.h"
#include "lucid/optim/clip.h"

namespace lucid::compile {

// ------------------------------------------------------------------ signature
struct CompiledStep::Signature {
  std::vector<TensorMeta> args;
  // Strong references: an identity cannot be reused while an entry holds it.
  std::vector<Tensor> params;
  std::vector<uint8_t> param_bits;  // requires_grad | has .grad << 1 (make_step)
  std::vector<TensorMeta> param_metas;
  std::vector<TensorMeta> grad_metas;  // make_step: the existing .grad of each parameter that has one
  struct GroupPart {
    const optim::EngineOptimizer* engine = nullptr;
    uint32_t flags = 0;
    std::vector<uint8_t> has_grad;      // compile_optimizer: which parameters have a gradient
    std::vector<TensorMeta> grad_metas;  // ... and their metas
    std::vector<const void*> state;     // per parameter: buffer count, buffer storages
  };
  std::vector<GroupPart> groups;
  bool scaling = false;
  AutocastState autocast;
  std::vector<int64_t> facts;

};

struct CompiledStep::Entry {
  Signature sig;
  std::shared_ptr<graph::Executable> exe;
  std::vector<std::pair<size_t, size_t>> slots;  // (group, index) the executable updates
  std::vector<size_t> new_grad_params;           // make_step: parameters whose new .grad is an output
  std::vector<size_t> bound_grad_params;         // make_step: parameters whose .grad is bound per call
  size_t num_results = 0;                        // leading outputs returned to the caller
  int found_inf = -1;                            // output index of the overflow flag (with a scaler)
  double compile_seconds = 0;
};

namespace {

const char* py_bool(bool b) { return b ? "True" : "False"; }

std::string autocast_str(const AutocastState& a) { return a.enabled ? std::string(dtype_name(a.dtype)) : std::string("off"); }

std::string meta_words(const TensorMeta& m) { return std::string(dtype_name(m.dtype)) + " " + shape_str(m.shape); }

// Differences between two metas: "shape [64, 784] -> [32, 784]", ...
void meta_changes(const std::string& what, const TensorMeta& a, const TensorMeta& b, std::vector<std::string>& out) {
  if (a.shape != b.shape) out.push_back(what + " shape " + shape_str(a.shape) + " -> " + shape_str(b.shape));
  if (a.dtype != b.dtype) out.push_back(what + " dtype " + dtype_name(a.dtype) + " -> " + dtype_name(b.dtype));
  if (a.device != b.device) out.push_back(what + " device " + a.device.str() + " -> " + b.device.str());
}

// The buffers an executable binds; not whether the state exists: the first
// step taken creates it over the buffers the trace reserved.
void append_state(const optim::EngineOptimizer& engine, size_t i, std::vector<const void*>& out) {
  const optim::ParamState& st = engine.state(i);
  out.push_back(reinterpret_cast<const void*>(uintptr_t(st.buffers.size())));
  for (const Tensor& b : st.buffers) out.push_back(b.defined() ? b.storage().get() : nullptr);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Restores the parameters' real gradients when a trace ends (or fails).
class GradRestore {
 public:
  explicit GradRestore(std::vector<Tensor> params) : params_(std::move(params)) {
    for (const Tensor& p : params_) saved_.push_back(p.grad());
  }
  ~GradRestore() {
    for (size_t k = 0; k < params_.size(); ++k) Tensor(params_[k]).set_grad(saved_[k]);
  }
  GradRestore(const GradRestore&) = delete;
  GradRestore& operator=(const GradRestore&) = delete;
  const Tensor& saved(size_t k) const { return saved_[k]; }

 private:
  std::vector<Tensor> params_, saved_;
};

Tensor scalar_loss(const std::vector<Tensor>& outs) {
  if (outs.empty() || !outs[0].defined())
    fail<TypeError>("a compiled step's function must return the loss (a scalar tensor), got nothing");
  const Tensor& loss = outs[0];
  if (loss.numel() != 1)
    fail<Error>("a compiled step's loss must be a scalar tensor, got shape ", shape_str(loss.shape()));
  LUCID_CHECK_T(TypeError, is_floating(loss.dtype()), "a compiled step's loss must be a floating-point tensor, got ",
                dtype_name(loss.dtype()));
  return loss;
}

// Micro-batch m of a symbolic argument carrying `k` of them along dim 0.
Tensor micro_batch(const Tensor& arg, int64_t m) {
  Shape rest(arg.shape().begin() + 1, arg.shape().end());
  return reshape(narrow(arg, 0, m, 1), rest);
}

}  // namespace

// --------------------------------------------------------------- CompiledStep
CompiledStep::CompiledStep(StepConfig config, Forward forward)
    : config_(std::move(config)), forward_(std::move(forward)), scratch_(std::make_unique<Signature>()) {
  LUCID_CHECK(config_.cache_size > 0, "a compiled step's cache size must be positive, got ", config_.cache_size);
  LUCID_CHECK(config_.accumulate >= 1, "accumulate must be a positive number of micro-batches, got ",
              config_.accumulate);
  if (config_.mode != StepMode::OptimizerUpdate)
    LUCID_CHECK_T(TypeError, bool(forward_), "a compiled step needs a function to trace");
  if (config_.mode != StepMode::Update) {
    LUCID_CHECK(!config_.clip_norm && !config_.clip_value && config_.accumulate == 1,
                "gradient clipping and accumulation belong to a step that updates the parameters");
  }
  if (config_.clip_value) LUCID_CHECK(*config_.clip_value >= 0, "clip_grad_value must be non-negative, got ",
                                      *config_.clip_value);
}

CompiledStep::~CompiledStep() = default;

void CompiledStep::set_cache_size(size_t n) {
  const auto held = lock();
  LUCID_CHECK(n > 0, "a compiled step's cache size must be positive, got ", n);
  config_.cache_size = n;
  while (cache_.size() > n) cache_.pop_back();
}

void CompiledStep::clear_cache() {
  const auto held = lock();
  cache_.clear();
}

CacheInfo CompiledStep::cache_info() const {
  const auto held = lock();
  return {hits_, misses_, cache_.size(), compile_seconds_, last_miss_};
}

std::vector<std::shared_ptr<graph::Executable>> CompiledStep::executables() const {
  const auto held = lock();
  std::vector<std::shared_ptr<graph::Executable>> out;
  for (const auto& e : cache_) out.push_back(e->exe);
  return out;
}

void CompiledStep::signature_of(const Call& call, Signature& s) const {
  s.args.clear();
  for (const Tensor& a : call.args) s.args.push_back(a.meta());
  s.params.assign(call.params.begin(), call.params.end());
  s.param_bits.clear();
  s.param_metas.clear();
  s.grad_metas.clear();
  const bool grads = config_.mode == StepMode::Gradients;
  for (const Tensor& p : call.params) {
    const Tensor g = grads ? p.grad() : Tensor();
    s.param_bits.push_back(uint8_t(p.requires_grad()) | uint8_t(g.defined()) << 1);
    s.param_metas.push_back(p.meta());
    if (g.defined()) s.grad_metas.push_back(g.meta());
  }
  s.groups.resize(call.groups.size());
  for (size_t gi = 0; gi < call.groups.size(); ++gi) {
    const Group& g = call.groups[gi];
    Signature::GroupPart& part = s.groups[gi];
    part.engine = g.engine;
    part.flags = g.engine->algorithm().flag_bits(*g.hyper);
    part.has_grad.clear();
    part.grad_metas.clear();
    part.state.clear();
    for (size_t i = 0; i < g.engine->num_params(); ++i) {
      if (config_.mode == StepMode::OptimizerUpdate) {
        const Tensor grad = g.engine->param(i).grad();
        part.has_grad.push_back(grad.defined());
        if (grad.defined()) part.grad_metas.push_back(grad.meta());
      }
      append_state(*g.engine, i, part.state);
    }
  }
  s.scaling = call.scaler != nullptr;
  s.autocast = autocast_state();
  s.facts = call.facts;
}

// signature_of(call) == s, without building it (the per-call check).
bool CompiledStep::matches(const Signature& s, const Call& call) const {
  if (s.args.size() != call.args.size() || s.params.size() != call.params.size() ||
      s.groups.size() != call.groups.size() || s.scaling != (call.scaler != nullptr) || s.facts != call.facts)
    return false;
  for (size_t i = 0; i < call.args.size(); ++i)
    if (!(s.args[i] == call.args[i].meta())) return false;
  const bool grads = config_.mode == StepMode::Gradients;
  size_t k = 0;
  for (size_t i = 0; i < call.params.size(); ++i) {
    const Tensor& p = call.params[i];
    if (!p.same(s.params[i])) return false;
    const Tensor g = grads ? p.grad() : Tensor();
    if (s.param_bits[i] != (uint8_t(p.requires_grad()) | uint8_t(g.defined()) << 1)) return false;
    if (!(s.param_metas[i] == p.meta())) return false;
    if (g.defined() && !(s.grad_metas[k++] == g.meta())) return false;
  }
  for (size_t gi = 0; gi < call.groups.size(); ++gi) {
    const Group& g = call.groups[gi];
    const Signature::GroupPart& part = s.groups[gi];
    if (part.engine != g.engine || part.flags != g.engine->algorithm().flag_bits(*g.hyper)) return false;
    size_t at = 0, with_grad = 0;
    for (size_t i = 0; i < g.engine->num_params(); ++i) {
      if (config_.mode == StepMode::OptimizerUpdate) {
        const Tensor grad = g.engine->param(i).grad();
        if (i >= part.has_grad.size() || part.has_grad[i] != grad.defined()) return false;
        if (grad.defined() && !(part.grad_metas[with_grad++] == grad.meta())) return false;
      }
      const optim::ParamState& st = g.engine->state(i);
      if (at + 1 + st.buffers.size() > part.state.size() ||
          part.state[at] != reinterpret_cast<const void*>(uintptr_t(st.buffers.size())))
        return false;
      at += 1;
      for (const Tensor& b : st.buffers)
        if (part.state[at++] != (b.defined() ? b.storage().get() : nullptr)) return false;
    }
    if (at != part.state.size()) return false;
  }
  const AutocastState a = autocast_state();
  return a.enabled == s.autocast.enabled && (!a.enabled || a.dtype == s.autocast.dtype);
}

std::shared_ptr<CompiledStep::Entry> CompiledStep::find(const Call& call) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (!matches((*it)->sig, call)) continue;
    if (it != cache_.begin()) cache_.splice(cache_.begin(), cache_, it);
    return cache_.front();
  }
  return nullptr;
}

// What changed between the signature of the last compile and this call's, in
// the user's terms.
static std::string describe_change(const CompiledStep::Signature* old, const CompiledStep::Signature& now,
                                   const StepConfig& config);

std::optional<CompiledStep::Prepared> CompiledStep::prepare(Call call) {
  const auto held = lock();
  const bool optimizer_only = config_.mode == StepMode::OptimizerUpdate;
  if (!optimizer_only) {
    if (call.args.empty()) fail<TypeError>("a compiled step needs at least one tensor argument");
    for (size_t i = 0; i < call.args.size(); ++i) {
      LUCID_CHECK_T(TypeError, call.args[i].defined(), "compiled step: argument ", i, " is an undefined tensor");
      LUCID_CHECK_T(Error, !call.args[i].is_symbolic(), "compiled step: argument ", i, " is a traced tensor");
      if (config_.accumulate > 1 && (call.args[i].ndim() == 0 || call.args[i].shape()[0] != config_.accumulate))
        fail("compiled step: argument ", i, " has shape ", shape_str(call.args[i].shape()), ", but with accumulate=",
             config_.accumulate, " every argument carries the micro-batches along its first dimension (size ",
             config_.accumulate, ")");
    }
  }
  // Everything is validated before anything runs: a bad hyper-parameter or
  // gradient raises here and changes nothing.
  for (const Group& g : call.groups) g.engine->check(*g.hyper);
  LUCID_CHECK(call.facts.size() == config_.fact_names.size(), "compiled step: expected ", config_.fact_names.size(),
              " facts, got ", call.facts.size());
  if (call.scaler) call.scaler->lazy_init();

  if (optimizer_only) {
    bool any = false;
    for (const Group& g : call.groups)
      for (size_t i = 0; i < g.engine->num_params() && !any; ++i) any = g.engine->param(i).grad().defined();
    if (!any) return std::nullopt;
  }

  Prepared p;
  std::shared_ptr<Entry> entry = find(call);
  if (entry && entry->exe->bindings_valid()) {
    ++hits_;
  } else {
    ++misses_;
    if (entry) {
      last_miss_ = "a captured tensor's storage was rebound (e.g. a parameter's .data was replaced)";
      cache_.remove(entry);
    } else {
      signature_of(call, *scratch_);
      last_miss_ = describe_change(last_entry_ ? &last_entry_->sig : nullptr, *scratch_, config_);
    }
    entry = compile(call);
    cache_.push_front(entry);
    while (cache_.size() > config_.cache_size) cache_.pop_back();
  }
  last_entry_ = entry;

  // State yet to be created starts from this call's hyper-parameters (torch
  // creates it at the first step taken): re-initialised before each run
  // until a step is applied, in place, so the executable's bindings hold.
  for (auto [gi, i] : entry->slots) {
    const Group& g = call.groups[gi];
    if (g.engine->has_reservation(i)) g.engine->reserve_state(i, *g.hyper);
  }

  p.entry = entry;
  p.groups = std::move(call.groups);
  p.scaler = call.scaler;
  if (optimizer_only) {
    for (auto [gi, i] : entry->slots) p.inputs.push_back(p.groups[gi].engine->param(i).grad());
  } else {
    p.inputs = std::move(call.args);
  }
  for (size_t k : entry->bound_grad_params) p.bound.push_back(call.params[k].grad());
  if (p.scaler) p.scalars.push_back(p.scaler->get_scale());
  for (auto [gi, i] : entry->slots) {
    const std::vector<double> s = p.groups[gi].engine->host_scalars(i, *p.groups[gi].hyper);
    p.scalars.insert(p.scalars.end(), s.begin(), s.end());
  }
  p.params = std::move(call.params);
  return p;
}

std::vector<Tensor> CompiledStep::run(Prepared& p) {
  const auto held = lock();
  profiler::Scope profiled("lucid::compiled_step");  // the executable's ops run as one event
  Entry& e = *p.entry;
  // A run that fails (e.g. a target out of range) leaves the optimizer as it
  // was: a state yet to be created is only reserved until a step is applied.
  std::vector<Tensor> outs = e.exe->run(p.inputs, p.scalars, p.bound);
  // The bookkeeping of a successful run; nothing here can fail.
  for (size_t k = 0; k < e.new_grad_params.size(); ++k)
    Tensor(p.params[e.new_grad_params[k]]).set_grad(outs[e.num_results + k]);
  bool found_inf = false;
  if (e.found_inf >= 0)  // on a device, one small read-back
    found_inf = *static_cast<const bool*>(to_device(outs[size_t(e.found_inf)], Device{}).raw_data());
  if (!found_inf)  // an overflow step does not count, as with scaler.step(opt)
    for (auto [gi, i] : e.slots) p.groups[gi].engine->advance(i, *p.groups[gi].hyper);
  if (p.scaler) p.scaler->update(found_inf);
  outs.resize(e.num_results);
  return outs;
}

std::vector<Tensor> CompiledStep::operator()(Call call) {
  const auto held = lock();
  std::optional<Prepared> p = prepare(std::move(call));
  if (!p) return {};
  return run(*p);
}

// ---------------------------------------------------------------- tracing
std::shared_ptr<CompiledStep::Entry> CompiledStep::compile(const Call& call) {
  profiler::Scope profiled("lucid::compiled_step_trace_and_compile");
  const auto start = std::chrono::steady_clock::now();
  LUCID_CHECK_T(Error, graph::Tracer::current() == nullptr,
                "a compiled step cannot be traced while another trace is active");
  // A trace that fails leaves no state: it only reserves buffers.
  auto entry = std::make_shared<Entry>();
  if (config_.mode == StepMode::OptimizerUpdate)
    trace_optimizer(call, *entry);
  else if (config_.mode == StepMode::Forward)
    trace_forward(call, *entry);
  else
    trace_update(call, *entry);
  // Tracing may reserve optimizer state: the entry is keyed by the signature
  // later calls will have.
  signature_of(call, entry->sig);
  entry->compile_seconds = seconds_since(start);
  compile_seconds_ += entry->compile_seconds;
  return entry;
}

static graph::CompileFn& step_compiler() {
  static graph::CompileFn compiler;
  return compiler;
}

void CompiledStep::compile_steps_with(graph::CompileFn compiler) { step_compiler() = std::move(compiler); }

static std::shared_ptr<graph::Executable> finish(graph::GraphTracer& tracer, DeviceType device,
                                                  const std::vector<Tensor>& params) {
  // A parameter the trace read only through another handle (p.detach())
  // still owns that memory: `p.data = ...` must invalidate the executable.
  for (const Tensor& p : params) tracer.own_if_captured(p);
  std::vector<graph::RandomKeyFeed> random_feeds;
  for (auto [feed, draws] : tracer.random_key_feeds()) random_feeds.push_back({feed, draws});
  if (step_compiler()) return step_compiler()(tracer.take_graph(), std::move(random_feeds));
  return graph::compile(tracer.take_graph(), std::move(random_feeds), device);
}

void CompiledStep::trace_forward(const Call& call, Entry& entry) {
  graph::GraphTracer tracer;
  std::vector<Tensor> sym;
  for (const Tensor& a : call.args) sym.push_back(tracer.add_input(a.meta()));
  {
    graph::TraceScope scope(&tracer);
    const std::vector<Tensor> outs = forward_(sym);
    for (size_t j = 0; j < outs.size(); ++j) {
      LUCID_CHECK_T(TypeError, outs[j].defined(), "a compiled function returned an undefined tensor");
      tracer.add_output(outs[j].detach());
    }
    entry.num_results = outs.size();
  }
  entry.exe = finish(tracer, call.args[0].device().type, call.params);
}

void CompiledStep::trace_update(const Call& call, Entry& entry) {
  const bool update = config_.mode == StepMode::Update;
  std::vector<Tensor> trainable;
  std::vector<size_t> trainable_index;
  for (size_t k = 0; k < call.params.size(); ++k)
    if (call.params[k].requires_grad()) {
      trainable.push_back(call.params[k]);
      trainable_index.push_back(k);
    }
  if (update) {
    std::unordered_set<const TensorImpl*> known;
    for (const Tensor& p : call.params) known.insert(p.impl());
    for (const Group& g : call.groups)
      for (size_t i = 0; i < g.engine->num_params(); ++i)
        if (!known.count(g.engine->param(i).impl()))
          fail<Error>("compiled step: the optimizer holds a parameter that is not one of the step's parameters");
  }

  graph::GraphTracer tracer;
  std::vector<Tensor> sym;
  for (const Tensor& a : call.args) sym.push_back(tracer.add_input(a.meta()));
  GradRestore restore(trainable);
  {
    graph::TraceScope scope(&tracer);
    autograd::GradModeGuard grad_on(true);
    if (update) {
      for (Tensor& p : trainable) p.set_grad(Tensor());  // the eager loop starts from zero_grad()
    } else {
      // An existing .grad is accumulated into in place; zero_grad() and the
      // runs that create gradients replace the tensor between calls, so its
      // buffer is bound on each call rather than at trace time.
      for (size_t k = 0; k < trainable.size(); ++k)
        if (restore.saved(k).defined()) {
          tracer.bind_per_call(restore.saved(k));
          entry.bound_grad_params.push_back(trainable_index[k]);
        }
    }
    // The scale is a feed: a changing scale never recompiles.
    Tensor scale;
    if (call.scaler) scale = tracer.add_feed({{}, DType::Float32, Device{}});

    const int64_t k = config_.accumulate;
    std::vector<Tensor> losses;
    std::vector<std::vector<Tensor>> extras;
    for (int64_t m = 0; m < k; ++m) {
      std::vector<Tensor> args = sym;
      if (k > 1)
        for (Tensor& a : args) a = micro_batch(a, m);
      std::vector<Tensor> outs = forward_(args);
      Tensor loss = scalar_loss(outs);
      Tensor root = k > 1 ? div(loss, wrap_scalar(double(k), loss)) : loss;
      if (call.scaler) root = mul(root, cast(scale, root.dtype()));
      autograd::run_backward({root}, {ones(root.shape(), root.dtype(), root.device())}, false);
      losses.push_back(loss.detach());
      extras.emplace_back();
      for (size_t j = 1; j < outs.size(); ++j) {
        LUCID_CHECK_T(TypeError, outs[j].defined(), "a compiled step's function returned an undefined tensor");
        extras.back().push_back(outs[j].detach());
      }
      if (m > 0 && extras[m].size() != extras[0].size())
        fail<Error>("a compiled step's function returned ", extras[m].size() + 1, " values for micro-batch ", m,
                    " but ", extras[0].size() + 1, " for micro-batch 0");
    }
    autograd::NoGradGuard no_grad;
    tracer.add_output(k > 1 ? mean(stack(losses, 0)) : losses[0]);
    for (size_t j = 0; j < extras[0].size(); ++j) {
      if (k == 1) {
        tracer.add_output(extras[0][j]);
        continue;
      }
      std::vector<Tensor> per_micro;
      for (const auto& e : extras) per_micro.push_back(e[j]);
      tracer.add_output(stack(per_micro, 0));
    }
    entry.num_results = 1 + extras[0].size();

    if (!update) {
      // A parameter that had no .grad gets a new one, returned by the run;
      // an existing .grad was accumulated into in place (a writeback).
      for (size_t t = 0; t < trainable.size(); ++t)
        if (!restore.saved(t).defined() && trainable[t].grad().defined()) {
          tracer.add_output(trainable[t].grad());
          entry.new_grad_params.push_back(trainable_index[t]);
        }
    } else {
      std::vector<Tensor> params, grads;
      for (size_t gi = 0; gi < call.groups.size(); ++gi) {
        const Group& g = call.groups[gi];
        for (size_t i = 0; i < g.engine->num_params(); ++i) {
          const Tensor& p = g.engine->param(i);
          const Tensor grad = p.grad();
          if (!grad.defined() || !p.requires_grad()) continue;  // no gradient: skipped, as in the eager step
          entry.slots.emplace_back(gi, i);
          params.push_back(p);
          grads.push_back(grad);
        }
      }
      Tensor found_inf;
      if (call.scaler && !grads.empty()) {
        // Flag any inf/NaN in the scaled gradients (before unscaling, as
        // PyTorch's kernel: a scale backed off to 0 unscales finite values to
        // NaN and the step still runs), then unscale (in float32, float64 for
        // float64 gradients: GradScaler's unscale_dtype); the update below is
        // made conditional on the flag. 1/scale is rounded to float32 from
        // float64, as the eager scaler's inv_scale.
        const Tensor scale64 = cast(scale, DType::Float64);
        const Tensor inv = cast(div(wrap_scalar(1.0, scale64), scale64), DType::Float32);
        for (Tensor& g : grads) {
          const DType ud = g.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
          const Tensor u = mul(cast(g, ud), cast(inv, ud));
          const Tensor flag = any(logical_not(isfinite(g)));
          found_inf = found_inf.defined() ? logical_or(found_inf, flag) : flag;
          g = cast(u, g.dtype());
        }
      }
      if (config_.clip_norm) {
        const Tensor norm = optim::total_norm(grads, config_.norm_type);
        grads = optim::clip_with_norm(grads, *config_.clip_norm, norm);
        tracer.add_output(norm);
        ++entry.num_results;
      }
      if (config_.clip_value) grads = optim::clip_by_value(grads, *config_.clip_value);
      const std::vector<graph::Writeback> before = tracer.writebacks();
      for (size_t s = 0; s < entry.slots.size(); ++s) {
        const auto [gi, i] = entry.slots[s];
        const Group& g = call.groups[gi];
        g.engine->reserve_state(i, *g.hyper);  // concrete buffers, even under the tracer
        std::vector<Tensor> feeds;
        for (size_t f = 0; f < g.engine->host_scalar_names().size(); ++f)
          feeds.push_back(tracer.add_feed({{}, DType::Float64, Device{}}));
        g.engine->update_with_ops(i, params[s], grads[s], feeds, *g.hyper);
      }
      if (found_inf.defined()) {
        tracer.guard_writebacks_since(before, found_inf);
        entry.found_inf = int(tracer.graph().outputs.size());
        tracer.add_output(found_inf);
      }
    }
  }
  entry.exe = finish(tracer, call.args[0].device().type, call.params);
}

void CompiledStep::trace_optimizer(const Call& call, Entry& entry) {
  graph::GraphTracer tracer;
  DeviceType device = DeviceType::CPU;
  {
    graph::TraceScope scope(&tracer);
    autograd::NoGradGuard no_grad;
    for (size_t gi = 0; gi < call.groups.size(); ++gi) {
      const Group& g = call.groups[gi];
      for (size_t i = 0; i < g.engine->num_params(); ++i) {
        const Tensor& p = g.engine->param(i);
        const Tensor grad = p.grad();
        if (!grad.defined()) continue;
        if (entry.slots.empty()) device = p.device().type;
        entry.slots.emplace_back(gi, i);
        g.engine->reserve_state(i, *g.hyper);
        const Tensor sym = tracer.add_input(grad.meta());
        std::vector<Tensor> feeds;
        for (size_t f = 0; f < g.engine->host_scalar_names().size(); ++f)
          feeds.push_back(tracer.add_feed({{}, DType::Float64, Device{}}));
        g.engine->update_with_ops(i, p, sym, feeds, *g.hyper);
      }
    }
  }
  entry.exe = finish(tracer, device, call.params);
}

// ------------------------------------------------------------ miss reports
static std::string describe_change(const CompiledStep::Signature* old, const CompiledStep::Signature& now,
                                   const StepConfig& config) {
  if (!old) return "first call";
  std::vector<std::string> out;
  const auto& a = *old;
  const auto& b = now;
  if (a.args.size() != b.args.size()) {
    out.push_back("number of inputs " + std::to_string(a.args.size()) + " -> " + std::to_string(b.args.size()));
  } else {
    for (size_t i = 0; i < a.args.size(); ++i) meta_changes("input " + std::to_string(i), a.args[i], b.args[i], out);
  }
  if (a.params.size() != b.params.size()) {
    out.push_back("number of parameters " + std::to_string(a.params.size()) + " -> " +
                  std::to_string(b.params.size()));
  } else {
    size_t ga = 0, gb = 0;  // positions in grad_metas
    for (size_t i = 0; i < a.params.size(); ++i) {
      const std::string what = "parameter " + std::to_string(i);
      if (!a.params[i].same(b.params[i])) out.push_back(what + " was replaced by another tensor");
      const bool ra = a.param_bits[i] & 1, rb = b.param_bits[i] & 1;
      if (ra != rb) out.push_back(what + " requires_grad " + py_bool(ra) + " -> " + py_bool(rb));
      meta_changes(what, a.param_metas[i], b.param_metas[i], out);
      const bool ha = a.param_bits[i] & 2, hb = b.param_bits[i] & 2;
      const TensorMeta* ma = ha ? &a.grad_metas[ga++] : nullptr;
      const TensorMeta* mb = hb ? &b.grad_metas[gb++] : nullptr;
      if (ha != hb)
        out.push_back(what + " .grad " + (ma ? meta_words(*ma) : "None") + " -> " + (mb ? meta_words(*mb) : "None"));
      else if (ma && mb)
        meta_changes(what + " .grad", *ma, *mb, out);
    }
  }
  if (a.groups.size() != b.groups.size()) {
    out.push_back("number of param_groups " + std::to_string(a.groups.size()) + " -> " +
                  std::to_string(b.groups.size()));
  } else {
    for (size_t g = 0; g < a.groups.size(); ++g) {
      const auto& x = a.groups[g];
      const auto& y = b.groups[g];
      const std::string what = "param_groups[" + std::to_string(g) + "]";
      if (x.engine != y.engine) {
        out.push_back(what + " was replaced");
        continue;
      }
      const std::vector<const char*> names = y.engine->algorithm().flag_names();
      for (size_t bit = 0; bit < names.size(); ++bit) {
        const bool fa = x.flags >> bit & 1, fb = y.flags >> bit & 1;
        if (fa != fb) out.push_back(what + " " + names[bit] + ": " + py_bool(fa) + " -> " + py_bool(fb));
      }
      if (x.has_grad != y.has_grad) {
        for (size_t i = 0; i < x.has_grad.size() && i < y.has_grad.size(); ++i)
          if (x.has_grad[i] != y.has_grad[i])
            out.push_back(what + " parameter " + std::to_string(i) + " gradient " +
                          (x.has_grad[i] ? "present" : "None") + " -> " + (y.has_grad[i] ? "present" : "None"));
      } else if (x.grad_metas != y.grad_metas) {
        for (size_t i = 0, k = 0; i < x.has_grad.size(); ++i)
          if (x.has_grad[i]) {
            meta_changes(what + " parameter " + std::to_string(i) + " gradient", x.grad_metas[k], y.grad_metas[k],
                         out);
            ++k;
          }
      }
      if (x.state != y.state)
        out.push_back(what + " optimizer state was created, loaded or replaced outside the compiled step");
    }
  }
  if (a.scaling != b.scaling)
    out.push_back(std::string("grad_scaler ") + (a.scaling ? "enabled" : "disabled") + " -> " +
                  (b.scaling ? "enabled" : "disabled"));
  if (autocast_str(a.autocast) != autocast_str(b.autocast))
    out.push_back("autocast " + autocast_str(a.autocast) + " -> " + autocast_str(b.autocast));
  for (size_t f = 0; f < a.facts.size() && f < b.facts.size(); ++f)
    if (a.facts[f] != b.facts[f]) {
      const std::string name = f < config.fact_names.size() ? config.fact_names[f] : "fact " + std::to_string(f);
      out.push_back(name + ": " + py_bool(a.facts[f] != 0) + " -> " + py_bool(b.facts[f] != 0));
    }
  if (out.empty()) return "a signature not seen recently (evicted from the cache)";
  std::string s;
  for (size_t i = 0; i < out.size(); ++i) s += (i ? "; " : "") + out[i];
  return s;
}

std::vector<std::string> CompiledStep::cached_signatures() const {
  const auto held = lock();
  std::vector<std::string> out;
  for (const auto& e : cache_) {
    std::ostringstream os;
    os << "inputs (";
    for (size_t i = 0; i < e->sig.args.size(); ++i) os << (i ? ", " : "") << meta_words(e->sig.args[i]);
    os << "), " << e->sig.params.size() << " parameters, " << e->sig.groups.size() << " param groups";
    if (e->sig.scaling) os << ", grad_scaler";
    if (e->sig.autocast.enabled) os << ", autocast " << dtype_name(e->sig.autocast.dtype);
    for (size_t f = 0; f < e->sig.facts.size() && f < config_.fact_names.size(); ++f)
      os << ", " << config_.fact_names[f] << "=" << py_bool(e->sig.facts[f] != 0);
    out.push_back(os.str());
  }
  return out;
}

}  // namespace lucid::compile
