#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace lucid {

// Ordered by promotion category, then width (promote_types relies on it).
enum class DType : uint8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64 };
constexpr int kNumDTypes = 10;

size_t itemsize(DType t);
const char* dtype_name(DType t);  // "float32", ...
DType dtype_from_name(const std::string& name);
inline bool is_floating(DType t) { return t >= DType::Float16; }
inline bool is_integral(DType t, bool include_bool = false) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
// The 8- and 16-bit integer types (their conversions from floats and wider
// integers are defined apart: see core/element.h narrow_float).
inline bool is_small_integral(DType t) { return t >= DType::UInt8 && t <= DType::Int16; }
// The least and greatest values of an integer dtype (bool: 0 and 1).
int64_t integral_min(DType t);
int64_t integral_max(DType t);
// v converted to an integer dtype as C++ converts to its storage type:
// modulo 2^bits (bool: v != 0).
int64_t wrap_integral(int64_t v, DType t);
inline bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// PyTorch's promotion lattice for two tensor dtypes.
DType promote_types(DType a, DType b);

DType default_float_dtype();
void set_default_float_dtype(DType t);

// 16-bit float storage types; arithmetic is done in float32.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// With F16C (x86-64 since Ivy Bridge / Piledriver; compiled in when the
// build targets it, e.g. LUCID_NATIVE) each conversion is one instruction,
// rounding to nearest even like the portable code below.
inline float half_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#endif
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {  // round to nearest even
#if defined(__F16C__)
  if (f == f) return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
  // NaN: the quiet NaN of the portable code (F16C would keep payload bits)
#endif
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (x > 0x7f800000u ? 0x200 : 0));
  if (x >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // overflow to inf
  if (x < 0x38800000u) {                                  // subnormal or zero
    if (x < 0x33000000u) return uint16_t(sign);
    const uint32_t e = x >> 23;
    uint32_t mant = (x & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // 14 + (113 - e) - ... aligns to 2^-24 units
    const uint32_t halfway = 1u << (shift - 1);
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = ((x >> 13) - ((127 - 15) << 10));
  const uint32_t rem = x & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return uint16_t(sign | r);
}

inline float bf16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

// Bulk conversions (8 lanes at a time with F16C) for kernels that widen
// whole 16-bit operands to float32 and narrow results back. A build for this
// machine's CPU inlines the F16C loops; a portable x86-64 build (a wheel for
// any CPU) calls versions compiled for F16C when the CPU has it (dtype.cpp).
#if defined(__F16C__)
inline int64_t half_to_float_f16c(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}
inline int64_t float_to_half_f16c(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) break;  // a NaN: the scalar path from here
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}
#else
// The leading elements converted with F16C (0 on a CPU without it).
int64_t half_to_float_f16c(const Half* src, float* dst, int64_t n);
int64_t float_to_half_f16c(const float* src, Half* dst, int64_t n);
#endif

inline void half_to_float(const Half* src, float* dst, int64_t n) {
  for (int64_t i = half_to_float_f16c(src, dst, n); i < n; ++i) dst[i] = half_to_float(src[i].bits);
}

inline void float_to_half(const float* src, Half* dst, int64_t n) {
  for (int64_t i = float_to_half_f16c(src, dst, n); i < n; ++i) dst[i].bits = float_to_half(src[i]);
}

inline void bf16_to_float(const BFloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i].bits);
}

inline void float_to_bf16(const float* src, BFloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i].bits = float_to_bf16(src[i]);
}

}  // namespace lucid
