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
  // A subnormal's magnitude bits are 1..0x7f: one unsigned compare. Chunks
  // without an early exit inside vectorise; the scan stops at the first hit.
  constexpr int64_t kChunk = 4096;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t end = std::min(n, i0 + kChunk);
    uint16_t found = 0;
    for (int64_t i = i0; i < end; ++i) found |= uint16_t(uint16_t((x[i].bits & 0x7fffu) - 1u) < 0x7fu);
    if (found) return true;
  }
  return false;
}

#if LUCID_GEMM_BF16

bool has_gemm_bf16() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512bf16");
  return yes;
}

namespace {

// The instruction multiplies pairs of bf16 (two consecutive k) packed in a
// 32-bit word, low half first, and adds both products to a float32 lane. A
// register tile is R rows of C by V vectors of 16 columns: R * V = 24
// accumulators, V B vectors and one broadcast A word in the 32 registers.
// Narrow products (a head's 32 columns) take the narrower tiles.
//
// Cache blocks: kPairs k pairs of a B panel (16 columns per vector, at most
// 16 KiB) stay in L1 while kBlockRows rows of A stream through the tiles;
// C is accumulated across k blocks.
constexpr int64_t kPairs = 64, kBlockRows = 96;

inline uint32_t word_at(const BFloat16* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// A pair whose second element lies past k: the first alone.
inline uint32_t single_at(const BFloat16* p) { return p->bits; }

// Where a tile reads A: row r's pair q is the word at base + r * row + q * pair
// (in bf16 elements). Row-major A is read in place (row = lda, pair = 2);
// a packed block has row = 2, pair = 2 * kBlockRows.
struct AView {
  const BFloat16* base;
  int64_t row, pair;
};

// op(B)[k pairs kp0.., columns j0..j0+cols] -> one panel [pair][16 V] of
// words, columns past cols zero.
void pack_b_panel(bool trans, const BFloat16* b, int64_t ldb, int64_t k, int64_t kp0, int64_t pairs, int64_t j0,
                  int64_t cols, int64_t width, uint32_t* out) {
  for (int64_t q = 0; q < pairs; ++q) std::fill(out + q * width + cols, out + (q + 1) * width, 0u);
  const int64_t full = std::min(pairs, k / 2 - kp0);  // pairs with both elements
  if (trans) {  // B is [n, k]: a column's pairs are consecutive words
    for (int64_t c = 0; c < cols; ++c) {
      const BFloat16* col = b + (j0 + c) * ldb + 2 * kp0;
      for (int64_t q = 0; q < full; ++q) out[q * width + c] = word_at(col + 2 * q);
      if (full < pairs) out[full * width + c] = single_at(col + 2 * full);
    }
    return;
  }
  for (int64_t q = 0; q < pairs; ++q) {  // B is [k, n]: two rows interleaved
    const uint16_t* r0 = &b[(2 * (kp0 + q)) * ldb + j0].bits;
    uint32_t* dst = out + q * width;
    if (q < full) {
      const uint16_t* r1 = r0 + ldb;
      for (int64_t c = 0; c < cols; ++c) dst[c] = uint32_t(r0[c]) | uint32_t(r1[c]) << 16;
    } else {
      for (int64_t c = 0; c < cols; ++c) dst[c] = r0[c];
    }
  }
}

// op(A)[rows i0..i0+rows, k pairs kp0..] -> [pair][kBlockRows] words (row r
// of the block at word r), rows past `rows` up to `padded` zero.
void pack_a_block(bool trans, const BFloat16* a, int64_t lda, int64_t k, int64_t i0, int64_t rows, int64_t padded,
                  int64_t kp0, int64_t pairs, uint32_t* out) {
  const int64_t full = std::min(pairs, k / 2 - kp0);
  for (int64_t q = 0; q < pairs; ++q) std::fill(out + q * kBlockRows + rows, out + q * kBlockRows + padded, 0u);
  if (trans) {  // A is [k, m]: a row's pair is two rows of memory interleaved
    for (int64_t q = 0; q < pairs; ++q) {
      const uint16_t* r0 = &a[(2 * (kp0 + q)) * lda + i0].bits;
      uint32_t* dst = out + q * kBlockRows;
      if (q < full) {
        const uint16_t* r1 = r0 + lda;
        for (int64_t r = 0; r < rows; ++r) dst[r] = uint32_t(r0[r]) | uint32_t(r1[r]) << 16;
      } else {
        for (int64_t r = 0; r < rows; ++r) dst[r] = r0[r];
      }
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {  // A is [m, k]: a row's pairs are consecutive words
    const BFloat16* row = a + (i0 + r) * lda + 2 * kp0;
    for (int64_t q = 0; q < full; ++q) out[q * kBlockRows + r] = word_at(row + 2 * q);
    if (full < pairs) out[full * kBlockRows + r] = single_at(row + 2 * full);
  }
}

// C[rows, cols] (+)= A rows x panel over `pairs` k pairs; rows <= R, cols <=
// 16 V (the tile computes all R rows and 16 V columns and stores these).
template <int R, int V>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void tile(AView a, const uint32_t* b, int64_t pairs,
                                                                   float* c, int64_t ldc, int64_t rows,
                                                                   int64_t cols, bool accumulate) {
  __m512 acc[R][V];
  __mmask16 mask[V];
  for (int v = 0; v < V; ++v) {
    const int64_t left = std::clamp<int64_t>(cols - 16 * v, 0, 16);
    mask[v] = __mmask16((1u << left) - 1u);
  }
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      acc[r][v] = accumulate && r < rows ? _mm512_maskz_loadu_ps(mask[v], c + r * ldc + 16 * v) : _mm512_setzero_ps();
  const BFloat16* ap = a.base;
  for (int64_t q = 0; q < pairs; ++q, ap += a.pair, b += 16 * V) {
    __m512bh bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + 16 * v);
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(int(word_at(ap + r * a.row)));
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask[v], acc[r][v]);
}

template <int R, int V>
void gemm_tiled(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
                const BFloat16* b, int64_t ldb, float* c, int64_t ldc) {
  static_assert(kBlockRows % R == 0, "a row block is whole strips");
  constexpr int64_t width = 16 * V;
  thread_local std::vector<uint32_t> b_packed, a_packed;
  const int64_t all_pairs = (k + 1) / 2, panels = (n + width - 1) / width;
  // Row-major A with even k is read in place (its pairs are words of the
  // matrix); a strip of fewer than R rows is packed (a tile reads R rows).
  const bool in_place = !trans_a && k % 2 == 0;
  for (int64_t kp0 = 0; kp0 < all_pairs; kp0 += kPairs) {
    const int64_t pairs = std::min(kPairs, all_pairs - kp0);
    b_packed.resize(size_t(panels * pairs * width));
    for (int64_t p = 0; p < panels; ++p)
      pack_b_panel(trans_b, b, ldb, k, kp0, pairs, p * width, std::min(width, n - p * width), width,
                   b_packed.data() + p * pairs * width);
    for (int64_t i0 = 0; i0 < m; i0 += kBlockRows) {
      const int64_t rows = std::min(kBlockRows, m - i0), strips = (rows + R - 1) / R;
      const int64_t direct = in_place ? rows / R : 0;  // strips read in place
      if (direct < strips) {
        const int64_t first = direct * R;
        a_packed.resize(size_t(pairs * kBlockRows));
        pack_a_block(trans_a, a, lda, k, i0 + first, rows - first, strips * R - first, kp0, pairs,
                     a_packed.data());
      }
      for (int64_t p = 0; p < panels; ++p) {
        const uint32_t* panel = b_packed.data() + p * pairs * width;
        const int64_t cols = std::min(width, n - p * width);
        for (int64_t s = 0; s < strips; ++s) {
          const AView view = s < direct ? AView{a + (i0 + s * R) * lda + 2 * kp0, lda, 2}
                                        : AView{reinterpret_cast<const BFloat16*>(a_packed.data()) +
                                                    2 * (s - direct) * R,
                                                2, 2 * kBlockRows};
          tile<R, V>(view, panel, pairs, c + (i0 + s * R) * ldc + p * width, ldc, std::min<int64_t>(R, rows - s * R),
                     cols, kp0 > 0);
        }
      }
    }
  }
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
  if (n > 32)
    gemm_tiled<6, 4>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  else if (n > 16)
    gemm_tiled<12, 2>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  else
    gemm_tiled<24, 1>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
}

#else

bool has_gemm_bf16() { return false; }

void gemm_bf16(bool, bool, int64_t, int64_t, int64_t, const BFloat16*, int64_t, const BFloat16*, int64_t, float*,
               int64_t) {
  fail<Error>("internal: gemm_bf16 needs an x86-64 CPU with AVX512_BF16");
}

#endif

}  // namespace lucid::cpu
