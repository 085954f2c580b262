#pragma once
// The LAPACK routines the CPU backend calls, from the library that is its
// BLAS (blas.h): scipy-openblas32 on Linux (symbols prefixed `scipy_`), MKL,
// or Accelerate on Apple. Column-major, 32-bit integers; each returns
// LAPACK's `info` and sizes its own workspace.
#include <cstdint>

namespace lucid::cpu::lapack {

#define LUCID_LAPACK_DECLARE(T)                                                                               \
  int getrf(int m, int n, T* a, int lda, int* ipiv);                                                       \
  int getrs(bool trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb);             \
  int getri(int n, T* a, int lda, const int* ipiv);                                                        \
  int potrf(bool upper, int n, T* a, int lda);                                                             \
  int geqrf(int m, int n, T* a, int lda, T* tau);                                                          \
  int orgqr(int m, int n, int k, T* a, int lda, const T* tau);                                             \
  int syevd(bool upper, int n, T* a, int lda, T* w);                                                       \
  int gesdd(bool full, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt);
LUCID_LAPACK_DECLARE(float)
LUCID_LAPACK_DECLARE(double)
#undef LUCID_LAPACK_DECLARE

}  // namespace lucid::cpu::lapack
