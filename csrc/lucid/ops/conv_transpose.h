#pragma once
// Transposed convolution: the adjoint of conv2d with respect to its input,
// so the Conv2dBackwardInput primitive (conv.h) with the transposed
// convolution's weight [Cin, Cout/groups, kh, kw] as the convolution's
// [O, C/groups, kh, kw]. Its VJP is that primitive's (conv2d for the input,
// Conv2dBackwardWeight for the weight).
#include "lucid/ops/conv.h"

namespace lucid {

// x [N, Cin, H, W] or unbatched [C, H, W]; weight [Cin, Cout/groups, kh, kw];
// bias [Cout] or undefined. PyTorch's conv_transpose2d.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                        Pair output_padding, int64_t groups, Pair dilation);
// x [N, Cin, L] or [C, L]; weight [Cin, Cout/groups, k].
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation);

}  // namespace lucid
