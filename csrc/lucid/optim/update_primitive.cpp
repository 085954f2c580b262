#include "lucid/optim/update_primitive.h"

#include <cstring>

#include "lucid/ops/kernels.h"

namespace lucid::optim {

std::string EngineUpdate::name() const { return std::string("engine_update(") + algo->name() + ")"; }

std::vector<TensorMeta> EngineUpdate::infer(const std::vector<TensorMeta>& in) const {
  std::vector<TensorMeta> out;
  out.push_back(in[0]);
  for (int k = 0; k < num_buffers; ++k) out.push_back(in[2 + k]);
  return out;
}

namespace {

// A non-owning tensor over a kernel argument's memory.
Tensor view(void* data, const TensorMeta& meta) {
  auto storage = std::make_shared<Storage>(data, size_t(meta.numel()) * itemsize(meta.dtype), meta.device,
                                           std::function<void()>());
  return Tensor::from_storage(storage, meta);
}

void engine_update_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& up = static_cast<const EngineUpdate&>(p);
  // The loop updates in place: start the outputs from the old values unless
  // the executable placed them on the inputs' own buffers.
  for (int k = 0; k <= up.num_buffers; ++k) {
    const ConstArg& src = in[k == 0 ? 0 : 1 + k];
    if (out[k].data != src.data)
      std::memcpy(out[k].data, src.data, size_t(src.meta->numel()) * itemsize(src.meta->dtype));
  }
  ParamState st;
  const uint32_t need = up.algo->needed_buffers(up.hyper);
  st.buffers.resize(up.algo->buffer_names().size());
  int next = 1;
  for (size_t k = 0; k < st.buffers.size(); ++k)
    if (need >> k & 1) {
      st.buffers[k] = view(out[next].data, *out[next].meta);
      ++next;
    }
  std::vector<double> scalars;
  for (size_t i = 2 + size_t(up.num_buffers); i < in.size(); ++i)
    scalars.push_back(*static_cast<const double*>(in[i].data));
  const Tensor param = view(out[0].data, *out[0].meta);
  const Tensor grad = view(const_cast<void*>(in[1].data), *in[1].meta);
  up.algo->fused_update(param, grad, st, scalars, up.hyper);
}
LUCID_REGISTER_KERNEL(EngineUpdate, CPU, engine_update_kernel);

}  // namespace

}  // namespace lucid::optim
