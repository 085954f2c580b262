#include "lucid/ops/kernels.h"

#include <array>

namespace lucid {

namespace {
struct Entry {
  Kernel kernel = nullptr;
  bool strided_inputs = false;
};
}  // namespace

static std::array<std::array<Entry, 3>, size_t(OpKind::Count)>& table() {
  static std::array<std::array<Entry, 3>, size_t(OpKind::Count)> t{};
  return t;
}

void register_kernel(OpKind kind, DeviceType device, Kernel k, bool strided_inputs) {
  table()[size_t(kind)][size_t(device)] = {k, strided_inputs};
}

bool kernel_reads_strided(OpKind kind, DeviceType device) {
  return table()[size_t(kind)][size_t(device)].strided_inputs;
}

bool has_kernel(OpKind kind, DeviceType device) { return table()[size_t(kind)][size_t(device)].kernel != nullptr; }

Kernel find_kernel(const Primitive& prim, DeviceType device) {
  Kernel k = table()[size_t(prim.kind())][size_t(device)].kernel;
  if (!k)
    fail<NotImplementedError>("the operator '", prim.name(), "' is not implemented for the ", device_type_name(device),
                              " device");
  return k;
}

static std::array<StridedCopy, 3>& copies() {
  static std::array<StridedCopy, 3> t{};
  return t;
}

void register_strided_copy(DeviceType device, StridedCopy fn) { copies()[size_t(device)] = fn; }

StridedCopy find_strided_copy(DeviceType device) {
  StridedCopy fn = copies()[size_t(device)];
  if (!fn) fail<NotImplementedError>("strided copies are not implemented for the ", device_type_name(device), " device");
  return fn;
}

}  // namespace lucid
