#include "lucid/optim/update_primitive.h"

namespace lucid::optim {

std::string EngineUpdate::name() const { return std::string("engine_update(") + algo->name() + ")"; }

std::vector<TensorMeta> EngineUpdate::infer(const std::vector<TensorMeta>& in) const {
  std::vector<TensorMeta> out;
  out.push_back(in[0]);
  for (int k = 0; k < num_buffers; ++k) out.push_back(in[2 + k]);
  return out;
}

}  // namespace lucid::optim
