// CPU kernels of the decomposition and solver primitives (ops/decompositions.cpp),
// through LAPACK (lapack.h) one matrix of the batch at a time. Operands are
// row-major; LAPACK is column-major, and a row-major buffer read column-major
// is the transpose. Where the transpose does not change the answer (inverse,
// determinant, a symmetric matrix) the buffer goes to LAPACK as it is;
// elsewhere it is transposed into a column-major copy and back.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "lucid/backend/cpu/blas.h"
#include "lucid/backend/cpu/lapack.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

struct MatrixBatch {
  int64_t count, rows, cols;
};
MatrixBatch matrices_of(const TensorMeta& m) {
  const Shape& s = m.shape;
  const int64_t rows = s[s.size() - 2], cols = s.back();
  return {numel(Shape(s.begin(), s.end() - 2)), rows, cols};
}

// dst (cols x rows, row-major) = src (rows x cols, row-major) transposed:
// a row-major matrix to its column-major copy, or back.
template <class T>
void transpose_copy(const T* src, T* dst, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}

int ld(int64_t n) { return int(std::max<int64_t>(1, n)); }

template <class T>
constexpr T nan_v() {
  return std::numeric_limits<T>::quiet_NaN();
}

// Runs fn.operator()<T>() for the primitive's float type.
template <class F>
void for_float_type(DType t, const Primitive& p, F&& fn) {
  if (t == DType::Float32) fn(float{});
  else if (t == DType::Float64) fn(double{});
  else fail<TypeError>(p.name(), ": expected a float32 or float64 tensor, got ", dtype_name(t));
}

// ------------------------------------------------------------------ LU
void lu_factor_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t m = mb.rows, n = mb.cols, k = std::min(m, n);
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* lu = static_cast<T*>(out[0].data);
    int32_t* pivots = static_cast<int32_t*>(out[1].data);
    int64_t* perm = static_cast<int64_t*>(out[2].data);
    int32_t* info = static_cast<int32_t*>(out[3].data);
    std::vector<T> work(size_t(m * n));
    std::vector<int> ipiv(size_t(std::max<int64_t>(k, 1)));
    for (int64_t b = 0; b < mb.count; ++b) {
      transpose_copy(a + b * m * n, work.data(), m, n);
      info[b] = k ? lapack::getrf(int(m), int(n), work.data(), ld(m), ipiv.data()) : 0;
      transpose_copy(work.data(), lu + b * m * n, n, m);
      int64_t* pb = perm + b * m;
      for (int64_t i = 0; i < m; ++i) pb[i] = i;
      for (int64_t i = 0; i < k; ++i) {
        pivots[b * k + i] = ipiv[size_t(i)];
        std::swap(pb[i], pb[ipiv[size_t(i)] - 1]);
      }
    }
  });
}
LUCID_REGISTER_KERNEL(LuFactor, CPU, lu_factor_kernel);

void lu_solve_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const bool adjoint = static_cast<const LuSolve&>(p).adjoint;
  const MatrixBatch mb = matrices_of(*in[2].meta);
  const int64_t n = mb.rows, k = mb.cols;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* lu = static_cast<const T*>(in[0].data);
    const int32_t* pivots = static_cast<const int32_t*>(in[1].data);
    const T* rhs = static_cast<const T*>(in[2].data);
    T* x = static_cast<T*>(out[0].data);
    std::vector<T> a(size_t(n * n)), bw(size_t(n * k));
    std::vector<int> ipiv(size_t(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < mb.count; ++b) {
      if (n && k) {
        transpose_copy(lu + b * n * n, a.data(), n, n);
        transpose_copy(rhs + b * n * k, bw.data(), n, k);
        std::copy(pivots + b * n, pivots + (b + 1) * n, ipiv.begin());
        lapack::getrs(adjoint, int(n), int(k), a.data(), ld(n), ipiv.data(), bw.data(), ld(n));
      }
      transpose_copy(bw.data(), x + b * n * k, k, n);
    }
  });
}
LUCID_REGISTER_KERNEL(LuSolve, CPU, lu_solve_kernel);

// ------------------------------------------------------- inverse, solve
// The buffer of A read column-major is A^T, and inv(A^T) read back row-major
// is inv(A): A goes to getrf/getri as it is.
void inverse_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t n = mb.rows;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* y = static_cast<T*>(out[0].data);
    int32_t* info = static_cast<int32_t*>(out[1].data);
    std::vector<int> ipiv(size_t(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < mb.count; ++b) {
      T* yb = y + b * n * n;
      std::copy(a + b * n * n, a + (b + 1) * n * n, yb);
      info[b] = n ? lapack::getrf(int(n), int(n), yb, ld(n), ipiv.data()) : 0;
      if (info[b] == 0 && n) lapack::getri(int(n), yb, ld(n), ipiv.data());
      else if (info[b] != 0) std::fill(yb, yb + n * n, nan_v<T>());
    }
  });
}
LUCID_REGISTER_KERNEL(Inverse, CPU, inverse_kernel);

// getrf factors A^T (A's buffer as it is); getrs with the transpose solves A X = B.
void solve_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const MatrixBatch mb = matrices_of(*in[1].meta);
  const int64_t n = mb.rows, k = mb.cols;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    const T* rhs = static_cast<const T*>(in[1].data);
    T* x = static_cast<T*>(out[0].data);
    int32_t* info = static_cast<int32_t*>(out[1].data);
    std::vector<T> lu(size_t(n * n)), bw(size_t(n * k));
    std::vector<int> ipiv(size_t(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < mb.count; ++b) {
      std::copy(a + b * n * n, a + (b + 1) * n * n, lu.begin());
      info[b] = n ? lapack::getrf(int(n), int(n), lu.data(), ld(n), ipiv.data()) : 0;
      if (info[b] != 0) {
        std::fill(x + b * n * k, x + (b + 1) * n * k, nan_v<T>());
        continue;
      }
      transpose_copy(rhs + b * n * k, bw.data(), n, k);
      if (k) lapack::getrs(true, int(n), int(k), lu.data(), ld(n), ipiv.data(), bw.data(), ld(n));
      transpose_copy(bw.data(), x + b * n * k, k, n);
    }
  });
}
LUCID_REGISTER_KERNEL(LinearSolve, CPU, solve_kernel);

// det(A^T) = det(A): A's buffer as it is.
void slogdet_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t n = mb.rows;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* sign = static_cast<T*>(out[0].data);
    T* logabs = static_cast<T*>(out[1].data);
    std::vector<T> lu(size_t(n * n));
    std::vector<int> ipiv(size_t(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < mb.count; ++b) {
      std::copy(a + b * n * n, a + (b + 1) * n * n, lu.begin());
      if (n) lapack::getrf(int(n), int(n), lu.data(), ld(n), ipiv.data());
      T s = 1, l = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T d = lu[size_t(i * n + i)];
        if (ipiv[size_t(i)] != i + 1) s = -s;
        if (d < 0) s = -s;
        l += std::log(std::abs(d));
      }
      if (std::isinf(l) && l < 0) s = 0;
      sign[b] = s;
      logabs[b] = l;
    }
  });
}
LUCID_REGISTER_KERNEL(Slogdet, CPU, slogdet_kernel);

void det_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t n = mb.rows;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* det = static_cast<T*>(out[0].data);
    std::vector<T> lu(size_t(n * n));
    std::vector<int> ipiv(size_t(std::max<int64_t>(n, 1)));
    for (int64_t b = 0; b < mb.count; ++b) {
      std::copy(a + b * n * n, a + (b + 1) * n * n, lu.begin());
      if (n) lapack::getrf(int(n), int(n), lu.data(), ld(n), ipiv.data());
      T d = 1;
      for (int64_t i = 0; i < n; ++i) d *= ipiv[size_t(i)] != i + 1 ? -lu[size_t(i * n + i)] : lu[size_t(i * n + i)];
      det[b] = d;
    }
  });
}
LUCID_REGISTER_KERNEL(Det, CPU, det_kernel);

// ------------------------------------------------------------ Cholesky
// A's buffer read column-major is A^T = A (symmetric): the triangle LAPACK
// reads is the other one of A's, and its factor read back row-major is the
// transposed factor, which is the one asked for.
void cholesky_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const bool upper = static_cast<const Cholesky&>(p).upper;
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t n = mb.rows;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* l = static_cast<T*>(out[0].data);
    int32_t* info = static_cast<int32_t*>(out[1].data);
    for (int64_t b = 0; b < mb.count; ++b) {
      T* lb = l + b * n * n;
      std::copy(a + b * n * n, a + (b + 1) * n * n, lb);
      info[b] = n ? lapack::potrf(!upper, int(n), lb, ld(n)) : 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          if (upper ? j < i : j > i) lb[i * n + j] = 0;
    }
  });
}
LUCID_REGISTER_KERNEL(Cholesky, CPU, cholesky_kernel);

void triangular_solve_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& ts = static_cast<const TriangularSolve&>(p);
  const MatrixBatch mb = matrices_of(*in[1].meta);
  const int64_t n = in[0].meta->shape.back(), rows = mb.rows, cols = mb.cols;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    const T* rhs = static_cast<const T*>(in[1].data);
    T* x = static_cast<T*>(out[0].data);
    if (mb.count && rows && cols) std::copy(rhs, rhs + mb.count * rows * cols, x);
    if (!rows || !cols) return;
    for (int64_t b = 0; b < mb.count; ++b)
      blas::trsm(ts.left, ts.upper, false, ts.unitriangular, rows, cols, a + b * n * n, ld(n), x + b * rows * cols,
                 ld(cols));
  });
}
LUCID_REGISTER_KERNEL(TriangularSolve, CPU, triangular_solve_kernel);

// ------------------------------------------------------------------ QR
void qr_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const QrMode mode = static_cast<const Qr&>(p).mode;
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t m = mb.rows, n = mb.cols, k = std::min(m, n);
  const int64_t r_rows = mode == QrMode::Complete ? m : k, q_cols = r_rows;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* q = static_cast<T*>(out[0].data);
    T* r = static_cast<T*>(out[1].data);
    std::vector<T> work(size_t(m * n)), tau(size_t(std::max<int64_t>(k, 1))), qw(size_t(m * q_cols));
    for (int64_t b = 0; b < mb.count; ++b) {
      transpose_copy(a + b * m * n, work.data(), m, n);
      if (k) lapack::geqrf(int(m), int(n), work.data(), ld(m), tau.data());
      T* rb = r + b * r_rows * n;
      for (int64_t i = 0; i < r_rows; ++i)
        for (int64_t j = 0; j < n; ++j) rb[i * n + j] = i <= j ? work[size_t(j * m + i)] : T(0);
      if (mode == QrMode::R || !m) continue;
      std::fill(qw.begin(), qw.end(), T(0));
      std::copy(work.begin(), work.begin() + k * m, qw.begin());  // the first k reflectors
      lapack::orgqr(int(m), int(q_cols), int(k), qw.data(), ld(m), tau.data());
      transpose_copy(qw.data(), q + b * m * q_cols, q_cols, m);
    }
  });
}
LUCID_REGISTER_KERNEL(Qr, CPU, qr_kernel);

// ---------------------------------------------------------------- eigh
// Symmetric A's buffer is A: the upper triangle read column-major is A's lower.
void eigh_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const bool upper = static_cast<const Eigh&>(p).upper;
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t n = mb.rows;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* w = static_cast<T*>(out[0].data);
    T* v = static_cast<T*>(out[1].data);
    std::vector<T> work(size_t(n * n));
    for (int64_t b = 0; b < mb.count; ++b) {
      if (!n) continue;
      std::copy(a + b * n * n, a + (b + 1) * n * n, work.begin());
      lapack::syevd(!upper, int(n), work.data(), ld(n), w + b * n);
      transpose_copy(work.data(), v + b * n * n, n, n);  // eigenvectors as columns
    }
  });
}
LUCID_REGISTER_KERNEL(Eigh, CPU, eigh_kernel);

// ----------------------------------------------------------------- SVD
// A's buffer read column-major is A^T = V S U^T: LAPACK's U and V^T of it,
// read back row-major, are A's V^T and U. No copies but A's (gesdd overwrites it).
void svd_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const bool full = static_cast<const Svd&>(p).full_matrices;
  const MatrixBatch mb = matrices_of(*in[0].meta);
  const int64_t m = mb.rows, n = mb.cols, k = std::min(m, n);
  const int64_t u_cols = full ? m : k, vh_rows = full ? n : k;
  for_float_type(in[0].meta->dtype, p, [&](auto zero) {
    using T = decltype(zero);
    const T* a = static_cast<const T*>(in[0].data);
    T* u = static_cast<T*>(out[0].data);
    T* s = static_cast<T*>(out[1].data);
    T* vh = static_cast<T*>(out[2].data);
    std::vector<T> work(size_t(m * n));
    for (int64_t b = 0; b < mb.count; ++b) {
      T* ub = u + b * m * u_cols;
      T* vhb = vh + b * vh_rows * n;
      if (!k) {  // no singular values: the full bases are identities
        std::fill(ub, ub + m * u_cols, T(0));
        std::fill(vhb, vhb + vh_rows * n, T(0));
        for (int64_t i = 0; i < std::min(m, u_cols); ++i) ub[i * u_cols + i] = 1;
        for (int64_t i = 0; i < std::min(n, vh_rows); ++i) vhb[i * n + i] = 1;
        continue;
      }
      std::copy(a + b * m * n, a + (b + 1) * m * n, work.begin());
      lapack::gesdd(full, int(n), int(m), work.data(), ld(n), s + b * k, vhb, ld(n), ub, ld(u_cols));
    }
  });
}
LUCID_REGISTER_KERNEL(Svd, CPU, svd_kernel);

}  // namespace

}  // namespace lucid::cpu
