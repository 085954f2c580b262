#include "lucid/backend/cpu/blas.h"

#include "lucid/core/error.h"

#if defined(LUCID_BLAS_ACCELERATE)
#include <Accelerate/Accelerate.h>
#define LUCID_CBLAS(name) cblas_##name
#elif defined(LUCID_BLAS_OPENBLAS) || defined(LUCID_BLAS_MKL)
// The standard CBLAS declarations, written here: the `mkl` wheel ships no
// headers, and scipy-openblas32's would put a path of pip's temporary build
// environment into every compile command (a full rebuild on each install).
extern "C" {
enum CBLAS_ORDER { CblasRowMajor = 101 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
enum CBLAS_UPLO { CblasUpper = 121, CblasLower = 122 };
enum CBLAS_DIAG { CblasNonUnit = 131, CblasUnit = 132 };
enum CBLAS_SIDE { CblasLeft = 141, CblasRight = 142 };
#if defined(LUCID_BLAS_OPENBLAS)
// scipy-openblas32 prefixes every symbol (it may share a process with another
// OpenBLAS) and uses 32-bit integers.
#define LUCID_CBLAS(name) scipy_cblas_##name
void scipy_openblas_set_num_threads(int n);
#else
#define LUCID_CBLAS(name) cblas_##name
int MKL_Set_Threading_Layer(int layer);
void MKL_Set_Num_Threads(int n);
void cblas_sgemm_batch_strided(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int, int, int, float, const float*,
                               int, long long, const float*, int, long long, float, float*, int, long long, int);
#endif
void LUCID_CBLAS(sgemm)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int, int, int, float, const float*, int,
                        const float*, int, float, float*, int);
void LUCID_CBLAS(dgemm)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int, int, int, double, const double*, int,
                        const double*, int, double, double*, int);
void LUCID_CBLAS(strsm)(CBLAS_ORDER, CBLAS_SIDE, CBLAS_UPLO, CBLAS_TRANSPOSE, CBLAS_DIAG, int, int, float,
                        const float*, int, float*, int);
void LUCID_CBLAS(dtrsm)(CBLAS_ORDER, CBLAS_SIDE, CBLAS_UPLO, CBLAS_TRANSPOSE, CBLAS_DIAG, int, int, double,
                        const double*, int, double*, int);
}
#else
#error "no BLAS selected"
#endif

namespace lucid::cpu::blas {

#if defined(LUCID_BLAS_MKL)
// Sequential MKL: the pool splits GEMMs (matmul_kernel.cpp), so MKL must not
// start threads of its own. Selected before the first MKL call.
static void ensure_sequential() {
  static const bool done = [] {
    MKL_Set_Threading_Layer(1);  // MKL_THREADING_SEQUENTIAL
    return true;
  }();
  (void)done;
}
#else
static void ensure_sequential() {}
#endif

void set_threads(int n) {
  ensure_sequential();
#if defined(LUCID_BLAS_OPENBLAS)
  scipy_openblas_set_num_threads(n);
#elif defined(LUCID_BLAS_MKL)
  MKL_Set_Num_Threads(n);
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
  ensure_sequential();
  LUCID_CBLAS(sgemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
                     int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

void sgemm_batch(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, int64_t stride_a,
                 const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc, int64_t stride_c,
                 int64_t batch) {
#if defined(LUCID_BLAS_MKL)
  check_dims(m, n, k);
  check_dims(batch, 0, 0);
  ensure_sequential();
  cblas_sgemm_batch_strided(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m),
                            int(n), int(k), 1.0f, a, int(lda), stride_a, b, int(ldb), stride_b, 0.0f, c, int(ldc),
                            stride_c, int(batch));
#else
  for (int64_t i = 0; i < batch; ++i)
    sgemm(ta, tb, m, n, k, 1.0f, a + i * stride_a, lda, b + i * stride_b, ldb, 0.0f, c + i * stride_c, ldc);
#endif
}

void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  check_dims(m, n, k);
  ensure_sequential();
  LUCID_CBLAS(dgemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
                     int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

#define LUCID_TRSM_ARGS(left, upper, trans_a, unit)                                              \
  CblasRowMajor, (left) ? CblasLeft : CblasRight, (upper) ? CblasUpper : CblasLower,            \
      (trans_a) ? CblasTrans : CblasNoTrans, (unit) ? CblasUnit : CblasNonUnit

void trsm(bool left, bool upper, bool trans_a, bool unit, int64_t m, int64_t n, const float* a, int64_t lda, float* b,
          int64_t ldb) {
  check_dims(m, n, lda);
  ensure_sequential();
  LUCID_CBLAS(strsm)(LUCID_TRSM_ARGS(left, upper, trans_a, unit), int(m), int(n), 1.0f, a, int(lda), b, int(ldb));
}

void trsm(bool left, bool upper, bool trans_a, bool unit, int64_t m, int64_t n, const double* a, int64_t lda,
          double* b, int64_t ldb) {
  check_dims(m, n, lda);
  ensure_sequential();
  LUCID_CBLAS(dtrsm)(LUCID_TRSM_ARGS(left, upper, trans_a, unit), int(m), int(n), 1.0, a, int(lda), b, int(ldb));
}

}  // namespace lucid::cpu::blas
