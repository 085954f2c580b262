#include "lucid/backend/cuda/runtime.h"

#include <algorithm>
#include <cstring>

#include "lucid/backend/cuda/compiler.h"
#include "lucid/backend/cuda/sources.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

namespace {

std::atomic<bool> g_allow_tf32{false};

}  // namespace

bool allow_tf32() { return g_allow_tf32.load(); }
void set_allow_tf32(bool on) { g_allow_tf32.store(on); }

// ------------------------------------------------------------------ Runtime
bool Runtime::available(std::string* why) {
  if (!driver_loads(why)) return false;
  int count = 0;
  const CUresult r = driver().cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    if (why) *why = "no CUDA device was found";
    return false;
  }
  return true;
}

int Runtime::device_count() {
  if (!driver_loads()) return 0;
  int count = 0;
  if (driver().cuDeviceGetCount(&count) != CUDA_SUCCESS) return 0;
  return count;
}

Runtime& Runtime::get() {
  static Runtime* rt = [] {
    std::string why;
    if (!available(&why)) fail<Error>("CUDA is not available: ", why);
    return new Runtime();  // never destroyed: storages may be freed during exit
  }();
  rt->bind_thread();
  return *rt;
}

Runtime::Runtime() {
  const DriverApi& d = driver();
  check(d.cuDeviceGet(&device_, 0), "cuDeviceGet");
  char name[256] = {0};
  check(d.cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
  name_ = name;
  check(d.cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_), "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(&cc_major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_), "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(&cc_minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_), "cuDeviceGetAttribute");
  check(d.cuDeviceTotalMem(&total_mem_, device_), "cuDeviceTotalMem");
  cache_.set_max_cached(std::min(total_mem_ / 8, size_t(2) << 30));
  check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  check(d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(d.cuDeviceGetDefaultMemPool(&pool_, device_), "cuDeviceGetDefaultMemPool");
  // Keep freed memory in the pool (a caching allocator) until empty_cache().
  uint64_t threshold = ~uint64_t(0);
  check(d.cuMemPoolSetAttribute(pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), "cuMemPoolSetAttribute");
  // The error word is pinned host memory the kernels write through a device
  // mapping: a synchronisation reads it without a copy of its own.
  void* host = nullptr;
  check(d.cuMemHostAlloc(&host, kErrorBytes + kSmallReadBytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
        "cuMemHostAlloc");
  std::memset(host, 0, kErrorBytes);
  error_host_ = static_cast<volatile int*>(host);
  small_read_host_ = static_cast<char*>(host) + kErrorBytes;
  CUdeviceptr err = 0;
  check(d.cuMemHostGetDevicePointer(&err, host, 0), "cuMemHostGetDevicePointer");
  error_word_ = reinterpret_cast<int*>(err);
  check(d.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  try {
    precompile_fixed_modules(arch());
  } catch (const Error&) {
    // No NVRTC: the first kernel says so.
  }
}

void Runtime::bind_thread() {
  static thread_local bool bound = false;
  if (bound) return;
  check(driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  bound = true;
}

void* Runtime::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  const size_t size = cache_.block_bytes(nbytes);
  auto out_of_memory = [&] {
    fail<OutOfMemoryError>("CUDA out of memory: tried to allocate ", nbytes, " bytes (the device has ", total_mem_,
                           ")");
  };
  if (size > total_mem_) out_of_memory();  // never asked of the driver
  CUdeviceptr p = capturing_ ? 0 : reinterpret_cast<CUdeviceptr>(cache_.take(size));
  if (!p && driver().cuMemAllocAsync(&p, size, stream_) != CUDA_SUCCESS) {
    // Out of memory: return what the cache and the pool hold and try once more.
    release_cached_blocks();
    driver().cuStreamSynchronize(stream_);
    driver().cuMemPoolTrimTo(pool_, 0);
    const CUresult again = driver().cuMemAllocAsync(&p, size, stream_);
    if (again == CUDA_ERROR_OUT_OF_MEMORY) out_of_memory();
    check(again, "cuMemAllocAsync");
  }
  if (capturing_) capture_blocks_.insert(reinterpret_cast<void*>(p));
  const size_t now = allocated_.fetch_add(size) + size;
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return reinterpret_cast<void*>(p);
}

void Runtime::deallocate(void* ptr, size_t nbytes) {
  if (!ptr) return;
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  const size_t size = cache_.block_bytes(nbytes);
  allocated_.fetch_sub(size);
  // Stream-ordered: the memory is reused only by work queued after this.
  if (capture_blocks_.erase(ptr) || !cache_.keep(ptr, size))
    driver().cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), stream_);
}

void Runtime::release_cached_blocks() {
  cache_.release([this](void* p, size_t) { driver().cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(p), stream_); });
}

void Runtime::set_capturing(bool on) {
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  capturing_ = on;
}

size_t Runtime::reserved() const {
  uint64_t v = 0;
  driver().cuMemPoolGetAttribute(pool_, 5 /* CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT */, &v);
  return size_t(v);
}

void Runtime::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  release_cached_blocks();
  check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
  check(driver().cuMemPoolTrimTo(pool_, 0), "cuMemPoolTrimTo");
}

void Runtime::host_to_device(void* dst, const void* src, size_t n) {
  if (!n) return;
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  check(driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, n, stream_), "cuMemcpyHtoDAsync");
}

void Runtime::device_to_host(void* dst, const void* src, size_t n) {
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  // A small read (.item(), a loss) goes through pinned memory: a copy into
  // pageable memory waits for the stream itself, and synchronize() would
  // wait a second time.
  const bool small = n <= kSmallReadBytes;
  if (n)
    check(driver().cuMemcpyDtoHAsync(small ? small_read_host_ : dst, reinterpret_cast<CUdeviceptr>(src), n, stream_),
          "cuMemcpyDtoHAsync");
  synchronize();
  if (small && n) std::memcpy(dst, small_read_host_, n);
}

void Runtime::device_to_device(void* dst, const void* src, size_t n) {
  if (!n || dst == src) return;
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  check(driver().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), n, stream_),
        "cuMemcpyDtoDAsync");
}

void Runtime::memset(void* dst, int value, size_t n) {
  if (!n) return;
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  check(driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), (unsigned char)value, n, stream_),
        "cuMemsetD8Async");
}

void Runtime::synchronize() {
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  const DriverApi& d = driver();
  check(d.cuStreamSynchronize(stream_), "cuStreamSynchronize (a kernel failed)");
  if (*error_host_ != 0) {  // nothing runs on the stream: the kernels' writes have landed
    const int code = *error_host_;
    *error_host_ = 0;
    if (code & 1)
      fail<IndexError>("index out of range in an indexing operation on the cuda device (found when the device was "
                       "synchronised; the operation's output is undefined)");
    fail<Error>("a CUDA kernel reported error code ", code);
  }
}

double Runtime::time_ms(const std::function<void()>& enqueue) {
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  const DriverApi& d = driver();
  CUevent start = nullptr, stop = nullptr;
  check(d.cuEventCreate(&start, 0), "cuEventCreate");
  check(d.cuEventCreate(&stop, 0), "cuEventCreate");
  float ms = 0;
  try {
    check(d.cuEventRecord(start, stream_), "cuEventRecord");
    enqueue();
    check(d.cuEventRecord(stop, stream_), "cuEventRecord");
    check(d.cuEventSynchronize(stop), "cuEventSynchronize");
    check(d.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  } catch (...) {
    d.cuEventDestroy(start);
    d.cuEventDestroy(stop);
    throw;
  }
  d.cuEventDestroy(start);
  d.cuEventDestroy(stop);
  return ms;
}

// ------------------------------------------------------------------ kernels
CUmodule Runtime::load_module(const std::string& key, const std::function<std::string()>& cubin_of) {
  auto it = modules_.find(key);
  if (it != modules_.end()) return it->second;
  const std::string cubin = cubin_of();
  CUmodule m = nullptr;
  check(driver().cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData");
  modules_[key] = m;
  return m;
}

CUfunction Runtime::fixed_kernel(const std::string& module, const KernelName& kernel) {
  std::lock_guard<std::mutex> lock(module_mutex_);
  const std::string& name = kernel.name;
  const std::string fkey = module + ":" + name;
  auto it = functions_.find(fkey);
  if (it != functions_.end()) return it->second;
  const std::string key = fixed_shard_key(module, kernel.shard);
  CUmodule m = load_module(key, [&] { return take_cubin(key, fixed_shard_job(module, kernel.shard, arch())); });
  CUfunction f = nullptr;
  check(driver().cuModuleGetFunction(&f, m, name.c_str()), ("cuModuleGetFunction " + name).c_str());
  functions_[fkey] = f;
  return f;
}

namespace {

std::string generated_key(const std::string& source) {
  return "gen:" + std::to_string(source_hash(source)) + ":" + std::to_string(source.size());
}

ModuleJob generated_job(const std::string& source, const std::string& arch) {
  return ModuleJob{std::string(prelude_source()) + source, arch, false, "a compiled step's fused kernels"};
}

}  // namespace

void Runtime::prepare_kernels(const std::string& source) {
  {
    std::lock_guard<std::mutex> lock(module_mutex_);
    if (modules_.count(generated_key(source))) return;
  }
  precompile(generated_key(source), generated_job(source, arch()), /*urgent=*/true);
}

CUfunction Runtime::kernel(const std::string& source, const std::string& name) {
  std::lock_guard<std::mutex> lock(module_mutex_);
  const std::string key = generated_key(source);
  const std::string fkey = key + ":" + name;
  auto it = functions_.find(fkey);
  if (it != functions_.end()) return it->second;
  CUmodule m = load_module(key, [&] { return take_cubin(key, generated_job(source, arch())); });
  CUfunction f = nullptr;
  check(driver().cuModuleGetFunction(&f, m, name.c_str()), ("cuModuleGetFunction " + name).c_str());
  functions_[fkey] = f;
  return f;
}

void Runtime::launch_raw(CUfunction fn, const Launch& l, void* args) {
  void* params[] = {args};
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  check(driver().cuLaunchKernel(fn, l.blocks, 1, 1, l.threads, 1, 1, l.shared, stream_, params, nullptr),
        "cuLaunchKernel");
}

Launch Runtime::elementwise(int64_t n) const {
  Launch l;
  l.threads = 256;
  const int64_t blocks = std::max<int64_t>(1, (n + 255) / 256);
  l.blocks = unsigned(std::min<int64_t>(blocks, int64_t(sm_count_) * 32));
  return l;
}

Launch Runtime::rows(int64_t rows, int64_t row_length) const {
  Launch l;
  l.threads = row_length >= 1024 ? 512 : (row_length >= 256 ? 256 : (row_length >= 64 ? 128 : 32));
  l.blocks = unsigned(std::max<int64_t>(1, std::min<int64_t>(rows, 65535 * 16)));
  return l;
}

cublasHandle_t Runtime::blas() {
  std::lock_guard<std::recursive_mutex> lock(stream_mutex_);
  if (!blas_) {
    const CublasApi& c = cublas();
    check_cublas(c.cublasCreate(&blas_), "cublasCreate");
    check_cublas(c.cublasSetStream(blas_, stream_), "cublasSetStream");
    // 16-bit products sum in float32 all the way, as on the CPU: a split-k
    // reduction in the output type loses cancelling partial sums.
    check_cublas(c.cublasSetMathMode(blas_, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION), "cublasSetMathMode");
    // A workspace of our own, so cuBLAS allocates nothing while a step is
    // captured into a graph.
    const size_t bytes = size_t(32) << 20;
    CUdeviceptr ws = 0;
    check(driver().cuMemAllocAsync(&ws, bytes, stream_), "cuMemAllocAsync");
    blas_workspace_ = reinterpret_cast<void*>(ws);
    check_cublas(c.cublasSetWorkspace(blas_, blas_workspace_, bytes), "cublasSetWorkspace");
  }
  return blas_;
}

}  // namespace lucid::cuda
