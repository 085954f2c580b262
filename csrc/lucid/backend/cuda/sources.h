#pragma once
// The backend's CUDA C++ sources, compiled by NVRTC at run time: a prelude
// shared by every module, the fixed kernel modules (each instantiates its
// kernels for every dtype under extern "C" names such as unary_f32), and
// the generated fused-elementwise modules of compiled steps (fusion.h).
#include <string>
#include <vector>

namespace lucid::cuda {

const char* prelude_source();

struct ModuleSource {
  const char* name;  // "elementwise", "reduce", "index", "conv"
  const char* body;  // compiled after the prelude
};
const std::vector<ModuleSource>& fixed_modules();
const ModuleSource& fixed_module(const std::string& name);

// Kernel-name suffix of a dtype ("f32", "b8", ...) and of an element width
// in bytes ("w4").
const char* type_suffix(int dtype);
const char* width_suffix(size_t bytes);

}  // namespace lucid::cuda
