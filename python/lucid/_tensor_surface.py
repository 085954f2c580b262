"""More of torch.Tensor's surface, attached to _C.Tensor: the device
predicates, type() and the legacy tensor types (lucid.FloatTensor...)."""
from . import _C
from ._utils import to_dtype

Tensor = _C.Tensor


# ------------------------------------------------------------------ devices
Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
Tensor.is_cuda = property(lambda self: self.device.type == "cuda")
Tensor.is_mps = property(lambda self: self.device.type == "metal")  # PyTorch's "mps" is Lucid's metal device
Tensor.is_xpu = property(lambda self: False)  # no such device in Lucid
Tensor.is_meta = property(lambda self: False)  # no meta device: every tensor holds data (or is traced)
Tensor.is_sparse = property(lambda self: False)
Tensor.is_quantized = property(lambda self: False)


def _get_device(self):
    """-1 for a CPU tensor, else the device index (PyTorch's get_device)."""
    return -1 if self.device.type == "cpu" else self.device.index


Tensor.get_device = _get_device


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    from .cuda import _unavailable, is_available

    if not is_available():
        raise _unavailable("Tensor.cuda()")
    return self.to("cuda" if device is None else device if isinstance(device, str) else f"cuda:{int(device)}")


Tensor.cuda = _cuda


# ------------------------------------------------------- legacy tensor types
# PyTorch's type names: x.type() -> "lucid.FloatTensor" ("lucid.cuda.FloatTensor"
# on a CUDA device), and lucid.FloatTensor(...) constructs / isinstance-checks.
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor"}
_DTYPE_OF_TYPE = {v: getattr(_C.dtype, k) for k, v in _TYPE_NAMES.items()}


class _TensorTypeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == cls.device_type

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _make_tensor_type(name, dtype, device_type, module):
    def __new__(cls, *args, device=None):
        from ._creation import tensor, zeros

        if not args or all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            t = zeros(*args, dtype=dtype)  # uninitialised in PyTorch; zeros here
        elif len(args) == 1:
            t = tensor(args[0], dtype=dtype)
        else:
            raise TypeError(f"{name}(): expected sizes (ints) or one sequence of data")
        return t if device_type == "cpu" else t.to(device_type)

    return _TensorTypeMeta(name, (), {"__new__": __new__, "dtype": dtype, "device_type": device_type,
                                      "__module__": module})


TENSOR_TYPES = {name: _make_tensor_type(name, dt, "cpu", "lucid") for name, dt in _DTYPE_OF_TYPE.items()}
CUDA_TENSOR_TYPES = {name: _make_tensor_type(name, dt, "cuda", "lucid.cuda") for name, dt in _DTYPE_OF_TYPE.items()}


def _type_name(t):
    prefix = "lucid.cuda." if t.device.type == "cuda" else "lucid.metal." if t.device.type == "metal" else "lucid."
    return prefix + _TYPE_NAMES[t.dtype.name]


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """Without an argument: the type name ("lucid.FloatTensor"). With a dtype,
    a type name (either "lucid." or "torch." prefix) or a tensor type: a
    copy cast to it (self when it already has that type)."""
    if dtype is None:
        return _type_name(self)
    device = None
    if isinstance(dtype, _TensorTypeMeta):
        device, dtype = dtype.device_type, dtype.dtype
    elif isinstance(dtype, str) and dtype.endswith("Tensor"):
        parts = dtype.split(".")
        if parts[0] not in ("lucid", "torch") or parts[-1] not in _DTYPE_OF_TYPE or len(parts) > 3 or (
                len(parts) == 3 and parts[1] != "cuda"):
            raise ValueError(f"invalid type: '{dtype}'")
        device = "cuda" if len(parts) == 3 else "cpu"
        dtype = _DTYPE_OF_TYPE[parts[-1]]
    else:
        dtype = to_dtype(dtype)
    out = self if dtype == self.dtype else _C.cast(self, dtype)
    if device is not None and device != out.device.type:
        out = out.to(device)
    return out


Tensor.type = _type
