#include "lucid/backend/cuda/sources.h"

#include "lucid/core/dtype.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

extern const char* const kElementwiseSource;
extern const char* const kReduceSource;
extern const char* const kIndexSource;

const std::vector<ModuleSource>& fixed_modules() {
  static const std::vector<ModuleSource> modules = {
      {"elementwise", kElementwiseSource},
      {"reduce", kReduceSource},
      {"index", kIndexSource},
  };
  return modules;
}

const ModuleSource& fixed_module(const std::string& name) {
  for (const auto& m : fixed_modules())
    if (name == m.name) return m;
  fail<Error>("internal: no CUDA kernel module named '", name, "'");
}

const char* type_suffix(int dtype) {
  switch (DType(dtype)) {
    case DType::Bool: return "b8";
    case DType::Int32: return "i32";
    case DType::Int64: return "i64";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    case DType::Float32: return "f32";
    case DType::Float64: return "f64";
  }
  return "?";
}

const char* width_suffix(size_t bytes) {
  switch (bytes) {
    case 1: return "w1";
    case 2: return "w2";
    case 4: return "w4";
    case 8: return "w8";
  }
  fail<Error>("internal: no element width ", bytes);
}

}  // namespace lucid::cuda
