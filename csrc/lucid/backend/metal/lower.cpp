// Every primitive as MPSGraph operations, in one place: eager single-op
// graphs and compiled steps both build from lower_primitive(). The formulas
// follow the CPU kernels (backend/cpu/math.h) where those define the result
// beyond IEEE basics: NaN propagation, Python's floor division and modulo,
// pow of negative bases, first-occurrence argmax, and 16-bit floats computed
// in float32 and rounded once. Where MPSGraph's documentation leaves a
// result open (float modulo's sign, whether reductions keep their axes,
// integer division rounding, casts to bool), the plan is written so that it
// does not depend on the answer.
#include "lucid/backend/metal/lower.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lucid/core/philox.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/norm.h"

namespace lucid::metal {

namespace {

using V = PlanBuilder::V;

// Arithmetic of 16-bit floats happens in float32, as on the CPU.
DType compute_type(DType t) { return is_half(t) ? DType::Float32 : t; }

// x != 0 as bool; the plan never relies on how MPSGraph casts to bool.
V to_bool(PlanBuilder& g, V x) { return g.dtype(x) == DType::Bool ? x : g.ne(x, g.like(0, x)); }

// Indices are checked on the host where it sees them (check_indices: [0,
// size), as on the CPU); inside a compiled step it does not, and a negative
// index then reads from the end instead of outside the buffer.
V wrap_index(PlanBuilder& g, V idx, int64_t size) {
  return g.select(g.lt(idx, g.like(0, idx)), g.add(idx, g.like(double(size), idx)), idx);
}

// Shape of a host-side table of a rank-`rank` tensor along `axis`.
Shape along_axis(int rank, int axis, int64_t n) {
  Shape s(size_t(rank), 1);
  s[size_t(axis)] = n;
  return s;
}

V reduce(PlanBuilder& g, MpsOp op, V x, int axis) { return g.reduce(op, x, {int64_t(axis)}); }

// ------------------------------------------------------------------ Unary
V lower_unary(PlanBuilder& g, UnaryOp op, V x, DType dt) {
  switch (op) {
    case UnaryOp::LogicalNot: return g.lnot(to_bool(g, x));
    case UnaryOp::IsFinite:
      return is_floating(dt) ? g.unary(MpsOp::IsFinite, g.cast(x, compute_type(dt))) : g.full(1, DType::Bool, g.shape(x));
    case UnaryOp::IsNan:
      return is_floating(dt) ? g.unary(MpsOp::IsNaN, g.cast(x, compute_type(dt))) : g.full(0, DType::Bool, g.shape(x));
    case UnaryOp::IsInf:
      return is_floating(dt) ? g.unary(MpsOp::IsInf, g.cast(x, compute_type(dt))) : g.full(0, DType::Bool, g.shape(x));
    default: break;
  }
  if (!is_floating(dt)) {
    if (dt == DType::Bool) {  // +-x, |x|, x*x, relu(x) of a bool is x; sign(x) too
      switch (op) {
        case UnaryOp::Abs: case UnaryOp::Sign: case UnaryOp::Square: case UnaryOp::Relu: return g.identity(x);
        default: fail<TypeError>(unary_op_name(op), ": not implemented for bool");
      }
    }
    switch (op) {
      case UnaryOp::Neg: return g.unary(MpsOp::Neg, x);
      case UnaryOp::Abs: return g.unary(MpsOp::Abs, x);
      case UnaryOp::Sign:
        return g.select(g.gt(x, g.like(0, x)), g.like(1, x),
                        g.select(g.lt(x, g.like(0, x)), g.like(-1, x), g.like(0, x)));
      case UnaryOp::Square: return g.mul(x, x);
      case UnaryOp::Relu: return g.select(g.gt(x, g.like(0, x)), x, g.like(0, x));
      case UnaryOp::BitNot: return g.sub(g.unary(MpsOp::Neg, x), g.like(1, x));  // ~x = -x - 1 (two's complement)
      default: fail<TypeError>(unary_op_name(op), ": not implemented for ", dtype_name(dt));
    }
  }
  x = g.cast(x, compute_type(dt));
  auto c = [&](double v) { return g.like(v, x); };
  auto u = [&](MpsOp o, V a) { return g.unary(o, a); };
  switch (op) {
    case UnaryOp::Neg: return u(MpsOp::Neg, x);
    case UnaryOp::Abs: return u(MpsOp::Abs, x);
    case UnaryOp::Sign:  // +-1, and +0 for +-0 and NaN, as PyTorch (and the CPU) define it
      return g.select(g.gt(x, c(0)), c(1), g.select(g.lt(x, c(0)), c(-1), c(0)));
    case UnaryOp::Exp: return u(MpsOp::Exp, x);
    case UnaryOp::Log: return u(MpsOp::Log, x);
    case UnaryOp::Log1p: {
      // Kahan: log(u) * x / (u - 1) with u = 1 + x stays accurate for tiny x.
      V w = g.add(c(1), x), d = g.sub(w, c(1));
      V r = g.select(g.eq(d, c(0)), x, g.mul(u(MpsOp::Log, w), g.div(x, d)));
      return g.select(u(MpsOp::IsInf, x), u(MpsOp::Log, w), r);
    }
    case UnaryOp::Expm1: {
      // Kahan: (u - 1) * x / log(u) with u = exp(x).
      V w = u(MpsOp::Exp, x), wm1 = g.sub(w, c(1));
      V r = g.select(g.eq(w, c(1)), x, g.select(g.eq(wm1, c(-1)), c(-1), g.div(g.mul(wm1, x), u(MpsOp::Log, w))));
      return g.select(u(MpsOp::IsInf, w), w, r);
    }
    case UnaryOp::Sqrt: return u(MpsOp::Sqrt, x);
    case UnaryOp::Rsqrt: return g.div(c(1), u(MpsOp::Sqrt, x));
    case UnaryOp::Square: return g.mul(x, x);
    case UnaryOp::Reciprocal: return g.div(c(1), x);
    case UnaryOp::Sin: return u(MpsOp::Sin, x);
    case UnaryOp::Cos: return u(MpsOp::Cos, x);
    case UnaryOp::Tanh: return u(MpsOp::Tanh, x);
    case UnaryOp::Sigmoid: return g.div(c(1), g.add(c(1), u(MpsOp::Exp, u(MpsOp::Neg, x))));
    case UnaryOp::Relu: return g.select(g.gt(x, c(0)), x, g.select(u(MpsOp::IsNaN, x), x, c(0)));
    case UnaryOp::GeluErf: return g.mul(g.mul(c(0.5), x), g.add(c(1), u(MpsOp::Erf, g.mul(x, c(M_SQRT1_2)))));
    case UnaryOp::GeluTanh: {
      V inner = g.mul(c(M_SQRT2 * M_2_SQRTPI * 0.5), g.add(x, g.mul(g.mul(g.mul(c(0.044715), x), x), x)));
      return g.mul(g.mul(c(0.5), x), g.add(c(1), u(MpsOp::Tanh, inner)));
    }
    case UnaryOp::Silu: return g.div(x, g.add(c(1), u(MpsOp::Exp, u(MpsOp::Neg, x))));
    case UnaryOp::Erf: return u(MpsOp::Erf, x);
    case UnaryOp::GeluErfGrad: {  // Phi(x) + x phi(x)
      V cdf = g.mul(c(0.5), g.add(c(1), u(MpsOp::Erf, g.mul(x, c(M_SQRT1_2)))));
      V pdf = g.mul(u(MpsOp::Exp, g.mul(c(-0.5), g.mul(x, x))), c(0.5 * M_2_SQRTPI * M_SQRT1_2));
      return g.add(cdf, g.mul(x, pdf));
    }
    case UnaryOp::GeluTanhGrad: {
      const double k = M_SQRT2 * M_2_SQRTPI * 0.5, cc = 0.044715;
      V x2 = g.mul(x, x);
      V t = u(MpsOp::Tanh, g.mul(g.mul(c(k), x), g.add(c(1), g.mul(c(cc), x2))));
      V du = g.mul(c(k), g.add(c(1), g.mul(c(3 * cc), x2)));
      return g.add(g.mul(c(0.5), g.add(c(1), t)), g.mul(g.mul(g.mul(c(0.5), x), g.sub(c(1), g.mul(t, t))), du));
    }
    case UnaryOp::SiluGrad: {
      V s = g.div(c(1), g.add(c(1), u(MpsOp::Exp, u(MpsOp::Neg, x))));
      return g.mul(s, g.add(c(1), g.mul(x, g.sub(c(1), s))));
    }
    case UnaryOp::Floor: return u(MpsOp::Floor, x);
    case UnaryOp::Ceil: return u(MpsOp::Ceil, x);
    case UnaryOp::Round: return u(MpsOp::Rint, x);  // half to even, like nearbyint
    case UnaryOp::Trunc: return u(MpsOp::Trunc, x);
    default: break;
  }
  fail<NotImplementedError>("the operator '", unary_op_name(op), "' is not implemented for the metal device");
}

// ----------------------------------------------------------------- Binary
// Integer power by squaring (x^e with e < 0 as the CPU defines it).
V int_pow(PlanBuilder& g, V base, V e, DType dt) {
  const int bits = int(itemsize(dt)) * 8 - 1;
  V one = g.like(1, base), zero = g.like(0, base);
  V r = one, b = base, k = e;
  for (int i = 0; i < bits; ++i) {
    V bit = g.ne(g.binary(MpsOp::BitAnd, k, g.like(1, k)), g.like(0, k));
    r = g.select(bit, g.mul(r, b), r);
    b = g.mul(b, b);
    k = g.binary(MpsOp::ShiftRight, k, g.like(1, k));
  }
  V odd = g.ne(g.binary(MpsOp::BitAnd, e, g.like(1, e)), g.like(0, e));
  V negative = g.select(g.eq(base, one), one,
                        g.select(g.eq(base, g.like(-1, base)), g.select(odd, g.like(-1, base), one), zero));
  return g.select(g.lt(e, g.like(0, e)), negative, r);
}

// std::pow for floats: |a|^b with the sign of odd integer powers of negative
// bases, NaN for non-integer powers of finite ones, and pow(x, 0) =
// pow(1, y) = pow(-1, +-inf) = 1.
V float_pow(PlanBuilder& g, V a, V b) {
  auto c = [&](double v) { return g.like(v, a); };
  V r = g.binary(MpsOp::Pow, g.unary(MpsOp::Abs, a), b);
  V is_int = g.eq(g.unary(MpsOp::Floor, b), b);
  V half = g.mul(b, c(0.5));
  V is_odd = g.land(is_int, g.ne(g.unary(MpsOp::Floor, half), half));
  V negative = g.lt(a, c(0));
  r = g.select(g.land(g.unary(MpsOp::SignBit, a), is_odd), g.unary(MpsOp::Neg, r), r);  // -0.0 too: pow(-0, -3) = -inf
  r = g.select(g.land(g.land(negative, g.lnot(is_int)), g.unary(MpsOp::IsFinite, a)), c(NAN), r);
  r = g.select(g.land(g.eq(a, c(-1)), g.unary(MpsOp::IsInf, b)), c(1), r);
  r = g.select(g.eq(b, c(0)), c(1), r);
  return g.select(g.eq(a, c(1)), c(1), r);
}

// Python's floor division of floats, as the CPU's floor_div. The fix-ups
// hold whether MPSGraph's modulo follows fmod (the sign of a) or floor-mod
// (the sign of b).
V float_floor_div(PlanBuilder& g, V a, V b) {
  auto c = [&](double v) { return g.like(v, a); };
  V m = g.binary(MpsOp::Mod, a, b);
  V q = g.div(g.sub(a, m), b);
  V adjust = g.land(g.ne(m, c(0)), g.lxor(g.lt(b, c(0)), g.lt(m, c(0))));
  q = g.select(adjust, g.sub(q, c(1)), q);
  V fl = g.unary(MpsOp::Floor, q);
  fl = g.select(g.gt(g.sub(q, fl), c(0.5)), g.add(fl, c(1)), fl);
  V quotient = g.div(a, b);
  V zero = g.select(g.unary(MpsOp::SignBit, quotient), c(-0.0), c(0.0));
  V r = g.select(g.eq(b, c(0)), quotient, g.select(g.eq(q, c(0)), zero, fl));
  // A finite a over an infinite b: -1 for opposite signs, a signed zero
  // otherwise. Spelled out, because a floor-mod reading of modulo gives an
  // infinite remainder there (and (a - m) / b = NaN).
  V opposite = g.land(g.ne(a, c(0)), g.lxor(g.lt(a, c(0)), g.lt(b, c(0))));
  V at_inf = g.select(opposite, c(-1), zero);
  return g.select(g.land(g.unary(MpsOp::IsInf, b), g.unary(MpsOp::IsFinite, a)), at_inf, r);
}

// Python's modulo of floats (the sign of the divisor), for either modulo.
V float_py_mod(PlanBuilder& g, V a, V b) {
  auto c = [&](double v) { return g.like(v, a); };
  V r = g.binary(MpsOp::Mod, a, b);
  V fix = g.land(g.ne(r, c(0)), g.lxor(g.lt(r, c(0)), g.lt(b, c(0))));
  return g.select(fix, g.add(r, b), r);
}

V lower_binary(PlanBuilder& g, BinaryOp op, V a, V b, DType dt) {
  switch (op) {
    case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt:
    case BinaryOp::Ge: {
      if (dt == DType::Bool) {
        a = g.cast(a, DType::Int32);
        b = g.cast(b, DType::Int32);
      }
      switch (op) {
        case BinaryOp::Eq: return g.eq(a, b);
        case BinaryOp::Ne: return g.ne(a, b);
        case BinaryOp::Lt: return g.lt(a, b);
        case BinaryOp::Le: return g.binary(MpsOp::Le, a, b);
        case BinaryOp::Gt: return g.gt(a, b);
        default: return g.binary(MpsOp::Ge, a, b);
      }
    }
    case BinaryOp::LogicalAnd: return g.land(to_bool(g, a), to_bool(g, b));
    case BinaryOp::LogicalOr: return g.lor(to_bool(g, a), to_bool(g, b));
    case BinaryOp::LogicalXor: return g.lxor(to_bool(g, a), to_bool(g, b));
    default: break;
  }
  if (dt == DType::Bool) {  // the op layer sends only these for bool
    switch (op) {
      case BinaryOp::Add: case BinaryOp::Maximum: case BinaryOp::BitOr: return g.lor(a, b);
      case BinaryOp::Mul: case BinaryOp::Minimum: case BinaryOp::BitAnd: return g.land(a, b);
      case BinaryOp::BitXor: return g.lxor(a, b);
      default: fail<TypeError>(binary_op_name(op), ": not implemented for bool");
    }
  }
  if (is_floating(dt)) {
    const DType ct = compute_type(dt);
    a = g.cast(a, ct);
    b = g.cast(b, ct);
    switch (op) {
      case BinaryOp::Add: return g.add(a, b);
      case BinaryOp::Sub: return g.sub(a, b);
      case BinaryOp::Mul: return g.mul(a, b);
      case BinaryOp::Div: return g.div(a, b);
      case BinaryOp::FloorDiv: return float_floor_div(g, a, b);
      case BinaryOp::Remainder: return float_py_mod(g, a, b);
      case BinaryOp::Fmod: return g.binary(MpsOp::Mod, a, b);  // MPSGraph's modulo truncates, as C's fmod
      case BinaryOp::Pow: return float_pow(g, a, b);
      case BinaryOp::Maximum: return g.binary(MpsOp::MaxNaN, a, b);
      case BinaryOp::Minimum: return g.binary(MpsOp::MinNaN, a, b);
      case BinaryOp::Atan2: return g.binary(MpsOp::Atan2, a, b);
      default: break;
    }
  } else {
    // Integer division by zero gives 0, as on the CPU. Quotients are formed
    // as exact divisions (a - floor_mod(a, b)) / b, so they do not depend on
    // how the GPU rounds an inexact integer division.
    V zero = g.like(0, a);
    V is_zero = g.eq(b, zero);
    V safe_b = g.select(is_zero, g.like(1, b), b);
    V rem = g.binary(MpsOp::FloorMod, a, safe_b);
    V floor_q = g.div(g.sub(a, rem), safe_b);
    switch (op) {
      case BinaryOp::Add: return g.add(a, b);
      case BinaryOp::Sub: return g.sub(a, b);
      case BinaryOp::Mul: return g.mul(a, b);
      case BinaryOp::Div: {  // C's truncating division
        V up = g.land(g.ne(rem, zero), g.lxor(g.lt(a, zero), g.lt(safe_b, zero)));
        return g.select(is_zero, zero, g.select(up, g.add(floor_q, g.like(1, a)), floor_q));
      }
      case BinaryOp::FloorDiv: return g.select(is_zero, zero, floor_q);
      case BinaryOp::Remainder: return g.select(is_zero, zero, rem);
      case BinaryOp::Fmod: {  // the floor remainder moved to the dividend's sign
        V moved = g.land(g.ne(rem, zero), g.lxor(g.lt(a, zero), g.lt(safe_b, zero)));
        return g.select(is_zero, zero, g.select(moved, g.sub(rem, safe_b), rem));
      }
      case BinaryOp::Pow: return int_pow(g, a, b, dt);
      case BinaryOp::Maximum: return g.binary(MpsOp::Max, a, b);
      case BinaryOp::Minimum: return g.binary(MpsOp::Min, a, b);
      case BinaryOp::Atan2: return g.full(0, dt, broadcast_shapes(g.shape(a), g.shape(b)));
      default: break;
    }
  }
  fail<NotImplementedError>("the operator '", binary_op_name(op), "' is not implemented for the metal device");
}

// ------------------------------------------------------------------- Cast
// An integer brought into an 8- or 16-bit type's range modulo 2^bits (two's
// complement) in its own type, so the cast after is exact: MPSGraph does not
// document its narrowing conversions.
V wrap_to_small_integral(PlanBuilder& g, V v, DType to) {
  const double span = double(int64_t(1) << (8 * itemsize(to)));
  V w = g.binary(MpsOp::BitAnd, v, g.like(span - 1, v));
  if (to != DType::UInt8) w = g.select(g.gt(w, g.like(double(integral_max(to)), w)), g.sub(w, g.like(span, w)), w);
  return g.cast(w, to);
}

V lower_cast(PlanBuilder& g, V x, DType from, DType to) {
  if (from == to) return g.identity(x);
  if (to == DType::Bool) return to_bool(g, x);  // NaN -> true, as x != 0
  if (is_small_integral(to) && is_floating(from)) {
    // The CPU's conversion (core/element.h narrow_float): truncated, a value
    // beyond int32 (NaN too) becoming one whose low bits are 0 (float32 and
    // narrower values that large are multiples of 2^8), then wrapped.
    V f = g.cast(x, compute_type(from));
    V in_range = g.land(g.lt(f, g.like(2147483648.0, f)), g.gt(f, g.like(-2147483649.0, f)));
    f = g.unary(MpsOp::Trunc, g.select(in_range, f, g.like(0, f)));
    return wrap_to_small_integral(g, g.cast(f, DType::Int32), to);
  }
  if (is_small_integral(to) && is_integral(from))  // widened first: an exact conversion
    return wrap_to_small_integral(g, itemsize(from) >= 4 ? x : g.cast(x, DType::Int32), to);
  if (is_floating(from) && !is_floating(to)) {
    // Truncate toward zero before the cast, NaN to 0 (not UB), as on the CPU.
    V f = g.cast(x, compute_type(from));
    f = g.unary(MpsOp::Trunc, g.select(g.unary(MpsOp::IsNaN, f), g.like(0, f), f));
    return g.cast(f, to);
  }
  if (is_half(from) && is_half(to)) return g.cast(g.cast(x, DType::Float32), to);
  return g.cast(x, to);
}

// --------------------------------------------------------------- creation
// One element with the CPU's exact bytes, broadcast to the output's shape.
V lower_full(PlanBuilder& g, double value, const TensorMeta& m) {
  unsigned char bytes[8] = {};
  write_value(bytes, m.dtype, value);
  V one = g.data(bytes, itemsize(m.dtype), Shape{1}, m.dtype);
  return m.numel() == 1 ? one : g.broadcast(one, graph_shape(m.shape));
}

V lower_arange(PlanBuilder& g, const Arange& a, const TensorMeta& m) {
  const int64_t n = m.numel();
  const size_t es = itemsize(m.dtype);
  std::vector<unsigned char> bytes(size_t(n) * es);
  for (int64_t i = 0; i < n; ++i) write_value(bytes.data() + size_t(i) * es, m.dtype, a.start + double(i) * a.step);
  return g.data(bytes.data(), bytes.size(), Shape{n}, m.dtype);
}

// -------------------------------------------------------------- reductions
double reduce_identity(ReduceOp op, DType dt) {
  switch (op) {
    case ReduceOp::Sum: return 0;
    case ReduceOp::Prod: return 1;
    case ReduceOp::All: return 1;
    case ReduceOp::Any: return 0;
    case ReduceOp::Max:
      return is_floating(dt) ? -INFINITY : double(integral_min(dt));
    case ReduceOp::Min:
      return is_floating(dt) ? INFINITY : double(integral_max(dt));
  }
  return 0;
}

V lower_reduce(PlanBuilder& g, const Reduce& r, V x, const TensorMeta& in, const TensorMeta& out) {
  if (x < 0) return g.full(reduce_identity(r.op, in.dtype), out.dtype, graph_shape(out.shape));
  if (r.axes.empty()) return g.identity(x);
  const std::vector<int64_t> axes(r.axes.begin(), r.axes.end());
  const DType dt = in.dtype;
  ReduceOp op = r.op;
  if (dt == DType::Bool) {  // sum/max of bools is "any", prod/min "all"
    if (op == ReduceOp::Sum || op == ReduceOp::Max) op = ReduceOp::Any;
    if (op == ReduceOp::Prod || op == ReduceOp::Min) op = ReduceOp::All;
  }
  switch (op) {
    case ReduceOp::Sum: return g.reduce(MpsOp::ReduceSum, g.cast(x, compute_type(dt)), axes);
    case ReduceOp::Prod: return g.reduce(MpsOp::ReduceProd, g.cast(x, compute_type(dt)), axes);
    case ReduceOp::Max:
      return is_floating(dt) ? g.reduce(MpsOp::ReduceMaxNaN, g.cast(x, compute_type(dt)), axes)
                             : g.reduce(MpsOp::ReduceMax, x, axes);
    case ReduceOp::Min:
      return is_floating(dt) ? g.reduce(MpsOp::ReduceMinNaN, g.cast(x, compute_type(dt)), axes)
                             : g.reduce(MpsOp::ReduceMin, x, axes);
    case ReduceOp::All: return g.reduce(MpsOp::ReduceAnd, to_bool(g, x), axes);
    case ReduceOp::Any: return g.reduce(MpsOp::ReduceOr, to_bool(g, x), axes);
  }
  fail<NotImplementedError>("the operator '", r.name(), "' is not implemented for the metal device");
}

// The first position of the extreme value; a NaN wins at its first position.
V lower_arg_reduce(PlanBuilder& g, const ArgReduce& ar, V x, const TensorMeta& in) {
  const int rank = std::max<int>(1, int(in.shape.size()));
  const int axis = in.shape.empty() ? 0 : ar.axis;
  const int64_t r = in.shape.empty() ? 1 : in.shape[size_t(axis)];
  const bool is_max = ar.op == ArgReduceOp::ArgMax;
  if (in.dtype == DType::Bool) x = g.cast(x, DType::Int32);
  V hit;
  if (is_floating(in.dtype)) {
    x = g.cast(x, compute_type(in.dtype));
    V m = reduce(g, is_max ? MpsOp::ReduceMaxNaN : MpsOp::ReduceMinNaN, x, axis);
    hit = g.select(g.unary(MpsOp::IsNaN, m), g.unary(MpsOp::IsNaN, x), g.eq(x, m));
  } else {
    V m = reduce(g, is_max ? MpsOp::ReduceMax : MpsOp::ReduceMin, x, axis);
    hit = g.eq(x, m);
  }
  std::vector<int32_t> positions(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) positions[size_t(i)] = int32_t(i);
  V pos = g.data(positions.data(), positions.size() * sizeof(int32_t), along_axis(rank, axis, r), DType::Int32);
  V candidate = g.select(hit, pos, g.scalar(double(r), DType::Int32));
  return g.cast(reduce(g, MpsOp::ReduceMin, candidate, axis), DType::Int64);
}

// ------------------------------------------------------------------ matmul
V lower_matmul(PlanBuilder& g, const Matmul& mm, V a, V b, const TensorMeta& am, const TensorMeta& out) {
  const size_t nd = am.shape.size();
  const int64_t k = mm.trans_a ? am.shape[nd - 2] : am.shape[nd - 1];
  if (a < 0 || b < 0 || k == 0) return g.full(0, out.dtype, graph_shape(out.shape));
  if (mm.trans_a) a = g.transpose(a, int64_t(nd) - 2, int64_t(nd) - 1);
  if (mm.trans_b) b = g.transpose(b, int64_t(nd) - 2, int64_t(nd) - 1);
  if (is_floating(am.dtype)) {
    // 16-bit floats multiply in float32 and round once, as the CPU does.
    const DType ct = compute_type(am.dtype);
    return g.matmul(g.cast(a, ct), g.cast(b, ct));
  }
  // Integers: exact products summed over K ([.., M, K, 1] * [.., 1, K, N]).
  const int64_t m = out.shape[nd - 2], n = out.shape[nd - 1];
  Shape batch(out.shape.begin(), out.shape.end() - 2);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {m, k, 1});
  sb.insert(sb.end(), {1, k, n});
  const DType ct = am.dtype == DType::Bool ? DType::Int32 : am.dtype;
  V prod = g.mul(g.reshape(g.cast(a, ct), sa), g.reshape(g.cast(b, ct), sb));
  V sum = g.reduce(MpsOp::ReduceSum, prod, {int64_t(nd) - 1});
  return am.dtype == DType::Bool ? g.ne(sum, g.like(0, sum)) : sum;
}

// ---------------------------------------------------------- slice_scatter
V lower_slice_scatter(PlanBuilder& g, const SliceSpec& spec, V base, V src, const TensorMeta& bm,
                      const TensorMeta& sm) {
  if (src < 0) return g.identity(base);
  if (is_integral(bm.dtype)) {
    // Integers go through a scatter at host-computed flat positions (the
    // slice's positions are distinct, so "set" is deterministic).
    const Shape src_shape = spec.out_shape();
    const Shape strides = contiguous_strides(bm.shape);
    const int64_t n = sm.numel();
    LUCID_CHECK_T(NotImplementedError, bm.numel() <= std::numeric_limits<int32_t>::max(),
                  "slice_scatter on the metal device: integer tensors over 2^31 elements");
    std::vector<int32_t> flat(static_cast<size_t>(n));
    std::vector<int64_t> idx(src_shape.size(), 0);
    for (int64_t p = 0; p < n; ++p) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += (spec.starts[d] + idx[d] * spec.steps[d]) * strides[d];
      flat[size_t(p)] = int32_t(off);
      for (int d = int(idx.size()) - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < src_shape[size_t(d)]) break;
        idx[size_t(d)] = 0;
      }
    }
    V positions = g.data(flat.data(), flat.size() * sizeof(int32_t), Shape{n}, DType::Int32);
    return g.scatter(g.reshape(base, Shape{bm.numel()}), g.reshape(src, Shape{n}), positions, 0, ScatterMode::Set);
  }
  // Floats and bools: the slice's gradient places src (and a mask of ones)
  // into a zero tensor of the base's shape; the mask selects src over base.
  const DType ct = bm.dtype == DType::Bool ? DType::Float32 : bm.dtype;
  V shape = g.shape_of(base);
  V placed = g.slice_gradient(g.cast(src, ct), shape, spec.starts, spec.stops, spec.steps);
  V ones = g.broadcast(g.scalar(1, DType::Float32), graph_shape(sm.shape));
  V mask = g.slice_gradient(ones, shape, spec.starts, spec.stops, spec.steps);
  if (bm.dtype == DType::Bool) placed = g.ne(placed, g.like(0, placed));
  return g.select(g.ne(mask, g.like(0, mask)), placed, base);
}

// ---------------------------------------------------------- strided views
// A layout over a row-major buffer as host-computed flat positions: strided
// reads are a gather at them, writes through views a scatter.
V layout_positions(PlanBuilder& g, const Layout& l, int64_t buffer_numel) {
  LUCID_CHECK_T(NotImplementedError, buffer_numel <= std::numeric_limits<int32_t>::max(),
                "strided views on the metal device: buffers over 2^31 elements");
  const int64_t n = numel(l.shape);
  std::vector<int32_t> flat(static_cast<size_t>(n));
  std::vector<int64_t> idx(l.shape.size(), 0);
  int64_t off = l.offset;
  for (int64_t p = 0; p < n; ++p) {
    flat[size_t(p)] = int32_t(off);
    for (int d = int(idx.size()) - 1; d >= 0; --d) {
      off += l.strides[size_t(d)];
      if (++idx[size_t(d)] < l.shape[size_t(d)]) break;
      off -= l.strides[size_t(d)] * l.shape[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
  return g.data(flat.data(), flat.size() * sizeof(int32_t), Shape{n}, DType::Int32);
}

// A view primitive (its layout over its row-major input) read out.
V lower_view_read(PlanBuilder& g, const Primitive& p, V x, const TensorMeta& xm, const TensorMeta& om) {
  const Layout l = *p.view_layout(contiguous_layout(xm.shape));
  if (om.numel() == 0) return g.reshape(g.reshape(x, Shape{xm.numel()}), graph_shape(om.shape));
  V flat = g.reshape(x, Shape{xm.numel()});
  return g.reshape(g.gather(flat, layout_positions(g, l, xm.numel()), 0), graph_shape(om.shape));
}

V lower_as_strided_scatter(PlanBuilder& g, const AsStridedScatter& sc, V base, V src, const TensorMeta& bm,
                           const TensorMeta& sm) {
  if (src < 0) return g.identity(base);
  const bool as_int = bm.dtype == DType::Bool;
  const DType ct = as_int ? DType::Int32 : compute_type(bm.dtype);
  V r = g.scatter(g.cast(base, ct), g.reshape(g.cast(src, ct), Shape{sm.numel()}),
                  layout_positions(g, sc.layout, bm.numel()), 0, sc.accumulate ? ScatterMode::Add : ScatterMode::Set);
  return as_int ? g.ne(r, g.like(0, r)) : r;
}

// ---------------------------------------------------------------- indexing
// Index tensors smaller than the data outside `axis` (which torch.gather and
// scatter allow) address the leading block: data is sliced to them.
bool same_outside_axis(const Shape& a, const Shape& b, int axis) {
  for (size_t d = 0; d < a.size(); ++d)
    if (int(d) != axis && a[d] != b[d]) return false;
  return true;
}

V lower_gather(PlanBuilder& g, int axis, V x, V idx, const TensorMeta& xm, const TensorMeta& im) {
  if (xm.shape.empty()) return g.fit(x, im.shape);  // a 0-d gather reads the one element
  idx = wrap_index(g, idx, xm.shape[size_t(axis)]);
  if (!same_outside_axis(xm.shape, im.shape, axis)) {
    std::vector<int64_t> starts(xm.shape.size(), 0), ends, steps(xm.shape.size(), 1);
    for (size_t d = 0; d < xm.shape.size(); ++d) ends.push_back(int(d) == axis ? xm.shape[d] : im.shape[d]);
    x = g.slice(x, starts, ends, steps);
  }
  return g.gather_along_axis(x, idx, axis);
}

V lower_scatter(PlanBuilder& g, const ScatterAdd& sc, V base, V idx, V src, const TensorMeta& bm,
                const TensorMeta& im, const TensorMeta& sm) {
  if (idx < 0) return g.identity(base);
  const int axis = sc.axis;
  const size_t nd = graph_shape(bm.shape).size();
  const Shape bs = graph_shape(bm.shape), is = graph_shape(im.shape);
  idx = wrap_index(g, idx, bs[size_t(axis)]);
  if (graph_shape(sm.shape) != is) {  // only the leading block of src is scattered
    std::vector<int64_t> starts(nd, 0), ends(is.begin(), is.end()), steps(nd, 1);
    src = g.slice(src, starts, ends, steps);
  }
  if (!same_outside_axis(bs, is, axis)) {
    // Pad up to the base's extent with indices past its end: out-of-range
    // updates are skipped.
    std::vector<int64_t> left(nd, 0), right(nd, 0);
    for (size_t d = 0; d < nd; ++d)
      if (int(d) != axis) right[d] = bs[d] - is[d];
    idx = g.pad(idx, left, right, double(bs[size_t(axis)]));
    src = g.pad(src, left, right, 0.0);
  }
  const bool as_int = bm.dtype == DType::Bool;
  const DType ct = as_int ? DType::Int32 : compute_type(bm.dtype);
  V r = g.scatter_along_axis(g.cast(base, ct), g.cast(src, ct), idx, axis,
                             sc.accumulate ? ScatterMode::Add : ScatterMode::Set);
  return as_int ? g.ne(r, g.like(0, r)) : r;
}

V lower_index_add(PlanBuilder& g, int axis, V base, V idx, V src, const TensorMeta& bm, const TensorMeta& im,
                  const TensorMeta& sm) {
  if (idx < 0 || src < 0) return g.identity(base);
  const Shape bs = graph_shape(bm.shape);
  const int rank = int(bs.size());
  idx = wrap_index(g, idx, bs[size_t(axis)]);
  idx = g.broadcast(g.reshape(idx, along_axis(rank, axis, im.numel())), graph_shape(sm.shape));
  const bool as_int = bm.dtype == DType::Bool;
  const DType ct = as_int ? DType::Int32 : compute_type(bm.dtype);
  V r = g.scatter_along_axis(g.cast(base, ct), g.cast(src, ct), idx, axis, ScatterMode::Add);
  return as_int ? g.ne(r, g.like(0, r)) : r;
}

V lower_index_select(PlanBuilder& g, int axis, V x, V idx, const TensorMeta& xm) {
  const Shape xs = graph_shape(xm.shape);
  return g.gather(x, wrap_index(g, idx, xs[size_t(axis)]), axis);
}

// ----------------------------------------------------------------- softmax
V lower_softmax(PlanBuilder& g, const Softmax& sm, V x, const TensorMeta& in) {
  const int axis = in.shape.empty() ? 0 : sm.axis;
  x = g.cast(x, compute_type(in.dtype));
  V m = reduce(g, MpsOp::ReduceMax, x, axis);
  // An all -inf row keeps exp() well-defined, as on the CPU.
  m = g.select(g.eq(m, g.like(-INFINITY, m)), g.like(0, m), m);
  V d = g.sub(x, m);
  V e = g.unary(MpsOp::Exp, d);
  V total = reduce(g, MpsOp::ReduceSum, e, axis);
  if (sm.log) return g.sub(d, g.unary(MpsOp::Log, total));
  return g.mul(e, g.div(g.like(1, total), total));
}

V lower_softmax_backward(PlanBuilder& g, const SoftmaxBackward& sb, V grad, V y, const TensorMeta& ym) {
  const int axis = ym.shape.empty() ? 0 : sb.axis;
  const DType t = compute_type(ym.dtype);
  grad = g.cast(grad, t);
  y = g.cast(y, t);
  if (sb.log) return g.sub(grad, g.mul(g.unary(MpsOp::Exp, y), reduce(g, MpsOp::ReduceSum, grad, axis)));
  return g.mul(y, g.sub(grad, reduce(g, MpsOp::ReduceSum, g.mul(grad, y), axis)));
}

// -------------------------------------------------------------- layer norm
std::vector<int64_t> last_axes(size_t rank, int ndims) {
  std::vector<int64_t> axes;
  for (int d = int(rank) - ndims; d < int(rank); ++d) axes.push_back(d);
  return axes;
}

std::vector<V> lower_layer_norm(PlanBuilder& g, const LayerNorm& op, V x, const TensorMeta& in) {
  const auto axes = last_axes(in.shape.size(), op.ndims);
  x = g.cast(x, compute_type(in.dtype));
  V mean = g.reduce(MpsOp::Mean, x, axes);
  V xc = g.sub(x, mean);
  V var = g.reduce(MpsOp::Mean, g.mul(xc, xc), axes);
  V rstd = g.div(g.like(1, var), g.unary(MpsOp::Sqrt, g.add(var, g.like(op.eps, var))));
  return {g.mul(xc, rstd), mean, rstd};
}

// LayerNormBackward's formula (ops/norm.h).
V lower_layer_norm_backward(PlanBuilder& g, const LayerNormBackward& op, V grad, V x, V mean, V rstd,
                            const TensorMeta& xm) {
  const auto axes = last_axes(xm.shape.size(), op.ndims);
  const DType t = compute_type(xm.dtype);
  grad = g.cast(grad, t);
  x = g.cast(x, t);
  mean = g.cast(mean, t);
  rstd = g.cast(rstd, t);
  V sum_g = g.reduce(MpsOp::ReduceSum, grad, axes);
  V sum_gx = g.reduce(MpsOp::ReduceSum, g.mul(grad, x), axes);
  int64_t n = 1;
  for (int64_t a : axes) n *= xm.shape[size_t(a)];
  V scale = g.like(1.0 / double(std::max<int64_t>(n, 1)), rstd);
  V coef_x = g.mul(g.sub(g.mul(sum_g, mean), sum_gx), g.mul(g.mul(g.mul(rstd, rstd), rstd), scale));
  // b * x + c folded to b * (x - mean) - sum(g) * rstd / n.
  return g.sub(g.add(g.mul(rstd, grad), g.mul(coef_x, g.sub(x, mean))), g.mul(g.mul(sum_g, rstd), scale));
}

// ----------------------------------------------------------- im2col/col2im
// Flat positions, in the padded image, of every (tap, output position): the
// gather table of Im2Col and the scatter table of Col2Im.
std::vector<int32_t> window_positions(const Window2d& w, int64_t h, int64_t wd) {
  const int64_t wp = wd + w.pad_left + w.pad_right;
  const int64_t oh = w.out_h(h), ow = w.out_w(wd);
  std::vector<int32_t> pos;
  pos.reserve(size_t(w.kh * w.kw * oh * ow));
  for (int64_t i = 0; i < w.kh; ++i)
    for (int64_t j = 0; j < w.kw; ++j)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) pos.push_back(int32_t((y * w.sh + i * w.dh) * wp + x * w.sw + j * w.dw));
  return pos;
}

double clamp_pad(double v, DType dt) {
  if (is_floating(dt)) return v;
  if (dt == DType::Bool) return v > 0 ? 1 : 0;
  if (std::isnan(v)) return 0;
  const double lo = dt == DType::Int64 ? -9.2233720368547758e18 : double(integral_min(dt));
  const double hi = dt == DType::Int64 ? 9.2233720368547748e18 : double(integral_max(dt));
  return std::min(std::max(v, lo), hi);
}

V lower_im2col(PlanBuilder& g, const Im2Col& op, V x, const TensorMeta& in) {
  const Window2d& w = op.win;
  const int64_t n = in.shape[0], c = in.shape[1], h = in.shape[2], wd = in.shape[3];
  const int64_t hp = h + w.pad_top + w.pad_bottom, wp = wd + w.pad_left + w.pad_right;
  const int64_t l = w.out_h(h) * w.out_w(wd);
  const bool as_int = in.dtype == DType::Bool;
  if (as_int) x = g.cast(x, DType::Int32);
  if (w.pad_top || w.pad_bottom || w.pad_left || w.pad_right)
    x = g.pad(x, {0, 0, w.pad_top, w.pad_left}, {0, 0, w.pad_bottom, w.pad_right}, clamp_pad(op.pad_value, in.dtype));
  const std::vector<int32_t> pos = window_positions(w, h, wd);
  V table = g.data(pos.data(), pos.size() * sizeof(int32_t), Shape{int64_t(pos.size())}, DType::Int32);
  V cols = g.gather(g.reshape(x, Shape{n, c, hp * wp}), table, 2);  // [N, C, kk*L]
  cols = g.transpose(g.reshape(cols, Shape{n, c * w.kh * w.kw, l}), 0, 1);
  return as_int ? g.ne(cols, g.like(0, cols)) : cols;
}

V lower_col2im(PlanBuilder& g, const Col2Im& op, V cols, const TensorMeta& in, const TensorMeta& out) {
  if (cols < 0) return g.full(0, out.dtype, graph_shape(out.shape));
  const Window2d& w = op.win;
  const int64_t n = out.shape[0], c = out.shape[1], h = op.height, wd = op.width;
  const int64_t hp = h + w.pad_top + w.pad_bottom, wp = wd + w.pad_left + w.pad_right;
  const int64_t l = in.shape[2], kk = w.kh * w.kw;
  const DType ct = in.dtype == DType::Bool ? DType::Int32 : compute_type(in.dtype);
  V t = g.reshape(g.transpose(g.cast(cols, ct), 0, 1), Shape{n, c, kk * l});
  const std::vector<int32_t> pos = window_positions(w, h, wd);
  V table = g.data(pos.data(), pos.size() * sizeof(int32_t), Shape{1, 1, int64_t(pos.size())}, DType::Int32);
  table = g.broadcast(table, Shape{n, c, kk * l});
  V acc = g.scatter_along_axis_into(Shape{n, c, hp * wp}, ct, t, table, 2, ScatterMode::Add);
  acc = g.reshape(acc, Shape{n, c, hp, wp});
  acc = g.slice(acc, {0, 0, w.pad_top, w.pad_left}, {n, c, w.pad_top + h, w.pad_left + wd}, {1, 1, 1, 1});
  return in.dtype == DType::Bool ? g.ne(acc, g.like(0, acc)) : acc;
}

// ---------------------------------------------------------- max pooling
PoolWindow pool_window(const Window2d& w) {
  PoolWindow p;
  p.kh = w.kh;
  p.kw = w.kw;
  p.sh = w.sh;
  p.sw = w.sw;
  p.dh = w.dh;
  p.dw = w.dw;
  p.pad_top = w.pad_top;
  p.pad_bottom = w.pad_bottom;
  p.pad_left = w.pad_left;
  p.pad_right = w.pad_right;
  return p;
}

std::vector<V> lower_max_pool(PlanBuilder& g, const MaxPool2d& op, V x, const TensorMeta& in) {
  // 16-bit floats pool in float32: the maximum is exact in either.
  auto [values, indices] = g.max_pool2d_with_indices(g.cast(x, compute_type(in.dtype)), pool_window(op.win));
  return {values, indices};  // lower_primitive casts the indices to int64
}

V lower_max_pool_backward(PlanBuilder& g, const MaxPool2dBackward& op, V grad, V idx, const TensorMeta& gm,
                          const TensorMeta& out) {
  return g.max_pool2d_gradient(g.cast(grad, compute_type(gm.dtype)), g.cast(idx, DType::Int32), out.shape,
                               pool_window(op.win));
}

// ------------------------------------------------------------ convolution
// MPSGraph's convolution and its two gradients, NCHW with OIHW weights and
// the window's per-side padding; 16-bit floats convolve in float32 and round
// once, as on the CPU.
PoolWindow conv_window(const Window2d& w, int64_t groups) {
  PoolWindow p = pool_window(w);
  p.groups = groups;
  return p;
}

V lower_conv2d(PlanBuilder& g, const Conv2d& op, V x, V w, const TensorMeta& xm) {
  const DType ct = compute_type(xm.dtype);
  return g.conv2d(g.cast(x, ct), g.cast(w, ct), conv_window(op.win, op.groups));
}

V lower_conv2d_backward_input(PlanBuilder& g, const Conv2dBackwardInput& op, V dy, V w, const TensorMeta& dym,
                              const TensorMeta& out) {
  const DType ct = compute_type(dym.dtype);
  return g.conv2d_data_gradient(g.cast(dy, ct), g.cast(w, ct), out.shape, conv_window(op.win, op.groups));
}

V lower_conv2d_backward_weight(PlanBuilder& g, const Conv2dBackwardWeight& op, V x, V dy, const TensorMeta& xm,
                               const TensorMeta& out) {
  const DType ct = compute_type(xm.dtype);
  return g.conv2d_weights_gradient(g.cast(dy, ct), g.cast(x, ct), out.shape, conv_window(op.win, op.groups));
}

// Each output is one slice of the input along the axis (Concat in reverse);
// an output with no elements has no value.
std::vector<V> lower_split(PlanBuilder& g, const Split& sp, V x, const TensorMeta& in,
                           const std::vector<TensorMeta>& out) {
  const size_t axis = size_t(sp.axis);
  std::vector<int64_t> starts(in.shape.size(), 0), stops(in.shape.begin(), in.shape.end()), steps(in.shape.size(), 1);
  std::vector<V> parts;
  int64_t at = 0;
  for (const auto& m : out) {
    const int64_t n = m.shape[axis];
    starts[axis] = at;
    stops[axis] = at + n;
    parts.push_back(m.numel() ? g.slice(x, starts, stops, steps) : -1);
    at += n;
  }
  return parts;
}

// Kinds whose output is defined only when every input has elements.
bool needs_all_inputs(OpKind k) {
  switch (k) {
    case OpKind::Reduce: case OpKind::Matmul: case OpKind::Concat: case OpKind::SliceScatter:
    case OpKind::ScatterAdd: case OpKind::IndexAdd: case OpKind::Col2Im: case OpKind::Full:
    case OpKind::Arange: case OpKind::AsStridedScatter:
      return false;
    default:
      return true;
  }
}

std::vector<V> lower(PlanBuilder& g, const Primitive& p, const std::vector<V>& in, const std::vector<TensorMeta>& im,
                     const std::vector<TensorMeta>& om) {
  switch (p.kind()) {
    case OpKind::Unary: return {lower_unary(g, static_cast<const Unary&>(p).op, in[0], im[0].dtype)};
    case OpKind::Binary: return {lower_binary(g, static_cast<const Binary&>(p).op, in[0], in[1], im[0].dtype)};
    case OpKind::Where: return {g.select(to_bool(g, in[0]), in[1], in[2])};
    case OpKind::Cast: return {lower_cast(g, in[0], im[0].dtype, static_cast<const Cast&>(p).to)};
    case OpKind::Copy: return {g.identity(in[0])};
    case OpKind::Full: return {lower_full(g, static_cast<const Full&>(p).value, om[0])};
    case OpKind::Arange: return {lower_arange(g, static_cast<const Arange&>(p), om[0])};
    case OpKind::Reduce: return {lower_reduce(g, static_cast<const Reduce&>(p), in[0], im[0], om[0])};
    case OpKind::ArgReduce: return {lower_arg_reduce(g, static_cast<const ArgReduce&>(p), in[0], im[0])};
    case OpKind::Matmul: return {lower_matmul(g, static_cast<const Matmul&>(p), in[0], in[1], im[0], om[0])};
    case OpKind::Reshape: return {in[0]};
    case OpKind::Permute: {
      const auto& perm = static_cast<const Permute&>(p).perm;
      if (perm.size() < 2) return {in[0]};
      return {g.permute(in[0], std::vector<int64_t>(perm.begin(), perm.end()))};
    }
    case OpKind::Broadcast: return {g.fit(in[0], om[0].shape)};
    case OpKind::Slice: {
      const SliceSpec& s = static_cast<const Slice&>(p).spec;
      if (s.starts.empty()) return {in[0]};
      return {g.slice(in[0], s.starts, s.stops, s.steps)};
    }
    case OpKind::SliceScatter:
      return {lower_slice_scatter(g, static_cast<const SliceScatter&>(p).spec, in[0], in[1], im[0], im[1])};
    case OpKind::Concat: {
      std::vector<V> parts;
      for (V t : in)
        if (t >= 0) parts.push_back(t);
      if (parts.size() == 1) return {parts[0]};
      return {g.concat(parts, static_cast<const Concat&>(p).axis)};
    }
    case OpKind::Gather: return {lower_gather(g, static_cast<const Gather&>(p).axis, in[0], in[1], im[0], im[1])};
    case OpKind::ScatterAdd:
      return {lower_scatter(g, static_cast<const ScatterAdd&>(p), in[0], in[1], in[2], im[0], im[1], im[2])};
    case OpKind::IndexSelect:
      return {lower_index_select(g, static_cast<const IndexSelect&>(p).axis, in[0], in[1], im[0])};
    case OpKind::IndexAdd:
      return {lower_index_add(g, static_cast<const IndexAdd&>(p).axis, in[0], in[1], in[2], im[0], im[1], im[2])};
    case OpKind::Softmax: return {lower_softmax(g, static_cast<const Softmax&>(p), in[0], im[0])};
    case OpKind::SoftmaxBackward:
      return {lower_softmax_backward(g, static_cast<const SoftmaxBackward&>(p), in[0], in[1], im[1])};
    case OpKind::LayerNorm: return lower_layer_norm(g, static_cast<const LayerNorm&>(p), in[0], im[0]);
    case OpKind::LayerNormBackward:
      return {lower_layer_norm_backward(g, static_cast<const LayerNormBackward&>(p), in[0], in[1], in[2], in[3],
                                        im[1])};
    case OpKind::Im2Col: return {lower_im2col(g, static_cast<const Im2Col&>(p), in[0], im[0])};
    case OpKind::Col2Im: return {lower_col2im(g, static_cast<const Col2Im&>(p), in[0], im[0], om[0])};
    case OpKind::MaxPool2d: return lower_max_pool(g, static_cast<const MaxPool2d&>(p), in[0], im[0]);
    case OpKind::MaxPool2dBackward:
      return {lower_max_pool_backward(g, static_cast<const MaxPool2dBackward&>(p), in[0], in[1], im[0], om[0])};
    case OpKind::Conv2d: return {lower_conv2d(g, static_cast<const Conv2d&>(p), in[0], in[1], im[0])};
    case OpKind::Conv2dBackwardInput:
      return {lower_conv2d_backward_input(g, static_cast<const Conv2dBackwardInput&>(p), in[0], in[1], im[0], om[0])};
    case OpKind::Conv2dBackwardWeight:
      return {lower_conv2d_backward_weight(g, static_cast<const Conv2dBackwardWeight&>(p), in[0], in[1], im[0], om[0])};
    case OpKind::AsStrided: case OpKind::StridedView: return {lower_view_read(g, p, in[0], im[0], om[0])};
    case OpKind::AsStridedScatter:
      return {lower_as_strided_scatter(g, static_cast<const AsStridedScatter&>(p), in[0], in[1], im[0], im[1])};
    case OpKind::Split: return lower_split(g, static_cast<const Split&>(p), in[0], im[0], om);
    case OpKind::Random: case OpKind::EngineUpdate: case OpKind::ViewScatter: case OpKind::ViewOfBase:
    case OpKind::ArgSort: case OpKind::TopK: case OpKind::NonZero: case OpKind::Scan: case OpKind::ScatterReduce:
    case OpKind::RecurrentCell: case OpKind::RecurrentCellBackward: case OpKind::DeviceCopy: case OpKind::Count:
    case OpKind::LuFactor: case OpKind::LuSolve: case OpKind::Inverse: case OpKind::LinearSolve:
    case OpKind::Slogdet: case OpKind::Det: case OpKind::Cholesky: case OpKind::TriangularSolve: case OpKind::Qr: case OpKind::Eigh:
    case OpKind::Svd: case OpKind::RandomParametric: case OpKind::ReparamGrad:
      break;
  }
  fail<NotImplementedError>("the operator '", p.name(), "' is not implemented for the metal device");
}

}  // namespace

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Unary: return "Unary";
    case OpKind::Binary: return "Binary";
    case OpKind::Where: return "Where";
    case OpKind::Cast: return "Cast";
    case OpKind::Copy: return "Copy";
    case OpKind::Full: return "Full";
    case OpKind::Arange: return "Arange";
    case OpKind::Random: return "Random";
    case OpKind::Reduce: return "Reduce";
    case OpKind::ArgReduce: return "ArgReduce";
    case OpKind::Matmul: return "Matmul";
    case OpKind::Reshape: return "Reshape";
    case OpKind::Permute: return "Permute";
    case OpKind::Broadcast: return "Broadcast";
    case OpKind::Slice: return "Slice";
    case OpKind::SliceScatter: return "SliceScatter";
    case OpKind::Concat: return "Concat";
    case OpKind::Gather: return "Gather";
    case OpKind::ScatterAdd: return "ScatterAdd";
    case OpKind::ScatterReduce: return "ScatterReduce";
    case OpKind::IndexSelect: return "IndexSelect";
    case OpKind::IndexAdd: return "IndexAdd";
    case OpKind::Softmax: return "Softmax";
    case OpKind::Im2Col: return "Im2Col";
    case OpKind::Col2Im: return "Col2Im";
    case OpKind::EngineUpdate: return "EngineUpdate";
    case OpKind::MaxPool2d: return "MaxPool2d";
    case OpKind::MaxPool2dBackward: return "MaxPool2dBackward";
    case OpKind::LayerNorm: return "LayerNorm";
    case OpKind::LayerNormBackward: return "LayerNormBackward";
    case OpKind::SoftmaxBackward: return "SoftmaxBackward";
    case OpKind::AsStrided: return "AsStrided";
    case OpKind::AsStridedScatter: return "AsStridedScatter";
    case OpKind::ViewScatter: return "ViewScatter";
    case OpKind::ViewOfBase: return "ViewOfBase";
    case OpKind::StridedView: return "StridedView";
    case OpKind::ArgSort: return "ArgSort";
    case OpKind::TopK: return "TopK";
    case OpKind::NonZero: return "NonZero";
    case OpKind::Scan: return "Scan";
    case OpKind::RecurrentCell: return "RecurrentCell";
    case OpKind::RecurrentCellBackward: return "RecurrentCellBackward";
    case OpKind::Conv2d: return "Conv2d";
    case OpKind::Conv2dBackwardInput: return "Conv2dBackwardInput";
    case OpKind::Conv2dBackwardWeight: return "Conv2dBackwardWeight";
    case OpKind::Split: return "Split";
    case OpKind::DeviceCopy: return "DeviceCopy";
    case OpKind::LuFactor: return "LuFactor";
    case OpKind::LuSolve: return "LuSolve";
    case OpKind::Inverse: return "Inverse";
    case OpKind::LinearSolve: return "LinearSolve";
    case OpKind::Slogdet: return "Slogdet";
    case OpKind::Det: return "Det";
    case OpKind::Cholesky: return "Cholesky";
    case OpKind::TriangularSolve: return "TriangularSolve";
    case OpKind::Qr: return "Qr";
    case OpKind::Eigh: return "Eigh";
    case OpKind::Svd: return "Svd";
    case OpKind::RandomParametric: return "RandomParametric";
    case OpKind::ReparamGrad: return "ReparamGrad";
    case OpKind::Count: break;
  }
  return "?";
}

Lowering lowering_of(OpKind kind) {
  switch (kind) {
    case OpKind::Unary: case OpKind::Binary: case OpKind::Where: case OpKind::Cast: case OpKind::Reduce:
    case OpKind::ArgReduce: case OpKind::Matmul: case OpKind::Reshape: case OpKind::Permute: case OpKind::Broadcast:
    case OpKind::Slice: case OpKind::SliceScatter: case OpKind::Concat: case OpKind::Gather: case OpKind::ScatterAdd:
    case OpKind::IndexSelect: case OpKind::IndexAdd: case OpKind::Softmax: case OpKind::SoftmaxBackward:
    case OpKind::Im2Col: case OpKind::Col2Im: case OpKind::MaxPool2d: case OpKind::MaxPool2dBackward:
    case OpKind::LayerNorm: case OpKind::LayerNormBackward: case OpKind::AsStrided: case OpKind::AsStridedScatter:
    case OpKind::StridedView: case OpKind::Split: case OpKind::Conv2d: case OpKind::Conv2dBackwardInput:
    case OpKind::Conv2dBackwardWeight:
      return Lowering::Graph;
    case OpKind::Full: case OpKind::Arange: case OpKind::Random:
      return Lowering::HostFill;
    case OpKind::Copy:
      return Lowering::Blit;
    // The optimizers' fused update: a step traced on the metal device records
    // the rule's ops instead, and one traced on the CPU is decomposed into
    // them before it is planned (decompose_unlowered).
    case OpKind::EngineUpdate: case OpKind::Count:
    // Autograd's records of writes through views and of device copies: never run.
    case OpKind::ViewScatter: case OpKind::ViewOfBase: case OpKind::DeviceCopy:
    // Sorting: the CPU kernels sort stably with NaN above every number
    // (PyTorch's order); MPSGraph's argSort/topK promise neither.
    case OpKind::ArgSort: case OpKind::TopK:
    // The output shape is the count of non-zeros, known only after the input
    // is read; a graph has static shapes.
    case OpKind::NonZero:
    // Not lowered yet: MPSGraph's cumulativeSum/Product fit, but need a plan
    // operation with its reference interpretation (interpreter.cpp) first.
    case OpKind::Scan:
    // Not lowered yet: MPSGraph's scatter has sum/product/max/min modes, but
    // the exclude-self and mean forms need a plan operation of their own.
    case OpKind::ScatterReduce:
    // No Metal form yet (NotImplementedError naming the operator): the fused
    // recurrent cell and its backward would be a dozen graph operations each
    // (slices, sigmoid/tanh, products) with no case of the reference
    // interpreter checking them (docs/metal.md, "The op table").
    case OpKind::RecurrentCell: case OpKind::RecurrentCellBackward:
    // Decompositions and solvers: MPSGraph has none of LAPACK's (it has no
    // 64-bit floats either); NotImplementedError naming the operator.
    case OpKind::LuFactor: case OpKind::LuSolve: case OpKind::Inverse: case OpKind::LinearSolve:
    case OpKind::Slogdet: case OpKind::Det: case OpKind::Cholesky: case OpKind::TriangularSolve: case OpKind::Qr: case OpKind::Eigh:
    case OpKind::Svd:
    // Rejection samplers (a loop per element) and the series behind their
    // gradients: NotImplementedError naming the operator.
    case OpKind::RandomParametric: case OpKind::ReparamGrad:
      return Lowering::None;
  }
  return Lowering::None;
}

void check_dtype(DType t, const char* what) {
  if (t == DType::Float64)
    fail<TypeError>(what, ": float64 is not supported on the metal device (MPSGraph has no 64-bit float type); "
                    "convert with .float() first");
}

std::vector<int> lower_primitive(PlanBuilder& g, const Primitive& prim, const std::vector<int>& inputs,
                                 const std::vector<TensorMeta>& in_metas, const std::vector<TensorMeta>& out_metas) {
  const std::string name = prim.name();
  for (const auto& m : in_metas) check_dtype(m.dtype, name.c_str());
  for (const auto& m : out_metas) check_dtype(m.dtype, name.c_str());
  if (prim.kind() == OpKind::Random)
    fail<NotImplementedError>("'", name, "' is drawn on the host on the metal device, not in a graph");
  std::vector<V> out(out_metas.size(), -1);
  bool any_output = false;
  for (const auto& m : out_metas) any_output |= m.numel() > 0;
  if (!any_output) return out;
  bool missing = false;
  for (V t : inputs) missing |= t < 0;
  if (missing && needs_all_inputs(prim.kind())) {
    // Only reachable through an invalid program (the CPU kernel would have
    // raised); zeros keep the graph well-formed.
    for (size_t k = 0; k < out_metas.size(); ++k)
      if (out_metas[k].numel()) out[k] = g.full(0, out_metas[k].dtype, graph_shape(out_metas[k].shape));
    return out;
  }
  out = lower(g, prim, inputs, in_metas, out_metas);
  // Every result leaves in exactly its output's dtype and shape.
  for (size_t k = 0; k < out.size(); ++k) {
    const TensorMeta& m = out_metas[k];
    out[k] = m.numel() == 0 ? -1 : g.fit(g.cast(out[k], m.dtype), m.shape);
  }
  return out;
}

std::string EagerPlan::key() const {
  std::string k = plan.key();
  for (int i : input_of_placeholder) k.append(reinterpret_cast<const char*>(&i), sizeof i);
  k += '|';
  for (int o : output_of_target) k.append(reinterpret_cast<const char*>(&o), sizeof o);
  return k;
}

EagerPlan plan_eager(const Primitive& prim, const std::vector<TensorMeta>& in_metas,
                     const std::vector<TensorMeta>& out_metas) {
  EagerPlan ep;
  PlanBuilder g(ep.plan);
  const std::string name = prim.name();
  for (const auto& m : in_metas) check_dtype(m.dtype, name.c_str());
  std::vector<int> args;
  for (size_t i = 0; i < in_metas.size(); ++i) {
    if (in_metas[i].numel() == 0) {
      args.push_back(-1);
      continue;
    }
    args.push_back(g.placeholder(in_metas[i].dtype, in_metas[i].shape));
    ep.input_of_placeholder.push_back(int(i));
  }
  std::vector<int> results = lower_primitive(g, prim, args, in_metas, out_metas);
  for (size_t k = 0; k < results.size(); ++k) {
    if (results[k] < 0) continue;
    g.target(results[k]);
    ep.output_of_target.push_back(int(k));
  }
  return ep;
}

void write_value(void* dst, DType dtype, double v) {
  switch (dtype) {
    case DType::Bool: *static_cast<bool*>(dst) = v != 0; break;
    case DType::UInt8: *static_cast<uint8_t*>(dst) = uint8_t(int64_t(v)); break;
    case DType::Int8: *static_cast<int8_t*>(dst) = int8_t(int64_t(v)); break;
    case DType::Int16: *static_cast<int16_t*>(dst) = int16_t(int64_t(v)); break;
    case DType::Int32: *static_cast<int32_t*>(dst) = int32_t(v); break;
    case DType::Int64: *static_cast<int64_t*>(dst) = int64_t(v); break;
    case DType::Float16: {
      const uint16_t bits = float_to_half(float(v));
      std::memcpy(dst, &bits, 2);
      break;
    }
    case DType::BFloat16: {
      const uint16_t bits = float_to_bf16(float(v));
      std::memcpy(dst, &bits, 2);
      break;
    }
    case DType::Float32: *static_cast<float*>(dst) = float(v); break;
    case DType::Float64: *static_cast<double*>(dst) = v; break;
  }
}

void fill_random(void* dst, DType dtype, Distribution dist, uint64_t seed, uint64_t offset, int64_t n) {
  const size_t es = itemsize(dtype);
  char* out = static_cast<char*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const float v = dist == Distribution::Uniform ? philox::uniform_at(seed, offset, uint64_t(i))
                                                  : philox::normal_at(seed, offset, uint64_t(i));
    write_value(out + size_t(i) * es, dtype, double(v));
  }
}

void fill_host(const Primitive& p, const std::vector<ConstArg>& inputs, void* dst, const TensorMeta& m) {
  check_dtype(m.dtype, p.name().c_str());
  const size_t es = itemsize(m.dtype);
  char* out = static_cast<char*>(dst);
  const size_t total = size_t(m.numel()) * es;
  switch (p.kind()) {
    case OpKind::Full: {
      if (total == 0) return;
      write_value(out, m.dtype, static_cast<const Full&>(p).value);
      for (size_t filled = es; filled < total; filled *= 2)  // doubling copies of the filled prefix
        std::memcpy(out + filled, out, std::min(filled, total - filled));
      return;
    }
    case OpKind::Arange: {
      const auto& a = static_cast<const Arange&>(p);
      for (int64_t i = 0; i < m.numel(); ++i) write_value(out + size_t(i) * es, m.dtype, a.start + double(i) * a.step);
      return;
    }
    case OpKind::Random: {
      const auto& r = static_cast<const Random&>(p);
      const int64_t* key = static_cast<const int64_t*>(inputs[0].data);
      fill_random(dst, m.dtype, r.dist, uint64_t(key[0]), uint64_t(key[1]), m.numel());
      return;
    }
    default: fail<Error>("metal: '", p.name(), "' is not written by the host");
  }
}

void check_indices(const Primitive& p, const std::vector<ConstArg>& in) {
  int axis = 0;
  switch (p.kind()) {
    case OpKind::Gather: axis = static_cast<const Gather&>(p).axis; break;
    case OpKind::ScatterAdd: axis = static_cast<const ScatterAdd&>(p).axis; break;
    case OpKind::IndexSelect: axis = static_cast<const IndexSelect&>(p).axis; break;
    case OpKind::IndexAdd: axis = static_cast<const IndexAdd&>(p).axis; break;
    default: return;
  }
  const ConstArg* index = &in[1];
  const TensorMeta* target = in[0].meta;
  if (target->shape.empty()) return;
  const int64_t size = target->shape[size_t(axis)];
  const int64_t n = index->meta->numel();
  const bool i32 = index->meta->dtype == DType::Int32;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = i32 ? static_cast<const int32_t*>(index->data)[i] : static_cast<const int64_t*>(index->data)[i];
    if (v < 0 || v >= size)
      fail<IndexError>(p.name(), "(): index ", v, " is out of bounds for dimension ", axis, " with size ", size);
  }
}

void check_divisors(const Primitive& p, const std::vector<ConstArg>& in) {
  if (p.kind() != OpKind::Binary) return;
  const BinaryOp op = static_cast<const Binary&>(p).op;
  if (op != BinaryOp::Div && op != BinaryOp::FloorDiv && op != BinaryOp::Remainder) return;
  const TensorMeta& divisor = *in[1].meta;
  // Integer Div is the truncating division (true division casts to float first).
  if (is_floating(divisor.dtype) || in[0].meta->numel() == 0) return;
  const int64_t n = divisor.numel();
  const auto* bytes = static_cast<const uint8_t*>(in[1].data);
  const size_t width = size_t(itemsize(divisor.dtype));
  for (int64_t i = 0; i < n; ++i)
    if (std::all_of(bytes + size_t(i) * width, bytes + size_t(i + 1) * width, [](uint8_t b) { return b == 0; }))
      integer_division_by_zero(op);
}

int read_strided(PlanBuilder& g, int storage, const Shape& sizes, const std::vector<int64_t>& strides,
                 int64_t offset) {
  const int64_t n = numel(sizes);
  const int64_t avail = numel(g.shape(storage));
  LUCID_CHECK_T(Error, g.shape(storage).size() == 1, "metal: a strided operand is read from a flat buffer");
  LUCID_CHECK_T(Error, strides.size() == sizes.size() && n > 0 && offset >= 0, "metal: invalid strided operand");
  // Contiguous apart from extent-1 dims: a block of the buffer.
  bool contiguous = true;
  int64_t expect = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    contiguous &= strides[d] == expect;
    expect *= sizes[d];
  }
  if (contiguous) {
    LUCID_CHECK_T(Error, offset + n <= avail, "metal: strided operand past the end of its buffer");
    int v = offset == 0 && n == avail ? storage : g.slice(storage, {offset}, {offset + n}, {1});
    return g.reshape(v, sizes);
  }
  // Otherwise every element's position, gathered (expanded dims included).
  std::vector<int64_t> pos(static_cast<size_t>(n));
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t hi = 0;
  for (int64_t p = 0; p < n; ++p) {
    int64_t off = offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    LUCID_CHECK_T(Error, off >= 0 && off < avail, "metal: strided operand outside its buffer");
    pos[size_t(p)] = off;
    hi = std::max(hi, off);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  int table;
  if (hi <= std::numeric_limits<int32_t>::max()) {
    std::vector<int32_t> p32(pos.begin(), pos.end());
    table = g.data(p32.data(), p32.size() * sizeof(int32_t), Shape{n}, DType::Int32);
  } else {
    table = g.data(pos.data(), pos.size() * sizeof(int64_t), Shape{n}, DType::Int64);
  }
  return g.reshape(g.gather(storage, table, 0), sizes);
}

}  // namespace lucid::metal
