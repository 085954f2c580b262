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
