// lucid._C's CUDA functions (lucid.cuda wraps them): availability, memory
// statistics, synchronisation, the library search path and the NVRTC check
// that CI runs without a GPU.
#include "bindings.h"
#include "lucid/backend/cuda/compiler.h"
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
