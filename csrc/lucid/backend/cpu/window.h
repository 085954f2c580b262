#pragma once
// Loops shared by the CPU kernels over 2-D sliding windows: which output
// columns a kernel tap keeps inside the image, and the scatter-add of one
// plane's taps (Col2Im).
#include <algorithm>
#include <cstdint>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/ops/conv.h"

namespace lucid::cpu {

// The output columns [lo, hi) whose tap at input column offset `off`
// (= ow*sw + off) falls inside [0, width).
inline void valid_range(int64_t off, int64_t sw, int64_t width, int64_t ow_count, int64_t& lo, int64_t& hi) {
  // ow*sw + off >= 0  <=>  ow >= ceil(-off / sw)
  lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  // ow*sw + off <= width-1  <=>  ow <= floor((width-1-off) / sw)
  hi = width - 1 - off < 0 ? 0 : (width - 1 - off) / sw + 1;
  lo = std::min(lo, ow_count);
  hi = std::clamp(hi, lo, ow_count);
}

// Adds into `acc` (one [h, wd] plane of channel `ch`) every tap that reads
// it. Taps are rows (ch, i, j) of `cols`, each holding `n` images' grids of
// oh x ow window positions; this plane is image `img`'s.
template <class A, class T>
void scatter_taps_plane(const Window2d& w, const T* cols, A* acc, int64_t n, int64_t img, int64_t ch, int64_t h,
                        int64_t wd, int64_t oh, int64_t ow) {
  const int64_t l = oh * ow, kk = w.kh * w.kw;
  for (int64_t i = 0; i < w.kh; ++i)
    for (int64_t j = 0; j < w.kw; ++j) {
      const T* src = cols + ((ch * kk + i * w.kw + j) * n + img) * l;
      const int64_t col_off = j * w.dw - w.pad_left;
      int64_t lo, hi;
      valid_range(col_off, w.sw, wd, ow, lo, hi);
      for (int64_t r = 0; r < oh; ++r) {
        const int64_t ih = r * w.sh - w.pad_top + i * w.dh;
        if (ih < 0 || ih >= h) continue;
        A* dst = acc + ih * wd;
        const T* s = src + r * ow;
        if (w.sw == 1) {
          for (int64_t q = lo; q < hi; ++q) dst[q + col_off] += A(load(s, q));
        } else {
          for (int64_t q = lo; q < hi; ++q) dst[q * w.sw + col_off] += A(load(s, q));
        }
      }
    }
}

}  // namespace lucid::cpu
