#include "lucid/api/autograd.h"

#include "lucid/ops/ops.h"

namespace lucid::autograd {

namespace {

// The gradients of the roots, ones for a scalar root given none (the
// messages are those of Tensor.backward in Python).
std::vector<Tensor> root_grads(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads) {
  LUCID_CHECK(grads.size() <= roots.size(), "backward: got ", roots.size(), " tensors and ", grads.size(),
              " gradients");
  std::vector<Tensor> out;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (i < grads.size() && grads[i].defined()) {
      out.push_back(grads[i]);
      continue;
    }
    out.push_back(implicit_root_grad(roots[i]));
  }
  return out;
}

}  // namespace

Tensor implicit_root_grad(const Tensor& root) {
  if (root.numel() != 1) fail<Error>("grad can be implicitly created only for scalar outputs");
  LUCID_CHECK_T(Error, is_floating(root.dtype()), "grad can be implicitly created only for real scalar outputs but got ",
                dtype_name(root.dtype()));
  return ones(root.shape(), root.dtype(), root.device());
}

void backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  backward(std::vector<Tensor>{root}, std::vector<Tensor>{grad}, retain_graph);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph) {
  run_backward(roots, root_grads(roots, grads), retain_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool allow_unused) {
  LUCID_CHECK(!inputs.empty(), "grad requires at least one input");
  return run_backward(outputs, root_grads(outputs, grad_outputs), retain_graph, inputs, allow_unused);
}

}  // namespace lucid::autograd
