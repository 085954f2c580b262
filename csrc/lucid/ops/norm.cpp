#include "lucid/ops/norm.h"

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
  return {call<LayerNormBackward>({cot[0], in[0], out[1], out[2]}, ndims)};
}

std::string LayerNormBackward::name() const { return "layer_norm_backward"; }
std::vector<TensorMeta> LayerNormBackward::infer(const std::vector<TensorMeta>& in) const { return {in[1]}; }
std::vector<Tensor> LayerNormBackward::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                           const std::vector<Tensor>&, const std::vector<int>&) const {
  fail<NotImplementedError>("layer_norm: gradients of the backward pass (higher-order gradients) are not supported");
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
