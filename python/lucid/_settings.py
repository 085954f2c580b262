"""Process-wide switches PyTorch programs set: determinism, float32 matmul
precision, print options, inter-op threads. Lucid's CPU kernels are
deterministic and compute float32 matmuls in float32, so the first two are
recorded and read back; print options change how tensors print."""
import numbers
import operator

from . import _C

_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "interop_threads": 1}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Lucid's kernels give the same result on every run at a given thread
    count, so every algorithm already is deterministic; the flag is recorded."""
    if not isinstance(mode, bool):
        raise RuntimeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _state["warn_only"]


def set_float32_matmul_precision(precision):
    """"highest", "high" or "medium": what a CUDA float32 matmul may trade for
    speed (TF32, bfloat16). Lucid's CPU matmuls always run in float32."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}. Expected one of highest, high, medium")
    _state["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _state["matmul_precision"]


def set_num_interop_threads(n):
    """Lucid runs ops one after another on one thread pool (set_num_threads):
    there are no inter-op threads to size, so this only checks its argument."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n <= 0:
        raise RuntimeError("Number of inter-op threads must be positive")
    _state["interop_threads"] = int(n)


def get_num_interop_threads():
    return _state["interop_threads"]


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """PyTorch's print options (profile: "default", "short", "full")."""
    from ._tensor import _PRINT

    profiles = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
                "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
                "full": dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80)}
    if profile is not None:
        _PRINT.update(profiles[profile])
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            _PRINT[key] = value
    if sci_mode is not None:
        raise NotImplementedError("set_printoptions(sci_mode=...) is not supported by lucid: the notation is "
                                  "chosen from the values, as PyTorch does by default")


def seed():
    """Seeds the global generator from OS entropy; returns the seed."""
    import numpy as np

    s = int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) % (2 ** 63)
    _C.manual_seed(s)
    return s


def get_rng_state():
    """The global generator's state: an int64 tensor ``[seed, offset]``
    (Lucid's generator is a counter-based stream; PyTorch's state is a
    different, larger byte tensor). Pass it to :func:`set_rng_state`."""
    key = _C.random_key(0, None)  # the current key; a count of 0 advances nothing
    return _C.from_numpy(key.cpu().numpy().copy())  # reads the value: raises inside a compiled step, like .item()


def set_rng_state(new_state):
    """Restores a state from :func:`get_rng_state`: the draws that follow
    repeat those that followed it."""
    from ._C import Tensor

    if not isinstance(new_state, Tensor):
        raise TypeError(f"set_rng_state: expected a Tensor, got {type(new_state).__name__}")
    if new_state.dtype != _C.dtype.int64 or tuple(new_state.shape) != (2,):
        raise ValueError("set_rng_state: expected the int64 tensor [seed, offset] that lucid.get_rng_state() "
                         f"returns, got {new_state.dtype} of shape {tuple(new_state.shape)} (a PyTorch generator "
                         "state cannot be restored in Lucid)")
    seed, offset = (int(v) % 2 ** 64 for v in new_state.tolist())
    _C.manual_seed(seed)  # offset 0 ...
    _C.random_key(offset, None)  # ... advanced by `offset` draws


class Size(tuple):
    """torch.Size: a tuple of dimension sizes (what ``shape`` and ``size()``
    return); slicing, ``+`` and ``*`` keep the type, as PyTorch's."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        items = tuple(sizes)
        for i, s in enumerate(items):
            try:
                items_i = operator.index(s)
            except TypeError:
                raise TypeError(f"lucid.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')") from None
            if items_i is not s:
                items = items[:i] + (items_i,) + items[i + 1:]
        return super().__new__(cls, items)

    def numel(self):
        n = 1
        for s in self:
            n *= int(s)
        return n

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return Size, (tuple(self),)

    def __repr__(self):
        return f"lucid.Size({list(self)})"


_C._set_size_type(Size)


def as_tensor(data, dtype=None, device=None):
    """A tensor of `data`, sharing memory when it already is one (or a
    C-contiguous NumPy array) of the requested dtype and device."""
    import numpy as np

    from ._creation import from_numpy, tensor
    from ._utils import to_dtype

    dtype = to_dtype(dtype)
    if isinstance(data, _C.Tensor):
        out = data if dtype is None else data.to(dtype)
        return out if device is None else out.to(device)
    on_host = (_C.get_default_device() if device is None else _C.device(str(device))).type == "cpu"
    if isinstance(data, np.ndarray) and data.flags.c_contiguous and on_host and \
            data.dtype.name in ("float32", "float64", "int32", "int64", "int16", "int8", "uint8", "bool", "float16"):
        t = from_numpy(data)
        return t if dtype is None else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_num_interop_threads", "get_num_interop_threads", "set_printoptions",
           "seed", "get_rng_state", "set_rng_state", "Size", "as_tensor"]
