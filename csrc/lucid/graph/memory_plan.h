#pragma once
// Pieces of an executable's memory plan that every backend shares: which
// kernels touch element i only (an output may take an input's buffer), which
// view nodes read their input's bytes in place, and a best-fit allocator of
// byte ranges in one arena, by lifetime.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>

#include "lucid/graph/ir.h"

namespace lucid::graph {

// Kernels that read and write element i at the same index only, so an
// output may take the place of an input's buffer.
inline bool is_elementwise(OpKind k) {
  return k == OpKind::Unary || k == OpKind::Binary || k == OpKind::Where || k == OpKind::Cast || k == OpKind::Copy ||
         k == OpKind::EngineUpdate;
}

// A view node whose output is one row-major block of its (row-major) input
// reads the input's bytes in place: returns its offset in elements, or -1.
inline int64_t contiguous_view_offset(const Graph& g, const Node& n) {
  if (!n.prim->is_view()) return -1;
  const std::optional<Layout> l = n.prim->view_layout(contiguous_layout(g.values[n.inputs[0]].meta.shape));
  if (!l || !is_contiguous(l->shape, l->strides)) return -1;
  return l->offset;
}

// Best-fit allocation of byte ranges in the arena, by lifetime.
class ArenaPlanner {
 public:
  explicit ArenaPlanner(size_t align = 64) : align_(align) {}
  size_t aligned(size_t n) const { return (std::max<size_t>(n, 1) + align_ - 1) / align_ * align_; }
  size_t allocate(size_t n) {
    n = aligned(n);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= n && (best == free_.end() || it->second < best->second)) best = it;
    if (best != free_.end()) {
      const size_t off = best->first, size = best->second;
      free_.erase(best);
      if (size > n) free_[off + n] = size - n;
      return off;
    }
    const size_t off = top_;
    top_ += n;
    return off;
  }
  void release(size_t off, size_t n) {
    n = aligned(n);
    auto it = free_.emplace(off, n).first;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  size_t size() const { return top_; }

 private:
  size_t align_;
  std::map<size_t, size_t> free_;
  size_t top_ = 0;
};

}  // namespace lucid::graph
