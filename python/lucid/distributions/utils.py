"""Helpers shared by the distributions (torch.distributions.utils)."""
import functools
import numbers

from .. import _C

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni


def _lucid():
    import lucid

    return lucid


def broadcast_all(*values):
    """Tensors broadcast to one shape; numbers become tensors of the first
    tensor's dtype and device (the default dtype when there is no tensor)."""
    lucid = _lucid()
    if not all(isinstance(v, (_C.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(isinstance(v, _C.Tensor) for v in values):
        options = dict(dtype=lucid.get_default_dtype())
        for v in values:
            if isinstance(v, _C.Tensor):
                options = dict(dtype=v.dtype, device=v.device)
                break
        values = [v if isinstance(v, _C.Tensor) else lucid.tensor(v, **options) for v in values]
    return lucid.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return _lucid().randn(*shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sums out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Log-odds to probabilities (binary), or the softmax of the last dim."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps] of their dtype."""
    eps = _lucid().finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Probabilities to log-odds (binary) or to log-probabilities."""
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


class lazy_property:
    """A property computed (with gradients enabled) on first access, then
    stored on the instance in place of the descriptor."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        from ..autograd import enable_grad

        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_mask(n, diag, device):
    arange = _lucid().arange(n, device=device)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The lower-triangular entries (below diagonal `diag`) of a (batch of)
    square matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of tril_matrix_to_vec: a (batch of) D x D lower-triangular
    matrices filled in row order."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > _lucid().finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
