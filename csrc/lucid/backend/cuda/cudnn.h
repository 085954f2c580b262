#pragma once
// cuDNN 9's convolutions for the cuda device, loaded at run time (dlopen of
// libcudnn.so.9, from NVIDIA's nvidia-cudnn-cu13 wheel, the `cuda` extra), as
// driver.h loads cuBLAS: the build needs no cuDNN. The convolution kernels
// (kernels.cpp, convolve) time these against im2col + GEMM on a shape's
// first use and keep the faster; they fall back when these return false.
// Every call runs on the backend's stream (Runtime::stream()), with
// heuristically chosen deterministic algorithms and stream-ordered workspace
// from the backend's allocator, so it can be captured into a CUDA graph.
#include <cstdint>
#include <string>

#include "lucid/core/dtype.h"

namespace lucid::cuda::cudnn {

// A 2-D convolution, cross-correlation as PyTorch's: x [n, c, h, w] (NCHW,
// contiguous), weight [o, c / groups, kh, kw], y [n, o, oh, ow]; symmetric
// zero padding pad_h / pad_w.
struct ConvShape {
  int64_t n, c, h, w, o, kh, kw, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups, oh, ow;
};

// Whether cuDNN was loaded (a CUDA device, libcudnn.so.9 of major version 9
// and a handle on the backend's stream), and why not ("" when it was). The
// first call loads it; a missing library is not an error.
bool available();
const std::string& unavailable_reason();
// cudnnGetVersion() (major * 10000 + minor * 100 + patch), 0 when not available.
int64_t version();

// torch.backends.cudnn.enabled: while false, every convolution below returns false.
bool enabled();
void set_enabled(bool on);

// Each returns false (having done nothing) when cuDNN is not loaded or
// enabled, or cannot run this case (dtype, sizes, no deterministic
// algorithm within the workspace limit); the caller falls back. cuDNN's
// other failures raise Error with cuDNN's message. Outputs are overwritten.
// Float32 uses TF32 tensor cores only when allow_tf32() (runtime.h) is on;
// float16 and bfloat16 accumulate in float32; float64 is supported.
bool conv2d_forward(const ConvShape& s, DType dtype, const void* x, const void* w, void* y);
bool conv2d_backward_data(const ConvShape& s, DType dtype, const void* dy, const void* w, void* dx);
bool conv2d_backward_filter(const ConvShape& s, DType dtype, const void* x, const void* dy, void* dw);

}  // namespace lucid::cuda::cudnn
