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
  static std::vector<double> init_scalars(const Hyper& h) { return {round_to_state_dtype(h.num("lr")), 1.0}; }
  template <class V>
  static void rule(V& p, const V& g, V* b, const Scalars<V>& s, const Flags& f) {
    asgd_rule(p, g, b[0], s, f);
  }

  static void advance(ParamState& st, const Hyper& h) {
    st.step += 1;
    const double step = st.step, lr = h.num("lr"), lambd = h.num("lambd");
    st.scalars[0] = round_to_state_dtype(lr / std::pow(1 + lambd * lr * step, h.num("alpha")));
    st.scalars[1] = round_to_state_dtype(1 / std::max(1.0, step - h.num("t0")));
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
  using Flags = RpropFlags;
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

}  // namespace

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
