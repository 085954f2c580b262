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

#if LUCID_CRC32C_X86
// SSE4.2's crc32 instruction computes exactly this polynomial; chosen at run
// time so that portable builds (no -msse4.2) still use it where present.
__attribute__((target("sse4.2"))) uint32_t crc_sse42(const unsigned char* p, size_t n, uint32_t c) {
  uint64_t c64 = c;
  for (; n && (reinterpret_cast<uintptr_t>(p) & 7); --n) c64 = _mm_crc32_u8(uint32_t(c64), *p++);
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
