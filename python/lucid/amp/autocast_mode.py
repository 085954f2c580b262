"""autocast: mixed precision as in torch.autocast.

Inside ``autocast(device_type, dtype)``, matmul and the layers built on it
(linear, conv, attention) run in ``dtype``; the ops on PyTorch's float32 list
(losses, prod) run in float32; everything else runs in its inputs' dtype.
The state is thread-local, nests and restores, and is part of a compiled
step's signature.
"""
import functools
import warnings

from .. import _C

_DEVICE_DEFAULT = {"cpu": "bfloat16", "metal": "float16", "mps": "float16", "cuda": "float16"}


class autocast:
    """``with autocast(device_type="cpu", dtype=lucid.bfloat16): ...`` (also a
    decorator). ``enabled=False`` turns autocast off inside the block."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICE_DEFAULT:
            raise ValueError(f"autocast: unsupported device_type {device_type!r}; expected one of "
                             f"{sorted(_DEVICE_DEFAULT)}")
        if dtype is None:
            dtype = getattr(_C.dtype, _DEVICE_DEFAULT[device_type])
        if dtype not in (_C.dtype.float16, _C.dtype.bfloat16):
            raise ValueError(f"autocast: dtype must be lucid.float16 or lucid.bfloat16, got {dtype}")
        if enabled and device_type != "cpu" and not _C.device_available(device_type):
            # PyTorch's behaviour for a device type it cannot use: warn, run without autocast.
            warnings.warn(f"User provided device_type of '{device_type}', but that device is not available in this "
                          "build of lucid. Disabling autocast.", stacklevel=2)
            enabled = False
        self.device_type = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)

    def __enter__(self):
        self._prev = _C.autocast_state()
        _C.set_autocast_state(self._enabled, self.fast_dtype if self._enabled else self._prev[1])
        return self

    def __exit__(self, *exc):
        _C.set_autocast_state(*self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)

        return wrapper


def autocast_state():
    """(enabled, dtype) on this thread; compiled steps key on it."""
    enabled, dtype = _C.autocast_state()
    return (enabled, str(dtype)) if enabled else (False,)


def is_autocast_enabled(device_type=None):
    return _C.autocast_state()[0]


def get_autocast_dtype(device_type=None):
    return _C.autocast_state()[1]


def cast_lower(*tensors):
    """Inputs of a lower-precision op (linear, conv, attention): float32 and
    16-bit float tensors go to the autocast dtype. Others pass through."""
    enabled, dtype = _C.autocast_state()
    if not enabled:
        return tensors
    return tuple(_C.cast(t, dtype) if _eligible(t) else t for t in tensors)


def cast_fp32(*tensors):
    """Inputs of an op on PyTorch's float32 list (losses, prod): 16-bit
    floats go to float32."""
    if not _C.autocast_state()[0]:
        return tensors
    return tuple(_C.cast(t, _C.dtype.float32) if isinstance(t, _C.Tensor) and t.dtype in
                 (_C.dtype.float16, _C.dtype.bfloat16) else t for t in tensors)


def _eligible(t):
    return isinstance(t, _C.Tensor) and t.dtype in (_C.dtype.float32, _C.dtype.float16, _C.dtype.bfloat16)


# ---------------------------------------------------------------- custom autograd Functions
def _cast(value, dtype):
    """Floating tensors of a (nested) argument cast to ``dtype``."""
    if isinstance(value, _C.Tensor):
        return _C.cast(value, dtype) if value.dtype.is_floating_point and value.dtype != dtype else value
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not isinstance(value, str):
        return type(value)(_cast(v, dtype) for v in value) if not hasattr(value, "_fields") else \
            type(value)(*(_cast(v, dtype) for v in value))
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorates a custom Function's ``forward``: it runs under the caller's
    autocast state (recorded for ``custom_bwd``), or, with ``cast_inputs``,
    with autocast off and its floating inputs cast to that dtype when called
    inside autocast."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(ctx, *_cast(args[1:], cast_inputs), **_cast(kwargs, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorates a custom Function's ``backward``: it runs under the autocast
    state its ``forward`` (decorated with ``custom_fwd``) ran under."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def is_autocast_available(device_type):
    """Whether autocast can run on ``device_type`` ("cpu", "cuda", "mps"/"metal")."""
    return device_type in _DEVICE_DEFAULT
