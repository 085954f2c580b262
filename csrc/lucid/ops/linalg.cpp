// Matmul: the primitive (equal batch dims, optional transposes) and the
// public matmul with NumPy's 1-D and batch-broadcasting rules.
#include <algorithm>

#include "lucid/core/autocast.h"
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::grads_for;

std::string Matmul::name() const { return "matmul"; }

Gemm Matmul::gemm(const Shape& a, const Shape& b) const {
  const size_t nd = a.size();
  Gemm g{1, 0, 0, 0, trans_a, trans_b};
  for (size_t d = 0; d + 2 < nd; ++d) g.batch *= a[d];
  g.m = trans_a ? a[nd - 1] : a[nd - 2];
  g.k = trans_a ? a[nd - 2] : a[nd - 1];
  g.n = trans_b ? b[nd - 2] : b[nd - 1];
  if (g.m == 1 || g.k == 1) g.trans_a = false;
  if (g.k == 1 || g.n == 1) g.trans_b = false;
  return g;
}

std::vector<TensorMeta> Matmul::infer(const std::vector<TensorMeta>& in) const {
  const Shape &a = in[0].shape, &b = in[1].shape;
  LUCID_CHECK(a.size() >= 2 && a.size() == b.size(), "internal: matmul primitive expects equal ranks >= 2");
  const size_t n = a.size();
  for (size_t d = 0; d + 2 < n; ++d)
    LUCID_CHECK(a[d] == b[d], "internal: matmul primitive expects equal batch dims, got ", shape_str(a), " and ",
                shape_str(b));
  const int64_t m = trans_a ? a[n - 1] : a[n - 2], ka = trans_a ? a[n - 2] : a[n - 1];
  const int64_t kb = trans_b ? b[n - 1] : b[n - 2], nn = trans_b ? b[n - 2] : b[n - 1];
  LUCID_CHECK(ka == kb, "mat1 and mat2 shapes cannot be multiplied (", m, "x", ka, " and ", kb, "x", nn, ")");
  Shape out(a.begin(), a.end() - 2);
  out.push_back(m);
  out.push_back(nn);
  return {{out, in[0].dtype, in[0].device}};
}


std::vector<Tensor> Matmul::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor& g = cot[0];
  // C = op(A) op(B): d op(A) = G op(B)^T, d op(B) = op(A)^T G.
  return grads_for(argnums, [&](int i) -> Tensor {
    if (i == 0) {
      // dA = trans_a ? (G op(B)^T)^T = op(B) G^T : G op(B)^T
      return trans_a ? call<Matmul>({in[1], g}, trans_b, true) : call<Matmul>({g, in[1]}, false, !trans_b);
    }
    return trans_b ? call<Matmul>({g, in[0]}, true, trans_a) : call<Matmul>({in[0], g}, !trans_a, false);
  });
}

static Tensor matmul_impl(const Tensor& a_in, const Tensor& b_in);

// A GEMM operand as the kernel reads it: row-major, or the transpose of a
// row-major tensor (x.t(), x.mT), which BLAS takes as a flag instead of a copy.
static std::pair<Tensor, bool> gemm_operand(const Tensor& t) {
  if (t.ndim() < 2 || t.is_contiguous()) return {t, false};
  Tensor tt = transpose(t, -2, -1);
  if (tt.is_contiguous()) return {tt, true};
  return {t, false};
}

Tensor gemm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  auto [ga, ta] = gemm_operand(a);
  auto [gb, tb] = gemm_operand(b);
  return call<Matmul>({ga, gb}, trans_a != ta, trans_b != tb);
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  // Under autocast, matmul runs in the lower precision (PyTorch's list).
  const DType low = autocast_lower_dtype(a_in.dtype());
  if (low != a_in.dtype() && autocast_lower_dtype(b_in.dtype()) == low)
    return matmul_impl(cast(a_in, low), cast(b_in, low));
  return matmul_impl(a_in, b_in);
}

static Tensor matmul_impl(const Tensor& a_in, const Tensor& b_in) {
  LUCID_CHECK(a_in.ndim() > 0 && b_in.ndim() > 0, "both arguments to matmul need to be at least 1D, but they are ",
              a_in.ndim(), "D and ", b_in.ndim(), "D");
  LUCID_CHECK_T(TypeError, a_in.dtype() == b_in.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
                dtype_name(a_in.dtype()), " != ", dtype_name(b_in.dtype()));
  const bool a_vec = a_in.ndim() == 1, b_vec = b_in.ndim() == 1;
  Tensor a = a_vec ? reshape(a_in, {1, a_in.shape()[0]}) : a_in;
  Tensor b = b_vec ? reshape(b_in, {b_in.shape()[0], 1}) : b_in;
  const int64_t k_a = a.shape().back(), k_b = b.shape()[b.ndim() - 2];
  if (k_a != k_b) {
    if (a_vec && b_vec)
      fail("inconsistent tensor size, expected tensor [", k_a, "] and src [", k_b,
           "] to have the same number of elements, but got ", k_a, " and ", k_b, " elements respectively");
    if (a_in.ndim() == 2 && b_in.ndim() == 2)
      fail("mat1 and mat2 shapes cannot be multiplied (", a.shape()[0], "x", k_a, " and ", k_b, "x", b.shape()[1], ")");
    // The user's shapes, not the flattened GEMM's.
    fail("matmul(): shapes ", shape_str(a_in.shape()), " and ", shape_str(b_in.shape()),
         " cannot be multiplied: the last dimension of the first (", k_a, ") must equal the ",
         b_vec ? "length of the second (" : "second-to-last dimension of the second (", k_b, ")");
  }
  if (a.ndim() > 2 && b.ndim() > 2) {
    Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    for (size_t i = 1; i <= std::min(ba.size(), bb.size()); ++i) {
      const int64_t da = ba[ba.size() - i], db = bb[bb.size() - i];
      if (da != db && da != 1 && db != 1)
        fail("matmul(): shapes ", shape_str(a_in.shape()), " and ", shape_str(b_in.shape()),
             " cannot be multiplied: their batch dimensions ", shape_str(ba), " and ", shape_str(bb),
             " do not broadcast (", da, " vs ", db, ")");
    }
  }
  Tensor out;
  if (b.ndim() == 2) {
    // Fold a's batch dims into M: one GEMM.
    Shape lead(a.shape().begin(), a.shape().end() - 1);
    Tensor r = gemm(a.ndim() == 2 ? a : reshape(a, {numel(lead), k_a}), b);
    lead.push_back(b.shape()[1]);
    out = reshape(r, lead);
  } else {
    Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    Shape batch = broadcast_shapes(ba, bb);
    Shape sa = batch, sb = batch;
    sa.push_back(a.shape()[a.ndim() - 2]);
    sa.push_back(k_a);
    sb.push_back(k_b);
    sb.push_back(b.shape().back());
    out = gemm(broadcast_to(a, sa), broadcast_to(b, sb));
  }
  if (a_vec) out = squeeze(out, std::vector<int64_t>{out.ndim() - 2});
  if (b_vec) out = squeeze(out, std::vector<int64_t>{out.ndim() - 1});
  return out;
}

}  // namespace lucid
