#include "lucid/backend/cpu/block_gemm.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "lucid/backend/cpu/blas.h"
#include "lucid/core/error.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#define LUCID_BLOCK_GEMM_SIMD 1
#else
#define LUCID_BLOCK_GEMM_SIMD 0
#endif

namespace lucid::cpu {

namespace {

template <class T>
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
               bool accumulate, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    blas::sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc);
  } else {
    blas::dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, accumulate ? 1.0 : 0.0, c, ldc);
  }
}

#if LUCID_BLOCK_GEMM_SIMD
// A register tile holds kAccumulators vectors of C (R rows by NV vectors,
// NV <= kMaxVecs) over the whole reduction: enough to cover the FMA
// latency, with the B vectors and a broadcast still in registers (32 on
// AVX-512, 16 on AVX2).
template <class T>
struct Simd;
#if defined(__AVX512F__)
template <>
struct Simd<float> {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16, kAccumulators = 24, kMaxVecs = 4, kDotRows = 4, kDotCols = 6;
  static Mask mask(int64_t n) { return n >= kLanes ? Mask(0xFFFF) : Mask((1u << std::max<int64_t>(n, 0)) - 1u); }
  static V zero() { return _mm512_setzero_ps(); }
  static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(V v) {  // (GCC 12's _mm512_reduce_add_ps warns of an uninitialised register)
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    float s = 0;
    for (int k = 0; k < 8; ++k) s += t[k] + t[k + 8];
    return s;
  }
};
template <>
struct Simd<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8, kAccumulators = 24, kMaxVecs = 4, kDotRows = 4, kDotCols = 6;
  static Mask mask(int64_t n) { return n >= kLanes ? Mask(0xFF) : Mask((1u << std::max<int64_t>(n, 0)) - 1u); }
  static V zero() { return _mm512_setzero_pd(); }
  static V broadcast(const double* p) { return _mm512_set1_pd(*p); }
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static V load(const double* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, V v, Mask m) { _mm512_mask_storeu_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static double sum(V v) {  // (GCC 12's _mm512_reduce_add_pd warns of an uninitialised register)
    alignas(64) double t[8];
    _mm512_store_pd(t, v);
    return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
  }
};
#else  // AVX2 + FMA: 16 registers
template <>
struct Simd<float> {
  using V = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8, kAccumulators = 12, kMaxVecs = 3, kDotRows = 3, kDotCols = 4;
  static Mask mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::clamp<int64_t>(n, 0, kLanes))),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V zero() { return _mm256_setzero_ps(); }
  static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(V v) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
  }
};
template <>
struct Simd<double> {
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int kLanes = 4, kAccumulators = 12, kMaxVecs = 3, kDotRows = 3, kDotCols = 4;
  static Mask mask(int64_t n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(std::clamp<int64_t>(n, 0, kLanes)), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V zero() { return _mm256_setzero_pd(); }
  static V broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V load(const double* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void store(double* p, V v, Mask m) { _mm256_maskstore_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static double sum(V v) {
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  }
};
#endif

// Reduction steps per pass over B's rows: a chunk of a column strip of B
// (kChunk rows) stays in L1 while every row tile of A goes over it.
constexpr int64_t kChunk = 128;

// Where a register tile reads A(r, kk), r < R (every row it reads, valid or
// not, must be readable; rows past the valid ones are computed and dropped):
//   Packed   a[kk * step + r]      a tile's rows side by side (packed, or A^T in place)
//   ByRows   a[r * step + kk]      rows of a row-major matrix
enum class AMode { Packed, ByRows };
template <class T>
struct AView {
  const T* a;
  int64_t step;
};
// Where it reads B's row kk: b + kk * ldb, or (`off` given) b + off[kk] —
// one buffer read at a shift per kk, a direct convolution's taps.
template <class T>
struct BView {
  const T* b;
  int64_t ldb;
  const int64_t* off;
};

// C[rows, cols] (+)= sum over kk < k of A(r, kk) B(kk, :), for a tile of R
// rows by NV vectors of columns held in registers over the whole reduction.
// B's rows are `ldb` apart and readable for all NV vectors; C's valid rows
// and columns are stored.
template <class T, AMode kMode, bool kShiftedB, int R, int NV>
void tile(AView<T> av, int64_t k0, BView<T> bv_, int64_t k, T* c, int64_t ldc, int64_t rows, int64_t cols,
          bool accumulate) {
  using S = Simd<T>;
  using V = typename S::V;
  constexpr int L = S::kLanes;
  typename S::Mask mask[NV];
  for (int v = 0; v < NV; ++v) mask[v] = S::mask(cols - v * L);
  V acc[R][NV];
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate && r < rows ? S::load(c + r * ldc + v * L, mask[v]) : S::zero();
  const T* a = av.a;
  const T* b = bv_.b + (kShiftedB ? 0 : k0 * bv_.ldb);
  for (int64_t kk = k0; kk < k0 + k; ++kk, b += kShiftedB ? 0 : bv_.ldb) {
    const T* bk = kShiftedB ? b + bv_.off[kk] : b;
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = S::load(bk + v * L);
    const T* ak = kMode == AMode::Packed ? a + kk * av.step : a + kk;
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r) {
      const V x = S::broadcast(kMode == AMode::ByRows ? ak + r * av.step : ak + r);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = S::fma(x, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    if (r < rows)
      for (int v = 0; v < NV; ++v) S::store(c + r * ldc + v * L, acc[r][v], mask[v]);
}

template <class T>
constexpr int rows_for(int nv) {
  return Simd<T>::kAccumulators / nv;
}

// C[m, n] (+)= A B over register tiles: columns in tiles of up to kMaxVecs
// vectors, rows in tiles of rows_for(vectors) (for packed A, those of the
// widest tile, its layout's), the reduction in chunks. A tile at row i0
// reads A from a.a + i0 * row_step; B's column tile j0 (a multiple of the
// tile width W) starts at b + (j0 / W) * b_strip, its rows `ldb` apart.
template <class T, AMode kMode, bool kShiftedB = false>
void product(int64_t m, int64_t n, int64_t k, AView<T> a, int64_t row_step, BView<T> b, int64_t b_strip,
             bool accumulate, T* c, int64_t ldc) {
  constexpr int64_t L = Simd<T>::kLanes, W = Simd<T>::kMaxVecs * L;
  for (int64_t j0 = 0; j0 < n; j0 += W) {
    const int64_t cols = std::min(W, n - j0);
    const int64_t nv = (cols + L - 1) / L;
    BView<T> bj = b;
    bj.b += (j0 / W) * b_strip;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int64_t kc = std::min(kChunk, k - k0);
      auto run = [&](auto nv_const) {
        // Packed A's tiles have the rows of the widest tile, whatever the width.
        constexpr int NV = decltype(nv_const)::value;
        constexpr int R = kMode == AMode::Packed ? rows_for<T>(Simd<T>::kMaxVecs) : rows_for<T>(NV);
        for (int64_t i0 = 0; i0 < m; i0 += R) {
          AView<T> at = a;
          at.a += i0 * row_step;
          tile<T, kMode, kShiftedB, R, NV>(at, k0, bj, kc, c + i0 * ldc + j0, ldc, std::min<int64_t>(R, m - i0), cols,
                                           accumulate || k0 > 0);
        }
      };
      switch (nv) {
        case 1: run(std::integral_constant<int, 1>()); break;
        case 2: run(std::integral_constant<int, 2>()); break;
        case 3: run(std::integral_constant<int, 3>()); break;
        default: run(std::integral_constant<int, Simd<T>::kMaxVecs>()); break;
      }
    }
  }
}

// Per-thread buffers, 64-byte aligned (a vector load never straddles two
// cache lines), reused across calls.
template <class T>
T* buffer(int slot, int64_t n) {
  thread_local std::vector<T> buffers[2];
  constexpr int64_t kAlign = 64 / sizeof(T);
  std::vector<T>& b = buffers[slot];
  if (int64_t(b.size()) < n + kAlign) b.resize(size_t(n + kAlign));
  const uintptr_t at = reinterpret_cast<uintptr_t>(b.data());
  return b.data() + ((64 - at % 64) % 64) / sizeof(T);
}

constexpr int kPanel = 0;  // buffer slots
constexpr int kEdge = 1;

// Rows of packed A per tile: those of a tile of kMaxVecs vectors.
template <class T>
constexpr int64_t packed_rows() {
  return rows_for<T>(Simd<T>::kMaxVecs);
}
#endif  // LUCID_BLOCK_GEMM_SIMD

}  // namespace

bool block_gemm_simd() { return LUCID_BLOCK_GEMM_SIMD; }

template <class T>
int64_t block_gemm_lanes() {
#if LUCID_BLOCK_GEMM_SIMD
  return Simd<T>::kLanes;
#else
  return 1;
#endif
}

template <class T>
int64_t block_gemm_strip(int64_t n) {
#if LUCID_BLOCK_GEMM_SIMD
  return Simd<T>::kLanes * Simd<T>::kMaxVecs;
#else
  return n;
#endif
}

// Packed A: tiles of packed_rows() rows, each [k][rows] (rows past m zero).
template <class T>
int64_t block_gemm_packed_size(int64_t m, int64_t k) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = packed_rows<T>();
  return (m + R - 1) / R * R * k;
#else
  return m * k;  // a row-major copy, for the BLAS
#endif
}

template <class T>
void block_gemm_pack(int64_t m, int64_t k, const T* a, int64_t lda, T* packed) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = packed_rows<T>();
  const int64_t tiles = (m + R - 1) / R;
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t r = 0; r < R; ++r) {
      T* dst = packed + t * k * R + r;
      const T* src = a + (t * R + r) * lda;
      for (int64_t kk = 0; kk < k; ++kk) dst[kk * R] = t * R + r < m ? src[kk] : T(0);
    }
#else
  for (int64_t i = 0; i < m; ++i) std::copy(a + i * lda, a + i * lda + k, packed + i * k);
#endif
}

template <class T>
void block_gemm_nn(int64_t m, int64_t n, int64_t k, const T* packed_a, const T* b, bool accumulate, T* c,
                   int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  // Packed tiles: the one at row i0 at packed_a + i0 * k, element (r, kk) at + kk * R + r.
  constexpr int64_t R = packed_rows<T>(), W = Simd<T>::kLanes * Simd<T>::kMaxVecs;
  product<T, AMode::Packed>(m, n, k, {packed_a, R}, k, {b, W, nullptr}, k * W, accumulate, c, ldc);
#else
  blas_gemm(false, false, m, n, k, packed_a, k, b, n, accumulate, c, ldc);
#endif
}

template <class T>
void block_gemm_tn(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, bool accumulate, T* c,
                   int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  // A^T(r, kk) = a[kk * lda + r]: packed-like in place, but for a last tile
  // of fewer rows (read from a zero-padded copy: its rows past m may not exist).
  constexpr int64_t R = packed_rows<T>(), W = Simd<T>::kLanes * Simd<T>::kMaxVecs;
  const int64_t full = m / R * R;
  if (full > 0) product<T, AMode::Packed>(full, n, k, {a, lda}, 1, {b, W, nullptr}, k * W, accumulate, c, ldc);
  if (full < m) {
    T* edge = buffer<T>(kEdge, k * R);
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t r = 0; r < R; ++r) edge[kk * R + r] = full + r < m ? a[kk * lda + full + r] : T(0);
    product<T, AMode::Packed>(m - full, n, k, {edge, R}, 0, {b, W, nullptr}, k * W, accumulate, c + full * ldc, ldc);
  }
#else
  blas_gemm(true, false, m, n, k, a, lda, b, n, accumulate, c, ldc);
#endif
}

template <class T>
void block_gemm_rows(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, bool accumulate,
                     T* c, int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t W = Simd<T>::kLanes * Simd<T>::kMaxVecs;
  // A's last rows, when fewer than the widest tile, from a zero-padded copy
  // (the rows past m may not exist).
  const int64_t rows = Simd<T>::kAccumulators, full = m / rows * rows;
  if (full > 0) product<T, AMode::ByRows>(full, n, k, {a, lda}, lda, {b, ldb, nullptr}, W, accumulate, c, ldc);
  if (full < m) {
    T* edge = buffer<T>(kEdge, rows * k);
    std::fill(edge, edge + rows * k, T(0));
    for (int64_t r = full; r < m; ++r) std::copy(a + r * lda, a + r * lda + k, edge + (r - full) * k);
    product<T, AMode::ByRows>(m - full, n, k, {edge, k}, k, {b, ldb, nullptr}, W, accumulate, c + full * ldc, ldc);
  }
#else
  blas_gemm(false, false, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
#endif
}

template <class T>
void block_gemm_nt(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, bool accumulate,
                   T* c, int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  // B^T [k, n], the small operand, copied once (its rows padded with zeros
  // to whole vectors).
  const int64_t width = (n + Simd<T>::kLanes - 1) / Simd<T>::kLanes * Simd<T>::kLanes;
  T* bt = buffer<T>(kPanel, k * width);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) bt[kk * width + j] = b[j * ldb + kk];
    std::fill(bt + kk * width + n, bt + (kk + 1) * width, T(0));
  }
  block_gemm_rows(m, n, k, a, lda, bt, width, accumulate, c, ldc);
#else
  blas_gemm(false, true, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
#endif
}

template <class T>
void block_gemm_shifted(int64_t m, int64_t n, int64_t k, const T* packed_a, const T* x, const int64_t* off,
                        bool accumulate, T* c, int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = packed_rows<T>(), W = Simd<T>::kLanes * Simd<T>::kMaxVecs;
  product<T, AMode::Packed, true>(m, n, k, {packed_a, R}, k, {x, 0, off}, W, accumulate, c, ldc);
#else
  fail<Error>("internal: block_gemm_shifted without SIMD tiles");
#endif
}

#if LUCID_BLOCK_GEMM_SIMD
namespace {
// C[rows, cols] (+)= sum over kk < k of A(r, kk) B(j, kk): dot products of
// R rows of A with NB rows of B, the vectors along the reduction, summed
// across lanes at the end. Rows past the valid ones read the last valid row.
template <class T, int R, int NB>
void dot_tile(const T* a, int64_t lda, const T* x, const int64_t* off, const Segments& seg, T* c, int64_t ldc,
              int64_t rows, int64_t cols, bool accumulate) {
  using S = Simd<T>;
  using V = typename S::V;
  constexpr int L = S::kLanes;
  const T* ar[R];
  const T* br[NB];
  for (int r = 0; r < R; ++r) ar[r] = a + std::min<int64_t>(r, rows - 1) * lda;
  for (int j = 0; j < NB; ++j) br[j] = x + off[std::min<int64_t>(j, cols - 1)];
  V acc[R][NB];
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) acc[r][j] = S::zero();
  auto step = [&](int64_t kk, auto load) {
    V av[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) av[r] = load(ar[r] + kk);
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) {
      const V bv = load(br[j] + kk);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][j] = S::fma(av[r], bv, acc[r][j]);
    }
  };
  for (int64_t s = 0; s < seg.count; ++s) {
    const int64_t k0 = s * seg.stride, k1 = k0 + seg.length;
    int64_t kk = k0;
    for (; kk + L <= k1; kk += L) step(kk, [](const T* p) { return S::load(p); });
    if (kk < k1) {
      const typename S::Mask m = S::mask(k1 - kk);
      step(kk, [m](const T* p) { return S::load(p, m); });
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NB; ++j)
      if (r < rows && j < cols) {
        T& out = c[r * ldc + j];
        out = (accumulate ? out : T(0)) + S::sum(acc[r][j]);
      }
}
}  // namespace
#endif

template <class T>
void block_gemm_dot_shifted(int64_t m, int64_t n, const Segments& k, const T* a, int64_t lda, const T* x,
                            const int64_t* off, bool accumulate, T* c, int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = Simd<T>::kDotRows, NB = Simd<T>::kDotCols;
  for (int64_t i0 = 0; i0 < m; i0 += R)
    for (int64_t j0 = 0; j0 < n; j0 += NB)
      dot_tile<T, R, NB>(a + i0 * lda, lda, x, off + j0, k, c + i0 * ldc + j0, ldc, std::min(R, m - i0),
                         std::min(NB, n - j0), accumulate);
#else
  fail<Error>("internal: block_gemm_dot_shifted without SIMD tiles");
#endif
}

#define LUCID_BLOCK_GEMM_INSTANTIATE(T)                                                                               \
  template int64_t block_gemm_lanes<T>();                                                                             \
  template int64_t block_gemm_strip<T>(int64_t);                                                                      \
  template void block_gemm_rows<T>(int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, bool, T*,       \
                                   int64_t);                                                                          \
  template int64_t block_gemm_packed_size<T>(int64_t, int64_t);                                                       \
  template void block_gemm_pack<T>(int64_t, int64_t, const T*, int64_t, T*);                                           \
  template void block_gemm_nn<T>(int64_t, int64_t, int64_t, const T*, const T*, bool, T*, int64_t);                    \
  template void block_gemm_tn<T>(int64_t, int64_t, int64_t, const T*, int64_t, const T*, bool, T*, int64_t);           \
  template void block_gemm_nt<T>(int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, bool, T*, int64_t);  \
  template void block_gemm_shifted<T>(int64_t, int64_t, int64_t, const T*, const T*, const int64_t*, bool, T*,      \
                                      int64_t);                                                                       \
  template void block_gemm_dot_shifted<T>(int64_t, int64_t, const Segments&, const T*, int64_t, const T*,            \
                                          const int64_t*, bool, T*, int64_t);
LUCID_BLOCK_GEMM_INSTANTIATE(float)
LUCID_BLOCK_GEMM_INSTANTIATE(double)
#undef LUCID_BLOCK_GEMM_INSTANTIATE

}  // namespace lucid::cpu
