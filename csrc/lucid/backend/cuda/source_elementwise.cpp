// Elementwise, creation and layout kernels.
#include "lucid/backend/cuda/sources.h"

namespace lucid::cuda {

extern const char* const kElementwiseSource = R"CUDA(
struct UnaryArgs { const void* x; void* out; i64 n; int op; };
template <class T>
__device__ __forceinline__ void unary_impl(const UnaryArgs& a) {
  typedef typename Compute<T>::type C;
  const T* x = (const T*)a.x;
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    if (unary_is_predicate(a.op)) ((bool*)a.out)[i] = unary_predicate<C>(a.op, C(ld(x, i)));
    else st((T*)a.out, i, unary_apply<C>(a.op, C(ld(x, i))));
  }
}
#define DEF(T, S) extern "C" __global__ void unary_##S(const UnaryArgs a) { unary_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF

// Broadcasting binary op. mode 0: both operands row-major in the output's
// shape; 1: operand b is one element; 2: general (strides in ix).
struct BinaryArgs { const void* a; const void* b; void* out; i64 n; int op; int mode; Indexer ix; Strides<2> s; };
template <class T>
__device__ __forceinline__ void binary_impl(const BinaryArgs& a) {
  typedef typename Compute<T>::type C;
  const T* pa = (const T*)a.a;
  const T* pb = (const T*)a.b;
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    i64 off[2] = {i, i};
    if (a.mode == 1) off[1] = 0;
    else if (a.mode == 2) offsets_of<2>(a.ix, a.s, i, off);
    const C x = C(ld(pa, off[0])), y = C(ld(pb, off[1]));
    if (binary_is_predicate(a.op)) ((bool*)a.out)[i] = binary_predicate<C>(a.op, x, y);
    else st((T*)a.out, i, binary_apply(a.op, x, y));
  }
}
#define DEF(T, S) extern "C" __global__ void binary_##S(const BinaryArgs a) { binary_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF

// where(c, a, b), moving elements of width W.
struct WhereArgs { const bool* c; const void* a; const void* b; void* out; i64 n; Indexer ix; Strides<3> s; };
template <class W>
__device__ __forceinline__ void where_impl(const WhereArgs& a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    i64 off[3];
    offsets_of<3>(a.ix, a.s, i, off);
    ((W*)a.out)[i] = a.c[off[0]] ? ((const W*)a.a)[off[1]] : ((const W*)a.b)[off[2]];
  }
}
#define DEF(W, S) extern "C" __global__ void where_##S(const WhereArgs a) { where_impl<W>(a); }
LUCID_FOR_WIDTHS(DEF)
#undef DEF

struct CastArgs { const void* x; void* out; i64 n; };
template <class From, class To>
__device__ __forceinline__ void cast_impl(const CastArgs& a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    const typename Compute<From>::type v = ld((const From*)a.x, i);
    typedef typename Compute<From>::type V;
    if constexpr (Same<To, bool>::value) ((bool*)a.out)[i] = v != V(0);
    else if constexpr (IsFloat<From>::value && !IsFloat<To>::value && sizeof(To) <= 2) ((To*)a.out)[i] = narrow_float<To>(v);
    else if constexpr (IsFloat<From>::value && !IsFloat<To>::value) st((To*)a.out, i, v != v ? V(0) : v);
    else st((To*)a.out, i, v);
  }
}
#define DEF2(F, FS, T, TS) extern "C" __global__ void cast_##FS##_##TS(const CastArgs a) { cast_impl<F, T>(a); }
#define DEF(F, FS) DEF2(F, FS, bool, b8) DEF2(F, FS, u8, u8) DEF2(F, FS, i8, i8) DEF2(F, FS, i16, i16) DEF2(F, FS, i32, i32) DEF2(F, FS, i64, i64) DEF2(F, FS, f16, f16) \
  DEF2(F, FS, bf16, bf16) DEF2(F, FS, float, f32) DEF2(F, FS, double, f64)
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF
#undef DEF2

struct FillArgs { void* out; i64 n; u64 pattern; };
#define DEF(W, S) extern "C" __global__ void fill_##S(const FillArgs a) { \
  for (i64 i = global_index(); i < a.n; i += global_stride()) ((W*)a.out)[i] = (W)a.pattern; }
LUCID_FOR_WIDTHS(DEF)
#undef DEF

struct ArangeArgs { void* out; i64 n; double start, step; };
template <class T>
__device__ __forceinline__ void arange_impl(const ArangeArgs& a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    const double v = a.start + double(i) * a.step;
    if constexpr (IsFloat<T>::value || Same<T, bool>::value) st((T*)a.out, i, v);
    else ((T*)a.out)[i] = T(u64(i64(v)));  // integers wrap, as the CPU's
  }
}
#define DEF(T, S) extern "C" __global__ void arange_##S(const ArangeArgs a) { arange_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF

// Philox 4x32-10 (core/philox.h): element i of a draw is a function of
// (seed, offset + i), so the device draws the host's numbers.
struct PhiloxBlock { u32 v[4]; };
__device__ __forceinline__ PhiloxBlock philox4x32(u64 counter, u64 seed) {
  u32 c0 = u32(counter), c1 = u32(counter >> 32), c2 = 0, c3 = 0;
  u32 k0 = u32(seed), k1 = u32(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const u64 p0 = u64(0xD2511F53u) * c0;
    const u64 p1 = u64(0xCD9E8D57u) * c2;
    const u32 n0 = u32(p1 >> 32) ^ c1 ^ k0;
    const u32 n2 = u32(p0 >> 32) ^ c3 ^ k1;
    c1 = u32(p1);
    c3 = u32(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  PhiloxBlock b;
  b.v[0] = c0; b.v[1] = c1; b.v[2] = c2; b.v[3] = c3;
  return b;
}
struct RandomArgs { const i64* key; void* out; i64 n; int normal; };
template <class T>
__device__ __forceinline__ void random_impl(const RandomArgs& a) {
  const u64 seed = u64(a.key[0]), offset = u64(a.key[1]);
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    float v;
    if (!a.normal) {
      v = float(philox4x32(offset + u64(i) / 4, seed).v[u64(i) % 4] >> 8) * (1.0f / 16777216.0f);
    } else {
      const PhiloxBlock b = philox4x32(offset + u64(i) / 2, seed);
      const u32* u = b.v + 2 * (u64(i) % 2);
      const double u1 = (double(u[0]) + 1.0) * (1.0 / 4294967296.0);
      const double u2 = double(u[1]) * (1.0 / 4294967296.0);
      v = float(sqrt(-2.0 * log(u1)) * cos(2.0 * LUCID_PI * u2));
    }
    st((T*)a.out, i, v);
  }
}
#define DEF(T, S) extern "C" __global__ void random_##S(const RandomArgs a) { random_impl<T>(a); }
LUCID_FOR_FLOAT_TYPES(DEF)
#undef DEF

// Copies between two layouts of one shape: dst[ix] = src[ix].
struct StridedCopyArgs { void* dst; const void* src; i64 n; i64 dst_offset, src_offset; Indexer ix; Strides<2> s; };
template <class W>
__device__ __forceinline__ void strided_copy_impl(const StridedCopyArgs& a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    i64 off[2];
    offsets_of<2>(a.ix, a.s, i, off);
    ((W*)a.dst)[a.dst_offset + off[0]] = ((const W*)a.src)[a.src_offset + off[1]];
  }
}
#define DEF(W, S) extern "C" __global__ void strided_copy_##S(const StridedCopyArgs a) { strided_copy_impl<W>(a); }
LUCID_FOR_WIDTHS(DEF)
#undef DEF

// The copies a device table lists, as (dst, src, bytes) triples: a compiled
// step's arguments in and results out, whose addresses change from call to
// call while the captured graph that copies them stays the same.
struct CopyListArgs { const u64* table; int count; };
#if LUCID_UNTYPED_SHARD
extern "C" __global__ void copy_list(const CopyListArgs a) {
  for (int c = 0; c < a.count; ++c) {
    const u64 dst = a.table[3 * c], src = a.table[3 * c + 1], n = a.table[3 * c + 2];
    if (((dst | src | n) & 15) == 0) {
      for (u64 i = global_index(); i < n / 16; i += global_stride()) ((uint4*)dst)[i] = ((const uint4*)src)[i];
    } else {
      for (u64 i = global_index(); i < n; i += global_stride()) ((u8*)dst)[i] = ((const u8*)src)[i];
    }
  }
}
#endif

// dst[layout] += src (row-major): overlapping positions add up.
template <class T>
__device__ __forceinline__ void add_at_layout_impl(const StridedCopyArgs& a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    i64 off[2];
    offsets_of<2>(a.ix, a.s, i, off);
    atomic_add((T*)a.dst + a.dst_offset + off[0], ld((const T*)a.src, a.src_offset + off[1]));
  }
}
#define DEF(T, S) extern "C" __global__ void add_at_layout_##S(const StridedCopyArgs a) { add_at_layout_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF

// Matrix products of integer and bool matrices (floats go to cuBLAS).
struct MatmulArgs { const void* a; const void* b; void* c; i64 batch, m, n, k; int trans_a, trans_b; };
template <class T>
__device__ __forceinline__ void matmul_impl(const MatmulArgs& a) {
  typedef typename Compute<T>::type C;
  const i64 total = a.batch * a.m * a.n, lda = a.trans_a ? a.m : a.k, ldb = a.trans_b ? a.k : a.n;
  for (i64 q = global_index(); q < total; q += global_stride()) {
    const i64 bi = q / (a.m * a.n), i = (q / a.n) % a.m, j = q % a.n;
    const T* A = (const T*)a.a + bi * a.m * a.k;
    const T* B = (const T*)a.b + bi * a.k * a.n;
    C acc = 0;
    for (i64 p = 0; p < a.k; ++p)
      acc += C(ld(A, a.trans_a ? p * lda + i : i * lda + p)) * C(ld(B, a.trans_b ? j * ldb + p : p * ldb + j));
    st((T*)a.c + bi * a.m * a.n, i * a.n + j, acc);
  }
}
#define DEF(T, S) extern "C" __global__ void matmul_##S(const MatmulArgs a) { matmul_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF
)CUDA";

}  // namespace lucid::cuda
