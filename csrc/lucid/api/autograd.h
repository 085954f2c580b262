#pragma once
// Eager autograd for native apps: backward() and grad() over the tape
// (autograd/node.h), with the implicit gradient of a scalar root, and the
// grad-mode guards (autograd/grad_mode.h: GradModeGuard, NoGradGuard).
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/core/tensor.h"

namespace lucid::autograd {

// The gradient a root given none starts from (PyTorch's _make_grads): ones
// for a floating scalar, PyTorch's error otherwise.
Tensor implicit_root_grad(const Tensor& root);

// loss.backward(grad): accumulates gradients into the leaves' .grad. An
// undefined `grad` is ones, allowed only for a floating scalar root.
void backward(const Tensor& root, const Tensor& grad = Tensor(), bool retain_graph = false);
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads = {}, bool retain_graph = false);

// lucid.autograd.grad: the gradients of `outputs` w.r.t. `inputs` (no .grad
// changes); an input the outputs do not reach gives an undefined tensor when
// allow_unused, an error otherwise.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false);

}  // namespace lucid::autograd
