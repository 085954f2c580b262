// The CPU allocator: 64-byte aligned blocks (a cache line; what AVX-512
// loads like), registered for the cpu device at load time.
#include <cstdlib>
#include <new>

#include "lucid/core/device.h"

namespace lucid::cpu {

namespace {
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    const size_t size = ((nbytes + 63) / 64) * 64;
    void* p = std::aligned_alloc(64, size == 0 ? 64 : size);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
};

struct Registrar {
  Registrar() {
    static CpuAllocator alloc;
    register_allocator(DeviceType::CPU, &alloc);
  }
} registrar;
}  // namespace

}  // namespace lucid::cpu
