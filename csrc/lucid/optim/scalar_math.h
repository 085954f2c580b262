#pragma once
// Scalar counterparts of the tensor ops the update rules use, so that a rule
// written once as a template over V reads the same for V = float/double (the
// fused eager loop) and V = lucid::Tensor (whole-tensor ops, recorded into a
// graph under tracing). Generic code calls these unqualified: ordinary lookup
// finds the scalar overloads here, argument-dependent lookup finds the tensor
// ops of ops.h.
//
// The scalar definitions are the element functions the host kernels use
// (core/element.h), so an op gives bit-identical results in both
// instantiations (NaN handling of sign/maximum/minimum included).
#include <type_traits>

#include "lucid/core/element.h"
#include "lucid/ops/ops.h"

namespace lucid::optim {

template <class C>
using if_scalar = std::enable_if_t<std::is_floating_point_v<C>, C>;

template <class C>
inline if_scalar<C> sqrt(C x) {
  return element::sqrt(x);
}
template <class C>
inline if_scalar<C> abs(C x) {
  return element::abs(x);
}
template <class C>
inline if_scalar<C> sign(C x) {
  return element::sign(x);
}
template <class C>
inline if_scalar<C> maximum(C a, C b) {
  return element::maximum(a, b);
}
template <class C>
inline if_scalar<C> minimum(C a, C b) {
  return element::minimum(a, b);
}
template <class C>
inline std::enable_if_t<std::is_floating_point_v<C>, bool> gt(C a, C b) {
  return a > b;
}
template <class C>
inline std::enable_if_t<std::is_floating_point_v<C>, bool> lt(C a, C b) {
  return a < b;
}
template <class C>
inline std::enable_if_t<std::is_floating_point_v<C>, bool> eq(C a, C b) {
  return a == b;
}
template <class C>
inline if_scalar<C> where(bool cond, C a, C b) {
  return cond ? a : b;
}

// `a` where the (host-computed, 0 or 1) scalar `flag` is non-zero, else `b`:
// a step-dependent branch (RAdam's rectification, ASGD's averaging start)
// expressed as data, so the traced graph does not depend on the step.
template <class C>
inline if_scalar<C> where_nonzero(C flag, C a, C b) {
  return flag != C(0) ? a : b;
}
inline Tensor where_nonzero(const Tensor& flag, const Tensor& a, const Tensor& b) {
  return where(ne(flag, wrap_scalar(0.0, flag)), a, b);
}

}  // namespace lucid::optim
