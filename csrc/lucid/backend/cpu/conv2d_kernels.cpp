// CPU kernels of the convolution primitives: Conv2d, Conv2dBackwardInput and
// Conv2dBackwardWeight (ops/conv.h). Two ways to compute each, chosen per
// shape by the work each would waste (use_direct), both with the register
// tiles of block_gemm.h, which read the large operand where it lies:
//
// Unfolding (any stride): the batch's output positions are cut into blocks
// — a few whole images, or a band of output rows of one image — small
// enough that a block's unfolded input (its im2col columns,
// [C/g * kh * kw, block positions]) stays in cache from being written (in
// the column strips the product reads, no packing pass) to being read. Each
// block is unfolded, multiplied and written out in NCHW before the next, so
// no batch-sized column matrix is ever made:
//   forward          y_blk   = W_g cols
//   backward-weight  dW_g^T += cols dy_blk^T
//   backward-input   cols    = W_g^T dy_blk, scattered (col2im) into dx
// A 1x1 stride-1 convolution without padding has the input as its unfolded
// matrix: its blocks are copied, not unfolded, and its input gradient is
// the product itself.
//
// Direct (stride 1, where the SIMD tiles are built): no unfold; each tap is
// a shifted read of the block's (padded) input rows (see "direct path").
//
// Weight gradients are summed per part of the batch, the parts added in
// order: deterministic for a thread count. 16-bit floats compute in
// float32 and are rounded once. Without the SIMD tiles (other CPUs), the
// unfolding path's products are BLAS calls.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lucid/backend/cpu/block_gemm.h"
#include "lucid/backend/cpu/conv2d_path.h"
#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/backend/cpu/window.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/kernels.h"

namespace lucid::cpu {

namespace {

// Bytes of unfolded input per block: within a core's L2 beside the
// product's other operands.
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
// a band of rows of one. Its columns are its positions, image by image.
struct Block {
  int64_t n0, images, r0, r1;
  int64_t run(const Geometry& g) const { return (r1 - r0) * g.ow; }  // positions per image
  int64_t cols(const Geometry& g) const { return images * run(g); }
  // Element offset of image `img`'s first position in the block, in an [N, channels, OH*OW] tensor.
  int64_t at(const Geometry& g, int64_t img, int64_t channels, int64_t channel) const {
    return ((n0 + img) * channels + channel) * g.l + r0 * g.ow;
  }
};

std::vector<Block> plan_blocks(const Geometry& g, int64_t elem_bytes) {
  std::vector<Block> blocks;
  if (g.n == 0) return blocks;
  const int64_t row_bytes = std::max<int64_t>(1, g.kg * g.ow * elem_bytes);
  const int64_t rows = std::max<int64_t>(1, kBlockBytes / row_bytes);
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

// Per-thread buffers reused across calls (a training step runs the same
// convolutions every step; fresh large allocations would fault their pages
// in again each time), 64-byte aligned.
enum Slot { kCols, kGrad, kOut, kSlots };
template <class A>
A* scratch(Slot slot, int64_t n) {
  thread_local std::vector<A> buffers[kSlots];
  constexpr int64_t kAlign = 64 / sizeof(A);
  std::vector<A>& b = buffers[slot];
  if (int64_t(b.size()) < n + kAlign) b.resize(size_t(n + kAlign));
  const uintptr_t at = reinterpret_cast<uintptr_t>(b.data());
  return b.data() + ((64 - at % 64) % 64) / sizeof(A);
}

// The arithmetic type of storage type T.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A [rows, cols] matrix in column strips of `width` (block_gemm.h): the
// strip-relative address of (row, col), and the element count including
// the last strip's padding.
struct Strips {
  int64_t rows, width;
  int64_t at(int64_t row, int64_t col) const { return (col / width) * rows * width + row * width + col % width; }
  int64_t size(int64_t cols) const { return (cols + width - 1) / width * rows * width; }
};

// The block's output rows cut where strips end: a run of consecutive
// positions (one output row of one image, within one strip), the same for
// every row of the matrix. `dst` is the run's first position in row 0.
struct Run {
  int64_t dst, img, r, q0, count;
};
std::vector<Run> runs_of(const Geometry& g, const Block& b, const Strips& s) {
  std::vector<Run> runs;
  for (int64_t img = 0, col = 0; img < b.images; ++img)
    for (int64_t r = b.r0; r < b.r1; ++r)
      for (int64_t q = 0; q < g.ow;) {
        const int64_t lane = col % s.width, count = std::min(g.ow - q, s.width - lane);
        runs.push_back({s.at(0, col), b.n0 + img, r, q, count});
        q += count;
        col += count;
      }
  return runs;
}

// dst[q] for q < count: the source values src[q * step] for q in [lo, hi), zero elsewhere.
template <class T, class A>
inline void copy_run(A* dst, const T* src, int64_t step, int64_t count, int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, count);
  hi = std::clamp<int64_t>(hi, lo, count);
  for (int64_t q = 0; q < lo; ++q) dst[q] = A(0);
  if (step == 1) {
    for (int64_t q = lo; q < hi; ++q) dst[q] = A(load(src, q));
  } else {
    for (int64_t q = lo; q < hi; ++q) dst[q] = A(load(src, q * step));
  }
  for (int64_t q = hi; q < count; ++q) dst[q] = A(0);
}

// Group grp's unfolded input over block b, in strips: row (channel, i, j)
// holds, for each position of the block, the input element under tap (i, j);
// taps over the padding read zero.
template <class T, class A>
void unfold(const Geometry& g, const T* x, const Block& b, int64_t grp, A* cols, const Strips& s) {
  const Window2d& win = g.win;
  const std::vector<Run> runs = runs_of(g, b, s);
  for (int64_t c = 0, k = 0; c < g.cg; ++c) {
    const T* channel = x + (grp * g.cg + c) * g.plane;
    for (int64_t i = 0; i < win.kh; ++i)
      for (int64_t j = 0; j < win.kw; ++j, ++k) {
        const int64_t col_off = j * win.dw - win.pad_left, row_off = i * win.dh - win.pad_top;
        int64_t lo, hi;  // the output columns whose tap lies inside the image
        valid_range(col_off, win.sw, g.w, g.ow, lo, hi);
        A* row = cols + k * s.width;
        for (const Run& run : runs) {
          const int64_t ih = run.r * win.sh + row_off;
          const bool inside = ih >= 0 && ih < g.h;
          const T* src = channel + run.img * g.c * g.plane + (inside ? ih * g.w + col_off + run.q0 * win.sw : 0);
          copy_run(row + run.dst, src, win.sw, run.count, inside ? lo - run.q0 : run.count, hi - run.q0);
        }
      }
  }
}

// The adjoint of unfold for the rows of channels [c0, c1) of group grp
// (`cols` row-major [rows, block columns], starting at channel c0's first
// row): each value is added into the input position its tap read. acc is
// [N, C, H, W].
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

// Rows [first_channel, first_channel + rows) of an [N, channels, OH*OW]
// tensor over block b, into `m` (strips or row-major), converted to A.
template <class T, class A>
void gather_rows(const Geometry& g, const T* t, int64_t channels, const Block& b, int64_t first_channel,
                 int64_t rows, A* m, const Strips& s) {
  const std::vector<Run> runs = runs_of(g, b, s);
  for (int64_t row = 0; row < rows; ++row)
    for (const Run& run : runs)
      copy_run(m + row * s.width + run.dst,
               t + (run.img * channels + first_channel + row) * g.l + run.r * g.ow + run.q0, 1, run.count, 0,
               run.count);
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
  // Each group's weight packed once, for every block.
  const int64_t packed_size = block_gemm_packed_size<A>(g.og, g.kg);
  std::vector<A> packed(size_t(g.groups * packed_size));
  for (int64_t grp = 0; grp < g.groups; ++grp)
    block_gemm_pack(g.og, g.kg, w + grp * g.og * g.kg, g.kg, packed.data() + grp * packed_size);
  const std::vector<Block> blocks = plan_blocks(g, sizeof(A));
  parallel_for(int64_t(blocks.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t bi = begin; bi < end; ++bi) {
      const Block& b = blocks[size_t(bi)];
      const int64_t ncols = b.cols(g), run = b.run(g);
      const Strips s{g.kg, block_gemm_strip<A>(ncols)};
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        A* cols = scratch<A>(kCols, s.size(ncols));
        unfold(g, x, b, grp, cols, s);
        const A* wg = packed.data() + grp * packed_size;
        if constexpr (std::is_same_v<T, A>) {
          if (b.images == 1) {  // straight into y's rows
            block_gemm_nn(g.og, ncols, g.kg, wg, cols, false, y + b.at(g, 0, g.o, grp * g.og), g.l);
            continue;
          }
        }
        A* out = scratch<A>(kOut, g.og * ncols);
        block_gemm_nn(g.og, ncols, g.kg, wg, cols, false, out, ncols);
        for (int64_t oc = 0; oc < g.og; ++oc)
          for (int64_t img = 0; img < b.images; ++img) {
            T* dst = y + b.at(g, img, g.o, grp * g.og + oc);
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
  // Parts of the batch, each summing its blocks into its own buffer; the
  // parts are added in order after. A part holds each group's dW^T
  // [kg, og]: the unfolded block is the product's large operand, read row
  // by row in place.
  const int64_t size = g.o * g.kg;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), int64_t(blocks.size())));
  std::vector<A> partials(size_t(parts * size));
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      A* acc = partials.data() + p * size;
      const int64_t b0 = int64_t(blocks.size()) * p / parts, b1 = int64_t(blocks.size()) * (p + 1) / parts;
      if (b0 == b1) std::fill(acc, acc + size, A(0));
      for (int64_t bi = b0; bi < b1; ++bi) {
        const Block& b = blocks[size_t(bi)];
        const int64_t ncols = b.cols(g);
        const Strips rows{g.kg, ncols}, grad_rows{g.og, ncols};  // row-major
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          const A *cols = nullptr, *grad = nullptr;
          int64_t ld_cols = ncols, ld_grad = ncols;
          if constexpr (std::is_same_v<T, A>) {
            if (g.unit && b.images == 1) {  // the input's rows are the unfolded ones
              cols = x + b.at(g, 0, g.c, grp * g.cg);
              ld_cols = g.l;
            }
            if (b.images == 1) {
              grad = dy + b.at(g, 0, g.o, grp * g.og);
              ld_grad = g.l;
            }
          }
          if (!cols) {
            A* buf = scratch<A>(kCols, g.kg * ncols);
            unfold(g, x, b, grp, buf, rows);
            cols = buf;
          }
          if (!grad) {
            A* buf = scratch<A>(kGrad, g.og * ncols);
            gather_rows(g, dy, g.o, b, grp * g.og, g.og, buf, grad_rows);
            grad = buf;
          }
          block_gemm_nt(g.kg, g.og, ncols, cols, ld_cols, grad, ld_grad, bi > b0, acc + grp * g.kg * g.og, g.og);
        }
      }
    }
  });
  // dw[grp, o, k] = sum over parts of dW^T[grp, k, o]
  parallel_for(g.groups * g.og, std::max<int64_t>(1, kElementwiseGrain / g.kg), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t grp = row / g.og, oc = row % g.og;
      for (int64_t k = 0; k < g.kg; ++k) {
        const int64_t at = grp * g.kg * g.og + k * g.og + oc;
        A s = partials[size_t(at)];
        for (int64_t p = 1; p < parts; ++p) s += partials[size_t(p * size + at)];
        store(dw, row * g.kg + k, s);
      }
    }
  });
}

template <class T>
void conv_backward_input(const Geometry& g, const T* dy, const T* w_in, T* dx) {
  using A = acc_t<T>;
  std::vector<A> w_keep;
  const A* w = weight_as<T, A>(w_in, g.o * g.kg, w_keep);
  const std::vector<Block> blocks = plan_blocks(g, sizeof(A));
  // Spans: runs of blocks over the same images (one image's bands, or one
  // block of whole images); a span's input gradient is written by it alone.
  std::vector<int64_t> span_start;
  for (int64_t bi = 0; bi < int64_t(blocks.size()); ++bi)
    if (bi == 0 || blocks[size_t(bi)].n0 != blocks[size_t(bi - 1)].n0) span_start.push_back(bi);
  const int64_t spans = int64_t(span_start.size());
  span_start.push_back(int64_t(blocks.size()));
  // Fewer spans than threads (a small batch): each span's channels are split
  // too, each part with its rows of the product and its planes of dx.
  const int64_t threads = num_threads();
  const int64_t parts = spans >= threads ? 1 : std::min<int64_t>(g.c, (threads + spans - 1) / spans);
  constexpr bool same = std::is_same_v<T, A>;
  // The unit window's product is dx itself (written whole); other windows
  // add taps into a zeroed accumulator: dx, or float32 for 16-bit types.
  const bool product_is_dx = same && g.unit;
  std::vector<A> acc_keep(same ? 0 : size_t(g.n * g.c * g.plane));
  A* acc = same ? reinterpret_cast<A*>(dx) : acc_keep.data();
  parallel_for(spans * parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t sp = item / parts, part = item % parts;
      const int64_t c0 = g.c * part / parts, c1 = g.c * (part + 1) / parts;
      const Block& first = blocks[size_t(span_start[size_t(sp)])];
      if (!product_is_dx)
        for (int64_t img = first.n0; img < first.n0 + first.images; ++img)
          std::fill(acc + (img * g.c + c0) * g.plane, acc + (img * g.c + c1) * g.plane, A(0));
      for (int64_t bi = span_start[size_t(sp)]; bi < span_start[size_t(sp) + 1]; ++bi) {
        const Block& b = blocks[size_t(bi)];
        const int64_t ncols = b.cols(g);
        const Strips s{g.og, block_gemm_strip<A>(ncols)};
        for (int64_t grp = c0 / g.cg; grp < g.groups && grp * g.cg < c1; ++grp) {
          const int64_t gc0 = std::max(c0, grp * g.cg), gc1 = std::min(c1, (grp + 1) * g.cg);
          if (gc0 >= gc1) continue;
          A* grad = scratch<A>(kGrad, s.size(ncols));
          gather_rows(g, dy, g.o, b, grp * g.og, g.og, grad, s);
          // Rows (channel, tap) of channels [gc0, gc1): columns of W_g.
          const A* wg = w + grp * g.og * g.kg + (gc0 - grp * g.cg) * g.kk;
          const int64_t rows = (gc1 - gc0) * g.kk;
          if (product_is_dx && b.images == 1) {
            block_gemm_tn(rows, ncols, g.og, wg, g.kg, grad, false, acc + b.at(g, 0, g.c, gc0), g.l);
            continue;
          }
          A* cols = scratch<A>(kCols, rows * ncols);
          block_gemm_tn(rows, ncols, g.og, wg, g.kg, grad, false, cols, ncols);
          if (product_is_dx) {  // several images: each one's rows are its dx planes
            for (int64_t row = 0; row < rows; ++row)
              for (int64_t img = 0; img < b.images; ++img)
                std::copy(cols + row * ncols + img * b.run(g), cols + row * ncols + (img + 1) * b.run(g),
                          acc + b.at(g, img, g.c, gc0 + row));
          } else {
            fold(g, cols, b, gc0, gc1, acc);
          }
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

// ------------------------------------------------------------ direct path
// Stride-1 convolutions skip the unfold where the register tiles are built
// (block_gemm_simd()). A block's input rows — the padded rows its output
// rows read, image after image — are one band, and each kernel tap is the
// band read at a shift (block_gemm_shifted): the output comes out on a grid
// as wide as the padded input, whose extra columns (and the rows between
// images) are computed and dropped as it is copied into NCHW. The rows are
// read in place, or from a zero-padded copy (padding, 16-bit types, several
// images). Backward-input is the same forward on the output gradient with
// the weight flipped and transposed; backward-weight is, per tap, the
// band's channel rows times the gradient transposed (block_gemm_rows), or
// for few channels dot products of the gradient's rows with each tap's
// shifted band (block_gemm_dot_shifted).
//
// Which path costs less is a matter of waste: the direct path computes its
// grid's extra columns and rows (a fraction 1 - useful of the work), the
// unfolding path writes and reads kg x positions elements besides the
// product, costing about as much as a product of kUnfoldCost (output)
// channels. A tiny reduction (the first layer's few taps) goes through the
// unfold, which is then small.
constexpr double kUnfoldCost = 48;
// Input channels from which backward-weight puts them along a tile's rows
// and the output channels along its vectors (with fewer, or fewer output
// channels than a vector holds: the taps and output channels along the
// rows, the positions along the vectors).
constexpr int64_t kMinChannelRows = 8;
enum class Pass { Forward, BackwardInput, BackwardWeight };
std::atomic<ConvPath> pinned_path{ConvPath::Auto};

bool use_direct(const Geometry& g, Pass pass) {
  const ConvPath path = pinned_path.load(std::memory_order_relaxed);
  if (path == ConvPath::Unfold || !block_gemm_simd() || g.win.sh != 1 || g.win.sw != 1) return false;
  if (path == ConvPath::Direct) return true;
  const Window2d& win = g.win;
  const double reach_w = double((win.kw - 1) * win.dw);
  double useful, channels;
  if (pass == Pass::BackwardInput) {  // dx's grid over dy padded by the kernel's reach
    useful = double(g.oh * g.ow) / double(g.h * (g.w + reach_w));
    channels = double(g.og);
  } else {
    useful = double(g.ow) / double(g.ow + reach_w);
    channels = double(g.og);
    if (pass == Pass::Forward && g.kg < 32) return false;
  }
  return useful >= 1.0 / (1.0 + kUnfoldCost / channels);
}

struct Dims {
  int64_t n, channels, rows, cols;
};

// Rows [top, top + rows) and columns [left, left + width) of every channel
// of images [n0, n0 + images) of `t` (zero outside it), stacked image after
// image: element (c, img * rows + row, col) at data[c * channel_stride +
// (img * rows + row) * width + col], readable `slack` elements past the last.
template <class A>
struct Band {
  const A* data;
  int64_t channel_stride;
};
template <class T, class A>
Band<A> band_of(const T* t, const Dims& d, int64_t n0, int64_t images, int64_t top, int64_t rows, int64_t left,
                int64_t width, int64_t slack) {
  const int64_t plane = d.rows * d.cols;
  if constexpr (std::is_same_v<T, A>) {  // in place: one image, no padding, the reads inside t
    const int64_t last_read = ((n0 + 1) * d.channels - 1) * plane + (top + rows) * d.cols + slack;
    if (images == 1 && left == 0 && width == d.cols && top >= 0 && top + rows <= d.rows &&
        last_read <= d.n * d.channels * plane)
      return {t + n0 * d.channels * plane + top * d.cols, plane};
  }
  const int64_t stride = images * rows * width;
  A* buf = scratch<A>(kCols, d.channels * stride + slack);
  const int64_t lo = std::clamp<int64_t>(-left, 0, width), hi = std::clamp<int64_t>(d.cols - left, lo, width);
  for (int64_t c = 0; c < d.channels; ++c)
    for (int64_t img = 0; img < images; ++img)
      for (int64_t row = 0; row < rows; ++row) {
        A* dst = buf + c * stride + (img * rows + row) * width;
        const int64_t src_row = top + row;
        if (src_row < 0 || src_row >= d.rows) {
          std::fill(dst, dst + width, A(0));
          continue;
        }
        const T* src = t + ((n0 + img) * d.channels + c) * plane + src_row * d.cols + left;
        std::fill(dst, dst + lo, A(0));
        for (int64_t q = lo; q < hi; ++q) dst[q] = A(load(src, q));
        std::fill(dst + hi, dst + width, A(0));
      }
  std::fill(buf + d.channels * stride, buf + d.channels * stride + slack, A(0));
  return {buf, stride};
}

// Blocks of output rows for the direct path: whole images (several only
// where `several`, at least one block per thread where the batch allows)
// when a padded image's band of `channels` rows fits the budget, else bands
// of one image's rows.
std::vector<Block> plan_direct_blocks(int64_t n, int64_t out_rows, int64_t reach, int64_t channels, int64_t width,
                                      int64_t elem_bytes, bool several) {
  std::vector<Block> blocks;
  const int64_t row_bytes = std::max<int64_t>(1, channels * width * elem_bytes);
  const int64_t threads = num_threads();
  if ((out_rows + reach) * row_bytes <= kBlockBytes) {
    if (!several) {
      for (int64_t img = 0; img < n; ++img) blocks.push_back({img, 1, 0, out_rows});
      return blocks;
    }
    const int64_t fit = kBlockBytes / ((out_rows + reach) * row_bytes);
    const int64_t images = std::max<int64_t>(1, std::min(fit, (n + threads - 1) / threads));
    for (int64_t n0 = 0; n0 < n; n0 += images) blocks.push_back({n0, std::min(images, n - n0), 0, out_rows});
    return blocks;
  }
  int64_t bands = (out_rows + std::max<int64_t>(1, kBlockBytes / row_bytes - reach) - 1) /
                  std::max<int64_t>(1, kBlockBytes / row_bytes - reach);
  if (n < threads) bands = std::max(bands, (threads + n - 1) / n);
  bands = std::clamp<int64_t>(bands, 1, std::max<int64_t>(out_rows, 1));
  for (int64_t img = 0; img < n; ++img)
    for (int64_t b = 0; b < bands; ++b) blocks.push_back({img, 1, out_rows * b / bands, out_rows * (b + 1) / bands});
  return blocks;
}

// Offsets of the taps of `channels` input channels in a band: tap (c, i, j)
// at c * channel_stride + i * dh * width + j * dw.
void tap_offsets(const Window2d& win, int64_t channels, int64_t channel_stride, int64_t width, int64_t* off) {
  for (int64_t c = 0, k = 0; c < channels; ++c)
    for (int64_t i = 0; i < win.kh; ++i)
      for (int64_t j = 0; j < win.kw; ++j, ++k) off[k] = c * channel_stride + i * win.dh * width + j * win.dw;
}

// A direct block's positions: image img's row r (of [r0, r1)) starts at
// (img * band_rows + r - r0) * width; `count` spans the last valid one.
struct Positions {
  int64_t band_rows, width, count;
  Positions(const Block& b, int64_t reach, int64_t width)
      : band_rows(b.r1 - b.r0 + reach), width(width), count(((b.images - 1) * band_rows + b.r1 - b.r0) * width) {}
  int64_t at(const Block& b, int64_t img, int64_t r) const { return (img * band_rows + r - b.r0) * width; }
};

// Rows [first, first + count) of `out` ([count, ldo], on the band's grid)
// into channels [first_channel, ...) of t [N, channels, rows, cols]: the
// block's rows, their first `cols` columns.
template <class T, class A>
void copy_out(const A* out, int64_t ldo, int64_t count, const Positions& pos, const Block& b, T* t, const Dims& d,
              int64_t first_channel) {
  for (int64_t c = 0; c < count; ++c)
    for (int64_t img = 0; img < b.images; ++img)
      for (int64_t r = b.r0; r < b.r1; ++r) {
        const A* src = out + c * ldo + pos.at(b, img, r);
        T* dst = t + (((b.n0 + img) * d.channels + first_channel + c) * d.rows + r) * d.cols;
        if constexpr (std::is_same_v<T, A>) {
          std::copy(src, src + d.cols, dst);
        } else {
          for (int64_t q = 0; q < d.cols; ++q) store(dst, q, src[q]);
        }
      }
}

// Each group's [m, k] weight matrix, row (row) column (col) = weight(grp, row, col), packed.
template <class A, class F>
std::vector<A> pack_groups(int64_t groups, int64_t m, int64_t k, F&& weight) {
  const int64_t size = block_gemm_packed_size<A>(m, k);
  std::vector<A> packed(size_t(groups * size)), rows(size_t(m * k));
  for (int64_t grp = 0; grp < groups; ++grp) {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) rows[size_t(r * k + c)] = weight(grp, r, c);
    block_gemm_pack(m, k, rows.data(), k, packed.data() + grp * size);
  }
  return packed;
}

// y = the stride-1 convolution of x: [N, C, H, W] -> [N, O, OH, OW] (forward),
// or of dy with the flipped, transposed weight (backward-input). `in`/`out`
// dims; pad_top/left: the zero rows/columns before the input; `packed` the
// groups' [out_g, in_g * kk] weights.
template <class T, class A>
void direct_forward(const Window2d& win, int64_t groups, const T* x, const Dims& in, int64_t pad_top,
                    int64_t pad_left, const std::vector<A>& packed, T* y, const Dims& out) {
  const int64_t reach = (win.kh - 1) * win.dh, width = out.cols + (win.kw - 1) * win.dw;
  const int64_t cg = in.channels / groups, og = out.channels / groups, kg = cg * win.kh * win.kw;
  const int64_t packed_size = block_gemm_packed_size<A>(og, kg);
  // One image a block: the rows between images would be computed and dropped.
  const std::vector<Block> blocks = plan_direct_blocks(out.n, out.rows, reach, in.channels, width, sizeof(A), false);
  const int64_t slack = (win.kw - 1) * win.dw + block_gemm_strip<A>(1);
  parallel_for(int64_t(blocks.size()), 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> off(static_cast<size_t>(kg));
    for (int64_t bi = begin; bi < end; ++bi) {
      const Block& b = blocks[size_t(bi)];
      const Positions pos(b, reach, width);
      const Band<A> band = band_of<T, A>(x, in, b.n0, b.images, b.r0 - pad_top, pos.band_rows, -pad_left, width, slack);
      tap_offsets(win, cg, band.channel_stride, width, off.data());
      for (int64_t grp = 0; grp < groups; ++grp) {
        const A* a = packed.data() + grp * packed_size;
        const A* xg = band.data + grp * cg * band.channel_stride;
        if constexpr (std::is_same_v<T, A>) {
          if (b.images == 1 && width == out.cols) {  // the grid is y's: straight into its rows
            block_gemm_shifted(og, pos.count, kg, a, xg, off.data(), false,
                               y + ((b.n0 * out.channels + grp * og) * out.rows + b.r0) * out.cols,
                               out.rows * out.cols);
            continue;
          }
        }
        A* grid = scratch<A>(kOut, og * pos.count);
        block_gemm_shifted(og, pos.count, kg, a, xg, off.data(), false, grid, pos.count);
        copy_out(grid, pos.count, og, pos, b, y, out, grp * og);
      }
    }
  });
}

template <class T>
void conv_forward_direct(const Geometry& g, const T* x, const T* w, T* y) {
  using A = acc_t<T>;
  const auto packed = pack_groups<A>(g.groups, g.og, g.kg, [&](int64_t grp, int64_t oc, int64_t k) {
    return A(load(w, (grp * g.og + oc) * g.kg + k));
  });
  direct_forward<T, A>(g.win, g.groups, x, {g.n, g.c, g.h, g.w}, g.win.pad_top, g.win.pad_left, packed, y,
                       {g.n, g.o, g.oh, g.ow});
}

// dx[c, h, w] = sum over o, i', j' of w[o, c, kh-1-i', kw-1-j'] dy[o, h + i' dh - top, w + j' dw - left],
// top = (kh-1) dh - pad_top, left = (kw-1) dw - pad_left: a stride-1 forward of dy.
template <class T>
void conv_backward_input_direct(const Geometry& g, const T* dy, const T* w, T* dx) {
  using A = acc_t<T>;
  const Window2d& win = g.win;
  const int64_t kt = g.og * g.kk;  // the reduction: (o, i', j')
  const auto packed = pack_groups<A>(g.groups, g.cg, kt, [&](int64_t grp, int64_t c, int64_t k) {
    return A(load(w, (grp * g.og + k / g.kk) * g.kg + c * g.kk + (g.kk - 1 - k % g.kk)));
  });
  direct_forward<T, A>(win, g.groups, dy, {g.n, g.o, g.oh, g.ow}, (win.kh - 1) * win.dh - win.pad_top,
                       (win.kw - 1) * win.dw - win.pad_left, packed, dx, {g.n, g.c, g.h, g.w});
}

// Backward-weight as dot products along the positions (for few input or
// output channels): each of the gradient's rows with each tap's shifted band.
template <class T>
void conv_backward_weight_by_dots(const Geometry& g, const T* x, const T* dy, T* dw) {
  using A = acc_t<T>;
  const Window2d& win = g.win;
  const int64_t reach = (win.kh - 1) * win.dh, width = g.w + win.pad_left + win.pad_right;
  // Several images a block: the dot products' sums across lanes come once a block.
  const std::vector<Block> blocks = plan_direct_blocks(g.n, g.oh, reach, g.c, width, sizeof(A), true);
  const int64_t slack = (win.kw - 1) * win.dw;
  // Parts of the batch, each summing its blocks into its own dW; the parts
  // are added in order after.
  const int64_t size = g.o * g.kg;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), int64_t(blocks.size())));
  std::vector<A> partials(size_t(parts * size));
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> off(static_cast<size_t>(g.kg));
    for (int64_t p = begin; p < end; ++p) {
      A* acc = partials.data() + p * size;
      const int64_t b0 = int64_t(blocks.size()) * p / parts, b1 = int64_t(blocks.size()) * (p + 1) / parts;
      if (b0 == b1) std::fill(acc, acc + size, A(0));
      for (int64_t bi = b0; bi < b1; ++bi) {
        const Block& b = blocks[size_t(bi)];
        const Positions pos(b, reach, width);
        const Band<A> band = band_of<T, A>(x, {g.n, g.c, g.h, g.w}, b.n0, b.images, b.r0 - win.pad_top,
                                           pos.band_rows, -win.pad_left, width, slack);
        tap_offsets(win, g.cg, band.channel_stride, width, off.data());
        // The group's gradient rows on the band's grid, zero off the output.
        const int64_t ld = (pos.count + 15) / 16 * 16;
        A* grad = scratch<A>(kGrad, g.og * ld);
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          for (int64_t oc = 0; oc < g.og; ++oc) {
            A* row = grad + oc * ld;
            std::fill(row, row + ld, A(0));
            for (int64_t img = 0; img < b.images; ++img)
              for (int64_t r = b.r0; r < b.r1; ++r) {
                const T* src = dy + (((b.n0 + img) * g.o + grp * g.og + oc) * g.oh + r) * g.ow;
                A* dst = row + pos.at(b, img, r);
                for (int64_t q = 0; q < g.ow; ++q) dst[q] = A(load(src, q));
              }
          }
          const Segments images{b.images, pos.band_rows * width, (b.r1 - b.r0 - 1) * width + g.ow};
          block_gemm_dot_shifted(g.og, g.kg, images, grad, ld, band.data + grp * g.cg * band.channel_stride,
                                 off.data(), bi > b0, acc + grp * g.og * g.kg, g.kg);
        }
      }
    }
  });
  parallel_for(size, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      A s = partials[size_t(i)];
      for (int64_t p = 1; p < parts; ++p) s += partials[size_t(p * size + i)];
      store(dw, i, s);
    }
  });
}

// Backward-weight with the output channels along the vectors (for layers
// with several input channels): per tap, the band's rows of the group's
// channels (read in place, a channel stride apart) times the gradient
// transposed to [positions, og] (zero off the output grid).
template <class T>
void conv_backward_weight_by_channels(const Geometry& g, const T* x, const T* dy, T* dw) {
  using A = acc_t<T>;
  const Window2d& win = g.win;
  const int64_t width = g.w + win.pad_left + win.pad_right, reach = (win.kh - 1) * win.dh;
  const int64_t lanes = block_gemm_lanes<A>(), ogw = (g.og + lanes - 1) / lanes * lanes;
  const std::vector<Block> blocks = plan_direct_blocks(g.n, g.oh, reach, g.c, width, sizeof(A), false);
  const int64_t slack = (win.kw - 1) * win.dw;
  // Parts of the batch, each summing its blocks into its own buffer
  // [groups, taps, cg, ogw]; the parts are added in order after.
  const int64_t size = g.groups * g.kk * g.cg * ogw;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), int64_t(blocks.size())));
  std::vector<A> partials(size_t(parts * size));
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      A* acc = partials.data() + p * size;
      const int64_t b0 = int64_t(blocks.size()) * p / parts, b1 = int64_t(blocks.size()) * (p + 1) / parts;
      if (b0 == b1) std::fill(acc, acc + size, A(0));
      for (int64_t bi = b0; bi < b1; ++bi) {
        const Block& b = blocks[size_t(bi)];
        const Positions pos(b, reach, width);
        const Band<A> band = band_of<T, A>(x, {g.n, g.c, g.h, g.w}, b.n0, 1, b.r0 - win.pad_top, pos.band_rows,
                                           -win.pad_left, width, slack);
        A* grad = scratch<A>(kGrad, pos.count * ogw);
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          std::fill(grad, grad + pos.count * ogw, A(0));
          constexpr int64_t kRun = 16;  // positions per pass: their rows of `grad` stay in L1
          for (int64_t r = b.r0; r < b.r1; ++r)
            for (int64_t q0 = 0; q0 < g.ow; q0 += kRun)
              for (int64_t oc = 0; oc < g.og; ++oc) {
                const T* src = dy + ((b.n0 * g.o + grp * g.og + oc) * g.oh + r) * g.ow;
                A* dst = grad + pos.at(b, 0, r) * ogw + oc;
                for (int64_t q = q0; q < std::min(g.ow, q0 + kRun); ++q) dst[q * ogw] = A(load(src, q));
              }
          for (int64_t t = 0; t < g.kk; ++t)
            block_gemm_rows(g.cg, g.og, pos.count,
                            band.data + grp * g.cg * band.channel_stride + (t / win.kw) * win.dh * width +
                                (t % win.kw) * win.dw,
                            band.channel_stride, grad, ogw, bi > b0, acc + (grp * g.kk + t) * g.cg * ogw, ogw);
        }
      }
    }
  });
  // dw[grp, o, c, t] = sum over parts of acc[grp, t, c, o]
  parallel_for(g.o, std::max<int64_t>(1, kElementwiseGrain / g.kg), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t grp = row / g.og, oc = row % g.og;
      for (int64_t c = 0; c < g.cg; ++c)
        for (int64_t t = 0; t < g.kk; ++t) {
          const int64_t at = ((grp * g.kk + t) * g.cg + c) * ogw + oc;
          A s = partials[size_t(at)];
          for (int64_t p = 1; p < parts; ++p) s += partials[size_t(p * size + at)];
          store(dw, row * g.kg + c * g.kk + t, s);
        }
    }
  });
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
    const T *x = static_cast<const T*>(in[0].data), *w = static_cast<const T*>(in[1].data);
    T* y = static_cast<T*>(out[0].data);
    if (use_direct(g, Pass::Forward))
      conv_forward_direct<T>(g, x, w, y);
    else
      conv_forward<T>(g, x, w, y);
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
    const T *dy = static_cast<const T*>(in[0].data), *w = static_cast<const T*>(in[1].data);
    T* dx = static_cast<T*>(out[0].data);
    if (use_direct(g, Pass::BackwardInput))
      conv_backward_input_direct<T>(g, dy, w, dx);
    else
      conv_backward_input<T>(g, dy, w, dx);
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
    const T *x = static_cast<const T*>(in[0].data), *dy = static_cast<const T*>(in[1].data);
    T* dw = static_cast<T*>(out[0].data);
    if (!use_direct(g, Pass::BackwardWeight))
      conv_backward_weight<T>(g, x, dy, dw);
    else if (g.cg >= kMinChannelRows && g.og >= block_gemm_lanes<acc_t<T>>())
      conv_backward_weight_by_channels<T>(g, x, dy, dw);
    else
      conv_backward_weight_by_dots<T>(g, x, dy, dw);
  });
}
LUCID_REGISTER_KERNEL(Conv2dBackwardWeight, CPU, conv2d_backward_weight_kernel);

}  // namespace

void set_conv_path(ConvPath path) { pinned_path.store(path, std::memory_order_relaxed); }
ConvPath conv_path() { return pinned_path.load(std::memory_order_relaxed); }

}  // namespace lucid::cpu
