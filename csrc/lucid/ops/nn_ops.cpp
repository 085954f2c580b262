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
std::vector<Tensor> SoftmaxBackward::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                         const std::vector<Tensor>&, const std::vector<int>&) const {
  fail<NotImplementedError>(name(), ": gradients of the backward pass (higher-order gradients) are not supported");
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
