#pragma once
// Gradient clipping as torch.nn.utils does it, written once with ops: Python's
// nn.utils.clip_grad_norm_/clip_grad_value_ call these eagerly, and a compiled
// step records them (clipping inside the executable).
#include <vector>

#include "lucid/core/tensor.h"

namespace lucid::optim {

// The norm of the per-tensor norms of `tensors` (torch.nn.utils.get_total_norm);
// a 0-d tensor of the default dtype for no tensors.
Tensor total_norm(const std::vector<Tensor>& tensors, double norm_type = 2.0);
// The tensors scaled by min(1, max_norm / (total + 1e-6)), out of place.
std::vector<Tensor> clip_with_norm(const std::vector<Tensor>& grads, double max_norm, const Tensor& total);
// The tensors clamped to [-clip_value, clip_value], out of place.
std::vector<Tensor> clip_by_value(const std::vector<Tensor>& grads, double clip_value);

}  // namespace lucid::optim
