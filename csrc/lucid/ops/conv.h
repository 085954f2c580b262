#pragma once
// Sliding-window primitives — the convolution family (Conv2d and its two
// VJPs), Im2Col and its adjoint Col2Im, MaxPool2d and its VJP
// MaxPool2dBackward — and the convolution and pooling ops built on them;
// also the dense layer, which shares their GEMM layout concerns.
#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lucid/ops/ops.h"
#include "lucid/ops/primitives.h"

namespace lucid {

// The geometry of a 2-D sliding window over [N, C, H, W]: kernel, stride,
// dilation, and padding per side (so 'same' with an even kernel and pooling's
// ceil_mode, which pad one side more, need no separate pad op).
struct Window2d {
  int64_t kh = 1, kw = 1;
  int64_t sh = 1, sw = 1;
  int64_t dh = 1, dw = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;

  // Output extent along H / W (may be <= 0 for a window larger than the
  // padded input; Im2Col rejects that).
  int64_t out_h(int64_t h) const;
  int64_t out_w(int64_t w) const;
  // Every field, listed once: operator== and hash_value() derive from it.
  auto fields() const { return std::tie(kh, kw, sh, sw, dh, dw, pad_top, pad_bottom, pad_left, pad_right); }
  bool operator==(const Window2d& o) const { return fields() == o.fields(); }
  std::string str() const;
};
inline size_t hash_value(const Window2d& w) { return attrs_hash(0, w.fields()); }

// [N, C, H, W] -> [C*kh*kw, N, OH*OW]. Row (c, i, j) holds, for every image
// and output position, the input element under kernel tap (i, j) of channel
// c; taps over the padding read `pad_value` (-inf for max pooling). The
// window axis leads so that a convolution is one GEMM over the whole batch
// and pooling reduces axis 0.
struct Im2Col final : Primitive {
  Window2d win;
  double pad_value;
  auto attrs() const { return std::tie(win, pad_value); }
  Im2Col(Window2d win, double pad_value) : Primitive(OpKind::Im2Col), win(win), pad_value(pad_value) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// The adjoint of Im2Col: [C*kh*kw, N, OH*OW] -> [N, C, height, width], each
// input element receiving the sum of the taps that read it.
struct Col2Im final : Primitive {
  Window2d win;
  int64_t height, width;
  auto attrs() const { return std::tie(win, height, width); }
  Col2Im(Window2d win, int64_t height, int64_t width)
      : Primitive(OpKind::Col2Im), win(win), height(height), width(width) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// Max pooling over [N, C, H, W] -> (values, int64 indices), both
// [N, C, out_h(H), out_w(W)]. `win` carries the symmetric padding plus what
// ceil_mode adds at the bottom/right, so the output size is win's. Padding
// counts as -inf, a NaN in a window wins, and ties go to the first maximum;
// each index is flat into the input's H*W plane (PyTorch's return_indices).
struct MaxPool2d final : Primitive {
  Window2d win;
  auto attrs() const { return std::tie(win); }
  explicit MaxPool2d(Window2d win) : Primitive(OpKind::MaxPool2d), win(win) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveOutputs; }  // the indices (and the input's meta)
};

// MaxPool2d's VJP: (grad_out, indices) -> grad_input [N, C, height, width],
// each gradient added at its index (overlapping windows accumulate).
struct MaxPool2dBackward final : Primitive {
  Window2d win;
  int64_t height, width;
  auto attrs() const { return std::tie(win, height, width); }
  MaxPool2dBackward(Window2d win, int64_t height, int64_t width)
      : Primitive(OpKind::MaxPool2dBackward), win(win), height(height), width(width) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int i) const override { return i == 0; }
  uint8_t saved() const override { return kSaveInputs; }  // the indices, for its own gradient
};

// ------------------------------------------------------------ convolution
// A 2-D convolution and its two VJPs, each one primitive, so that a backend
// sees a convolution whole: a kernel that unfolds the input block by block
// in cache (CPU), a library call (cuDNN, MPSGraph's convolution). With
// g = groups and (OH, OW) = (win.out_h(H), win.out_w(W)):
//   Conv2d               x [N, C, H, W],     w [O, C/g, kh, kw] -> y  [N, O, OH, OW]
//   Conv2dBackwardInput  dy [N, O, OH, OW],  w [O, C/g, kh, kw] -> dx [N, C, H, W]
//   Conv2dBackwardWeight x [N, C, H, W],     dy [N, O, OH, OW]  -> dw [O, C/g, kh, kw]
// y[n, o, p] = sum over c in o's group and taps t of x[n, c, p*stride - pad + t*dilation] * w[o, c, t];
// out-of-image taps read zero. Each is linear in each input, so the family
// is closed under differentiation: every VJP is another member (double
// backward and create_graph need nothing else). Results are row-major.
// Conv2dBackwardInput with weight [Cin, Cout/g, kh, kw] is also the
// transposed convolution (conv_transpose2d).
struct Conv2d final : Primitive {
  Window2d win;
  int64_t groups;
  auto attrs() const { return std::tie(win, groups); }
  Conv2d(Window2d win, int64_t groups) : Primitive(OpKind::Conv2d), win(win), groups(groups) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveInputs; }
};

// (dy, w) -> dx [N, C, height, width]: the input's extent is an attribute,
// as several extents share one output grid when the stride is above 1.
struct Conv2dBackwardInput final : Primitive {
  Window2d win;
  int64_t groups, height, width;
  auto attrs() const { return std::tie(win, groups, height, width); }
  Conv2dBackwardInput(Window2d win, int64_t groups, int64_t height, int64_t width)
      : Primitive(OpKind::Conv2dBackwardInput), win(win), groups(groups), height(height), width(width) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveInputs; }
};

// (x, dy) -> dw [O, C/g, kh, kw] (the kernel extent is win's).
struct Conv2dBackwardWeight final : Primitive {
  Window2d win;
  int64_t groups;
  auto attrs() const { return std::tie(win, groups); }
  Conv2dBackwardWeight(Window2d win, int64_t groups)
      : Primitive(OpKind::Conv2dBackwardWeight), win(win), groups(groups) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveInputs; }
};

// The three primitives as ops (operands already validated by the public
// ops below, which raise PyTorch's messages).
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Window2d& win, int64_t groups);
Tensor conv2d_backward_input(const Tensor& dy, const Tensor& w, const Window2d& win, int64_t groups, int64_t height,
                             int64_t width);
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Window2d& win, int64_t groups);

Tensor im2col(const Tensor& x, const Window2d& win, double pad_value = 0);
Tensor col2im(const Tensor& cols, const Window2d& win, int64_t height, int64_t width);

using Pair = std::array<int64_t, 2>;
using Quad = std::array<int64_t, 4>;  // top, bottom, left, right

// x [N, C, H, W] or unbatched [C, H, W]; weight [O, C/groups, kh, kw]; bias
// [O] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Quad padding, Pair dilation,
              int64_t groups);
// x [N, C, L] or [C, L]; weight [O, C/groups, k]; padding (left, right).
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, Pair padding,
              int64_t dilation, int64_t groups);

// Max over each window; with `indices`, also the position of the (first)
// maximum as a flat index into H*W, as PyTorch returns it.
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, Pair dilation,
                                     bool ceil_mode, bool indices);
Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override);

// x [..., in] @ weight[out, in]^T + bias: the transpose is a GEMM flag, so
// neither direction copies the weight.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace lucid
