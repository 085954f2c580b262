"""torch.nn.grad: the gradients of a convolution with respect to its input
and its weight, given the gradient of its output. Each is the convolution's
vector-Jacobian product, taken by autograd (so it is differentiable itself
when weight, input or grad_output require grad)."""
from .. import _C
from ..autograd import enable_grad, grad as _grad
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight"]


def _vjp(conv, wrt_input, given, size, grad_output, stride, padding, dilation, groups):
    wants_graph = given.requires_grad or grad_output.requires_grad
    with enable_grad():
        free = _C.full(list(size), 0.0, given.dtype, given.device).requires_grad_(True)
        x, w = (free, given) if wrt_input else (given, free)
        out = conv(x, w, None, stride, padding, dilation, groups)
        return _grad(out, free, grad_output, create_graph=wants_graph)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv1d, True, weight, input_size, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _vjp(F.conv1d, False, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv2d, True, weight, input_size, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _vjp(F.conv2d, False, input, weight_size, grad_output, stride, padding, dilation, groups)
