"""More of torch.Tensor's surface, attached to _C.Tensor: the device
predicates, type() and the legacy tensor types (lucid.FloatTensor...)."""
import math

from . import _C
from ._settings import Size
from ._utils import check_probability, to_dtype

Tensor = _C.Tensor


# ------------------------------------------------------------------ devices
Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
Tensor.is_cuda = property(lambda self: self.device.type == "cuda")
Tensor.is_mps = property(lambda self: self.device.type == "metal")  # PyTorch's "mps" is Lucid's metal device
Tensor.is_xpu = property(lambda self: False)  # no such device in Lucid
Tensor.is_meta = property(lambda self: False)  # no meta device: every tensor holds data (or is traced)
Tensor.is_sparse = property(lambda self: False)
Tensor.is_quantized = property(lambda self: False)


# The C++ type names PyTorch's dtype errors print.
_C_TYPE_NAMES = {"lucid.int64": "long int", "lucid.int32": "int", "lucid.int16": "short int", "lucid.int8": "signed char",
                 "lucid.uint8": "unsigned char", "lucid.bool": "bool"}


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
               "bfloat16": "BFloat16Tensor", "int32": "IntTensor", "int64": "LongTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}
_DTYPE_OF_TYPE = {v: getattr(_C.dtype, k) for k, v in _TYPE_NAMES.items()}


class _TensorTypeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == cls.device_type

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _legacy_new(name, dtype, args, device=None):
    """What PyTorch's legacy constructors (torch.Tensor(2, 3),
    torch.FloatTensor([1, 2])) make: sizes give a new tensor (uninitialised
    in PyTorch; zeros here), one sequence gives its data in `dtype`."""
    from ._creation import tensor, zeros

    if not args:
        t = zeros(0, dtype=dtype)  # PyTorch's: an empty 1-D tensor
    elif all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        t = zeros(*args, dtype=dtype)
    elif len(args) == 1 and isinstance(args[0], Size):  # a Size is sizes; another tuple is data
        t = zeros(*args[0], dtype=dtype)
    elif len(args) == 1:
        t = tensor(args[0], dtype=dtype)
    else:
        raise TypeError(f"{name}(): expected sizes (ints) or one sequence of data")
    return t if device is None else t.to(device)


def _legacy_tensor(*args, device=None):
    """lucid.Tensor(...) called as PyTorch's legacy constructor: the default dtype."""
    return _legacy_new("Tensor", _C.get_default_dtype(), args, device)


def _make_tensor_type(name, dtype, device_type, module):
    def __new__(cls, *args, device=None):
        return _legacy_new(name, dtype, args, None if device_type == "cpu" else device_type)

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


# ------------------------------------------------------- composite methods
def _attach():
    from . import _composite as C
    from . import _functions as F
    from ._tensor import _inplace, _write

    methods = ["absolute", "acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh", "arcsinh", "atan",
               "arctan", "atanh", "arctanh", "arctan2", "tan", "sinh", "cosh", "logit", "xlogy", "hypot", "fmod",
               "frac", "fix", "heaviside", "logaddexp", "logaddexp2", "lerp", "addcmul", "addcdiv", "clamp_min",
               "clamp_max", "nan_to_num", "sinc", "angle", "deg2rad", "rad2deg", "float_power", "positive", "signbit",
               "copysign", "divide", "greater", "greater_equal", "less", "less_equal", "not_equal", "erfc",
               "isclose", "allclose", "equal", "isneginf", "isposinf", "isreal", "argsort", "msort", "cumprod",
               "logcumsumexp", "renorm", "count_nonzero", "nansum", "nanmean", "median", "nanmedian", "quantile",
               "nanquantile", "kthvalue", "aminmax", "cummax", "cummin", "mode", "tile", "rot90", "fliplr", "flipud",
               "diff", "tensor_split", "moveaxis", "swapdims", "ravel", "addmm", "addmv", "addbmm",
               "baddbmm", "mv", "inner", "kron", "cross", "diag", "diag_embed", "trace",
               "take_along_dim", "take", "index_fill", "index_copy", "masked_select", "masked_scatter", "argwhere",
               "unique", "unique_consecutive", "bincount", "histc", "vdot", "fmax", "fmin", "ger", "diagflat",
               "hsplit", "vsplit", "dsplit", "addr", "cov", "corrcoef", "isin"]
    for name in methods:
        fn = getattr(C, name, None) or getattr(F, name)  # swapdims: the view of _functions
        setattr(Tensor, name, (lambda f: lambda self, *a, **k: f(self, *a, **k))(fn))
    for name in ["acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh", "arcsinh", "atan", "arctan",
                 "atanh", "arctanh", "tan", "sinh", "cosh", "logit", "xlogy", "hypot", "fmod", "frac", "fix",
                 "heaviside", "clamp_min", "clamp_max", "nan_to_num", "sinc", "deg2rad", "rad2deg", "copysign",
                 "divide", "index_fill", "index_copy", "masked_scatter", "erfc", "cumprod", "float_power",
                 "arctan2", "baddbmm", "addmm", "addmv", "addbmm", "greater", "greater_equal", "less", "less_equal",
                 "not_equal", "renorm"]:
        _inplace(name + "_", getattr(C, name, None) or getattr(F, name))  # cumprod: the scan primitive
    for name in ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
                 "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                 "bitwise_right_shift", "lgamma", "digamma", "erfinv", "mvlgamma",
                 "exp2", "log2", "log10", "atan2", "true_divide", "subtract", "multiply", "negative", "sgn"]:
        if not hasattr(Tensor, name + "_"):
            _inplace(name + "_", getattr(F, name))
    _inplace("polygamma_", lambda self, n: F.polygamma(n, self))

    # Shape changes in place: the tensor takes the new shape (its data is the
    # same). Only without autograd history, which such a change would cut.
    def reshape_in_place(name, fn):
        def method(self, *args):
            if self.grad_fn is not None:
                raise NotImplementedError(f"Tensor.{name} on a tensor with autograd history is not supported; use "
                                          f"the out-of-place {name[:-1]}")
            self._set_data(fn(self.detach(), *args))
            return self

        setattr(Tensor, name, method)

    for name, fn in [("squeeze_", F.squeeze), ("unsqueeze_", F.unsqueeze), ("t_", F.t), ("transpose_", F.transpose),
                     ("swapaxes_", F.transpose), ("swapdims_", F.transpose)]:
        reshape_in_place(name, fn)

    Tensor.nelement = lambda self: self.numel()
    Tensor.ndimension = lambda self: self.ndim
    Tensor.itemsize = property(lambda self: self.element_size())
    Tensor.nbytes = property(lambda self: self.numel() * self.element_size())
    Tensor.is_signed = lambda self: self.dtype.is_signed
    Tensor.is_complex = lambda self: False  # Lucid has no complex dtypes
    # Real dtypes only, so conjugation and the lazy conj/neg bits are the identity (PyTorch returns self too).
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg"):
        setattr(Tensor, name, lambda self: self)
    Tensor.is_conj = lambda self: False
    Tensor.is_neg = lambda self: False
    Tensor.is_inference = lambda self: False  # no separate inference tensors (see lucid.inference_mode)
    Tensor.is_same_size = lambda self, other: tuple(self.shape) == tuple(other.shape)
    Tensor.pin_memory = lambda self, device=None: self  # host memory is already what a transfer reads
    Tensor.is_pinned = lambda self, device=None: False
    Tensor.share_memory_ = lambda self: self
    Tensor.split_with_sizes = lambda self, split_sizes, dim=0: tuple(_C.split(self, [int(s) for s in split_sizes],
                                                                              dim))

    def is_nonzero(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if self.numel() else
                               "Boolean value of Tensor with no values is ambiguous")
        return bool(self.item())

    Tensor.is_nonzero = is_nonzero

    def sum_to_size(self, *size):
        from ._utils import as_shape

        target = as_shape(size)
        lead = self.ndim - len(target)
        dims = list(range(lead)) + [lead + i for i, s in enumerate(target) if s == 1 and self.shape[lead + i] != 1]
        out = _C.sum(self, dims, True, None) if dims else self
        return _C.reshape(out, target)

    Tensor.sum_to_size = sum_to_size

    # in-place random fills (PyTorch's Tensor.bernoulli_, exponential_, random_...)
    def bernoulli_(self, p=0.5, *, generator=None):
        check_probability(p, "bernoulli_")
        prob = p if isinstance(p, Tensor) else _C.full(list(self.shape), float(p), _C.dtype.float32, self.device)
        return _write(self, C.bernoulli(_C.broadcast_to(_C.cast(prob, _C.dtype.float32), list(self.shape)),
                                        generator=generator))

    def exponential_(self, lambd=1.0, *, generator=None):
        from ._creation import rand

        if not lambd > 0.0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
        u = rand(*self.shape, dtype=self.dtype, device=self.device, generator=generator)
        return _write(self, _C.div(_C.neg(_C.log1p(_C.neg(u))), float(lambd)))

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        """Cauchy draws: median + sigma * tan(pi (u - 1/2))."""
        from ._creation import rand

        if not self.dtype.is_floating_point:
            raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a "
                               f"floating point but you specified {_C_TYPE_NAMES.get(str(self.dtype), self.dtype)}")
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
        u = rand(*self.shape, dtype=self.dtype, device=self.device, generator=generator)
        return _write(self, _C.add(_C.mul(C.tan(_C.mul(_C.sub(u, 0.5), math.pi)), float(sigma)), float(median)))

    def geometric_(self, p, *, generator=None):
        """Geometric draws: the number of Bernoulli(p) trials up to the first
        success (1, 2, ...)."""
        from ._creation import rand

        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
        u = rand(*self.shape, dtype=_C.dtype.float64, device=self.device, generator=generator)
        # 1 - u lies in (0, 1]; its end point 1 would give 0 trials, so at least 1.
        trials = _C.ceil(_C.div(_C.log1p(_C.neg(u)), math.log1p(-p)))
        return _write(self, _C.cast(_C.clamp(trials, 1.0, None), self.dtype))

    def random_(self, from_=0, to=None, *, generator=None):
        from ._creation import randint

        if to is None:
            from_, to = 0, from_ if from_ else (2 ** 24 if self.dtype.is_floating_point else 2 ** 31)
        return _write(self, _C.cast(randint(from_, to, tuple(self.shape), generator=generator,
                                            device=self.device), self.dtype))

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        from ._creation import randn

        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
        z = randn(*self.shape, dtype=self.dtype, device=self.device, generator=generator)
        return _write(self, _C.exp(_C.add(_C.mul(z, float(std)), float(mean))))

    def fill_diagonal_(self, fill_value, wrap=False):
        """PyTorch's rule: positions i * (stride sum) of the flattened tensor;
        a tall matrix restarts the diagonal every cols + 1 rows with wrap."""
        import numpy as np

        from ._creation import tensor

        if self.ndim < 2:
            raise RuntimeError("dimensions must larger than 1")
        if self.ndim > 2 and len(set(self.shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        n = self.numel()
        strides = np.cumprod([1] + list(self.shape[::-1]))[:-1][::-1]
        step = int(strides.sum())
        end = n if (self.ndim == 2 and wrap) else min(self.shape) * step
        if self.ndim == 2 and not wrap:
            end = min(self.shape[0], self.shape[1]) * step
        mask = np.zeros(n, dtype=bool)
        mask[np.arange(0, min(end, n), step)] = True
        return _write(self, _C.where(tensor(mask.reshape(tuple(self.shape)), device=self.device), fill_value,
                                     self))

    Tensor.fill_diagonal_ = fill_diagonal_
    Tensor.multinomial = lambda self, num_samples, replacement=False, *, generator=None: __import__(
        "lucid")._sampling.multinomial(self, num_samples, replacement, generator=generator)
    Tensor.hardshrink = lambda self, lambd=0.5: __import__("lucid").nn.functional.hardshrink(self, lambd)
    Tensor.prelu = lambda self, weight: __import__("lucid").nn.functional.prelu(self, weight)
    Tensor.narrow_copy = lambda self, dim, start, length: _C.clone(_C.narrow(self, dim, start, length))
    Tensor.H = property(lambda self: self.T if self.ndim == 2 else _bad_H(self))
    Tensor.mH = property(lambda self: _C.transpose(self, -2, -1))  # real dtypes: the conjugate is the tensor
    Tensor.adjoint = lambda self: _C.transpose(self, -2, -1)
    Tensor.index_put = lambda self, indices, values, accumulate=False: C.index_put(self, indices, values, accumulate)
    Tensor.index_put_ = lambda self, indices, values, accumulate=False: _write(self, Tensor.index_put(
        self if not self.requires_grad else _C.clone(self), indices, values, accumulate))
    _inplace("absolute_", C.absolute)
    _inplace("addr_", C.addr)
    _inplace("cumsum_", F.cumsum)

    Tensor.bernoulli_ = bernoulli_
    Tensor.bernoulli = lambda self, p=None, *, generator=None: C.bernoulli(self, p, generator=generator)
    Tensor.exponential_ = exponential_
    Tensor.cauchy_ = cauchy_
    Tensor.geometric_ = geometric_
    Tensor.random_ = random_
    Tensor.log_normal_ = log_normal_


def _bad_H(t):
    raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got " + f"{t.ndim}-D tensor.")


_attach()
