// CPU kernels of the convolution primitives: Conv2d, Conv2dBackwardInput and
// Conv2dBackwardWeight (ops/conv.h).
//
// The batch's output positions are cut into blocks — a few whole images, or
// a band of output rows of one image — small enough that a block's unfolded
// input (its im2col columns, [C/g * kh * kw, block positions]) stays in cache
// from being written to being read by the GEMM (the BLAS GEMM matmul uses).
// Each block is unfolded, multiplied and written out in NCHW before the
// next, so no batch-sized column matrix is ever made:
//   forward          y_blk  = W_g @ cols
//   backward-weight  dW_g  += dy_blk @ cols^T (per-part partial sums, added
//                                             in part order: deterministic)
//   backward-input   cols   = W_g^T @ dy_blk, then scattered (col2im) into dx
// A 1x1 stride-1 convolution without padding is a plain GEMM on the input
// (its unfolded matrix is the input itself). 16-bit floats compute in
// float32 and are rounded once.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lucid/backend/cpu/blas.h"
#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/backend/cpu/window.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/kernels.h"

namespace lucid::cpu {

namespace {

// Bytes of unfolded input per block: within a core's L2 beside the GEMM's
// own packed panels.
constexpr int64_t kBlockBytes = 512 << 10;

struct Geometry {
  Window2d win;
  int64_t groups;
  int64_t n, c, h, w;  // input
  int64_t o, oh, ow;   // output
  int64_t cg, og;      // channels per group, in and out
  int64_t kk, kg;      // taps; rows of a group's unfolded matrix (cg * kk)
  int64_t l, plane;    // output positions and input elements per channel
  bool unit;           // 1x1, stride 1, no padding: the input is its unfolded matrix

  Geometry(const Window2d& win, int64_t groups, const Shape& x, const Shape& y)
      : win(win), groups(groups), n(x[0]), c(x[1]), h(x[2]), w(x[3]), o(y[1]), oh(y[2]), ow(y[3]) {
    cg = c / groups;
    og = o / groups;
    kk = win.kh * win.kw;
    kg = cg * kk;
    l = oh * ow;
    plane = h * w;
    unit = kk == 1 && win.sh == 1 && win.sw == 1 && win.pad_top == 0 && win.pad_bottom == 0 && win.pad_left == 0 &&
           win.pad_right == 0;
  }
};

// Output rows [r0, r1) of images [n0, n0 + images): several whole images, or
// a band of rows of one.
struct Block {
  int64_t n0, images, r0, r1;
  int64_t cols(const Geometry& g) const { return images * (r1 - r0) * g.ow; }
  // Element offset of the block's first position in an [N, channels, OH*OW] tensor.
  int64_t at(const Geometry& g, int64_t channels, int64_t channel) const {
    return (n0 * channels + channel) * g.l + r0 * g.ow;
  }
};

std::vector<Block> plan_blocks(const Geometry& g, int64_t elem_bytes) {
  std::vector<Block> blocks;
  if (g.n == 0) return blocks;
  const int64_t row_bytes = std::max<int64_t>(1, g.kg * g.ow * elem_bytes);
  int64_t rows = std::max<int64_t>(1, kBlockBytes / row_bytes);
  if (g.unit) rows = std::min(rows, g.oh);  // one image at most: GEMMs read the input in place
  if (rows >= g.oh) {
    // Whole images, but at least one block per thread where the batch allows.
    const int64_t threads = num_threads();
    const int64_t images = std::max<int64_t>(1, std::min(rows / g.oh, (g.n + threads - 1) / threads));
    for (int64_t n0 = 0; n0 < g.n; n0 += images) blocks.push_back({n0, std::min(images, g.n - n0), 0, g.oh});
  } else {
    const int64_t bands = (g.oh + rows - 1) / rows;
    for (int64_t img = 0; img < g.n; ++img)
      for (int64_t b = 0; b < bands; ++b) blocks.push_back({img, 1, g.oh * b / bands, g.oh * (b + 1) / bands});
  }
  return blocks;
}

// Per-thread buffers reused across calls: a training step runs the same
// convolutions every step, and fresh large allocations would fault their
// pages in again each time.
template <class A>
A* scratch(int slot, int64_t n) {
  thread_local std::vector<A> buffers[2];
  std::vector<A>& b = buffers[slot];
  if (int64_t(b.size()) < n) b.resize(size_t(n));
  return b.data();
}

template <class A>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const A* a, int64_t lda, const A* b, int64_t ldb, A beta,
          A* c, int64_t ldc) {
  if constexpr (std::is_same_v<A, float>) {
    blas::sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  } else {
    blas::dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
  }
}

// The arithmetic type of storage type T.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Rows of group `grp`'s unfolded matrix over block b, as [kg, cols]: row
// (channel, i, j) holds, for each position of the block, the input element
// under tap (i, j); taps over the padding read zero.
template <class T, class A>
void unfold(const Geometry& g, const T* x, const Block& b, int64_t grp, A* cols) {
  const Window2d& win = g.win;
  for (int64_t k = 0; k < g.kg; ++k) {
    const int64_t ch = grp * g.cg + k / g.kk, i = (k / win.kw) % win.kh, j = k % win.kw;
    const int64_t col_off = j * win.dw - win.pad_left;
    int64_t lo, hi;
    valid_range(col_off, win.sw, g.w, g.ow, lo, hi);
    A* dst = cols + k * b.cols(g);
    for (int64_t img = b.n0; img < b.n0 + b.images; ++img) {
      const T* src_plane = x + (img * g.c + ch) * g.plane;
      for (int64_t r = b.r0; r < b.r1; ++r, dst += g.ow) {
        const int64_t ih = r * win.sh - win.pad_top + i * win.dh;
        if (ih < 0 || ih >= g.h) {
          std::fill(dst, dst + g.ow, A(0));
          continue;
        }
        const T* src = src_plane + ih * g.w + col_off;
        std::fill(dst, dst + lo, A(0));
        if (win.sw == 1) {
          for (int64_t q = lo; q < hi; ++q) dst[q] = A(load(src, q));
        } else {
          for (int64_t q = lo; q < hi; ++q) dst[q] = A(load(src, q * win.sw));
        }
        std::fill(dst + hi, dst + g.ow, A(0));
      }
    }
  }
}

// The adjoint of unfold for the rows of channels [c0, c1) of group grp
// (`cols` starting at channel c0's first row): each value is added into the
// input position its tap read. acc is [N, C, H, W].
template <class A>
void fold(const Geometry& g, const A* cols, const Block& b, int64_t c0, int64_t c1, A* acc) {
  const Window2d& win = g.win;
  const int64_t ncols = b.cols(g);
  for (int64_t ch = c0; ch < c1; ++ch)
    for (int64_t i = 0; i < win.kh; ++i)
      for (int64_t j = 0; j < win.kw; ++j) {
        const A* src = cols + ((ch - c0) * g.kk + i * win.kw + j) * ncols;
        const int64_t col_off = j * win.dw - win.pad_left;
        int64_t lo, hi;
        valid_range(col_off, win.sw, g.w, g.ow, lo, hi);
        for (int64_t img = b.n0; img < b.n0 + b.images; ++img) {
          A* dst_plane = acc + (img * g.c + ch) * g.plane;
          for (int64_t r = b.r0; r < b.r1; ++r, src += g.ow) {
            const int64_t ih = r * win.sh - win.pad_top + i * win.dh;
            if (ih < 0 || ih >= g.h) continue;
            A* dst = dst_plane + ih * g.w + col_off;
            if (win.sw == 1) {
              for (int64_t q = lo; q < hi; ++q) dst[q] += src[q];
            } else {
              for (int64_t q = lo; q < hi; ++q) dst[q * win.sw] += src[q];
            }
          }
        }
      }
}

// A matrix operand: `data` with leading dimension `ld`.
template <class A>
struct Mat {
  const A* data;
  int64_t ld;
};

// Group grp's unfolded input over block b: the input itself where the
// window is the identity (and no conversion is needed), else unfolded into
// scratch slot 0.
template <class T, class A>
Mat<A> unfolded(const Geometry& g, const T* x, const Block& b, int64_t grp) {
  if constexpr (std::is_same_v<T, A>) {
    if (g.unit) return {x + b.at(g, g.c, grp * g.cg), g.l};
  }
  A* cols = scratch<A>(0, g.kg * b.cols(g));
  unfold(g, x, b, grp, cols);
  return {cols, b.cols(g)};
}

// Group grp's output-gradient rows over block b, as [og, cols]: read in place
// from one image, else gathered (and converted) into scratch slot 1.
template <class T, class A>
Mat<A> gradient_rows(const Geometry& g, const T* dy, const Block& b, int64_t grp) {
  if constexpr (std::is_same_v<T, A>) {
    if (b.images == 1) return {dy + b.at(g, g.o, grp * g.og), g.l};
  }
  const int64_t ncols = b.cols(g), run = (b.r1 - b.r0) * g.ow;
  A* rows = scratch<A>(1, g.og * ncols);
  for (int64_t oc = 0; oc < g.og; ++oc)
    for (int64_t img = 0; img < b.images; ++img) {
      const T* src = dy + ((b.n0 + img) * g.o + grp * g.og + oc) * g.l + b.r0 * g.ow;
      A* dst = rows + oc * ncols + img * run;
      for (int64_t q = 0; q < run; ++q) dst[q] = A(load(src, q));
    }
  return {rows, ncols};
}

// The weight in the arithmetic type: itself, or a converted copy in `keep`.
template <class T, class A>
const A* weight_as(const T* w, int64_t n, std::vector<A>& keep) {
  if constexpr (std::is_same_v<T, A>) {
    return w;
  } else {
    keep.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) keep[size_t(i)] = A(load(w, i));
    return keep.data();
  }
}

template <class T>
void conv_forward(const Geometry& g, const T* x, const T* w_in, T* y) {
  using A = acc_t<T>;
  std::vector<A> w_keep;
  const A* w = weight_as<T, A>(w_in, g.o * g.kg, w_keep);
  const std::vector<Block> blocks = plan_blocks(g, sizeof(A));
  parallel_for(int64_t(blocks.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t bi = begin; bi < end; ++bi) {
      const Block& b = blocks[size_t(bi)];
      const int64_t ncols = b.cols(g), run = (b.r1 - b.r0) * g.ow;
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const Mat<A> cols = unfolded<T, A>(g, x, b, grp);
        const A* wg = w + grp * g.og * g.kg;
        if constexpr (std::is_same_v<T, A>) {
          if (b.images == 1) {  // straight into y's rows
            gemm<A>(false, false, g.og, ncols, g.kg, wg, g.kg, cols.data, cols.ld, A(0), y + b.at(g, g.o, grp * g.og),
                    g.l);
            continue;
          }
        }
        A* out = scratch<A>(1, g.og * ncols);
        gemm<A>(false, false, g.og, ncols, g.kg, wg, g.kg, cols.data, cols.ld, A(0), out, ncols);
        for (int64_t oc = 0; oc < g.og; ++oc)
          for (int64_t img = 0; img < b.images; ++img) {
            T* dst = y + ((b.n0 + img) * g.o + grp * g.og + oc) * g.l + b.r0 * g.ow;
            const A* src = out + oc * ncols + img * run;
            for (int64_t q = 0; q < run; ++q) store(dst, q, src[q]);
          }
      }
    }
  });
}

template <class T>
void conv_backward_weight(const Geometry& g, const T* x, const T* dy, T* dw) {
  using A = acc_t<T>;
  const std::vector<Block> blocks = plan_blocks(g, sizeof(A));
  const int64_t size = g.o * g.kg;
  // Parts of the batch, each summed into its own buffer (part 0 into dw
  // itself where the types allow); the parts are added in order after.
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), int64_t(blocks.size())));
  constexpr bool in_place = std::is_same_v<T, A>;
  std::vector<A> partials(size_t((parts - (in_place ? 1 : 0)) * size));
  auto partial = [&](int64_t p) -> A* {
    if constexpr (in_place) {
      return p == 0 ? dw : partials.data() + (p - 1) * size;
    } else {
      return partials.data() + p * size;
    }
  };
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      A* acc = partial(p);
      const int64_t b0 = int64_t(blocks.size()) * p / parts, b1 = int64_t(blocks.size()) * (p + 1) / parts;
      if (b0 == b1) std::fill(acc, acc + size, A(0));
      for (int64_t bi = b0; bi < b1; ++bi) {
        const Block& b = blocks[size_t(bi)];
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          const Mat<A> cols = unfolded<T, A>(g, x, b, grp);
          const Mat<A> grad = gradient_rows<T, A>(g, dy, b, grp);
          gemm<A>(false, true, g.og, g.kg, b.cols(g), grad.data, grad.ld, cols.data, cols.ld, bi == b0 ? A(0) : A(1),
                  acc + grp * g.og * g.kg, g.kg);
        }
      }
    }
  });
  if (parts == 1 && in_place) return;
  parallel_for(size, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      A s = partial(0)[i];
      for (int64_t p = 1; p < parts; ++p) s += partial(p)[i];
      store(dw, i, s);
    }
  });
}

template <class T>
void conv_backward_input(const Geometry& g, const T* dy, const T* w_in, T* dx) {
  using A = acc_t<T>;
  std::vector<A> w_keep;
  const A* w = weight_as<T, A>(w_in, g.o * g.kg, w_keep);
  const std::vector<Block> blocks = plan_blocks(g, sizeof(A));
  // Units: runs of blocks over the same images (one image's bands, or one
  // block of whole images); a unit's input gradient is written by it alone.
  std::vector<int64_t> unit_start;
  for (int64_t bi = 0; bi < int64_t(blocks.size()); ++bi)
    if (bi == 0 || blocks[size_t(bi)].n0 != blocks[size_t(bi - 1)].n0) unit_start.push_back(bi);
  const int64_t units = int64_t(unit_start.size());
  unit_start.push_back(int64_t(blocks.size()));
  // Fewer units than threads (a small batch): each unit's channels are split
  // too, each part with its rows of the GEMM and its planes of dx.
  const int64_t threads = num_threads();
  const int64_t parts = units >= threads ? 1 : std::min<int64_t>(g.c, (threads + units - 1) / std::max<int64_t>(units, 1));
  constexpr bool same = std::is_same_v<T, A>;
  // The unit window's GEMM writes dx whole (beta 0); other windows add taps
  // into a zeroed accumulator: dx itself, or float32 for 16-bit types.
  const bool direct = same && g.unit;
  std::vector<A> acc_keep(same ? 0 : size_t(g.n * g.c * g.plane));
  A* acc = same ? reinterpret_cast<A*>(dx) : acc_keep.data();
  parallel_for(units * parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t u = item / parts, part = item % parts;
      const int64_t c0 = g.c * part / parts, c1 = g.c * (part + 1) / parts;
      const Block& first = blocks[size_t(unit_start[size_t(u)])];
      if (!direct)
        for (int64_t img = first.n0; img < first.n0 + first.images; ++img)
          std::fill(acc + (img * g.c + c0) * g.plane, acc + (img * g.c + c1) * g.plane, A(0));
      for (int64_t bi = unit_start[size_t(u)]; bi < unit_start[size_t(u) + 1]; ++bi) {
        const Block& b = blocks[size_t(bi)];
        const int64_t ncols = b.cols(g);
        for (int64_t grp = c0 / std::max<int64_t>(g.cg, 1); grp < g.groups && grp * g.cg < c1; ++grp) {
          const int64_t gc0 = std::max(c0, grp * g.cg), gc1 = std::min(c1, (grp + 1) * g.cg);
          if (gc0 >= gc1) continue;
          const Mat<A> grad = gradient_rows<T, A>(g, dy, b, grp);
          // Rows (channel, tap) of channels [gc0, gc1): columns of W_g.
          const A* wg = w + grp * g.og * g.kg + (gc0 - grp * g.cg) * g.kk;
          const int64_t rows = (gc1 - gc0) * g.kk;
          if (direct) {
            gemm<A>(true, false, rows, ncols, g.og, wg, g.kg, grad.data, grad.ld, A(0), acc + b.at(g, g.c, gc0), g.l);
            continue;
          }
          A* cols = scratch<A>(0, rows * ncols);
          gemm<A>(true, false, rows, ncols, g.og, wg, g.kg, grad.data, grad.ld, A(0), cols, ncols);
          fold(g, cols, b, gc0, gc1, acc);
        }
      }
    }
  });
  if constexpr (!same) {
    parallel_for(g.n * g.c * g.plane, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) store(dx, i, acc[i]);
    });
  }
}

void conv2d_kernel(const Primitive& prim, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& p = static_cast<const Conv2d&>(prim);
  const TensorMeta& ym = *out[0].meta;
  if (ym.numel() == 0) return;
  const Geometry g(p.win, p.groups, in[0].meta->shape, ym.shape);
  if (g.kg == 0) {  // no input channels: empty sums
    std::memset(out[0].data, 0, size_t(ym.numel()) * itemsize(ym.dtype));
    return;
  }
  LUCID_DISPATCH_FLOAT(ym.dtype, "conv2d", [&] {
    conv_forward<T>(g, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), static_cast<T*>(out[0].data));
  });
}
LUCID_REGISTER_KERNEL(Conv2d, CPU, conv2d_kernel);

void conv2d_backward_input_kernel(const Primitive& prim, const std::vector<ConstArg>& in,
                                  const std::vector<MutArg>& out) {
  const auto& p = static_cast<const Conv2dBackwardInput&>(prim);
  const TensorMeta& xm = *out[0].meta;
  if (xm.numel() == 0) return;
  const Geometry g(p.win, p.groups, xm.shape, in[0].meta->shape);
  if (g.og == 0) {  // no output channels: nothing flows back
    std::memset(out[0].data, 0, size_t(xm.numel()) * itemsize(xm.dtype));
    return;
  }
  LUCID_DISPATCH_FLOAT(xm.dtype, "conv2d_backward_input", [&] {
    conv_backward_input<T>(g, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                           static_cast<T*>(out[0].data));
  });
}
LUCID_REGISTER_KERNEL(Conv2dBackwardInput, CPU, conv2d_backward_input_kernel);

void conv2d_backward_weight_kernel(const Primitive& prim, const std::vector<ConstArg>& in,
                                   const std::vector<MutArg>& out) {
  const auto& p = static_cast<const Conv2dBackwardWeight&>(prim);
  const TensorMeta& wm = *out[0].meta;
  if (wm.numel() == 0) return;
  const Geometry g(p.win, p.groups, in[0].meta->shape, in[1].meta->shape);
  if (g.n == 0) {  // an empty batch: empty sums
    std::memset(out[0].data, 0, size_t(wm.numel()) * itemsize(wm.dtype));
    return;
  }
  LUCID_DISPATCH_FLOAT(wm.dtype, "conv2d_backward_weight", [&] {
    conv_backward_weight<T>(g, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                            static_cast<T*>(out[0].data));
  });
}
LUCID_REGISTER_KERNEL(Conv2dBackwardWeight, CPU, conv2d_backward_weight_kernel);

}  // namespace

}  // namespace lucid::cpu
