#pragma once
// The backend's CUDA C++ sources, compiled by NVRTC at run time: a prelude
// shared by every module, the fixed kernel modules (each instantiates its
// kernels for every dtype under extern "C" names such as unary_f32), and
// the generated fused-elementwise modules of compiled steps (fusion.h).
//
// A fixed module compiles as shards: one per kernel-name suffix (the dtype
// "f32" or element width "w4" a kernel is instantiated for; cast_f16_f32 is
// in shard "f16") and one, "", for the kernels of no dtype. A step then
// compiles only the shards of the dtypes it uses, several at once.
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

// Every shard name, the ones most programs use first.
const std::vector<std::string>& kernel_shards();
// What NVRTC compiles for one shard of a fixed module (the prelude included).
std::string shard_source(const ModuleSource& module, const std::string& shard);

// Kernel-name suffix of a dtype ("f32", "b8", ...) and of an element width
// in bytes ("w4").
const char* type_suffix(int dtype);
const char* width_suffix(size_t bytes);

}  // namespace lucid::cuda
