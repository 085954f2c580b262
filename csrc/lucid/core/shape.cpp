#include "lucid/core/shape.h"

#include <algorithm>
#include <limits>

#include "lucid/core/error.h"

namespace lucid {

// Sizes are products of dims that users choose freely: every product is
// checked, so no shape can wrap around to a small (or negative) element
// count that the kernels would then index past. The bound keeps the byte
// size of any dtype (at most 8 bytes an element) within int64 as well.
static constexpr int64_t kMaxNumel = std::numeric_limits<int64_t>::max() / 8;

[[noreturn]] static void size_overflow(const Shape& s) {
  fail("Storage size calculation overflowed with sizes=", shape_str(s));
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  bool overflow = false;  // a later 0 does not undo an overflow (PyTorch's rule)
  for (auto d : s) {
    if (d < 0) fail("Trying to create tensor with negative dimension ", d, ": ", shape_str(s));
    overflow |= __builtin_mul_overflow(n, d, &n) || n > kMaxNumel;
  }
  if (overflow) size_overflow(s);
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {  // a size-0 dim counts as 1, as PyTorch's strides
    st[i] = acc;
    if (i > 0 && (__builtin_mul_overflow(acc, std::max<int64_t>(s[i], 1), &acc) || acc > kMaxNumel)) size_overflow(s);
  }
  return st;
}

Layout contiguous_layout(const Shape& shape, int64_t offset) { return {shape, contiguous_strides(shape), offset}; }

bool is_contiguous(const Shape& shape, const Shape& strides) {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

bool has_internal_overlap(const Shape& shape, const Shape& strides) {
  if (numel(shape) == 0) return false;  // no element to share a location
  for (size_t i = 0; i < shape.size(); ++i)
    if (strides[i] == 0 && shape[i] > 1) return true;
  return false;
}

bool is_non_overlapping_and_dense(const Shape& shape, const Shape& strides) {
  std::vector<size_t> dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1) dims.push_back(i);
  }
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::vector<int64_t> memory_order(const Shape& shape, const std::vector<Shape>& operand_strides) {
  const int64_t n = int64_t(shape.size());
  // Insertion sort from the innermost dim outwards; `should_swap(a, b)` says
  // dim a (now inside b) belongs outside it. The first operand whose strides
  // tell the two dims apart decides; a broadcast (stride-0) dim tells nothing.
  auto should_swap = [&](int64_t inner, int64_t outer) {
    for (const Shape& strides : operand_strides) {
      const int64_t s_in = strides[size_t(inner)], s_out = strides[size_t(outer)];
      if (s_in == 0 || s_out == 0) continue;
      if (s_in != s_out) return s_in < s_out ? -1 : 1;
      if (shape[size_t(inner)] > shape[size_t(outer)]) return 1;
    }
    return 0;
  };
  std::vector<int64_t> perm(static_cast<size_t>(n));  // innermost first
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = n - 1 - i;
  for (int64_t i = 1; i < n; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[size_t(d0)], perm[size_t(d1)]);
      if (c > 0) {
        std::swap(perm[size_t(d0)], perm[size_t(d1)]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return {perm.rbegin(), perm.rend()};
}

std::vector<int64_t> memory_order(const Shape& shape, const Shape& strides) {
  return memory_order(shape, std::vector<Shape>{strides});
}

bool view_strides(const Shape& from, const Shape& from_strides, const Shape& to, Shape& out) {
  out.assign(to.size(), 0);
  if (numel(from) == 0) {  // any strides describe an empty tensor: use row-major ones
    out = contiguous_strides(to);
    return true;
  }
  if (from.empty()) {  // one element: every dim of `to` has size 1
    out.assign(to.size(), 1);
    return true;
  }
  // Walk chunks of `from` that are contiguous among themselves and match
  // each with the dims of `to` that cover the same number of elements.
  int64_t view_d = int64_t(to.size()) - 1;
  int64_t chunk_base_stride = from_strides.empty() ? 1 : from_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(from.size()) - 1; d >= 0; --d) {
    tensor_numel *= from[d];
    if (d == 0 || (from[d - 1] != 1 && from_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || to[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= to[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = from_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast together (dimension ", i,
           ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_axis(int64_t axis, int64_t ndim) {
  const int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  if (axis < lo || axis > hi)
    fail<IndexError>("Dimension out of range (expected to be in range of [", lo, ", ", hi, "], but got ", axis,
                     ")");
  if (ndim == 0) return 0;
  return int(axis < 0 ? axis + ndim : axis);
}

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim) {
  std::vector<int> out;
  for (auto a : axes) {
    int ax = normalize_axis(a, ndim);
    if (std::find(out.begin(), out.end(), ax) != out.end())
      fail("dim ", ax, " appears multiple times in the list of dims");
    out.push_back(ax);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace lucid
