"""torch.autograd.Variable, PyTorch's legacy name for a tensor: calling it
returns the tensor itself (detached, sharing its data), with requires_grad
as asked; every tensor is an instance of it."""
import warnings

from .. import _C

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data=None, requires_grad=False, volatile=None):
        if volatile is not None:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          stacklevel=2)
        if data is None:
            import lucid

            data = lucid.tensor([])
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))
