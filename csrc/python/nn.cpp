// lucid._C bindings for nn: the sliding-window primitives and the
// convolution and pooling ops (argument parsing — ints vs tuples, 'same' —
// is done by lucid.nn.functional).
#include "bindings.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/conv_transpose.h"
#include "lucid/ops/norm.h"
#include "lucid/ops/recurrent.h"

namespace lucid::python {

static const auto release = py::call_guard<py::gil_scoped_release>();

static Window2d window(Pair k, Pair s, Quad p, Pair d) {
  return Window2d{k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1], p[2], p[3]};
}
static Tensor opt(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

void init_nn(py::module_& m) {
  m.def("layer_norm", &layer_norm, py::arg("x"), py::arg("ndims"), py::arg("eps"), release);
  m.def("im2col", [](const Tensor& x, Pair k, Pair s, Quad p, Pair d, double pad_value) {
    return im2col(x, window(k, s, p, d), pad_value);
  }, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
        py::arg("pad_value") = 0.0, release);
  m.def("col2im", [](const Tensor& cols, Pair size, Pair k, Pair s, Quad p, Pair d) {
    return col2im(cols, window(k, s, p, d), size[0], size[1]);
  }, py::arg("cols"), py::arg("output_size"), py::arg("kernel"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"), release);
  m.def("conv2d", [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, Pair s, Quad p, Pair d,
                     int64_t groups) { return conv2d(x, w, opt(b), s, p, d, groups); },
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
        py::arg("groups"), release);
  m.def("conv1d", [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, int64_t s, Pair p, int64_t d,
                     int64_t groups) { return conv1d(x, w, opt(b), s, p, d, groups); },
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
        py::arg("groups"), release);
  m.def("max_pool2d", [](const Tensor& x, Pair k, Pair s, Pair p, Pair d, bool ceil_mode, bool indices) -> py::object {
    std::pair<Tensor, Tensor> r;
    {
      py::gil_scoped_release g;
      r = max_pool2d(x, k, s, p, d, ceil_mode, indices);
    }
    if (indices) return py::make_tuple(r.first, r.second);
    return py::cast(r.first);
  }, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
        py::arg("ceil_mode"), py::arg("return_indices"));
  m.def("linear", [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) { return linear(x, w, opt(b)); },
        py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), release);
  m.def("conv_transpose2d", [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, Pair s, Pair p,
                               Pair op, int64_t groups, Pair d) { return conv_transpose2d(x, w, opt(b), s, p, op, groups, d); },
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
        py::arg("output_padding"), py::arg("groups"), py::arg("dilation"), release);
  m.def("conv_transpose1d", [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, int64_t s, int64_t p,
                               int64_t op, int64_t groups, int64_t d) {
    return conv_transpose1d(x, w, opt(b), s, p, op, groups, d);
  }, py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
        py::arg("output_padding"), py::arg("groups"), py::arg("dilation"), release);
  m.def("rnn_cell_step", &rnn_cell_step, py::arg("gi"), py::arg("gh"), py::arg("bias"), py::arg("relu"), release);
  m.def("lstm_cell_step", &lstm_cell_step, py::arg("gi"), py::arg("gh"), py::arg("bias"), py::arg("c"), release);
  m.def("gru_cell_step", &gru_cell_step, py::arg("gi"), py::arg("gh"), py::arg("bias"), py::arg("h"), release);
  m.def("avg_pool2d", &avg_pool2d, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"),
        py::arg("ceil_mode"), py::arg("count_include_pad"), py::arg("divisor_override"), release);
}

}  // namespace lucid::python
