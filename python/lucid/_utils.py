"""Small helpers shared by the Python layer."""
import numbers

import numpy as np

from . import _C


def as_shape(size):
    """Accepts f(2, 3), f((2, 3)) and f([2, 3]) like PyTorch."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, _C.Tensor):
            s = s.item()
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__}")
        out.append(int(s))
    return out


def as_dims(dim):
    """None, an int or a sequence of ints -> None or a list of ints."""
    if dim is None:
        return None
    if isinstance(dim, numbers.Integral):
        return [int(dim)]
    return [int(d) for d in dim]


_TORCH_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                     "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                     "int64": "Long"}


def torch_type_name(dtype):
    """PyTorch's scalar-type name of a dtype, as its error messages print it."""
    name = str(dtype).split(".")[-1]
    return _TORCH_TYPE_NAMES.get(name, name)


def cast_error(result_dtype, out_dtype):
    """PyTorch's error for writing a result into a tensor of a lower category."""
    return RuntimeError(f"result type {torch_type_name(result_dtype)} can't be cast to the desired output type "
                        f"{torch_type_name(out_dtype)}")


def is_number(x):
    return isinstance(x, (numbers.Number, np.number, np.bool_)) and not isinstance(x, _C.Tensor)


def to_dtype(d):
    if d is None or isinstance(d, _C.dtype):
        return d
    if isinstance(d, str):
        return _C.dtype_from_name(d)
    if d is bool:
        return _C.dtype.bool
    if d is float:
        return _C.get_default_dtype()
    if d is int:
        return _C.dtype.int64
    try:
        return _C.dtype_from_name(np.dtype(d).name)
    except TypeError:
        raise TypeError(f"cannot interpret {d!r} as a lucid dtype") from None


# The parameter checks of the random draws and fills, with PyTorch's messages.
# A tensor parameter's values are read on the host (as PyTorch does), except
# while a compiled step is traced, where they are data.
def _all_host(t, predicate):
    if _C._is_tracing():
        return True
    return bool(np.all(predicate(np.asarray(_C.cast(t.detach(), _C.dtype.float64).cpu().numpy()))))


def check_std(std, name="normal"):
    if isinstance(std, _C.Tensor):
        if not _all_host(std, lambda v: v >= 0.0):
            raise RuntimeError(f"{name} expects all elements of std >= 0.0")
    elif not std >= 0.0:
        raise RuntimeError(f"{name} expects std >= 0.0, but found std {std:g}")


def check_probability(p, name):
    if isinstance(p, _C.Tensor):
        if not _all_host(p, lambda v: (v >= 0.0) & (v <= 1.0)):
            raise RuntimeError(f"{name} expects all elements of p to be in [0, 1]")
    elif not 0.0 <= p <= 1.0:
        raise RuntimeError(f"{name} expects p to be in [0, 1], but got p={p:g}")
