#include "lucid/backend/cpu/blas.h"

#include "lucid/core/error.h"

#if defined(LUCID_BLAS_ACCELERATE)
#include <Accelerate/Accelerate.h>
#define LUCID_CBLAS(name) cblas_##name
#elif defined(LUCID_BLAS_OPENBLAS)
#include <cblas.h>
#define LUCID_CBLAS(name) scipy_cblas_##name
#else
#error "no BLAS selected"
#endif

namespace lucid::cpu::blas {

void set_threads(int n) {
#if defined(LUCID_BLAS_OPENBLAS)
  scipy_openblas_set_num_threads(n);
#else
  (void)n;
#endif
}

static void check_dims(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMax = 0x7fffffff;
  LUCID_CHECK(m <= kMax && n <= kMax && k <= kMax, "matmul: dimensions (", m, ", ", n, ", ", k,
              ") exceed the 32-bit BLAS interface");
}

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  check_dims(m, n, k);
  LUCID_CBLAS(sgemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
                     int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  check_dims(m, n, k);
  LUCID_CBLAS(dgemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
                     int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace lucid::cpu::blas
