#include "lucid/optim/engine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "lucid/autograd/grad_mode.h"
#include "lucid/graph/trace_hook.h"
#include "lucid/ops/dispatch.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/ops.h"
#include "lucid/optim/kind_table.h"
#include "lucid/optim/kinds.h"
#include "lucid/optim/update_primitive.h"

namespace lucid::optim {

namespace {

const std::map<std::string, const Algorithm& (*)()>& registry() {
  static const std::map<std::string, const Algorithm& (*)()> r = {
      {"sgd", &sgd_algorithm},           {"adam", &adam_algorithm},       {"adamw", &adam_algorithm},
      {"rmsprop", &rmsprop_algorithm},   {"adagrad", &adagrad_algorithm}, {"adadelta", &adadelta_algorithm},
      {"adamax", &adamax_algorithm},     {"nadam", &nadam_algorithm},     {"radam", &radam_algorithm},
      {"asgd", &asgd_algorithm},         {"rprop", &rprop_algorithm},     {"sparse_adam", &sparse_adam_algorithm},
      {"lbfgs_bb", &lbfgs_bb_algorithm},
  };
  return r;
}

double scalar_value(const Tensor& t) {
  graph::TraceScope no_trace(nullptr);
  return to_device(cast(t, DType::Float64), Device{}).data<double>("optimizer state")[0];
}

}  // namespace

DType state_dtype() { return default_float_dtype() == DType::Float64 ? DType::Float64 : DType::Float32; }

double round_to(DType dtype, double v) {
  switch (dtype) {
    case DType::Float64: return v;
    case DType::Float16: return half_to_float(float_to_half(float(v)));
    case DType::BFloat16: return bf16_to_float(float_to_bf16(float(v)));
    default: return double(float(v));
  }
}

double state_mul(const ParamState& st, double a, double b) {
  // a 0-d tensor times a Python float computes in the tensor's dtype (float for the half types)
  if (st.scalar_dtype == DType::Float64) return a * b;
  return round_to(st.scalar_dtype, double(float(a) * float(b)));
}

bool has_engine(const std::string& kind) { return registry().count(kind) != 0; }

const Algorithm& algorithm(const std::string& kind) {
  auto it = registry().find(kind);
  if (it == registry().end()) fail("no engine optimizer named '", kind, "'");
  return it->second();
}

void validate(const std::string& kind, const Hyper& h) {
  if (has_engine(kind)) algorithm(kind).validate(h);
  else if (kind_info(kind).engine.empty()) check_lr(h);  // LBFGS checks only its learning rate, as torch does
  else algorithm(kind_info(kind).engine).validate(h);
  if (h.flag("differentiable"))
    fail<NotImplementedError>("differentiable=True is not supported: optimizer steps do not record autograd history");
  if (h.flag("fused") && h.flag("foreach")) fail<Error>("`fused` and `foreach` cannot be `True` together.");
}

// ------------------------------------------------------------ EngineOptimizer
EngineOptimizer::EngineOptimizer(const std::string& kind, std::vector<Tensor> params, const Hyper& group,
                                 const Hyper& defaults)
    : kind_(kind), algo_(&optim::algorithm(kind)), defaults_(defaults) {
  validate(kind_, group);
  set_params(params);
}

bool EngineOptimizer::set_params(const std::vector<Tensor>& params) {
  bool same = params.size() == params_.size();
  for (size_t i = 0; same && i < params.size(); ++i) same = params[i].same(params_[i]);
  if (same) return false;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    LUCID_CHECK_T(TypeError, p.defined(), "optimizer parameter ", i, " is undefined");
    LUCID_CHECK_T(TypeError, is_floating(p.dtype()), "optimizer can only optimize floating-point tensors, but parameter ",
                  i, " is ", dtype_name(p.dtype()));
    if (p.is_symbolic()) fail<Error>("optimizer parameter ", i, " is a tensor from a compiled step's trace");
  }
  std::vector<ParamState> states(params.size());
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t j = 0; j < params_.size(); ++j)
      if (params[i].same(params_[j])) {
        states[i] = states_[j];
        break;
      }
  params_ = params;
  states_ = std::move(states);
  return true;
}

const Tensor& EngineOptimizer::param(size_t i) const {
  if (i >= params_.size()) fail<IndexError>("parameter index ", i, " out of range for a group of ", params_.size());
  return params_[i];
}

const ParamState& EngineOptimizer::state(size_t i) const {
  param(i);
  return states_[i];
}

ParamState& EngineOptimizer::state_mut(size_t i) {
  param(i);
  return states_[i];
}

void EngineOptimizer::check(const Hyper& h) const {
  validate(kind_, h);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.shape() != p.shape())
      fail("the gradient of parameter ", i, " has shape ", shape_str(g.shape()), " but the parameter has shape ",
           shape_str(p.shape()));
    LUCID_CHECK_T(TypeError, g.dtype() == p.dtype(), "the gradient of parameter ", i, " is ", dtype_name(g.dtype()),
                  " but the parameter is ", dtype_name(p.dtype()));
    LUCID_CHECK_T(TypeError, g.device() == p.device(), "the gradient of parameter ", i, " is on ", g.device().str(),
                  " but the parameter is on ", p.device().str());
    if (g.is_symbolic() || p.is_symbolic())
      fail<Error>("optimizer step: parameter ", i, " or its gradient is a tensor from a compiled step's trace");
    // `p.data = ...` can change a parameter under its state (a reservation
    // that no longer fits is replaced when the state is created).
    const ParamState& st = states_[i];
    for (size_t k = 0; k < st.buffers.size() && st.exists; ++k)
      if (const Tensor& b = st.buffers[k]; b.defined() && !(st.reserved >> k & 1) && !(b.meta() == p.meta()))
        fail("parameter ", i, " is now ", meta_str(p.meta()), " but its optimizer state is ", meta_str(b.meta()),
             "; load or reset the optimizer state to match");
  }
}

void EngineOptimizer::step(const Hyper& h) {
  check(h);
  std::vector<size_t> active;
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) active.push_back(i);
  // Allocate first, so that running out of memory leaves every parameter as it was.
  for (size_t i : active) init_state(i, h);
  for (size_t i : active) apply(i, h);
  for (size_t i : active) algo_->advance(states_[i], h);
}

void EngineOptimizer::apply(size_t i, const Hyper& h) {
  const Tensor& param = params_[i];
  const Tensor grad = param.grad();
  ParamState& st = states_[i];
  const std::vector<double> scalars = algo_->host_scalars(st, h);
  if (!algo_->elementwise() || !has_kernel(OpKind::EngineUpdate, param.device().type) || !param.is_contiguous() ||
      !grad.is_contiguous()) {
    // A device without a kernel for the update (or a strided view) runs the rule's ops.
    graph::TraceScope no_trace(nullptr);
    std::vector<Tensor> feeds;
    const DType cdt = is_half(param.dtype()) ? DType::Float32 : param.dtype();
    for (double v : scalars) feeds.push_back(scalar_tensor(v, cdt, param.device()));
    algo_->ops_update(param, grad, st, feeds, h);
    return;
  }
  const uint32_t need = algo_->needed_buffers(h);
  const EngineUpdate prim(algo_, algo_->flag_bits(h), need);
  static const TensorMeta scalar_meta{{}, DType::Float64, Device{}};
  std::vector<ConstArg> in{{param.raw_data("optimizer step"), &param.meta()}, {grad.raw_data("optimizer step"), &grad.meta()}};
  std::vector<MutArg> out{{param.raw_data("optimizer step"), &param.meta()}};
  for (size_t k = 0; k < st.buffers.size(); ++k)
    if (need >> k & 1) {
      in.push_back({st.buffers[k].raw_data("optimizer state"), &st.buffers[k].meta()});
      out.push_back({st.buffers[k].raw_data("optimizer state"), &st.buffers[k].meta()});
    }
  for (const double& v : scalars) in.push_back({&v, &scalar_meta});
  find_kernel(prim, param.device().type)(prim, in, out);  // in place
  param.storage()->bump_version();
  for (size_t k = 0; k < st.buffers.size(); ++k)
    if (need >> k & 1) st.buffers[k].storage()->bump_version();
}

void EngineOptimizer::init_state(size_t i, const Hyper& h) {
  ParamState& st = state_mut(i);
  if (st.exists && st.reserved == 0) return algo_->init_state(st, params_[i], h, defaults_);
  // A state that starts, and a reserved buffer, take their initial values
  // from `h` now, written into the reserved storage (a compiled step has
  // bound it).
  std::vector<Tensor> kept(st.buffers.size());
  for (size_t k = 0; k < st.buffers.size(); ++k)
    if (!st.exists || (st.reserved >> k & 1)) kept[k] = std::exchange(st.buffers[k], Tensor());
  if (!st.exists) st = ParamState{};
  st.reserved = 0;
  algo_->init_state(st, params_[i], h, defaults_);
  graph::TraceScope no_trace(nullptr);
  autograd::NoGradGuard no_grad;
  for (size_t k = 0; k < kept.size() && k < st.buffers.size(); ++k) {
    Tensor& b = st.buffers[k];
    if (kept[k].defined() && b.defined() && kept[k].meta() == b.meta()) {
      assign_data(kept[k], b);
      b = kept[k];
    }
  }
}

void EngineOptimizer::reserve_state(size_t i, const Hyper& h) {
  ParamState& st = state_mut(i);
  const bool existed = st.exists;
  uint32_t listed = 0;  // the buffers of the existing state
  for (size_t k = 0; k < st.buffers.size() && existed; ++k)
    if (st.buffers[k].defined() && !(st.reserved >> k & 1)) listed |= 1u << k;
  init_state(i, h);
  st.exists = existed;
  for (size_t k = 0; k < st.buffers.size(); ++k)
    if (st.buffers[k].defined() && !(listed >> k & 1)) st.reserved |= 1u << k;
}

StateEntries EngineOptimizer::state_entries(size_t i) const {
  const ParamState& st = state(i);
  StateEntries out;
  if (!st.exists) return out;
  graph::TraceScope no_trace(nullptr);
  if (algo_->has_step())
    out.emplace_back("step", scalar_tensor(st.step, algo_->integer_step() ? DType::Int64 : state_dtype()));
  const auto& snames = algo_->scalar_state_names();
  for (size_t k = 0; k < snames.size() && k < st.scalars.size(); ++k)
    out.emplace_back(snames[k], scalar_tensor(st.scalars[k], st.scalar_dtype));
  const auto& bnames = algo_->buffer_names();
  for (size_t k = 0; k < bnames.size() && k < st.buffers.size(); ++k)
    if (st.buffers[k].defined() && !(st.reserved >> k & 1)) out.emplace_back(bnames[k], st.buffers[k]);
  return out;
}

void EngineOptimizer::check_state(size_t i, const StateEntries& entries) const {
  const Tensor& p = param(i);
  if (entries.empty()) return;
  const auto& bnames = algo_->buffer_names();
  const auto& snames = algo_->scalar_state_names();
  std::map<std::string, const Tensor*> seen;
  for (const auto& [name, value] : entries) {
    const bool known = (name == "step" && algo_->has_step()) ||
                       std::find(bnames.begin(), bnames.end(), name) != bnames.end() ||
                       std::find(snames.begin(), snames.end(), name) != snames.end();
    if (!known) fail("state of parameter ", i, ": unexpected entry '", name, "' for ", kind_);
    if (!seen.emplace(name, &value).second) fail("state of parameter ", i, ": entry '", name, "' appears twice");
    LUCID_CHECK_T(TypeError, value.defined(), "state of parameter ", i, ": entry '", name, "' is undefined");
    if (value.is_symbolic()) fail<Error>("state of parameter ", i, ": entry '", name, "' is a traced tensor");
    LUCID_CHECK_T(TypeError, is_floating(value.dtype()) || (name == "step" && is_integral(value.dtype())),
                  "state of parameter ", i, ": entry '", name, "' must be floating point, got ",
                  dtype_name(value.dtype()));
  }
  auto require = [&](const std::string& name) {
    if (!seen.count(name)) fail("state of parameter ", i, ": missing entry '", name, "' for ", kind_);
  };
  if (algo_->has_step()) {
    require("step");
    const Tensor& s = *seen["step"];
    LUCID_CHECK(s.numel() == 1, "state of parameter ", i, ": 'step' must be a single number, got shape ",
                shape_str(s.shape()));
    const double v = scalar_value(s);
    LUCID_CHECK(std::isfinite(v) && v >= 0, "state of parameter ", i, ": 'step' must be a non-negative count, got ",
                py_float_repr(v));
  }
  for (const auto& n : snames) {
    require(n);
    LUCID_CHECK(seen[n]->numel() == 1, "state of parameter ", i, ": '", n, "' must be a single number, got shape ",
                shape_str(seen[n]->shape()));
  }
  const uint32_t required = algo_->required_buffers();
  for (size_t k = 0; k < bnames.size(); ++k) {
    if (required >> k & 1) require(bnames[k]);
    auto it = seen.find(bnames[k]);
    if (it == seen.end()) continue;
    const Tensor& b = *it->second;
    if (b.shape() != p.shape())
      fail("state of parameter ", i, ": '", bnames[k], "' has shape ", shape_str(b.shape()),
           " but the parameter has shape ", shape_str(p.shape()));
  }
}

void EngineOptimizer::set_state(size_t i, const StateEntries& entries) {
  check_state(i, entries);
  ParamState& st = state_mut(i);
  const Tensor& p = params_[i];
  graph::TraceScope no_trace(nullptr);
  autograd::NoGradGuard no_grad;
  const auto& bnames = algo_->buffer_names();
  const auto& snames = algo_->scalar_state_names();
  ParamState next;
  next.buffers.resize(bnames.size());
  next.scalars.resize(snames.size());
  // torch's load_state_dict casts every state value but "step" to a floating parameter's dtype
  next.scalar_dtype = is_floating(p.dtype()) ? p.dtype() : state_dtype();
  for (const auto& [name, value] : entries) {
    if (name == "step") {
      next.step = scalar_value(value);
      continue;
    }
    auto s = std::find(snames.begin(), snames.end(), name);
    if (s != snames.end()) {
      next.scalars[size_t(s - snames.begin())] = round_to(next.scalar_dtype, scalar_value(value));
      continue;
    }
    const size_t k = size_t(std::find(bnames.begin(), bnames.end(), name) - bnames.begin());
    const Tensor v = to_device(cast(value, p.dtype()), p.device());
    // Copy into the existing buffer where there is one: a compiled step holds its storage.
    const bool reuse = k < st.buffers.size() && st.buffers[k].defined() && st.buffers[k].shape() == p.shape() &&
                       st.buffers[k].dtype() == p.dtype() && st.buffers[k].device() == p.device();
    if (reuse) {
      next.buffers[k] = st.buffers[k];
      assign_data(next.buffers[k], v);
    } else {
      next.buffers[k] = contiguous_copy(v);
    }
  }
  // A buffer the entries lack keeps its storage, reserved: a compiled step
  // may have bound it, and init_state() restarts it if it is needed.
  for (size_t k = 0; k < st.buffers.size() && k < next.buffers.size(); ++k)
    if (st.buffers[k].defined() && !next.buffers[k].defined()) {
      next.buffers[k] = st.buffers[k];
      next.reserved |= 1u << k;
    }
  next.exists = !entries.empty();
  if (!next.exists) {
    next.scalars.clear();
    if (next.reserved == 0) next = ParamState{};
  }
  st = std::move(next);
}

std::vector<std::string> EngineOptimizer::host_scalar_names() const {
  std::vector<std::string> out;
  for (const char* n : algo_->host_scalar_names()) out.emplace_back(n);
  return out;
}

std::vector<double> EngineOptimizer::host_scalars(size_t i, const Hyper& h) const {
  const ParamState& st = state(i);
  if (st.buffers.size() != algo_->buffer_names().size() || st.scalars.size() != algo_->scalar_state_names().size())
    fail<Error>(kind_, ": parameter ", i, " has no optimizer state yet (init_state creates it)");
  return algo_->host_scalars(st, h);
}

void EngineOptimizer::update_with_ops(size_t i, const Tensor& param, const Tensor& grad,
                                      const std::vector<Tensor>& scalars, const Hyper& h) {
  ParamState& st = state_mut(i);
  LUCID_CHECK(param.shape() == params_[i].shape() && grad.shape() == param.shape(), kind_,
              ": update_with_ops: parameter/gradient shapes ", shape_str(param.shape()), " and ",
              shape_str(grad.shape()), " do not match parameter ", i, "'s ", shape_str(params_[i].shape()));
  if (graph::Tracer::current() && algo_->elementwise() && has_kernel(OpKind::EngineUpdate, param.device().type)) {
    // One node whose kernel is the eager step's own (the fused loop on the CPU).
    const uint32_t need = algo_->needed_buffers(h);
    std::vector<Tensor> inputs{param.detach(), grad.detach()};
    std::vector<Tensor*> targets;
    for (size_t k = 0; k < st.buffers.size(); ++k)
      if (need >> k & 1) {
        LUCID_CHECK_T(Error, st.buffers[k].defined(), kind_, ": state '", algo_->buffer_names()[k],
                      "' was not created");
        inputs.push_back(st.buffers[k]);
        targets.push_back(&st.buffers[k]);
      }
    const int nb = int(targets.size());
    for (const auto& s : scalars) inputs.push_back(cast(s, DType::Float64));
    std::vector<Tensor> outs =
        lucid::apply(std::make_shared<const EngineUpdate>(algo_, algo_->flag_bits(h), need), inputs);
    assign_data(param, outs[0]);
    for (int k = 0; k < nb; ++k) assign_data(*targets[k], outs[1 + k]);
    return;
  }
  algo_->ops_update(param, grad, st, scalars, h);
}

void EngineOptimizer::advance(size_t i, const Hyper& h) {
  ParamState& st = state_mut(i);
  algo_->advance(st, h);
  st.reserved = 0;
  if (!st.exists)  // created by a compiled step's reservation
    st.exists = algo_->has_step() ||
                std::any_of(st.buffers.begin(), st.buffers.end(), [](const Tensor& b) { return b.defined(); });
}

}  // namespace lucid::optim
