#include "lucid/checkpoint/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define LUCID_CRC32C_X86 1
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define LUCID_CRC32C_ARM 1
#endif

namespace lucid::checkpoint {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, bit-reversed

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0);
    t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  return t;
}

uint32_t crc_software(const unsigned char* p, size_t n, uint32_t c) {
  static const Tables t = make_tables();
  for (; n && (reinterpret_cast<uintptr_t>(p) & 7); --n) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= c;  // little-endian hosts only (the checkpoint code requires one)
    c = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
        t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return c;
}

// GF(2) arithmetic modulo the polynomial, in the reflected bit order the CRC
// register uses, to join CRCs of consecutive blocks computed independently
// (crc(A || B) = crc(A) * x^(8|B|) + crc(B), for registers started at zero).
[[maybe_unused]] uint32_t multiply_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: what shifts a register past `bytes` zeros.
[[maybe_unused]] uint32_t shift_by_bytes(uint64_t bytes) {
  uint32_t power = 1u << 30;  // x^1
  uint32_t result = 1u << 31;  // x^0
  for (uint64_t bits = bytes * 8; bits; bits >>= 1) {
    if (bits & 1) result = multiply_mod_p(power, result);
    power = multiply_mod_p(power, power);
  }
  return result;
}

#if LUCID_CRC32C_X86
// SSE4.2's crc32 instruction computes exactly this polynomial; chosen at run
// time so that portable builds (no -msse4.2) still use it where present. It
// takes 3 cycles and issues one per cycle: three independent streams over
// consecutive blocks keep it busy, joined with shift_by_bytes.
constexpr size_t kBlock = 4096;

__attribute__((target("sse4.2"))) uint32_t crc_sse42(const unsigned char* p, size_t n, uint32_t c) {
  uint64_t c64 = c;
  for (; n && (reinterpret_cast<uintptr_t>(p) & 7); --n) c64 = _mm_crc32_u8(uint32_t(c64), *p++);
  if (n >= 3 * kBlock) {
    static const uint32_t shift1 = shift_by_bytes(kBlock), shift2 = shift_by_bytes(2 * kBlock);
    for (; n >= 3 * kBlock; n -= 3 * kBlock, p += 3 * kBlock) {
      uint64_t a = c64, b = 0, d = 0;
      for (size_t k = 0; k < kBlock; k += 8) {
        uint64_t wa, wb, wd;
        std::memcpy(&wa, p + k, 8);
        std::memcpy(&wb, p + kBlock + k, 8);
        std::memcpy(&wd, p + 2 * kBlock + k, 8);
        a = _mm_crc32_u64(a, wa);
        b = _mm_crc32_u64(b, wb);
        d = _mm_crc32_u64(d, wd);
      }
      c64 = multiply_mod_p(shift2, uint32_t(a)) ^ multiply_mod_p(shift1, uint32_t(b)) ^ uint32_t(d);
    }
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
  }
  for (; n; --n) c64 = _mm_crc32_u8(uint32_t(c64), *p++);
  return uint32_t(c64);
}
#endif

#if LUCID_CRC32C_ARM
uint32_t crc_arm(const unsigned char* p, size_t n, uint32_t c) {
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = __crc32cd(c, w);
  }
  for (; n; --n) c = __crc32cb(c, *p++);
  return c;
}
#endif

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  const uint32_t c = ~crc;
#if LUCID_CRC32C_X86
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  if (sse42) return ~crc_sse42(p, n, c);
#elif LUCID_CRC32C_ARM
  return ~crc_arm(p, n, c);
#endif
  return ~crc_software(p, n, c);
}

uint32_t crc32c_portable(const void* data, size_t n, uint32_t crc) {
  return ~crc_software(static_cast<const unsigned char*>(data), n, ~crc);
}

}  // namespace lucid::checkpoint
