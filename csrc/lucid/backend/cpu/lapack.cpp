#include "lucid/backend/cpu/lapack.h"

#include <algorithm>
#include <cstddef>
#include <vector>

// The Fortran interface, declared here as blas.cpp declares CBLAS (no header
// from pip's build environment). Character arguments carry their hidden
// lengths last, as gfortran passes them; the C-translated LAPACKs ignore them.
#if defined(LUCID_BLAS_OPENBLAS)
#define LUCID_LAPACK(name) scipy_##name##_
#elif defined(LUCID_BLAS_MKL) || defined(LUCID_BLAS_ACCELERATE)
#define LUCID_LAPACK(name) name##_
#else
#error "no BLAS selected"
#endif

extern "C" {
#define LUCID_LAPACK_EXTERN(T, p)                                                                                  \
  void LUCID_LAPACK(p##getrf)(const int* m, const int* n, T* a, const int* lda, int* ipiv, int* info);             \
  void LUCID_LAPACK(p##getrs)(const char* trans, const int* n, const int* nrhs, const T* a, const int* lda,         \
                              const int* ipiv, T* b, const int* ldb, int* info, size_t);                           \
  void LUCID_LAPACK(p##getri)(const int* n, T* a, const int* lda, const int* ipiv, T* work, const int* lwork,       \
                              int* info);                                                                          \
  void LUCID_LAPACK(p##potrf)(const char* uplo, const int* n, T* a, const int* lda, int* info, size_t);            \
  void LUCID_LAPACK(p##geqrf)(const int* m, const int* n, T* a, const int* lda, T* tau, T* work, const int* lwork, \
                              int* info);                                                                          \
  void LUCID_LAPACK(p##orgqr)(const int* m, const int* n, const int* k, T* a, const int* lda, const T* tau,        \
                              T* work, const int* lwork, int* info);                                               \
  void LUCID_LAPACK(p##syevd)(const char* jobz, const char* uplo, const int* n, T* a, const int* lda, T* w,        \
                              T* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t); \
  void LUCID_LAPACK(p##gesdd)(const char* jobz, const int* m, const int* n, T* a, const int* lda, T* s, T* u,      \
                              const int* ldu, T* vt, const int* ldvt, T* work, const int* lwork, int* iwork,       \
                              int* info, size_t);
LUCID_LAPACK_EXTERN(float, s)
LUCID_LAPACK_EXTERN(double, d)
#undef LUCID_LAPACK_EXTERN
}

namespace lucid::cpu::lapack {

namespace {
// A workspace size returned by a query (lwork = -1) as the first element.
template <class T>
int work_size(T query) {
  return std::max(1, int(query));
}
}  // namespace

#define LUCID_LAPACK_DEFINE(T, p)                                                                                  \
  int getrf(int m, int n, T* a, int lda, int* ipiv) {                                                             \
    int info = 0;                                                                                                  \
    LUCID_LAPACK(p##getrf)(&m, &n, a, &lda, ipiv, &info);                                                          \
    return info;                                                                                                   \
  }                                                                                                                \
  int getrs(bool trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb) {                   \
    int info = 0;                                                                                                  \
    const char t = trans ? 'T' : 'N';                                                                              \
    LUCID_LAPACK(p##getrs)(&t, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);                                       \
    return info;                                                                                                   \
  }                                                                                                                \
  int getri(int n, T* a, int lda, const int* ipiv) {                                                              \
    int info = 0, lwork = -1;                                                                                      \
    T query{};                                                                                                     \
    LUCID_LAPACK(p##getri)(&n, a, &lda, ipiv, &query, &lwork, &info);                                              \
    lwork = work_size(query);                                                                                      \
    std::vector<T> work(static_cast<size_t>(lwork));                                                                            \
    LUCID_LAPACK(p##getri)(&n, a, &lda, ipiv, work.data(), &lwork, &info);                                         \
    return info;                                                                                                   \
  }                                                                                                                \
  int potrf(bool upper, int n, T* a, int lda) {                                                                   \
    int info = 0;                                                                                                  \
    const char u = upper ? 'U' : 'L';                                                                              \
    LUCID_LAPACK(p##potrf)(&u, &n, a, &lda, &info, 1);                                                             \
    return info;                                                                                                   \
  }                                                                                                                \
  int geqrf(int m, int n, T* a, int lda, T* tau) {                                                                \
    int info = 0, lwork = -1;                                                                                      \
    T query{};                                                                                                     \
    LUCID_LAPACK(p##geqrf)(&m, &n, a, &lda, tau, &query, &lwork, &info);                                           \
    lwork = work_size(query);                                                                                      \
    std::vector<T> work(static_cast<size_t>(lwork));                                                                            \
    LUCID_LAPACK(p##geqrf)(&m, &n, a, &lda, tau, work.data(), &lwork, &info);                                      \
    return info;                                                                                                   \
  }                                                                                                                \
  int orgqr(int m, int n, int k, T* a, int lda, const T* tau) {                                                   \
    int info = 0, lwork = -1;                                                                                      \
    T query{};                                                                                                     \
    LUCID_LAPACK(p##orgqr)(&m, &n, &k, a, &lda, tau, &query, &lwork, &info);                                       \
    lwork = work_size(query);                                                                                      \
    std::vector<T> work(static_cast<size_t>(lwork));                                                                            \
    LUCID_LAPACK(p##orgqr)(&m, &n, &k, a, &lda, tau, work.data(), &lwork, &info);                                  \
    return info;                                                                                                   \
  }                                                                                                                \
  int syevd(bool upper, int n, T* a, int lda, T* w) {                                                             \
    int info = 0, lwork = -1, liwork = -1, iquery = 0;                                                             \
    const char jobz = 'V', u = upper ? 'U' : 'L';                                                                  \
    T query{};                                                                                                     \
    LUCID_LAPACK(p##syevd)(&jobz, &u, &n, a, &lda, w, &query, &lwork, &iquery, &liwork, &info, 1, 1);              \
    lwork = work_size(query);                                                                                      \
    liwork = std::max(1, iquery);                                                                                  \
    std::vector<T> work(static_cast<size_t>(lwork));                                                                            \
    std::vector<int> iwork(static_cast<size_t>(liwork));                                                                        \
    LUCID_LAPACK(p##syevd)(&jobz, &u, &n, a, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);    \
    return info;                                                                                                   \
  }                                                                                                                \
  int gesdd(bool full, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt) {                      \
    int info = 0, lwork = -1;                                                                                      \
    const char jobz = full ? 'A' : 'S';                                                                            \
    std::vector<int> iwork(size_t(8 * std::max(1, std::min(m, n))));                                               \
    T query{};                                                                                                     \
    LUCID_LAPACK(p##gesdd)(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &query, &lwork, iwork.data(), &info, 1); \
    lwork = work_size(query);                                                                                      \
    std::vector<T> work(static_cast<size_t>(lwork));                                                                            \
    LUCID_LAPACK(p##gesdd)(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, iwork.data(),      \
                           &info, 1);                                                                              \
    return info;                                                                                                   \
  }
LUCID_LAPACK_DEFINE(float, s)
LUCID_LAPACK_DEFINE(double, d)
#undef LUCID_LAPACK_DEFINE

}  // namespace lucid::cpu::lapack
