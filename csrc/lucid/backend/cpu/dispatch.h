#pragma once
// Dtype dispatch for CPU kernels: storage type T, and the type arithmetic is
// done in (float for the 16-bit floats).
#include <cstdint>
#include <type_traits>

#include "lucid/core/dtype.h"
#include "lucid/core/error.h"

namespace lucid::cpu {

template <class T>
struct Compute {
  using type = T;
};
template <>
struct Compute<Half> {
  using type = float;
};
template <>
struct Compute<BFloat16> {
  using type = float;
};
template <class T>
using compute_t = typename Compute<T>::type;

template <class T>
inline compute_t<T> load(const T* p, int64_t i) {
  return p[i];
}
template <>
inline float load<Half>(const Half* p, int64_t i) {
  return half_to_float(p[i].bits);
}
template <>
inline float load<BFloat16>(const BFloat16* p, int64_t i) {
  return bf16_to_float(p[i].bits);
}

template <class T, class V>
inline void store(T* p, int64_t i, V v) {
  p[i] = static_cast<T>(v);
}
template <>
inline void store<Half, float>(Half* p, int64_t i, float v) {
  p[i].bits = float_to_half(v);
}
template <>
inline void store<BFloat16, float>(BFloat16* p, int64_t i, float v) {
  p[i].bits = float_to_bf16(v);
}
template <>
inline void store<Half, double>(Half* p, int64_t i, double v) {
  p[i].bits = float_to_half(float(v));
}
template <>
inline void store<BFloat16, double>(BFloat16* p, int64_t i, double v) {
  p[i].bits = float_to_bf16(float(v));
}

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

}  // namespace lucid::cpu

// Calls BODY with `using T = <storage type>` for the given dtype.
#define LUCID_DISPATCH_CASE(DT, TYPE, ...) \
  case ::lucid::DType::DT: {               \
    using T = TYPE;                        \
    __VA_ARGS__();                         \
    break;                                 \
  }

#define LUCID_DISPATCH_ALL(dtype, name, ...)                             \
  switch (dtype) {                                                       \
    LUCID_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                         \
    LUCID_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Float16, ::lucid::Half, __VA_ARGS__)             \
    LUCID_DISPATCH_CASE(BFloat16, ::lucid::BFloat16, __VA_ARGS__)        \
    LUCID_DISPATCH_CASE(Float32, float, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Float64, double, __VA_ARGS__)                    \
  }

#define LUCID_DISPATCH_NUMERIC(dtype, name, ...)                                                   \
  switch (dtype) {                                                                                 \
    LUCID_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                                               \
    LUCID_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                                               \
    LUCID_DISPATCH_CASE(Float16, ::lucid::Half, __VA_ARGS__)                                       \
    LUCID_DISPATCH_CASE(BFloat16, ::lucid::BFloat16, __VA_ARGS__)                                  \
    LUCID_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                               \
    LUCID_DISPATCH_CASE(Float64, double, __VA_ARGS__)                                              \
    default: ::lucid::fail<::lucid::TypeError>(name, ": not implemented for ", dtype_name(dtype)); \
  }

#define LUCID_DISPATCH_FLOAT(dtype, name, ...)                                                     \
  switch (dtype) {                                                                                 \
    LUCID_DISPATCH_CASE(Float16, ::lucid::Half, __VA_ARGS__)                                       \
    LUCID_DISPATCH_CASE(BFloat16, ::lucid::BFloat16, __VA_ARGS__)                                  \
    LUCID_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                               \
    LUCID_DISPATCH_CASE(Float64, double, __VA_ARGS__)                                              \
    default: ::lucid::fail<::lucid::TypeError>(name, ": not implemented for ", dtype_name(dtype)); \
  }
