#include "lucid/optim/update_primitive.h"

namespace lucid::optim {

std::string EngineUpdate::name() const { return std::string("engine_update(") + algo->name() + ")"; }

std::vector<TensorMeta> EngineUpdate::infer(const std::vector<TensorMeta>& in) const {
  std::vector<TensorMeta> out;
  out.push_back(in[0]);
  for (int k = 0; k < num_buffers; ++k) out.push_back(in[2 + k]);
  return out;
}

std::vector<Tensor> EngineUpdate::decompose(const std::vector<Tensor>& in) const {
  const auto first_scalar = in.begin() + 2 + num_buffers;
  return algo->update_tensors(flags, in[0], in[1], std::vector<Tensor>(in.begin() + 2, first_scalar),
                              std::vector<Tensor>(first_scalar, in.end()));
}

}  // namespace lucid::optim
