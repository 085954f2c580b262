#pragma once
// One element of a tensor in host memory: the type arithmetic is done in
// (float for the 16-bit floats), loading and storing through it, and the
// scalar definitions of the few ops the optimizer rules use. Kernels written
// as loops over host memory (the CPU backend's, the optimizers' element-wise
// rules) share these, so a value rounds the same way in every such loop.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "lucid/core/dtype.h"

namespace lucid::element {

template <class T>
struct Compute {
  using type = T;
};
template <>
struct Compute<Half> {
  using type = float;
};
template <>
struct Compute<BFloat16> {
  using type = float;
};
template <class T>
using compute_t = typename Compute<T>::type;

template <class T>
inline compute_t<T> load(const T* p, int64_t i) {
  return p[i];
}
template <>
inline float load<Half>(const Half* p, int64_t i) {
  return half_to_float(p[i].bits);
}
template <>
inline float load<BFloat16>(const BFloat16* p, int64_t i) {
  return bf16_to_float(p[i].bits);
}

template <class T, class V>
inline void store(T* p, int64_t i, V v) {
  p[i] = static_cast<T>(v);
}
template <>
inline void store<Half, float>(Half* p, int64_t i, float v) {
  p[i].bits = float_to_half(v);
}
template <>
inline void store<BFloat16, float>(BFloat16* p, int64_t i, float v) {
  p[i].bits = float_to_bf16(v);
}
template <>
inline void store<Half, double>(Half* p, int64_t i, double v) {
  p[i].bits = float_to_half(float(v));
}
template <>
inline void store<BFloat16, double>(BFloat16* p, int64_t i, double v) {
  p[i].bits = float_to_bf16(float(v));
}

// A float converted to an 8- or 16-bit integer type as PyTorch's CPU kernels
// convert it on x86 (C++ leaves out-of-range conversions undefined):
// truncated toward zero into int64 for uint8 and into int32 for int8 and
// int16, a value beyond that type (NaN and the infinities too) becoming its
// minimum, then wrapped to the width. -1.5 -> 255 and 300.7 -> 44 as uint8.
template <class To, class F>
inline To narrow_float(F v) {
  static_assert(std::is_integral_v<To> && sizeof(To) <= 2 && !std::is_same_v<To, bool>);
  using Via = std::conditional_t<std::is_same_v<To, uint8_t>, int64_t, int32_t>;
  constexpr F lo = F(std::numeric_limits<Via>::min());  // -2^63 or -2^31: exact in F
  const Via w = (v >= lo && v < -lo) ? Via(v) : std::numeric_limits<Via>::min();
  return To(std::make_unsigned_t<Via>(w));
}

// Floating-point element functions, as the CPU kernels compute them
// (backend/cpu/math.h: the same expressions; tests/test_optim.py checks the
// optimizers' fused loops against their whole-tensor ops bit for bit).
template <class C>
inline C sqrt(C x) {
  return std::sqrt(x);
}
template <class C>
inline C abs(C x) {
  return std::abs(x);
}
template <class C>
inline C sign(C x) {
  return C((x > 0) - (x < 0));  // NaN -> 0, like PyTorch
}
template <class C>
inline C maximum(C a, C b) {  // NaN-propagating
  return (a != a || a > b) ? a : (b != b ? b : (a == b ? a : b));
}
template <class C>
inline C minimum(C a, C b) {  // NaN-propagating
  return (a != a || a < b) ? a : (b != b ? b : (a == b ? a : b));
}

}  // namespace lucid::element
