// Autograd entry points: backward, grad, grad mode.
#include "bindings.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"

namespace lucid::python {

void init_autograd(py::module_& m) {
  m.def("backward", [](const std::vector<Tensor>& roots, const std::vector<std::optional<Tensor>>& grads,
                       bool retain_graph, bool create_graph) {
    std::vector<Tensor> gs;
    for (size_t i = 0; i < roots.size(); ++i) {
      if (i < grads.size() && grads[i]) {
        gs.push_back(*grads[i]);
      } else {
        if (roots[i].numel() != 1)
          fail<Error>("grad can be implicitly created only for scalar outputs (got a tensor of shape ",
                      shape_str(roots[i].shape()), ")");
        LUCID_CHECK_T(Error, is_floating(roots[i].dtype()), "grad can be implicitly created only for real scalar "
                      "outputs but got ", dtype_name(roots[i].dtype()));
        gs.push_back(ones(roots[i].shape(), roots[i].dtype(), roots[i].device()));
      }
    }
    autograd::run_backward(roots, gs, retain_graph, {}, false, create_graph);
  }, py::arg("roots"), py::arg("grads"), py::arg("retain_graph") = false, py::arg("create_graph") = false,
     py::call_guard<py::gil_scoped_release>());

  m.def("grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   const std::vector<std::optional<Tensor>>& grads, bool retain_graph, bool allow_unused,
                   bool create_graph) {
    std::vector<Tensor> gs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (i < grads.size() && grads[i]) gs.push_back(*grads[i]);
      else {
        LUCID_CHECK_T(Error, outputs[i].numel() == 1, "grad can be implicitly created only for scalar outputs");
        gs.push_back(ones(outputs[i].shape(), outputs[i].dtype(), outputs[i].device()));
      }
    }
    std::vector<Tensor> r = autograd::run_backward(outputs, gs, retain_graph, inputs, allow_unused, create_graph);
    std::vector<std::optional<Tensor>> out;
    for (auto& t : r) out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
    return out;
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grads"), py::arg("retain_graph") = false,
     py::arg("allow_unused") = false, py::arg("create_graph") = false, py::call_guard<py::gil_scoped_release>());

  m.def("is_grad_enabled", &autograd::GradMode::is_enabled);
  m.def("set_grad_enabled", &autograd::GradMode::set_enabled);
}

}  // namespace lucid::python
