#pragma once
// CRC-32C (Castagnoli polynomial, as iSCSI, ext4 and the crc32c / google-crc32c
// packages compute it): the checksum of checkpoint headers and tensors.
#include <cstddef>
#include <cstdint>

namespace lucid::checkpoint {

// The CRC-32C of `n` bytes, continuing from `crc` (the value of the bytes
// before them; 0 to start).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
// The same through the portable table code only (what machines without a
// CRC instruction run), so tests check both against a reference.
uint32_t crc32c_portable(const void* data, size_t n, uint32_t crc = 0);

}  // namespace lucid::checkpoint
