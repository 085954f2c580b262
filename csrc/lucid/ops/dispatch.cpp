#include "lucid/ops/dispatch.h"

#include <cstring>
#include <optional>

#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/core/profiler.h"
#include "lucid/graph/trace_hook.h"
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

// A row-major copy of a strided tensor, on its device.
static Tensor materialize(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  if (t.numel())
    find_strided_copy(t.device().type)(out.storage()->data(), out.layout(), t.storage()->data(), t.layout(), t.dtype());
  ++t_dispatch_count;
  return out;
}

// The input shapes a profiled primitive's event keeps, when asked for.
static std::vector<Shape> profiled_shapes(const std::vector<Tensor>& inputs) {
  std::vector<Shape> shapes;
  if (profiler::records_shapes())
    for (const auto& t : inputs) shapes.push_back(t.shape());
  return shapes;
}

static std::vector<Tensor> run_kernel(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                                      const std::vector<TensorMeta>& metas) {
  for (const auto& t : inputs)
    if (t.is_symbolic())
      fail<Error>(prim->name(), ": a tensor from a compiled step's trace was used outside of it");
  // Kernels read row-major operands unless they say otherwise: strided ones
  // are copied once, here.
  if (prim->kind() == OpKind::Copy && !inputs[0].is_contiguous()) return {materialize(inputs[0])};
  const Device dev = metas.empty() ? (inputs.empty() ? Device{} : inputs[0].device()) : metas[0].device;
  const bool strided_ok = kernel_reads_strided(prim->kind(), dev.type);
  std::vector<Tensor> dense;
  dense.reserve(inputs.size());
  std::vector<ConstArg> in_args;
  in_args.reserve(inputs.size());
  for (const auto& t : inputs) {
    if (t.is_contiguous()) {
      in_args.push_back({t.raw_data(), &t.meta()});
    } else if (strided_ok) {
      in_args.push_back({t.raw_data(), &t.meta(), &t.strides()});
    } else {
      dense.push_back(materialize(t));
      in_args.push_back({dense.back().raw_data(), &t.meta()});
    }
  }
  std::vector<Tensor> outs;
  outs.reserve(metas.size());
  std::vector<MutArg> out_args;
  out_args.reserve(metas.size());
  for (const auto& m : metas) {
    outs.push_back(Tensor::empty(m.shape, m.dtype, m.device));
    out_args.push_back({outs.back().raw_data(), &outs.back().meta()});
  }
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
  // Sizes are checked here, not at allocation: a view allocates nothing.
  for (const auto& m : out_metas) m.numel();

  std::vector<Tensor> outs;
  graph::Tracer* tracer = graph::Tracer::current();
  std::optional<profiler::Scope> profiled;
  // PyTorch's "aten::" events are "lucid::" ones here.
  if (profiler::enabled() && !tracer) profiled.emplace("lucid::" + prim->name(), profiled_shapes(inputs));
  if (tracer) {
    outs = tracer->record(prim, inputs, out_metas);
  } else if (prim->is_view()) {
    // A view runs nothing: the output shares input 0's memory.
    const std::optional<Layout> layout = prim->view_layout(inputs[0].layout());
    LUCID_CHECK_T(Error, layout && layout->shape == out_metas[0].shape, "internal: ", prim->name(),
                  " cannot be a view of a tensor laid out with strides ", shape_str(inputs[0].strides()));
    outs.push_back(Tensor::make_view(inputs[0], *layout));
    outs.back().impl()->view_in_grad_mode = autograd::GradMode::is_enabled();
  } else {
    outs = run_kernel(prim, inputs, out_metas);
  }
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
  LUCID_CHECK_T(TypeError, target.device() == value.device(), "in-place write of a ", value.device().str(),
                " tensor into a ", target.device().str(), " tensor");
  // Into the target's own layout: a write through a view reaches its base.
  if (target.numel() && !(target.storage() == value.storage() && target.layout() == value.layout()))
    find_strided_copy(target.device().type)(target.storage()->data(), target.layout(), value.storage()->data(),
                                            value.layout(), target.dtype());
  target.storage()->bump_version();
}

}  // namespace lucid
