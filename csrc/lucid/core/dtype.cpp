#include "lucid/core/dtype.h"

#include "lucid/core/error.h"

#if !defined(__F16C__) && (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
#include <immintrin.h>
#define LUCID_F16C_AT_RUN_TIME 1
#endif

namespace lucid {

size_t itemsize(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::UInt8: return 1;
    case DType::Int8: return 1;
    case DType::Int16: return 2;
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
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
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
  if (name == "byte") return DType::UInt8;
  if (name == "char") return DType::Int8;
  if (name == "short") return DType::Int16;
  fail<TypeError>("unknown dtype '", name, "'");
}

int64_t integral_min(DType t) {
  switch (t) {
    case DType::Int8: return INT8_MIN;
    case DType::Int16: return INT16_MIN;
    case DType::Int32: return INT32_MIN;
    case DType::Int64: return INT64_MIN;
    default: return 0;
  }
}

int64_t integral_max(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::UInt8: return UINT8_MAX;
    case DType::Int8: return INT8_MAX;
    case DType::Int16: return INT16_MAX;
    case DType::Int32: return INT32_MAX;
    default: return INT64_MAX;
  }
}

int64_t wrap_integral(int64_t v, DType t) {
  const uint64_t u = uint64_t(v);
  switch (t) {
    case DType::Bool: return v != 0;
    case DType::UInt8: return uint8_t(u);
    case DType::Int8: return int8_t(uint8_t(u));
    case DType::Int16: return int16_t(uint16_t(u));
    case DType::Int32: return int32_t(uint32_t(u));
    default: return v;
  }
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // uint8 with int8: the narrowest type holding both ranges.
  if ((a == DType::UInt8 && b == DType::Int8) || (a == DType::Int8 && b == DType::UInt8)) return DType::Int16;
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

#if !defined(__F16C__)
#if defined(LUCID_F16C_AT_RUN_TIME)
namespace {

bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return yes;
}

// The F16C loops of dtype.h, compiled for F16C whatever the build targets.
__attribute__((target("avx,f16c"))) int64_t half_to_float_vector(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}

__attribute__((target("avx,f16c"))) int64_t float_to_half_vector(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) break;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

}  // namespace

int64_t half_to_float_f16c(const Half* src, float* dst, int64_t n) {
  return has_f16c() ? half_to_float_vector(src, dst, n) : 0;
}
int64_t float_to_half_f16c(const float* src, Half* dst, int64_t n) {
  return has_f16c() ? float_to_half_vector(src, dst, n) : 0;
}
#else
int64_t half_to_float_f16c(const Half*, float*, int64_t) { return 0; }
int64_t float_to_half_f16c(const float*, Half*, int64_t) { return 0; }
#endif
#endif

}  // namespace lucid
