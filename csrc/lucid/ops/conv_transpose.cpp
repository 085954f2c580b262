// ConvTranspose2d: shape rule, VJP and the public conv_transpose ops.
#include "lucid/ops/conv_transpose.h"

#include "lucid/core/autocast.h"
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;

// The tap grid of the transposed convolution is the input's H x W: output
// position (r*sh - pad + i*dh) receives tap (i, j) of input position r.
std::string ConvTranspose2d::name() const { return "conv_transpose2d"; }

std::vector<TensorMeta> ConvTranspose2d::infer(const std::vector<TensorMeta>& in) const {
  const Shape &xs = in[0].shape, &ws = in[1].shape;
  LUCID_CHECK(xs.size() == 4, "conv_transpose2d: expected a 4-D input [N, C, H, W], got ", shape_str(xs));
  LUCID_CHECK(ws.size() == 4 && ws[2] == win.kh && ws[3] == win.kw,
              "conv_transpose2d: expected a weight [in_channels, out_channels/groups, ", win.kh, ", ", win.kw,
              "], got ", shape_str(ws));
  LUCID_CHECK(groups > 0 && xs[1] == ws[0] && xs[1] % groups == 0, "conv_transpose2d: input of ", xs[1],
              " channels does not match weight ", shape_str(ws), " with groups=", groups);
  LUCID_CHECK(out_h >= 1 && out_w >= 1, "conv_transpose2d: output size (", out_h, ", ", out_w, ") is too small");
  LUCID_CHECK_T(TypeError, in[0].dtype == in[1].dtype && is_floating(in[0].dtype),
                "conv_transpose2d: expected floating-point input and weight of one dtype, got ",
                dtype_name(in[0].dtype), " and ", dtype_name(in[1].dtype));
  return {{{xs[0], ws[1] * groups, out_h, out_w}, in[0].dtype, in[0].device}};
}

std::vector<Tensor> ConvTranspose2d::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                         const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor &x = in[0], &w = in[1], &g = cot[0];
  const int64_t n = x.shape()[0], cin = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t cout = w.shape()[1] * groups, kk = win.kh * win.kw;
  // The taps of g over the grid the forward scattered from: im2col of g,
  // cropped to H x W where output_padding >= stride made the grid larger.
  auto taps = [&]() {
    Tensor cols = im2col(g, win, 0.0);  // [Cout*kk, N, oh' * ow']
    const int64_t gh = win.out_h(out_h), gw = win.out_w(out_w);
    if (gh != h || gw != wd) {
      cols = reshape(cols, {cout * kk, n, gh, gw});
      cols = slice(cols, {0, 0, 0, 0}, {cout * kk, n, h, wd}, {1, 1, 1, 1});
    }
    return reshape(cols, {cout * kk, n * h * wd});
  };
  return detail::grads_for(argnums, [&](int i) -> Tensor {
    if (i == 0) {
      // d x = conv2d(g, w): the weight [Cin, Cout/groups, kh, kw] is a
      // convolution weight from Cout to Cin channels.
      Tensor cols = taps();  // [Cout*kk, N*H*W]
      Tensor dx = reshape(matmul(reshape(w, {groups, cin / groups, -1}), reshape(cols, {groups, -1, n * h * wd})),
                          {cin, n, h, wd});
      return permute(dx, {1, 0, 2, 3});
    }
    // d w[ci, (co, i, j)] = sum over (n, h, w) of x[n, ci, h, w] * taps[(co, i, j), (n, h, w)]
    Tensor xs = reshape(permute(x, {1, 0, 2, 3}), {groups, cin / groups, n * h * wd});
    Tensor cols = reshape(taps(), {groups, cout / groups * kk, n * h * wd});
    return reshape(matmul(xs, transpose(cols, 1, 2)), w.shape());
  });
}

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
  Tensor out = call<ConvTranspose2d>({x, weight}, win, groups, oh, ow);
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
