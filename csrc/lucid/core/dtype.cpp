#include "lucid/core/dtype.h"

#include "lucid/core/error.h"

namespace lucid {

size_t itemsize(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
    case DType::Float32: return 4;
    case DType::Float64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == dtype_name(DType(i))) return DType(i);
  if (name == "float" || name == "f4") return DType::Float32;
  if (name == "double" || name == "f8") return DType::Float64;
  if (name == "half") return DType::Float16;
  if (name == "int" || name == "long") return name == "int" ? DType::Int32 : DType::Int64;
  fail<TypeError>("unknown dtype '", name, "'");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // float16 with bfloat16 has no exact common 16-bit type: float32.
  if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  return a > b ? a : b;
}

static DType g_default_float = DType::Float32;
DType default_float_dtype() { return g_default_float; }
void set_default_float_dtype(DType t) {
  LUCID_CHECK_T(TypeError, is_floating(t), "default dtype must be a floating type, got ", dtype_name(t));
  g_default_float = t;
}

}  // namespace lucid
