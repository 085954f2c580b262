#include "lucid/ops/norm.h"

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;

static Shape stats_shape(const Shape& s, int ndims) {
  Shape out = s;
  for (size_t d = s.size() - size_t(ndims); d < s.size(); ++d) out[d] = 1;
  return out;
}

std::string LayerNorm::name() const { return "layer_norm"; }
std::vector<TensorMeta> LayerNorm::infer(const std::vector<TensorMeta>& in) const {
  const TensorMeta stats{stats_shape(in[0].shape, ndims), in[0].dtype, in[0].device};
  return {in[0], stats, stats};
}
std::vector<Tensor> LayerNorm::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                   const std::vector<Tensor>& cot, const std::vector<int>&) const {
  if (!autograd::GradMode::is_enabled()) return {call<LayerNormBackward>({cot[0], in[0], out[1], out[2]}, ndims)};
  // A backward that records history (create_graph): the same formula in ops,
  // the statistics recomputed from x so their own dependence on x is
  // differentiated too (16-bit inputs in float32, as the kernel computes).
  const DType dt = in[0].dtype(), wide = is_half(dt) ? DType::Float32 : dt;
  const Tensor x = cast(in[0], wide), g = cast(cot[0], wide);
  std::vector<int64_t> dims;
  for (int64_t d = int64_t(x.ndim()) - ndims; d < int64_t(x.ndim()); ++d) dims.push_back(d);
  const Tensor xc = sub(x, mean(x, dims, true));
  const Tensor rstd = rsqrt(add(mean(mul(xc, xc), dims, true), Scalar(eps)));
  const Tensor xhat = mul(xc, rstd);
  const Tensor gx = mul(rstd, sub(sub(g, mean(g, dims, true)), mul(xhat, mean(mul(g, xhat), dims, true))));
  return {cast(gx, dt)};
}

std::string LayerNormBackward::name() const { return "layer_norm_backward"; }
std::vector<TensorMeta> LayerNormBackward::infer(const std::vector<TensorMeta>& in) const { return {in[1]}; }
std::vector<Tensor> LayerNormBackward::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                           const std::vector<Tensor>&, const std::vector<int>&) const {
  // LayerNorm's vjp records ops instead of this kernel when a backward records history.
  fail<NotImplementedError>("layer_norm_backward: gradients of the backward kernel are not supported");
}

Tensor layer_norm(const Tensor& x, int ndims, double eps) {
  LUCID_CHECK_T(TypeError, is_floating(x.dtype()), "layer_norm(): expected a floating point input, got ",
                dtype_name(x.dtype()));
  LUCID_CHECK(ndims >= 1 && ndims <= int(x.ndim()), "layer_norm(): cannot normalise the last ", ndims,
              " dims of a ", x.ndim(), "-d input");
  LUCID_CHECK(eps >= 0, "layer_norm(): eps must be non-negative, got ", eps);
  return detail::call_multi<LayerNorm>({x}, ndims, eps)[0];
}

}  // namespace lucid
