"""Top-level names PyTorch programs still use: the math constants
(``torch.pi``...), ``newaxis``, ``is_complex`` and the deprecated
``set_default_tensor_type``."""
import math
import warnings

from . import _C
from ._tensor_surface import _DTYPE_OF_TYPE, _TensorTypeMeta

__all__ = ["e", "pi", "inf", "nan", "newaxis", "is_complex", "set_default_tensor_type"]

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None


def is_complex(input):  # noqa: A002
    """False for every Lucid tensor: Lucid has no complex dtypes."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return False


def set_default_tensor_type(t):
    """Sets the default dtype (and, for ``torch.cuda.*Tensor``, the default
    device) from a tensor type or its name; deprecated, as in PyTorch."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if isinstance(t, _TensorTypeMeta):
        device, dtype = t.device_type, t.dtype
        name = f"torch.{'cuda.' if device == 'cuda' else ''}{t.__name__}"
    elif isinstance(t, str):
        parts = t.split(".")
        if parts[0] not in ("torch", "lucid") or parts[-1] not in _DTYPE_OF_TYPE or len(parts) > 3 or (
                len(parts) == 3 and parts[1] != "cuda"):
            raise TypeError(f"invalid type: '{t}'")
        device, dtype, name = ("cuda" if len(parts) == 3 else "cpu"), _DTYPE_OF_TYPE[parts[-1]], t
    else:
        raise TypeError(f"invalid type: '{t}'")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if device == "cuda" and not _C.device_available("cuda"):
        raise TypeError(f"type {name} not available. Torch not compiled with CUDA enabled.")
    _C.set_default_dtype(dtype)
    if device == "cuda":
        _C.set_default_device("cuda")
