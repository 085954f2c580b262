// Neural-network primitives whose fused kernels matter (Softmax and its
// backward).
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;

std::string Softmax::name() const { return log ? "log_softmax" : "softmax"; }
std::vector<TensorMeta> Softmax::infer(const std::vector<TensorMeta>& in) const { return {in[0]}; }
std::vector<Tensor> Softmax::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& out,
                                 const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {call<SoftmaxBackward>({cot[0], out[0]}, axis, log)};
}

std::string SoftmaxBackward::name() const { return log ? "log_softmax_backward" : "softmax_backward"; }
std::vector<TensorMeta> SoftmaxBackward::infer(const std::vector<TensorMeta>& in) const { return {in[1]}; }
// The backward's own gradients (higher-order gradients), written with ops so
// they differentiate again: for softmax gx = y (g - sum(g y)), for
// log_softmax gx = g - exp(y) sum(g), y the forward's output, c the cotangent.
std::vector<Tensor> SoftmaxBackward::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                         const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor &g = in[0], &y = in[1], &c = cot[0];
  const std::vector<int64_t> dims{int64_t(axis)};
  std::vector<Tensor> grads;
  for (int i : argnums) {
    if (!log) {
      const Tensor cy = sum(mul(c, y), dims, true);
      grads.push_back(i == 0 ? mul(y, sub(c, cy)) : sub(mul(c, sub(g, sum(mul(g, y), dims, true))), mul(cy, g)));
    } else {
      const Tensor p = exp(y);
      grads.push_back(i == 0 ? sub(c, sum(mul(c, p), dims, true)) : neg(mul(mul(c, p), sum(g, dims, true))));
    }
  }
  return grads;
}

static Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  normalize_axis(dim, x.ndim());  // a bad dim is reported before a bad dtype, as PyTorch does
  LUCID_CHECK_T(TypeError, is_floating(x.dtype()), log ? "log_softmax" : "softmax",
                "(): expected a floating point input, got ", dtype_name(x.dtype()),
                " (pass dtype= to compute in a floating type)");
  const Tensor& in = x;
  if (in.ndim() == 0) return reshape(call<Softmax>({reshape(in, {1})}, 0, log), {});
  return call<Softmax>({in}, normalize_axis(dim, in.ndim()), log);
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

}  // namespace lucid
