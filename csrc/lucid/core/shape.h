#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lucid {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
Shape contiguous_strides(const Shape& s);  // in elements, row-major
std::string shape_str(const Shape& s);    // "[2, 3]"
// NumPy/PyTorch broadcasting of two shapes; InvalidArgument naming both if
// they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Wraps a possibly negative axis into [0, ndim); IndexError when out of range.
int normalize_axis(int64_t axis, int64_t ndim);
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim);

}  // namespace lucid
