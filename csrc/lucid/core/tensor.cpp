#include "lucid/core/tensor.h"

namespace lucid {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (auto d : shape) LUCID_CHECK(d >= 0, "negative dimension in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = {shape, dtype, device};
  impl->strides = contiguous_strides(shape);
  impl->storage = std::make_shared<Storage>(size_t(lucid::numel(shape)) * itemsize(dtype), device);
  return Tensor(std::move(impl));
}

Tensor Tensor::symbolic(const TensorMeta& meta, uint64_t trace_id, int64_t value_id) {
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = meta;
  impl->strides = contiguous_strides(meta.shape);
  impl->storage = Storage::placeholder(size_t(meta.numel()) * itemsize(meta.dtype), meta.device);
  impl->trace_id = trace_id;
  impl->value_id = value_id;
  return Tensor(std::move(impl));
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const TensorMeta& meta) {
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = meta;
  impl->strides = contiguous_strides(meta.shape);
  impl->storage = std::move(storage);
  return Tensor(std::move(impl));
}

Tensor Tensor::make_view(const Tensor& src, const Layout& layout) {
  const TensorImpl* s = src.checked();
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = {layout.shape, s->meta.dtype, s->meta.device};
  impl->strides = layout.strides;
  impl->offset = layout.offset;
  impl->storage = s->storage;
  impl->trace_id = s->trace_id;
  impl->value_version = s->value_version;
  impl->view_base = s->view_base ? s->view_base : src.impl_;
  impl->multi_output_view = s->view_base ? s->multi_output_view : nullptr;
  impl->view_history_version = s->storage ? s->storage->version() : 0;
  return Tensor(std::move(impl));
}

Tensor Tensor::reinterpret(const Tensor& src, DType dtype, const Layout& layout) {
  const TensorImpl* s = src.checked();
  LUCID_CHECK_T(NotImplementedError, s->trace_id == 0,
                "view(dtype) of a traced tensor: a compiled function cannot read its memory as another dtype");
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = {layout.shape, dtype, s->meta.device};
  impl->strides = layout.strides;
  impl->offset = layout.offset;
  impl->storage = s->storage;
  return Tensor(std::move(impl));
}

int64_t Tensor::dim(int64_t axis) const { return shape()[normalize_axis(axis, ndim())]; }

void* Tensor::raw_data(const char* what) const {
  const TensorImpl* t = checked();
  if (t->trace_id != 0)
    fail<Error>(what,
                " needs the value of a tensor that is being traced for compilation, and traced tensors have no "
                "value yet: a data-dependent call cannot be compiled (move it out of the compiled step)");
  return static_cast<char*>(t->storage->data()) + t->offset * int64_t(itemsize(t->meta.dtype));
}

int64_t Tensor::storage_numel() const {
  const TensorImpl* t = checked();
  return int64_t(t->storage->nbytes() / itemsize(t->meta.dtype));
}

Tensor& Tensor::set_requires_grad(bool r) {
  TensorImpl* t = checked();
  if (r && !is_floating(t->meta.dtype))
    fail<Error>("only tensors of floating point dtype can require gradients (got ", dtype_name(t->meta.dtype),
                ")");
  if (!r && t->grad_fn)
    fail<Error>("you can only change requires_grad flags of leaf variables");
  t->requires_grad = r;
  return *this;
}

uint64_t Tensor::version() const {
  const TensorImpl* t = checked();
  return t->storage ? t->storage->version() : 0;
}

Tensor Tensor::detach() const {
  const TensorImpl* t = checked();
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = t->meta;
  impl->strides = t->strides;
  impl->offset = t->offset;
  impl->storage = t->storage;
  impl->trace_id = t->trace_id;
  impl->value_id = t->value_id;
  impl->value_version = t->value_version;
  return Tensor(std::move(impl));
}

std::string meta_str(const TensorMeta& m) {
  return detail::concat("shape=", shape_str(m.shape), ", dtype=", dtype_name(m.dtype), ", device=", m.device.str());
}

std::string Tensor::str() const { return "Tensor(" + meta_str(meta()) + ")"; }

}  // namespace lucid
