// Reductions and row kernels: Reduce, ArgReduce, Softmax(Backward),
// LayerNorm(Backward). Each works on the [outer, r, inner] form of its
// input: with inner == 1 one block folds a row; otherwise Reduce folds a
// tile of 32 columns per block (reduce_column_launch), the others one
// column per thread (adjacent threads read adjacent columns).
#include "lucid/backend/cuda/sources.h"

namespace lucid::cuda {

extern const char* const kReduceSource = R"CUDA(
// ReduceOp numbering (ops/primitives.h): Sum, Prod, Max, Min, All, Any.
template <class A> struct SumF { __device__ A init() const { return A(0); } __device__ A operator()(A a, A b) const { return a + b; } };
template <class A> struct ProdF { __device__ A init() const { return A(1); } __device__ A operator()(A a, A b) const { return a * b; } };
// A NaN wins and stays (the CPU fold, order-independent).
template <class A> struct MaxF { __device__ A init() const { return lowest_value<A>(); }
  __device__ A operator()(A acc, A v) const { return (v > acc || v != v) && acc == acc ? v : acc; } };
template <class A> struct MinF { __device__ A init() const { return highest_value<A>(); }
  __device__ A operator()(A acc, A v) const { return (v < acc || v != v) && acc == acc ? v : acc; } };
struct AllF { __device__ int init() const { return 1; } __device__ int operator()(int a, int b) const { return a & b; } };
struct AnyF { __device__ int init() const { return 0; } __device__ int operator()(int a, int b) const { return a | b; } };

struct ReduceArgs { const void* x; void* out; i64 outer, r, inner; int op; };

// One partial fold per thread of a column block (at most 32 warps of 32).
template <class A>
__device__ __forceinline__ A* column_partials() {
  __shared__ A part[32 * 32];
  return part;
}

template <class T, class A, class F>
__device__ __forceinline__ void reduce_with(const ReduceArgs& a, F f) {
  const T* x = (const T*)a.x;
  if (a.inner == 1) {
    for (i64 row = blockIdx.x; row < a.outer; row += gridDim.x) {
      A acc = f.init();
      for (i64 k = threadIdx.x; k < a.r; k += blockDim.x) acc = f(acc, A(ld(x, row * a.r + k)));
      acc = block_reduce(acc, f, f.init());
      if (threadIdx.x == 0) st((T*)a.out, row, acc);
    }
    return;
  }
  // Columns: a block folds 32 adjacent columns (coalesced reads), each of
  // its warps every slices-th row, and the warps' partial folds combine in
  // a fixed order (deterministic), so a few long columns (a bias gradient)
  // spread over a whole block instead of a thread each.
  A* part = column_partials<A>();
  const int lane = threadIdx.x & 31, slice = threadIdx.x >> 5, slices = blockDim.x >> 5;
  const i64 tiles = (a.inner + 31) / 32;
  for (i64 t = blockIdx.x; t < a.outer * tiles; t += gridDim.x) {  // block-uniform
    const i64 o = t / tiles, in = (t % tiles) * 32 + lane;
    A acc = f.init();
    if (in < a.inner) {
      const T* base = x + o * a.r * a.inner + in;
      for (i64 k = slice; k < a.r; k += slices) acc = f(acc, A(ld(base, k * a.inner)));
    }
    part[slice * 32 + lane] = acc;
    __syncthreads();
    if (slice == 0 && in < a.inner) {
      for (int w = 1; w < slices; ++w) acc = f(acc, part[w * 32 + lane]);
      st((T*)a.out, o * a.inner + in, acc);
    }
    __syncthreads();
  }
}
template <class T>
__device__ __forceinline__ void reduce_impl(const ReduceArgs& a) {
  typedef typename Compute<T>::type A;
  switch (a.op) {
    case 0: reduce_with<T, A>(a, SumF<A>()); break;
    case 1: reduce_with<T, A>(a, ProdF<A>()); break;
    case 2: reduce_with<T, A>(a, MaxF<A>()); break;
    case 3: reduce_with<T, A>(a, MinF<A>()); break;
  }
}
#define DEF(T, S) extern "C" __global__ void reduce_##S(const ReduceArgs a) { reduce_impl<T>(a); }
LUCID_FOR_NUMERIC_TYPES(DEF)
#undef DEF
#if LUCID_UNTYPED_SHARD
extern "C" __global__ void reduce_all(const ReduceArgs a) { reduce_with<bool, int>(a, AllF()); }
extern "C" __global__ void reduce_any(const ReduceArgs a) { reduce_with<bool, int>(a, AnyF()); }
#endif

// Index of the first maximum (minimum); a NaN wins at its first occurrence.
struct ArgReduceArgs { const void* x; i64* out; i64 outer, r, inner; int is_max; };
template <class T>
__device__ __forceinline__ void arg_reduce_impl(const ArgReduceArgs& a) {
  typedef typename Compute<T>::type C;
  for (i64 q = global_index(); q < a.outer * a.inner; q += global_stride()) {
    const T* base = (const T*)a.x + (q / a.inner) * a.r * a.inner + q % a.inner;
    C best = ld(base, 0);
    i64 bi = 0;
    for (i64 k = 1; k < a.r; ++k) {
      const C v = ld(base, k * a.inner);
      if (best != best) break;
      if (v != v || (a.is_max ? v > best : v < best)) {
        best = v;
        bi = k;
      }
    }
    a.out[q] = bi;
  }
}
#define DEF(T, S) extern "C" __global__ void arg_reduce_##S(const ArgReduceArgs a) { arg_reduce_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF

template <class A> struct MaxSkipNaN { __device__ A operator()(A a, A b) const { return b > a ? b : a; } };

// Softmax / log-softmax along r. A NaN anywhere makes the row NaN (through
// the sum); an all -inf row uses max 0 so exp stays defined.
struct SoftmaxArgs { const void* x; void* y; i64 outer, r, inner; int log; };
template <class T>
__device__ __forceinline__ void softmax_impl(const SoftmaxArgs& a) {
  typedef typename Compute<T>::type A;
  const T* x = (const T*)a.x;
  T* y = (T*)a.y;
  if (a.inner == 1) {
    for (i64 row = blockIdx.x; row < a.outer; row += gridDim.x) {
      const T* xs = x + row * a.r;
      T* ys = y + row * a.r;
      A mx = lowest_value<A>();
      for (i64 k = threadIdx.x; k < a.r; k += blockDim.x) { const A v = ld(xs, k); mx = v > mx ? v : mx; }
      mx = block_reduce(mx, MaxSkipNaN<A>(), lowest_value<A>());
      if (isinf(mx) && mx < 0) mx = 0;
      A total = 0;
      for (i64 k = threadIdx.x; k < a.r; k += blockDim.x) total += exp_(A(ld(xs, k)) - mx);
      total = block_reduce(total, AddF(), A(0));
      if (a.log) {
        const A lse = log(total);
        for (i64 k = threadIdx.x; k < a.r; k += blockDim.x) st(ys, k, (A(ld(xs, k)) - mx) - lse);
      } else {
        const A inv = A(1) / total;
        for (i64 k = threadIdx.x; k < a.r; k += blockDim.x) st(ys, k, exp_(A(ld(xs, k)) - mx) * inv);
      }
    }
    return;
  }
  for (i64 q = global_index(); q < a.outer * a.inner; q += global_stride()) {
    const i64 base = (q / a.inner) * a.r * a.inner + q % a.inner;
    A mx = lowest_value<A>();
    for (i64 k = 0; k < a.r; ++k) { const A v = ld(x, base + k * a.inner); mx = v > mx ? v : mx; }
    if (isinf(mx) && mx < 0) mx = 0;
    A total = 0;
    for (i64 k = 0; k < a.r; ++k) total += exp_(A(ld(x, base + k * a.inner)) - mx);
    if (a.log) {
      const A lse = log(total);
      for (i64 k = 0; k < a.r; ++k) st(y, base + k * a.inner, (A(ld(x, base + k * a.inner)) - mx) - lse);
    } else {
      const A inv = A(1) / total;
      for (i64 k = 0; k < a.r; ++k) st(y, base + k * a.inner, exp_(A(ld(x, base + k * a.inner)) - mx) * inv);
    }
  }
}
#define DEF(T, S) extern "C" __global__ void softmax_##S(const SoftmaxArgs a) { softmax_impl<T>(a); }
LUCID_FOR_FLOAT_TYPES(DEF)
#undef DEF

// (g, y) -> y * (g - sum(g * y)), or g - exp(y) * sum(g) for log-softmax.
struct SoftmaxBackwardArgs { const void* g; const void* y; void* dx; i64 outer, r, inner; int log; };
template <class T>
__device__ __forceinline__ void softmax_backward_impl(const SoftmaxBackwardArgs& a) {
  typedef typename Compute<T>::type A;
  const T* g = (const T*)a.g;
  const T* y = (const T*)a.y;
  T* dx = (T*)a.dx;
  if (a.inner == 1) {
    for (i64 row = blockIdx.x; row < a.outer; row += gridDim.x) {
      const i64 base = row * a.r;
      A s = 0;
      for (i64 k = threadIdx.x; k < a.r; k += blockDim.x)
        s += a.log ? A(ld(g, base + k)) : A(ld(g, base + k)) * A(ld(y, base + k));
      s = block_reduce(s, AddF(), A(0));
      for (i64 k = threadIdx.x; k < a.r; k += blockDim.x) {
        const A gv = ld(g, base + k), yv = ld(y, base + k);
        st(dx, base + k, a.log ? A(gv - exp_(yv) * s) : A(yv * (gv - s)));
      }
    }
    return;
  }
  for (i64 q = global_index(); q < a.outer * a.inner; q += global_stride()) {
    const i64 base = (q / a.inner) * a.r * a.inner + q % a.inner;
    A s = 0;
    for (i64 k = 0; k < a.r; ++k) {
      const i64 p = base + k * a.inner;
      s += a.log ? A(ld(g, p)) : A(ld(g, p)) * A(ld(y, p));
    }
    for (i64 k = 0; k < a.r; ++k) {
      const i64 p = base + k * a.inner;
      const A gv = ld(g, p), yv = ld(y, p);
      st(dx, p, a.log ? A(gv - exp_(yv) * s) : A(yv * (gv - s)));
    }
  }
}
#define DEF(T, S) extern "C" __global__ void softmax_backward_##S(const SoftmaxBackwardArgs a) { softmax_backward_impl<T>(a); }
LUCID_FOR_FLOAT_TYPES(DEF)
#undef DEF

// LayerNorm over rows of d: xhat = (x - mean) * rstd, rstd = 1/sqrt(var + eps).
struct LayerNormArgs { const void* x; void* xhat; void* mean; void* rstd; i64 rows, d; double eps; };
template <class T>
__device__ __forceinline__ void layer_norm_impl(const LayerNormArgs& a) {
  typedef typename Compute<T>::type A;
  for (i64 row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xs = (const T*)a.x + row * a.d;
    A s = 0;
    for (i64 k = threadIdx.x; k < a.d; k += blockDim.x) s += A(ld(xs, k));
    const A mu = block_reduce(s, AddF(), A(0)) / A(a.d);
    A sq = 0;
    for (i64 k = threadIdx.x; k < a.d; k += blockDim.x) { const A v = A(ld(xs, k)) - mu; sq += v * v; }
    const A rs = A(1) / sqrt(block_reduce(sq, AddF(), A(0)) / A(a.d) + A(a.eps));
    T* ys = (T*)a.xhat + row * a.d;
    for (i64 k = threadIdx.x; k < a.d; k += blockDim.x) st(ys, k, (A(ld(xs, k)) - mu) * rs);
    if (threadIdx.x == 0) {
      st((T*)a.mean, row, mu);
      st((T*)a.rstd, row, rs);
    }
  }
}
#define DEF(T, S) extern "C" __global__ void layer_norm_##S(const LayerNormArgs a) { layer_norm_impl<T>(a); }
LUCID_FOR_FLOAT_TYPES(DEF)
#undef DEF

// LayerNormBackward's formula (ops/norm.h): (g, x, mean, rstd) -> rstd * g + b * x + c.
struct LayerNormBackwardArgs { const void* g; const void* x; const void* mean; const void* rstd; void* dx; i64 rows, d; };
template <class T>
__device__ __forceinline__ void layer_norm_backward_impl(const LayerNormBackwardArgs& a) {
  typedef typename Compute<T>::type A;
  for (i64 row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* gs = (const T*)a.g + row * a.d;
    const T* xs = (const T*)a.x + row * a.d;
    A sg = 0, sgx = 0;
    for (i64 k = threadIdx.x; k < a.d; k += blockDim.x) {
      const A gv = ld(gs, k), xv = ld(xs, k);
      sg += gv;
      sgx += gv * xv;
    }
    const A sum_g = block_reduce(sg, AddF(), A(0));
    const A sum_gx = block_reduce(sgx, AddF(), A(0));
    const A mu = ld((const T*)a.mean, row), rs = ld((const T*)a.rstd, row), scale = A(1) / A(a.d);
    const A coef_x = (sum_g * mu - sum_gx) * rs * rs * rs * scale;
    const A shift = -coef_x * mu - sum_g * rs * scale;
    T* out = (T*)a.dx + row * a.d;
    for (i64 k = threadIdx.x; k < a.d; k += blockDim.x) st(out, k, rs * A(ld(gs, k)) + coef_x * A(ld(xs, k)) + shift);
  }
}
#define DEF(T, S) extern "C" __global__ void layer_norm_backward_##S(const LayerNormBackwardArgs a) { layer_norm_backward_impl<T>(a); }
LUCID_FOR_FLOAT_TYPES(DEF)
#undef DEF
)CUDA";

}  // namespace lucid::cuda
