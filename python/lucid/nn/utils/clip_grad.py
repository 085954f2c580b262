"""Gradient clipping, as torch.nn.utils does it. The norms and the scaling
are written once in C++ (csrc/lucid/optim/clip.h) with tensor ops: the same
code clips inside a compiled step (fused_step/train_step's clip_grad_norm).
Only error_if_nonfinite reads a value back."""
import warnings

from ... import _C
from ...autograd import no_grad


def _tensors(x):
    if isinstance(x, _C.Tensor):
        return [x]
    return list(x)


def _grads(parameters):
    return [p.grad for p in _tensors(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (as one vector)."""
    tensors = [t for t in _tensors(tensors) if t is not None]
    total = _C.optim.total_norm(tensors, float(norm_type))
    if error_if_nonfinite and not bool(_C.isfinite(total).item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales every gradient by min(1, max_norm / (total_norm + 1e-6)), in place."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        for g, clipped in zip(grads, _C.optim.clip_with_norm(grads, float(max_norm), total_norm)):
            _C.assign_(g, clipped)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clips the gradients' total norm to max_norm in place; returns the
    total norm (before clipping) as a tensor."""
    params = _tensors(parameters)
    grads = _grads(params)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient to [-clip_value, clip_value], in place."""
    grads = _grads(parameters)
    with no_grad():
        for g, clipped in zip(grads, _C.optim.clip_by_value(grads, float(clip_value))):
            _C.assign_(g, clipped)
