#include "lucid/ops/dispatch.h"

#include <cstring>

#include "lucid/autograd/node.h"
#include "lucid/graph/tracer.h"
#include "lucid/ops/kernels.h"

namespace lucid {

static thread_local uint64_t t_dispatch_count = 0;
uint64_t eager_dispatch_count() { return t_dispatch_count; }

// One device per op, except that 0-d CPU tensors (host scalars, the feeds of
// a compiled step) combine with tensors on any device, as in PyTorch.
static void check_devices(const Primitive& prim, const std::vector<Tensor>& inputs) {
  const Tensor* ref = nullptr;
  for (const auto& t : inputs)
    if (!(t.ndim() == 0 && t.device().type == DeviceType::CPU)) {
      ref = &t;
      break;
    }
  if (!ref) return;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].device() != ref->device() && !(inputs[i].ndim() == 0 && inputs[i].device().type == DeviceType::CPU))
      fail<TypeError>(prim.name(), ": expected all tensors to be on the same device, but found ",
                      ref->device().str(), " and ", inputs[i].device().str());
}

static std::vector<Tensor> run_kernel(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                                      const std::vector<TensorMeta>& metas) {
  for (const auto& t : inputs)
    if (t.is_symbolic())
      fail<Error>(prim->name(), ": a tensor from a compiled step's trace was used outside of it");
  std::vector<Tensor> outs;
  outs.reserve(metas.size());
  // Reshape is a view: the result shares the input's storage.
  if (prim->kind() == OpKind::Reshape) {
    outs.push_back(Tensor::from_storage(inputs[0].storage(), metas[0]));
    return outs;
  }
  std::vector<ConstArg> in_args;
  in_args.reserve(inputs.size());
  for (const auto& t : inputs) in_args.push_back({t.raw_data(), &t.meta()});
  std::vector<MutArg> out_args;
  out_args.reserve(metas.size());
  for (const auto& m : metas) {
    outs.push_back(Tensor::empty(m.shape, m.dtype, m.device));
    out_args.push_back({outs.back().raw_data(), &outs.back().meta()});
  }
  const Device dev = metas.empty() ? (inputs.empty() ? Device{} : inputs[0].device()) : metas[0].device;
  find_kernel(*prim, dev.type)(*prim, in_args, out_args);
  ++t_dispatch_count;
  return outs;
}

std::vector<Tensor> apply(const PrimitivePtr& prim, const std::vector<Tensor>& inputs) {
  check_devices(*prim, inputs);
  std::vector<TensorMeta> in_metas;
  in_metas.reserve(inputs.size());
  for (const auto& t : inputs) in_metas.push_back(t.meta());
  const std::vector<TensorMeta> out_metas = prim->infer(in_metas);

  std::vector<Tensor> outs;
  if (graph::Tracer* tracer = graph::Tracer::current())
    outs = tracer->record(prim, inputs, out_metas);
  else
    outs = run_kernel(prim, inputs, out_metas);
  autograd::record_history(prim, inputs, outs);
  return outs;
}

Tensor apply1(const PrimitivePtr& prim, const std::vector<Tensor>& inputs) { return apply(prim, inputs)[0]; }

void assign_data(const Tensor& target, const Tensor& value) {
  LUCID_CHECK(target.shape() == value.shape() && target.dtype() == value.dtype(),
              "in-place write of ", meta_str(value.meta()), " into ", meta_str(target.meta()));
  if (graph::Tracer* tracer = graph::Tracer::current()) {
    tracer->assign(target, value);
    return;
  }
  if (value.is_symbolic() || target.is_symbolic())
    fail<Error>("in-place write: a tensor from a compiled step's trace was used outside of it");
  if (target.storage() != value.storage() || target.raw_data() != value.raw_data())
    std::memcpy(target.raw_data(), value.raw_data(), target.nbytes());
  target.storage()->bump_version();
}

}  // namespace lucid
