// Device code shared by every kernel module: element types, loads/stores,
// and the scalar definitions of the elementwise ops. The float32 exp, tanh
// and erf are the CPU backend's polynomials (backend/cpu/math.h) with the
// same fused multiply-adds, so those ops round as on the host.
#include "lucid/backend/cuda/sources.h"

namespace lucid::cuda {

const char* prelude_source() {
  return R"CUDA(
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned short u16;
typedef unsigned char u8;
struct f16 { u16 bits; };
struct bf16 { u16 bits; };

#define LUCID_MAXD 10
#define LUCID_PI 3.14159265358979323846
#define LUCID_SQRT1_2 0.70710678118654752440
#define LUCID_SQRT2 1.41421356237309504880
#define LUCID_2_SQRTPI 1.12837916709551257390

template <class T> struct Compute { typedef T type; };
template <> struct Compute<f16> { typedef float type; };
template <> struct Compute<bf16> { typedef float type; };
template <class T> struct IsFloat { static const bool value = false; };
template <> struct IsFloat<float> { static const bool value = true; };
template <> struct IsFloat<double> { static const bool value = true; };
template <> struct IsFloat<f16> { static const bool value = true; };
template <> struct IsFloat<bf16> { static const bool value = true; };
template <class T> struct IsSigned { static const bool value = T(-1) < T(0); };
template <> struct IsSigned<f16> { static const bool value = true; };
template <> struct IsSigned<bf16> { static const bool value = true; };
template <class A, class B> struct Same { static const bool value = false; };
template <class A> struct Same<A, A> { static const bool value = true; };

__device__ __forceinline__ float h2f(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ u16 f2h(float f) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float b2f(u16 b) { return __uint_as_float(u32(b) << 16); }
__device__ __forceinline__ u16 f2b(float f) {
  u32 x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return u16((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1u);
  return u16(x >> 16);
}

template <class T> __device__ __forceinline__ T ld(const T* p, i64 i) { return p[i]; }
__device__ __forceinline__ float ld(const f16* p, i64 i) { return h2f(p[i].bits); }
__device__ __forceinline__ float ld(const bf16* p, i64 i) { return b2f(p[i].bits); }
template <class T, class V> __device__ __forceinline__ void st(T* p, i64 i, V v) { p[i] = T(v); }
template <class V> __device__ __forceinline__ void st(f16* p, i64 i, V v) { p[i].bits = f2h(float(v)); }
template <class V> __device__ __forceinline__ void st(bf16* p, i64 i, V v) { p[i].bits = f2b(float(v)); }

// A float converted to an 8- or 16-bit integer as the CPU converts it
// (core/element.h's narrow_float): truncated into int64 for u8 and into
// int32 for i8 and i16, a value beyond that type (NaN and infinities too)
// becoming its minimum, then wrapped to the width.
template <class To, class F> __device__ __forceinline__ To narrow_float(F v) {
  if (Same<To, u8>::value) {
    const F lo = F(-9223372036854775807ll - 1);
    return To(u64(v >= lo && v < -lo ? i64(v) : -9223372036854775807ll - 1));
  }
  const F lo = F(-2147483647 - 1);
  return To(u32(v >= lo && v < -lo ? i32(v) : -2147483647 - 1));
}

// The least and greatest values of each type (the floats' infinities).
template <class A> __device__ __forceinline__ A lowest_value();
template <> __device__ __forceinline__ float lowest_value<float>() { return -__int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double lowest_value<double>() { return -__longlong_as_double(0x7ff0000000000000ll); }
template <> __device__ __forceinline__ u8 lowest_value<u8>() { return 0; }
template <> __device__ __forceinline__ i8 lowest_value<i8>() { return -128; }
template <> __device__ __forceinline__ i16 lowest_value<i16>() { return -32768; }
template <> __device__ __forceinline__ i32 lowest_value<i32>() { return -2147483647 - 1; }
template <> __device__ __forceinline__ i64 lowest_value<i64>() { return -9223372036854775807ll - 1; }
template <class A> __device__ __forceinline__ A highest_value();
template <> __device__ __forceinline__ float highest_value<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double highest_value<double>() { return __longlong_as_double(0x7ff0000000000000ll); }
template <> __device__ __forceinline__ u8 highest_value<u8>() { return 255; }
template <> __device__ __forceinline__ i8 highest_value<i8>() { return 127; }
template <> __device__ __forceinline__ i16 highest_value<i16>() { return 32767; }
template <> __device__ __forceinline__ i32 highest_value<i32>() { return 2147483647; }
template <> __device__ __forceinline__ i64 highest_value<i64>() { return 9223372036854775807ll; }

__device__ __forceinline__ i64 global_index() { return i64(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 global_stride() { return i64(gridDim.x) * blockDim.x; }

// An N-d index space (row-major over `shape`) and, per operand, the element
// strides that address it (0 along broadcast dims).
struct Indexer {
  int nd;
  i64 shape[LUCID_MAXD];
};
template <int N>
struct Strides {
  i64 s[N][LUCID_MAXD];
};
template <int N>
__device__ __forceinline__ void offsets_of(const Indexer& ix, const Strides<N>& st, i64 i, i64* off) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = ix.nd - 1; d >= 0; --d) {
    const i64 c = i % ix.shape[d];
    i /= ix.shape[d];
    for (int k = 0; k < N; ++k) off[k] += c * st.s[k][d];
  }
}

// Device errors (an out-of-range index) are recorded here and raised on the
// host at the next synchronisation.
__device__ __forceinline__ void report_error(int* err, int code) { atomicOr(err, code); }

// -------------------------------------------------------------- float math
__device__ __forceinline__ float madd(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ float exp_reduced(float xc, int& n) {
  const float kRound = 12582912.0f;
  const float shifted = madd(xc, 1.44269504088896341f, kRound);
  const float fn = shifted - kRound;
  n = int(u32(__float_as_int(shifted)) - u32(__float_as_int(kRound)));
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
__device__ __forceinline__ float pow2i(int n) { return __int_as_float(int(u32(n + 127) << 23)); }
__device__ __forceinline__ float exp_f32(float x) {
  const bool zero = x < -104.0f;
  float xc = x > 89.0f ? 89.0f : x;
  xc = zero ? 0.0f : xc;
  int n;
  const float y = exp_reduced(xc, n);
  const int n1 = n >> 1;
  const float e = y * pow2i(n1) * pow2i(n - n1);
  return zero ? 0.0f : e;
}
__device__ __forceinline__ float tanh_f32(float x) {
  const float a = fabsf(x), z = a * a;
  float p = -5.70498872745e-3f;
  p = madd(p, z, 2.06390887954e-2f);
  p = madd(p, z, -5.37397155531e-2f);
  p = madd(p, z, 1.33314422036e-1f);
  p = madd(p, z, -3.33332819422e-1f);
  const float small = madd(p * z, a, a);
  const float big = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  return copysignf(a < 0.625f ? small : big, x);
}
__device__ __forceinline__ float erf_f32(float x) {
  const float t = fabsf(x), s = x * x;
  float r = madd(-1.72853470e-5f, t, 3.83197126e-4f);
  const float u = madd(-3.88396438e-3f, t, 2.42546219e-2f);
  r = madd(r, s, u);
  r = madd(r, t, -1.06777877e-1f);
  r = madd(r, t, -6.34846687e-1f);
  r = madd(r, t, -1.28717512e-1f);
  r = madd(r, t, -t);
  int n;
  const float e = exp_reduced(r > -87.0f ? r : -87.0f, n) * pow2i(n);
  const float big = copysignf(1.0f - e, x);
  float q = -5.96761703e-4f;
  q = madd(q, s, 4.99119423e-3f);
  q = madd(q, s, -2.67681349e-2f);
  q = madd(q, s, 1.12819925e-1f);
  q = madd(q, s, -3.76125336e-1f);
  q = madd(q, s, 1.28379166e-1f);
  q = madd(q, x, x);
  return t > 0.927734375f ? big : q;
}
__device__ __forceinline__ float exp_(float x) { return exp_f32(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float tanh_(float x) { return tanh_f32(x); }
__device__ __forceinline__ double tanh_(double x) { return tanh(x); }
__device__ __forceinline__ float erf_(float x) { return erf_f32(x); }
__device__ __forceinline__ double erf_(double x) { return erf(x); }

// UnaryOp and BinaryOp numbering (ops/primitives.h).
enum UOp { U_Neg, U_Abs, U_Sign, U_Exp, U_Log, U_Log1p, U_Expm1, U_Sqrt, U_Rsqrt, U_Square, U_Reciprocal, U_Sin,
           U_Cos, U_Tanh, U_Sigmoid, U_Relu, U_GeluErf, U_GeluTanh, U_Silu, U_Erf, U_Floor, U_Ceil, U_Round,
           U_Trunc, U_LogicalNot, U_IsFinite, U_IsNan, U_IsInf, U_BitNot, U_Lgamma, U_Digamma,
           U_Trigamma, U_Erfinv, U_GeluErfGrad, U_GeluTanhGrad, U_SiluGrad };
enum BOp { B_Add, B_Sub, B_Mul, B_Div, B_FloorDiv, B_Remainder, B_Pow, B_Maximum, B_Minimum, B_Atan2, B_Eq, B_Ne,
           B_Lt, B_Le, B_Gt, B_Ge, B_LogicalAnd, B_LogicalOr, B_LogicalXor, B_Fmod, B_BitAnd, B_BitOr, B_BitXor,
           B_LeftShift, B_RightShift };
// The ops whose result is bool (ops/primitives.h's unary_returns_bool and
// binary_returns_bool): codes appended later may follow them.
__device__ __forceinline__ bool unary_is_predicate(int op) { return op >= U_LogicalNot && op <= U_IsInf; }
__device__ __forceinline__ bool binary_is_predicate(int op) { return op >= B_Eq && op <= B_LogicalXor; }

// Special functions, with the CPU's definitions at the poles (backend/cpu/math.h).
__device__ __noinline__ double digamma_(double v) {
  const double pi = 3.14159265358979323846;
  if (v == 0) return copysign(__longlong_as_double(0x7ff0000000000000LL), -v);
  double result = 0;
  if (v < 0) {
    if (v == trunc(v)) return __longlong_as_double(0x7ff8000000000000LL);
    double whole;
    result = -pi / tan(pi * modf(v, &whole));
    v = 1 - v;
  }
  while (v < 10) {
    result -= 1 / v;
    v += 1;
  }
  if (v == 10) return result + 2.25175258906672110764;
  const double z = 1 / (v * v);
  const double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -
                        z * (691.0 / 32760 - z / 12))))));
  return result + log(v) - 0.5 / v - series;
}
__device__ __noinline__ double trigamma_(double v) {
  const double pi = 3.14159265358979323846;
  double sign = 1, result = 0;
  if (v < 0.5) {
    sign = -1;
    const double s = sin(pi * v);
    result -= pi * pi / (s * s);
    v = 1 - v;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (v * v);
    v += 1;
  }
  const double ixx = 1 / (v * v);
  result += (1 + 1 / (2 * v) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / v;
  return sign * result;
}

template <class C> __device__ __forceinline__ C unary_apply(int op, C x);
template <class C> __device__ __forceinline__ C unary_float(int op, C x) {
  switch (op) {
    case U_Neg: return -x;
    case U_Abs: return fabs(x);
    case U_Sign: return C((x > 0) - (x < 0));
    case U_Exp: return exp_(x);
    case U_Log: return log(x);
    case U_Log1p: return log1p(x);
    case U_Expm1: return expm1(x);
    case U_Sqrt: return sqrt(x);
    case U_Rsqrt: return C(1) / sqrt(x);
    case U_Square: return x * x;
    case U_Reciprocal: return C(1) / x;
    case U_Sin: return sin(x);
    case U_Cos: return cos(x);
    case U_Tanh: return tanh_(x);
    case U_Sigmoid: return C(1) / (C(1) + exp_(-x));
    case U_Relu: return x > C(0) ? x : (x != x ? x : C(0));
    case U_GeluErf: return C(0.5) * x * (C(1) + erf_(x * C(LUCID_SQRT1_2)));
    case U_GeluTanh: {
      const C k = C(LUCID_SQRT2 * LUCID_2_SQRTPI * 0.5);
      return C(0.5) * x * (C(1) + tanh_(k * (x + C(0.044715) * x * x * x)));
    }
    case U_Silu: return x / (C(1) + exp_(-x));
    case U_Erf: return erf_(x);
    case U_Floor: return floor(x);
    case U_Ceil: return ceil(x);
    case U_Round: return rint(x);
    case U_Trunc: return trunc(x);
    case U_Lgamma: return lgamma(x);
    case U_Digamma: return C(digamma_(double(x)));
    case U_Trigamma: return C(trigamma_(double(x)));
    case U_Erfinv: return erfinv(x);
    case U_GeluErfGrad:  // the CPU's formulas (backend/cpu/math.h)
      return C(0.5) * (C(1) + erf_(x * C(LUCID_SQRT1_2))) + x * (exp_(C(-0.5) * x * x) * C(0.5 * LUCID_2_SQRTPI * LUCID_SQRT1_2));
    case U_GeluTanhGrad: {
      const C k = C(LUCID_SQRT2 * LUCID_2_SQRTPI * 0.5), c = C(0.044715);
      const C x2 = x * x, t = tanh_(k * x * (C(1) + c * x2));
      return C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * k * (C(1) + C(3) * c * x2);
    }
    case U_SiluGrad: {
      const C s = C(1) / (C(1) + exp_(-x));
      return s * (C(1) + x * (C(1) - s));
    }
    default: return x;
  }
}
template <> __device__ __forceinline__ float unary_apply<float>(int op, float x) { return unary_float<float>(op, x); }
template <> __device__ __forceinline__ double unary_apply<double>(int op, double x) { return unary_float<double>(op, x); }
template <class C> __device__ __forceinline__ C unary_apply(int op, C x) {
  switch (op) {
    case U_Neg: return C(-x);
    case U_Abs: return x < 0 ? C(-x) : x;
    case U_Sign: return C((x > 0) - (x < 0));
    case U_Square: return C(x * x);
    case U_Relu: return x > 0 ? x : C(0);
    case U_BitNot: return C(~x);
    default: return x;
  }
}
template <class C> __device__ __forceinline__ bool unary_predicate(int op, C x) {
  switch (op) {
    case U_LogicalNot: return !x;
    case U_IsFinite: return isfinite(double(x));
    case U_IsNan: return x != x;
    case U_IsInf: return isinf(double(x));
    default: return false;
  }
}

template <class C> __device__ __forceinline__ C floor_div(C a, C b) {
  if (b == 0) return a / b;
  const C mod = fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= C(1);
  C fl;
  if (div != 0) {
    fl = floor(div);
    if (div - fl > C(0.5)) fl += C(1);
  } else {
    fl = copysign(C(0), a / b);
  }
  return fl;
}
template <class C> __device__ __forceinline__ C int_floor_div(C a, C b) {
  if (b == 0) return 0;
  C q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
template <class C> __device__ __forceinline__ C float_mod(C a, C b) {
  C r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class C> __device__ __forceinline__ C int_mod(C a, C b) {
  if (b == 0) return 0;
  C r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class C> __device__ __forceinline__ C int_pow(C base, C e) {
  if (e < 0) return base == 1 ? C(1) : (base == -1 ? ((e & 1) ? C(-1) : C(1)) : C(0));
  C r = 1;
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}

template <class C> __device__ __forceinline__ C binary_float(int op, C a, C b) {
  switch (op) {
    case B_Add: return a + b;
    case B_Sub: return a - b;
    case B_Mul: return a * b;
    case B_Div: return a / b;
    case B_FloorDiv: return floor_div(a, b);
    case B_Remainder: return float_mod(a, b);
    case B_Fmod: return fmod(a, b);
    case B_Pow: return pow(a, b);
    case B_Maximum: return (a != a || a > b) ? a : (b != b ? b : (a == b ? a : b));
    case B_Minimum: return (a != a || a < b) ? a : (b != b ? b : (a == b ? a : b));
    case B_Atan2: return atan2(a, b);
    default: return C(0);
  }
}
template <class C> __device__ __forceinline__ C binary_int(int op, C a, C b) {
  switch (op) {
    case B_Add: return C(a + b);
    case B_Sub: return C(a - b);
    case B_Mul: return C(a * b);
    case B_Div: return b == 0 ? C(0) : C(a / b);
    case B_FloorDiv: return int_floor_div(a, b);
    case B_Remainder: return int_mod(a, b);
    case B_Fmod: return b == 0 || (IsSigned<C>::value && b == C(-1)) ? C(0) : C(a % b);
    case B_BitAnd: return C(a & b);
    case B_BitOr: return C(a | b);
    case B_BitXor: return C(a ^ b);
    case B_LeftShift:  // PyTorch's: 0 past the width or for a negative count
      return (long long)b < 0 || (long long)b >= (long long)(sizeof(C) * 8) ? C(0) : C((unsigned long long)a << b);
    case B_RightShift:  // the sign fills past the width or for a negative count
      return (long long)b < 0 || (long long)b >= (long long)(sizeof(C) * 8) ? (IsSigned<C>::value ? C(a >> (sizeof(C) * 8 - 1)) : C(0))
                                                                          : C(a >> b);
    case B_Pow: return int_pow(a, b);
    case B_Maximum: return a > b ? a : b;
    case B_Minimum: return a < b ? a : b;
    default: return C(0);
  }
}
__device__ __forceinline__ bool binary_bool(int op, bool a, bool b) {
  switch (op) {
    case B_Add: return a + b;
    case B_Sub: return a - b;
    case B_Mul: return a && b;
    case B_Div: return b == 0 ? false : bool(int(a) / int(b));
    case B_FloorDiv: return a && b;
    case B_Remainder: return false;
    case B_BitAnd: return a && b;
    case B_BitOr: return a || b;
    case B_BitXor: return a != b;
    case B_Pow: return a || !b;
    case B_Maximum: return a > b ? a : b;
    case B_Minimum: return a < b ? a : b;
    default: return false;
  }
}
__device__ __forceinline__ float binary_apply(int op, float a, float b) { return binary_float<float>(op, a, b); }
__device__ __forceinline__ double binary_apply(int op, double a, double b) { return binary_float<double>(op, a, b); }
__device__ __forceinline__ u8 binary_apply(int op, u8 a, u8 b) { return binary_int<u8>(op, a, b); }
__device__ __forceinline__ i8 binary_apply(int op, i8 a, i8 b) { return binary_int<i8>(op, a, b); }
__device__ __forceinline__ i16 binary_apply(int op, i16 a, i16 b) { return binary_int<i16>(op, a, b); }
__device__ __forceinline__ i32 binary_apply(int op, i32 a, i32 b) { return binary_int<i32>(op, a, b); }
__device__ __forceinline__ i64 binary_apply(int op, i64 a, i64 b) { return binary_int<i64>(op, a, b); }
__device__ __forceinline__ bool binary_apply(int op, bool a, bool b) { return binary_bool(op, a, b); }
template <class C> __device__ __forceinline__ bool binary_predicate(int op, C a, C b) {
  switch (op) {
    case B_Eq: return a == b;
    case B_Ne: return a != b;
    case B_Lt: return a < b;
    case B_Le: return a <= b;
    case B_Gt: return a > b;
    case B_Ge: return a >= b;
    case B_LogicalAnd: return bool(a) && bool(b);
    case B_LogicalOr: return bool(a) || bool(b);
    case B_LogicalXor: return bool(a) != bool(b);
    default: return false;
  }
}

// Atomic addition for every element type (16-bit and bool through the
// 32-bit word holding them).
__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(i32* p, i32 v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(i64* p, i64 v) { atomicAdd((u64*)p, (u64)v); }
__device__ __forceinline__ void atomic_add(bool* p, bool v) {
  if (!v) return;
  u32* w = (u32*)((size_t)p & ~size_t(3));
  atomicOr(w, 1u << (8 * ((size_t)p & 3)));
}
// 8- and 16-bit integers: a compare-and-swap on the word holding them.
template <class T>
__device__ __forceinline__ void atomic_add_narrow(T* p, T v) {
  u32* w = (u32*)((size_t)p & ~size_t(3));
  const int shift = 8 * int((size_t)p & 3);
  const u32 mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
  u32 old = *w, assumed;
  do {
    assumed = old;
    const T next = T(T(assumed >> shift) + v);
    old = atomicCAS(w, assumed, (assumed & ~mask) | ((u32(next) << shift) & mask));
  } while (old != assumed);
}
__device__ __forceinline__ void atomic_add(u8* p, u8 v) { atomic_add_narrow(p, v); }
__device__ __forceinline__ void atomic_add(i8* p, i8 v) { atomic_add_narrow(p, v); }
__device__ __forceinline__ void atomic_add(i16* p, i16 v) { atomic_add_narrow(p, v); }
template <class T>
__device__ __forceinline__ void atomic_add16(T* p, float v) {
  u32* w = (u32*)((size_t)p & ~size_t(3));
  const int shift = ((size_t)p & 2) ? 16 : 0;
  u32 old = *w, assumed;
  do {
    assumed = old;
    T cur;
    cur.bits = u16(assumed >> shift);
    T next;
    st(&next, 0, ld(&cur, 0) + v);
    const u32 nw = (assumed & ~(0xffffu << shift)) | (u32(next.bits) << shift);
    old = atomicCAS(w, assumed, nw);
  } while (old != assumed);
}
__device__ __forceinline__ void atomic_add(f16* p, float v) { atomic_add16(p, v); }
__device__ __forceinline__ void atomic_add(bf16* p, float v) { atomic_add16(p, v); }

// Block-wide reductions (blockDim.x a multiple of 32, at most 1024 threads).
template <class A, class F>
__device__ __forceinline__ A warp_reduce(A v, F f) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <class A, class F>
__device__ __forceinline__ A block_reduce(A v, F f, A identity) {
  __shared__ A partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_reduce(v, f);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  A r = (threadIdx.x < (blockDim.x >> 5)) ? partial[lane] : identity;
  if (warp == 0) r = warp_reduce(r, f);
  if (threadIdx.x == 0) partial[0] = r;
  __syncthreads();
  return partial[0];
}
struct AddF { template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return a + b; } };
)CUDA";
}

}  // namespace lucid::cuda
