// The public conv_transpose ops, on the Conv2dBackwardInput primitive.
#include "lucid/ops/conv_transpose.h"

#include "lucid/core/autocast.h"
#include "lucid/ops/op_util.h"

namespace lucid {

// ---------------------------------------------------------------- ops
static Tensor autocast_lower(const Tensor& t) { return t.defined() ? cast(t, autocast_lower_dtype(t.dtype())) : t; }

Tensor conv_transpose2d(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in, Pair stride, Pair padding,
                        Pair output_padding, int64_t groups, Pair dilation) {
  const Tensor x0 = autocast_lower(x_in), weight = autocast_lower(weight_in), bias = autocast_lower(bias_in);
  LUCID_CHECK(x0.ndim() == 3 || x0.ndim() == 4, "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, "
              "but got input of size: ", shape_str(x0.shape()));
  LUCID_CHECK(weight.ndim() == 4, "conv_transpose2d: expected a 4-D weight [in_channels, out_channels/groups, kH, "
              "kW], got weight of size ", shape_str(weight.shape()));
  LUCID_CHECK(stride[0] > 0 && stride[1] > 0, "non-positive stride is not supported");
  LUCID_CHECK(padding[0] >= 0 && padding[1] >= 0, "negative padding is not supported");
  LUCID_CHECK(output_padding[0] >= 0 && output_padding[1] >= 0, "negative output_padding is not supported");
  LUCID_CHECK(dilation[0] > 0 && dilation[1] > 0, "dilation should be greater than zero, but got dilation_height: ",
              dilation[0], ", dilation_width: ", dilation[1]);
  LUCID_CHECK(groups > 0, "non-positive groups is not supported");
  for (int d = 0; d < 2; ++d)
    LUCID_CHECK(output_padding[d] < stride[d] || output_padding[d] < dilation[d],
                "output padding must be smaller than either stride or dilation, but got output_padding_height: ",
                output_padding[0], " output_padding_width: ", output_padding[1], " stride_height: ", stride[0],
                " stride_width: ", stride[1], " dilation_height: ", dilation[0], " dilation_width: ", dilation[1]);
  const bool unbatched = x0.ndim() == 3;
  const Tensor x = unbatched ? unsqueeze(x0, 0) : x0;
  const Shape& ws = weight.shape();
  LUCID_CHECK(ws[0] % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size ", shape_str(ws), " instead");
  LUCID_CHECK(x.shape()[1] == ws[0], "Given transposed=1, weight of size ", shape_str(ws), ", expected input",
              shape_str(x0.shape()), " to have ", ws[0], " channels, but got ", x.shape()[1], " channels instead");
  const int64_t cout = ws[1] * groups;
  if (bias.defined())
    LUCID_CHECK(bias.ndim() == 1 && bias.shape()[0] == cout, "Given transposed=1, weight of size ", shape_str(ws),
                ", expected bias to be 1-dimensional with ", cout, " elements, but got bias of size ",
                shape_str(bias.shape()), " instead");
  LUCID_CHECK_T(TypeError, is_floating(x.dtype()), "conv_transpose2d: expected a floating-point input, got ",
                dtype_name(x.dtype()));
  LUCID_CHECK_T(TypeError, x.dtype() == weight.dtype(), "conv_transpose2d: Input type (", dtype_name(x.dtype()),
                ") and weight type (", dtype_name(weight.dtype()), ") should be the same");
  const int64_t h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (ws[2] - 1) + output_padding[0] + 1;
  const int64_t ow = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (ws[3] - 1) + output_padding[1] + 1;
  LUCID_CHECK(oh > 0 && ow > 0, "Given input size per channel: (", h, " x ", w,
              "). Calculated output size per channel: (", oh, " x ", ow, "). Output size is too small");
  const Window2d win{ws[2], ws[3], stride[0], stride[1], dilation[0], dilation[1],
                     padding[0], padding[0], padding[1], padding[1]};
  // The convolution whose adjoint this is maps an (oh, ow) image onto a grid
  // of win.out_h(oh) x win.out_w(ow) positions: x's H x W, plus a last row or
  // column when output_padding >= stride (allowed below the dilation), whose
  // taps reach no output. Those read zeros.
  const int64_t gh = win.out_h(oh), gw = win.out_w(ow);
  LUCID_CHECK(gh >= h && gw >= w, "internal: conv_transpose2d grid (", gh, ", ", gw, ") smaller than its input");
  const Tensor grid = gh == h && gw == w ? x : pad(x, {0, gw - w, 0, gh - h}, 0.0);
  Tensor out = conv2d_backward_input(grid, weight, win, groups, oh, ow);
  if (bias.defined()) {
    LUCID_CHECK_T(TypeError, bias.dtype() == x.dtype(), "conv_transpose2d: Input type (", dtype_name(x.dtype()),
                  ") and bias type (", dtype_name(bias.dtype()), ") should be the same");
    out = add(out, reshape(bias, {cout, 1, 1}));
  }
  return unbatched ? squeeze(out, std::vector<int64_t>{0}) : out;
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation) {
  LUCID_CHECK(x.ndim() == 2 || x.ndim() == 3, "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, "
              "but got input of size: ", shape_str(x.shape()));
  LUCID_CHECK(weight.ndim() == 3, "conv_transpose1d: expected a 3-D weight [in_channels, out_channels/groups, kW], "
              "got weight of size ", shape_str(weight.shape()));
  const int64_t axis = x.ndim() == 2 ? 1 : 2;  // the height axis of the [.., C, 1, L] view
  Tensor out = conv_transpose2d(unsqueeze(x, axis), unsqueeze(weight, 2), bias, {1, stride}, {0, padding},
                                {0, output_padding}, groups, {1, dilation});
  return squeeze(out, std::vector<int64_t>{axis});
}

}  // namespace lucid
