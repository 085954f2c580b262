#pragma once
// The update rules of the element-wise optimizers, each written ONCE as a
// template over the value type V:
//   - V = float / double: one element, called from the fused eager loop;
//   - V = lucid::Tensor: whole tensors through ops.h, which run eagerly or,
//     under a tracer, record the update into the compiled step's graph.
// A rule only uses arithmetic operators and functions that exist for both
// (scalar_math.h), and never mixes V with a C++ literal: every number it
// needs is a field of its Scalars<V> struct, so both instantiations round
// identically (the core is compiled with -ffp-contract=off).
//
// Flags are structural: they pick which code a rule runs (a compile-time
// choice for the traced graph and for the specialised eager loop). Every
// numeric hyper-parameter and step-dependent factor is a Scalars field,
// computed on the host in double once per parameter per step (the
// `*_scalars` functions of the kinds_*.cpp files); a branch on a step value
// is data (`where_nonzero` on a host-computed 0/1 field).
//
// The operation order follows torch.optim's single-tensor implementations.
#include <cstddef>
#include <vector>

#include "lucid/optim/scalar_math.h"

namespace lucid::optim {

// Declares `template <class V> struct Name` with one V field per entry of
// FIELDS, plus the field names and a visitor, in declaration order (the
// order of host_scalars() and of update_with_ops()'s scalar feeds).
#define LUCID_OPTIM_FIELD_DECL(n) V n{};
#define LUCID_OPTIM_FIELD_NAME(n) #n,
#define LUCID_OPTIM_FIELD_VISIT(n) f(n);
#define LUCID_OPTIM_SCALARS(Name, FIELDS)                                                \
  template <class V>                                                                     \
  struct Name {                                                                          \
    FIELDS(LUCID_OPTIM_FIELD_DECL)                                                       \
    static std::vector<const char*> names() { return {FIELDS(LUCID_OPTIM_FIELD_NAME)}; } \
    template <class F>                                                                   \
    void for_each(F&& f) {                                                               \
      FIELDS(LUCID_OPTIM_FIELD_VISIT)                                                    \
    }                                                                                    \
    template <class F>                                                                   \
    void for_each(F&& f) const {                                                         \
      FIELDS(LUCID_OPTIM_FIELD_VISIT)                                                    \
    }                                                                                    \
  };

// Flags structs convert to and from a bitmask (bit i = i-th member), which
// the eager loop turns into a template argument, and name their members in
// the user's terms (cache-miss reports: "amsgrad: False -> True").

template <class V>
inline V signed_grad(const V& grad, bool maximize) {
  return maximize ? V(-grad) : grad;
}

// ------------------------------------------------------------------- SGD
struct SgdFlags {
  bool maximize = false, weight_decay = false, momentum = false, nesterov = false;
  static constexpr int kCount = 4;
  constexpr unsigned bits() const {
    return unsigned(maximize) | unsigned(weight_decay) << 1 | unsigned(momentum) << 2 | unsigned(nesterov) << 3;
  }
  static constexpr SgdFlags from_bits(unsigned b) { return {bool(b & 1), bool(b & 2), bool(b & 4), bool(b & 8)}; }
  static std::vector<const char*> names() { return {"maximize", "weight_decay != 0", "momentum != 0", "nesterov"}; }
};
// buf_decay/grad_coef are momentum/(1 - dampening), or 0/1 on the step that
// creates the buffer (torch: buf = grad.clone()).
#define LUCID_SGD_SCALARS(X) X(weight_decay) X(momentum) X(buf_decay) X(grad_coef) X(neg_lr)
LUCID_OPTIM_SCALARS(SgdScalars, LUCID_SGD_SCALARS)

template <class V>
void sgd_rule(V& param, const V& grad, V* momentum_buffer, const SgdScalars<V>& s, const SgdFlags& f) {
  V g = signed_grad(grad, f.maximize);
  if (f.weight_decay) g = g + param * s.weight_decay;
  if (f.momentum) {
    V& buf = *momentum_buffer;
    buf = buf * s.buf_decay + g * s.grad_coef;
    g = f.nesterov ? V(g + buf * s.momentum) : buf;
  }
  param = param + g * s.neg_lr;
}

// ------------------------------------------------- Adam, AdamW (decoupled)
struct AdamFlags {
  bool maximize = false, weight_decay = false, decoupled = false, amsgrad = false;
  static constexpr int kCount = 4;
  constexpr unsigned bits() const {
    return unsigned(maximize) | unsigned(weight_decay) << 1 | unsigned(decoupled) << 2 | unsigned(amsgrad) << 3;
  }
  static constexpr AdamFlags from_bits(unsigned b) { return {bool(b & 1), bool(b & 2), bool(b & 4), bool(b & 8)}; }
  static std::vector<const char*> names() {
    return {"maximize", "weight_decay != 0", "decoupled_weight_decay", "amsgrad"};
  }
};
#define LUCID_ADAM_SCALARS(X)                                                                           \
  X(weight_decay) X(decay_factor) X(one_minus_beta1) X(beta2) X(one_minus_beta2) X(bias_correction2_sqrt) \
  X(eps) X(neg_step_size)
LUCID_OPTIM_SCALARS(AdamScalars, LUCID_ADAM_SCALARS)

template <class V>
void adam_rule(V& param, const V& grad, V& exp_avg, V& exp_avg_sq, V* max_exp_avg_sq, const AdamScalars<V>& s,
               const AdamFlags& f) {
  V g = signed_grad(grad, f.maximize);
  if (f.weight_decay) {
    if (f.decoupled) param = param * s.decay_factor;
    else g = g + param * s.weight_decay;
  }
  exp_avg = exp_avg + (g - exp_avg) * s.one_minus_beta1;
  exp_avg_sq = exp_avg_sq * s.beta2 + s.one_minus_beta2 * g * g;
  if (f.amsgrad) *max_exp_avg_sq = maximum(*max_exp_avg_sq, exp_avg_sq);
  const V& second = f.amsgrad ? *max_exp_avg_sq : exp_avg_sq;
  const V denom = sqrt(second) / s.bias_correction2_sqrt + s.eps;
  param = param + s.neg_step_size * (exp_avg / denom);
}

// --------------------------------------------------------------- RMSprop
struct RmspropFlags {
  bool maximize = false, weight_decay = false, centered = false, momentum = false;
  static constexpr int kCount = 4;
  constexpr unsigned bits() const {
    return unsigned(maximize) | unsigned(weight_decay) << 1 | unsigned(centered) << 2 | unsigned(momentum) << 3;
  }
  static constexpr RmspropFlags from_bits(unsigned b) {
    return {bool(b & 1), bool(b & 2), bool(b & 4), bool(b & 8)};
  }
  static std::vector<const char*> names() { return {"maximize", "weight_decay != 0", "centered", "momentum > 0"}; }
};
#define LUCID_RMSPROP_SCALARS(X) X(weight_decay) X(alpha) X(one_minus_alpha) X(eps) X(momentum) X(neg_lr)
LUCID_OPTIM_SCALARS(RmspropScalars, LUCID_RMSPROP_SCALARS)

template <class V>
void rmsprop_rule(V& param, const V& grad, V& square_avg, V* momentum_buffer, V* grad_avg,
                  const RmspropScalars<V>& s, const RmspropFlags& f) {
  V g = signed_grad(grad, f.maximize);
  if (f.weight_decay) g = g + param * s.weight_decay;
  square_avg = square_avg * s.alpha + s.one_minus_alpha * g * g;
  V avg;
  if (f.centered) {
    V& ga = *grad_avg;
    ga = ga + (g - ga) * s.one_minus_alpha;
    avg = sqrt(square_avg - ga * ga);
  } else {
    avg = sqrt(square_avg);
  }
  avg = avg + s.eps;
  if (f.momentum) {
    V& buf = *momentum_buffer;
    buf = buf * s.momentum + g / avg;
    param = param + buf * s.neg_lr;
  } else {
    param = param + s.neg_lr * (g / avg);
  }
}

// --------------------------------------------------------------- Adagrad
struct DecayFlags {  // optimizers whose only switches are maximize and weight decay
  bool maximize = false, weight_decay = false;
  static constexpr int kCount = 2;
  constexpr unsigned bits() const { return unsigned(maximize) | unsigned(weight_decay) << 1; }
  static constexpr DecayFlags from_bits(unsigned b) { return {bool(b & 1), bool(b & 2)}; }
  static std::vector<const char*> names() { return {"maximize", "weight_decay != 0"}; }
};
#define LUCID_ADAGRAD_SCALARS(X) X(weight_decay) X(eps) X(neg_clr)
LUCID_OPTIM_SCALARS(AdagradScalars, LUCID_ADAGRAD_SCALARS)

template <class V>
void adagrad_rule(V& param, const V& grad, V& sum, const AdagradScalars<V>& s, const DecayFlags& f) {
  V g = signed_grad(grad, f.maximize);
  if (f.weight_decay) g = g + param * s.weight_decay;
  sum = sum + g * g;
  const V std_ = sqrt(sum) + s.eps;
  param = param + s.neg_clr * (g / std_);
}

// -------------------------------------------------------------- Adadelta
#define LUCID_ADADELTA_SCALARS(X) X(weight_decay) X(rho) X(one_minus_rho) X(eps) X(neg_lr)
LUCID_OPTIM_SCALARS(AdadeltaScalars, LUCID_ADADELTA_SCALARS)

template <class V>
void adadelta_rule(V& param, const V& grad, V& square_avg, V& acc_delta, const AdadeltaScalars<V>& s,
                   const DecayFlags& f) {
  V g = signed_grad(grad, f.maximize);
  if (f.weight_decay) g = g + param * s.weight_decay;
  square_avg = square_avg * s.rho + s.one_minus_rho * g * g;
  const V std_ = sqrt(square_avg + s.eps);
  const V delta = sqrt(acc_delta + s.eps) / std_ * g;
  acc_delta = acc_delta * s.rho + s.one_minus_rho * delta * delta;
  param = param + delta * s.neg_lr;
}

// ---------------------------------------------------------------- Adamax
#define LUCID_ADAMAX_SCALARS(X) X(weight_decay) X(one_minus_beta1) X(beta2) X(eps) X(neg_clr)
LUCID_OPTIM_SCALARS(AdamaxScalars, LUCID_ADAMAX_SCALARS)

template <class V>
void adamax_rule(V& param, const V& grad, V& exp_avg, V& exp_inf, const AdamaxScalars<V>& s, const DecayFlags& f) {
  V g = signed_grad(grad, f.maximize);
  if (f.weight_decay) g = g + param * s.weight_decay;
  exp_avg = exp_avg + (g - exp_avg) * s.one_minus_beta1;
  exp_inf = maximum(exp_inf * s.beta2, abs(g) + s.eps);
  param = param + s.neg_clr * (exp_avg / exp_inf);
}

// ---------------------------------------------------- NAdam, RAdam flags
struct DecoupledFlags {  // maximize, weight decay, and whether it is decoupled
  bool maximize = false, weight_decay = false, decoupled = false;
  static constexpr int kCount = 3;
  constexpr unsigned bits() const {
    return unsigned(maximize) | unsigned(weight_decay) << 1 | unsigned(decoupled) << 2;
  }
  static constexpr DecoupledFlags from_bits(unsigned b) { return {bool(b & 1), bool(b & 2), bool(b & 4)}; }
  static std::vector<const char*> names() { return {"maximize", "weight_decay != 0", "decoupled_weight_decay"}; }
};

template <class V, class S>
inline void apply_weight_decay(V& param, V& g, const S& s, const DecoupledFlags& f) {
  if (!f.weight_decay) return;
  if (f.decoupled) param = param * s.decay_factor;
  else g = g + param * s.weight_decay;
}

// ----------------------------------------------------------------- NAdam
// grad_coef = -lr (1 - mu_t) / (1 - prod mu_1..t),
// exp_avg_coef = -lr mu_{t+1} / (1 - prod mu_1..t+1).
#define LUCID_NADAM_SCALARS(X)                                                                                 \
  X(weight_decay) X(decay_factor) X(one_minus_beta1) X(beta2) X(one_minus_beta2) X(bias_correction2) X(eps) \
  X(grad_coef) X(exp_avg_coef)
LUCID_OPTIM_SCALARS(NadamScalars, LUCID_NADAM_SCALARS)

template <class V>
void nadam_rule(V& param, const V& grad, V& exp_avg, V& exp_avg_sq, const NadamScalars<V>& s,
                const DecoupledFlags& f) {
  V g = signed_grad(grad, f.maximize);
  apply_weight_decay(param, g, s, f);
  exp_avg = exp_avg + (g - exp_avg) * s.one_minus_beta1;
  exp_avg_sq = exp_avg_sq * s.beta2 + s.one_minus_beta2 * g * g;
  const V denom = sqrt(exp_avg_sq / s.bias_correction2) + s.eps;
  param = param + s.grad_coef * (g / denom);
  param = param + s.exp_avg_coef * (exp_avg / denom);
}

// ----------------------------------------------------------------- RAdam
// `rectify` is 1 once the approximated SMA length exceeds 5 (then `rect` is
// the variance rectification term), else 0: plain bias-corrected momentum.
#define LUCID_RADAM_SCALARS(X)                                                                                   \
  X(weight_decay) X(decay_factor) X(one_minus_beta1) X(beta2) X(one_minus_beta2) X(bias_correction1) X(lr)      \
  X(bias_correction2_sqrt) X(eps) X(rect) X(rectify)
LUCID_OPTIM_SCALARS(RadamScalars, LUCID_RADAM_SCALARS)

template <class V>
void radam_rule(V& param, const V& grad, V& exp_avg, V& exp_avg_sq, const RadamScalars<V>& s,
                const DecoupledFlags& f) {
  V g = signed_grad(grad, f.maximize);
  apply_weight_decay(param, g, s, f);
  exp_avg = exp_avg + (g - exp_avg) * s.one_minus_beta1;
  exp_avg_sq = exp_avg_sq * s.beta2 + s.one_minus_beta2 * g * g;
  const V update = exp_avg / s.bias_correction1 * s.lr;
  const V adaptive = s.bias_correction2_sqrt / (sqrt(exp_avg_sq) + s.eps);
  param = param - where_nonzero(s.rectify, V(update * adaptive * s.rect), update);
}

// ------------------------------------------------------------------ ASGD
// decay_factor = 1 - lambd * eta, neg_eta = -eta, with eta and mu the
// per-parameter values left by the previous step; copy_average is 1 while
// mu == 1 (torch copies the parameter into the average then).
#define LUCID_ASGD_SCALARS(X) X(weight_decay) X(decay_factor) X(neg_eta) X(mu) X(copy_average)
LUCID_OPTIM_SCALARS(AsgdScalars, LUCID_ASGD_SCALARS)

template <class V>
void asgd_rule(V& param, const V& grad, V& ax, const AsgdScalars<V>& s, const DecayFlags& f) {
  V g = signed_grad(grad, f.maximize);
  if (f.weight_decay) g = g + param * s.weight_decay;
  param = param * s.decay_factor;
  param = param + g * s.neg_eta;
  ax = where_nonzero(s.copy_average, param, V(ax + (param - ax) * s.mu));
}

// ----------------------------------------------------------------- Rprop
struct MaximizeFlags {  // optimizers whose only switch is maximize
  bool maximize = false;
  static constexpr int kCount = 1;
  constexpr unsigned bits() const { return unsigned(maximize); }
  static constexpr MaximizeFlags from_bits(unsigned b) { return {bool(b & 1)}; }
  static std::vector<const char*> names() { return {"maximize"}; }
};
#define LUCID_RPROP_SCALARS(X) X(etaminus) X(etaplus) X(step_size_min) X(step_size_max) X(zero) X(one)
LUCID_OPTIM_SCALARS(RpropScalars, LUCID_RPROP_SCALARS)

template <class V>
void rprop_rule(V& param, const V& grad, V& prev, V& step_size, const RpropScalars<V>& s, const MaximizeFlags& f) {
  V g = signed_grad(grad, f.maximize);
  const V prod = g * prev;
  const V factor = where(gt(prod, s.zero), s.etaplus, where(lt(prod, s.zero), s.etaminus, s.one));
  step_size = step_size * factor;
  // clamp_(min, max), NaN-propagating
  step_size = where(lt(step_size, s.step_size_min), s.step_size_min, step_size);
  step_size = where(gt(step_size, s.step_size_max), s.step_size_max, step_size);
  g = where(lt(prod, s.zero), s.zero, g);  // a sign change: no step this time
  param = param - sign(g) * step_size;
  prev = g;
}

// ------------------------------------------------------------ SparseAdam
// torch's SparseAdam on a dense gradient whose non-zero entries are the
// sparse ones: moments and parameter change only where the gradient is
// non-zero (an all-zero gradient changes nothing; the step still counts).
// neg_step_size = -lr sqrt(1 - beta2^t) / (1 - beta1^t).
#define LUCID_SPARSE_ADAM_SCALARS(X) X(one_minus_beta1) X(one_minus_beta2) X(eps) X(neg_step_size) X(zero)
LUCID_OPTIM_SCALARS(SparseAdamScalars, LUCID_SPARSE_ADAM_SCALARS)

template <class V>
void sparse_adam_rule(V& param, const V& grad, V& exp_avg, V& exp_avg_sq, const SparseAdamScalars<V>& s,
                      const MaximizeFlags& f) {
  const V g = signed_grad(grad, f.maximize);
  const V avg_update = (g - exp_avg) * s.one_minus_beta1;
  const V sq_update = (g * g - exp_avg_sq) * s.one_minus_beta2;
  const V numer = avg_update + exp_avg;
  const V denom = sqrt(sq_update + exp_avg_sq) + s.eps;
  const auto absent = eq(g, s.zero);
  exp_avg = where(absent, exp_avg, V(exp_avg + avg_update));
  exp_avg_sq = where(absent, exp_avg_sq, V(exp_avg_sq + sq_update));
  param = where(absent, param, V(param + (numer / denom) * s.neg_step_size));
}

}  // namespace lucid::optim
