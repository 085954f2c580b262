#pragma once
// Iteration over broadcast / strided operands: the loop nest of an
// elementwise kernel, with dims merged where every operand is contiguous
// across them, so the innermost loop is as long as possible.
#include <algorithm>
#include <vector>

#include "lucid/core/shape.h"

namespace lucid::cpu {

// Element strides of `in` broadcast to `out` (0 along broadcast dims), for
// an operand laid out row-major or with the given strides.
inline Shape broadcast_strides(const Shape& in, const Shape& out, const Shape* strides = nullptr) {
  Shape st(out.size(), 0);
  const Shape cs = strides ? *strides : contiguous_strides(in);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[lead + i] = in[i] == 1 ? 0 : cs[i];
  return st;
}

template <int N>
class StridedLoop {
 public:
  // `strides[k]` are operand k's element strides over `shape`.
  StridedLoop(const Shape& shape, const Shape* const strides[N]) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      if (!shape_.empty()) {
        bool merge = true;
        for (int k = 0; k < N; ++k) merge &= (*strides[k])[d] * shape[d] == strides_[k].back();
        // strides_[k].back() is the stride of the previous kept dim; merging
        // needs prev_stride == stride * size (checked above).
        if (merge) {
          shape_.back() *= shape[d];
          for (int k = 0; k < N; ++k) strides_[k].back() = (*strides[k])[d];
          continue;
        }
      }
      shape_.push_back(shape[d]);
      for (int k = 0; k < N; ++k) strides_[k].push_back((*strides[k])[d]);
    }
    if (shape_.empty()) {
      shape_.push_back(1);
      for (int k = 0; k < N; ++k) strides_[k].push_back(0);
    }
  }

  int64_t inner_size() const { return shape_.back(); }
  int64_t inner_stride(int k) const { return strides_[k].back(); }

  // Calls fn(pos, offsets[N], count) for runs of the innermost dim covering
  // linear output positions [begin, end).
  template <class F>
  void run(int64_t begin, int64_t end, F&& fn) const {
    const int nd = int(shape_.size());
    std::vector<int64_t> idx(nd);
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % shape_[d];
      rem /= shape_[d];
    }
    int64_t pos = begin;
    int64_t off[N];
    while (pos < end) {
      for (int k = 0; k < N; ++k) {
        off[k] = 0;
        for (int d = 0; d < nd; ++d) off[k] += idx[d] * strides_[k][d];
      }
      const int64_t count = std::min(shape_[nd - 1] - idx[nd - 1], end - pos);
      fn(pos, off, count);
      pos += count;
      idx[nd - 1] += count;
      for (int d = nd - 1; d > 0 && idx[d] == shape_[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  }

 private:
  Shape shape_;
  std::vector<int64_t> strides_[N];
};

}  // namespace lucid::cpu
