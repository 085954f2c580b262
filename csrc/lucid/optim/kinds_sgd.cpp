// SGD, RMSprop, Adagrad: state layout, validation and host-side scalars
// (the update rules are in rules.h).
#include <cmath>
#include <utility>

#include "lucid/optim/algorithm_impl.h"
#include "lucid/optim/kinds.h"

namespace lucid::optim {

namespace {

struct SgdTraits {
  using Flags = SgdFlags;
  template <class V>
  using Scalars = SgdScalars<V>;
  static constexpr const char* kName = "sgd";
  static constexpr bool kHasStep = false;  // torch's SGD keeps only the momentum buffer
  static std::vector<std::string> buffers() { return {"momentum_buffer"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) {
    // torch's SGD tests `x < 0` (NaN passes), unlike the others' `not 0 <= x`
    for (auto [key, what] : {std::pair{"lr", "learning rate"}, std::pair{"momentum", "momentum value"},
                             std::pair{"weight_decay", "weight_decay value"}})
      if (h.num(key) < 0.0) fail("Invalid ", what, ": ", h.repr(key));
    if (h.flag("nesterov") && (h.num("momentum") <= 0 || h.num("dampening") != 0))
      fail("Nesterov momentum requires a momentum and zero dampening");
  }
  static Flags flags(const Hyper& h) {
    return {h.flag("maximize"), h.num("weight_decay") != 0, h.num("momentum") != 0, h.flag("nesterov")};
  }
  static constexpr uint32_t needed(const Flags& f) { return f.momentum ? 1u : 0u; }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    sgd_rule(p, g, &b[0], s, f);
  }

  static SgdScalars<double> scalars(const Hyper& h, const ParamState& st) {
    const double momentum = h.num("momentum");
    // The step that creates the buffer sets it to the gradient.
    const bool first = (st.fresh & 1u) != 0;
    SgdScalars<double> s;
    s.weight_decay = h.num("weight_decay");
    s.momentum = momentum;
    s.buf_decay = first ? 0.0 : momentum;
    s.grad_coef = first ? 1.0 : 1 - h.num("dampening");
    s.neg_lr = -h.num("lr");
    return s;
  }
};

struct RmspropTraits {
  using Flags = RmspropFlags;
  template <class V>
  using Scalars = RmspropScalars<V>;
  static constexpr const char* kName = "rmsprop";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"square_avg", "momentum_buffer", "grad_avg"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) {
    check_lr(h);
    check_nonnegative(h, "eps", "epsilon value");
    check_nonnegative(h, "momentum", "momentum value");
    check_nonnegative(h, "weight_decay", "weight_decay value");
    check_nonnegative(h, "alpha", "alpha value");
  }
  static Flags flags(const Hyper& h) {
    return {h.flag("maximize"), h.num("weight_decay") != 0, h.flag("centered"), h.num("momentum") > 0};
  }
  static constexpr uint32_t needed(const Flags& f) {
    return 1u | (f.momentum ? 2u : 0u) | (f.centered ? 4u : 0u);
  }
  static double buffer_init(size_t, const Hyper&, const Hyper&) { return 0; }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    rmsprop_rule(p, g, b[0], &b[1], &b[2], s, f);
  }

  static RmspropScalars<double> scalars(const Hyper& h, const ParamState&) {
    const double alpha = h.num("alpha");
    RmspropScalars<double> s;
    s.weight_decay = h.num("weight_decay");
    s.alpha = alpha;
    s.one_minus_alpha = 1 - alpha;
    s.eps = h.num("eps");
    s.momentum = h.num("momentum");
    s.neg_lr = -h.num("lr");
    return s;
  }
};

struct AdagradTraits {
  using Flags = DecayFlags;
  template <class V>
  using Scalars = AdagradScalars<V>;
  static constexpr const char* kName = "adagrad";
  static constexpr bool kHasStep = true;
  static std::vector<std::string> buffers() { return {"sum"}; }
  static std::vector<std::string> scalar_state() { return {}; }
  static void validate(const Hyper& h) {
    check_lr(h);
    check_nonnegative(h, "lr_decay", "lr_decay value");
    check_nonnegative(h, "weight_decay", "weight_decay value");
    check_nonnegative(h, "initial_accumulator_value", "initial_accumulator_value value");
    check_nonnegative(h, "eps", "epsilon value");
  }
  static Flags flags(const Hyper& h) { return {h.flag("maximize"), h.num("weight_decay") != 0}; }
  static constexpr uint32_t needed(const Flags&) { return 1u; }
  // torch fills the accumulator from the constructor's value, whatever the group says.
  static double buffer_init(size_t, const Hyper& group, const Hyper& defaults) {
    return defaults.has("initial_accumulator_value") ? defaults.num("initial_accumulator_value")
                                                     : group.num("initial_accumulator_value");
  }
  static std::vector<double> init_scalars(const Hyper&) { return {}; }
  static void advance(ParamState& st, const Hyper&) { st.step += 1; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    adagrad_rule(p, g, b[0], s, f);
  }

  static AdagradScalars<double> scalars(const Hyper& h, const ParamState& st) {
    const double step = st.step + 1;
    AdagradScalars<double> s;
    s.weight_decay = h.num("weight_decay");
    s.eps = h.num("eps");
    s.neg_clr = -(h.num("lr") / (1 + (step - 1) * h.num("lr_decay")));
    return s;
  }
};

}  // namespace

const Algorithm& sgd_algorithm() {
  static const AlgorithmImpl<SgdTraits> a;
  return a;
}
const Algorithm& rmsprop_algorithm() {
  static const AlgorithmImpl<RmspropTraits> a;
  return a;
}
const Algorithm& adagrad_algorithm() {
  static const AlgorithmImpl<AdagradTraits> a;
  return a;
}

}  // namespace lucid::optim
