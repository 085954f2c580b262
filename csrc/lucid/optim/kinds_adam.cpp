// The Adam family: Adam/AdamW, Adamax, NAdam, RAdam. Each traits struct
// holds the kind's state layout, validation and host-side scalars; the
// update rules are in rules.h. Host math mirrors torch.optim's Python code
// (double precision, same operation order).
#include <cmath>

#include "lucid/optim/algorithm_impl.h"
#include "lucid/optim/kinds.h"

namespace lucid::optim {

namespace {

double step_of(const ParamState& st) { return st.step + 1; }  // the step being taken

void validate_adam_like(const Hyper& h) {
  check_lr(h);
  check_nonnegative(h, "eps", "epsilon value");
  check_betas(h);
  check_nonnegative(h, "weight_decay", "weight_decay value");
}

struct AdamTraits {
  using Flags = AdamFlags;
  template <class V>
  using Scalars = AdamScalars<V>;
  static constexpr const char* kName = "adam";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) { validate_adam_like(h); }
  static Flags flags(const Hyper& h) {
    return {h.flag("maximize"), h.num("weight_decay") != 0, h.flag("decoupled_weight_decay"), h.flag("amsgrad")};
  }
  static constexpr uint32_t needed(const Flags& f) { return 3u | (f.amsgrad ? 4u : 0u); }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static Scalars<double> scalars(const Hyper& h, const ParamState& st) { return adam_scalars(h, st); }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    adam_rule(p, g, b[0], b[1], &b[2], s, f);
  }

  static AdamScalars<double> adam_scalars(const Hyper& h, const ParamState& st) {
    const double step = step_of(st), lr = h.num("lr"), beta1 = h.num("betas", 0), beta2 = h.num("betas", 1);
    const double wd = h.num("weight_decay");
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    AdamScalars<double> s;
    s.weight_decay = wd;
    s.decay_factor = 1 - lr * wd;
    s.one_minus_beta1 = 1 - beta1;
    s.beta2 = beta2;
    s.one_minus_beta2 = 1 - beta2;
    s.bias_correction2_sqrt = std::pow(bias_correction2, 0.5);
    s.eps = h.num("eps");
    s.neg_step_size = -(lr / bias_correction1);
    return s;
  }
};

struct AdamaxTraits {
  using Flags = DecayFlags;
  template <class V>
  using Scalars = AdamaxScalars<V>;
  static constexpr const char* kName = "adamax";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_inf"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) { validate_adam_like(h); }
  static Flags flags(const Hyper& h) { return {h.flag("maximize"), h.num("weight_decay") != 0}; }
  static constexpr uint32_t needed(const Flags&) { return 3u; }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    adamax_rule(p, g, b[0], b[1], s, f);
  }

  static AdamaxScalars<double> scalars(const Hyper& h, const ParamState& st) {
    const double beta1 = h.num("betas", 0);
    AdamaxScalars<double> s;
    s.weight_decay = h.num("weight_decay");
    s.one_minus_beta1 = 1 - beta1;
    s.beta2 = h.num("betas", 1);
    s.eps = h.num("eps");
    s.neg_clr = -(h.num("lr") / (1 - std::pow(beta1, step_of(st))));
    return s;
  }
};

struct NadamTraits {
  using Flags = DecoupledFlags;
  template <class V>
  using Scalars = NadamScalars<V>;
  static constexpr const char* kName = "nadam";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_avg_sq"}; }
  static std::vector<std::string> scalar_state() { return {"mu_product"}; }
  static void validate(const Hyper& h) {
    validate_adam_like(h);
    check_nonnegative(h, "momentum_decay", "momentum_decay value");
  }
  static Flags flags(const Hyper& h) {
    return {h.flag("maximize"), h.num("weight_decay") != 0, h.flag("decoupled_weight_decay")};
  }
  static constexpr uint32_t needed(const Flags&) { return 3u; }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {1.0}; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    nadam_rule(p, g, b[0], b[1], s, f);
  }

  // The momentum cache mu_t.
  static double mu(const Hyper& h, double step) {
    return h.num("betas", 0) * (1.0 - 0.5 * std::pow(0.96, step * h.num("momentum_decay")));
  }
  static void advance(ParamState& st, const Hyper& h) {
    st.scalars[0] = state_mul(st, st.scalars[0], mu(h, step_of(st)));
    st.step += 1;
  }

  static NadamScalars<double> scalars(const Hyper& h, const ParamState& st) {
    const double step = step_of(st), lr = h.num("lr"), beta1 = h.num("betas", 0), beta2 = h.num("betas", 1);
    const double wd = h.num("weight_decay");
    const double mu_t = mu(h, step), mu_next = mu(h, step + 1);
    const double mu_product = state_mul(st, st.scalars[0], mu_t);
    const double mu_product_next = mu_product * mu_next;
    NadamScalars<double> s;
    s.weight_decay = wd;
    s.decay_factor = 1 - lr * wd;
    s.one_minus_beta1 = 1 - beta1;
    s.beta2 = beta2;
    s.one_minus_beta2 = 1 - beta2;
    s.bias_correction2 = 1 - std::pow(beta2, step);
    s.eps = h.num("eps");
    s.grad_coef = -lr * (1.0 - mu_t) / (1.0 - mu_product);
    s.exp_avg_coef = (-lr * mu_next) / (1.0 - mu_product_next);
    return s;
  }
};

struct RadamTraits {
  using Flags = DecoupledFlags;
  template <class V>
  using Scalars = RadamScalars<V>;
  static constexpr const char* kName = "radam";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_avg_sq"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) { validate_adam_like(h); }
  static Flags flags(const Hyper& h) {
    return {h.flag("maximize"), h.num("weight_decay") != 0, h.flag("decoupled_weight_decay")};
  }
  static constexpr uint32_t needed(const Flags&) { return 3u; }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    radam_rule(p, g, b[0], b[1], s, f);
  }

  static RadamScalars<double> scalars(const Hyper& h, const ParamState& st) {
    const double step = step_of(st), lr = h.num("lr"), beta1 = h.num("betas", 0), beta2 = h.num("betas", 1);
    const double wd = h.num("weight_decay");
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    // maximum and current length of the approximated SMA
    const double rho_inf = 2 / (1 - beta2) - 1;
    const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
    const bool rectify = rho_t > 5.0;
    RadamScalars<double> s;
    s.weight_decay = wd;
    s.decay_factor = 1 - lr * wd;
    s.one_minus_beta1 = 1 - beta1;
    s.beta2 = beta2;
    s.one_minus_beta2 = 1 - beta2;
    s.bias_correction1 = bias_correction1;
    s.lr = lr;
    s.bias_correction2_sqrt = std::pow(bias_correction2, 0.5);
    s.eps = h.num("eps");
    s.rect = rectify
                 ? std::pow((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.5)
                 : 0.0;
    s.rectify = rectify ? 1.0 : 0.0;
    return s;
  }
};

// torch stores SparseAdam's step as a Python int.
struct SparseAdamTraits {
  using Flags = MaximizeFlags;
  template <class V>
  using Scalars = SparseAdamScalars<V>;
  static constexpr const char* kName = "sparse_adam";
  static constexpr bool kHasStep = true;
  static constexpr bool kIntegerStep = true;
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_avg_sq"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) {
    if (!(0.0 < h.num("lr"))) fail("Invalid learning rate: ", h.repr("lr"));
    if (!(0.0 < h.num("eps"))) fail("Invalid epsilon value: ", h.repr("eps"));
    check_betas(h);
  }
  static Flags flags(const Hyper& h) { return {h.flag("maximize")}; }
  static constexpr uint32_t needed(const Flags&) { return 3u; }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    sparse_adam_rule(p, g, b[0], b[1], s, f);
  }

  static SparseAdamScalars<double> scalars(const Hyper& h, const ParamState& st) {
    const double step = step_of(st), beta1 = h.num("betas", 0), beta2 = h.num("betas", 1);
    SparseAdamScalars<double> s;
    s.one_minus_beta1 = 1 - beta1;
    s.one_minus_beta2 = 1 - beta2;
    s.eps = h.num("eps");
    s.neg_step_size = -(h.num("lr") * std::sqrt(1 - std::pow(beta2, step)) / (1 - std::pow(beta1, step)));
    s.zero = 0;
    return s;
  }
};

}  // namespace

const Algorithm& sparse_adam_algorithm() {
  static const AlgorithmImpl<SparseAdamTraits> a;
  return a;
}
const Algorithm& adam_algorithm() {
  static const AlgorithmImpl<AdamTraits> a;
  return a;
}
const Algorithm& adamax_algorithm() {
  static const AlgorithmImpl<AdamaxTraits> a;
  return a;
}
const Algorithm& nadam_algorithm() {
  static const AlgorithmImpl<NadamTraits> a;
  return a;
}
const Algorithm& radam_algorithm() {
  static const AlgorithmImpl<RadamTraits> a;
  return a;
}

}  // namespace lucid::optim
