#pragma once
// Matrix products over blocks that sit in cache, for the convolution
// kernels. BLAS copies both operands into packed panels on every call; here
// the large operand is read where its producer wrote it — an unfolded input
// block written in column strips, a band of input read at each kernel tap's
// shift (a direct convolution), rows read in place — and only small
// operands (weights, a transposed gradient block) are ever copied. Register
// tiles on AVX-512 or AVX2+FMA where the compiler targets them
// (block_gemm_simd()); elsewhere the strip products call the BLAS (strips
// are then whole rows) and the direct forms are absent. Row-major,
// single-threaded (the caller splits the work), float or double.
#include <cstdint>

namespace lucid::cpu {

// Whether the register tiles are built (and so the direct forms below exist).
bool block_gemm_simd();

// A row of B or C holds whole vectors: n columns rounded up to
// block_gemm_width(n), the extra ones zero in B (and written, with garbage,
// in C) where a product says so.
template <class T>
int64_t block_gemm_width(int64_t n);
// Rows (positions) a tile computes at once, at most: a direct product reads
// its buffer up to this many positions past the last one.
template <class T>
int64_t block_gemm_tile_rows();

// The column-strip width the strip products read B in: B[k, n] is stored
// as strips of `width` columns, strip s holding rows 0..k-1 of columns
// [s * width, s * width + width) one after the other, so element (kk, j)
// lies at b[(j / width) * (k * width) + kk * width + j % width]; the last
// strip is allocated whole, its extra columns readable. It is n itself — B
// plain row-major — where the products call the BLAS.
template <class T>
int64_t block_gemm_strip(int64_t n);

// A [m, k] packed for block_gemm_nn into block_gemm_packed_size(m, k) elements.
template <class T>
int64_t block_gemm_packed_size(int64_t m, int64_t k);
template <class T>
void block_gemm_pack(int64_t m, int64_t k, const T* a, int64_t lda, T* packed);

// C[m, n] = A B (+ C where `accumulate`): A packed, B [k, n] in strips.
template <class T>
void block_gemm_nn(int64_t m, int64_t n, int64_t k, const T* packed_a, const T* b, bool accumulate, T* c,
                   int64_t ldc);

// C[m, n] = A^T B (+ C): A [k, m] row-major (read transposed in place), B [k, n] in strips.
template <class T>
void block_gemm_tn(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, bool accumulate, T* c,
                   int64_t ldc);

// C[m, n] = A B^T (+ C): A [m, k] row-major, large, read row by row in
// place; B [n, k] row-major, small (copied transposed once per call).
template <class T>
void block_gemm_nt(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, bool accumulate,
                   T* c, int64_t ldc);

// Direct forms (only where block_gemm_simd()):
// C[e, j] (+)= sum over kk < k of x[off[kk] + e] B[kk, j] for e < m, j < n:
// one buffer read at a shift per reduction step (a stride-1 convolution's
// taps over a band of input). B's rows (`ldb` apart) readable to
// block_gemm_width(n); C's rows (`ldc` apart) written to that width.
template <class T>
void block_gemm_shifted(int64_t m, int64_t n, int64_t k, const T* x, const int64_t* off, const T* b, int64_t ldb,
                        bool accumulate, T* c, int64_t ldc);
// C[m, n] (+)= A B: A [m, k] read row by row in place (rows `lda` apart),
// B [k, n] row-major, readable to block_gemm_width(n); C written to that width.
template <class T>
void block_gemm_rows(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, bool accumulate,
                     T* c, int64_t ldc);

}  // namespace lucid::cpu
