#include "lucid/backend/cpu/block_gemm.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "lucid/backend/cpu/blas.h"

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
// One register tile: kRows rows of C by kVecs vectors of columns, held in
// registers over the whole reduction (24 or 12 accumulators: the FMA
// latency covered, the register file not exceeded).
template <class T>
struct Simd;
#if defined(__AVX512F__)
template <>
struct Simd<float> {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16, kRows = 12, kVecs = 2;
  static Mask mask(int64_t n) { return n >= kLanes ? Mask(0xFFFF) : Mask((1u << std::max<int64_t>(n, 0)) - 1u); }
  static V zero() { return _mm512_setzero_ps(); }
  static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
};
template <>
struct Simd<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8, kRows = 12, kVecs = 2;
  static Mask mask(int64_t n) { return n >= kLanes ? Mask(0xFF) : Mask((1u << std::max<int64_t>(n, 0)) - 1u); }
  static V zero() { return _mm512_setzero_pd(); }
  static V broadcast(const double* p) { return _mm512_set1_pd(*p); }
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static V load(const double* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, V v, Mask m) { _mm512_mask_storeu_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
};
#else  // AVX2 + FMA: 16 registers
template <>
struct Simd<float> {
  using V = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8, kRows = 6, kVecs = 2;
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
};
template <>
struct Simd<double> {
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int kLanes = 4, kRows = 6, kVecs = 2;
  static Mask mask(int64_t n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(std::clamp<int64_t>(n, 0, kLanes)), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V zero() { return _mm256_setzero_pd(); }
  static V broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V load(const double* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void store(double* p, V v, Mask m) { _mm256_maskstore_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
};
#endif

// Reduction steps per pass over B's rows: a chunk of a column strip of B
// (kChunk rows) stays in L1 while every row tile of A goes over it.
constexpr int64_t kChunk = 256;

// C[rows, cols] (+)= sum over kk < k of A(r, kk) B(kk, :), for the tile's
// kRows rows and kVecs vectors of columns (the valid ones stored). B's rows
// are `ldb` apart. A(r, kk) lies at a[kk * step + r] (packed: a tile's rows
// side by side) or, kByRows, at a[r * step + kk] (rows of a row-major
// matrix); every row the tile reads, valid or not, must be readable.
template <class T, bool kByRows, bool kFull>
void tile(const T* a, int64_t step, const T* b, int64_t ldb, int64_t k, T* c, int64_t ldc, int64_t rows, int64_t cols,
          bool accumulate) {
  using S = Simd<T>;
  using V = typename S::V;
  constexpr int R = S::kRows, NV = S::kVecs, L = S::kLanes;
  typename S::Mask mask[NV];
  for (int v = 0; v < NV; ++v) mask[v] = S::mask(cols - v * L);
  V acc[R][NV];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate && r < rows ? S::load(c + r * ldc + v * L, mask[v]) : S::zero();
  for (int64_t kk = 0; kk < k; ++kk, b += ldb) {
    V bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = kFull ? S::load(b + v * L) : S::load(b + v * L, mask[v]);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const V av = S::broadcast(kByRows ? a + r * step + kk : a + kk * step + r);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = S::fma(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    if (r < rows)
      for (int v = 0; v < NV; ++v) S::store(c + r * ldc + v * L, acc[r][v], mask[v]);
}

template <class T, bool kByRows>
void tile_any(const T* a, int64_t step, const T* b, int64_t ldb, int64_t k, T* c, int64_t ldc, int64_t rows,
              int64_t cols, bool accumulate) {
  if (cols == Simd<T>::kLanes * Simd<T>::kVecs)
    tile<T, kByRows, true>(a, step, b, ldb, k, c, ldc, rows, cols, accumulate);
  else
    tile<T, kByRows, false>(a, step, b, ldb, k, c, ldc, rows, cols, accumulate);
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

constexpr int64_t kPanel = 0;  // buffer slots
constexpr int64_t kEdge = 1;

// C = A' B for B [k, n] in strips, with A'(r, kk) at
// a[(r / kRows) * tile_stride + kk * step + r % kRows]: tiles of kRows rows
// side by side for each kk (a packed A, or A^T of a row-major A). Where
// `padded`, rows up to a whole tile are readable (zeros); else a last tile
// of fewer rows is read from a zero-padded copy.
template <class T>
void gemm_tiled_a(int64_t m, int64_t n, int64_t k, const T* a, int64_t step, int64_t tile_stride, bool padded,
                  const T* b, bool accumulate, T* c, int64_t ldc) {
  constexpr int64_t R = Simd<T>::kRows, NR = Simd<T>::kLanes * Simd<T>::kVecs;
  const int64_t full = padded ? m : m / R * R;
  T* edge = nullptr;
  if (full < m) {
    edge = buffer<T>(kEdge, k * R);
    const T* src = a + (full / R) * tile_stride;
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t r = 0; r < R; ++r) edge[kk * R + r] = r < m - full ? src[kk * step + r] : T(0);
  }
  for (int64_t j0 = 0; j0 < n; j0 += NR) {
    const int64_t cols = std::min(NR, n - j0);
    const T* strip = b + (j0 / NR) * k * NR;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int64_t kc = std::min(kChunk, k - k0);
      for (int64_t i0 = 0; i0 < m; i0 += R) {
        const bool in_edge = i0 >= full;
        tile_any<T, false>(in_edge ? edge + k0 * R : a + (i0 / R) * tile_stride + k0 * step, in_edge ? R : step,
                           strip + k0 * NR, NR, kc, c + i0 * ldc + j0, ldc, std::min(R, m - i0), cols,
                           accumulate || k0 > 0);
      }
    }
  }
}
#endif  // LUCID_BLOCK_GEMM_SIMD

}  // namespace

template <class T>
int64_t block_gemm_strip(int64_t n) {
#if LUCID_BLOCK_GEMM_SIMD
  return Simd<T>::kLanes * Simd<T>::kVecs;
#else
  return n;
#endif
}

// Packed A: tiles of kRows rows, each [k][kRows] (rows past m zero).
template <class T>
int64_t block_gemm_packed_size(int64_t m, int64_t k) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = Simd<T>::kRows;
  return (m + R - 1) / R * R * k;
#else
  return m * k;  // a row-major copy, for the BLAS
#endif
}

template <class T>
void block_gemm_pack(int64_t m, int64_t k, const T* a, int64_t lda, T* packed) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = Simd<T>::kRows;
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
  constexpr int64_t R = Simd<T>::kRows;
  gemm_tiled_a(m, n, k, packed_a, R, k * R, true, b, accumulate, c, ldc);
#else
  blas_gemm(false, false, m, n, k, packed_a, k, b, n, accumulate, c, ldc);
#endif
}

template <class T>
void block_gemm_tn(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, bool accumulate, T* c,
                   int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = Simd<T>::kRows;
  gemm_tiled_a(m, n, k, a, lda, R, false, b, accumulate, c, ldc);  // A^T(r, kk) = a[kk * lda + r]
#else
  blas_gemm(true, false, m, n, k, a, lda, b, n, accumulate, c, ldc);
#endif
}

template <class T>
void block_gemm_nt(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, bool accumulate,
                   T* c, int64_t ldc) {
#if LUCID_BLOCK_GEMM_SIMD
  constexpr int64_t R = Simd<T>::kRows, NR = Simd<T>::kLanes * Simd<T>::kVecs;
  // B^T [k, n], the small operand, copied once into strips.
  const int64_t strips = (n + NR - 1) / NR;
  T* bt = buffer<T>(kPanel, strips * k * NR);
  for (int64_t j = 0; j < n; ++j) {
    T* dst = bt + (j / NR) * k * NR + j % NR;
    const T* src = b + j * ldb;
    for (int64_t kk = 0; kk < k; ++kk) dst[kk * NR] = src[kk];
  }
  // A's last rows, when fewer than a tile, from a zero-padded copy.
  const int64_t full = m / R * R;
  T* edge = nullptr;
  if (full < m) {
    edge = buffer<T>(kEdge, R * k);
    std::fill(edge, edge + R * k, T(0));
    for (int64_t r = full; r < m; ++r) std::copy(a + r * lda, a + r * lda + k, edge + (r - full) * k);
  }
  for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
    const int64_t kc = std::min(kChunk, k - k0);
    for (int64_t i0 = 0; i0 < m; i0 += R) {
      const bool in_edge = i0 >= full;
      for (int64_t j0 = 0; j0 < n; j0 += NR)
        tile_any<T, true>(in_edge ? edge + k0 : a + i0 * lda + k0, in_edge ? k : lda, bt + (j0 / NR) * k * NR + k0 * NR,
                          NR, kc, c + i0 * ldc + j0, ldc, std::min(R, m - i0), std::min(NR, n - j0),
                          accumulate || k0 > 0);
    }
  }
#else
  blas_gemm(false, true, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
#endif
}

#define LUCID_BLOCK_GEMM_INSTANTIATE(T)                                                                              \
  template int64_t block_gemm_strip<T>(int64_t);                                                                     \
  template int64_t block_gemm_packed_size<T>(int64_t, int64_t);                                                      \
  template void block_gemm_pack<T>(int64_t, int64_t, const T*, int64_t, T*);                                          \
  template void block_gemm_nn<T>(int64_t, int64_t, int64_t, const T*, const T*, bool, T*, int64_t);                   \
  template void block_gemm_tn<T>(int64_t, int64_t, int64_t, const T*, int64_t, const T*, bool, T*, int64_t);          \
  template void block_gemm_nt<T>(int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, bool, T*, int64_t);
LUCID_BLOCK_GEMM_INSTANTIATE(float)
LUCID_BLOCK_GEMM_INSTANTIATE(double)
#undef LUCID_BLOCK_GEMM_INSTANTIATE

}  // namespace lucid::cpu
