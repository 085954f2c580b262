#pragma once
// Transposed convolution (the adjoint of conv2d with respect to its input)
// as one primitive: per image and group, one GEMM into a tap buffer and a
// scatter-add of the taps into the output, without materialising the taps
// of the whole batch. Its VJP is written with the convolution ops (conv2d
// for the input, im2col + GEMM for the weight).
#include "lucid/ops/conv.h"

namespace lucid {

// x [N, Cin, H, W], weight [Cin, Cout/groups, kh, kw] -> [N, Cout, out_h, out_w].
// `win` is the convolution whose adjoint this is (kernel, stride, dilation,
// symmetric padding); out_h = (H-1)*sh - 2*pad + dh*(kh-1) + output_padding + 1.
struct ConvTranspose2d final : Primitive {
  Window2d win;
  int64_t groups, out_h, out_w;
  auto attrs() const { return std::tie(win, groups, out_h, out_w); }
  ConvTranspose2d(Window2d win, int64_t groups, int64_t out_h, int64_t out_w)
      : Primitive(OpKind::ConvTranspose2d), win(win), groups(groups), out_h(out_h), out_w(out_w) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveInputs; }
};

// x [N, Cin, H, W] or unbatched [C, H, W]; weight [Cin, Cout/groups, kh, kw];
// bias [Cout] or undefined. PyTorch's conv_transpose2d.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                        Pair output_padding, int64_t groups, Pair dilation);
// x [N, Cin, L] or [C, L]; weight [Cin, Cout/groups, k].
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation);

}  // namespace lucid
