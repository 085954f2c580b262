#pragma once
// Scalar definitions of the elementwise ops, shared by the eager kernels and
// the fused executable so both compute bit-identical results.
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "lucid/ops/primitives.h"

namespace lucid::cpu {

template <UnaryOp op, class C>
inline C unary_apply(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case UnaryOp::Neg: return -x;
      case UnaryOp::Abs: return std::abs(x);
      case UnaryOp::Sign: return C((x > 0) - (x < 0));  // NaN -> 0, like PyTorch
      case UnaryOp::Exp: return std::exp(x);
      case UnaryOp::Log: return std::log(x);
      case UnaryOp::Log1p: return std::log1p(x);
      case UnaryOp::Expm1: return std::expm1(x);
      case UnaryOp::Sqrt: return std::sqrt(x);
      case UnaryOp::Rsqrt: return C(1) / std::sqrt(x);
      case UnaryOp::Square: return x * x;
      case UnaryOp::Reciprocal: return C(1) / x;
      case UnaryOp::Sin: return std::sin(x);
      case UnaryOp::Cos: return std::cos(x);
      case UnaryOp::Tanh: return std::tanh(x);
      case UnaryOp::Sigmoid: return C(1) / (C(1) + std::exp(-x));
      case UnaryOp::Relu: return x > C(0) ? x : (x != x ? x : C(0));
      case UnaryOp::GeluErf: return C(0.5) * x * (C(1) + std::erf(x * C(M_SQRT1_2)));
      case UnaryOp::GeluTanh: {
        const C k = C(M_SQRT2 * M_2_SQRTPI * 0.5);
        return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
      }
      case UnaryOp::Silu: return x / (C(1) + std::exp(-x));
      case UnaryOp::Erf: return std::erf(x);
      case UnaryOp::Floor: return std::floor(x);
      case UnaryOp::Ceil: return std::ceil(x);
      case UnaryOp::Round: return std::nearbyint(x);
      case UnaryOp::Trunc: return std::trunc(x);
      default: return x;
    }
  } else {
    switch (op) {
      case UnaryOp::Neg: return C(-x);
      case UnaryOp::Abs: return x < 0 ? C(-x) : x;
      case UnaryOp::Sign: return C((x > 0) - (x < 0));
      case UnaryOp::Square: return C(x * x);
      case UnaryOp::Relu: return x > 0 ? x : C(0);
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
    return a && b;
  } else {
    if (b == 0) return 0;
    C q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
}
template <class C>
inline C py_mod(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    C r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    if (b == 0) return 0;
    C r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

template <class C>
inline C int_pow(C base, C exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  C r = 1;
  while (exp) {
    if (exp & 1) r *= base;
    base *= base;
    exp >>= 1;
  }
  return r;
}

template <BinaryOp op, class C>
inline C binary_apply(C a, C b) {
  switch (op) {
    case BinaryOp::Add: return C(a + b);
    case BinaryOp::Sub: return C(a - b);
    case BinaryOp::Mul: return C(a * b);
    case BinaryOp::Div:
      if constexpr (std::is_floating_point_v<C>) return a / b;
      else return b == 0 ? C(0) : C(a / b);
    case BinaryOp::FloorDiv: return floor_div(a, b);
    case BinaryOp::Remainder: return py_mod(a, b);
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
