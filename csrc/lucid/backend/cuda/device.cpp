// Registers the cuda device: its allocator (the runtime's caching
// allocator; the first allocation initialises CUDA and says why when it
// cannot) and its transfers to and from host memory.
#include "lucid/backend/cuda/runtime.h"
#include "lucid/core/device.h"
#include "lucid/core/error.h"
#include "lucid/ops/kernels.h"

namespace lucid::cuda {

namespace {

class CudaAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override { return Runtime::get().allocate(nbytes); }
  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr) Runtime::get().deallocate(ptr, nbytes);
  }
  bool usable() const override { return Runtime::available(); }
};

void check_index(const Device& d) {
  if (d.type == DeviceType::CUDA && d.index != 0)
    fail<NotImplementedError>("device '", d.str(), "': lucid uses one CUDA device, cuda:0");
}

void transfer(void* dst, const Device& dst_device, const void* src, const Device& src_device, size_t n) {
  check_index(dst_device);
  check_index(src_device);
  Runtime& rt = Runtime::get();
  const bool from_gpu = src_device.type == DeviceType::CUDA, to_gpu = dst_device.type == DeviceType::CUDA;
  if (from_gpu && to_gpu) rt.device_to_device(dst, src, n);
  else if (to_gpu) rt.host_to_device(dst, src, n);
  else rt.device_to_host(dst, src, n);
}

struct Registrar {
  Registrar() {
    static CudaAllocator allocator;
    register_allocator(DeviceType::CUDA, &allocator);
    register_device_transfer(DeviceType::CUDA, transfer);
  }
} registrar;

}  // namespace

}  // namespace lucid::cuda
