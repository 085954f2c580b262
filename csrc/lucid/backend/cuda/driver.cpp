#include "lucid/backend/cuda/driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "lucid/core/error.h"

namespace lucid::cuda {

namespace {

std::mutex& load_mutex() {
  static std::mutex m;
  return m;
}

std::vector<std::string>& library_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

// open_library() with load_mutex() held.
void* open_from_dirs(const std::vector<std::string>& names, std::string& tried) {
  std::vector<std::string> dirs = library_dirs();
  if (const char* env = std::getenv("LUCID_CUDA_LIBRARY_PATH")) {
    std::string s(env);
    for (size_t b = 0, e; b <= s.size(); b = e + 1) {
      e = s.find(':', b);
      if (e == std::string::npos) e = s.size();
      if (e > b) dirs.insert(dirs.begin(), s.substr(b, e - b));
    }
  }
  for (const auto& name : names) {
    for (const auto& d : dirs) {
      const std::string path = d + "/" + name;
      if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return h;
      tried += " " + path;
    }
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) return h;
    tried += " " + name;
    const char* err = dlerror();
    if (err) tried += std::string(" (") + err + ")";
  }
  return nullptr;
}

struct Loaded {
  bool tried = false;
  std::string error;  // empty once loaded
};

}  // namespace

void set_library_dirs(std::vector<std::string> dirs) {
  std::lock_guard<std::mutex> lock(load_mutex());
  library_dirs() = std::move(dirs);
}

void* open_library(const std::vector<std::string>& names, std::string& tried) {
  std::lock_guard<std::mutex> lock(load_mutex());
  return open_from_dirs(names, tried);
}

void bind_symbol(void* lib, void*& fn, const char* symbol, std::string& missing) {
  fn = dlsym(lib, symbol);
  if (!fn) missing += std::string(" ") + symbol;
}

static DriverApi g_driver;
static Loaded g_driver_state;

static void load_driver() {
  if (g_driver_state.tried) return;
  g_driver_state.tried = true;
  std::string tried;
  void* lib = open_from_dirs({"libcuda.so.1", "libcuda.so"}, tried);
  if (!lib) {
    g_driver_state.error = "the NVIDIA driver library libcuda.so.1 was not found (tried" + tried + ")";
    return;
  }
  std::string missing;
  DriverApi& d = g_driver;
  bind(lib, d.cuInit, "cuInit", missing);
  bind(lib, d.cuDriverGetVersion, "cuDriverGetVersion", missing);
  bind(lib, d.cuGetErrorString, "cuGetErrorString", missing);
  bind(lib, d.cuDeviceGetCount, "cuDeviceGetCount", missing);
  bind(lib, d.cuDeviceGet, "cuDeviceGet", missing);
  bind(lib, d.cuDeviceGetName, "cuDeviceGetName", missing);
  bind(lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  bind(lib, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2", missing);
  bind(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  bind(lib, d.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  bind(lib, d.cuStreamCreate, "cuStreamCreate", missing);
  bind(lib, d.cuStreamSynchronize, "cuStreamSynchronize", missing);
  bind(lib, d.cuStreamBeginCapture, "cuStreamBeginCapture_v2", missing);
  bind(lib, d.cuStreamEndCapture, "cuStreamEndCapture", missing);
  bind(lib, d.cuGraphInstantiate, "cuGraphInstantiateWithFlags", missing);
  bind(lib, d.cuGraphLaunch, "cuGraphLaunch", missing);
  bind(lib, d.cuGraphExecDestroy, "cuGraphExecDestroy", missing);
  bind(lib, d.cuGraphDestroy, "cuGraphDestroy", missing);
  bind(lib, d.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", missing);
  bind(lib, d.cuMemPoolSetAttribute, "cuMemPoolSetAttribute", missing);
  bind(lib, d.cuMemPoolGetAttribute, "cuMemPoolGetAttribute", missing);
  bind(lib, d.cuMemPoolTrimTo, "cuMemPoolTrimTo", missing);
  bind(lib, d.cuMemAllocAsync, "cuMemAllocAsync", missing);
  bind(lib, d.cuMemFreeAsync, "cuMemFreeAsync", missing);
  bind(lib, d.cuMemHostAlloc, "cuMemHostAlloc", missing);
  bind(lib, d.cuMemFreeHost, "cuMemFreeHost", missing);
  bind(lib, d.cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", missing);
  bind(lib, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  bind(lib, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  bind(lib, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  bind(lib, d.cuMemsetD8Async, "cuMemsetD8Async", missing);
  bind(lib, d.cuModuleLoadData, "cuModuleLoadData", missing);
  bind(lib, d.cuModuleGetFunction, "cuModuleGetFunction", missing);
  bind(lib, d.cuLaunchKernel, "cuLaunchKernel", missing);
  bind(lib, d.cuEventCreate, "cuEventCreate", missing);
  bind(lib, d.cuEventRecord, "cuEventRecord", missing);
  bind(lib, d.cuEventSynchronize, "cuEventSynchronize", missing);
  bind(lib, d.cuEventElapsedTime, "cuEventElapsedTime", missing);
  bind(lib, d.cuEventDestroy, "cuEventDestroy_v2", missing);
  if (!missing.empty()) {
    g_driver_state.error = "the NVIDIA driver is too old for lucid (missing:" + missing + ")";
    return;
  }
  const CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* msg = nullptr;
    d.cuGetErrorString(r, &msg);
    g_driver_state.error = std::string("the NVIDIA driver failed to initialise: ") + (msg ? msg : "unknown error") +
                           " (error " + std::to_string(r) + ")";
  }
}

bool driver_loads(std::string* why) {
  std::lock_guard<std::mutex> lock(load_mutex());
  load_driver();
  if (why) *why = g_driver_state.error;
  return g_driver_state.error.empty();
}

const DriverApi& driver() {
  std::string why;
  if (!driver_loads(&why)) fail<Error>("CUDA is not available: ", why);
  return g_driver;
}

static NvrtcApi g_nvrtc;
static Loaded g_nvrtc_state;

const NvrtcApi& nvrtc() {
  std::lock_guard<std::mutex> lock(load_mutex());
  if (!g_nvrtc_state.tried) {
    g_nvrtc_state.tried = true;
    std::string tried;
    // NVRTC finds its builtins library by name: loaded first (RTLD_GLOBAL)
    // from the same directory, it is found whatever the loader's path.
    open_from_dirs({"libnvrtc-builtins.so.13.0"}, tried);
    tried.clear();
    void* lib = open_from_dirs({"libnvrtc.so.13"}, tried);
    if (!lib) {
      g_nvrtc_state.error = "NVRTC (libnvrtc.so.13) was not found (tried" + tried +
                            "); install it with: pip install 'lucid-engine[cuda]' (or nvidia-cuda-nvrtc==13.0.*)";
    } else {
      std::string missing;
      NvrtcApi& n = g_nvrtc;
      bind(lib, n.nvrtcVersion, "nvrtcVersion", missing);
      bind(lib, n.nvrtcGetErrorString, "nvrtcGetErrorString", missing);
      bind(lib, n.nvrtcCreateProgram, "nvrtcCreateProgram", missing);
      bind(lib, n.nvrtcCompileProgram, "nvrtcCompileProgram", missing);
      bind(lib, n.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", missing);
      bind(lib, n.nvrtcGetProgramLog, "nvrtcGetProgramLog", missing);
      bind(lib, n.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", missing);
      bind(lib, n.nvrtcGetCUBIN, "nvrtcGetCUBIN", missing);
      bind(lib, n.nvrtcDestroyProgram, "nvrtcDestroyProgram", missing);
      if (!missing.empty()) g_nvrtc_state.error = "NVRTC lacks:" + missing;
    }
  }
  if (!g_nvrtc_state.error.empty()) fail<Error>("CUDA kernels cannot be compiled: ", g_nvrtc_state.error);
  return g_nvrtc;
}

static CublasApi g_cublas;
static Loaded g_cublas_state;

const CublasApi& cublas() {
  std::lock_guard<std::mutex> lock(load_mutex());
  if (!g_cublas_state.tried) {
    g_cublas_state.tried = true;
    std::string tried;
    open_from_dirs({"libcublasLt.so.13"}, tried);  // cuBLAS's own dependency, from the same directory
    tried.clear();
    void* lib = open_from_dirs({"libcublas.so.13"}, tried);
    if (!lib) {
      g_cublas_state.error = "cuBLAS (libcublas.so.13) was not found (tried" + tried +
                             "); install it with: pip install 'lucid-engine[cuda]' (or nvidia-cublas==13.*)";
    } else {
      std::string missing;
      CublasApi& c = g_cublas;
      bind(lib, c.cublasCreate, "cublasCreate_v2", missing);
      bind(lib, c.cublasSetStream, "cublasSetStream_v2", missing);
      bind(lib, c.cublasSetWorkspace, "cublasSetWorkspace_v2", missing);
      bind(lib, c.cublasSetMathMode, "cublasSetMathMode", missing);
      bind(lib, c.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx", missing);
      if (!missing.empty()) g_cublas_state.error = "cuBLAS lacks:" + missing;
    }
  }
  if (!g_cublas_state.error.empty()) fail<Error>("CUDA matrix products are not available: ", g_cublas_state.error);
  return g_cublas;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  if (g_driver.cuGetErrorString) g_driver.cuGetErrorString(r, &msg);
  fail<Error>("CUDA error in ", what, ": ", msg ? msg : "unknown error", " (", r, ")");
}

void check_nvrtc(nvrtcResult r, const char* what) {
  if (r == 0) return;
  fail<Error>("NVRTC error in ", what, ": ", g_nvrtc.nvrtcGetErrorString ? g_nvrtc.nvrtcGetErrorString(r) : "?");
}

void check_cublas(cublasStatus_t r, const char* what) {
  if (r == 0) return;
  fail<Error>("cuBLAS error in ", what, ": status ", r);
}

}  // namespace lucid::cuda
