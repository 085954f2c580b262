#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lucid/core/device.h"
#include "lucid/core/dtype.h"
#include "lucid/core/error.h"
#include "lucid/core/shape.h"
#include "lucid/core/storage.h"

namespace lucid {

namespace autograd {
class Node;
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

struct TensorImpl {
  TensorMeta meta;
  std::shared_ptr<Storage> storage;  // null for a symbolic tensor

  // Symbolic tensors are values of an active trace: (trace id, value id).
  uint64_t trace_id = 0;
  int64_t value_id = -1;

  // autograd
  bool requires_grad = false;
  bool retains_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves: reused AccumulateGrad
};

// A handle to a TensorImpl (shared, like torch.Tensor): copying a Tensor
// aliases it. `Tensor()` is an undefined tensor (a missing grad, an absent
// optional argument).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = {});
  static Tensor symbolic(const TensorMeta& meta, uint64_t trace_id, int64_t value_id);
  // A tensor over existing storage (reshape, detach share memory this way).
  static Tensor from_storage(std::shared_ptr<Storage> storage, const TensorMeta& meta);

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
  // Raw data of a concrete tensor; RuntimeError naming `what` for a symbolic one.
  void* raw_data(const char* what = "data access") const;
  template <class T>
  T* data(const char* what = "data access") const {
    return static_cast<T*>(raw_data(what));
  }

  // autograd
  bool requires_grad() const { return checked()->requires_grad; }
  Tensor& set_requires_grad(bool r);
  bool is_leaf() const { return checked()->grad_fn == nullptr; }
  Tensor grad() const { return Tensor(checked()->grad); }
  void set_grad(const Tensor& g) { checked()->grad = g.impl_; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return checked()->grad_fn; }
  uint64_t version() const;

  // A tensor sharing this one's data (and symbolic value) with no history.
  Tensor detach() const;

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
