#include "lucid/backend/cuda/cudnn.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "lucid/backend/cuda/runtime.h"
#include "lucid/core/error.h"

namespace lucid::cuda::cudnn {

namespace {

// ------------------------------------------------------------ cuDNN 9 ABI
// The few types, values and entry points used, as cuDNN 9's cudnn_graph.h,
// cudnn_ops.h and cudnn_cnn.h declare them (C enums are ints). libcudnn.so.9
// exports the whole API and forwards each call to its sub-library
// (libcudnn_cnn.so.9 for the convolutions).
using cudnnStatus_t = int;
struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;
using cudnnHandle_t = cudnnContext*;
using cudnnTensorDescriptor_t = cudnnTensorStruct*;
using cudnnFilterDescriptor_t = cudnnFilterStruct*;
using cudnnConvolutionDescriptor_t = cudnnConvolutionStruct*;

constexpr cudnnStatus_t CUDNN_STATUS_SUCCESS = 0;
// The first status of the "not supported" category (3000-3999): the case is
// not one cuDNN runs, so the caller falls back.
constexpr cudnnStatus_t CUDNN_STATUS_NOT_SUPPORTED = 3000;
// cudnnDataType_t
constexpr int CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1, CUDNN_DATA_HALF = 2, CUDNN_DATA_BFLOAT16 = 9;
// cudnnMathType_t
constexpr int CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1, CUDNN_FMA_MATH = 3;
// cudnnTensorFormat_t, cudnnConvolutionMode_t, cudnnDeterminism_t
constexpr int CUDNN_TENSOR_NCHW = 0;
constexpr int CUDNN_CROSS_CORRELATION = 1;
constexpr int CUDNN_DETERMINISTIC = 1;

// cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionBwdDataAlgoPerf_t and
// cudnnConvolutionBwdFilterAlgoPerf_t share this layout; `algo` is the
// direction's cudnnConvolution*Algo_t, passed back to cuDNN as it came.
struct AlgoPerf {
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};
static_assert(sizeof(size_t) != 8 || (offsetof(AlgoPerf, memory) == 16 && sizeof(AlgoPerf) == 48),
              "cudnnConvolution*AlgoPerf_t is 48 bytes on 64-bit platforms, memory at offset 16");

struct Api {
  size_t (*cudnnGetVersion)();
  const char* (*cudnnGetErrorString)(cudnnStatus_t);
  void (*cudnnGetLastErrorString)(char*, size_t);  // optional
  cudnnStatus_t (*cudnnCreate)(cudnnHandle_t*);
  cudnnStatus_t (*cudnnSetStream)(cudnnHandle_t, CUstream);
  cudnnStatus_t (*cudnnCreateTensorDescriptor)(cudnnTensorDescriptor_t*);
  cudnnStatus_t (*cudnnSetTensor4dDescriptor)(cudnnTensorDescriptor_t, int format, int dataType, int n, int c, int h,
                                              int w);
  cudnnStatus_t (*cudnnDestroyTensorDescriptor)(cudnnTensorDescriptor_t);
  cudnnStatus_t (*cudnnCreateFilterDescriptor)(cudnnFilterDescriptor_t*);
  // (data type before format, unlike cudnnSetTensor4dDescriptor)
  cudnnStatus_t (*cudnnSetFilter4dDescriptor)(cudnnFilterDescriptor_t, int dataType, int format, int k, int c, int h,
                                              int w);
  cudnnStatus_t (*cudnnDestroyFilterDescriptor)(cudnnFilterDescriptor_t);
  cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t*);
  cudnnStatus_t (*cudnnSetConvolution2dDescriptor)(cudnnConvolutionDescriptor_t, int pad_h, int pad_w, int u, int v,
                                                   int dilation_h, int dilation_w, int mode, int computeType);
  cudnnStatus_t (*cudnnSetConvolutionGroupCount)(cudnnConvolutionDescriptor_t, int);
  cudnnStatus_t (*cudnnSetConvolutionMathType)(cudnnConvolutionDescriptor_t, int);
  cudnnStatus_t (*cudnnDestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t);

  cudnnStatus_t (*cudnnGetConvolutionForwardAlgorithmMaxCount)(cudnnHandle_t, int*);
  cudnnStatus_t (*cudnnGetConvolutionForwardAlgorithm_v7)(cudnnHandle_t, cudnnTensorDescriptor_t x,
                                                          cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t,
                                                          cudnnTensorDescriptor_t y, int requested, int* returned,
                                                          AlgoPerf*);
  cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(cudnnHandle_t, cudnnTensorDescriptor_t x,
                                                           cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t,
                                                           cudnnTensorDescriptor_t y, int algo, size_t*);
  cudnnStatus_t (*cudnnConvolutionForward)(cudnnHandle_t, const void* alpha, cudnnTensorDescriptor_t, const void* x,
                                           cudnnFilterDescriptor_t, const void* w, cudnnConvolutionDescriptor_t,
                                           int algo, void* workspace, size_t workspace_bytes, const void* beta,
                                           cudnnTensorDescriptor_t, void* y);

  cudnnStatus_t (*cudnnGetConvolutionBackwardDataAlgorithmMaxCount)(cudnnHandle_t, int*);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataAlgorithm_v7)(cudnnHandle_t, cudnnFilterDescriptor_t w,
                                                               cudnnTensorDescriptor_t dy,
                                                               cudnnConvolutionDescriptor_t,
                                                               cudnnTensorDescriptor_t dx, int requested,
                                                               int* returned, AlgoPerf*);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataWorkspaceSize)(cudnnHandle_t, cudnnFilterDescriptor_t w,
                                                                cudnnTensorDescriptor_t dy,
                                                                cudnnConvolutionDescriptor_t,
                                                                cudnnTensorDescriptor_t dx, int algo, size_t*);
  cudnnStatus_t (*cudnnConvolutionBackwardData)(cudnnHandle_t, const void* alpha, cudnnFilterDescriptor_t,
                                                const void* w, cudnnTensorDescriptor_t, const void* dy,
                                                cudnnConvolutionDescriptor_t, int algo, void* workspace,
                                                size_t workspace_bytes, const void* beta, cudnnTensorDescriptor_t,
                                                void* dx);

  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterAlgorithmMaxCount)(cudnnHandle_t, int*);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterAlgorithm_v7)(cudnnHandle_t, cudnnTensorDescriptor_t x,
                                                                 cudnnTensorDescriptor_t dy,
                                                                 cudnnConvolutionDescriptor_t,
                                                                 cudnnFilterDescriptor_t dw, int requested,
                                                                 int* returned, AlgoPerf*);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterWorkspaceSize)(cudnnHandle_t, cudnnTensorDescriptor_t x,
                                                                  cudnnTensorDescriptor_t dy,
                                                                  cudnnConvolutionDescriptor_t,
                                                                  cudnnFilterDescriptor_t dw, int algo, size_t*);
  cudnnStatus_t (*cudnnConvolutionBackwardFilter)(cudnnHandle_t, const void* alpha, cudnnTensorDescriptor_t,
                                                  const void* x, cudnnTensorDescriptor_t, const void* dy,
                                                  cudnnConvolutionDescriptor_t, int algo, void* workspace,
                                                  size_t workspace_bytes, const void* beta, cudnnFilterDescriptor_t,
                                                  void* dw);
};

// ----------------------------------------------------------------- loading
Api g_api;
std::once_flag g_load_once;
std::string g_reason;  // set once by load(); "" when cuDNN is usable
int64_t g_version = 0;
// One handle: the backend has one device and one stream, and every call
// below holds the stream's lock, so no two threads use the handle at once.
cudnnHandle_t g_handle = nullptr;
std::atomic<bool> g_enabled{true};

std::string status_text(cudnnStatus_t s) {
  std::string text = g_api.cudnnGetErrorString ? g_api.cudnnGetErrorString(s) : "unknown status";
  text += " (" + std::to_string(s) + ")";
  if (g_api.cudnnGetLastErrorString) {
    char detail[512] = {0};
    g_api.cudnnGetLastErrorString(detail, sizeof detail);
    if (detail[0]) text += std::string(": ") + detail;
  }
  return text;
}

// libcudnn.so.9 opens its sub-libraries (libcudnn_cnn.so.9, the engines...;
// the set changes between 9.x releases) by name when first needed, which
// the loader finds only on its search path: each is opened here from the
// directory libcudnn.so.9 came from (RTLD_GLOBAL), so that name finds it
// already loaded. cuBLAS first, which some of them link. Best effort: a
// sub-library that does not load shows as cuDNN's own error when used.
void load_sublibraries(void* symbol_of_libcudnn) {
  std::string ignored;
  open_library({"libcublasLt.so.13"}, ignored);
  open_library({"libcublas.so.13"}, ignored);
  Dl_info info{};
  if (!dladdr(symbol_of_libcudnn, &info) || !info.dli_fname) return;
  const std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
  std::vector<std::string> pending;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libcudnn_", 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".so.9") == 0)
      pending.push_back(entry.path().string());
  }
  // Until a pass opens nothing more: one may need another opened first.
  for (size_t before = pending.size() + 1; !pending.empty() && pending.size() < before;) {
    before = pending.size();
    const auto opened = [](const std::string& path) { return dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr; };
    pending.erase(std::remove_if(pending.begin(), pending.end(), opened), pending.end());
  }
}

std::string load() {
  std::string why;
  if (!Runtime::available(&why)) return "CUDA is not available: " + why;
  std::string tried;
  void* lib = open_library({"libcudnn.so.9"}, tried);
  if (!lib)
    return "cuDNN 9 (libcudnn.so.9) was not found (tried" + tried +
           "); install it with: pip install 'lucid-engine[cuda]' (or nvidia-cudnn-cu13)";
  std::string missing;
  Api& a = g_api;
  bind(lib, a.cudnnGetVersion, "cudnnGetVersion", missing);
  bind(lib, a.cudnnGetErrorString, "cudnnGetErrorString", missing);
  bind(lib, a.cudnnCreate, "cudnnCreate", missing);
  bind(lib, a.cudnnSetStream, "cudnnSetStream", missing);
  bind(lib, a.cudnnCreateTensorDescriptor, "cudnnCreateTensorDescriptor", missing);
  bind(lib, a.cudnnSetTensor4dDescriptor, "cudnnSetTensor4dDescriptor", missing);
  bind(lib, a.cudnnDestroyTensorDescriptor, "cudnnDestroyTensorDescriptor", missing);
  bind(lib, a.cudnnCreateFilterDescriptor, "cudnnCreateFilterDescriptor", missing);
  bind(lib, a.cudnnSetFilter4dDescriptor, "cudnnSetFilter4dDescriptor", missing);
  bind(lib, a.cudnnDestroyFilterDescriptor, "cudnnDestroyFilterDescriptor", missing);
  bind(lib, a.cudnnCreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor", missing);
  bind(lib, a.cudnnSetConvolution2dDescriptor, "cudnnSetConvolution2dDescriptor", missing);
  bind(lib, a.cudnnSetConvolutionGroupCount, "cudnnSetConvolutionGroupCount", missing);
  bind(lib, a.cudnnSetConvolutionMathType, "cudnnSetConvolutionMathType", missing);
  bind(lib, a.cudnnDestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor", missing);
  bind(lib, a.cudnnGetConvolutionForwardAlgorithmMaxCount, "cudnnGetConvolutionForwardAlgorithmMaxCount", missing);
  bind(lib, a.cudnnGetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7", missing);
  bind(lib, a.cudnnGetConvolutionForwardWorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize", missing);
  bind(lib, a.cudnnConvolutionForward, "cudnnConvolutionForward", missing);
  bind(lib, a.cudnnGetConvolutionBackwardDataAlgorithmMaxCount, "cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
       missing);
  bind(lib, a.cudnnGetConvolutionBackwardDataAlgorithm_v7, "cudnnGetConvolutionBackwardDataAlgorithm_v7", missing);
  bind(lib, a.cudnnGetConvolutionBackwardDataWorkspaceSize, "cudnnGetConvolutionBackwardDataWorkspaceSize", missing);
  bind(lib, a.cudnnConvolutionBackwardData, "cudnnConvolutionBackwardData", missing);
  bind(lib, a.cudnnGetConvolutionBackwardFilterAlgorithmMaxCount,
       "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", missing);
  bind(lib, a.cudnnGetConvolutionBackwardFilterAlgorithm_v7, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
       missing);
  bind(lib, a.cudnnGetConvolutionBackwardFilterWorkspaceSize, "cudnnGetConvolutionBackwardFilterWorkspaceSize",
       missing);
  bind(lib, a.cudnnConvolutionBackwardFilter, "cudnnConvolutionBackwardFilter", missing);
  if (!missing.empty()) return "libcudnn.so.9 lacks:" + missing;
  std::string optional;
  bind(lib, a.cudnnGetLastErrorString, "cudnnGetLastErrorString", optional);
  const int64_t v = int64_t(a.cudnnGetVersion());
  if (v / 10000 != 9) return "libcudnn.so.9 reports version " + std::to_string(v) + ", not 9.x";
  load_sublibraries(reinterpret_cast<void*>(a.cudnnGetVersion));
  try {
    Runtime& rt = Runtime::get();
    cudnnStatus_t s = a.cudnnCreate(&g_handle);
    if (s == CUDNN_STATUS_SUCCESS) s = a.cudnnSetStream(g_handle, rt.stream());
    if (s != CUDNN_STATUS_SUCCESS) return "cuDNN " + std::to_string(v) + " cannot start: " + status_text(s);
  } catch (const std::exception& e) {
    return e.what();
  }
  g_version = v;
  return "";
}

void ensure_loaded() {
  std::call_once(g_load_once, [] { g_reason = load(); });
}

// Whether `s` succeeded (false: cuDNN does not support the case); raises
// Error for any other failure.
bool succeeded(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return true;
  if (s / 1000 * 1000 == CUDNN_STATUS_NOT_SUPPORTED) return false;
  fail<Error>("cuDNN error in ", what, ": ", status_text(s));
}

// ----------------------------------------------------------------- plans
enum Direction { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

// The algorithm the heuristics chose for one direction, once asked.
struct Choice {
  bool searched = false, found = false;
  int algo = 0, math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

// The descriptors of one (shape, dtype, math) and its algorithms.
struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int math = CUDNN_DEFAULT_MATH;  // the math type asked for
  bool fma_only = false;          // float32 without TF32: FMA kernels only
  Choice choice[3];
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (x) g_api.cudnnDestroyTensorDescriptor(x);
    if (y) g_api.cudnnDestroyTensorDescriptor(y);
    if (w) g_api.cudnnDestroyFilterDescriptor(w);
    if (conv) g_api.cudnnDestroyConvolutionDescriptor(conv);
  }
};

// A training step has a few convolution shapes; the cache starts over
// beyond this many (descriptors are host objects, cheap to rebuild).
constexpr size_t kMaxPlans = 64;
using PlanKey = std::array<int64_t, 18>;  // ConvShape's 16 fields, dtype, math type

// Guarded by the stream lock; never destroyed (cuDNN may be gone at exit).
std::map<PlanKey, std::unique_ptr<Plan>>& plans() {
  static auto* p = new std::map<PlanKey, std::unique_ptr<Plan>>();
  return *p;
}

int data_type(DType dt) {
  switch (dt) {
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Whether the product of positive `factors` is at most INT_MAX.
bool product_fits_int(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (f > INT_MAX / p) return false;
    p *= f;
  }
  return true;
}

// cuDNN's kernels may load 16 bytes at a time; a tensor at an odd offset
// into its storage falls back.
bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether cuDNN's legacy API (int sizes and strides) can describe the case.
bool describable(const ConvShape& s, DType dt) {
  if (dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Float32 && dt != DType::Float64) return false;
  for (int64_t v : {s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.stride_h, s.stride_w, s.dil_h, s.dil_w, s.groups, s.oh,
                    s.ow})
    if (v <= 0 || !fits_int(v)) return false;
  if (!fits_int(s.pad_h) || !fits_int(s.pad_w) || s.c % s.groups || s.o % s.groups) return false;
  const int64_t oh = (s.h + 2 * s.pad_h - s.dil_h * (s.kh - 1) - 1) / s.stride_h + 1;
  const int64_t ow = (s.w + 2 * s.pad_w - s.dil_w * (s.kw - 1) - 1) / s.stride_w + 1;
  LUCID_CHECK_T(Error, oh == s.oh && ow == s.ow, "cuDNN convolution: output size ", s.oh, "x", s.ow,
                " does not match the geometry's ", oh, "x", ow);
  // Element counts (and so every stride) within int.
  return product_fits_int({s.n, s.c, s.h, s.w}) && product_fits_int({s.o, s.c / s.groups, s.kh, s.kw}) &&
         product_fits_int({s.n, s.o, s.oh, s.ow});
}

// The math type asked for: TF32 for float32 only when allowed, tensor cores
// for the 16-bit types (accumulating in float32), float64 as cuDNN likes.
int math_type(DType dt) {
  if (dt == DType::Float32) return allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  return is_half(dt) ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
}

// The plan for (s, dt), built on first use; nullptr when cuDNN cannot describe it.
Plan* plan_for(const ConvShape& s, DType dt) {
  const int math = math_type(dt);
  const PlanKey key{s.n,      s.c,        s.h,        s.w,     s.o,     s.kh,   s.kw,   s.pad_h,      s.pad_w,
                    s.stride_h, s.stride_w, s.dil_h, s.dil_w, s.groups, s.oh, s.ow, int64_t(dt), math};
  auto& cache = plans();
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  auto p = std::make_unique<Plan>();
  p->math = math;
  p->fma_only = dt == DType::Float32 && math == CUDNN_FMA_MATH;
  const Api& a = g_api;
  const int type = data_type(dt);
  const int compute = dt == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const bool ok =
      succeeded(a.cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor") &&
      succeeded(a.cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, type, int(s.n), int(s.c), int(s.h), int(s.w)),
                "cudnnSetTensor4dDescriptor") &&
      succeeded(a.cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor") &&
      succeeded(a.cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, type, int(s.n), int(s.o), int(s.oh), int(s.ow)),
                "cudnnSetTensor4dDescriptor") &&
      succeeded(a.cudnnCreateFilterDescriptor(&p->w), "cudnnCreateFilterDescriptor") &&
      succeeded(a.cudnnSetFilter4dDescriptor(p->w, type, CUDNN_TENSOR_NCHW, int(s.o), int(s.c / s.groups), int(s.kh),
                                             int(s.kw)),
                "cudnnSetFilter4dDescriptor") &&
      succeeded(a.cudnnCreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor") &&
      succeeded(a.cudnnSetConvolution2dDescriptor(p->conv, int(s.pad_h), int(s.pad_w), int(s.stride_h),
                                                  int(s.stride_w), int(s.dil_h), int(s.dil_w),
                                                  CUDNN_CROSS_CORRELATION, compute),
                "cudnnSetConvolution2dDescriptor") &&
      succeeded(a.cudnnSetConvolutionGroupCount(p->conv, int(s.groups)), "cudnnSetConvolutionGroupCount") &&
      succeeded(a.cudnnSetConvolutionMathType(p->conv, math), "cudnnSetConvolutionMathType");
  if (!ok) return nullptr;
  if (cache.size() >= kMaxPlans) cache.clear();
  return cache.emplace(key, std::move(p)).first->second.get();
}

// The workspace a call may take: a sixteenth of the device, at most 1 GiB.
size_t workspace_limit() { return std::min(Runtime::get().total_memory() / 16, size_t(1) << 30); }

cudnnStatus_t workspace_size(Direction dir, const Plan& p, int algo, size_t* bytes) {
  const Api& a = g_api;
  switch (dir) {
    case kForward: return a.cudnnGetConvolutionForwardWorkspaceSize(g_handle, p.x, p.w, p.conv, p.y, algo, bytes);
    case kBackwardData:
      return a.cudnnGetConvolutionBackwardDataWorkspaceSize(g_handle, p.w, p.y, p.conv, p.x, algo, bytes);
    default: return a.cudnnGetConvolutionBackwardFilterWorkspaceSize(g_handle, p.x, p.y, p.conv, p.w, algo, bytes);
  }
}

// Whether an algorithm transforms the operands (FFT, Winograd): its sums
// differ from the direct products' by far more than float32 rounding (a
// 5x5 weight gradient 4e-4 apart), so strict float32 takes the others.
bool transforms(Direction dir, int algo) {
  switch (dir) {
    case kForward: return algo >= 4;       // FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED
    case kBackwardData: return algo >= 2;  // FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED
    default: return algo == 2 || algo >= 4;  // FFT, WINOGRAD, WINOGRAD_NONFUSED, FFT_TILING
  }
}

// The heuristics' first deterministic algorithm (of the allowed math) whose
// workspace fits the limit, asked once per plan and direction (no timing
// runs); nullptr when there is none.
Choice* choose(Direction dir, Plan& p) {
  Choice& c = p.choice[dir];
  if (c.searched) return c.found ? &c : nullptr;
  c.searched = true;
  const Api& a = g_api;
  int max_count = 0;
  cudnnStatus_t s = dir == kForward       ? a.cudnnGetConvolutionForwardAlgorithmMaxCount(g_handle, &max_count)
                    : dir == kBackwardData ? a.cudnnGetConvolutionBackwardDataAlgorithmMaxCount(g_handle, &max_count)
                                           : a.cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(g_handle, &max_count);
  if (!succeeded(s, "cudnnGetConvolution*AlgorithmMaxCount") || max_count <= 0) return nullptr;
  // A previous direction's choice may have left another math type on the descriptor.
  if (!succeeded(a.cudnnSetConvolutionMathType(p.conv, p.math), "cudnnSetConvolutionMathType")) return nullptr;
  std::vector<AlgoPerf> perf(static_cast<size_t>(max_count));
  int returned = 0;
  switch (dir) {
    case kForward:
      s = a.cudnnGetConvolutionForwardAlgorithm_v7(g_handle, p.x, p.w, p.conv, p.y, max_count, &returned,
                                                   perf.data());
      break;
    case kBackwardData:
      s = a.cudnnGetConvolutionBackwardDataAlgorithm_v7(g_handle, p.w, p.y, p.conv, p.x, max_count, &returned,
                                                        perf.data());
      break;
    default:
      s = a.cudnnGetConvolutionBackwardFilterAlgorithm_v7(g_handle, p.x, p.y, p.conv, p.w, max_count, &returned,
                                                          perf.data());
  }
  if (!succeeded(s, "cudnnGetConvolution*Algorithm_v7")) return nullptr;
  const size_t limit = workspace_limit();
  for (int i = 0; i < std::min(returned, max_count); ++i) {
    const AlgoPerf& candidate = perf[size_t(i)];
    if (candidate.status != CUDNN_STATUS_SUCCESS || candidate.determinism != CUDNN_DETERMINISTIC) continue;
    if (p.fma_only && (candidate.mathType != CUDNN_FMA_MATH || transforms(dir, candidate.algo))) continue;
    // The workspace an algorithm needs depends on the math type it runs with.
    if (!succeeded(a.cudnnSetConvolutionMathType(p.conv, candidate.mathType), "cudnnSetConvolutionMathType"))
      continue;
    size_t bytes = 0;
    if (workspace_size(dir, p, candidate.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > limit) continue;
    c.found = true;
    c.algo = candidate.algo;
    c.math = candidate.mathType;
    c.workspace = bytes;
    return &c;
  }
  return nullptr;
}

// Device memory for one call, from the backend's stream-ordered allocator:
// freed once the call is queued, reusable by work queued after it (inside
// a graph capture it becomes the graph's).
class Workspace {
 public:
  Workspace(Runtime& rt, size_t bytes) : rt_(rt), bytes_(bytes), ptr_(rt.allocate(bytes)) {}
  ~Workspace() { rt_.deallocate(ptr_, bytes_); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  Runtime& rt_;
  size_t bytes_;
  void* ptr_;
};

// One convolution in direction `dir`: in0 and in1 are its inputs as the
// public functions take them (x, w / dy, w / x, dy), `out` its output.
bool convolve(Direction dir, const ConvShape& s, DType dt, const void* in0, const void* in1, void* out) {
  if (!g_enabled.load() || !available() || !describable(s, dt)) return false;
  if (!aligned(in0) || !aligned(in1) || !aligned(out)) return false;
  Runtime& rt = Runtime::get();
  std::lock_guard<std::recursive_mutex> lock(rt.stream_mutex());
  Plan* p = plan_for(s, dt);
  if (!p) return false;
  Choice* c = choose(dir, *p);
  if (!c) return false;
  const Api& a = g_api;
  if (!succeeded(a.cudnnSetConvolutionMathType(p->conv, c->math), "cudnnSetConvolutionMathType")) return false;
  // Scaling factors are double for float64 data, float otherwise; beta = 0 overwrites.
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const bool f64 = dt == DType::Float64;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  Workspace ws(rt, c->workspace);
  cudnnStatus_t status;
  const char* what;
  switch (dir) {
    case kForward:
      what = "cudnnConvolutionForward";
      status = a.cudnnConvolutionForward(g_handle, alpha, p->x, in0, p->w, in1, p->conv, c->algo, ws.get(),
                                         ws.bytes(), beta, p->y, out);
      break;
    case kBackwardData:
      what = "cudnnConvolutionBackwardData";
      status = a.cudnnConvolutionBackwardData(g_handle, alpha, p->w, in1, p->y, in0, p->conv, c->algo, ws.get(),
                                              ws.bytes(), beta, p->x, out);
      break;
    default:
      what = "cudnnConvolutionBackwardFilter";
      status = a.cudnnConvolutionBackwardFilter(g_handle, alpha, p->x, in0, p->y, in1, p->conv, c->algo, ws.get(),
                                                ws.bytes(), beta, p->w, out);
  }
  if (!succeeded(status, what)) {
    c->found = false;  // not again for this plan
    return false;
  }
  return true;
}

}  // namespace

bool available() {
  ensure_loaded();
  return g_reason.empty();
}

const std::string& unavailable_reason() {
  ensure_loaded();
  return g_reason;
}

int64_t version() { return available() ? g_version : 0; }

bool enabled() { return g_enabled.load(); }
void set_enabled(bool on) { g_enabled.store(on); }

bool conv2d_forward(const ConvShape& s, DType dtype, const void* x, const void* w, void* y) {
  return convolve(kForward, s, dtype, x, w, y);
}

bool conv2d_backward_data(const ConvShape& s, DType dtype, const void* dy, const void* w, void* dx) {
  return convolve(kBackwardData, s, dtype, dy, w, dx);
}

bool conv2d_backward_filter(const ConvShape& s, DType dtype, const void* x, const void* dy, void* dw) {
  return convolve(kBackwardFilter, s, dtype, x, dy, dw);
}

}  // namespace lucid::cuda::cudnn
