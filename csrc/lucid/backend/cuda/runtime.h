#pragma once
// The CUDA device as the backend uses it: one context (the device's primary
// context, shared with cuBLAS), one stream on which every kernel, copy and
// graph runs in order, a caching stream-ordered allocator (the driver's
// memory pool, which keeps freed memory for reuse), and kernels compiled
// from source by NVRTC to the device's own architecture, cached on disk.
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lucid/backend/cuda/driver.h"
#include "lucid/core/block_cache.h"
#include "lucid/graph/ir.h"

namespace lucid::cuda {

// A fixed module's kernel: its extern "C" name and the shard it compiles in
// (sources.h).
struct KernelName {
  std::string shard, name;
};

// A kernel launch configuration.
struct Launch {
  unsigned blocks = 1, threads = 256, shared = 0;
};

class Runtime {
 public:
  // The device, initialised on first use; Error saying why when CUDA is not usable.
  static Runtime& get();
  // Whether a CUDA device can be used (the driver loads and sees a device).
  static bool available(std::string* why = nullptr);
  static int device_count();

  CUstream stream() const { return stream_; }
  // Makes the context current on the calling thread (cheap after the first call).
  void bind_thread();
  const std::string& name() const { return name_; }
  int sm_count() const { return sm_count_; }
  std::string arch() const { return "sm_" + std::to_string(cc_major_) + std::to_string(cc_minor_); }
  size_t total_memory() const { return total_mem_; }

  // ------------------------------------------------------------- memory
  void* allocate(size_t nbytes);
  void deallocate(void* ptr, size_t nbytes);
  size_t allocated() const { return allocated_.load(); }
  size_t peak_allocated() const { return peak_.load(); }
  void reset_peak() { peak_.store(allocated_.load()); }
  size_t reserved() const;  // bytes the pool holds (in use or cached)
  void empty_cache();       // returns cached memory to the driver
  // Brackets a graph capture on the stream: allocations made inside belong
  // to the graph (stream-ordered driver allocations), not to the block cache.
  void set_capturing(bool on);
  bool capturing() const { return capturing_; }

  // Copies, in stream order. host_to_device returns once `src` may be reused;
  // device_to_host waits for the copy (and everything before it).
  void host_to_device(void* dst, const void* src, size_t n);
  void device_to_host(void* dst, const void* src, size_t n);
  void device_to_device(void* dst, const void* src, size_t n);
  void memset(void* dst, int value, size_t n);
  // Waits for all queued work; raises errors kernels reported (IndexError
  // for an out-of-range index).
  void synchronize();
  // The device time of the work `enqueue` queues, in ms (waits for it).
  double time_ms(const std::function<void()>& enqueue);
  // The device word kernels report errors into.
  int* error_word() const { return error_word_; }

  // -------------------------------------------------------------- kernels
  // A kernel of the fixed module `module` (sources.h), loaded on first use.
  CUfunction fixed_kernel(const std::string& module, const KernelName& kernel);
  // Kernel `name` of a module compiled from `source` (the prelude is
  // prepended), without floating-point contraction.
  CUfunction kernel(const std::string& source, const std::string& name);
  // Starts compiling `source` in the background, for kernel() to find.
  void prepare_kernels(const std::string& source);
  // Runs `fn` with one by-value argument struct.
  template <class Args>
  void launch(CUfunction fn, const Launch& l, const Args& args) {
    launch_raw(fn, l, const_cast<Args*>(&args));
  }
  void launch_raw(CUfunction fn, const Launch& l, void* args);
  // A grid for n independent elements.
  Launch elementwise(int64_t n) const;
  // One block per row (block-wide reductions), rows capped for grid-stride loops.
  Launch rows(int64_t rows, int64_t row_length) const;

  cublasHandle_t blas();

  // A recursive lock held while a compiled step captures or replays a graph,
  // and by every operation on the stream from another thread.
  std::recursive_mutex& stream_mutex() { return stream_mutex_; }

 private:
  Runtime();
  CUmodule load_module(const std::string& key, const std::function<std::string()>& cubin_of);

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUmemoryPool pool_ = nullptr;
  std::string name_;
  int sm_count_ = 1, cc_major_ = 0, cc_minor_ = 0;
  size_t total_mem_ = 0;
  int* error_word_ = nullptr;
  static constexpr size_t kErrorBytes = 256, kSmallReadBytes = 4096;
  volatile int* error_host_ = nullptr;  // pinned and mapped (error_word_ on the device), kErrorBytes
  char* small_read_host_ = nullptr;  // pinned, kSmallReadBytes, after error_host_
  std::atomic<size_t> allocated_{0}, peak_{0};
  // Freed blocks up to 16 MiB, by size class, for the next allocation of
  // that class: every use of device memory is ordered on the one stream, so
  // a block freed by one operation can be handed to the next at once,
  // without the driver's stream-ordered allocator (microseconds a call).
  // Capped at an eighth of the device, at most 2 GiB (set once the device
  // is known). Guarded by stream_mutex_.
  BlockCache cache_{size_t(16) << 20, 0};
  bool capturing_ = false;
  std::unordered_set<void*> capture_blocks_;  // allocated inside a capture
  void release_cached_blocks();
  std::mutex module_mutex_;
  std::unordered_map<std::string, CUmodule> modules_;
  std::unordered_map<std::string, CUfunction> functions_;
  std::recursive_mutex stream_mutex_;
  cublasHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;
};

// The source of the kernels a compiled step on the cuda device generates
// for `graph` (an optimised graph): one per fused elementwise group, in one
// module; empty when nothing fuses. For compiling them without a GPU (tests).
std::string fused_module_source(const graph::Graph& graph);

// TF32 tensor cores for float32 matrix products (off by default, as
// PyTorch's torch.backends.cuda.matmul.allow_tf32).
bool allow_tf32();
void set_allow_tf32(bool on);

}  // namespace lucid::cuda
