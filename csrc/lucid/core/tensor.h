#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lucid/core/device.h"
#include "lucid/core/dtype.h"
#include "lucid/core/error.h"
#include "lucid/core/hash.h"
#include "lucid/core/shape.h"
#include "lucid/core/storage.h"

namespace lucid {

namespace autograd {
class Node;
struct GradHooks;
}

// What an op needs to know about a tensor to derive its output: no data.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
  int64_t numel() const { return lucid::numel(shape); }
  bool operator==(const TensorMeta& o) const {
    return shape == o.shape && dtype == o.dtype && device == o.device;
  }
};
inline size_t hash_value(const TensorMeta& m) {
  return hash_seq(hash_mix(hash_value(m.device), size_t(m.dtype)), m.shape);
}

struct TensorImpl {
  TensorMeta meta;
  // Where the elements lie in `storage` (elements, PyTorch's strides and
  // storage offset).
  Shape strides;
  int64_t offset = 0;
  // A concrete tensor's memory; for a symbolic tensor a placeholder without
  // memory that its views share (so a trace sees aliasing and writes).
  std::shared_ptr<Storage> storage;

  // Symbolic tensors are values of an active trace: (trace id, value id).
  // `value_version` is the storage version the value reflects: after a write
  // through an alias, the trace derives the value anew.
  uint64_t trace_id = 0;
  int64_t value_id = -1;
  uint64_t value_version = 0;

  // Views (PyTorch's `_base`): the tensor whose memory this one shows,
  // never itself a view, and the storage version at which grad_fn was
  // derived from the base's history (a write through an alias makes it
  // stale). Tensors sharing memory without history (detach(), .data) are
  // not views: they share the storage only.
  std::shared_ptr<TensorImpl> view_base;
  uint64_t view_history_version = 0;
  bool view_in_grad_mode = true;  // made while gradients were recorded (else it never carries the base's history)
  // One of several views a function returned at once (split, chunk, unbind),
  // or a view of one: PyTorch refuses in-place writes to it while the base
  // records history. The name is that of PyTorch's backward node.
  const char* multi_output_view = nullptr;

  // autograd
  bool requires_grad = false;
  bool retains_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves: reused AccumulateGrad
  std::shared_ptr<autograd::GradHooks> grad_hooks;  // leaves: register_hook's functions (non-leaves: on grad_fn)
};

// A handle to a TensorImpl (shared, like torch.Tensor): copying a Tensor
// aliases it. `Tensor()` is an undefined tensor (a missing grad, an absent
// optional argument).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = {});
  // A traced value (contiguous, with a placeholder storage of its own).
  static Tensor symbolic(const TensorMeta& meta, uint64_t trace_id, int64_t value_id);
  // A contiguous tensor over the start of existing storage.
  static Tensor from_storage(std::shared_ptr<Storage> storage, const TensorMeta& meta);
  // A view of `src`'s memory with another layout (shape, strides, offset in
  // src's storage); symbolic when src is (its value is the caller's to set).
  static Tensor make_view(const Tensor& src, const Layout& layout);
  // src's memory read as `dtype` with `layout` (in elements of dtype), with
  // no history (PyTorch's view(dtype) is not differentiable); writes through
  // either bump the storage's one version.
  static Tensor reinterpret(const Tensor& src, DType dtype, const Layout& layout);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

  const TensorMeta& meta() const { return checked()->meta; }
  const Shape& shape() const { return meta().shape; }
  int64_t dim(int64_t axis) const;
  int64_t ndim() const { return int64_t(shape().size()); }
  int64_t numel() const { return meta().numel(); }
  DType dtype() const { return meta().dtype; }
  const Device& device() const { return meta().device; }
  size_t nbytes() const { return size_t(numel()) * itemsize(dtype()); }

  bool is_symbolic() const { return checked()->trace_id != 0; }
  const std::shared_ptr<Storage>& storage() const { return checked()->storage; }
  const Shape& strides() const { return checked()->strides; }
  int64_t offset() const { return checked()->offset; }
  Layout layout() const { return {shape(), strides(), offset()}; }
  bool is_contiguous() const { return lucid::is_contiguous(shape(), strides()); }
  bool is_view() const { return checked()->view_base != nullptr; }
  // Address of element [0, ...] of a concrete tensor (laid out as strides()
  // say); RuntimeError naming `what` for a symbolic one.
  void* raw_data(const char* what = "data access") const;
  template <class T>
  T* data(const char* what = "data access") const {
    return static_cast<T*>(raw_data(what));
  }

  // autograd
  // A view requires grad whenever its base does (PyTorch's rule), also one
  // made with gradient recording off: that one is a leaf that no gradient
  // reaches, and it refuses in-place writes under grad mode.
  bool requires_grad() const {
    const TensorImpl* t = checked();
    return t->requires_grad || (t->view_base && t->view_base->requires_grad);
  }
  Tensor& set_requires_grad(bool r);
  bool is_leaf() const { return checked()->grad_fn == nullptr; }
  Tensor grad() const { return Tensor(checked()->grad); }
  void set_grad(const Tensor& g) { checked()->grad = g.impl_; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return checked()->grad_fn; }
  uint64_t version() const;

  // A tensor sharing this one's data (and symbolic value) with no history.
  Tensor detach() const;
  // Number of elements the storage holds (in this tensor's dtype).
  int64_t storage_numel() const;

  std::string str() const;  // "Tensor(shape=[2, 3], dtype=float32, device=cpu)"

 private:
  TensorImpl* checked() const {
    if (!impl_) fail<Error>("use of an undefined tensor");
    return impl_.get();
  }
  std::shared_ptr<TensorImpl> impl_;
};

// Human-readable meta, used in error messages.
std::string meta_str(const TensorMeta& m);

}  // namespace lucid
