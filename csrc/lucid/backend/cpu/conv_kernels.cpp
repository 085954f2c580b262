// CPU kernels of Im2Col and Col2Im. Im2Col's rows (c, i, j) x image n are
// independent, so they are split across the pool; Col2Im is split by
// (image, channel) plane, which no two tasks share, so accumulation needs no
// atomics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/backend/cpu/window.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/kernels.h"

namespace lucid::cpu {

namespace {

// The padding value in T: clamped to T's range for integers (-inf pads an
// integer max-pool with the lowest value).
template <class T>
T pad_as(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v > 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  } else {
    T out;
    store(&out, 0, compute_t<T>(v));
    return out;
  }
}

template <class T>
void im2col_impl(const Window2d& w, const T* x, T* cols, int64_t n, int64_t c, int64_t h, int64_t wd, T pad) {
  const int64_t oh = w.out_h(h), ow = w.out_w(wd), l = oh * ow, kk = w.kh * w.kw;
  const int64_t tasks = c * kk * n;
  parallel_for(tasks, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l, 1)), [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const int64_t row = q / n, img = q % n;
      const int64_t ch = row / kk, i = (row / w.kw) % w.kh, j = row % w.kw;
      const T* plane = x + (img * c + ch) * h * wd;
      T* dst = cols + q * l;
      const int64_t col_off = j * w.dw - w.pad_left;
      int64_t lo, hi;
      valid_range(col_off, w.sw, wd, ow, lo, hi);
      for (int64_t r = 0; r < oh; ++r, dst += ow) {
        const int64_t ih = r * w.sh - w.pad_top + i * w.dh;
        if (ih < 0 || ih >= h) {
          for (int64_t k = 0; k < ow; ++k) dst[k] = pad;
          continue;
        }
        // Rows are short (one output row): plain loops the compiler
        // vectorises beat library calls here.
        const T* src = plane + ih * wd;
        for (int64_t k = 0; k < lo; ++k) dst[k] = pad;
        if (w.sw == 1) {
          for (int64_t k = lo; k < hi; ++k) dst[k] = src[k + col_off];
        } else {
          for (int64_t k = lo; k < hi; ++k) dst[k] = src[k * w.sw + col_off];
        }
        for (int64_t k = hi; k < ow; ++k) dst[k] = pad;
      }
    }
  });
}

template <class T>
void col2im_impl(const Window2d& w, const T* cols, T* x, int64_t n, int64_t c, int64_t h, int64_t wd) {
  using A = compute_t<T>;
  const int64_t l = w.out_h(h) * w.out_w(wd), kk = w.kh * w.kw;
  parallel_for(n * c, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(kk * l, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> scratch;
    for (int64_t p = b; p < e; ++p) {
      T* out = x + p * h * wd;
      if constexpr (std::is_same_v<A, T>) {  // accumulate in place
        std::fill(out, out + h * wd, T(0));
        scatter_taps_plane<A>(w, cols, out, n, p / c, p % c, h, wd, w.out_h(h), w.out_w(wd));
      } else {  // 16-bit floats: accumulate in float, round once
        scratch.assign(size_t(h * wd), A(0));
        scatter_taps_plane<A>(w, cols, scratch.data(), n, p / c, p % c, h, wd, w.out_h(h), w.out_w(wd));
        for (int64_t k = 0; k < h * wd; ++k) store(out, k, scratch[size_t(k)]);
      }
    }
  });
}

void im2col_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const Im2Col&>(p);
  const Shape& s = in[0].meta->shape;
  if (out[0].meta->numel() == 0) return;
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "im2col", [&] {
    im2col_impl<T>(prim.win, static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data), s[0], s[1], s[2], s[3],
                   pad_as<T>(prim.pad_value));
  });
}
LUCID_REGISTER_KERNEL(Im2Col, CPU, im2col_kernel);

void col2im_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const Col2Im&>(p);
  const Shape& s = out[0].meta->shape;
  if (out[0].meta->numel() == 0) return;
  LUCID_DISPATCH_NUMERIC(out[0].meta->dtype, "col2im", [&] {
    col2im_impl<T>(prim.win, static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data), s[0], s[1], s[2], s[3]);
  });
}
LUCID_REGISTER_KERNEL(Col2Im, CPU, col2im_kernel);

}  // namespace

}  // namespace lucid::cpu
