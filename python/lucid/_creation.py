"""Tensor creation: from Python data and NumPy, and the factory functions."""
import numbers

import numpy as np

from . import _C
from ._memory_format import make_in_format, preserve_format
from ._utils import as_shape, to_dtype

_NP_WIDEN = {np.dtype("uint16"): np.int64, np.dtype("uint32"): np.int64}


def _finish(t, dtype, device, requires_grad):
    # The move first: t is a concrete host tensor, which a device copy needs
    # (inside a compiled step a cast would already be a traced value).
    target = _C.get_default_device() if device is None else _C.device(str(device))
    if t.device != target:
        t = _C.to_device(t, target)
    if dtype is not None and t.dtype != dtype:
        t = _C.cast(t, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_array(data, dtype=None):
    """Python data -> (NumPy array, its lucid dtype) with PyTorch's dtype inference: the
    promotion (promote_types) of every element's own type, where a Python
    float is the default dtype, an int int64, a bool bool, a NumPy scalar or
    a one-element tensor its dtype. An explicit `dtype` takes the values
    without rounding through the inferred one."""
    if isinstance(data, _C.Tensor):
        return data.detach().cpu().numpy(), data.dtype
    if isinstance(data, np.ndarray):
        return data, None
    if dtype is None and isinstance(data, (list, tuple)):
        fast = _python_numbers_array(data)
        if fast is not None:
            return fast
    data = _as_lists(data)
    leaves = list(_flatten(data)) if isinstance(data, (list, tuple)) else [data]
    if isinstance(data, (list, tuple)) and leaves and isinstance(leaves[0], str):
        raise ValueError("too many dimensions 'str'")  # PyTorch reads the leading string as a sequence
    if dtype is None or not dtype.is_floating_point:
        for x in leaves:  # PyTorch unpacks every Python int as a C long long
            if isinstance(x, int) and not isinstance(x, bool) and not -2**63 <= x < 2**63:
                raise ValueError("Overflow when unpacking long long")
    target = dtype
    if target is None:
        target = _element_dtype(leaves[0]) if leaves else _C.get_default_dtype()
        for x in leaves[1:]:
            target = _C.promote_types(target, _element_dtype(x))
    if any(isinstance(x, _C.Tensor) for x in leaves):
        data = _tensors_to_scalars(data, target.is_floating_point)
    np_dtype = None if target is None else ("float32" if target == _C.dtype.bfloat16 else target.name)
    if dtype is not None and not dtype.is_floating_point and dtype != _C.dtype.bool:
        np_dtype = None  # integers: numpy's own inference, then the range check and the cast
    arr = np.asarray(data, dtype=np_dtype)
    if arr.dtype == object:
        raise TypeError(f"could not convert {type(data).__name__} to a tensor (ragged or non-numeric data)")
    if dtype is None and arr.dtype.name != np_dtype:
        arr = arr.astype(np_dtype)
    return arr, target


def _python_numbers_array(data):
    """The common case of `_infer_array` at NumPy's speed: nested lists and
    tuples of Python floats, ints and bools only (a rectangular array), whose
    PyTorch dtype is the default float dtype, int64 or bool, by the kinds
    present. None for anything else (NumPy scalars or arrays, tensors, other
    sequences, ragged or empty data, ints beyond int64), which the general
    path takes."""
    kinds = set()
    pending = [data]
    while pending:  # one pass over each container, in C (map/set), not one Python step per number
        level = pending.pop()
        types = set(map(type, level))
        if list in types or tuple in types:
            if not types <= {list, tuple}:
                return None
            pending.extend(level)
        else:
            kinds |= types
    if not kinds or not kinds <= {float, int, bool}:
        return None
    if float in kinds:
        target = _C.get_default_dtype()
        if target not in (_C.dtype.float32, _C.dtype.float64):
            return None
    else:
        target = _C.dtype.int64 if int in kinds else _C.dtype.bool
    try:
        with np.errstate(over="ignore"):  # a float beyond float32's range is inf, silently, as in PyTorch
            return np.asarray(data, dtype=target.name), target
    except (OverflowError, ValueError):  # an int beyond int64, ragged data: the general path raises PyTorch's error
        return None


def _element_dtype(x):
    if isinstance(x, _C.Tensor):
        return x.dtype
    if isinstance(x, np.ndarray):  # a list of arrays: their dtype
        return _C.dtype_from_name(x.dtype.name) if x.dtype.name in _NUMPY_DTYPES + ("bool",) else \
            _C.get_default_dtype()
    if isinstance(x, (bool, np.bool_)):
        return _C.dtype.bool
    if isinstance(x, np.generic):
        return _C.dtype_from_name(x.dtype.name) if x.dtype.name in _NUMPY_DTYPES else _C.dtype.int64
    if isinstance(x, numbers.Integral):
        return _C.dtype.int64
    if isinstance(x, numbers.Real):
        return _C.get_default_dtype()
    raise TypeError(f"new(): invalid data type '{type(x).__name__}'")


_NUMPY_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")


def _is_sequence(x):
    """What PyTorch reads as a sequence of elements (PySequence_Check): a
    deque, a range, an array.array, a class with __len__ and __getitem__;
    not a string, a mapping, a tensor or an array."""
    if isinstance(x, (str, bytes, dict, _C.Tensor, np.ndarray, np.generic)):
        return False
    return hasattr(type(x), "__len__") and hasattr(type(x), "__getitem__")


def _as_lists(data):
    """Nested sequences of any kind as lists and tuples (the data itself when
    it has none of another kind, which is the common case)."""
    if isinstance(data, (list, tuple)):
        items = [_as_lists(x) for x in data]
        return data if all(a is b for a, b in zip(items, data)) else items
    if _is_sequence(data):
        return [_as_lists(x) for x in data]
    return data


def _flatten(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        else:
            yield x


def _tensors_to_scalars(data, to_float):
    """A tensor inside a list stands for its one element, as PyTorch's
    (more elements: PyTorch's error, which depends on the result dtype)."""
    if isinstance(data, _C.Tensor):
        if data.numel() != 1:
            if to_float:
                raise ValueError("only one element tensors can be converted to Python scalars")
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return data.item()
    if isinstance(data, (list, tuple)):
        return [_tensors_to_scalars(x, to_float) for x in data]
    return data


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data` (scalar, nested lists, NumPy)."""
    dtype = to_dtype(dtype)
    arr, inferred = _infer_array(data, dtype)
    dtype = dtype or (inferred if inferred == _C.dtype.bfloat16 else None)  # NumPy holds bfloat16 as float32
    if dtype is not None and not isinstance(data, (np.ndarray, _C.Tensor)):
        _check_python_values_fit(data, dtype)
    if arr.dtype in _NP_WIDEN:
        arr = arr.astype(_NP_WIDEN[arr.dtype])
    elif arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        arr = arr.astype(np.float64)
    if dtype == _C.dtype.bfloat16:
        t = _C.cast(_C.from_numpy_copy(np.require(arr, np.float32, "C")), dtype)
    else:
        t = _C.from_numpy_copy(np.require(arr, requirements="C"))
    return _finish(t, dtype, device, requires_grad)


def _check_python_values_fit(data, dtype):
    """PyTorch converts each Python number with a range check (an array or a
    tensor is cast instead, wrapping): a float must lie in the dtype's range,
    an integer too, except that an unsigned dtype takes integers down to
    -max, which wrap (c10::overflows)."""
    if dtype.is_floating_point or dtype == _C.dtype.bool:
        return
    leaves = list(_flatten(data)) if isinstance(data, (list, tuple)) else [data]
    leaves = [x.item() if isinstance(x, _C.Tensor) and x.numel() == 1 else x for x in leaves]
    info = np.iinfo(dtype.name)
    ints = np.array([x for x in leaves if isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))],
                    dtype=np.int64)
    floats = np.array([x for x in leaves if isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral)],
                      dtype=np.float64)
    ok = ints.size == 0 or (ints.min() >= (-info.max if info.min == 0 else info.min) and ints.max() <= info.max)
    if floats.size:
        with np.errstate(invalid="ignore"):
            ok = ok and bool(np.all((floats >= info.min) & (floats <= info.max)))
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")


def from_numpy(arr):
    """A tensor sharing `arr`'s memory (C-contiguous arrays; others are copied)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    return _C.from_numpy(arr)


def _factory(size, value, dtype, device, requires_grad):
    t = _C.full(as_shape(size), value, to_dtype(dtype) or (_C.get_default_dtype()), device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _size_arg(name, args, size):
    """The shape given positionally (``zeros(2, 3)``, ``zeros((2, 3))``) or
    as PyTorch's keyword (``zeros(size=(2, 3))``), not both."""
    if size is None:
        return args
    if args:
        raise TypeError(f"{name}() got multiple values for argument 'size'")
    return (size,)


def zeros(*args, size=None, dtype=None, device=None, requires_grad=False):
    return _factory(_size_arg("zeros", args, size), 0.0, dtype, device, requires_grad)


def ones(*args, size=None, dtype=None, device=None, requires_grad=False):
    return _factory(_size_arg("ones", args, size), 1.0, dtype, device, requires_grad)


def empty(*args, size=None, dtype=None, device=None, requires_grad=False):
    """A new tensor of the given size. Unlike torch's, its elements are zeros,
    not whatever memory held: the contents are never to be relied on either
    way, and zeros keep runs reproducible."""
    return _factory(_size_arg("empty", args, size), 0.0, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    dtype = to_dtype(dtype)
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = _C.dtype.bool
        elif isinstance(fill_value, numbers.Integral):
            dtype = _C.dtype.int64
        else:
            dtype = _C.get_default_dtype()
    return _factory(as_shape((size,)), fill_value, dtype, device, requires_grad)


def _like(t, make, memory_format, what, requires_grad=False):
    """A new tensor of t's shape from make(t laid out in memory order), laid
    out as memory_format says (PyTorch's default keeps t's memory order)."""
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{what}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")
    out = make_in_format(t, memory_format, make, what)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _full_like(t, value, dtype, device, requires_grad, memory_format, what):
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{what}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")
    if isinstance(value, _C.Tensor):  # a 0-d tensor as the value, as PyTorch takes it (read on the host)
        value = value.item()
    dtype = to_dtype(dtype) or t.dtype
    device = device if device is not None else t.device
    return _like(t, lambda u: _C.full(list(u.shape), value, dtype, device), memory_format, what, requires_grad)


def zeros_like(t, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=preserve_format):
    return _full_like(t, 0.0, dtype, device, requires_grad, memory_format, "zeros_like")


def ones_like(t, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=preserve_format):
    return _full_like(t, 1.0, dtype, device, requires_grad, memory_format, "ones_like")


def empty_like(t, dtype=None, device=None, requires_grad=False, *, layout=None, pin_memory=False,
               memory_format=preserve_format):
    return _full_like(t, 0.0, dtype, device, requires_grad, memory_format, "empty_like")


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, *, layout=None,
              memory_format=preserve_format):
    return _full_like(t, fill_value, dtype, device, requires_grad, memory_format, "full_like")


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, _C.Tensor) else v for v in (start, end, step)]
    dtype = to_dtype(dtype)
    if dtype is None:
        dtype = _C.get_default_dtype() if any(isinstance(v, float) for v in vals) else _C.dtype.int64
    t = _C.arange(float(vals[0]), float(vals[1]), float(vals[2]), dtype, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise _C.InvalidArgument("number of steps must be non-negative")
    dtype = to_dtype(dtype) or _C.get_default_dtype()
    # PyTorch's symmetric formula (the first half steps up from `start`, the
    # second half down from `end`, so both endpoints are exact) with its
    # kernel's arithmetic, so the values are its own to the bit: the step in
    # the float dtype (double for integers, whose ends are cast first), each
    # value one fused multiply-add, emulated by a wider product and sum
    # rounded once (float64 for float32, long double for float64).
    if dtype.is_floating_point and dtype != _C.dtype.float64:
        wide, wider = np.float32, np.float64
    else:
        wide, wider = np.float64, np.longdouble
        if not dtype.is_floating_point:
            start, end = int(start), int(end)
    start_w, end_w = wide(start), wide(end)
    if steps > 1:
        step = wider((end_w - start_w) / wide(steps - 1))
        i = np.arange(steps)
        up = step * i.astype(wider) + wider(start_w)
        down = wider(end_w) - step * (steps - 1 - i).astype(wider)
        vals = np.where(i < steps // 2, up, down).astype(wide)
    else:
        vals = np.full(steps, start_w, dtype=wide)
    return tensor(vals, dtype=dtype, device=device, requires_grad=requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    t = _C.eye(n, n if m is None else m, to_dtype(dtype) or _C.get_default_dtype(), device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _draw(kind, size, dtype, device, generator):
    dtype = to_dtype(dtype) or _C.get_default_dtype()
    if generator is not None:
        from ._sampling import generator_draw

        return generator_draw(kind, as_shape(size), dtype, device, generator)
    return (_C.rand if kind == "uniform" else _C.randn)(as_shape(size), dtype, device)


def rand(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    t = _draw("uniform", _size_arg("rand", args, size), dtype, device, generator)
    if requires_grad:
        t.requires_grad_(True)
    return t


def randn(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    t = _draw("normal", _size_arg("randn", args, size), dtype, device, generator)
    if requires_grad:
        t.requires_grad_(True)
    return t


def rand_like(t, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=preserve_format):
    # Drawn in memory order, as PyTorch fills a new tensor.
    return _like(t, lambda u: rand(*u.shape, dtype=dtype or t.dtype, device=device or t.device),
                 memory_format, "rand_like", requires_grad)


def randn_like(t, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=preserve_format):
    return _like(t, lambda u: randn(*u.shape, dtype=dtype or t.dtype, device=device or t.device),
                 memory_format, "randn_like", requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers uniform in [low, high)."""
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    shape = as_shape((size,))
    _C.full(shape, 0, _C.dtype.bool, device)  # a bad shape raises first, as in PyTorch
    if high <= low:
        raise _C.InvalidArgument(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    u = _draw("uniform", (size,), _C.dtype.float64, device, generator)
    v = _C.floor(_C.add(_C.mul(u, float(high - low)), float(low)))
    t = _C.cast(v, to_dtype(dtype) or _C.dtype.int64)
    if requires_grad:
        t.requires_grad_(True)
    return t


