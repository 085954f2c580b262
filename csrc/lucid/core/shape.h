#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lucid/core/hash.h"

namespace lucid {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
Shape contiguous_strides(const Shape& s);  // in elements, row-major

// Where a tensor's elements lie in memory, in elements: element i... is at
// offset + sum(i[d] * strides[d]).
struct Layout {
  Shape shape, strides;
  int64_t offset = 0;
  bool operator==(const Layout& o) const { return shape == o.shape && strides == o.strides && offset == o.offset; }
};
inline size_t hash_value(const Layout& l) {
  return hash_seq(hash_seq(std::hash<int64_t>()(l.offset), l.shape), l.strides);
}
Layout contiguous_layout(const Shape& shape, int64_t offset = 0);
// PyTorch's rule: strides match the row-major ones wherever a dim has more
// than one element (so size-1 dims and empty tensors never break it).
bool is_contiguous(const Shape& shape, const Shape& strides);
// Whether two elements can share a memory location (a stride-0 dim of size
// > 1): PyTorch refuses in-place writes into such tensors.
bool has_internal_overlap(const Shape& shape, const Shape& strides);
// Whether the elements fill a block of memory exactly, in some dim order
// (PyTorch's is_non_overlapping_and_dense).
bool is_non_overlapping_and_dense(const Shape& shape, const Shape& strides);
// The order of the dims in memory, outermost first, as PyTorch's
// TensorIterator sorts them for a result: by decreasing stride, a
// broadcast (stride-0) dim keeping its place, equal strides putting the
// larger dim outside. Row-major gives 0, 1, ..., n-1.
std::vector<int64_t> memory_order(const Shape& shape, const Shape& strides);
// The same for an elementwise result of several operands (their strides
// broadcast to `shape`, 0 where broadcast): the first operand that tells
// two dims apart decides their order.
std::vector<int64_t> memory_order(const Shape& shape, const std::vector<Shape>& operand_strides);
// The strides a reshape to `to` can keep without a copy (PyTorch's
// computeStride), or nothing when the memory order does not allow a view.
bool view_strides(const Shape& from, const Shape& from_strides, const Shape& to, Shape& out);
std::string shape_str(const Shape& s);    // "[2, 3]"
// NumPy/PyTorch broadcasting of two shapes; InvalidArgument naming both if
// they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Wraps a possibly negative axis into [0, ndim); IndexError when out of range.
int normalize_axis(int64_t axis, int64_t ndim);
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim);

}  // namespace lucid
