#pragma once
// The kernel table: how primitives reach their backends. A backend registers
// one kernel per (primitive kind, device type); the eager dispatcher and the
// backend's executable both call kernels through this table, on raw buffers.
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/primitive.h"

namespace lucid {

struct ConstArg {
  const void* data;
  const TensorMeta* meta;
};
struct MutArg {
  void* data;
  const TensorMeta* meta;
};

using Kernel = void (*)(const Primitive& prim, const std::vector<ConstArg>& inputs, const std::vector<MutArg>& outputs);

void register_kernel(OpKind kind, DeviceType device, Kernel k);
// NotImplementedError naming the primitive and device when absent.
Kernel find_kernel(const Primitive& prim, DeviceType device);
// Whether `device` has a kernel for `kind` (else callers lower to other ops).
bool has_kernel(OpKind kind, DeviceType device);

struct KernelRegistrar {
  KernelRegistrar(OpKind kind, DeviceType device, Kernel k) { register_kernel(kind, device, k); }
};

}  // namespace lucid

#define LUCID_REGISTER_KERNEL(kind, device, fn) \
  static ::lucid::KernelRegistrar lucid_kernel_registrar_##fn(::lucid::OpKind::kind, ::lucid::DeviceType::device, fn)
