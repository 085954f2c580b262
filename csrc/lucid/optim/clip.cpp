#include "lucid/optim/clip.h"

#include <cmath>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/ops.h"

namespace lucid::optim {

Tensor total_norm(const std::vector<Tensor>& tensors, double norm_type) {
  if (tensors.empty()) return full({}, 0.0, default_float_dtype());
  autograd::NoGradGuard no_grad;
  const DType dt = tensors[0].dtype();
  std::vector<Tensor> norms;
  if (std::isinf(norm_type)) {
    // the -inf norm is the smallest magnitude, per tensor and over the tensors' norms
    const bool smallest = norm_type < 0;
    for (const Tensor& t : tensors) {
      const Tensor magnitude = abs(is_floating(t.dtype()) ? t : cast(t, DType::Float32));
      norms.push_back(cast(smallest ? amin(magnitude) : amax(magnitude), dt));
    }
    const Tensor all = stack(norms, 0);
    return smallest ? amin(all) : amax(all);
  }
  for (const Tensor& t : tensors) norms.push_back(cast(norm(t, norm_type), dt));
  return norm(stack(norms, 0), norm_type);
}

std::vector<Tensor> clip_with_norm(const std::vector<Tensor>& grads, double max_norm, const Tensor& total) {
  autograd::NoGradGuard no_grad;
  const Tensor coef = clamp(div(wrap_scalar(max_norm, total), add(total, wrap_scalar(1e-6, total))), std::nullopt,
                            Scalar(1.0));
  std::vector<Tensor> out;
  for (const Tensor& g : grads) out.push_back(mul(g, cast(coef, g.dtype())));
  return out;
}

std::vector<Tensor> clip_by_value(const std::vector<Tensor>& grads, double clip_value) {
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> out;
  for (const Tensor& g : grads) out.push_back(clamp(g, Scalar(-clip_value), Scalar(clip_value)));
  return out;
}

}  // namespace lucid::optim
