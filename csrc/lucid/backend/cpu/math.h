#pragma once
// Scalar definitions of the elementwise ops, shared by the eager kernels and
// the fused executable so both compute bit-identical results.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "lucid/ops/primitives.h"

namespace lucid::cpu {

// The approximations must inline into the kernels' loops to vectorise; in a
// unit with many kernel instantiations the compiler's growth limits would
// otherwise leave calls there.
#if defined(__GNUC__) || defined(__clang__)
#define LUCID_MATH_INLINE inline __attribute__((always_inline))
#else
#define LUCID_MATH_INLINE inline
#endif

// float32 exp, log, tanh and erf, within ~1.3 ulp of the exact values (the tests
// check this against float64): branch-free, so the kernels' loops vectorise,
// where calls into libm would not. float64 keeps libm.
LUCID_MATH_INLINE float float_from_bits(int32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
LUCID_MATH_INLINE int32_t float_bits(float f) {
  int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// a * b + c, fused where the target has FMA instructions. Eager kernels and
// the fused executable are compiled alike, so they still agree bit for bit.
LUCID_MATH_INLINE float madd(float a, float b, float c) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// Cephes' expf core: for xc in [-104, 89], exp(xc) = y * 2^n with
// xc = n ln2 + r (Cody-Waite) and y = exp(r) by a degree-7 polynomial. n is
// rounded by adding 1.5 * 2^23 (no float-to-int conversion, which would keep
// the loop scalar).
LUCID_MATH_INLINE float exp_reduced(float xc, int32_t& n) {
  constexpr float kRound = 12582912.0f;
  const float shifted = madd(xc, 1.44269504088896341f, kRound);
  const float fn = shifted - kRound;
  n = int32_t(uint32_t(float_bits(shifted)) - uint32_t(float_bits(kRound)));
  float r = madd(fn, -0.693359375f, xc);
  r = madd(fn, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = madd(p, r, 1.3981999507e-3f);
  p = madd(p, r, 8.3334519073e-3f);
  p = madd(p, r, 4.1665795894e-2f);
  p = madd(p, r, 1.6666665459e-1f);
  p = madd(p, r, 5.0000001201e-1f);
  return madd(p, r * r, r) + 1.0f;
}

// 2^n for n in [-126, 127].
LUCID_MATH_INLINE float pow2i(int32_t n) { return float_from_bits(int32_t(uint32_t(n + 127) << 23)); }

LUCID_MATH_INLINE float exp_f32(float x) {
  // Below -104 the result rounds to 0: those lanes (a masked softmax entry
  // is exp(-inf)) compute exp(0) instead and are zeroed at the end, so they
  // never make a subnormal intermediate, which costs a microcode assist per
  // vector on x86 (8x slower on half-masked rows). A NaN passes through the
  // arithmetic. The selects are ordered so they compile to min and blends.
  // 2^n is applied in two halves, so results down to the subnormal range
  // and up to overflow come out right.
  const bool zero = x < -104.0f;
  float xc = x > 89.0f ? 89.0f : x;
  xc = zero ? 0.0f : xc;
  int32_t n;
  const float y = exp_reduced(xc, n);
  const int32_t n1 = n >> 1;
  const float e = y * pow2i(n1) * pow2i(n - n1);
  return zero ? 0.0f : e;
}

LUCID_MATH_INLINE float tanh_f32(float x) {
  // Cephes' tanhf: an odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1) above.
  const float a = std::fabs(x), z = a * a;
  float p = -5.70498872745e-3f;
  p = madd(p, z, 2.06390887954e-2f);
  p = madd(p, z, -5.37397155531e-2f);
  p = madd(p, z, 1.33314422036e-1f);
  p = madd(p, z, -3.33332819422e-1f);
  const float small = madd(p * z, a, a);
  const float big = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  return std::copysign(a < 0.625f ? small : big, x);
}

LUCID_MATH_INLINE float erf_f32(float x) {
  // Minimax fits on two intervals (N. Juffa's erff): odd polynomial below
  // 0.9277, 1 - exp(poly(|x|)) above.
  const float t = std::fabs(x), s = x * x;
  float r = madd(-1.72853470e-5f, t, 3.83197126e-4f);
  const float u = madd(-3.88396438e-3f, t, 2.42546219e-2f);
  r = madd(r, s, u);
  r = madd(r, t, -1.06777877e-1f);
  r = madd(r, t, -6.34846687e-1f);
  r = madd(r, t, -1.28717512e-1f);
  r = madd(r, t, -t);
  // exp(r) for r <= 0 (-inf for huge |x|, NaN for NaN, which takes the other
  // branch): below -87 it no longer changes 1 - exp(r), so one scale does.
  int32_t n;
  const float e = exp_reduced(r > -87.0f ? r : -87.0f, n) * pow2i(n);
  const float big = std::copysign(1.0f - e, x);
  float q = -5.96761703e-4f;
  q = madd(q, s, 4.99119423e-3f);
  q = madd(q, s, -2.67681349e-2f);
  q = madd(q, s, 1.12819925e-1f);
  q = madd(q, s, -3.76125336e-1f);
  q = madd(q, s, 1.28379166e-1f);
  q = madd(q, x, x);
  return t > 0.927734375f ? big : q;
}

LUCID_MATH_INLINE float log_f32(float x) {
  // Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + (m - 1))
  // by a degree-8 polynomial, e ln2 added in two parts (Cody-Waite). The
  // exponent and mantissa come from the bits (subnormals scaled by 2^23
  // first); zero, negatives, infinity and NaN are selected at the end. The
  // cases are told apart on the bits, not by float comparisons that GCC
  // relates to one another and turns into branches (a scalar loop).
  const int32_t xb = float_bits(x);
  const bool tiny = (xb & 0x7f800000) == 0;  // zero or subnormal
  const int32_t bits = float_bits(x * (tiny ? 8388608.0f : 1.0f));
  float m = float_from_bits((bits & 0x007fffff) | 0x3f000000);  // [0.5, 1)
  const float low = m < 0.707106781186547524f ? 1.0f : 0.0f;  // then m doubles, e drops by one
  m = madd(m, low, m) - 1.0f;
  const float fe = float(((bits >> 23) & 0xff) - 126) - (tiny ? 23.0f : 0.0f) - low, z = m * m;
  float p = 7.0376836292e-2f;
  p = madd(p, m, -1.1514610310e-1f);
  p = madd(p, m, 1.1676998740e-1f);
  p = madd(p, m, -1.2420140846e-1f);
  p = madd(p, m, 1.4249322787e-1f);
  p = madd(p, m, -1.6668057665e-1f);
  p = madd(p, m, 2.0000714765e-1f);
  p = madd(p, m, -2.4999993993e-1f);
  p = madd(p, m, 3.3333331174e-1f);
  float y = p * m * z;
  y = madd(fe, -2.12194440e-4f, y);
  y = madd(z, -0.5f, y);
  float r = madd(fe, 0.693359375f, m + y);
  r = xb < 0x7f800000 ? r : x;  // +inf and NaN give themselves
  const float edge = (xb & 0x7fffffff) == 0 ? -std::numeric_limits<float>::infinity()
                                             : std::numeric_limits<float>::quiet_NaN();
  return xb > 0 ? r : edge;  // zero: -inf; negative: NaN
}

template <class C>
inline C exp_(C x) {
  if constexpr (std::is_same_v<C, float>) return exp_f32(x);
  else return std::exp(x);
}
template <class C>
inline C tanh_(C x) {
  if constexpr (std::is_same_v<C, float>) return tanh_f32(x);
  else return std::tanh(x);
}
template <class C>
inline C log_(C x) {
  if constexpr (std::is_same_v<C, float>) return log_f32(x);
  else return std::log(x);
}
template <class C>
inline C erf_(C x) {
  if constexpr (std::is_same_v<C, float>) return erf_f32(x);
  else return std::erf(x);
}

// Integer arithmetic wraps modulo 2^bits, as PyTorch's does (two's
// complement): signed overflow is undefined behaviour in C++, so integers
// compute in an unsigned type at least as wide as unsigned int (the usual
// promotions would turn a narrower one into int, where 16-bit products
// overflow) and narrow back. bool and floats are unchanged.
template <class C>
constexpr bool is_signed_int_v = std::is_integral_v<C> && std::is_signed_v<C>;
template <class C>
constexpr bool is_wrapping_int_v = std::is_integral_v<C> && !std::is_same_v<C, bool>;
template <class C>
using wrap_unsigned_t = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
template <class C>
LUCID_MATH_INLINE C wrap_add(C a, C b) {
  if constexpr (is_wrapping_int_v<C>) return C(wrap_unsigned_t<C>(a) + wrap_unsigned_t<C>(b));
  else return C(a + b);
}
template <class C>
LUCID_MATH_INLINE C wrap_sub(C a, C b) {
  if constexpr (is_wrapping_int_v<C>) return C(wrap_unsigned_t<C>(a) - wrap_unsigned_t<C>(b));
  else return C(a - b);
}
template <class C>
LUCID_MATH_INLINE C wrap_mul(C a, C b) {
  if constexpr (is_wrapping_int_v<C>) return C(wrap_unsigned_t<C>(a) * wrap_unsigned_t<C>(b));
  else return C(a * b);
}
template <class C>
LUCID_MATH_INLINE C wrap_neg(C x) {
  if constexpr (is_wrapping_int_v<C>) return C(wrap_unsigned_t<C>(0) - wrap_unsigned_t<C>(x));
  else return C(-x);
}

// Special functions, as PyTorch's CPU kernels define them at the poles:
// digamma(0) = -inf (with 0's sign flipped), NaN at negative integers;
// trigamma by the reflection formula below 1/2; erfinv(+-1) = +-inf.
template <class C>
inline C digamma_(C x) {
  constexpr double pi = 3.14159265358979323846;
  if (x == 0) return std::copysign(std::numeric_limits<C>::infinity(), -x);
  double v = double(x), result = 0;
  if (v < 0) {
    if (v == std::trunc(v)) return std::numeric_limits<C>::quiet_NaN();
    // digamma(1 - v) - digamma(v) = pi / tan(pi v), with v's (signed)
    // fractional part: tan is exact for it where pi v would round
    double whole;
    result = -pi / std::tan(pi * std::modf(v, &whole));
    v = 1 - v;
  }
  while (v < 10) {
    result -= 1 / v;
    v += 1;
  }
  if (v == 10) return C(result + 2.25175258906672110764);  // digamma(10)
  const double z = 1 / (v * v);
  const double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -
                        z * (691.0 / 32760 - z / 12))))));
  return C(result + std::log(v) - 0.5 / v - series);
}

template <class C>
inline C trigamma_(C x) {
  constexpr double pi = 3.14159265358979323846;
  double v = double(x), sign = 1, result = 0;
  if (v < 0.5) {
    sign = -1;
    const double s = std::sin(pi * v);
    result -= pi * pi / (s * s);
    v = 1 - v;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (v * v);
    v += 1;
  }
  const double ixx = 1 / (v * v);
  result += (1 + 1 / (2 * v) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / v;
  return C(sign * result);
}

template <class C>
inline C lgamma_(C x) {
  int sign;  // the reentrant form: lgamma writes the global signgam
  if constexpr (std::is_same_v<C, float>) return ::lgammaf_r(x, &sign);
  else return ::lgamma_r(x, &sign);
}

template <class C>
inline C erfinv_(C y) {
  if (!(std::abs(y) <= 1)) return std::numeric_limits<C>::quiet_NaN();
  if (std::abs(y) == 1) return std::copysign(std::numeric_limits<C>::infinity(), y);
  // Giles' single-precision approximation, then Newton steps on erf in double.
  const double w = -std::log((1.0 - double(y)) * (1.0 + double(y)));
  double p;
  if (w < 5) {
    const double t = w - 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * t;
  } else {
    const double t = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * t;
  }
  // On |y|: near 1 the residual is taken on erfc (1 - |y| is exact there),
  // where erf(r) - |y| would cancel.
  const double a = std::abs(double(y));
  double r = p * a;
  for (int i = 0; i < 2; ++i) {
    const double residual = a > 0.5 ? (1 - a) - std::erfc(r) : std::erf(r) - a;
    r -= residual / (1.1283791670955126 * std::exp(-r * r));
  }
  return C(std::copysign(r, double(y)));
}

template <UnaryOp op, class C>
inline C unary_apply(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case UnaryOp::Neg: return -x;
      case UnaryOp::Abs: return std::abs(x);
      case UnaryOp::Sign: return C((x > 0) - (x < 0));  // NaN -> 0, like PyTorch
      case UnaryOp::Exp: return exp_(x);
      case UnaryOp::Log: return log_(x);
      case UnaryOp::Log1p: return std::log1p(x);
      case UnaryOp::Expm1: return std::expm1(x);
      case UnaryOp::Sqrt: return std::sqrt(x);
      case UnaryOp::Rsqrt: return C(1) / std::sqrt(x);
      case UnaryOp::Square: return x * x;
      case UnaryOp::Reciprocal: return C(1) / x;
      case UnaryOp::Sin: return std::sin(x);
      case UnaryOp::Cos: return std::cos(x);
      case UnaryOp::Tanh: return tanh_(x);
      case UnaryOp::Sigmoid: return C(1) / (C(1) + exp_(-x));
      case UnaryOp::Relu: return x > C(0) ? x : (x != x ? x : C(0));
      case UnaryOp::GeluErf: return C(0.5) * x * (C(1) + erf_(x * C(M_SQRT1_2)));
      case UnaryOp::GeluTanh: {
        const C k = C(M_SQRT2 * M_2_SQRTPI * 0.5);
        return C(0.5) * x * (C(1) + tanh_(k * (x + C(0.044715) * x * x * x)));
      }
      case UnaryOp::Silu: return x / (C(1) + exp_(-x));
      case UnaryOp::Erf: return erf_(x);
      case UnaryOp::Floor: return std::floor(x);
      case UnaryOp::Ceil: return std::ceil(x);
      case UnaryOp::Round: return std::nearbyint(x);
      case UnaryOp::Trunc: return std::trunc(x);
      case UnaryOp::Lgamma: return lgamma_(x);
      case UnaryOp::Digamma: return digamma_(x);
      case UnaryOp::Trigamma: return trigamma_(x);
      case UnaryOp::Erfinv: return erfinv_(x);
      case UnaryOp::GeluErfGrad:  // Phi(x) + x phi(x)
        return C(0.5) * (C(1) + erf_(x * C(M_SQRT1_2))) + x * (exp_(C(-0.5) * x * x) * C(0.5 * M_2_SQRTPI * M_SQRT1_2));
      case UnaryOp::GeluTanhGrad: {
        const C k = C(M_SQRT2 * M_2_SQRTPI * 0.5), c = C(0.044715);
        const C x2 = x * x, t = tanh_(k * x * (C(1) + c * x2));
        return C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * k * (C(1) + C(3) * c * x2);
      }
      case UnaryOp::SiluGrad: {
        const C s = C(1) / (C(1) + exp_(-x));
        return s * (C(1) + x * (C(1) - s));
      }
      default: return x;
    }
  } else if constexpr (std::is_same_v<C, bool>) {
    return x;  // abs, sign, square and relu of a bool are itself (neg of a bool is refused before any kernel)
  } else {
    switch (op) {
      case UnaryOp::Neg: return wrap_neg(x);
      case UnaryOp::Abs:
        if constexpr (std::is_signed_v<C>) return x < 0 ? wrap_neg(x) : x;
        else return x;
      case UnaryOp::Sign: return C((x > 0) - (x < C(0)));
      case UnaryOp::Square: return wrap_mul(x, x);
      case UnaryOp::Relu: return x > 0 ? x : C(0);
      case UnaryOp::BitNot: return C(~x);
      default: return x;
    }
  }
}

template <UnaryOp op, class C>
inline bool unary_predicate(C x) {
  switch (op) {
    case UnaryOp::LogicalNot: return !x;
    case UnaryOp::IsFinite: return std::isfinite(double(x));
    case UnaryOp::IsNan: return x != x;
    case UnaryOp::IsInf: return std::isinf(double(x));
    default: return false;
  }
}

// Python's floor division and modulo (sign follows the divisor).
template <class C>
inline C floor_div(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (b == 0) return a / b;
    C mod = std::fmod(a, b);
    C div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= C(1);
    C fl;
    if (div != 0) {
      fl = std::floor(div);
      if (div - fl > C(0.5)) fl += C(1);
    } else {
      fl = std::copysign(C(0), a / b);
    }
    return fl;
  } else if constexpr (std::is_same_v<C, bool>) {
    if (!b) integer_division_by_zero(BinaryOp::FloorDiv);
    return a;
  } else {
    if (b == 0) integer_division_by_zero(BinaryOp::FloorDiv);
    if constexpr (!std::is_signed_v<C>) {
      return C(a / b);
    } else {
      if (b == -1) return wrap_neg(a);  // INT_MIN / -1 traps in hardware; it wraps to INT_MIN
      C q = C(a / b);
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
  }
}
template <class C>
inline C py_mod(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    C r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else if constexpr (std::is_same_v<C, bool>) {
    if (!b) integer_division_by_zero(BinaryOp::Remainder);
    return false;
  } else {
    if (b == 0) integer_division_by_zero(BinaryOp::Remainder);
    if constexpr (!std::is_signed_v<C>) {
      return C(a % b);
    } else {
      if (b == -1) return 0;  // INT_MIN % -1 traps in hardware
      C r = C(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) r = C(r + b);
      return r;
    }
  }
}

// PyTorch's integer power: a negative exponent gives 1 / base truncated
// (0 unless base is 1 or -1); 0 ** negative is PyTorch's too (its kernel
// divides by zero there; its scalar path raises, see ops::pow).
template <class C>
inline C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>)
    if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  C r = 1;
  while (exp) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}

// Integer bit operations; shifts as PyTorch's: a left shift by a negative
// count or by the width or more gives 0, a right shift fills with the sign.
template <BinaryOp op, class C>
inline C bitwise(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return op == BinaryOp::BitAnd ? (a && b) : op == BinaryOp::BitOr ? (a || b) : op == BinaryOp::BitXor ? a != b : a;
  } else {
    constexpr int64_t width = int64_t(sizeof(C) * 8);
    switch (op) {
      case BinaryOp::BitAnd: return C(a & b);
      case BinaryOp::BitOr: return C(a | b);
      case BinaryOp::BitXor: return C(a ^ b);
      case BinaryOp::LeftShift:
        if (int64_t(b) < 0 || int64_t(b) >= width) return C(0);
        return C(std::make_unsigned_t<C>(a) << b);
      default:
        if (int64_t(b) < 0 || int64_t(b) >= width) return std::is_signed_v<C> ? C(a >> (width - 1)) : C(0);
        return C(a >> b);
    }
  }
}

template <BinaryOp op, class C>
inline C binary_apply(C a, C b) {
  switch (op) {
    case BinaryOp::Add: return wrap_add(a, b);
    case BinaryOp::Sub: return wrap_sub(a, b);
    case BinaryOp::Mul: return wrap_mul(a, b);
    case BinaryOp::Div:
      if constexpr (std::is_floating_point_v<C>) return a / b;
      else {
        if (b == 0) integer_division_by_zero(BinaryOp::Div);
        if constexpr (is_signed_int_v<C>)
          if (b == -1) return wrap_neg(a);  // INT_MIN / -1 traps in hardware
        return C(a / b);
      }
    case BinaryOp::FloorDiv: return floor_div(a, b);
    case BinaryOp::Remainder: return py_mod(a, b);
    case BinaryOp::Fmod:
      if constexpr (std::is_floating_point_v<C>) return std::fmod(a, b);
      else if constexpr (std::is_same_v<C, bool>) {
        if (!b) integer_division_by_zero(BinaryOp::Fmod);
        return false;
      } else {
        if (b == 0) integer_division_by_zero(BinaryOp::Fmod);
        if constexpr (std::is_signed_v<C>)
          if (b == -1) return C(0);  // INT_MIN % -1 traps in hardware; it is 0
        return C(a % b);
      }
    case BinaryOp::Pow:
      if constexpr (std::is_floating_point_v<C>) return std::pow(a, b);
      else if constexpr (std::is_same_v<C, bool>) return a || !b;
      else return int_pow(a, b);
    case BinaryOp::Maximum:
      if constexpr (std::is_floating_point_v<C>) return (a != a || a > b) ? a : (b != b ? b : (a == b ? a : b));
      else return a > b ? a : b;
    case BinaryOp::Minimum:
      if constexpr (std::is_floating_point_v<C>) return (a != a || a < b) ? a : (b != b ? b : (a == b ? a : b));
      else return a < b ? a : b;
    case BinaryOp::Atan2:
      if constexpr (std::is_floating_point_v<C>) return std::atan2(a, b);
      else return C(0);
    case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor:
    case BinaryOp::LeftShift: case BinaryOp::RightShift:
      if constexpr (std::is_floating_point_v<C>) return C(0);  // refused before any kernel
      else return bitwise<op>(a, b);
    default: return C(0);
  }
}

template <BinaryOp op, class C>
inline bool binary_predicate(C a, C b) {
  switch (op) {
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    case BinaryOp::Ge: return a >= b;
    case BinaryOp::LogicalAnd: return bool(a) && bool(b);
    case BinaryOp::LogicalOr: return bool(a) || bool(b);
    case BinaryOp::LogicalXor: return bool(a) != bool(b);
    default: return false;
  }
}

// Calls fn(std::integral_constant<Op, op>) so loops are instantiated per op.
template <class Op, int N, class F, int I = 0>
inline void with_op(Op op, F&& fn) {
  if constexpr (I < N) {
    if (int(op) == I) return fn(std::integral_constant<Op, Op(I)>());
    with_op<Op, N, F, I + 1>(op, std::forward<F>(fn));
  }
}

}  // namespace lucid::cpu
