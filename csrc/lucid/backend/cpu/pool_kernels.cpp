// CPU kernels of MaxPool2d and MaxPool2dBackward. Both are split across the
// pool by (image, channel) plane: planes are independent and one task owns
// each plane's gradient, so accumulation needs no atomics and its order (so
// the result) does not depend on the number of threads.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/kernels.h"

namespace lucid::cpu {

namespace {

// Below every value: padding and the start of each scan.
template <class T>
compute_t<T> lowest() {
  if constexpr (is_float_v<T>) return -std::numeric_limits<compute_t<T>>::infinity();
  else return std::numeric_limits<T>::lowest();
}

// PyTorch's update rule: a larger value or any NaN takes over, so ties keep
// the first maximum (taps are scanned in row-major order) and a NaN wins.
// Selects, not a branch: on real data the winner is unpredictable.
template <class A>
inline void take(A v, int64_t at, A& best, int64_t& where) {
  bool wins = v > best;
  if constexpr (std::is_floating_point_v<A>) wins |= v != v;
  best = wins ? v : best;
  where = wins ? at : where;
}

// One plane, any window, an output row at a time: each tap, in row-major
// order, updates the whole row (contiguous for stride 1, so it vectorises),
// skipping the outputs it would read from the padding. A window starts at
// -inf on its first tap inside the input (PyTorch's initial index), so one
// over padding alone gives -inf and a position outside the plane.
template <class T>
void pool_plane(const Window2d& w, const T* x, T* out, int64_t* idx, int64_t h, int64_t wd, int64_t oh, int64_t ow,
                compute_t<T>* best) {
  for (int64_t r = 0; r < oh; ++r, out += ow, idx += ow) {
    const int64_t top = r * w.sh - w.pad_top;
    const int64_t h0 = top < 0 ? top + (-top + w.dh - 1) / w.dh * w.dh : top;
    for (int64_t q = 0; q < ow; ++q) {
      const int64_t left = q * w.sw - w.pad_left;
      best[q] = lowest<T>();
      idx[q] = h0 * wd + (left < 0 ? left + (-left + w.dw - 1) / w.dw * w.dw : left);
    }
    for (int64_t i = 0; i < w.kh; ++i) {
      const int64_t ih = top + i * w.dh;
      if (ih < 0 || ih >= h) continue;
      for (int64_t j = 0; j < w.kw; ++j) {
        // Outputs [lo, hi) read column q*sw + off of the input.
        const int64_t off = j * w.dw - w.pad_left;
        const int64_t lo = std::min(off >= 0 ? 0 : (-off + w.sw - 1) / w.sw, ow);
        const int64_t hi = std::clamp(wd - 1 - off < 0 ? 0 : (wd - 1 - off) / w.sw + 1, lo, ow);
        const int64_t at = ih * wd + off;
        const T* src = x + at;
        if (w.sw == 1) {
          for (int64_t q = lo; q < hi; ++q) take(compute_t<T>(load(src, q)), at + q, best[q], idx[q]);
        } else if (w.sw == 2) {  // a constant stride lets the compiler vectorise too
          for (int64_t q = lo; q < hi; ++q) take(compute_t<T>(load(src, 2 * q)), at + 2 * q, best[q], idx[q]);
        } else {
          for (int64_t q = lo; q < hi; ++q) take(compute_t<T>(load(src, q * w.sw)), at + q * w.sw, best[q], idx[q]);
        }
      }
    }
    for (int64_t q = 0; q < ow; ++q) store(out, q, best[q]);
  }
}

#if defined(__AVX2__)
// float32 2x2 windows, 8 outputs at a time: shuffles split the even and odd
// columns of both input rows; a row's last, partial block uses masked loads
// and stores, so the short rows of CNN planes (14, 7 outputs) stay vectorised.
inline __m256 even_lanes(__m256 lo, __m256 hi) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
}
inline __m256 odd_lanes(__m256 lo, __m256 hi) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}
inline void take8(__m256 v, int32_t offset, __m256& best, __m256i& where) {
  const __m256 wins = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  best = _mm256_blendv_ps(best, v, wins);
  where = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(where), _mm256_castsi256_ps(_mm256_set1_epi32(offset)), wins));
}

// Outputs [q, q + n) of the row pair (a, b), n <= 8; `at` is the plane
// index of a[0] (int32: the caller checks the plane size).
template <bool kFull>
inline void pool_block8(const float* a, const float* b, float* out, int64_t* idx, int32_t at, int32_t wd, int32_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 a0, a1, b0, b1;
  __m256i keep = _mm256_set1_epi32(-1);
  if constexpr (kFull) {
    a0 = _mm256_loadu_ps(a), a1 = _mm256_loadu_ps(a + 8), b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
  } else {
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(2 * n), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(2 * n - 8), lane);
    a0 = _mm256_maskload_ps(a, m0), a1 = _mm256_maskload_ps(a + 8, m1);
    b0 = _mm256_maskload_ps(b, m0), b1 = _mm256_maskload_ps(b + 8, m1);
    keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
  }
  __m256 best = even_lanes(a0, a1);
  __m256i where = _mm256_setzero_si256();  // offset of the winning tap from the window's first
  take8(odd_lanes(a0, a1), 1, best, where);
  take8(even_lanes(b0, b1), wd, best, where);
  take8(odd_lanes(b0, b1), wd + 1, best, where);
  where = _mm256_add_epi32(_mm256_add_epi32(where, _mm256_slli_epi32(lane, 1)), _mm256_set1_epi32(at));
  const __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(where));
  const __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(where, 1));
  if constexpr (kFull) {
    _mm256_storeu_ps(out, best);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + 4), hi);
  } else {
    _mm256_maskstore_ps(out, keep, best);
    auto* dst = reinterpret_cast<long long*>(idx);
    _mm256_maskstore_epi64(dst, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(keep)), lo);
    _mm256_maskstore_epi64(dst + 4, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(keep, 1)), hi);
  }
}

// kernel = stride = 2, no padding or dilation (the common CNN pool): every
// window lies inside the input, so its first tap starts the scan.
void pool_plane_2x2(const float* x, float* out, int64_t* idx, int64_t wd, int64_t oh, int64_t ow) {
  for (int64_t r = 0; r < oh; ++r, out += ow, idx += ow) {
    const float* a = x + 2 * r * wd;
    const int32_t at = int32_t(2 * r * wd);
    int64_t q = 0;
    for (; q + 8 <= ow; q += 8)
      pool_block8<true>(a + 2 * q, a + wd + 2 * q, out + q, idx + q, at + int32_t(2 * q), int32_t(wd), 8);
    if (q < ow)
      pool_block8<false>(a + 2 * q, a + wd + 2 * q, out + q, idx + q, at + int32_t(2 * q), int32_t(wd),
                         int32_t(ow - q));
  }
}
#endif

template <class T>
void max_pool_impl(const Window2d& w, const T* x, T* out, int64_t* idx, int64_t planes, int64_t h, int64_t wd) {
  const int64_t oh = w.out_h(h), ow = w.out_w(wd), l = oh * ow;
#if defined(__AVX2__)
  const bool pool2x2 = std::is_same_v<T, float> && w.kh == 2 && w.kw == 2 && w.sh == 2 && w.sw == 2 &&
                       w.dh == 1 && w.dw == 1 && !(w.pad_top || w.pad_bottom || w.pad_left || w.pad_right) &&
                       h * wd <= std::numeric_limits<int32_t>::max();
#endif
  parallel_for(planes, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, l * w.kh * w.kw)),
               [&](int64_t b, int64_t e) {
    std::vector<compute_t<T>> best(static_cast<size_t>(ow));
    for (int64_t p = b; p < e; ++p) {
#if defined(__AVX2__)
      if constexpr (std::is_same_v<T, float>) {
        if (pool2x2) {
          pool_plane_2x2(x + p * h * wd, out + p * l, idx + p * l, wd, oh, ow);
          continue;
        }
      }
#endif
      pool_plane(w, x + p * h * wd, out + p * l, idx + p * l, h, wd, oh, ow, best.data());
    }
  });
}

// Adds each gradient at its index, output positions in order within a plane.
template <class A, class T>
void unpool_plane(const T* g, const int64_t* idx, A* acc, int64_t l, int64_t hw) {
  for (int64_t k = 0; k < l; ++k) {
    const int64_t i = idx[k];
    // Outside the plane only for a window over padding alone: it read no input.
    if (uint64_t(i) < uint64_t(hw)) acc[i] += A(load(g, k));
  }
}

template <class T>
void max_pool_backward_impl(const T* g, const int64_t* idx, T* dx, int64_t planes, int64_t l, int64_t hw) {
  using A = compute_t<T>;
  parallel_for(planes, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l + hw, 1)),
               [&](int64_t b, int64_t e) {
    std::vector<A> scratch;
    for (int64_t p = b; p < e; ++p) {
      T* out = dx + p * hw;
      if constexpr (std::is_same_v<A, T>) {  // accumulate in place
        std::fill(out, out + hw, T(0));
        unpool_plane<A>(g + p * l, idx + p * l, out, l, hw);
      } else {  // 16-bit floats: accumulate in float, round once
        scratch.assign(size_t(hw), A(0));
        unpool_plane<A>(g + p * l, idx + p * l, scratch.data(), l, hw);
        for (int64_t k = 0; k < hw; ++k) store(out, k, scratch[size_t(k)]);
      }
    }
  });
}

void max_pool2d_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const MaxPool2d&>(p);
  const Shape& s = in[0].meta->shape;
  if (out[0].meta->numel() == 0) return;
  LUCID_DISPATCH_NUMERIC(in[0].meta->dtype, "max_pool2d", [&] {
    max_pool_impl<T>(prim.win, static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data),
                     static_cast<int64_t*>(out[1].data), s[0] * s[1], s[2], s[3]);
  });
}
LUCID_REGISTER_KERNEL(MaxPool2d, CPU, max_pool2d_kernel);

void max_pool2d_backward_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const Shape& s = out[0].meta->shape;
  if (out[0].meta->numel() == 0) return;
  const Shape& gs = in[0].meta->shape;
  LUCID_DISPATCH_FLOAT(out[0].meta->dtype, "max_pool2d_backward", [&] {
    max_pool_backward_impl<T>(static_cast<const T*>(in[0].data), static_cast<const int64_t*>(in[1].data),
                              static_cast<T*>(out[0].data), s[0] * s[1], gs[2] * gs[3], s[2] * s[3]);
  });
}
LUCID_REGISTER_KERNEL(MaxPool2dBackward, CPU, max_pool2d_backward_kernel);

}  // namespace

}  // namespace lucid::cpu
