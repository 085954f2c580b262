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

// Elements per vector register: rows of B or C read or written by whole
// vectors where a product says so (1 where the products call the BLAS).
template <class T>
int64_t block_gemm_lanes();

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

// C[m, n] = A B (+ C): A [m, k] row-major, large, read row by row in place
// (rows `lda` apart); B [k, n] row-major, rows readable to whole vectors.
template <class T>
void block_gemm_rows(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, bool accumulate,
                     T* c, int64_t ldc);

// Direct forms (only where block_gemm_simd()), for stride-1 convolutions:
// B's rows are one buffer read at a shift per row, B(kk, j) = x[off[kk] + j]
// (a convolution's taps over a band of input).
// C[m, n] = A B (+ C): A packed (block_gemm_pack); x readable to
// block_gemm_strip(n) columns past each row's last.
template <class T>
void block_gemm_shifted(int64_t m, int64_t n, int64_t k, const T* packed_a, const T* x, const int64_t* off,
                        bool accumulate, T* c, int64_t ldc);
// C[m, n] = A B^T (+ C), A [m, k] row-major, B(j, kk) = x[off[j] + kk]:
// dot products along the rows, the reduction over the segments of k (a
// band's positions, image by image, skipping the rows between images).
struct Segments {
  int64_t count, stride, length;  // kk in [s * stride, s * stride + length) for s < count
};
template <class T>
void block_gemm_dot_shifted(int64_t m, int64_t n, const Segments& k, const T* a, int64_t lda, const T* x,
                            const int64_t* off, bool accumulate, T* c, int64_t ldc);

}  // namespace lucid::cpu
