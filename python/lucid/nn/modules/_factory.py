"""Parameter storage with the factory kwargs (device, dtype) every layer
accepts. It is zero-filled (torch leaves it uninitialised): every layer then
initialises it in reset_parameters, and a zero fill keeps runs reproducible."""
from ... import _C
from ..._utils import to_dtype


def empty(shape, device=None, dtype=None):
    dt = to_dtype(dtype) or _C.get_default_dtype()
    return _C.full(list(shape), 0.0, dt, device)


def tuple_of(x, n):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,) * n
