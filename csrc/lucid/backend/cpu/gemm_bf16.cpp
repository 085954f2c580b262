#include "lucid/backend/cpu/gemm_bf16.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "lucid/core/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define LUCID_GEMM_BF16 1
#endif

namespace lucid::cpu {

bool has_subnormal(const BFloat16* x, int64_t n) {
  bool found = false;  // no early exit: the loop vectorises
  for (int64_t i = 0; i < n; ++i) found |= (x[i].bits & 0x7f80u) == 0 && (x[i].bits & 0x007fu) != 0;
  return found;
}

#if LUCID_GEMM_BF16

bool has_gemm_bf16() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512bf16");
  return yes;
}

namespace {

// Register tile: 6 rows of C by 64 columns (4 vectors of 16 floats): 24
// accumulators, 4 B vectors and one broadcast A pair fill 29 of the 32
// registers. The operands are packed as the instruction reads them, a pair
// of bf16 in each 32-bit word: B as [k pair][column] (a vector holds 16
// columns' pairs), A as [k pair][row] (a row's pair is broadcast).
constexpr int64_t kRows = 6, kCols = 64;
// Cache blocks: kPairs k-pairs of a 64-column B panel (64 KiB) stay in L2
// while each 6-row A strip (6 KiB) streams through L1; kBlockRows rows of A
// are packed at a time.
constexpr int64_t kPairs = 256, kBlockRows = 96;

// The pair (x[i0], x[i1]) of bf16 bit patterns as one 32-bit word (low half
// first, as the instruction reads it); a missing second element is 0.
uint32_t pair_at(const BFloat16* x, int64_t i0, int64_t i1, bool has_second) {
  return uint32_t(x[i0].bits) | (has_second ? uint32_t(x[i1].bits) << 16 : 0u);
}

// op(B)[k pairs kp0.., all n columns] -> panels of kCols columns, zero-padded.
void pack_b(bool trans, const BFloat16* b, int64_t ldb, int64_t k, int64_t n, int64_t kp0, int64_t pairs,
            uint32_t* out) {
  const int64_t panels = (n + kCols - 1) / kCols;
  for (int64_t p = 0; p < panels; ++p) {
    uint32_t* panel = out + p * pairs * kCols;
    const int64_t j0 = p * kCols, cols = std::min(kCols, n - j0);
    for (int64_t q = 0; q < pairs; ++q) {
      uint32_t* row = panel + q * kCols;
      const int64_t k0 = 2 * (kp0 + q);
      const bool second = k0 + 1 < k;
      if (trans) {  // B is [n, k]: a column's pair is adjacent in memory
        for (int64_t c = 0; c < cols; ++c) row[c] = pair_at(b, (j0 + c) * ldb + k0, (j0 + c) * ldb + k0 + 1, second);
      } else {      // B is [k, n]: two rows interleaved
        const BFloat16* r0 = b + k0 * ldb + j0;
        const BFloat16* r1 = second ? r0 + ldb : r0;
        for (int64_t c = 0; c < cols; ++c) row[c] = uint32_t(r0[c].bits) | (second ? uint32_t(r1[c].bits) << 16 : 0u);
      }
      std::fill(row + cols, row + kCols, 0u);
    }
  }
}

// op(A)[rows i0..i0+rows, k pairs kp0..] -> strips of kRows rows, zero-padded.
void pack_a(bool trans, const BFloat16* a, int64_t lda, int64_t k, int64_t i0, int64_t rows, int64_t kp0,
            int64_t pairs, uint32_t* out) {
  const int64_t strips = (rows + kRows - 1) / kRows;
  for (int64_t s = 0; s < strips; ++s) {
    uint32_t* strip = out + s * pairs * kRows;
    const int64_t here = std::min(kRows, rows - s * kRows), first = i0 + s * kRows;
    for (int64_t q = 0; q < pairs; ++q) {
      const int64_t k0 = 2 * (kp0 + q);
      const bool second = k0 + 1 < k;
      uint32_t* dst = strip + q * kRows;
      for (int64_t r = 0; r < here; ++r) {
        const int64_t i = first + r;
        dst[r] = trans ? pair_at(a, k0 * lda + i, (k0 + 1) * lda + i, second)
                       : pair_at(a, i * lda + k0, i * lda + k0 + 1, second);
      }
      for (int64_t r = here; r < kRows; ++r) dst[r] = 0;
    }
  }
}

// C[rows, cols] (+)= strip x panel over `pairs` k pairs; rows <= kRows,
// cols <= kCols (the rest of the tile is computed on zero padding, not stored).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void tile(const uint32_t* a, const uint32_t* b,
                                                                   int64_t pairs, float* c, int64_t ldc,
                                                                   int64_t rows, int64_t cols, bool accumulate) {
  __m512 acc[kRows][4];
  __mmask16 mask[4];
  for (int v = 0; v < 4; ++v) {
    const int64_t left = std::clamp<int64_t>(cols - 16 * v, 0, 16);
    mask[v] = __mmask16((1u << left) - 1u);
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v)
      acc[r][v] = accumulate && r < rows ? _mm512_maskz_loadu_ps(mask[v], c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    const uint32_t* bq = b + q * kCols;
    __m512bh bv[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(bq + 16 * v);
    const uint32_t* aq = a + q * kRows;
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(int(aq[r]));
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int v = 0; v < 4; ++v) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask[v], acc[r][v]);
}

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
               const BFloat16* b, int64_t ldb, float* c, int64_t ldc) {
  LUCID_CHECK(has_gemm_bf16(), "internal: gemm_bf16 on a CPU without AVX512_BF16");
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  thread_local std::vector<uint32_t> b_packed;
  thread_local std::vector<uint32_t> a_packed;
  const int64_t all_pairs = (k + 1) / 2, panels = (n + kCols - 1) / kCols;
  for (int64_t kp0 = 0; kp0 < all_pairs; kp0 += kPairs) {
    const int64_t pairs = std::min(kPairs, all_pairs - kp0);
    b_packed.resize(size_t(panels * pairs * kCols));
    pack_b(trans_b, b, ldb, k, n, kp0, pairs, b_packed.data());
    for (int64_t i0 = 0; i0 < m; i0 += kBlockRows) {
      const int64_t rows = std::min(kBlockRows, m - i0), strips = (rows + kRows - 1) / kRows;
      a_packed.resize(size_t(strips * pairs * kRows));
      pack_a(trans_a, a, lda, k, i0, rows, kp0, pairs, a_packed.data());
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t s = 0; s < strips; ++s)
          tile(a_packed.data() + s * pairs * kRows, b_packed.data() + p * pairs * kCols, pairs,
               c + (i0 + s * kRows) * ldc + p * kCols, ldc, std::min(kRows, rows - s * kRows),
               std::min(kCols, n - p * kCols), kp0 > 0);
    }
  }
}

#else

bool has_gemm_bf16() { return false; }

void gemm_bf16(bool, bool, int64_t, int64_t, int64_t, const BFloat16*, int64_t, const BFloat16*, int64_t, float*,
               int64_t) {
  fail<Error>("internal: gemm_bf16 needs an x86-64 CPU with AVX512_BF16");
}

#endif

}  // namespace lucid::cpu
