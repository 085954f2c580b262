#pragma once
// The BLAS the CPU backend calls: OpenBLAS (scipy-openblas32) on Linux, or
// MKL (the mkl wheel) when built with LUCID_BLAS=MKL; Accelerate on Apple.
#include <cstdint>

namespace lucid::cpu::blas {

void set_threads(int n);
// Row-major C[M,N] = alpha * op(A) op(B) + beta * C, with leading dimensions.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// `batch` independent sgemms whose operands are `stride_*` elements apart
// (one call to MKL's batched GEMM; a loop elsewhere).
void sgemm_batch(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                 int64_t stride_c, int64_t batch);
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// Row-major B[M,N] := op(A)^-1 B (`left`) or B op(A)^-1, A triangular.
void trsm(bool left, bool upper, bool trans_a, bool unit_diagonal, int64_t m, int64_t n, const float* a,
          int64_t lda, float* b, int64_t ldb);
void trsm(bool left, bool upper, bool trans_a, bool unit_diagonal, int64_t m, int64_t n, const double* a,
          int64_t lda, double* b, int64_t ldb);

}  // namespace lucid::cpu::blas
