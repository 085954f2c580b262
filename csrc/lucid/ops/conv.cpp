// The convolution primitives (Conv2d and its two VJPs), Im2Col / Col2Im
// (each the other's VJP) and the convolution and pooling ops: average
// pooling = im2col + a sum over the window axis; max pooling is its own
// primitive (MaxPool2d, with MaxPool2dBackward as its VJP), since an argmax +
// gather over im2col costs several passes.
#include "lucid/core/autocast.h"
#include "lucid/ops/conv.h"

#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

int64_t Window2d::out_h(int64_t h) const { return floor_div(h + pad_top + pad_bottom - dh * (kh - 1) - 1, sh) + 1; }
int64_t Window2d::out_w(int64_t w) const { return floor_div(w + pad_left + pad_right - dw * (kw - 1) - 1, sw) + 1; }
std::string Window2d::str() const {
  return detail::concat("kernel=(", kh, ", ", kw, "), stride=(", sh, ", ", sw, "), dilation=(", dh, ", ", dw,
                        "), padding=(", pad_top, ", ", pad_bottom, ", ", pad_left, ", ", pad_right, ")");
}

static void check_window(const char* op, const Window2d& w) {
  LUCID_CHECK(w.kh > 0 && w.kw > 0, op, ": kernel size should be greater than zero, but got (", w.kh, ", ", w.kw, ")");
  LUCID_CHECK(w.sh > 0 && w.sw > 0, op, ": non-positive stride is not supported, got (", w.sh, ", ", w.sw, ")");
  LUCID_CHECK(w.dh > 0 && w.dw > 0, op, ": dilation should be greater than zero, got (", w.dh, ", ", w.dw, ")");
  LUCID_CHECK(w.pad_top >= 0 && w.pad_bottom >= 0 && w.pad_left >= 0 && w.pad_right >= 0, op,
              ": negative padding is not supported, got (", w.pad_top, ", ", w.pad_bottom, ", ", w.pad_left, ", ",
              w.pad_right, ")");
}

static void check_output(const char* op, const Window2d& w, int64_t h, int64_t wd) {
  if (w.out_h(h) >= 1 && w.out_w(wd) >= 1) return;
  fail(op, ": calculated padded input size per channel: (", h + w.pad_top + w.pad_bottom, " x ",
       wd + w.pad_left + w.pad_right, "). Kernel size: (", w.dh * (w.kh - 1) + 1, " x ", w.dw * (w.kw - 1) + 1,
       "). Kernel size can't be greater than actual input size");
}

// ------------------------------------------------------------------ Im2Col
std::string Im2Col::name() const { return "im2col"; }
std::vector<TensorMeta> Im2Col::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  LUCID_CHECK(s.size() == 4, "im2col: expected a 4-D input [N, C, H, W], got ", shape_str(s));
  check_window("im2col", win);
  check_output("im2col", win, s[2], s[3]);
  return {{{s[1] * win.kh * win.kw, s[0], win.out_h(s[2]) * win.out_w(s[3])}, in[0].dtype, in[0].device}};
}
std::vector<Tensor> Im2Col::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Shape& s = in[0].shape();
  return {col2im(cot[0], win, s[2], s[3])};
}

Tensor im2col(const Tensor& x, const Window2d& win, double pad_value) { return call<Im2Col>({x}, win, pad_value); }

// ------------------------------------------------------------------ Col2Im
std::string Col2Im::name() const { return "col2im"; }
std::vector<TensorMeta> Col2Im::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  LUCID_CHECK(s.size() == 3, "col2im: expected a 3-D input [C*kH*kW, N, L], got ", shape_str(s));
  check_window("col2im", win);
  LUCID_CHECK(height >= 0 && width >= 0, "col2im: negative output size (", height, ", ", width, ")");
  check_output("col2im", win, height, width);
  const int64_t kk = win.kh * win.kw;
  LUCID_CHECK(s[0] % kk == 0, "col2im: expected size(0) of the input ", shape_str(s),
              " to be divisible by the product of the kernel size (", kk, ")");
  const int64_t l = win.out_h(height) * win.out_w(width);
  LUCID_CHECK(s[2] == l, "col2im: given output size (", height, ", ", width, ") and ", win.str(),
              ", expected size(2) of the input to be ", l, ", but got ", s[2]);
  LUCID_CHECK_T(TypeError, in[0].dtype != DType::Bool, "col2im: not implemented for bool");
  return {{{s[1], s[0] / kk, height, width}, in[0].dtype, in[0].device}};
}
std::vector<Tensor> Col2Im::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {im2col(cot[0], win, 0.0)};
}

Tensor col2im(const Tensor& cols, const Window2d& win, int64_t height, int64_t width) {
  return call<Col2Im>({cols}, win, height, width);
}

// --------------------------------------------------------------- MaxPool2d
std::string MaxPool2d::name() const { return "max_pool2d"; }
std::vector<TensorMeta> MaxPool2d::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  LUCID_CHECK(s.size() == 4, "max_pool2d: expected a 4-D input [N, C, H, W], got ", shape_str(s));
  LUCID_CHECK_T(TypeError, in[0].dtype != DType::Bool, "max_pool2d: not implemented for bool");
  check_window("max_pool2d", win);
  check_output("max_pool2d", win, s[2], s[3]);
  const Shape out{s[0], s[1], win.out_h(s[2]), win.out_w(s[3])};
  return {{out, in[0].dtype, in[0].device}, {out, DType::Int64, in[0].device}};
}
std::vector<Tensor> MaxPool2d::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                   const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Shape& s = in[0].shape();
  return {call<MaxPool2dBackward>({cot[0], out[1]}, win, s[2], s[3])};
}

// ------------------------------------------------------- MaxPool2dBackward
std::string MaxPool2dBackward::name() const { return "max_pool2d_backward"; }
std::vector<TensorMeta> MaxPool2dBackward::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  check_window("max_pool2d_backward", win);
  check_output("max_pool2d_backward", win, height, width);
  LUCID_CHECK(s.size() == 4 && s[2] == win.out_h(height) && s[3] == win.out_w(width),
              "max_pool2d_backward: expected a gradient of shape [N, C, ", win.out_h(height), ", ", win.out_w(width),
              "] for an input of size (", height, ", ", width, ") and ", win.str(), ", got ", shape_str(s));
  LUCID_CHECK(in[1].shape == s, "max_pool2d_backward: indices of shape ", shape_str(in[1].shape),
              " do not match the gradient's ", shape_str(s));
  LUCID_CHECK_T(TypeError, is_floating(in[0].dtype), "max_pool2d_backward: expected a floating-point gradient, got ",
                dtype_name(in[0].dtype));
  LUCID_CHECK_T(TypeError, in[1].dtype == DType::Int64, "max_pool2d_backward: expected int64 indices, got ",
                dtype_name(in[1].dtype));
  return {{{s[0], s[1], height, width}, in[0].dtype, in[0].device}};
}
// Linear in the gradient: its own gradient reads the cotangent back at each
// window's winner (a window over padding alone has none and gets 0).
std::vector<Tensor> MaxPool2dBackward::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                           const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  return detail::grads_for(argnums, [&](int i) -> Tensor {
    if (i != 0) return Tensor();  // the indices
    const Shape& gs = in[0].shape();
    const int64_t plane = height * width;
    if (in[0].numel() == 0 || plane == 0) return zeros(gs, in[0].dtype(), in[0].device());
    const Tensor idx = reshape(in[1], {gs[0], gs[1], gs[2] * gs[3]});
    const Tensor inside = clamp(idx, Scalar(int64_t(0)), Scalar(plane - 1));
    const Tensor picked = gather(reshape(cot[0], {gs[0], gs[1], plane}), 2, inside);
    return reshape(where(eq(inside, idx), picked, zeros_like(picked)), gs);
  });
}

// ------------------------------------------------------------ convolution
// The family's shared checks: two 4-D operands of one floating dtype, a valid
// window, a weight [O, C/groups, kh, kw] whose kernel is the window's.
static void check_conv_operands(const char* op, const TensorMeta& a, const TensorMeta& b, const Window2d& win,
                                int64_t groups) {
  LUCID_CHECK(a.shape.size() == 4 && b.shape.size() == 4, op, ": expected 4-D operands, got ", shape_str(a.shape),
              " and ", shape_str(b.shape));
  LUCID_CHECK_T(TypeError, a.dtype == b.dtype && is_floating(a.dtype), op,
                ": expected floating-point operands of one dtype, got ", dtype_name(a.dtype), " and ",
                dtype_name(b.dtype));
  check_window(op, win);
  LUCID_CHECK(groups > 0, op, ": non-positive groups is not supported");
}

static void check_conv_weight(const char* op, const Shape& ws, const Window2d& win, int64_t groups) {
  LUCID_CHECK(ws[2] == win.kh && ws[3] == win.kw && ws[0] % groups == 0, op, ": expected a weight [O, C/", groups,
              ", ", win.kh, ", ", win.kw, "] with O divisible by ", groups, ", got ", shape_str(ws));
}

// The output grid of a convolution of an input [.., height, width]: `grad`
// [N, O, OH, OW] must lie on it.
static void check_conv_grid(const char* op, const Shape& grad, const Window2d& win, int64_t height, int64_t width) {
  check_output(op, win, height, width);
  LUCID_CHECK(grad[2] == win.out_h(height) && grad[3] == win.out_w(width), op,
              ": expected a gradient of spatial size (", win.out_h(height), ", ", win.out_w(width),
              ") for an input of size (", height, ", ", width, ") and ", win.str(), ", got ", shape_str(grad));
}

std::string Conv2d::name() const { return "conv2d"; }
std::vector<TensorMeta> Conv2d::infer(const std::vector<TensorMeta>& in) const {
  check_conv_operands("conv2d", in[0], in[1], win, groups);
  const Shape &xs = in[0].shape, &ws = in[1].shape;
  check_conv_weight("conv2d", ws, win, groups);
  LUCID_CHECK(xs[1] == ws[1] * groups, "conv2d: input of ", xs[1], " channels does not match weight ", shape_str(ws),
              " with groups=", groups);
  check_output("conv2d", win, xs[2], xs[3]);
  return {{{xs[0], ws[0], win.out_h(xs[2]), win.out_w(xs[3])}, in[0].dtype, in[0].device}};
}
std::vector<Tensor> Conv2d::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor &x = in[0], &w = in[1], &g = cot[0];
  return detail::grads_for(argnums, [&](int i) {
    return i == 0 ? conv2d_backward_input(g, w, win, groups, x.shape()[2], x.shape()[3])
                  : conv2d_backward_weight(x, g, win, groups);
  });
}

std::string Conv2dBackwardInput::name() const { return "conv2d_backward_input"; }
std::vector<TensorMeta> Conv2dBackwardInput::infer(const std::vector<TensorMeta>& in) const {
  check_conv_operands("conv2d_backward_input", in[0], in[1], win, groups);
  const Shape &gs = in[0].shape, &ws = in[1].shape;
  check_conv_weight("conv2d_backward_input", ws, win, groups);
  LUCID_CHECK(gs[1] == ws[0], "conv2d_backward_input: gradient of ", gs[1], " channels does not match weight ",
              shape_str(ws));
  check_conv_grid("conv2d_backward_input", gs, win, height, width);
  return {{{gs[0], ws[1] * groups, height, width}, in[0].dtype, in[0].device}};
}
// Linear in each input: <G, dx(dy, w)> = <conv2d(G, w), dy> = <dw(G, dy), w>.
std::vector<Tensor> Conv2dBackwardInput::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                             const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor &dy = in[0], &w = in[1], &g = cot[0];
  return detail::grads_for(argnums, [&](int i) {
    return i == 0 ? conv2d_forward(g, w, win, groups) : conv2d_backward_weight(g, dy, win, groups);
  });
}

std::string Conv2dBackwardWeight::name() const { return "conv2d_backward_weight"; }
std::vector<TensorMeta> Conv2dBackwardWeight::infer(const std::vector<TensorMeta>& in) const {
  check_conv_operands("conv2d_backward_weight", in[0], in[1], win, groups);
  const Shape &xs = in[0].shape, &gs = in[1].shape;
  LUCID_CHECK(xs[1] % groups == 0 && gs[1] % groups == 0 && xs[0] == gs[0], "conv2d_backward_weight: input ",
              shape_str(xs), " and gradient ", shape_str(gs), " do not match groups=", groups);
  check_conv_grid("conv2d_backward_weight", gs, win, xs[2], xs[3]);
  return {{{gs[1], xs[1] / groups, win.kh, win.kw}, in[0].dtype, in[0].device}};
}
// Linear in each input: <G, dw(x, dy)> = <dx(dy, G), x> = <conv2d(x, G), dy>.
std::vector<Tensor> Conv2dBackwardWeight::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                              const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor &x = in[0], &dy = in[1], &g = cot[0];
  return detail::grads_for(argnums, [&](int i) {
    return i == 0 ? conv2d_backward_input(dy, g, win, groups, x.shape()[2], x.shape()[3])
                  : conv2d_forward(x, g, win, groups);
  });
}

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Window2d& win, int64_t groups) {
  return call<Conv2d>({x, w}, win, groups);
}
Tensor conv2d_backward_input(const Tensor& dy, const Tensor& w, const Window2d& win, int64_t groups, int64_t height,
                             int64_t width) {
  return call<Conv2dBackwardInput>({dy, w}, win, groups, height, width);
}
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Window2d& win, int64_t groups) {
  return call<Conv2dBackwardWeight>({x, dy}, win, groups);
}

static void check_conv_args(const char* op, int64_t groups) {
  LUCID_CHECK(groups > 0, op, ": non-positive groups is not supported");
}

// Under autocast, convolution and linear run in the lower precision, with
// input, weight and bias all cast (PyTorch's autocast list).
static Tensor autocast_lower(const Tensor& t) {
  return t.defined() ? cast(t, autocast_lower_dtype(t.dtype())) : t;
}

// x [N, C, H, W], weight [O, C/groups, kh, kw]: the shared body of conv1d and
// conv2d (which validate and reshape their own arguments).
static Tensor conv_impl(const char* op, const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                        const Window2d& win, int64_t groups, const Shape& user_weight_shape,
                        const Shape& user_input_shape) {
  const Tensor x = autocast_lower(x_in), weight = autocast_lower(weight_in), bias = autocast_lower(bias_in);
  LUCID_CHECK_T(TypeError, is_floating(x.dtype()), op, ": expected a floating-point input, got ",
                dtype_name(x.dtype()));
  LUCID_CHECK_T(TypeError, x.dtype() == weight.dtype(), op, ": Input type (", dtype_name(x.dtype()),
                ") and weight type (", dtype_name(weight.dtype()), ") should be the same");
  const int64_t c = x.shape()[1], o = weight.shape()[0];
  LUCID_CHECK(o > 0, op, ": Given groups=", groups, ", expected weight to be at least 1 at dimension 0, but got weight "
              "of size ", shape_str(user_weight_shape), " instead");
  LUCID_CHECK(o % groups == 0, op, ": Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size ", shape_str(user_weight_shape), " instead");
  LUCID_CHECK(c == weight.shape()[1] * groups, op, ": Given groups=", groups, ", weight of size ",
              shape_str(user_weight_shape), ", expected input", shape_str(user_input_shape), " to have ",
              weight.shape()[1] * groups, " channels, but got ", c, " channels instead");
  if (bias.defined()) {
    LUCID_CHECK(bias.ndim() == 1 && bias.shape()[0] == o, op, ": Given weight of size ", shape_str(user_weight_shape),
                ", expected bias to be 1-dimensional with ", o, " elements, but got bias of size ",
                shape_str(bias.shape()), " instead");
    LUCID_CHECK_T(TypeError, bias.dtype() == x.dtype(), op, ": Input type (", dtype_name(x.dtype()),
                  ") and bias type (", dtype_name(bias.dtype()), ") should be the same");
  }
  check_window(op, win);
  check_output(op, win, x.shape()[2], x.shape()[3]);
  // Row-major [N, O, OH, OW], as PyTorch's (x.view(n, -1) after a conv works);
  // the bias add keeps it so.
  const Tensor out = conv2d_forward(x, weight, win, groups);
  if (!bias.defined()) return out;
  RowMajorResults row_major;
  return add(out, reshape(bias, {1, o, 1, 1}));
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Quad padding, Pair dilation,
              int64_t groups) {
  check_conv_args("conv2d", groups);
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got "
              "input of size: ", shape_str(x.shape()));
  LUCID_CHECK(weight.ndim() == 4, "conv2d: expected a 4-D weight [out_channels, in_channels/groups, kH, kW], got "
              "weight of size ", shape_str(weight.shape()));
  const bool unbatched = x.ndim() == 3;
  const Tensor x4 = unbatched ? unsqueeze(x, 0) : x;
  Window2d win{weight.shape()[2], weight.shape()[3], stride[0], stride[1], dilation[0], dilation[1],
               padding[0],        padding[1],        padding[2], padding[3]};
  Tensor out = conv_impl("conv2d", x4, weight, bias, win, groups, weight.shape(), x.shape());
  return unbatched ? squeeze(out, std::vector<int64_t>{0}) : out;
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, Pair padding,
              int64_t dilation, int64_t groups) {
  check_conv_args("conv1d", groups);
  LUCID_CHECK(x.ndim() == 2 || x.ndim() == 3, "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got "
              "input of size: ", shape_str(x.shape()));
  LUCID_CHECK(weight.ndim() == 3, "conv1d: expected a 3-D weight [out_channels, in_channels/groups, kW], got "
              "weight of size ", shape_str(weight.shape()));
  const bool unbatched = x.ndim() == 2;
  const Tensor x3 = unbatched ? unsqueeze(x, 0) : x;
  const Tensor x4 = unsqueeze(x3, 2);  // [N, C, 1, L]
  const Tensor w4 = unsqueeze(weight, 2);
  Window2d win{1, weight.shape()[2], 1, stride, 1, dilation, 0, 0, padding[0], padding[1]};
  Tensor out = squeeze(conv_impl("conv1d", x4, w4, bias, win, groups, weight.shape(), x.shape()),
                       std::vector<int64_t>{2});
  return unbatched ? squeeze(out, std::vector<int64_t>{0}) : out;
}

// ---------------------------------------------------------------- pooling
// PyTorch's pooling output size (ceil_mode drops a last window that would
// start in the right padding).
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t out = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  return (ceil_mode && (out - 1) * s >= in + p) ? out - 1 : out;
}

struct PoolGeometry {
  Tensor x4;  // [N, C, H, W]
  bool unbatched;
  int64_t oh, ow;
  Window2d win;  // symmetric padding plus what ceil_mode adds at the bottom/right
};

static PoolGeometry pool_geometry(const char* op, const Tensor& x, Pair k, Pair s, Pair p, Pair d, bool ceil_mode,
                                  bool dilated) {
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, op, ": Expected 3D or 4D (batch mode) tensor for input, got input of "
              "size: ", shape_str(x.shape()));
  LUCID_CHECK(k[0] > 0 && k[1] > 0, op, ": kernel_size must be greater than zero, but got (", k[0], ", ", k[1], ")");
  LUCID_CHECK(s[0] > 0 && s[1] > 0, op, ": stride must be greater than zero, but got (", s[0], ", ", s[1], ")");
  LUCID_CHECK(d[0] > 0 && d[1] > 0, op, ": dilation must be greater than zero, but got (", d[0], ", ", d[1], ")");
  for (int i = 0; i < 2; ++i) {
    const int64_t eff = d[i] * (k[i] - 1) + 1;
    LUCID_CHECK(p[i] >= 0 && p[i] <= (dilated ? eff : k[i]) / 2, op, ": pad should be at most half of ",
                dilated ? "effective " : "", "kernel size, but got pad=", p[i], ", kernel_size=", k[i],
                dilated ? detail::concat(" and dilation=", d[i]) : std::string());
  }
  // PyTorch also bounds a dilated pool's padding by half the plain kernel.
  LUCID_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, op, ": pad should be smaller than or equal to half of kernel "
              "size, but got padW = ", p[1], ", padH = ", p[0], ", kW = ", k[1], ", kH = ", k[0]);
  PoolGeometry g;
  g.unbatched = x.ndim() == 3;
  g.x4 = g.unbatched ? unsqueeze(x, 0) : x;
  const int64_t h = g.x4.shape()[2], w = g.x4.shape()[3];
  g.oh = pool_out(h, k[0], s[0], p[0], d[0], ceil_mode);
  g.ow = pool_out(w, k[1], s[1], p[1], d[1], ceil_mode);
  LUCID_CHECK(g.oh >= 1 && g.ow >= 1, op, ": Given input size: (", g.x4.shape()[1], "x", h, "x", w,
              "). Calculated output size: (", g.x4.shape()[1], "x", g.oh, "x", g.ow, "). Output size is too small");
  const int64_t pb = std::max(p[0], (g.oh - 1) * s[0] + d[0] * (k[0] - 1) + 1 - h - p[0]);
  const int64_t pr = std::max(p[1], (g.ow - 1) * s[1] + d[1] * (k[1] - 1) + 1 - w - p[1]);
  g.win = Window2d{k[0], k[1], s[0], s[1], d[0], d[1], p[0], pb, p[1], pr};
  LUCID_CHECK(g.win.out_h(h) == g.oh && g.win.out_w(w) == g.ow, "internal: pooling geometry mismatch");
  return g;
}

std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, Pair dilation,
                                     bool ceil_mode, bool with_indices) {
  const PoolGeometry g = pool_geometry("max_pool2d", x, kernel, stride, padding, dilation, ceil_mode, true);
  std::vector<Tensor> outs = detail::call_multi<MaxPool2d>({g.x4}, g.win);
  Tensor out = outs[0], idx = with_indices ? outs[1] : Tensor();
  if (g.unbatched) {
    out = squeeze(out, std::vector<int64_t>{0});
    if (idx.defined()) idx = squeeze(idx, std::vector<int64_t>{0});
  }
  return {out, idx};
}

Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const PoolGeometry g = pool_geometry("avg_pool2d", x, kernel, stride, padding, {1, 1}, ceil_mode, false);
  LUCID_CHECK_T(TypeError, is_floating(g.x4.dtype()), "avg_pool2d: expected a floating-point input, got ",
                dtype_name(g.x4.dtype()));
  LUCID_CHECK(!divisor_override || *divisor_override != 0, "avg_pool2d: divisor must be not zero");
  const int64_t n = g.x4.shape()[0], c = g.x4.shape()[1], h = g.x4.shape()[2], w = g.x4.shape()[3];
  const Window2d& win = g.win;
  const Tensor sums = sum(im2col(reshape(g.x4, {n * c, 1, h, w}), win, 0.0), {0});  // [N*C, L]
  Tensor out;
  const bool extra = win.pad_bottom != win.pad_top || win.pad_right != win.pad_left;
  const bool padded = win.pad_top || win.pad_left || extra;
  if (divisor_override) {
    out = div(sums, double(*divisor_override));
  } else if (!padded || (count_include_pad && !extra)) {
    out = div(sums, double(win.kh * win.kw));
  } else {
    // Per-window element counts: windows are counted up to the symmetric
    // padding (count_include_pad) or over real elements only, never over
    // what ceil_mode adds.
    Tensor ones_img;
    Window2d cwin = win;
    if (count_include_pad) {
      ones_img = ones({1, 1, h + win.pad_top * 2, w + win.pad_left * 2}, g.x4.dtype(), x.device());
      cwin.pad_bottom -= win.pad_top;
      cwin.pad_right -= win.pad_left;
      cwin.pad_top = cwin.pad_left = 0;
    } else {
      ones_img = ones({1, 1, h, w}, g.x4.dtype(), x.device());
    }
    out = div(sums, sum(im2col(ones_img, cwin, 0.0), {0}));
  }
  out = reshape(out, {n, c, g.oh, g.ow});
  return g.unbatched ? squeeze(out, std::vector<int64_t>{0}) : out;
}

// ------------------------------------------------------------------ linear
Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  const Tensor x = autocast_lower(x_in), weight = autocast_lower(weight_in), bias = autocast_lower(bias_in);
  LUCID_CHECK(x.ndim() >= 1, "linear: input must have at least one dimension, got a 0-D tensor");
  LUCID_CHECK(weight.ndim() == 2 || weight.ndim() == 1, "linear: weight must be 1-D or 2-D, got weight of size ",
              shape_str(weight.shape()));
  LUCID_CHECK_T(TypeError, x.dtype() == weight.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
                dtype_name(x.dtype()), " != ", dtype_name(weight.dtype()));
  Tensor out;
  if (weight.ndim() == 1) {
    out = matmul(x, weight);
  } else {
    const int64_t in = x.shape().back(), o = weight.shape()[0];
    LUCID_CHECK(in == weight.shape()[1], "mat1 and mat2 shapes cannot be multiplied (", x.numel() / std::max<int64_t>(in, 1),
                "x", in, " and ", weight.shape()[1], "x", o, ")");
    Shape lead(x.shape().begin(), x.shape().end() - 1);
    // The input goes to the GEMM as matmul's operands do (a transposed view
    // as a flag), an N-D one after its flattening reshape.
    // (rows spelled out: -1 is ambiguous when in_features is 0)
    int64_t rows = 1;
    for (int64_t d : lead) rows *= d;
    out = gemm(x.ndim() == 2 ? x : reshape(x, {rows, in}), weight, false, true);
    lead.push_back(o);
    out = reshape(out, lead);
  }
  if (bias.defined()) {
    LUCID_CHECK_T(TypeError, bias.dtype() == x.dtype(), "linear: Input type (", dtype_name(x.dtype()),
                  ") and bias type (", dtype_name(bias.dtype()), ") should be the same");
    out = add(out, bias);
  }
  return out;
}

}  // namespace lucid
