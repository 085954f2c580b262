// The CPU allocator: 64-byte aligned blocks (a cache line; what AVX-512
// loads like), registered for the cpu device at load time.
//
// Blocks from kMinCachedBlock up are kept in a BlockCache when freed: the
// C library maps such blocks in and unmaps them on every call (or trims
// them off its heap), so each eager operation with a large result would
// otherwise fault its pages in afresh, a quarter of the time of an
// elementwise op on a few MiB. Smaller blocks are the C library's.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "lucid/core/block_cache.h"
#include "lucid/core/device.h"
#include "lucid/core/error.h"

namespace lucid::cpu {

namespace {

constexpr size_t kMinCachedBlock = size_t(64) << 10;
constexpr size_t kMaxCachedBlock = size_t(64) << 20;

// What the cache may hold: a sixteenth of the machine's memory, at most 1 GiB.
size_t cache_cap() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t total = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : size_t(4) << 30;
  return std::min(total / 16, size_t(1) << 30);
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() : cache_(kMaxCachedBlock, cache_cap()) {}

  void* allocate(size_t nbytes) override {
    const size_t size = block_bytes(nbytes);
    if (size >= kMinCachedBlock) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (void* p = cache_.take(size)) return p;
    }
    void* p = std::aligned_alloc(64, size);
    if (!p && size >= kMinCachedBlock) {  // out of memory: give the cache back and try once more
      empty_cache();
      p = std::aligned_alloc(64, size);
    }
    if (!p) fail<OutOfMemoryError>("CPU out of memory: tried to allocate ", nbytes, " bytes");
    return p;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (!ptr) return;
    const size_t size = block_bytes(nbytes);
    if (size >= kMinCachedBlock) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cache_.keep(ptr, size)) return;
    }
    std::free(ptr);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.release([](void* p, size_t) { std::free(p); });
  }

  // Held across fork() so a child never inherits the lock taken.
  std::mutex& mutex() { return mutex_; }

 private:
  // 64-byte multiples (aligned_alloc's contract); the cache's size classes from 64 KiB.
  size_t block_bytes(size_t nbytes) const {
    const size_t size = ((std::max<size_t>(nbytes, 1) + 63) / 64) * 64;
    return size >= kMinCachedBlock ? cache_.block_bytes(size) : size;
  }

  std::mutex mutex_;
  BlockCache cache_;
};

// Never destroyed: tensors released during interpreter teardown still free into it.
CpuAllocator& cpu_allocator() {
  static CpuAllocator* alloc = new CpuAllocator;
  return *alloc;
}

struct Registrar {
  Registrar() {
    register_allocator(DeviceType::CPU, &cpu_allocator());
    pthread_atfork([] { cpu_allocator().mutex().lock(); }, [] { cpu_allocator().mutex().unlock(); },
                   [] { cpu_allocator().mutex().unlock(); });
  }
} registrar;

}  // namespace

}  // namespace lucid::cpu
