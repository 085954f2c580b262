#pragma once
// Helpers shared by the ops/*.cpp files (not part of the public API).
#include <memory>

#include "lucid/ops/dispatch.h"
#include "lucid/ops/ops.h"
#include "lucid/ops/primitives.h"

namespace lucid::detail {

template <class P, class... Args>
Tensor call(const std::vector<Tensor>& inputs, Args&&... args) {
  return apply1(std::make_shared<const P>(std::forward<Args>(args)...), inputs);
}
template <class P, class... Args>
std::vector<Tensor> call_multi(const std::vector<Tensor>& inputs, Args&&... args) {
  return ::lucid::apply(std::make_shared<const P>(std::forward<Args>(args)...), inputs);
}

// Gradient slot k of a vjp result corresponds to argnums[k].
inline bool wants(const std::vector<int>& argnums, int i) {
  for (int a : argnums)
    if (a == i) return true;
  return false;
}

// Builds the result vector of a vjp: one entry per requested argnum.
template <class F>
std::vector<Tensor> grads_for(const std::vector<int>& argnums, F&& grad_of) {
  std::vector<Tensor> out;
  out.reserve(argnums.size());
  for (int i : argnums) out.push_back(grad_of(i));
  return out;
}

inline std::vector<int64_t> to_i64(const std::vector<int>& v) { return std::vector<int64_t>(v.begin(), v.end()); }

// `view` with `strides` where its size-1 dims (all dims, when it is empty)
// are strided differently by Lucid's derivation than by PyTorch's; such
// strides address nothing, but stride() and is_contiguous() report them.
Tensor with_unit_strides(const Tensor& view, const Shape& strides);

// PyTorch's check for fills and bounds: an integer must be in the dtype's
// range, a finite float within its largest value (inf and NaN pass).
void check_scalar_fits(const Scalar& value, DType dtype, const char* op);
// A 0-d tensor of `value` converted like a wrapped number (integers wrap to
// the dtype's width; no range check).
Tensor wrapped_scalar_tensor(const Scalar& value, DType dtype, Device device);

// Inserts size-1 dims at `axes` (sorted) so a keepdim=false reduction result
// broadcasts against its input again.
Tensor unsqueeze_axes(const Tensor& t, const std::vector<int>& axes);

}  // namespace lucid::detail
