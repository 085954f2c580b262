"""Gradient clipping, as torch.nn.utils does it: norms and scaling are
tensor ops (so they also trace); only error_if_nonfinite reads a value back."""
import math
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
    norm_type = float(norm_type)
    if not tensors:
        return _C.full([], 0.0, _C.get_default_dtype(), None)
    with no_grad():
        if math.isinf(norm_type):
            norms = [_C.amax(_C.abs(_C.cast(t, _C.dtype.float32) if not t.dtype.is_floating_point else t), None, False)
                     for t in tensors]
            total = _C.amax(_C.stack([_C.cast(n, tensors[0].dtype) for n in norms], 0), None, False)
            if norm_type < 0:
                total = _C.amin(_C.stack([_C.cast(n, tensors[0].dtype) for n in norms], 0), None, False)
        else:
            norms = [_C.norm(t, norm_type, None, False) for t in tensors]
            total = _C.norm(_C.stack([_C.cast(n, tensors[0].dtype) for n in norms], 0), norm_type, None, False)
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
        coef = _C.clamp(_C.div(float(max_norm), _C.add(total_norm, 1e-6)), None, 1.0)
        for g in grads:
            _C.assign_(g, _C.mul(g, _C.cast(coef, g.dtype)))


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
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            _C.assign_(g, _C.clamp(g, -clip_value, clip_value))
