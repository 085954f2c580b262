// The Metal device, its command queue and the MTLBuffer allocator, registered
// for DeviceType::Metal when the library loads. Storage is shared-mode
// MTLBuffers: on unified memory the CPU reads and writes them in place, so
// numpy(), item() and to(device) work on `contents` without copies.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

#include "lucid/backend/metal/context.h"
#include "lucid/backend/metal/metal.h"
#include "lucid/core/device.h"

namespace lucid::metal {

namespace {

bool disabled_by_environment() {
  const char* v = std::getenv("LUCID_DISABLE_METAL");
  return v && *v && std::string(v) != "0";
}

id<MTLDevice> pick_device() {
  id<MTLDevice> dev = MTLCreateSystemDefaultDevice();
  if (dev == nil) {
    // Without a display connection (a daemon, a CI job) the default device
    // can be nil while the GPU is still there.
    NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
    if (all.count > 0) dev = all[0];
  }
  if (dev == nil) return nil;
  // macOS virtual machines (hosted CI runners) expose a paravirtual GPU that
  // cannot run MPSGraph; treat it as no device rather than fail every op.
  std::string name = dev.name.UTF8String ? dev.name.UTF8String : "";
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (name.find("paravirtual") != std::string::npos) return nil;
  return dev;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Size classes of the reuse pool: powers of two up to 1 MiB, then whole MiB,
// so the shapes a training loop repeats find their buffers again.
size_t size_class(size_t n) {
  if (n <= 256) return 256;
  if (n <= (size_t(1) << 20)) {
    size_t c = 512;
    while (c < n) c <<= 1;
    return c;
  }
  return round_up(n, size_t(1) << 20);
}

class MetalAllocator final : public Allocator {
 public:
  explicit MetalAllocator(Context* ctx) : ctx_(ctx) {
    // Keep at most a quarter of what the GPU should hold in the pool.
    pool_limit_ = size_t(ctx->device.recommendedMaxWorkingSetSize / 4);
  }

  void* allocate(size_t nbytes) override {
    const size_t want = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    id<MTLBuffer> buf = nil;
    auto it = pool_.find(want);
    if (it != pool_.end()) {
      buf = it->second;
      pool_.erase(it);
      pooled_ -= want;
    } else {
      buf = [ctx_->device newBufferWithLength:want options:MTLResourceStorageModeShared];
      if (buf == nil && !pool_.empty()) {
        release_pool_locked();
        buf = [ctx_->device newBufferWithLength:want options:MTLResourceStorageModeShared];
      }
      if (buf == nil)
        fail<Error>("metal: out of memory: could not allocate a buffer of ", nbytes, " bytes");
    }
    void* p = buf.contents;
    live_[reinterpret_cast<uintptr_t>(p)] = Block{buf, want};
    return p;
  }

  void deallocate(void* ptr, size_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == live_.end()) return;
    Block block = it->second;
    live_.erase(it);
    // Every op waits for the GPU before returning, so a buffer that reaches
    // here has no work in flight and can be handed out again at once.
    if (pooled_ + block.size_class <= pool_limit_) {
      pool_.emplace(block.size_class, block.buffer);
      pooled_ += block.size_class;
    }
  }

  BufferRef find(const void* ptr) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.upper_bound(p);
    if (it == live_.begin()) return {};
    --it;
    if (p >= it->first + it->second.size_class) return {};
    return {it->second.buffer, size_t(p - it->first)};
  }

  size_t cached() {
    std::lock_guard<std::mutex> lock(mu_);
    return pooled_;
  }

  void release_pool() {
    std::lock_guard<std::mutex> lock(mu_);
    release_pool_locked();
  }

 private:
  void release_pool_locked() {
    pool_.clear();
    pooled_ = 0;
  }

  struct Block {
    id<MTLBuffer> buffer;
    size_t size_class;  // the length asked of Metal (its own `length` may round up)
  };

  Context* ctx_;
  std::mutex mu_;
  std::map<uintptr_t, Block> live_;            // contents address -> block
  std::multimap<size_t, id<MTLBuffer>> pool_;  // size class -> reusable buffer
  size_t pooled_ = 0;
  size_t pool_limit_ = 0;
};

// Never destroyed: tensors held by Python can be released after static
// destructors have run, and their buffers must still find the allocator.
MetalAllocator* allocator() {
  static MetalAllocator* a = context() ? new MetalAllocator(context()) : nullptr;
  return a;
}

struct Registrar {
  Registrar() {
    if (MetalAllocator* a = allocator()) register_allocator(DeviceType::Metal, a);
  }
} registrar;

}  // namespace

Context* context() {
  static Context* ctx = []() -> Context* {
    if (disabled_by_environment()) return nullptr;
    @autoreleasepool {
      id<MTLDevice> dev = pick_device();
      if (dev == nil) return nullptr;
      auto* c = new Context();  // lives as long as the process, like the allocator
      c->device = dev;
      c->queue = [dev newCommandQueue];
      c->graph_device = [MPSGraphDevice deviceWithMTLDevice:dev];
      if (c->queue == nil || c->graph_device == nil) {
        delete c;
        return nullptr;
      }
      return c;
    }
  }();
  return ctx;
}

Context& checked_context() {
  Context* c = context();
  if (!c) fail<TypeError>("device 'metal' is not available in this build of lucid");
  return *c;
}

BufferRef find_buffer(const void* ptr) {
  MetalAllocator* a = allocator();
  return a && ptr ? a->find(ptr) : BufferRef{};
}

id<MTLBuffer> new_shared_buffer(size_t nbytes) {
  Context& ctx = checked_context();
  id<MTLBuffer> buf = [ctx.device newBufferWithLength:round_up(nbytes == 0 ? 16 : nbytes, 16)
                                              options:MTLResourceStorageModeShared];
  if (buf == nil) fail<Error>("metal: out of memory: could not allocate a buffer of ", nbytes, " bytes");
  return buf;
}

MPSDataType mps_dtype(DType t, const char* what) {
  switch (t) {
    case DType::Bool: return MPSDataTypeBool;
    case DType::UInt8: return MPSDataTypeUInt8;
    case DType::Int8: return MPSDataTypeInt8;
    case DType::Int16: return MPSDataTypeInt16;
    case DType::Int32: return MPSDataTypeInt32;
    case DType::Int64: return MPSDataTypeInt64;
    case DType::Float16: return MPSDataTypeFloat16;
    case DType::Float32: return MPSDataTypeFloat32;
    case DType::BFloat16:
      if (@available(macOS 14.0, *)) return MPSDataTypeBFloat16;
      fail<TypeError>(what, ": bfloat16 on the metal device needs macOS 14 or newer (MPSGraph has no bfloat16 "
                      "before it); use float16 or float32");
    case DType::Float64:
      break;
  }
  fail<TypeError>(what, ": float64 is not supported on the metal device (MPSGraph has no 64-bit float type); "
                  "convert with .float() first");
}

MPSShape* mps_shape(const Shape& s) {
  if (s.empty()) return @[ @1 ];
  NSMutableArray<NSNumber*>* a = [NSMutableArray arrayWithCapacity:s.size()];
  for (int64_t d : s) [a addObject:@((long long)d)];
  return a;
}

void wait_and_check(id<MTLCommandBuffer> cb, const std::string& what) {
  [cb waitUntilCompleted];
  if (cb.status == MTLCommandBufferStatusError) {
    NSError* e = cb.error;
    fail<Error>(what, ": the Metal command buffer failed: ",
                e ? std::string(e.localizedDescription.UTF8String) : std::string("unknown error"));
  }
}

std::string device_name() {
  Context* c = context();
  return c ? std::string(c->device.name.UTF8String) : std::string();
}

size_t cached_bytes() {
  MetalAllocator* a = allocator();
  return a ? a->cached() : 0;
}

void empty_cache() {
  if (MetalAllocator* a = allocator()) a->release_pool();
}

}  // namespace lucid::metal
