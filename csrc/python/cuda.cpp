// lucid._C's CUDA functions (lucid.cuda wraps them): availability, memory
// statistics, synchronisation, the library search path, cuDNN's switches
// (lucid.backends.cudnn) and the NVRTC check that CI runs without a GPU.
#include <array>

#include "bindings.h"
#include "lucid/backend/cuda/compiler.h"
#include "lucid/backend/cuda/cudnn.h"
#include "lucid/backend/cuda/runtime.h"
#include "lucid/backend/cuda/sources.h"
#include "lucid/graph/executable.h"

namespace lucid::python {

void init_cuda(py::module_& m) {
  py::module_ c = m.def_submodule("_cuda", "the CUDA backend");
  c.def("set_library_dirs", &cuda::set_library_dirs);
  c.def("availability", [] {
    std::string why;
    const bool ok = cuda::Runtime::available(&why);
    return py::make_tuple(ok, why);
  });
  c.def("device_count", &cuda::Runtime::device_count);
  c.def("device_name", [] { return cuda::Runtime::get().name(); });
  c.def("arch", [] { return cuda::Runtime::get().arch(); });
  c.def("total_memory", [] { return cuda::Runtime::get().total_memory(); });
  c.def("synchronize", [] {
    py::gil_scoped_release nogil;
    cuda::Runtime::get().synchronize();
  });
  c.def("memory_allocated", [] { return cuda::Runtime::get().allocated(); });
  c.def("max_memory_allocated", [] { return cuda::Runtime::get().peak_allocated(); });
  c.def("reset_peak_memory_stats", [] { cuda::Runtime::get().reset_peak(); });
  c.def("memory_reserved", [] { return cuda::Runtime::get().reserved(); });
  c.def("empty_cache", [] { cuda::Runtime::get().empty_cache(); });
  c.def("allow_tf32", &cuda::allow_tf32);
  c.def("set_allow_tf32", &cuda::set_allow_tf32);
  // cuDNN: (available, why not); loading it starts the device.
  c.def("cudnn_availability", [] {
    bool ok = false;
    {
      py::gil_scoped_release nogil;
      ok = cuda::cudnn::available();
    }
    return py::make_tuple(ok, cuda::cudnn::unavailable_reason());
  });
  c.def("cudnn_version", &cuda::cudnn::version);
  c.def("cudnn_enabled", &cuda::cudnn::enabled);
  c.def("set_cudnn_enabled", &cuda::cudnn::set_enabled);
  // One cuDNN convolution of contiguous cuda tensors, for the tests (the
  // convolution kernels call cudnn.h themselves). `direction` "forward":
  // (x, w) -> y; "backward_data": (dy, w) -> dx; "backward_filter":
  // (x, dy) -> dw; x_shape and w_shape give the geometry. None when cuDNN
  // declines the case.
  c.def("cudnn_conv2d", [](const std::string& direction, const Tensor& a, const Tensor& b, const Shape& x_shape,
                           const Shape& w_shape, std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                           std::array<int64_t, 2> dilation, int64_t groups) -> py::object {
    LUCID_CHECK(x_shape.size() == 4 && w_shape.size() == 4, "cudnn_conv2d: x_shape and w_shape must have 4 sizes");
    cuda::cudnn::ConvShape s{x_shape[0], x_shape[1], x_shape[2], x_shape[3], w_shape[0], w_shape[2], w_shape[3],
                             padding[0], padding[1], stride[0], stride[1], dilation[0], dilation[1], groups, 0, 0};
    LUCID_CHECK(s.stride_h > 0 && s.stride_w > 0 && s.dil_h > 0 && s.dil_w > 0 && groups > 0,
                "cudnn_conv2d: stride, dilation and groups must be positive");
    s.oh = (s.h + 2 * s.pad_h - s.dil_h * (s.kh - 1) - 1) / s.stride_h + 1;
    s.ow = (s.w + 2 * s.pad_w - s.dil_w * (s.kw - 1) - 1) / s.stride_w + 1;
    const Shape y_shape{s.n, s.o, s.oh, s.ow};
    Shape a_shape = x_shape, b_shape = w_shape, out_shape = y_shape;
    if (direction == "backward_data") a_shape = y_shape, out_shape = x_shape;
    else if (direction == "backward_filter") b_shape = y_shape, out_shape = w_shape;
    else LUCID_CHECK(direction == "forward", "cudnn_conv2d: unknown direction '", direction, "'");
    for (const Tensor* t : {&a, &b})
      LUCID_CHECK_T(TypeError, t->device().type == DeviceType::CUDA && t->is_contiguous() && t->dtype() == a.dtype(),
                    "cudnn_conv2d: the operands must be contiguous cuda tensors of one dtype");
    LUCID_CHECK(a.shape() == a_shape && b.shape() == b_shape, "cudnn_conv2d: operand shapes ", shape_str(a.shape()),
                " and ", shape_str(b.shape()), " do not match the geometry (", shape_str(a_shape), " and ",
                shape_str(b_shape), ")");
    Tensor out = Tensor::empty(out_shape, a.dtype(), a.device());
    bool ran = false;
    {
      py::gil_scoped_release nogil;
      if (direction == "forward")
        ran = cuda::cudnn::conv2d_forward(s, a.dtype(), a.raw_data(), b.raw_data(), out.raw_data());
      else if (direction == "backward_data")
        ran = cuda::cudnn::conv2d_backward_data(s, a.dtype(), a.raw_data(), b.raw_data(), out.raw_data());
      else
        ran = cuda::cudnn::conv2d_backward_filter(s, a.dtype(), a.raw_data(), b.raw_data(), out.raw_data());
    }
    return ran ? py::cast(out) : py::none();
  });
  // [(module, NVRTC log)] for every fixed kernel module that fails to
  // compile for `arch`; needs NVRTC only.
  c.def("compile_kernel_modules", [](const std::string& arch) {
    py::gil_scoped_release nogil;
    return cuda::compile_fixed_modules(arch);
  });
  // The shards of the fixed modules and one shard's machine code (cubin,
  // an ELF file), compiled with NVRTC for `arch`.
  c.def("kernel_shards", [] {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    for (const auto& m : cuda::fixed_modules()) out.emplace_back(m.name, cuda::kernel_shards());
    return out;
  });
  c.def("compile_kernel_shard", [](const std::string& module, const std::string& shard, const std::string& arch) {
    std::string cubin;
    {
      py::gil_scoped_release nogil;
      cubin = cuda::compile_cubin(cuda::fixed_shard_job(module, shard, arch));
    }
    return py::bytes(cubin);
  });
  // A graph compiler for compiled steps (lucid._C._compile_steps_with) that
  // builds the CPU executable, after compiling with NVRTC for `arch` the
  // kernels the cuda executable would generate for the graph's fused groups:
  // checks the generated kernels on a machine without a GPU.
  c.def("fused_kernel_checker", [](const std::string& arch) {
    GraphCompiler c;
    c.name = "cpu, the cuda fused kernels compiled for " + arch;
    c.fn = [arch](graph::Graph g, std::vector<graph::RandomKeyFeed> rf) {
      const std::string source = cuda::fused_module_source(g);
      if (!source.empty())
        cuda::compile_cubin(cuda::ModuleJob{std::string(cuda::prelude_source()) + source, arch, false});
      return graph::compile(std::move(g), std::move(rf), DeviceType::CPU);
    };
    return c;
  });
  c.def("nvrtc_version", [] {
    int major = 0, minor = 0;
    cuda::nvrtc().nvrtcVersion(&major, &minor);
    return py::make_tuple(major, minor);
  });
}

}  // namespace lucid::python
