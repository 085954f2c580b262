#include "lucid/backend/cpu/gemm_bf16.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lucid/core/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define LUCID_GEMM_BF16 1
#endif
#if LUCID_GEMM_BF16 && defined(__linux__) && defined(__GNUC__) && (__GNUC__ >= 11 || defined(__clang__))
#include <sys/syscall.h>
#include <unistd.h>
#define LUCID_GEMM_AMX 1
#else
#define LUCID_GEMM_AMX 0
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

#if LUCID_GEMM_AMX
// AMX (Sapphire Rapids and later): tile registers of 16 rows by 64 bytes
// and tdpbf16ps, which multiplies a 16x32 bf16 tile of A by a 32x16 tile of
// B (pairs of k interleaved, as vdpbf16ps reads them) into a 16x16 float32
// tile: 16 times the work of one vdpbf16ps. The process must ask Linux for
// the tile state first.
std::atomic<bool> amx_allowed{true};

bool has_amx() {
  if (!amx_allowed.load(std::memory_order_relaxed)) return false;
  static const bool yes = [] {
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return yes;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Operands packed into words (a pair of k, low half first), zero-padded to
// whole tiles and laid out tile after tile, each tile's 16 rows of 16 words
// contiguous: a tile load reads 1 KiB at a 64-byte stride (rows of the
// matrices themselves, often a power of two apart, would fall into the same
// cache sets). Tile (t, u) of op(A) holds rows 16 t.. and pairs 16 u.. (a
// row per matrix row); tile (t, u) of op(B) holds columns 16 t.. and pairs
// 16 u.. (a row per pair). Each tile is written whole, one after another;
// word_at_(o, q) reads the word of row or column o (outer: rows of A,
// columns of B) and pair q, inside the matrix (the rest is zero).
template <class WordAt>
void pack_tiles(int64_t outer, int64_t pairs, int64_t outer_tiles, int64_t q_tiles, bool pair_is_row, WordAt&& word_at_,
                uint32_t* out) {
  for (int64_t t = 0; t < outer_tiles; ++t)
    for (int64_t u = 0; u < q_tiles; ++u) {
      uint32_t* tile = out + (t * q_tiles + u) * 256;
      const int64_t rows = std::clamp<int64_t>(outer - 16 * t, 0, 16), cols = std::clamp<int64_t>(pairs - 16 * u, 0, 16);
      if (rows < 16 || cols < 16) std::fill(tile, tile + 256, 0u);
      for (int64_t o = 0; o < rows; ++o)
        for (int64_t q = 0; q < cols; ++q) {
          const uint32_t w = word_at_(16 * t + o, 16 * u + q);
          tile[pair_is_row ? q * 16 + o : o * 16 + q] = w;
        }
    }
}

// op(X)'s word (row or column `o`, pair q) of a matrix stored as [o][k]
// (pairs consecutive in memory) or as [k][o] (a pair from two rows).
struct PairReader {
  const BFloat16* x;
  int64_t ld, k;
  bool k_major;  // stored [k][o]
  uint32_t operator()(int64_t o, int64_t q) const {
    const int64_t kk = 2 * q;
    if (k_major) {
      const uint32_t lo = x[kk * ld + o].bits;
      return kk + 1 < k ? lo | uint32_t(x[(kk + 1) * ld + o].bits) << 16 : lo;
    }
    return kk + 1 < k ? word_at(x + o * ld + kk) : single_at(x + o * ld + kk);
  }
};

void pack_a_words(bool trans, const BFloat16* a, int64_t lda, int64_t m, int64_t k, int64_t mp, int64_t qp,
                  uint32_t* out) {
  pack_tiles(m, (k + 1) / 2, mp / 16, qp / 16, false, PairReader{a, lda, k, trans}, out);
}

void pack_b_words(bool trans, const BFloat16* b, int64_t ldb, int64_t n, int64_t k, int64_t qp, int64_t np,
                  uint32_t* out) {
  pack_tiles(n, (k + 1) / 2, np / 16, qp / 16, true, PairReader{b, ldb, k, !trans}, out);
}

// C blocks of 32x32 in four accumulator tiles (0-3), two A tiles (4, 5) and
// two B tiles (6, 7) per 32 k; each element sums its k in order. C is
// float32, or bfloat16 rounded from the tiles' float32 as they are stored
// (a third of the memory traffic of a float32 C rounded after).
template <class TC>
__attribute__((target("amx-tile,amx-bf16"))) void gemm_amx(bool trans_a, bool trans_b, int64_t m, int64_t n,
                                                            int64_t k, const BFloat16* a, int64_t lda,
                                                            const BFloat16* b, int64_t ldb, TC* c, int64_t ldc) {
  const int64_t mp = (m + 31) / 32 * 32, np = (n + 31) / 32 * 32, qp = ((k + 1) / 2 + 15) / 16 * 16;
  // Row-major A whose k fills whole tiles is read in place (its rows are
  // the tiles' rows) down to its last whole block of 32 rows, unless its
  // rows lie a multiple of 4 KiB apart (a tile's rows in one cache set);
  // the rest of A is packed.
  const bool a_in_place = !trans_a && k % 32 == 0 && (lda * 2) % 4096 != 0;
  const int64_t a_direct_rows = a_in_place ? m / 32 * 32 : 0;
  thread_local std::vector<uint32_t> a_words, b_words;
  a_words.resize(size_t((mp - a_direct_rows) * qp));
  b_words.resize(size_t(qp * np));
  pack_a_words(trans_a, trans_a ? a + a_direct_rows : a + a_direct_rows * lda, lda, m - a_direct_rows, k,
               mp - a_direct_rows, qp, a_words.data());
  pack_b_words(trans_b, b, ldb, n, k, qp, np, b_words.data());
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.bytes_per_row[t] = 64;
  }
  _tile_loadconfig(&cfg);
  alignas(64) float block[32 * 32];
  const uint32_t* aw = a_words.data();
  const uint32_t* bw = b_words.data();
  // The reduction in chunks of kChunkPairs pairs: over a chunk, a block's 32
  // rows of A and a panel's 32 columns of B take 64 KiB each, in L2 (the
  // panel stays there while the blocks of rows stream through it); longer
  // chunks would spill, shorter ones store and reload C more often (1 KiB
  // chunks measured 1.3x slower on k = 2048). Sums between chunks wait in
  // float32 in `partial`.
  constexpr int64_t kChunkPairs = 512;
  const int64_t chunks = (qp + kChunkPairs - 1) / kChunkPairs, q_tiles = qp / 16;
  const int64_t ldp = np + 16;  // not a power of two apart either
  thread_local std::vector<float> partial_sums;
  if (chunks > 1) partial_sums.resize(size_t(mp * ldp));
  float* const partial = partial_sums.data();
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t q_begin = chunk * kChunkPairs, q_end = std::min(qp, q_begin + kChunkPairs);
    const bool first = chunk == 0, last = chunk == chunks - 1;
    for (int64_t j0 = 0; j0 < np; j0 += 32)
      for (int64_t i0 = 0; i0 < mp; i0 += 32) {
        float* sums = partial + i0 * ldp + j0;
        if (first) {
          _tile_zero(0);
          _tile_zero(1);
          _tile_zero(2);
          _tile_zero(3);
        } else {
          _tile_loadd(0, sums, ldp * 4);
          _tile_loadd(1, sums + 16, ldp * 4);
          _tile_loadd(2, sums + 16 * ldp, ldp * 4);
          _tile_loadd(3, sums + 16 * ldp + 16, ldp * 4);
        }
        for (int64_t q0 = q_begin; q0 < q_end; q0 += 16) {
          if (i0 < a_direct_rows) {
            const BFloat16* rows_at = a + i0 * lda + 2 * q0;
            _tile_loadd(4, rows_at, lda * 2);
            _tile_loadd(5, rows_at + 16 * lda, lda * 2);
          } else {
            const int64_t t = (i0 - a_direct_rows) / 16;
            _tile_loadd(4, aw + (t * q_tiles + q0 / 16) * 256, 64);
            _tile_loadd(5, aw + ((t + 1) * q_tiles + q0 / 16) * 256, 64);
          }
          _tile_loadd(6, bw + ((j0 / 16) * q_tiles + q0 / 16) * 256, 64);
          _tile_loadd(7, bw + ((j0 / 16 + 1) * q_tiles + q0 / 16) * 256, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        if (!last) {
          _tile_stored(0, sums, ldp * 4);
          _tile_stored(1, sums + 16, ldp * 4);
          _tile_stored(2, sums + 16 * ldp, ldp * 4);
          _tile_stored(3, sums + 16 * ldp + 16, ldp * 4);
          continue;
        }
        const int64_t rows = std::min<int64_t>(32, m - i0), cols = std::min<int64_t>(32, n - j0);
        // A whole float32 block is stored in place; others pass through `block`.
        const bool direct = std::is_same_v<TC, float> && rows == 32 && cols == 32;
        float* dst = direct ? reinterpret_cast<float*>(c) + i0 * ldc + j0 : block;
        const int64_t ld = direct ? ldc : 32;
        _tile_stored(0, dst, ld * 4);
        _tile_stored(1, dst + 16, ld * 4);
        _tile_stored(2, dst + 16 * ld, ld * 4);
        _tile_stored(3, dst + 16 * ld + 16, ld * 4);
        if (!direct)
          for (int64_t r = 0; r < rows; ++r) {
            if constexpr (std::is_same_v<TC, float>)
              std::copy(block + r * 32, block + r * 32 + cols, c + (i0 + r) * ldc + j0);
            else
              float_to_bf16(block + r * 32, c + (i0 + r) * ldc + j0, cols);
          }
      }
  }
  _tile_release();
}
#endif

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
               const BFloat16* b, int64_t ldb, float* c, int64_t ldc) {
  LUCID_CHECK(has_gemm_bf16(), "internal: gemm_bf16 on a CPU without AVX512_BF16");
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
#if LUCID_GEMM_AMX
  if (has_amx()) return gemm_amx(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
#endif
  if (n > 32)
    gemm_tiled<6, 4>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  else if (n > 16)
    gemm_tiled<12, 2>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  else
    gemm_tiled<24, 1>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
}

bool has_gemm_bf16_rounded() {
#if LUCID_GEMM_AMX
  return has_amx();
#else
  return false;
#endif
}

void set_gemm_bf16_amx(bool allowed) {
#if LUCID_GEMM_AMX
  amx_allowed.store(allowed, std::memory_order_relaxed);
#endif
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
               const BFloat16* b, int64_t ldb, BFloat16* c, int64_t ldc) {
  LUCID_CHECK(has_gemm_bf16_rounded(), "internal: gemm_bf16 to bfloat16 on a CPU without AMX");
#if LUCID_GEMM_AMX
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, BFloat16{0});
    return;
  }
  gemm_amx(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
#endif
}

#else

bool has_gemm_bf16() { return false; }
bool has_gemm_bf16_rounded() { return false; }
void set_gemm_bf16_amx(bool) {}

void gemm_bf16(bool, bool, int64_t, int64_t, int64_t, const BFloat16*, int64_t, const BFloat16*, int64_t, BFloat16*,
               int64_t) {
  fail<Error>("internal: gemm_bf16 to bfloat16 needs an x86-64 CPU with AMX");
}

void gemm_bf16(bool, bool, int64_t, int64_t, int64_t, const BFloat16*, int64_t, const BFloat16*, int64_t, float*,
               int64_t) {
  fail<Error>("internal: gemm_bf16 needs an x86-64 CPU with AVX512_BF16");
}

#endif

}  // namespace lucid::cpu
