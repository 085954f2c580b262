#pragma once
// Matrix products over blocks that sit in cache (a convolution's unfolded
// input block, a band of output gradient), for the convolution kernels.
// BLAS copies both operands into packed panels on every call; when the
// large operand was just written into cache for this product alone, its
// producer can write it in the layout the register tiles read (column
// strips), and that copy is saved. Register tiles on AVX-512 or AVX2+FMA
// where the compiler targets them; elsewhere these call the BLAS (and
// strips are whole rows). Row-major, single-threaded (the caller splits the
// work), float or double.
#include <cstdint>

namespace lucid::cpu {

// The column-strip width the products read B in: B[k, n] is stored as
// strips of `width` columns, strip s holding rows 0..k-1 of columns
// [s * width, s * width + width) one after the other, so element (kk, j)
// lies at b[(j / width) * (k * width) + kk * width + j % width] (the last
// strip has its full width). It is n itself — B plain row-major — where
// the products call the BLAS.
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

}  // namespace lucid::cpu
