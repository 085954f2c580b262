// Every primitive as MPSGraph operations, in one place: eager single-op
// graphs and compiled steps both build from emit_primitive(). The formulas
// follow the CPU kernels (backend/cpu/math.h) where those define the result
// beyond IEEE basics: NaN propagation, Python's floor division and modulo,
// pow of negative bases, first-occurrence argmax, and 16-bit floats computed
// in float32 and rounded once.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "lucid/backend/metal/context.h"
#include "lucid/backend/metal/mps_ops.h"
#include "lucid/core/philox.h"
#include "lucid/ops/norm.h"
#include "lucid/ops/primitives.h"

#if __has_include("lucid/ops/conv.h")
#include "lucid/ops/conv.h"
#define LUCID_METAL_HAS_CONV 1
#endif

namespace lucid::metal {

namespace {

using T = MPSGraphTensor*;

// Elements of a static shape; -1 when the shape is unknown or dynamic.
int64_t numel_of(MPSShape* s) {
  if (s == nil) return -1;
  int64_t n = 1;
  for (NSNumber* d in s) {
    if (d.longLongValue < 0) return -1;
    n *= d.longLongValue;
  }
  return n;
}

NSArray<NSNumber*>* numbers(const std::vector<int64_t>& v) {
  NSMutableArray<NSNumber*>* a = [NSMutableArray arrayWithCapacity:v.size()];
  for (int64_t x : v) [a addObject:@((long long)x)];
  return a;
}

NSArray<NSNumber*>* numbers(const std::vector<int>& v) {
  NSMutableArray<NSNumber*>* a = [NSMutableArray arrayWithCapacity:v.size()];
  for (int x : v) [a addObject:@(x)];
  return a;
}

// Arithmetic of 16-bit floats happens in float32, as on the CPU.
MPSDataType compute_type(DType t) { return is_half(t) ? MPSDataTypeFloat32 : mps_dtype(t); }

// Thin wrappers over MPSGraph so that the op table below reads like math.
class G {
 public:
  explicit G(MPSGraph* g) : g_(g) {}
  MPSGraph* graph() const { return g_; }

  T scalar(double v, MPSDataType t) { return [g_ constantWithScalar:v shape:@[ @1 ] dataType:t]; }
  T like(double v, T x) { return scalar(v, x.dataType); }
  T full(double v, const TensorMeta& m) {
    return [g_ constantWithScalar:v shape:mps_shape(m.shape) dataType:mps_dtype(m.dtype)];
  }
  T data(const void* bytes, size_t nbytes, MPSShape* shape, MPSDataType t) {
    return [g_ constantWithData:[NSData dataWithBytes:bytes length:nbytes] shape:shape dataType:t];
  }
  T cast(T x, MPSDataType t) { return x.dataType == t ? x : [g_ castTensor:x toType:t name:nil]; }
  T identity(T x) { return [g_ identityWithTensor:x name:nil]; }

  T add(T a, T b) { return [g_ additionWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T sub(T a, T b) { return [g_ subtractionWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T mul(T a, T b) { return [g_ multiplicationWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T div(T a, T b) { return [g_ divisionWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T mod(T a, T b) { return [g_ moduloWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T floor_mod(T a, T b) { return [g_ floorModuloWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T pow(T a, T b) { return [g_ powerWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T max_nan(T a, T b) { return [g_ maximumWithNaNPropagationWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T min_nan(T a, T b) { return [g_ minimumWithNaNPropagationWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T max(T a, T b) { return [g_ maximumWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T min(T a, T b) { return [g_ minimumWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T atan2(T a, T b) { return [g_ atan2WithPrimaryTensor:a secondaryTensor:b name:nil]; }

  T eq(T a, T b) { return [g_ equalWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T ne(T a, T b) { return [g_ notEqualWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T lt(T a, T b) { return [g_ lessThanWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T le(T a, T b) { return [g_ lessThanOrEqualToWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T gt(T a, T b) { return [g_ greaterThanWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T ge(T a, T b) { return [g_ greaterThanOrEqualToWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T land(T a, T b) { return [g_ logicalANDWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T lor(T a, T b) { return [g_ logicalORWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T lxor(T a, T b) { return [g_ logicalXORWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T lnot(T a) { return [g_ notWithTensor:a name:nil]; }
  T select(T c, T a, T b) {
    return [g_ selectWithPredicateTensor:c truePredicateTensor:a falsePredicateTensor:b name:nil];
  }

  T neg(T x) { return [g_ negativeWithTensor:x name:nil]; }
  T abs(T x) { return [g_ absoluteWithTensor:x name:nil]; }
  T exp(T x) { return [g_ exponentWithTensor:x name:nil]; }
  T log(T x) { return [g_ logarithmWithTensor:x name:nil]; }
  T sqrt(T x) { return [g_ squareRootWithTensor:x name:nil]; }
  T sin(T x) { return [g_ sinWithTensor:x name:nil]; }
  T cos(T x) { return [g_ cosWithTensor:x name:nil]; }
  T tanh(T x) { return [g_ tanhWithTensor:x name:nil]; }
  T erf(T x) { return [g_ erfWithTensor:x name:nil]; }
  T floor(T x) { return [g_ floorWithTensor:x name:nil]; }
  T ceil(T x) { return [g_ ceilWithTensor:x name:nil]; }
  T rint(T x) { return [g_ rintWithTensor:x name:nil]; }
  T trunc(T x) { return [g_ truncateWithTensor:x name:nil]; }
  T isnan(T x) { return [g_ isNaNWithTensor:x name:nil]; }
  T isinf(T x) { return [g_ isInfiniteWithTensor:x name:nil]; }
  T isfinite(T x) { return [g_ isFiniteWithTensor:x name:nil]; }
  T signbit(T x) { return [g_ signbitWithTensor:x name:nil]; }
  T shr(T a, T b) { return [g_ bitwiseRightShiftWithPrimaryTensor:a secondaryTensor:b name:nil]; }
  T band(T a, T b) { return [g_ bitwiseANDWithPrimaryTensor:a secondaryTensor:b name:nil]; }

  T reshape(T x, MPSShape* s) { return [g_ reshapeTensor:x withShape:s name:nil]; }
  T reshape(T x, const Shape& s) { return reshape(x, mps_shape(s)); }
  T broadcast(T x, const Shape& s) { return [g_ broadcastTensor:x toShape:mps_shape(s) name:nil]; }
  T transpose(T x, NSUInteger a, NSUInteger b) { return [g_ transposeTensor:x dimension:a withDimension:b name:nil]; }
  T slice(T x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
          const std::vector<int64_t>& steps) {
    return [g_ sliceTensor:x starts:numbers(starts) ends:numbers(ends) strides:numbers(steps) name:nil];
  }
  T pad_right(T x, const std::vector<int64_t>& right, double value) {
    std::vector<int64_t> left(right.size(), 0);
    return [g_ padTensor:x
         withPaddingMode:MPSGraphPaddingModeConstant
             leftPadding:numbers(left)
            rightPadding:numbers(right)
           constantValue:value
                    name:nil];
  }

  // `x` in exactly `shape` (0-d as [1]): reshaped when only the layout of
  // dimensions differs (keepdim=false, 0-d), broadcast otherwise.
  T fit(T x, const Shape& shape) {
    MPSShape* want = mps_shape(shape);
    if (x.shape != nil && [x.shape isEqualToArray:want]) return x;
    const int64_t n = numel_of(x.shape);
    if (n < 0 || n == numel(shape)) return reshape(x, want);
    return [g_ broadcastTensor:x toShape:want name:nil];
  }

 private:
  MPSGraph* g_;
};

// Negative indices count from the end, as in PyTorch.
T wrap_index(G& g, T idx, int64_t size) {
  return g.select(g.lt(idx, g.like(0, idx)), g.add(idx, g.like(double(size), idx)), idx);
}

// Shape of the host-side index table of a rank-`rank` tensor broadcast along `axis`.
Shape along_axis(int rank, int axis, int64_t n) {
  Shape s(size_t(rank), 1);
  s[size_t(axis)] = n;
  return s;
}

// ------------------------------------------------------------------ Unary
T emit_unary(G& g, UnaryOp op, T x, DType dt) {
  switch (op) {
    case UnaryOp::LogicalNot: return g.lnot(g.cast(x, MPSDataTypeBool));
    case UnaryOp::IsFinite: return g.isfinite(x);
    case UnaryOp::IsNan: return g.isnan(x);
    case UnaryOp::IsInf: return g.isinf(x);
    default: break;
  }
  if (!is_floating(dt)) {
    switch (op) {
      case UnaryOp::Neg: return g.neg(x);
      case UnaryOp::Abs: return g.abs(x);
      case UnaryOp::Sign: return g.select(g.gt(x, g.like(0, x)), g.like(1, x),
                                          g.select(g.lt(x, g.like(0, x)), g.like(-1, x), g.like(0, x)));
      case UnaryOp::Square: return g.mul(x, x);
      case UnaryOp::Relu: return g.select(g.gt(x, g.like(0, x)), x, g.like(0, x));
      default: fail<TypeError>(unary_op_name(op), ": not implemented for ", dtype_name(dt));
    }
  }
  x = g.cast(x, compute_type(dt));
  auto c = [&](double v) { return g.like(v, x); };
  switch (op) {
    case UnaryOp::Neg: return g.neg(x);
    case UnaryOp::Abs: return g.abs(x);
    case UnaryOp::Sign:  // +-1, 0 for +-0 (as +0), NaN for NaN
      return g.select(g.gt(x, c(0)), c(1), g.select(g.lt(x, c(0)), c(-1), g.select(g.isnan(x), x, c(0))));
    case UnaryOp::Exp: return g.exp(x);
    case UnaryOp::Log: return g.log(x);
    case UnaryOp::Log1p: {
      // Kahan: log(u) * x / (u - 1) with u = 1 + x stays accurate for tiny x.
      T u = g.add(c(1), x), d = g.sub(u, c(1));
      T r = g.select(g.eq(d, c(0)), x, g.mul(g.log(u), g.div(x, d)));
      return g.select(g.isinf(x), g.log(u), r);
    }
    case UnaryOp::Expm1: {
      // Kahan: (u - 1) * x / log(u) with u = exp(x).
      T u = g.exp(x), um1 = g.sub(u, c(1));
      T r = g.select(g.eq(u, c(1)), x,
                     g.select(g.eq(um1, c(-1)), c(-1), g.div(g.mul(um1, x), g.log(u))));
      return g.select(g.isinf(u), u, r);
    }
    case UnaryOp::Sqrt: return g.sqrt(x);
    case UnaryOp::Rsqrt: return g.div(c(1), g.sqrt(x));
    case UnaryOp::Square: return g.mul(x, x);
    case UnaryOp::Reciprocal: return g.div(c(1), x);
    case UnaryOp::Sin: return g.sin(x);
    case UnaryOp::Cos: return g.cos(x);
    case UnaryOp::Tanh: return g.tanh(x);
    case UnaryOp::Sigmoid: return g.div(c(1), g.add(c(1), g.exp(g.neg(x))));
    case UnaryOp::Relu: return g.select(g.gt(x, c(0)), x, g.select(g.isnan(x), x, c(0)));
    case UnaryOp::GeluErf: return g.mul(g.mul(c(0.5), x), g.add(c(1), g.erf(g.mul(x, c(M_SQRT1_2)))));
    case UnaryOp::GeluTanh: {
      T inner = g.mul(c(M_SQRT2 * M_2_SQRTPI * 0.5), g.add(x, g.mul(g.mul(g.mul(c(0.044715), x), x), x)));
      return g.mul(g.mul(c(0.5), x), g.add(c(1), g.tanh(inner)));
    }
    case UnaryOp::Silu: return g.div(x, g.add(c(1), g.exp(g.neg(x))));
    case UnaryOp::Erf: return g.erf(x);
    case UnaryOp::Floor: return g.floor(x);
    case UnaryOp::Ceil: return g.ceil(x);
    case UnaryOp::Round: return g.rint(x);  // half to even, like nearbyint
    case UnaryOp::Trunc: return g.trunc(x);
    default: break;
  }
  fail<NotImplementedError>("the operator '", unary_op_name(op), "' is not implemented for the metal device");
}

// ----------------------------------------------------------------- Binary
// Integer power by squaring (x^e with e < 0 as the CPU defines it).
T int_pow(G& g, T base, T e, DType dt) {
  const int bits = dt == DType::Int32 ? 31 : 63;
  T one = g.like(1, base), zero = g.like(0, base);
  T r = one, b = base, k = e;
  for (int i = 0; i < bits; ++i) {
    T bit = g.ne(g.band(k, g.like(1, k)), g.like(0, k));
    r = g.select(bit, g.mul(r, b), r);
    b = g.mul(b, b);
    k = g.shr(k, g.like(1, k));
  }
  T odd = g.ne(g.band(e, g.like(1, e)), g.like(0, e));
  T negative = g.select(g.eq(base, one), one,
                        g.select(g.eq(base, g.like(-1, base)), g.select(odd, g.like(-1, base), one), zero));
  return g.select(g.lt(e, g.like(0, e)), negative, r);
}

// std::pow for floats: |a|^b with the sign of odd integer powers of negative
// bases, NaN for non-integer powers of finite ones, and pow(x, 0) =
// pow(1, y) = pow(-1, +-inf) = 1.
T float_pow(G& g, T a, T b) {
  auto c = [&](double v) { return g.like(v, a); };
  T r = g.pow(g.abs(a), b);
  T is_int = g.eq(g.floor(b), b);
  T half = g.mul(b, c(0.5));
  T is_odd = g.land(is_int, g.ne(g.floor(half), half));
  T negative = g.lt(a, c(0));
  r = g.select(g.land(g.signbit(a), is_odd), g.neg(r), r);  // -0.0 too: pow(-0, -3) = -inf
  r = g.select(g.land(g.land(negative, g.lnot(is_int)), g.isfinite(a)), c(NAN), r);
  r = g.select(g.land(g.eq(a, c(-1)), g.isinf(b)), c(1), r);
  r = g.select(g.eq(b, c(0)), c(1), r);
  return g.select(g.eq(a, c(1)), c(1), r);
}

// Python's floor division of floats, as the CPU's floor_div. The fix-ups
// hold whether MPSGraph's modulo follows fmod (the sign of a) or floor-mod
// (the sign of b).
T float_floor_div(G& g, T a, T b) {
  auto c = [&](double v) { return g.like(v, a); };
  T m = g.mod(a, b);
  T q = g.div(g.sub(a, m), b);
  T adjust = g.land(g.ne(m, c(0)), g.lxor(g.lt(b, c(0)), g.lt(m, c(0))));
  q = g.select(adjust, g.sub(q, c(1)), q);
  T fl = g.floor(q);
  fl = g.select(g.gt(g.sub(q, fl), c(0.5)), g.add(fl, c(1)), fl);
  T quotient = g.div(a, b);
  T zero = g.select(g.signbit(quotient), c(-0.0), c(0.0));
  return g.select(g.eq(b, c(0)), quotient, g.select(g.eq(q, c(0)), zero, fl));
}

// Python's modulo of floats (the sign of the divisor).
T float_py_mod(G& g, T a, T b) {
  auto c = [&](double v) { return g.like(v, a); };
  T r = g.mod(a, b);
  T fix = g.land(g.ne(r, c(0)), g.lxor(g.lt(r, c(0)), g.lt(b, c(0))));
  return g.select(fix, g.add(r, b), r);
}

T emit_binary(G& g, BinaryOp op, T a, T b, DType dt) {
  switch (op) {
    case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt:
    case BinaryOp::Ge: {
      if (dt == DType::Bool) {
        a = g.cast(a, MPSDataTypeInt32);
        b = g.cast(b, MPSDataTypeInt32);
      }
      switch (op) {
        case BinaryOp::Eq: return g.eq(a, b);
        case BinaryOp::Ne: return g.ne(a, b);
        case BinaryOp::Lt: return g.lt(a, b);
        case BinaryOp::Le: return g.le(a, b);
        case BinaryOp::Gt: return g.gt(a, b);
        default: return g.ge(a, b);
      }
    }
    case BinaryOp::LogicalAnd: return g.land(g.cast(a, MPSDataTypeBool), g.cast(b, MPSDataTypeBool));
    case BinaryOp::LogicalOr: return g.lor(g.cast(a, MPSDataTypeBool), g.cast(b, MPSDataTypeBool));
    case BinaryOp::LogicalXor: return g.lxor(g.cast(a, MPSDataTypeBool), g.cast(b, MPSDataTypeBool));
    default: break;
  }
  if (dt == DType::Bool) {  // the op layer sends only these for bool
    switch (op) {
      case BinaryOp::Add: case BinaryOp::Maximum: return g.lor(a, b);
      case BinaryOp::Mul: case BinaryOp::Minimum: return g.land(a, b);
      default: fail<TypeError>(binary_op_name(op), ": not implemented for bool");
    }
  }
  if (is_floating(dt)) {
    const MPSDataType ct = compute_type(dt);
    a = g.cast(a, ct);
    b = g.cast(b, ct);
    switch (op) {
      case BinaryOp::Add: return g.add(a, b);
      case BinaryOp::Sub: return g.sub(a, b);
      case BinaryOp::Mul: return g.mul(a, b);
      case BinaryOp::Div: return g.div(a, b);
      case BinaryOp::FloorDiv: return float_floor_div(g, a, b);
      case BinaryOp::Remainder: return float_py_mod(g, a, b);
      case BinaryOp::Pow: return float_pow(g, a, b);
      case BinaryOp::Maximum: return g.max_nan(a, b);
      case BinaryOp::Minimum: return g.min_nan(a, b);
      case BinaryOp::Atan2: return g.atan2(a, b);
      default: break;
    }
  } else {
    // Integer division by zero gives 0, as on the CPU. Quotients are formed
    // as exact divisions (a - floor_mod(a, b)) / b, so they do not depend on
    // how the GPU rounds an inexact integer division.
    T zero = g.like(0, a);
    T is_zero = g.eq(b, zero);
    T safe_b = g.select(is_zero, g.like(1, b), b);
    T rem = g.floor_mod(a, safe_b);
    T floor_q = g.div(g.sub(a, rem), safe_b);
    switch (op) {
      case BinaryOp::Add: return g.add(a, b);
      case BinaryOp::Sub: return g.sub(a, b);
      case BinaryOp::Mul: return g.mul(a, b);
      case BinaryOp::Div: {  // C's truncating division
        T up = g.land(g.ne(rem, zero), g.lxor(g.lt(a, zero), g.lt(safe_b, zero)));
        return g.select(is_zero, zero, g.select(up, g.add(floor_q, g.like(1, a)), floor_q));
      }
      case BinaryOp::FloorDiv: return g.select(is_zero, zero, floor_q);
      case BinaryOp::Remainder: return g.select(is_zero, zero, rem);
      case BinaryOp::Pow: return int_pow(g, a, b, dt);
      case BinaryOp::Maximum: return g.max(a, b);
      case BinaryOp::Minimum: return g.min(a, b);
      case BinaryOp::Atan2: return zero;
      default: break;
    }
  }
  fail<NotImplementedError>("the operator '", binary_op_name(op), "' is not implemented for the metal device");
}

// ------------------------------------------------------------------- Cast
T emit_cast(G& g, T x, DType from, DType to) {
  if (from == to) return g.identity(x);
  if (to == DType::Bool) return g.ne(x, g.like(0, x));  // NaN -> true, as x != 0
  if (is_floating(from) && !is_floating(to)) {
    // Truncate toward zero before the cast, NaN to 0 (not UB), as on the CPU.
    T f = g.cast(x, compute_type(from));
    f = g.trunc(g.select(g.isnan(f), g.like(0, f), f));
    return g.cast(f, mps_dtype(to));
  }
  if (is_half(from) && is_half(to)) return g.cast(g.cast(x, MPSDataTypeFloat32), mps_dtype(to));
  return g.cast(x, mps_dtype(to));
}

// --------------------------------------------------------------- creation
// One element with the CPU's exact bytes, broadcast to the output's shape.
T emit_full(G& g, double value, const TensorMeta& m) {
  unsigned char bytes[8] = {};
  write_value(bytes, m.dtype, value);
  T one = g.data(bytes, itemsize(m.dtype), @[ @1 ], mps_dtype(m.dtype));
  return m.numel() == 1 ? one : g.broadcast(one, m.shape);
}

T emit_arange(G& g, const Arange& a, const TensorMeta& m) {
  const int64_t n = m.numel();
  const size_t es = itemsize(m.dtype);
  std::vector<unsigned char> bytes(size_t(n) * es);
  for (int64_t i = 0; i < n; ++i) write_value(bytes.data() + size_t(i) * es, m.dtype, a.start + double(i) * a.step);
  return g.data(bytes.data(), bytes.size(), @[ @((long long)n) ], mps_dtype(m.dtype));
}

// -------------------------------------------------------------- reductions
double reduce_identity(ReduceOp op, DType dt) {
  switch (op) {
    case ReduceOp::Sum: return 0;
    case ReduceOp::Prod: return 1;
    case ReduceOp::All: return 1;
    case ReduceOp::Any: return 0;
    case ReduceOp::Max:
      return is_floating(dt) ? -INFINITY
                             : double(dt == DType::Int32 ? std::numeric_limits<int32_t>::lowest()
                                                         : std::numeric_limits<int64_t>::lowest());
    case ReduceOp::Min:
      return is_floating(dt) ? INFINITY
                             : double(dt == DType::Int32 ? std::numeric_limits<int32_t>::max()
                                                         : std::numeric_limits<int64_t>::max());
  }
  return 0;
}

T emit_reduce(G& g, const Reduce& r, T x, const TensorMeta& in, const TensorMeta& out) {
  if (x == nil) return g.full(reduce_identity(r.op, in.dtype), out);
  if (r.axes.empty()) return g.identity(x);
  NSArray<NSNumber*>* axes = numbers(r.axes);
  MPSGraph* mg = g.graph();
  switch (r.op) {
    case ReduceOp::Sum: return [mg reductionSumWithTensor:g.cast(x, compute_type(in.dtype)) axes:axes name:nil];
    case ReduceOp::Prod:
      return [mg reductionProductWithTensor:g.cast(x, compute_type(in.dtype)) axes:axes name:nil];
    case ReduceOp::Max:
      return is_floating(in.dtype) ? [mg reductionMaximumPropagateNaNWithTensor:x axes:axes name:nil]
                                   : [mg reductionMaximumWithTensor:x axes:axes name:nil];
    case ReduceOp::Min:
      return is_floating(in.dtype) ? [mg reductionMinimumPropagateNaNWithTensor:x axes:axes name:nil]
                                   : [mg reductionMinimumWithTensor:x axes:axes name:nil];
    case ReduceOp::All: return [mg reductionAndWithTensor:g.cast(x, MPSDataTypeBool) axes:axes name:nil];
    case ReduceOp::Any: return [mg reductionOrWithTensor:g.cast(x, MPSDataTypeBool) axes:axes name:nil];
  }
  fail<NotImplementedError>("the operator '", r.name(), "' is not implemented for the metal device");
}

// The first position of the extreme value; a NaN wins at its first position.
T emit_arg_reduce(G& g, const ArgReduce& ar, T x, const TensorMeta& in) {
  MPSGraph* mg = g.graph();
  const int rank = std::max<int>(1, int(in.shape.size()));
  const int axis = in.shape.empty() ? 0 : ar.axis;
  const int64_t r = in.shape.empty() ? 1 : in.shape[size_t(axis)];
  const bool is_max = ar.op == ArgReduceOp::ArgMax;
  if (in.dtype == DType::Bool) x = g.cast(x, MPSDataTypeInt32);
  T hit;
  if (is_floating(in.dtype)) {
    T m = is_max ? [mg reductionMaximumPropagateNaNWithTensor:x axis:axis name:nil]
                 : [mg reductionMinimumPropagateNaNWithTensor:x axis:axis name:nil];
    hit = g.select(g.isnan(m), g.isnan(x), g.eq(x, m));
  } else {
    T m = is_max ? [mg reductionMaximumWithTensor:x axis:axis name:nil]
                 : [mg reductionMinimumWithTensor:x axis:axis name:nil];
    hit = g.eq(x, m);
  }
  std::vector<int32_t> positions(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) positions[size_t(i)] = int32_t(i);
  T pos = g.data(positions.data(), positions.size() * sizeof(int32_t), mps_shape(along_axis(rank, axis, r)),
                 MPSDataTypeInt32);
  T candidate = g.select(hit, pos, g.scalar(double(r), MPSDataTypeInt32));
  T first = [mg reductionMinimumWithTensor:candidate axis:axis name:nil];
  return g.cast(first, MPSDataTypeInt64);
}

// ------------------------------------------------------------------ matmul
T emit_matmul(G& g, const Matmul& mm, T a, T b, const TensorMeta& am, const TensorMeta& bm, const TensorMeta& out) {
  const size_t nd = am.shape.size();
  const int64_t k = mm.trans_a ? am.shape[nd - 2] : am.shape[nd - 1];
  if (a == nil || b == nil || k == 0) return g.full(0, out);
  if (mm.trans_a) a = g.transpose(a, nd - 2, nd - 1);
  if (mm.trans_b) b = g.transpose(b, nd - 2, nd - 1);
  if (is_floating(am.dtype)) {
    // 16-bit floats multiply in float32 and round once, as the CPU does.
    const MPSDataType ct = compute_type(am.dtype);
    return [g.graph() matrixMultiplicationWithPrimaryTensor:g.cast(a, ct) secondaryTensor:g.cast(b, ct) name:nil];
  }
  // Integers: exact products summed over K ([.., M, K, 1] * [.., 1, K, N]).
  const int64_t m = out.shape[nd - 2], n = out.shape[nd - 1];
  Shape batch(out.shape.begin(), out.shape.end() - 2);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {m, k, 1});
  sb.insert(sb.end(), {1, k, n});
  const MPSDataType ct = am.dtype == DType::Bool ? MPSDataTypeInt32 : mps_dtype(am.dtype);
  T prod = g.mul(g.reshape(g.cast(a, ct), sa), g.reshape(g.cast(b, ct), sb));
  T sum = [g.graph() reductionSumWithTensor:prod axis:NSInteger(nd - 1) name:nil];
  return am.dtype == DType::Bool ? g.ne(sum, g.like(0, sum)) : sum;
}

// ---------------------------------------------------------- slice_scatter
T emit_slice_scatter(G& g, const SliceSpec& spec, T base, T src, const TensorMeta& bm, const TensorMeta& sm) {
  if (src == nil) return g.identity(base);
  MPSGraph* mg = g.graph();
  if (is_integral(bm.dtype)) {
    // Integers go through a scatter at host-computed flat positions (the
    // slice's positions are distinct, so "set" is deterministic).
    const Shape src_shape = spec.out_shape();
    const Shape strides = contiguous_strides(bm.shape);
    const int64_t n = sm.numel();
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
    T positions = g.data(flat.data(), flat.size() * sizeof(int32_t), @[ @((long long)n) ], MPSDataTypeInt32);
    T scattered = [mg scatterWithDataTensor:g.reshape(base, Shape{bm.numel()})
                              updatesTensor:g.reshape(src, Shape{n})
                              indicesTensor:positions
                                       axis:0
                                       mode:MPSGraphScatterModeSet
                                       name:nil];
    return scattered;
  }
  // Floats and bools: the slice's gradient places src (and a mask of ones)
  // into a zero tensor of the base's shape; the mask selects src over base.
  const MPSDataType ct = bm.dtype == DType::Bool ? MPSDataTypeFloat32 : mps_dtype(bm.dtype);
  T shape = [mg shapeOfTensor:base name:nil];
  NSArray<NSNumber*>* starts = numbers(spec.starts);
  NSArray<NSNumber*>* ends = numbers(spec.stops);
  NSArray<NSNumber*>* steps = numbers(spec.steps);
  T placed = [mg sliceGradientTensor:g.cast(src, ct) fwdInShapeTensor:shape starts:starts ends:ends strides:steps name:nil];
  T ones = g.broadcast(g.scalar(1, MPSDataTypeFloat32), sm.shape);
  T mask = [mg sliceGradientTensor:ones fwdInShapeTensor:shape starts:starts ends:ends strides:steps name:nil];
  if (bm.dtype == DType::Bool) placed = g.ne(placed, g.like(0, placed));
  return g.select(g.ne(mask, g.like(0, mask)), placed, base);
}

// ---------------------------------------------------------------- indexing
// Index tensors smaller than the data outside `axis` (which torch.gather and
// scatter allow) address the leading block: data is sliced to them.
bool same_outside_axis(const Shape& a, const Shape& b, int axis) {
  for (size_t d = 0; d < a.size(); ++d)
    if (int(d) != axis && a[d] != b[d]) return false;
  return true;
}

T emit_gather(G& g, int axis, T x, T idx, const TensorMeta& xm, const TensorMeta& im) {
  idx = wrap_index(g, idx, xm.shape[size_t(axis)]);
  if (!same_outside_axis(xm.shape, im.shape, axis)) {
    std::vector<int64_t> starts(xm.shape.size(), 0), ends, steps(xm.shape.size(), 1);
    for (size_t d = 0; d < xm.shape.size(); ++d) ends.push_back(int(d) == axis ? xm.shape[d] : im.shape[d]);
    x = g.slice(x, starts, ends, steps);
  }
  return [g.graph() gatherAlongAxis:axis withUpdatesTensor:x indicesTensor:idx name:nil];
}

T emit_scatter(G& g, const ScatterAdd& sc, T base, T idx, T src, const TensorMeta& bm, const TensorMeta& im,
               const TensorMeta& sm) {
  if (idx == nil) return g.identity(base);
  const int axis = sc.axis;
  const size_t nd = bm.shape.size();
  idx = wrap_index(g, idx, bm.shape[size_t(axis)]);
  if (sm.shape != im.shape) {  // only the leading block of src is scattered
    std::vector<int64_t> starts(nd, 0), ends(im.shape.begin(), im.shape.end()), steps(nd, 1);
    src = g.slice(src, starts, ends, steps);
  }
  if (!same_outside_axis(bm.shape, im.shape, axis)) {
    // Pad up to the base's extent with indices past its end: MPSGraph skips
    // out-of-bounds updates.
    std::vector<int64_t> right(nd, 0);
    for (size_t d = 0; d < nd; ++d)
      if (int(d) != axis) right[d] = bm.shape[d] - im.shape[d];
    idx = g.pad_right(idx, right, double(bm.shape[size_t(axis)]));
    src = g.pad_right(src, right, 0.0);
  }
  const bool as_int = bm.dtype == DType::Bool;
  const MPSDataType ct = as_int ? MPSDataTypeInt32 : compute_type(bm.dtype);
  T r = [g.graph() scatterAlongAxis:axis
                     withDataTensor:g.cast(base, ct)
                      updatesTensor:g.cast(src, ct)
                      indicesTensor:idx
                               mode:sc.accumulate ? MPSGraphScatterModeAdd : MPSGraphScatterModeSet
                               name:nil];
  return as_int ? g.ne(r, g.like(0, r)) : r;
}

T emit_index_add(G& g, int axis, T base, T idx, T src, const TensorMeta& bm, const TensorMeta& im,
                 const TensorMeta& sm) {
  if (idx == nil || src == nil) return g.identity(base);
  const int rank = int(bm.shape.size());
  idx = wrap_index(g, idx, bm.shape[size_t(axis)]);
  idx = g.broadcast(g.reshape(idx, along_axis(rank, axis, im.numel())), sm.shape);
  const bool as_int = bm.dtype == DType::Bool;
  const MPSDataType ct = as_int ? MPSDataTypeInt32 : compute_type(bm.dtype);
  T r = [g.graph() scatterAlongAxis:axis
                     withDataTensor:g.cast(base, ct)
                      updatesTensor:g.cast(src, ct)
                      indicesTensor:idx
                               mode:MPSGraphScatterModeAdd
                               name:nil];
  return as_int ? g.ne(r, g.like(0, r)) : r;
}

// ----------------------------------------------------------------- softmax
T emit_softmax(G& g, const Softmax& sm, T x, const TensorMeta& in) {
  MPSGraph* mg = g.graph();
  const int axis = in.shape.empty() ? 0 : sm.axis;
  x = g.cast(x, compute_type(in.dtype));
  T m = [mg reductionMaximumWithTensor:x axis:axis name:nil];
  // An all -inf row keeps exp() well-defined, as on the CPU.
  m = g.select(g.eq(m, g.like(-INFINITY, m)), g.like(0, m), m);
  T d = g.sub(x, m);
  T e = g.exp(d);
  T total = [mg reductionSumWithTensor:e axis:axis name:nil];
  if (sm.log) return g.sub(d, g.log(total));
  return g.mul(e, g.div(g.like(1, total), total));
}

T emit_softmax_backward(G& g, const SoftmaxBackward& sb, T grad, T y, const TensorMeta& ym) {
  MPSGraph* mg = g.graph();
  const int axis = ym.shape.empty() ? 0 : sb.axis;
  const MPSDataType t = compute_type(ym.dtype);
  grad = g.cast(grad, t);
  y = g.cast(y, t);
  if (sb.log) return g.sub(grad, g.mul(g.exp(y), [mg reductionSumWithTensor:grad axis:axis name:nil]));
  return g.mul(y, g.sub(grad, [mg reductionSumWithTensor:g.mul(grad, y) axis:axis name:nil]));
}

// -------------------------------------------------------------- layer norm
NSArray<NSNumber*>* last_axes(size_t rank, int ndims) {
  std::vector<int> axes;
  for (int d = int(rank) - ndims; d < int(rank); ++d) axes.push_back(d);
  return numbers(axes);
}

std::vector<T> emit_layer_norm(G& g, const LayerNorm& op, T x, const TensorMeta& in) {
  MPSGraph* mg = g.graph();
  NSArray<NSNumber*>* axes = last_axes(in.shape.size(), op.ndims);
  x = g.cast(x, compute_type(in.dtype));
  T mean = [mg meanOfTensor:x axes:axes name:nil];
  T xc = g.sub(x, mean);
  T var = [mg meanOfTensor:g.mul(xc, xc) axes:axes name:nil];
  T rstd = g.div(g.like(1, var), [mg squareRootWithTensor:g.add(var, g.like(op.eps, var)) name:nil]);
  return {g.mul(xc, rstd), mean, rstd};
}

T emit_layer_norm_backward(G& g, const LayerNormBackward& op, T grad, T xhat, T rstd, const TensorMeta& hm) {
  MPSGraph* mg = g.graph();
  NSArray<NSNumber*>* axes = last_axes(hm.shape.size(), op.ndims);
  const MPSDataType t = compute_type(hm.dtype);
  grad = g.cast(grad, t);
  xhat = g.cast(xhat, t);
  T mean_g = [mg meanOfTensor:grad axes:axes name:nil];
  T mean_gh = [mg meanOfTensor:g.mul(grad, xhat) axes:axes name:nil];
  return g.mul(g.cast(rstd, t), g.sub(g.sub(grad, mean_g), g.mul(xhat, mean_gh)));
}

#ifdef LUCID_METAL_HAS_CONV
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
  const double lo = dt == DType::Int32 ? double(std::numeric_limits<int32_t>::lowest()) : -9.2233720368547758e18;
  const double hi = dt == DType::Int32 ? double(std::numeric_limits<int32_t>::max()) : 9.2233720368547748e18;
  return std::min(std::max(v, lo), hi);
}

T emit_im2col(G& g, const Im2Col& op, T x, const TensorMeta& in) {
  const Window2d& w = op.win;
  const int64_t n = in.shape[0], c = in.shape[1], h = in.shape[2], wd = in.shape[3];
  const int64_t hp = h + w.pad_top + w.pad_bottom, wp = wd + w.pad_left + w.pad_right;
  const int64_t l = w.out_h(h) * w.out_w(wd), kk = w.kh * w.kw;
  const bool as_int = in.dtype == DType::Bool;
  if (as_int) x = g.cast(x, MPSDataTypeInt32);
  if (w.pad_top || w.pad_bottom || w.pad_left || w.pad_right) {
    x = [g.graph() padTensor:x
             withPaddingMode:MPSGraphPaddingModeConstant
                 leftPadding:@[ @0, @0, @((long long)w.pad_top), @((long long)w.pad_left) ]
                rightPadding:@[ @0, @0, @((long long)w.pad_bottom), @((long long)w.pad_right) ]
               constantValue:clamp_pad(op.pad_value, in.dtype)
                        name:nil];
  }
  const std::vector<int32_t> pos = window_positions(w, h, wd);
  T table = g.data(pos.data(), pos.size() * sizeof(int32_t), @[ @(pos.size()) ], MPSDataTypeInt32);
  T cols = [g.graph() gatherWithUpdatesTensor:g.reshape(x, Shape{n, c, hp * wp})
                                indicesTensor:table
                                         axis:2
                              batchDimensions:0
                                         name:nil];  // [N, C, kk*L]
  cols = g.transpose(g.reshape(cols, Shape{n, c * kk, l}), 0, 1);
  return as_int ? g.ne(cols, g.like(0, cols)) : cols;
}

T emit_col2im(G& g, const Col2Im& op, T cols, const TensorMeta& in, const TensorMeta& out) {
  if (cols == nil) return g.full(0, out);
  const Window2d& w = op.win;
  const int64_t n = out.shape[0], c = out.shape[1], h = op.height, wd = op.width;
  const int64_t hp = h + w.pad_top + w.pad_bottom, wp = wd + w.pad_left + w.pad_right;
  const int64_t l = in.shape[2], kk = w.kh * w.kw;
  T t = g.reshape(g.transpose(g.cast(cols, compute_type(in.dtype)), 0, 1), Shape{n, c, kk * l});
  const std::vector<int32_t> pos = window_positions(w, h, wd);
  T table = g.data(pos.data(), pos.size() * sizeof(int32_t), @[ @1, @1, @(pos.size()) ], MPSDataTypeInt32);
  table = g.broadcast(table, Shape{n, c, kk * l});
  T acc = [g.graph() scatterAlongAxis:2
                    withUpdatesTensor:t
                        indicesTensor:table
                                shape:@[ @((long long)n), @((long long)c), @((long long)(hp * wp)) ]
                                 mode:MPSGraphScatterModeAdd
                                 name:nil];
  acc = g.reshape(acc, Shape{n, c, hp, wp});
  return g.slice(acc, {0, 0, w.pad_top, w.pad_left}, {n, c, w.pad_top + h, w.pad_left + wd}, {1, 1, 1, 1});
}

// ---------------------------------------------------------- max pooling
// The window with its per-side padding (ceil_mode is already in it); indices
// flattened over H*W of the input, as MaxPool2d returns them.
MPSGraphPooling2DOpDescriptor* pool_descriptor(const Window2d& w) {
  MPSGraphPooling2DOpDescriptor* d =
      [MPSGraphPooling2DOpDescriptor descriptorWithKernelWidth:NSUInteger(w.kw)
                                                  kernelHeight:NSUInteger(w.kh)
                                                     strideInX:NSUInteger(w.sw)
                                                     strideInY:NSUInteger(w.sh)
                                               dilationRateInX:NSUInteger(w.dw)
                                               dilationRateInY:NSUInteger(w.dh)
                                                   paddingLeft:NSUInteger(w.pad_left)
                                                  paddingRight:NSUInteger(w.pad_right)
                                                    paddingTop:NSUInteger(w.pad_top)
                                                 paddingBottom:NSUInteger(w.pad_bottom)
                                                  paddingStyle:MPSGraphPaddingStyleExplicit
                                                    dataLayout:MPSGraphTensorNamedDataLayoutNCHW];
  d.returnIndicesMode = MPSGraphPoolingReturnIndicesGlobalFlatten2D;
  d.returnIndicesDataType = MPSDataTypeInt32;
  return d;
}

std::vector<T> emit_max_pool(G& g, const MaxPool2d& op, T x, const TensorMeta& in) {
  // 16-bit floats pool in float32: the maximum is exact in either.
  x = g.cast(x, compute_type(in.dtype));
  NSArray<T>* r = [g.graph() maxPooling2DReturnIndicesWithSourceTensor:x descriptor:pool_descriptor(op.win) name:nil];
  return {r[0], r[1]};  // emit_primitive casts the indices to int64
}

T emit_max_pool_backward(G& g, const MaxPool2dBackward& op, T grad, T idx, const TensorMeta& gm,
                         const TensorMeta& out) {
  grad = g.cast(grad, compute_type(gm.dtype));
  return [g.graph() maxPooling2DGradientWithGradientTensor:grad
                                             indicesTensor:g.cast(idx, MPSDataTypeInt32)
                                               outputShape:mps_shape(out.shape)
                                                descriptor:pool_descriptor(op.win)
                                                      name:nil];
}
#endif

// Kinds whose output is defined only when every input has elements.
bool needs_all_inputs(OpKind k) {
  switch (k) {
    case OpKind::Reduce: case OpKind::Matmul: case OpKind::Concat: case OpKind::SliceScatter:
    case OpKind::ScatterAdd: case OpKind::IndexAdd: case OpKind::Col2Im: case OpKind::Full:
    case OpKind::Arange:
      return false;
    default:
      return true;
  }
}

std::vector<T> emit(G& g, const Primitive& p, const std::vector<T>& in, const std::vector<TensorMeta>& im,
                    const std::vector<TensorMeta>& om) {
  switch (p.kind()) {
    case OpKind::Unary: return {emit_unary(g, static_cast<const Unary&>(p).op, in[0], im[0].dtype)};
    case OpKind::Binary: return {emit_binary(g, static_cast<const Binary&>(p).op, in[0], in[1], im[0].dtype)};
    case OpKind::Where: return {g.select(g.cast(in[0], MPSDataTypeBool), in[1], in[2])};
    case OpKind::Cast: return {emit_cast(g, in[0], im[0].dtype, static_cast<const Cast&>(p).to)};
    case OpKind::Copy: return {g.identity(in[0])};
    case OpKind::Full: return {emit_full(g, static_cast<const Full&>(p).value, om[0])};
    case OpKind::Arange: return {emit_arange(g, static_cast<const Arange&>(p), om[0])};
    case OpKind::Reduce: return {emit_reduce(g, static_cast<const Reduce&>(p), in[0], im[0], om[0])};
    case OpKind::ArgReduce: return {emit_arg_reduce(g, static_cast<const ArgReduce&>(p), in[0], im[0])};
    case OpKind::Matmul: return {emit_matmul(g, static_cast<const Matmul&>(p), in[0], in[1], im[0], im[1], om[0])};
    case OpKind::Reshape: return {in[0]};
    case OpKind::Permute: {
      const auto& perm = static_cast<const Permute&>(p).perm;
      if (perm.size() < 2) return {in[0]};
      return {[g.graph() transposeTensor:in[0] permutation:numbers(perm) name:nil]};
    }
    case OpKind::Broadcast: return {g.fit(in[0], om[0].shape)};
    case OpKind::Slice: {
      const SliceSpec& s = static_cast<const Slice&>(p).spec;
      if (s.starts.empty()) return {in[0]};
      return {g.slice(in[0], s.starts, s.stops, s.steps)};
    }
    case OpKind::SliceScatter:
      return {emit_slice_scatter(g, static_cast<const SliceScatter&>(p).spec, in[0], in[1], im[0], im[1])};
    case OpKind::Concat: {
      NSMutableArray<T>* parts = [NSMutableArray array];
      for (T t : in)
        if (t != nil) [parts addObject:t];
      if (parts.count == 1) return {parts[0]};
      return {[g.graph() concatTensors:parts dimension:static_cast<const Concat&>(p).axis name:nil]};
    }
    case OpKind::Gather: return {emit_gather(g, static_cast<const Gather&>(p).axis, in[0], in[1], im[0], im[1])};
    case OpKind::ScatterAdd:
      return {emit_scatter(g, static_cast<const ScatterAdd&>(p), in[0], in[1], in[2], im[0], im[1], im[2])};
    case OpKind::IndexSelect: {
      const int axis = static_cast<const IndexSelect&>(p).axis;
      T idx = wrap_index(g, in[1], im[0].shape[size_t(axis)]);
      return {[g.graph() gatherWithUpdatesTensor:in[0] indicesTensor:idx axis:NSUInteger(axis) batchDimensions:0 name:nil]};
    }
    case OpKind::IndexAdd:
      return {emit_index_add(g, static_cast<const IndexAdd&>(p).axis, in[0], in[1], in[2], im[0], im[1], im[2])};
    case OpKind::Softmax: return {emit_softmax(g, static_cast<const Softmax&>(p), in[0], im[0])};
    case OpKind::SoftmaxBackward:
      return {emit_softmax_backward(g, static_cast<const SoftmaxBackward&>(p), in[0], in[1], im[1])};
    case OpKind::LayerNorm: return emit_layer_norm(g, static_cast<const LayerNorm&>(p), in[0], im[0]);
    case OpKind::LayerNormBackward:
      return {emit_layer_norm_backward(g, static_cast<const LayerNormBackward&>(p), in[0], in[1], in[2], im[1])};
#ifdef LUCID_METAL_HAS_CONV
    case OpKind::Im2Col: return {emit_im2col(g, static_cast<const Im2Col&>(p), in[0], im[0])};
    case OpKind::Col2Im: return {emit_col2im(g, static_cast<const Col2Im&>(p), in[0], im[0], om[0])};
    case OpKind::MaxPool2d: return emit_max_pool(g, static_cast<const MaxPool2d&>(p), in[0], im[0]);
    case OpKind::MaxPool2dBackward:
      return {emit_max_pool_backward(g, static_cast<const MaxPool2dBackward&>(p), in[0], in[1], im[0], om[0])};
#endif
    default: break;
  }
  fail<NotImplementedError>("the operator '", p.name(), "' is not implemented for the metal device");
}

template <class V>
void put_bits(std::ostringstream& os, V v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(V));
  os << bits << ',';
}

void put_shape(std::ostringstream& os, const Shape& s) {
  os << '[';
  for (int64_t d : s) os << d << ',';
  os << ']';
}

void put_spec(std::ostringstream& os, const SliceSpec& s) {
  put_shape(os, s.starts);
  put_shape(os, s.stops);
  put_shape(os, s.steps);
}

}  // namespace

std::vector<MPSGraphTensor*> emit_primitive(MPSGraph* graph, const Primitive& prim,
                                            const std::vector<MPSGraphTensor*>& inputs,
                                            const std::vector<TensorMeta>& in_metas,
                                            const std::vector<TensorMeta>& out_metas) {
  G g(graph);
  for (const auto& m : in_metas) mps_dtype(m.dtype, prim.name().c_str());
  for (const auto& m : out_metas) mps_dtype(m.dtype, prim.name().c_str());
  if (prim.kind() == OpKind::Random)
    fail<NotImplementedError>("'", prim.name(), "' is drawn on the host on the metal device, not in a graph");
  std::vector<T> out(out_metas.size(), nil);
  bool any_output = false;
  for (const auto& m : out_metas) any_output |= m.numel() > 0;
  if (!any_output) return out;
  out.clear();
  bool missing = false;
  for (T t : inputs) missing |= t == nil;
  if (missing && needs_all_inputs(prim.kind())) {
    // Only reachable through an invalid program (the CPU kernel would have
    // raised); zeros keep the graph well-formed.
    for (const auto& m : out_metas) out.push_back(m.numel() ? g.full(0, m) : nil);
  } else {
    out = emit(g, prim, inputs, in_metas, out_metas);
  }
  // Every result leaves in exactly its output's dtype and shape.
  for (size_t k = 0; k < out.size(); ++k) {
    const TensorMeta& m = out_metas[k];
    if (m.numel() == 0) {
      out[k] = nil;
      continue;
    }
    out[k] = g.fit(g.cast(out[k], mps_dtype(m.dtype)), m.shape);
  }
  return out;
}

std::string primitive_key(const Primitive& p) {
  std::ostringstream os;
  os << int(p.kind()) << ':';
  switch (p.kind()) {
    case OpKind::Unary: os << int(static_cast<const Unary&>(p).op); break;
    case OpKind::Binary: os << int(static_cast<const Binary&>(p).op); break;
    case OpKind::Cast: os << int(static_cast<const Cast&>(p).to); break;
    case OpKind::Full: {
      const auto& f = static_cast<const Full&>(p);
      put_bits(os, f.value);
      put_shape(os, f.meta.shape);
      os << int(f.meta.dtype);
      break;
    }
    case OpKind::Arange: {
      const auto& a = static_cast<const Arange&>(p);
      put_bits(os, a.start);
      put_bits(os, a.step);
      put_shape(os, a.meta.shape);
      os << int(a.meta.dtype);
      break;
    }
    case OpKind::Random: {
      const auto& r = static_cast<const Random&>(p);
      os << int(r.dist) << ',' << int(r.dtype);
      put_shape(os, r.shape);
      break;
    }
    case OpKind::Reduce: {
      const auto& r = static_cast<const Reduce&>(p);
      os << int(r.op) << ',' << r.keepdim;
      put_shape(os, Shape(r.axes.begin(), r.axes.end()));
      break;
    }
    case OpKind::ArgReduce: {
      const auto& r = static_cast<const ArgReduce&>(p);
      os << int(r.op) << ',' << r.axis << ',' << r.keepdim;
      break;
    }
    case OpKind::Matmul: {
      const auto& m = static_cast<const Matmul&>(p);
      os << m.trans_a << ',' << m.trans_b;
      break;
    }
    case OpKind::Reshape: put_shape(os, static_cast<const Reshape&>(p).shape); break;
    case OpKind::Permute: {
      const auto& perm = static_cast<const Permute&>(p).perm;
      put_shape(os, Shape(perm.begin(), perm.end()));
      break;
    }
    case OpKind::Broadcast: put_shape(os, static_cast<const Broadcast&>(p).shape); break;
    case OpKind::Slice: put_spec(os, static_cast<const Slice&>(p).spec); break;
    case OpKind::SliceScatter: put_spec(os, static_cast<const SliceScatter&>(p).spec); break;
    case OpKind::Concat: os << static_cast<const Concat&>(p).axis; break;
    case OpKind::Gather: os << static_cast<const Gather&>(p).axis; break;
    case OpKind::ScatterAdd: {
      const auto& s = static_cast<const ScatterAdd&>(p);
      os << s.axis << ',' << s.accumulate;
      break;
    }
    case OpKind::IndexSelect: os << static_cast<const IndexSelect&>(p).axis; break;
    case OpKind::IndexAdd: os << static_cast<const IndexAdd&>(p).axis; break;
    case OpKind::Softmax: {
      const auto& s = static_cast<const Softmax&>(p);
      os << s.axis << ',' << s.log;
      break;
    }
#ifdef LUCID_METAL_HAS_CONV
    case OpKind::Im2Col: {
      const auto& op = static_cast<const Im2Col&>(p);
      os << op.win.str() << ',';
      put_bits(os, op.pad_value);
      break;
    }
    case OpKind::Col2Im: {
      const auto& op = static_cast<const Col2Im&>(p);
      os << op.win.str() << ',' << op.height << ',' << op.width;
      break;
    }
    case OpKind::MaxPool2d: os << static_cast<const MaxPool2d&>(p).win.str(); break;
    case OpKind::MaxPool2dBackward: {
      const auto& op = static_cast<const MaxPool2dBackward&>(p);
      os << op.win.str() << ',' << op.height << ',' << op.width;
      break;
    }
#endif
    case OpKind::LayerNorm: {
      const auto& op = static_cast<const LayerNorm&>(p);
      os << op.ndims << ',';
      put_bits(os, op.eps);
      break;
    }
    case OpKind::LayerNormBackward: os << static_cast<const LayerNormBackward&>(p).ndims; break;
    case OpKind::SoftmaxBackward: {
      const auto& sb = static_cast<const SoftmaxBackward&>(p);
      os << sb.axis << ',' << sb.log;
      break;
    }
    case OpKind::Where: case OpKind::Copy: break;
    default:
      fail<NotImplementedError>("the operator '", p.name(), "' is not implemented for the metal device");
  }
  return os.str();
}

void write_value(void* dst, DType dtype, double v) {
  switch (dtype) {
    case DType::Bool: *static_cast<bool*>(dst) = v != 0; break;
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

void check_indices(const Primitive& p, const std::vector<ConstArg>& in) {
  int axis = 0;
  const ConstArg* index = nullptr;
  const TensorMeta* target = nullptr;
  switch (p.kind()) {
    case OpKind::Gather: axis = static_cast<const Gather&>(p).axis; break;
    case OpKind::ScatterAdd: axis = static_cast<const ScatterAdd&>(p).axis; break;
    case OpKind::IndexSelect: axis = static_cast<const IndexSelect&>(p).axis; break;
    case OpKind::IndexAdd: axis = static_cast<const IndexAdd&>(p).axis; break;
    default: return;
  }
  index = &in[1];
  target = in[0].meta;
  if (target->shape.empty()) return;
  const int64_t size = target->shape[size_t(axis)];
  const int64_t n = index->meta->numel();
  const bool i32 = index->meta->dtype == DType::Int32;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = i32 ? static_cast<const int32_t*>(index->data)[i] : static_cast<const int64_t*>(index->data)[i];
    if (v < -size || v >= size)
      fail<IndexError>(p.name(), "(): index ", v, " is out of bounds for dimension ", axis, " with size ", size);
  }
}

}  // namespace lucid::metal
