// Matrix decompositions and solvers: the LuFactor, LuSolve, Inverse,
// LinearSolve, Slogdet, Cholesky, TriangularSolve, Qr, Eigh and Svd
// primitives, their derivatives (PyTorch's formulas, FunctionsManual.cpp,
// written with ops so they trace and differentiate again), and the public
// torch.linalg ops built on them.
#include <algorithm>
#include <limits>

#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::call_multi;
using detail::grads_for;
using detail::wants;

namespace {

Tensor mT(const Tensor& x) { return transpose(x, -2, -1); }

Shape batch_shape(const Shape& s, size_t matrix_dims = 2) { return Shape(s.begin(), s.end() - matrix_dims); }

Shape with_dims(Shape batch, std::initializer_list<int64_t> dims) {
  batch.insert(batch.end(), dims.begin(), dims.end());
  return batch;
}

Tensor identity_like(const Tensor& x, int64_t n) { return eye(n, n, x.dtype(), x.device()); }

// v [.., n] -> the diagonal matrices [.., n, n].
Tensor diag_embed(const Tensor& v) {
  const int64_t n = v.shape().back();
  return mul(unsqueeze(v, -1), identity_like(v, n));
}

Tensor diag_of(const Tensor& x) { return diagonal(x, 0, -2, -1); }

Tensor solve_tri(const Tensor& A, const Tensor& B, bool upper, bool left, bool unit = false) {
  return call<TriangularSolve>({A, B}, upper, left, unit);
}

Tensor solve_square(const Tensor& A, const Tensor& B) { return call_multi<LinearSolve>({A, B})[0]; }

// PyTorch's names of dtypes, as its linear-algebra errors print them.
const char* torch_dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Int32: return "Int";
    case DType::Int64: return "Long";
    case DType::Bool: return "Bool";
    default: return dtype_name(t);
  }
}

void check_dtype(const Tensor& A, const std::string& op) {
  LUCID_CHECK_T(TypeError, is_floating(A.dtype()), op,
                ": Expected a floating point or complex tensor as input. Got ", torch_dtype_name(A.dtype()));
  LUCID_CHECK_T(TypeError, A.dtype() == DType::Float32 || A.dtype() == DType::Float64, op,
                ": Low precision dtypes not supported. Got ", torch_dtype_name(A.dtype()));
}

void check_matrix(const Tensor& A, const std::string& op, bool square, const char* arg = "A") {
  LUCID_CHECK(A.ndim() >= 2, op, ": The input tensor ", arg, " must have at least 2 dimensions.");
  check_dtype(A, op);
  if (square) {
    const int64_t m = A.shape()[size_t(A.ndim() - 2)], n = A.shape().back();
    LUCID_CHECK(m == n, op, ": ", arg, " must be batches of square matrices, but they are ", m, " by ", n,
                " matrices");
  }
}

// LAPACK's status per matrix, read back to raise PyTorch's LinAlgError (an
// eager sync, as PyTorch's checks are; a traced op has no values to read).
template <class Message>
void check_info(const Tensor& info, const Tensor& A, const std::string& op, Message message) {
  if (info.is_symbolic() || info.numel() == 0) return;
  const Tensor host = contiguous(to_device(info, Device{}));
  const int32_t* codes = host.data<int32_t>(op.c_str());
  for (int64_t i = 0; i < host.numel(); ++i) {
    if (codes[i] == 0) continue;
    const std::string batch = A.ndim() > 2 ? detail::concat("(Batch element ", i, "): ") : "";
    fail<LinAlgError>(op, ": ", batch, message(codes[i]));
  }
}

std::string singular_solve_message(int32_t) { return "The solver failed because the input matrix is singular."; }

}  // namespace

// ---------------------------------------------------------------- LuFactor
std::string LuFactor::name() const { return "lu_factor"; }
std::vector<TensorMeta> LuFactor::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  const int64_t m = s[s.size() - 2], n = s.back();
  const Shape batch = batch_shape(s);
  return {in[0],
          {with_dims(batch, {std::min(m, n)}), DType::Int32, in[0].device},
          {with_dims(batch, {m}), DType::Int64, in[0].device},
          {batch, DType::Int32, in[0].device}};
}

// A = P L U, L unit lower, U upper, packed in LU. PyTorch's linalg_lu_backward
// for square A: gA = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H.
std::vector<Tensor> LuFactor::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& out,
                                  const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor& LU = out[0];
  const int64_t m = LU.shape()[size_t(LU.ndim() - 2)], n = LU.shape().back();
  LUCID_CHECK_T(NotImplementedError, m == n,
                "linalg.lu_factor: the derivative is implemented for square matrices only, got ", m, " by ", n);
  const Tensor L = add(tril(LU, -1), identity_like(LU, n));
  const Tensor U = triu(LU);
  const Tensor gL = tril(cot[0], -1), gU = triu(cot[0]);
  const Tensor gR = add(tril(matmul(mT(L), gL), -1), triu(matmul(gU, mT(U))));
  Tensor gA = solve_tri(mT(L), gR, /*upper=*/true, /*left=*/true, /*unit=*/true);
  gA = solve_tri(mT(U), gA, /*upper=*/false, /*left=*/false);
  // P gA: row perm[i] of the result is row i of gA.
  const Tensor rows = reshape(arange(0, double(n), 1, DType::Int64, LU.device()), {n, 1});
  const Tensor P = cast(eq(unsqueeze(out[2], -2), rows), LU.dtype());
  return {matmul(P, gA)};
}

// ----------------------------------------------------------------- LuSolve
std::string LuSolve::name() const { return adjoint ? "lu_solve(adjoint)" : "lu_solve"; }
std::vector<TensorMeta> LuSolve::infer(const std::vector<TensorMeta>& in) const { return {in[2]}; }
std::vector<Tensor> LuSolve::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                 const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  return grads_for(argnums, [&](int i) -> Tensor {
    LUCID_CHECK_T(NotImplementedError, i == 2,
                  "linalg.lu_solve: the derivative with respect to LU is not implemented; differentiate "
                  "linalg.solve(A, B) instead");
    return call<LuSolve>({in[0], in[1], cot[0]}, !adjoint);
  });
}

// ----------------------------------------------------------------- Inverse
std::string Inverse::name() const { return "inverse"; }
std::vector<TensorMeta> Inverse::infer(const std::vector<TensorMeta>& in) const {
  return {in[0], {batch_shape(in[0].shape), DType::Int32, in[0].device}};
}
// gA = -A^-T g A^-T, from the result.
std::vector<Tensor> Inverse::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& out,
                                 const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor Yt = mT(out[0]);
  return {neg(matmul(matmul(Yt, cot[0]), Yt))};
}

// ------------------------------------------------------------- LinearSolve
std::string LinearSolve::name() const { return "solve"; }
std::vector<TensorMeta> LinearSolve::infer(const std::vector<TensorMeta>& in) const {
  return {in[1], {batch_shape(in[0].shape), DType::Int32, in[0].device}};
}
// gB = A^-T g, gA = -gB X^T.
std::vector<Tensor> LinearSolve::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                     const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor gB = solve_square(mT(in[0]), cot[0]);
  return grads_for(argnums, [&](int i) { return i == 1 ? gB : neg(matmul(gB, mT(out[0]))); });
}

// ----------------------------------------------------------------- Slogdet
std::string Slogdet::name() const { return "slogdet"; }
std::vector<TensorMeta> Slogdet::infer(const std::vector<TensorMeta>& in) const {
  const TensorMeta m{batch_shape(in[0].shape), in[0].dtype, in[0].device};
  return {m, m};
}
// Only log|det| has a derivative (real A): gA = g A^-T, solved as PyTorch
// does when the backward is itself differentiated.
std::vector<Tensor> Slogdet::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                 const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor g_times_I = mul(unsqueeze(unsqueeze(cot[1], -1), -1), identity_like(in[0], in[0].shape().back()));
  return {solve_square(mT(in[0]), g_times_I)};
}

// --------------------------------------------------------------------- Det
std::string Det::name() const { return "det"; }
std::vector<TensorMeta> Det::infer(const std::vector<TensorMeta>& in) const {
  return {{batch_shape(in[0].shape), in[0].dtype, in[0].device}};
}
// PyTorch's linalg_det_backward: g det A^-T, solved; at (near-)singular A,
// where that fails, the adjugate through the SVD A = U S Vh:
// U diag(alpha prod_{j != i} S_j) Vh with alpha = g det(U) det(Vh).
std::vector<Tensor> Det::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                             const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor& A = in[0];
  const int64_t n = A.shape().back();
  if (A.numel() == 0) return {zeros_like(A)};
  const Tensor g_det = mul(cot[0], out[0]);
  const Tensor I = identity_like(A, n);
  const Tensor regular = solve_square(mT(A), mul(unsqueeze(unsqueeze(g_det, -1), -1), I));
  const std::vector<Tensor> usv = call_multi<Svd>({A}, false, false);
  const Tensor &U = usv[0], &S = usv[1], &Vh = usv[2];
  const Tensor alpha = mul(mul(call_multi<Slogdet>({U})[0], call_multi<Slogdet>({Vh})[0]), cot[0]);
  // prod_{j != i} S_j as the exclusive products from either end (no division by a zero S_i)
  const Tensor ones1 = ones_like(narrow(S, -1, 0, 1));
  const Tensor before = cumprod(cat({ones1, narrow(S, -1, 0, n - 1)}, -1), -1);
  const Tensor after = call<Scan>({cat({narrow(S, -1, 1, n - 1), ones1}, -1)}, ScanOp::Prod, int(S.ndim() - 1), true);
  const Tensor D = mul(unsqueeze(alpha, -1), mul(before, after));
  const Tensor singular = matmul(mul(U, unsqueeze(D, -2)), Vh);
  const double eps = A.dtype() == DType::Float64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  const Tensor near_singular = lt(abs(out[0]), full_like(out[0], 100.0 * eps));
  return {where(unsqueeze(unsqueeze(near_singular, -1), -1), singular, regular)};
}

// ---------------------------------------------------------------- Cholesky
std::string Cholesky::name() const { return upper ? "cholesky(upper)" : "cholesky"; }
std::vector<TensorMeta> Cholesky::infer(const std::vector<TensorMeta>& in) const {
  return {in[0], {batch_shape(in[0].shape), DType::Int32, in[0].device}};
}
// PyTorch's cholesky_backward: Phi = tril(L^H gL) with its strictly lower
// part symmetrised; gA = L^-H Phi L^-1.
std::vector<Tensor> Cholesky::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& out,
                                  const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor L = upper ? mT(out[0]) : out[0];
  const Tensor gL = upper ? mT(cot[0]) : cot[0];
  Tensor gA = tril(matmul(mT(L), gL));
  gA = mul(add(gA, mT(tril(gA, -1))), 0.5);
  gA = solve_tri(mT(L), gA, /*upper=*/true, /*left=*/true);
  return {solve_tri(L, gA, /*upper=*/false, /*left=*/false)};
}

// --------------------------------------------------------- TriangularSolve
std::string TriangularSolve::name() const { return "solve_triangular"; }
std::vector<TensorMeta> TriangularSolve::infer(const std::vector<TensorMeta>& in) const { return {in[1]}; }
// PyTorch's linalg_solve_triangular_backward: gB = solve(A^H, g), gA = -gB X^H
// (left) or -X^H gB, projected onto A's triangle.
std::vector<Tensor> TriangularSolve::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                         const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor gB = solve_tri(mT(in[0]), cot[0], !upper, left, unitriangular);
  return grads_for(argnums, [&](int i) -> Tensor {
    if (i == 1) return gB;
    const Tensor Xt = mT(out[0]);
    const Tensor gA = neg(left ? matmul(gB, Xt) : matmul(Xt, gB));
    return upper ? triu(gA, unitriangular ? 1 : 0) : tril(gA, unitriangular ? -1 : 0);
  });
}

// ---------------------------------------------------------------------- Qr
std::string Qr::name() const {
  return mode == QrMode::Reduced ? "qr" : mode == QrMode::Complete ? "qr(complete)" : "qr(r)";
}
std::vector<TensorMeta> Qr::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const Shape batch = batch_shape(s);
  const int64_t rows_r = mode == QrMode::Complete ? m : k;
  const Shape q = mode == QrMode::R ? Shape{0} : with_dims(batch, {m, rows_r});
  return {{q, in[0].dtype, in[0].device}, {with_dims(batch, {rows_r, n}), in[0].dtype, in[0].device}};
}
// PyTorch's linalg_qr_backward.
std::vector<Tensor> Qr::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& out,
                            const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor &Q = out[0], &R = out[1], &gQ = cot[0], &gR = cot[1];
  LUCID_CHECK(mode != QrMode::R,
              "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
              "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  const int64_t m = Q.shape()[size_t(Q.ndim() - 2)], n = R.shape().back();
  LUCID_CHECK(mode == QrMode::Reduced || m <= n,
              "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  Tensor gA = sub(matmul(gR, mT(R)), matmul(mT(Q), gQ));
  if (m >= n) {
    Tensor t = triu(gA);
    t = add(t, mT(t));
    t = sub(t, mul(diag_embed(diag_of(t)), 0.5));  // the diagonal counted once
    gA = add(matmul(Q, t), gQ);
    return {solve_tri(mT(R), gA, /*upper=*/false, /*left=*/false)};
  }
  gA = matmul(Q, tril(sub(mT(gA), gA)));
  gA = solve_tri(mT(narrow(R, -1, 0, m)), gA, /*upper=*/false, /*left=*/false);
  gA = cat({gA, zeros(with_dims(batch_shape(R.shape()), {m, n - m}), gA.dtype(), gA.device())}, -1);
  return {add(gA, matmul(Q, gR))};
}

// -------------------------------------------------------------------- Eigh
std::string Eigh::name() const { return values_only ? "eigvalsh" : "eigh"; }
std::vector<TensorMeta> Eigh::infer(const std::vector<TensorMeta>& in) const {
  return {{batch_shape(in[0].shape, 1), in[0].dtype, in[0].device}, in[0]};
}
// PyTorch's linalg_eig_backward, Hermitian case:
// gA = V (diag(gL) + skew(V^H gV) / 2 / E) V^H, E_ij = L_j - L_i.
std::vector<Tensor> Eigh::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& out,
                              const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor &L = out[0], &V = out[1], &gL = cot[0];
  if (values_only) return {matmul(mul(V, unsqueeze(gL, -2)), mT(V))};
  Tensor VhgV = matmul(mT(V), cot[1]);
  VhgV = mul(sub(VhgV, mT(VhgV)), 0.5);
  const int64_t n = L.shape().back();
  const Tensor I = identity_like(L, n);
  const Tensor E = add(sub(unsqueeze(L, -2), unsqueeze(L, -1)), I);  // 1 on the diagonal
  const Tensor inner = add(mul(div(VhgV, E), sub(ones_like(I), I)), diag_embed(gL));
  return {matmul(V, matmul(inner, mT(V)))};
}

// --------------------------------------------------------------------- Svd
std::string Svd::name() const { return values_only ? "svdvals" : full_matrices ? "svd(full_matrices)" : "svd"; }
std::vector<TensorMeta> Svd::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const Shape batch = batch_shape(s);
  const DType t = in[0].dtype;
  return {{with_dims(batch, {m, full_matrices ? m : k}), t, in[0].device},
          {with_dims(batch, {k}), t, in[0].device},
          {with_dims(batch, {full_matrices ? n : k, n}), t, in[0].device}};
}
// PyTorch's svd_backward (real case), on the first k columns of U and rows
// of Vh when full_matrices.
std::vector<Tensor> Svd::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& out,
                             const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor& S = out[1];
  const int64_t k = S.shape().back();
  const Tensor U = full_matrices ? narrow(out[0], -1, 0, k) : out[0];
  const Tensor Vh = full_matrices ? narrow(out[2], -2, 0, k) : out[2];
  const int64_t m = U.shape()[size_t(U.ndim() - 2)], n = Vh.shape().back();
  const Tensor& gS = cot[1];
  if (values_only) return {m >= n ? matmul(U, mul(unsqueeze(gS, -1), Vh)) : matmul(mul(U, unsqueeze(gS, -2)), Vh)};
  const Tensor gU = full_matrices ? narrow(cot[0], -1, 0, k) : cot[0];
  const Tensor gVh = full_matrices ? narrow(cot[2], -2, 0, k) : cot[2];
  auto skew = [](const Tensor& X) { return sub(X, mT(X)); };
  const Tensor UhgU = skew(matmul(mT(U), gU));
  const Tensor VhgV = skew(matmul(Vh, mT(gVh)));
  const Tensor I = identity_like(S, k);
  const Tensor S2 = mul(S, S);
  const Tensor E = add(sub(unsqueeze(S2, -2), unsqueeze(S2, -1)), I);  // 1 on the diagonal
  Tensor gA = div(add(mul(UhgU, unsqueeze(S, -2)), mul(unsqueeze(S, -1), VhgV)), E);
  gA = add(mul(gA, sub(ones_like(I), I)), diag_embed(gS));
  if (m > n) {
    gA = matmul(U, gA);
    const Tensor gUSinv = div(gU, unsqueeze(S, -2));
    gA = sub(add(gA, gUSinv), matmul(U, matmul(mT(U), gUSinv)));
    return {matmul(gA, Vh)};
  }
  if (m < n) {
    gA = matmul(gA, Vh);
    const Tensor SinvgVh = div(gVh, unsqueeze(S, -1));
    gA = sub(add(gA, SinvgVh), matmul(matmul(SinvgVh, mT(Vh)), Vh));
    return {matmul(U, gA)};
  }
  return {matmul(U, matmul(gA, Vh))};
}

// ------------------------------------------------------------- public ops
std::vector<Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot, bool check_errors, const std::string& op) {
  LUCID_CHECK(A.ndim() >= 2, "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ",
              shape_str(A.shape()), " instead");
  check_matrix(A, op, false);
  LUCID_CHECK(pivot, op, ": LU without pivoting is not implemented on the CPU");
  std::vector<Tensor> r = call_multi<LuFactor>({A});
  if (check_errors)
    check_info(r[3], A, op, [](int32_t i) {
      return detail::concat("U[", i, ",", i, "] is zero and using it on lu_solve would result in a division by "
                            "zero. If you still want to perform the factorization, consider calling "
                            "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
    });
  return {r[0], r[1], r[3]};
}

std::vector<Tensor> linalg_lu(const Tensor& A, bool pivot) {
  check_matrix(A, "linalg.lu", false);
  LUCID_CHECK(pivot, "linalg.lu: LU without pivoting is not implemented on the CPU");
  const std::vector<Tensor> r = call_multi<LuFactor>({A});
  const Tensor& LU = r[0];
  const int64_t m = LU.shape()[size_t(LU.ndim() - 2)], n = LU.shape().back(), k = std::min(m, n);
  const Tensor L = add(tril(narrow(LU, -1, 0, k), -1), eye(m, k, LU.dtype(), LU.device()));
  const Tensor U = triu(narrow(LU, -2, 0, k));
  const Tensor rows = reshape(arange(0, double(m), 1, DType::Int64, LU.device()), {m, 1});
  const Tensor P = cast(eq(unsqueeze(r[2], -2), rows), LU.dtype());
  return {P, L, U};
}

// B as a matrix right-hand side: PyTorch's rule treats B as a batch of
// vectors when it is 1-D or its shape is A's batch shape plus one dim.
static bool is_vector_rhs(const Tensor& A, const Tensor& B) {
  return B.ndim() == 1 || (B.ndim() == A.ndim() - 1 && B.shape() == batch_shape(A.shape(), 1));
}

// (A, B) broadcast over their batch dims, B as matrices; `vector` tells the
// caller to squeeze the last dim of the result.
static std::pair<Tensor, Tensor> broadcast_solve_operands(const Tensor& A, const Tensor& B, bool left,
                                                          const std::string& op, bool allow_vector, bool& vector) {
  vector = allow_vector && is_vector_rhs(A, B);
  Tensor b = vector ? unsqueeze(B, -1) : B;
  const int64_t n = A.shape().back();
  const int64_t b_rows = left ? b.shape()[size_t(b.ndim() - 2)] : b.shape().back();
  if (b_rows != n) {
    const int64_t br = b.shape()[size_t(b.ndim() - 2)], bc = b.shape().back();
    fail(op, ": Incompatible shapes of A and B for the equation ", left ? "AX = B (" : "XA = B (", n, "x", n, " and ",
         br, "x", bc, ")");
  }
  const Shape batch = broadcast_shapes(batch_shape(A.shape()), batch_shape(b.shape()));
  const Tensor a = broadcast_to(A, with_dims(batch, {n, n}));
  b = broadcast_to(b, with_dims(batch, {b.shape()[size_t(b.ndim() - 2)], b.shape().back()}));
  return {a, b};
}

Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  check_matrix(LU, "linalg.lu_solve", true, "LU");
  LUCID_CHECK_T(TypeError, pivots.dtype() == DType::Int32, "linalg.lu_solve: pivots should be a Tensor of dtype int32, got ",
                dtype_name(pivots.dtype()));
  LUCID_CHECK_T(TypeError, B.dtype() == LU.dtype(), "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type ",
                torch_dtype_name(LU.dtype()), " and B of type ", torch_dtype_name(B.dtype()), " instead");
  LUCID_CHECK(B.ndim() >= 2, "linalg.lu_solve: The input tensor B must have at least 2 dimensions.");
  const int64_t n = LU.shape().back();
  LUCID_CHECK(pivots.ndim() == LU.ndim() - 1 && pivots.shape().back() == n,
              "linalg.lu_solve: Expected pivots to be of shape [..., ", n, "], got ", shape_str(pivots.shape()));
  bool vector = false;
  // X A = B  <=>  A^T X^T = B^T.
  auto [lu, b] = broadcast_solve_operands(LU, left ? B : mT(B), true, "linalg.lu_solve", false, vector);
  Tensor piv = broadcast_to(pivots, batch_shape(lu.shape(), 1));
  Tensor X = call<LuSolve>({lu, piv, b}, left ? adjoint : !adjoint);
  return left ? X : mT(X);
}

std::vector<Tensor> linalg_inv_ex(const Tensor& A, bool check_errors) {
  check_matrix(A, "linalg.inv", true);
  std::vector<Tensor> r = call_multi<Inverse>({A});
  if (check_errors)
    check_info(r[1], A, "linalg.inv", [](int32_t i) {
      return detail::concat("The diagonal element ", i,
                            " is zero, the inversion could not be completed because the input matrix is singular.");
    });
  return r;
}

Tensor linalg_inv(const Tensor& A) { return linalg_inv_ex(A, true)[0]; }

std::vector<Tensor> linalg_solve_ex(const Tensor& A, const Tensor& B, bool left, bool check_errors) {
  check_matrix(A, "linalg.solve", true);
  LUCID_CHECK_T(TypeError, A.dtype() == B.dtype(),
                "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
                torch_dtype_name(A.dtype()), " and B of type ", torch_dtype_name(B.dtype()), " instead");
  LUCID_CHECK(left || B.ndim() >= 2, "linalg.solve: with left=False, B must have at least 2 dimensions");
  // X A = B  <=>  A^T X^T = B^T.
  bool vector = false;
  auto [a, b] = broadcast_solve_operands(left ? A : mT(A), left ? B : mT(B), true, "linalg.solve", left, vector);
  std::vector<Tensor> r = call_multi<LinearSolve>({a, b});
  if (check_errors) check_info(r[1], a, "torch.linalg.solve", singular_solve_message);
  Tensor X = vector ? squeeze(r[0], std::vector<int64_t>{-1}) : (left ? r[0] : mT(r[0]));
  return {X, r[1]};
}

Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left) { return linalg_solve_ex(A, B, left, true)[0]; }

std::vector<Tensor> linalg_slogdet(const Tensor& A) {
  check_matrix(A, "linalg.slogdet", true);
  return call_multi<Slogdet>({A});
}

Tensor linalg_det(const Tensor& A) {
  check_matrix(A, "linalg.det", true);
  return call<Det>({A});
}

// log det: NaN for a negative determinant, -inf for a singular matrix.
Tensor logdet(const Tensor& A) {
  check_matrix(A, "logdet", true);
  const std::vector<Tensor> r = call_multi<Slogdet>({A});
  const Tensor nan = full_like(r[1], std::numeric_limits<double>::quiet_NaN());
  return where(lt(r[0], zeros_like(r[0])), nan, r[1]);
}

std::vector<Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  check_matrix(A, "linalg.cholesky", true);
  std::vector<Tensor> r = call_multi<Cholesky>({A}, upper);
  if (check_errors)
    check_info(r[1], A, "linalg.cholesky", [](int32_t i) {
      return detail::concat("The factorization could not be completed because the input is not positive-definite "
                            "(the leading minor of order ", i, " is not positive-definite).");
    });
  return r;
}

Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  const std::string op = "linalg.solve_triangular";
  check_matrix(A, op, true);
  LUCID_CHECK(B.ndim() >= 2, op, ": The input tensor B must have at least 2 dimensions.");
  const DType t = promote_types(A.dtype(), B.dtype());
  const Tensor a = cast(A, t), b = cast(B, t);
  check_dtype(a, op);
  bool vector = false;
  auto [aa, bb] = broadcast_solve_operands(a, b, left, op, false, vector);
  return call<TriangularSolve>({aa, bb}, upper, left, unitriangular);
}

std::vector<Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
  check_matrix(A, "linalg.qr", false);
  QrMode m;
  if (mode == "reduced") m = QrMode::Reduced;
  else if (mode == "complete") m = QrMode::Complete;
  else if (mode == "r") m = QrMode::R;
  else fail("qr received unrecognized mode '", mode, "' but expected one of 'reduced' (default), 'r', or 'complete'");
  return call_multi<Qr>({A}, m);
}

static bool parse_uplo(const std::string& UPLO, const char* op) {
  LUCID_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", op,
              ": Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  return UPLO == "U" || UPLO == "u";
}

std::vector<Tensor> linalg_eigh(const Tensor& A, const std::string& UPLO) {
  check_matrix(A, "linalg.eigh", true);
  return call_multi<Eigh>({A}, parse_uplo(UPLO, "linalg.eigh"), false);
}

Tensor linalg_eigvalsh(const Tensor& A, const std::string& UPLO) {
  check_matrix(A, "linalg.eigh", true);  // PyTorch names eigh here
  return call_multi<Eigh>({A}, parse_uplo(UPLO, "linalg.eigvalsh"), true)[0];
}

std::vector<Tensor> linalg_svd(const Tensor& A, bool full_matrices) {
  check_matrix(A, "linalg.svd", false);
  return call_multi<Svd>({A}, full_matrices, false);
}

Tensor linalg_svdvals(const Tensor& A) {
  check_matrix(A, "linalg.svd", false);  // PyTorch names svd here
  return call_multi<Svd>({A}, false, true)[1];
}

}  // namespace lucid
