#pragma once
// The kernel table: how primitives reach their backends. A backend registers
// one kernel per (primitive kind, device type); the eager dispatcher and the
// backend's executable both call kernels through this table, on raw buffers.
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/primitive.h"

namespace lucid {

struct ConstArg {
  const void* data;  // element [0, ...]
  const TensorMeta* meta;
  // Element strides, for kernels registered as reading strided operands;
  // null means row-major (every operand of every other kernel).
  const Shape* strides = nullptr;
};
struct MutArg {
  void* data;
  const TensorMeta* meta;
};

using Kernel = void (*)(const Primitive& prim, const std::vector<ConstArg>& inputs, const std::vector<MutArg>& outputs);

// `strided_inputs`: the kernel reads operands of any layout (ConstArg::strides),
// so the dispatcher hands views over as they are instead of copying them.
void register_kernel(OpKind kind, DeviceType device, Kernel k, bool strided_inputs = false);
// NotImplementedError naming the primitive and device when absent.
Kernel find_kernel(const Primitive& prim, DeviceType device);
// Whether `device` has a kernel for `kind` (else callers lower to other ops).
bool has_kernel(OpKind kind, DeviceType device);
bool kernel_reads_strided(OpKind kind, DeviceType device);

// Copies elements between two layouts of one shape on a device (element
// strides and offsets; `dst`/`src` are the buffers' starts). Every backend
// registers one: it makes strided operands contiguous for kernels and
// writes into views.
using StridedCopy = void (*)(void* dst, const Layout& dst_layout, const void* src, const Layout& src_layout,
                             DType dtype);
void register_strided_copy(DeviceType device, StridedCopy fn);
StridedCopy find_strided_copy(DeviceType device);

struct KernelRegistrar {
  KernelRegistrar(OpKind kind, DeviceType device, Kernel k, bool strided_inputs = false) {
    register_kernel(kind, device, k, strided_inputs);
  }
};
struct StridedCopyRegistrar {
  StridedCopyRegistrar(DeviceType device, StridedCopy fn) { register_strided_copy(device, fn); }
};

}  // namespace lucid

#define LUCID_REGISTER_STRIDED_COPY(device, fn) \
  static ::lucid::StridedCopyRegistrar lucid_strided_copy_registrar_##fn(::lucid::DeviceType::device, fn)

#define LUCID_REGISTER_STRIDED_KERNEL(kind, device, fn)                                                  \
  static ::lucid::KernelRegistrar lucid_kernel_registrar_##kind##_##fn(::lucid::OpKind::kind,             \
                                                                       ::lucid::DeviceType::device, fn, true)

#define LUCID_REGISTER_KERNEL(kind, device, fn) \
  static ::lucid::KernelRegistrar lucid_kernel_registrar_##kind##_##fn(::lucid::OpKind::kind, ::lucid::DeviceType::device, fn)
