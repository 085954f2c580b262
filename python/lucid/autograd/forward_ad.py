"""Forward-mode derivatives, as torch.autograd.forward_ad:

    with dual_level():
        x = make_dual(primal, tangent)
        y = f(x)
        jvp = unpack_dual(y).tangent

Lucid has no forward-mode rules: a dual tensor is the primal as a tensor
that records history, and ``unpack_dual(y)`` computes J·tangent from the
recorded graph by the double-backward trick (u -> Jᵀu is linear in u; its
vjp with the tangent is J·tangent), summed over every dual made in the
level. The values are PyTorch's; what differs is visible around them:

- a dual tensor (and what is computed from it) has ``requires_grad=True``;
- tangents flow only where gradients are recorded: work done under
  ``no_grad`` (or on ``.detach()``-ed values) carries no tangent;
- each ``unpack_dual`` runs two backward passes over the graph recorded
  since ``make_dual``.
"""
import collections

from .. import _C
from .._creation import zeros_like
from . import enable_grad, grad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1
_duals = []  # (dual tensor, tangent) made in the current level


def enter_dual_level():
    """Opens a dual level (one at a time, as in PyTorch) and returns its index."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    return _current_level


def exit_dual_level(*, level=None):
    """Closes the level: its dual tensors lose their tangents."""
    global _current_level
    level = _current_level if level is None else level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _duals.clear()
    _current_level = -1


class dual_level:
    """The context in which dual tensors carry tangents."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def make_dual(tensor, tangent, *, level=None):
    """A tensor with ``tensor``'s value (sharing its memory) whose tangent is
    ``tangent``."""
    if _current_level < 0 and level is None:
        raise RuntimeError("To create a dual Tensor, you must first enter a dual level using the forward_ad.dual_level "
                           "context manager")
    if not isinstance(tensor, _C.Tensor) or not isinstance(tangent, _C.Tensor):
        raise TypeError("make_dual: expected Tensors for both the primal and the tangent")
    if not (tensor.dtype.is_floating_point and tangent.dtype.is_floating_point):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}" if not
                         tensor.dtype.is_floating_point else
                         f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {tuple(tensor.shape)} while the given "
                           f"forward gradient is of size {tuple(tangent.shape)}.")
    with enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else tensor.detach().requires_grad_()
    _duals.append((dual, tangent.detach()))
    return dual


UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): ``tensor``'s value and its derivative along the
    level's tangents (None when it does not depend on a dual tensor)."""
    if not isinstance(tensor, _C.Tensor):
        return UnpackedDualTensor(tensor, None)
    tangents = jvp_by_double_backward([tensor], [d for d, _ in _duals], [t for _, t in _duals])
    return UnpackedDualTensor(tensor, tangents[0])


def jvp_by_double_backward(outputs, inputs, tangents):
    """J·tangents for each output (None where it does not depend on the
    inputs), from the graph recorded between ``inputs`` and ``outputs``."""
    result = [None] * len(outputs)
    wired = [i for i, out in enumerate(outputs) if out.requires_grad and out.dtype.is_floating_point]
    if not wired or not inputs:
        return result
    with enable_grad():
        probes = [zeros_like(outputs[i]).requires_grad_() for i in wired]
        vjps = grad([outputs[i] for i in wired], inputs, probes, retain_graph=True, create_graph=True,
                    allow_unused=True)
        used = [(g, t) for g, t in zip(vjps, tangents) if g is not None and g.requires_grad]
        if not used:
            return result
        jvps = grad([g for g, _ in used], probes, [t for _, t in used], retain_graph=True, allow_unused=True)
    for i, j in zip(wired, jvps):
        result[i] = None if j is None else j.detach()
    return result
