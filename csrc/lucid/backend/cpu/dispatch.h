#pragma once
// Dtype dispatch for CPU kernels: storage type T, and the type arithmetic is
// done in (float for the 16-bit floats).
#include <cstdint>
#include <type_traits>

#include "lucid/core/dtype.h"
#include "lucid/core/element.h"
#include "lucid/core/error.h"

namespace lucid::cpu {

// Element types and conversions are shared with the other host loops (core/element.h).
using element::compute_t;
using element::load;
using element::store;

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
    LUCID_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                       \
    LUCID_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Float16, ::lucid::Half, __VA_ARGS__)             \
    LUCID_DISPATCH_CASE(BFloat16, ::lucid::BFloat16, __VA_ARGS__)        \
    LUCID_DISPATCH_CASE(Float32, float, __VA_ARGS__)                     \
    LUCID_DISPATCH_CASE(Float64, double, __VA_ARGS__)                    \
  }

#define LUCID_DISPATCH_NUMERIC(dtype, name, ...)                                                   \
  switch (dtype) {                                                                                 \
    LUCID_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                                               \
    LUCID_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                                                 \
    LUCID_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                                               \
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
