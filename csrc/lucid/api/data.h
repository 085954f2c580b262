#pragma once
// Moving numbers between C++ containers and tensors (what NumPy interop is
// in Python): from_vector() copies host values into a new CPU tensor,
// to_vector() copies a tensor's values out (cast to T, from any device),
// item() reads a one-element tensor as a Scalar (Python's .item()).
#include <cstdint>
#include <type_traits>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/ops.h"

namespace lucid {

template <class T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };

// A CPU tensor of `shape` holding a copy of `n` values of `dtype` at `data`
// (InvalidArgument when n does not match the shape).
Tensor from_data(const void* data, int64_t n, DType dtype, const Shape& shape);
// Copies a concrete tensor's values, as `dtype`, into `out` (n elements).
void copy_to(const Tensor& t, DType dtype, void* out);

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  static_assert(!std::is_same_v<T, bool>, "use std::vector<uint8_t> and cast() for bool tensors");
  return from_data(values.data(), int64_t(values.size()), dtype_of<T>::value, shape);
}
// A 1-D tensor of the values.
template <class T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, Shape{int64_t(values.size())});
}

template <class T>
std::vector<T> to_vector(const Tensor& t) {
  static_assert(!std::is_same_v<T, bool>, "read bool tensors as uint8_t via cast() to int32");
  std::vector<T> out(size_t(t.numel()));
  copy_to(t, dtype_of<T>::value, out.data());
  return out;
}

// The value of a one-element tensor, of its dtype's kind.
Scalar item(const Tensor& t);

}  // namespace lucid
