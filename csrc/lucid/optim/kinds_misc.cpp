// Adadelta, ASGD, Rprop: state layout, validation and host-side scalars
// (the update rules are in rules.h).
#include <algorithm>
#include <cmath>

#include "lucid/optim/algorithm_impl.h"
#include "lucid/optim/kinds.h"

namespace lucid::optim {

namespace {

struct AdadeltaTraits {
  using Flags = DecayFlags;
  template <class V>
  using Scalars = AdadeltaScalars<V>;
  static constexpr const char* kName = "adadelta";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"square_avg", "acc_delta"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) {
    check_lr(h);
    const double rho = h.num("rho");
    if (!(0.0 <= rho && rho <= 1.0)) fail("Invalid rho value: ", h.repr("rho"));
    check_nonnegative(h, "eps", "epsilon value");
    check_nonnegative(h, "weight_decay", "weight_decay value");
  }
  static Flags flags(const Hyper& h) { return {h.flag("maximize"), h.num("weight_decay") != 0}; }
  static constexpr uint32_t needed(const Flags&) { return 3u; }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    adadelta_rule(p, g, b[0], b[1], s, f);
  }

  static AdadeltaScalars<double> scalars(const Hyper& h, const ParamState&) {
    const double rho = h.num("rho");
    AdadeltaScalars<double> s;
    s.weight_decay = h.num("weight_decay");
    s.rho = rho;
    s.one_minus_rho = 1 - rho;
    s.eps = h.num("eps");
    s.neg_lr = -h.num("lr");
    return s;
  }
};

// Per-parameter scalars: eta (the current step size), mu (the averaging
// coefficient), both as torch stores them.
struct AsgdTraits {
  using Flags = DecayFlags;
  template <class V>
  using Scalars = AsgdScalars<V>;
  static constexpr const char* kName = "asgd";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"ax"}; }
  static std::vector<std::string> scalar_state() { return {"eta", "mu"}; }
  static void validate(const Hyper& h) {
    check_lr(h);
    check_nonnegative(h, "weight_decay", "weight_decay value");
  }
  static Flags flags(const Hyper& h) { return {h.flag("maximize"), h.num("weight_decay") != 0}; }
  static constexpr uint32_t needed(const Flags&) { return 1u; }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper& h) { return {round_to(state_dtype(), h.num("lr")), 1.0}; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    asgd_rule(p, g, b[0], s, f);
  }

  static void advance(ParamState& st, const Hyper& h) {
    st.step += 1;
    const double step = st.step, lr = h.num("lr"), lambd = h.num("lambd");
    // torch.as_tensor(value) (the default dtype), then copied into the state's dtype
    auto held = [&](double v) { return round_to(st.scalar_dtype, round_to(state_dtype(), v)); };
    st.scalars[0] = held(lr / std::pow(1 + lambd * lr * step, h.num("alpha")));
    st.scalars[1] = held(1 / std::max(1.0, step - h.num("t0")));
  }

  static AsgdScalars<double> scalars(const Hyper& h, const ParamState& st) {
    const double eta = st.scalars[0], mu = st.scalars[1];
    AsgdScalars<double> s;
    s.weight_decay = h.num("weight_decay");
    s.decay_factor = 1 - h.num("lambd") * eta;
    s.neg_eta = -eta;
    s.mu = mu;
    s.copy_average = mu == 1 ? 1.0 : 0.0;
    return s;
  }
};

struct RpropTraits {
  using Flags = MaximizeFlags;
  template <class V>
  using Scalars = RpropScalars<V>;
  static constexpr const char* kName = "rprop";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"prev", "step_size"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) {
    check_lr(h);
    const double etaminus = h.num("etas", 0), etaplus = h.num("etas", 1);
    if (!(0.0 < etaminus && etaminus < 1.0 && 1.0 < etaplus))
      fail("Invalid eta values: ", h.repr("etas", 0), ", ", h.repr("etas", 1));
    h.num("step_sizes", 1);  // a pair of numbers
  }
  static Flags flags(const Hyper& h) { return {h.flag("maximize")}; }
  static constexpr uint32_t needed(const Flags&) { return 3u; }
  // step sizes start at the group's lr
  static double buffer_init(size_t slot, const Hyper& group, const Hyper&) { return slot == 1 ? group.num("lr") : 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    rprop_rule(p, g, b[0], b[1], s, f);
  }

  static RpropScalars<double> scalars(const Hyper& h, const ParamState&) {
    RpropScalars<double> s;
    s.etaminus = h.num("etas", 0);
    s.etaplus = h.num("etas", 1);
    s.step_size_min = h.num("step_sizes", 0);
    s.step_size_max = h.num("step_sizes", 1);
    s.zero = 0;
    s.one = 1;
    return s;
  }
};

// The closure-less step of a compiled LBFGS: a per-element Barzilai-Borwein
// (BB1) quasi-Newton step. With s = x - x_prev and y = g - g_prev, each
// element's inverse curvature is h = s*s / (s*y) where s*y > 0 (1 elsewhere
// and on the first step), and x <- x - lr * h * g. A parameter whose
// gradient is already below tolerance_grad (max-norm) is left as it is,
// like LBFGS's convergence test. The test reduces over the whole tensor, so
// the rule is written with ops rather than as an element-wise rule.
class LbfgsBBAlgorithm final : public Algorithm {
 public:
  const char* name() const override { return "lbfgs_bb"; }
  void validate(const Hyper& h) const override { check_lr(h); }
  const std::vector<std::string>& buffer_names() const override { return buffers_; }
  const std::vector<std::string>& scalar_state_names() const override { return scalar_state_; }
  bool has_step() const override { return true; }
  bool elementwise() const override { return false; }
  uint32_t needed_buffers(const Hyper&) const override { return 3u; }
  uint32_t required_buffers() const override { return 3u; }
  uint32_t flag_bits(const Hyper&) const override { return 0; }
  std::vector<const char*> flag_names() const override { return {}; }
  void init_state(ParamState& st, const Tensor& param, const Hyper&, const Hyper&) const override {
    graph::TraceScope no_trace(nullptr);
    autograd::NoGradGuard no_grad;
    st.buffers.resize(2);
    for (Tensor& b : st.buffers)
      if (!b.defined()) b = full(param.shape(), 0.0, param.dtype(), param.device());
    st.exists = true;
  }
  std::vector<const char*> host_scalar_names() const override { return {"lr", "first", "tolerance_grad"}; }
  std::vector<double> host_scalars(const ParamState& st, const Hyper& h) const override {
    return {h.num("lr"), st.step == 0 ? 1.0 : 0.0, h.num("tolerance_grad")};
  }
  void ops_update(const Tensor& param, const Tensor& grad, ParamState& st, const std::vector<Tensor>& scalars,
                  const Hyper&) const override {
    LUCID_CHECK(scalars.size() == 3, "lbfgs_bb: expected 3 scalars, got ", scalars.size());
    autograd::NoGradGuard no_grad;
    const DType dt = param.dtype();
    const Tensor x = param.detach(), g = cast(grad.detach(), dt);
    const Tensor lr = cast(scalars[0], dt), first = cast(scalars[1], dt), tol = cast(scalars[2], dt);
    const Tensor one = wrap_scalar(1.0, x), zero = wrap_scalar(0.0, x);
    Tensor& prev = st.buffers[0];
    Tensor& prev_grad = st.buffers[1];
    const Tensor s = x - prev, y = g - prev_grad, sy = s * y;
    const Tensor curvature_ok = gt(sy * (one - first), zero);  // never on the first step
    const Tensor h = where(curvature_ok, (s * s) / where(curvature_ok, sy, one), one);
    const Tensor next = x - (g * h) * lr;
    const Tensor converged = le(amax(abs(g)), tol);
    assign_data(prev, x);
    assign_data(prev_grad, g);
    assign_data(param, where(converged, x, next));
  }
  void advance(ParamState& st, const Hyper&) const override { st.step += 1; }

 private:
  std::vector<std::string> buffers_{"prev", "prev_grad"}, scalar_state_{};
};

}  // namespace

const Algorithm& lbfgs_bb_algorithm() {
  static const LbfgsBBAlgorithm a;
  return a;
}
const Algorithm& adadelta_algorithm() {
  static const AlgorithmImpl<AdadeltaTraits> a;
  return a;
}
const Algorithm& asgd_algorithm() {
  static const AlgorithmImpl<AsgdTraits> a;
  return a;
}
const Algorithm& rprop_algorithm() {
  static const AlgorithmImpl<RpropTraits> a;
  return a;
}

}  // namespace lucid::optim
