#pragma once
// Byte-moving helpers shared by the layout kernels (and the reductions that
// need a permuted copy): all are one strided copy underneath.
#include <cstddef>
#include <vector>

#include "lucid/core/shape.h"

namespace lucid::cpu {

// dst[i...] = src[i...] over `shape`, with element strides (and element
// offsets) on both sides. Elements are `esize` bytes.
void strided_copy(void* dst, const Shape& dst_strides, int64_t dst_offset, const void* src, const Shape& src_strides,
                  int64_t src_offset, const Shape& shape, size_t esize);

// dst = src permuted (dst dim i = src dim perm[i]), both contiguous.
void permute_copy(const void* src, void* dst, const Shape& src_shape, const std::vector<int>& perm, size_t esize);

}  // namespace lucid::cpu
