"""Tensor methods and operators (PyTorch's names), attached to _C.Tensor."""
import builtins
import math
import numbers
import warnings

import numpy as np

from . import _C
from . import _functions as F
from ._memory_format import contiguous_format, is_in_format, make_in_format, preserve_format
from ._utils import as_dims, as_shape, cast_error, check_std, is_number, to_dtype, torch_type_name

Tensor = _C.Tensor


def _method(name, fn=None):
    def deco(f):
        setattr(Tensor, name, f)
        return f

    return deco(fn) if fn is not None else deco


def _other(x):
    if isinstance(x, Tensor) or is_number(x):
        return x
    from ._creation import tensor

    return tensor(x)


# ---------------------------------------------------------------- operators
def _binop(cfn, reflected=False):
    def op(self, other):
        other = _other(other)
        return cfn(other, self) if reflected else cfn(self, other)

    return op


_method("__add__", _binop(_C.add))
_method("__radd__", _binop(_C.add, True))
_method("__sub__", _binop(_C.sub))
_method("__rsub__", _binop(_C.sub, True))
_method("__mul__", _binop(_C.mul))
_method("__rmul__", _binop(_C.mul, True))
_method("__truediv__", _binop(_C.div))
_method("__rtruediv__", _binop(_C.div, True))
_method("__floordiv__", _binop(_C.floor_divide))
_method("__rfloordiv__", _binop(_C.floor_divide, True))
_method("__mod__", _binop(_C.remainder))
_method("__rmod__", _binop(_C.remainder, True))
_method("__pow__", _binop(_C.pow))
_method("__rpow__", _binop(_C.pow, True))
_method("__matmul__", lambda self, other: _C.matmul(self, _other(other)))
_method("__rmatmul__", lambda self, other: _C.matmul(_other(other), self))
_method("__neg__", lambda self: _C.neg(self))
_method("__pos__", lambda self: self)
_method("__abs__", lambda self: _C.abs(self))
_method("__invert__", lambda self: _C.bitwise_not(self))
for _name, _fn in [("and", _C.bitwise_and), ("or", _C.bitwise_or), ("xor", _C.bitwise_xor),
                   ("lshift", _C.bitwise_left_shift), ("rshift", _C.bitwise_right_shift)]:
    _method(f"__{_name}__", _binop(_fn))
    _method(f"__r{_name}__", _binop(_fn, reflected=True))
_method("__eq__", _binop(_C.eq))
_method("__ne__", _binop(_C.ne))
_method("__lt__", _binop(_C.lt))
_method("__le__", _binop(_C.le))
_method("__gt__", _binop(_C.gt))
_method("__ge__", _binop(_C.ge))
Tensor.__hash__ = object.__hash__
_C.dtype.__repr__ = _C.dtype.__str__ = lambda self: "lucid." + self.name
# NumPy defers to the Tensor's reflected operators (np.float32(2) * t is a Tensor).
Tensor.__array_priority__ = 1000


# ------------------------------------------------------------- conversions
@_method("__bool__")
def _bool(self):
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(self.item())


_method("__float__", lambda self: builtins.float(self.item()))
_method("__int__", lambda self: builtins.int(self.item()))


@_method("__index__")
def _index(self):
    if self.dtype.is_floating_point or self.numel() != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return builtins.int(self.item())


@_method("__len__")
def _len(self):
    if self.ndim == 0:
        raise TypeError("len() of a 0-d tensor")
    return self.shape[0]


@_method("__iter__")
def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(F.unbind(self, 0))


@_method("__array__")
def _array(self, dtype=None, copy=None):
    arr = self.detach().numpy()
    return arr.astype(dtype) if dtype is not None else arr


@_method("tolist")
def _tolist(self):
    if self.device.type == "cuda":
        return _tolist(self.cpu())
    if self.dtype == _C.dtype.bfloat16:
        return _C.cast(self.detach(), _C.dtype.float32).cpu().numpy().tolist()
    return self.detach().cpu().numpy().tolist()


@_method("size")
def _size(self, dim=None):
    return self.shape if dim is None else self.shape[dim if dim >= 0 else dim + self.ndim]


def _cuda_device(device):
    # .cuda(), .cuda(0), .cuda("cuda:0") as PyTorch takes them
    if device is None:
        return "cuda"
    return f"cuda:{device}" if isinstance(device, builtins.int) else device


@_method("to")
def _to(self, *args, dtype=None, device=None, copy=False, non_blocking=False, memory_format=None):
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _C.dtype) or a in (builtins.float, builtins.int, builtins.bool):
            dtype = to_dtype(a)
        else:
            device = a
    out = self
    if dtype is not None and to_dtype(dtype) != out.dtype:
        dt = to_dtype(dtype)
        out = make_in_format(out, memory_format, lambda t: _C.cast(t, dt), "to")
    elif memory_format is not None and memory_format is not preserve_format and not is_in_format(out, memory_format):
        out = make_in_format(out, memory_format, _C.contiguous_copy, "to")
    if device is not None and _C.device(str(device)) != out.device:
        out = make_in_format(out, memory_format, lambda t: _C.to_device(t, str(device)), "to")
    if copy and out is self:
        out = make_in_format(self, memory_format, _C.contiguous_copy, "to")
    return out


for _name, _dt in [("float", "float32"), ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"),
                   ("long", "int64"), ("int", "int32"), ("short", "int16"), ("char", "int8"), ("byte", "uint8"),
                   ("bool", "bool")]:
    setattr(Tensor, _name, (lambda d: lambda self, memory_format=preserve_format: _to(
        self, getattr(_C.dtype, d), memory_format=memory_format))(_dt))
_method("cpu", lambda self: _to(self, device="cpu"))
_method("cuda", lambda self, device=None, non_blocking=False: _to(self, device=_cuda_device(device)))
_method("type_as", lambda self, other: _to(self, other.dtype))
_method("contiguous", lambda self, memory_format=contiguous_format: (
    self if is_in_format(self, memory_format) else make_in_format(self, memory_format, _C.contiguous_copy, "contiguous")))
_method("is_contiguous", lambda self, memory_format=contiguous_format: is_in_format(self, memory_format))
_method("is_floating_point", lambda self: self.dtype.is_floating_point)
_method("clone", lambda self, memory_format=preserve_format: make_in_format(
    self, memory_format, _C.contiguous_copy, "clone"))
Tensor.is_cuda = property(lambda self: self.device.type == "cuda")
Tensor.T = property(lambda self: _C.permute(self, list(range(self.ndim - 1, -1, -1))))
Tensor.mT = property(lambda self: _C.transpose(self, -2, -1))


Tensor.data = property(lambda self: self.detach(), lambda self, v: self._set_data(v))


class UntypedStorage:
    """The memory a tensor shows (``Tensor.untyped_storage()``): tensors that
    share memory report the same ``data_ptr()``."""

    def __init__(self, tensor):
        self._tensor = tensor

    def data_ptr(self):
        return self._tensor._storage_ptr()

    def nbytes(self):
        return self._tensor._storage_nbytes()

    size = nbytes
    __len__ = nbytes

    def element_size(self):
        return 1

    @property
    def device(self):
        return self._tensor.device

    def __repr__(self):
        return f"UntypedStorage(data_ptr={self.data_ptr():#x}, nbytes={self.nbytes()})"


_method("untyped_storage", lambda self: UntypedStorage(self))


def _rebuild_tensor(array, dtype_name, requires_grad, device="cpu"):
    t = _C.cast(_C.from_numpy_copy(array), getattr(_C.dtype, dtype_name))
    if device != "cpu":
        t = _C.to_device(t, device)
    return t.requires_grad_(True) if requires_grad else t


@_method("__reduce_ex__")
def _reduce_ex(self, protocol):
    # Pickled as a NumPy array (bfloat16 as float32, which holds it exactly)
    # and the device it is back on when unpickled, as PyTorch's pickles.
    t = self.detach()
    arr = (_C.cast(t, _C.dtype.float32) if t.dtype == _C.dtype.bfloat16 else t).cpu().numpy().copy()
    return _rebuild_tensor, (arr, self.dtype.name, self.requires_grad, str(self.device))


@_method("__deepcopy__")
def _deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                           "protocol at the moment.")
    if id(self) in memo:
        return memo[id(self)]
    out = _C.clone(self.detach())
    if self.requires_grad:
        out.requires_grad_(True)
    if self.grad is not None:
        out.grad = _deepcopy(self.grad, memo)
    memo[id(self)] = out
    return out


# ------------------------------------------------------------------- methods
def _forward(name, fn):
    setattr(Tensor, name, lambda self, *a, **k: fn(self, *a, **k))


for _name in ["add", "sub", "subtract", "mul", "multiply", "div", "true_divide", "floor_divide", "remainder", "pow",
              "maximum", "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
              "logical_xor", "neg", "negative", "abs", "sign", "sgn", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt",
              "square", "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "trunc",
              "round", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
              "bitwise_left_shift", "bitwise_right_shift", "lgamma", "digamma", "erfinv", "mvlgamma", "isfinite",
              "isnan", "isinf", "clamp", "clip", "sum", "mean", "prod", "var",
              "std", "amax", "amin", "max", "min", "all", "any", "argmax", "argmin", "logsumexp", "norm", "matmul",
              "mm", "bmm", "dot", "outer", "flatten", "squeeze", "unsqueeze", "transpose", "swapaxes", "t",
              "movedim", "narrow", "tril", "triu", "flip", "roll", "index_select", "index_add", "gather",
              "scatter_add", "scatter", "masked_fill", "softmax", "log_softmax", "nonzero", "sort", "argsort",
              "msort", "topk", "cumsum", "cumprod", "unbind", "chunk", "split", "dist", "exp2", "log2", "log10",
              "repeat_interleave"]:
    _forward(_name, getattr(F, _name))



_method("where", lambda self, condition, other: F.where(condition, self, other))
_method("polygamma", lambda self, n: F.polygamma(n, self))


@_method("reshape")
def _reshape(self, *shape):
    return _C.reshape(self, as_shape(shape))


@_method("view")
def _view(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], _C.dtype):
        return _view_dtype(self, shape[0])
    return _C.view(self, as_shape(shape))


def _view_dtype(self, dtype):
    """self's memory read as `dtype` (PyTorch's view(dtype): no history; a
    different element size scales the last dim, which must be contiguous)."""
    shape, strides, offset = list(self.shape), list(self.stride()), self.storage_offset()
    size_from, size_to = self.dtype.itemsize, dtype.itemsize
    if size_from != size_to:
        what = f" to view {torch_type_name(self.dtype)} as {torch_type_name(dtype)} (different element sizes)"
        if self.ndim == 0:
            raise RuntimeError("self.dim() cannot be 0" + what)
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1{what}, but got {strides[-1]}")
        if size_to > size_from:
            ratio = size_to // size_from
            if shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio}{what}, but got {shape[-1]}")
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio}{what}, but got {offset}")
            for d in range(self.ndim - 1):
                if strides[d] % ratio:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {ratio}{what}, but got {strides[d]}")
            shape[-1] //= ratio
            strides = [st // ratio for st in strides[:-1]] + [1]
            offset //= ratio
        else:
            ratio = size_from // size_to
            shape[-1] *= ratio
            strides = [st * ratio for st in strides[:-1]] + [1]
            offset *= ratio
    return _C._reinterpret(self, dtype, shape, strides, offset)


_method("view_as", lambda self, other: _C.view(self, list(other.shape)))
_method("reshape_as", lambda self, other: _C.reshape(self, list(other.shape)))


@_method("permute")
def _permute(self, *dims):
    return _C.permute(self, as_shape(dims))


@_method("expand")
def _expand(self, *sizes):
    return _C.expand(self, as_shape(sizes))


_method("expand_as", lambda self, other: _C.broadcast_to(self, list(other.shape)))
_method("broadcast_to", lambda self, size: _C.broadcast_to(self, as_shape((size,))))


@_method("repeat")
def _repeat(self, *sizes):
    sizes = as_shape(sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    x = _C.reshape(self, [1] * (len(sizes) - self.ndim) + list(self.shape))
    # interleave a size-`r` axis before each dim, broadcast, then merge; the
    # broadcast is copied once: repeat returns new memory, as in PyTorch (a
    # view of x would make writes to the result reach x)
    shape, target = [], []
    for r, s in zip(sizes, x.shape):
        shape += [1, s]
        target += [r, s]
    out = _C.contiguous_copy(_C.broadcast_to(_C.reshape(x, shape), target))
    return _C.reshape(out, [r * s for r, s in zip(sizes, x.shape)])


@_method("unflatten")
def _unflatten(self, dim, sizes):
    d = F._wrap_dim(dim, self.ndim)
    sizes, n = [builtins.int(s) for s in sizes], self.shape[d]
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if -1 in sizes:  # inferred from this dim alone (the others may be 0)
        known = math.prod(s for s in sizes if s != -1)
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} ({n}) "
                               f"in the input tensor")
        sizes[sizes.index(-1)] = n // known
    if math.prod(sizes) != n:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} ({n}) in "
                           f"the input tensor")
    return _C.view(self, list(self.shape[:d]) + sizes + list(self.shape[d + 1:]))


_method("select", lambda self, dim, index: _C.select(self, dim, index))
_method("diagonal", lambda self, offset=0, dim1=0, dim2=1: _C.diagonal(self, offset, dim1, dim2))
_method("as_strided", lambda self, size, stride, storage_offset=None:
        _C.as_strided(self, list(size), list(stride), storage_offset))


@_method("unfold")
def _unfold(self, dimension, size, step):
    return _C.unfold(self, dimension, size, step)


@_method("new_zeros")
def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return _C.full(as_shape(size), 0.0, to_dtype(dtype) or self.dtype, device or self.device)


@_method("new_ones")
def _new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return _C.full(as_shape(size), 1.0, to_dtype(dtype) or self.dtype, device or self.device)


@_method("new_full")
def _new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return _C.full(as_shape((size,)), fill_value, to_dtype(dtype) or self.dtype, device or self.device)


@_method("new_empty")
def _new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return _new_zeros(self, *size, dtype=dtype, device=device)


@_method("new_tensor")
def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from ._creation import tensor

    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


@_method("backward")
def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    from .autograd import backward

    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


# ------------------------------------------------------------------ in-place
# An in-place op computes out of place, then writes back (assign_). It
# returns `self`, the same Python object, like PyTorch.
def _source(self, *args):
    """What an in-place op reads as `self`: a copy while history is recorded
    and the op may save self for backward, so the write-back cannot change
    what backward reads."""
    if _C.is_grad_enabled() and (self.requires_grad or
                                 builtins.any(isinstance(a, Tensor) and a.requires_grad for a in args)):
        return _C.clone(self)
    return self


def _write(self, value):
    if not F.can_cast(value.dtype, self.dtype):
        raise cast_error(value.dtype, self.dtype)
    _C.assign_(self, value)
    return self


def _inplace(name, compute):
    def method(self, *args, **kwargs):
        return _write(self, compute(_source(self, *args, *kwargs.values()), *args, **kwargs))

    method.__name__ = name
    setattr(Tensor, name, method)


for _name in ["add", "sub", "mul", "div", "pow", "clamp", "clip", "neg", "abs", "exp", "log", "sqrt", "sigmoid",
              "tanh", "relu", "floor", "ceil", "round", "trunc", "sign", "reciprocal", "remainder", "floor_divide",
              "masked_fill", "tril", "triu", "square", "rsqrt", "sin", "cos", "erf", "log1p", "expm1",
              "index_add", "scatter_add", "scatter", "maximum", "minimum"]:
    if hasattr(F, _name):
        _inplace(_name + "_", getattr(F, _name))


@_method("addcmul_")
def _addcmul_(self, tensor1, tensor2, value=1):
    return _write(self, _C.add(_source(self, tensor1, tensor2), _C.mul(_C.mul(tensor1, tensor2), value)))


@_method("addcdiv_")
def _addcdiv_(self, tensor1, tensor2, value=1):
    return _write(self, _C.add(_source(self, tensor1, tensor2), _C.mul(_C.div(tensor1, tensor2), value)))


@_method("lerp_")
def _lerp_(self, end, weight):
    from ._composite import lerp

    return _write(self, lerp(_source(self, end, weight), _other(end), weight))


@_method("zero_")
def _zero_(self):
    _C.zero_(self)
    return self


@_method("fill_")
def _fill_(self, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               f"dimensions.")
        _C.assign_(self, value)
    else:
        _C.fill_(self, value)
    return self


@_method("copy_")
def _copy_(self, src, non_blocking=False):
    src = _other(src)
    if not isinstance(src, Tensor):  # a Python number: every element (PyTorch's copy_ takes one)
        src = _C.full([], src, self.dtype, self.device)
    _C.copy_(self, src)
    return self


@_method("uniform_")
def _uniform_(self, a=0.0, b=1.0):
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    u = _C.rand(list(self.shape), self.dtype if self.dtype.is_floating_point else _C.dtype.float32, self.device)
    _C.assign_(self, _C.add(_C.mul(u, b - a), a))
    return self


@_method("normal_")
def _normal_(self, mean=0.0, std=1.0):
    check_std(std)
    n = _C.randn(list(self.shape), self.dtype if self.dtype.is_floating_point else _C.dtype.float32, self.device)
    _C.assign_(self, _C.add(_C.mul(n, std), mean))
    return self


_method("__iadd__", lambda self, o: Tensor.add_(self, _other(o)))
_method("__isub__", lambda self, o: Tensor.sub_(self, _other(o)))
_method("__imul__", lambda self, o: Tensor.mul_(self, _other(o)))
_method("__itruediv__", lambda self, o: Tensor.div_(self, _other(o)))
_method("__iand__", lambda self, o: Tensor.bitwise_and_(self, _other(o)))
_method("__ior__", lambda self, o: Tensor.bitwise_or_(self, _other(o)))
_method("__ixor__", lambda self, o: Tensor.bitwise_xor_(self, _other(o)))
_method("__ilshift__", lambda self, o: Tensor.bitwise_left_shift_(self, _other(o)))
_method("__irshift__", lambda self, o: Tensor.bitwise_right_shift_(self, _other(o)))
_method("__idiv__", lambda self, o: Tensor.div_(self, _other(o)))
_method("__ifloordiv__", lambda self, o: Tensor.floor_divide_(self, _other(o)))
_method("__imod__", lambda self, o: Tensor.remainder_(self, _other(o)))
_method("__ipow__", lambda self, o: Tensor.pow_(self, _other(o)))


# ------------------------------------------------------------------ indexing
def _is_index_tensor(k):
    if isinstance(k, Tensor):
        return True
    if isinstance(k, np.ndarray):
        return True
    if isinstance(k, (list, tuple, range)):  # a range indexes like the list it holds
        return True
    return False


def _to_index_tensor(k):
    from ._creation import tensor

    if isinstance(k, Tensor):
        return k
    arr = np.asarray(k)
    if arr.size == 0 and not isinstance(k, np.ndarray):
        arr = arr.astype(np.int64)  # an empty list or range selects nothing, as an index
    return tensor(arr)


def _parse_key(self, key):
    """-> (slice spec for every input dim, output reshape info, advanced
    index tensors with the result dims they apply to)."""
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            items.append(k)
        elif isinstance(k, (bool, np.bool_)):
            items.append(None if k else ("empty",))  # x[True]: a new axis; x[False]: a new empty axis
        elif isinstance(k, numbers.Integral):
            items.append(builtins.int(k))
        elif _is_index_tensor(k):
            t = _to_index_tensor(k)
            if t.dtype == _C.dtype.uint8:  # PyTorch's deprecated byte mask
                warnings.warn("indexing with dtype lucid.uint8 is now deprecated, please use a dtype lucid.bool "
                              "instead.", UserWarning, stacklevel=3)
                t = _C.ne(t, _C.wrap_scalar(0, t))
            if t.dtype in (_C.dtype.int8, _C.dtype.int16):
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if t.dtype == _C.dtype.bool:
                if t.ndim == 0:
                    items.append(None if t.item() else ("empty",))
                else:
                    items.append(_Mask(t))
            elif t.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            elif t.ndim == 0 and not isinstance(k, (list, range, np.ndarray)):
                items.append(builtins.int(t.item()) if not t.is_symbolic else t)
            else:
                items.append(t)
        else:
            raise TypeError(f"only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are "
                             f"valid indices (got {type(k).__name__})")
    consumed = builtins.sum(k.mask.ndim if isinstance(k, _Mask) else 1 for k in items
                            if not (k is None or k is Ellipsis or isinstance(k, tuple)))
    if builtins.sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    if Ellipsis in [k for k in items if not isinstance(k, Tensor)]:
        at = next(i for i, k in enumerate(items) if k is Ellipsis and not isinstance(k, Tensor))
        items = items[:at] + [slice(None)] * (self.ndim - consumed) + items[at + 1:]
    else:
        items = items + [slice(None)] * (self.ndim - consumed)
    # a mask over dims d..d+m-1 must have their sizes; it selects its nonzero positions
    out, d = [], 0
    for k in items:
        if isinstance(k, _Mask):
            m = k.mask
            for j in range(m.ndim):
                if m.shape[j] != self.shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(m.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(self.shape)} at index {d + j}")
            out.extend(F.nonzero(m, as_tuple=True))
            d += m.ndim
        else:
            out.append(k)
            d += 0 if (k is None or isinstance(k, tuple)) else 1
    return out


class _Mask:
    """A bool index tensor of _parse_key before it is checked against the dims it covers."""
    __slots__ = ("mask",)

    def __init__(self, mask):
        self.mask = mask


def _basic(self, items):
    """Applies ints, slices and None; returns (tensor, list of (result dim,
    index tensor)) for the advanced indices."""
    starts, stops, steps = [], [], []
    out_shape = []
    adv = []
    empty_axes = []
    d = 0
    for k in items:
        if k is None:
            out_shape.append(1)
            continue
        if isinstance(k, tuple):  # x[False]: a size-1 axis, emptied below
            empty_axes.append(len(out_shape))
            out_shape.append(1)
            continue
        size = self.shape[d]
        if isinstance(k, builtins.int):
            i = k + size if k < 0 else k
            if not 0 <= i < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            starts.append(i), stops.append(i + 1), steps.append(1)
        elif isinstance(k, slice):
            start, stop, step = k.start, k.stop, k.step
            step = 1 if step is None else builtins.int(step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(start, stop, step).indices(size)
            stop = builtins.max(stop, start)
            starts.append(start), stops.append(stop), steps.append(step)
            out_shape.append((stop - start + step - 1) // step)
        else:
            starts.append(0), stops.append(size), steps.append(1)
            adv.append((len(out_shape), k))
            out_shape.append(size)
        d += 1
    x = _C.slice(self, starts, stops, steps) if self.ndim else _C.alias(self)  # always a new view, as x[...] is
    if builtins.any(k is None or isinstance(k, (builtins.int, tuple)) for k in items):
        x = _C._set_unit_strides(_C.reshape(x, out_shape), _indexed_strides(self, items))
    if empty_axes:
        stops = [0 if i in empty_axes else s for i, s in enumerate(out_shape)]
        x = _C.slice(x, [0] * len(out_shape), stops, [1] * len(out_shape))
    return x, adv


def _indexed_strides(self, items):
    """The strides PyTorch gives x[items] (ints, slices, None; the advanced
    indices as full slices): one rule with the C++ indexing path's
    (ops.cpp, indexed_strides), the items coded as 0 for a new axis, -1 for
    an int and a slice's step otherwise."""
    codes = [0 if k is None or isinstance(k, tuple) else -1 if isinstance(k, builtins.int)
             else builtins.int(k.step) if isinstance(k, slice) and k.step is not None else 1 for k in items]
    return _C._indexed_strides(self, codes)


@_method("__getitem__")
def _getitem(self, key):
    x = _C._basic_getitem(self, key)  # ints, slices, None and ...: the same view, made in C++
    if x is not None:
        return x
    items = _parse_key(self, key)
    x, adv = _basic(self, items)
    if not adv:
        return x
    dims = [d for d, _ in adv]
    rest = [d for d in range(x.ndim) if d not in dims]
    x = _C.permute(x, dims + rest)
    out = _C.index(x, [t for _, t in adv])
    # NumPy's rule: adjacent advanced indices keep their place, otherwise the
    # broadcast index dims go first.
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if adjacent and dims[0] > 0:
        nb = out.ndim - len(rest)
        order = list(range(nb, nb + dims[0])) + list(range(nb)) + list(range(nb + dims[0], out.ndim))
        out = _C.contiguous(_C.permute(out, order))  # new row-major memory, as PyTorch's index returns
    return out


def _integer_scalar_index(k):
    """A 0-d integer tensor in a key: PyTorch indexes with it as with an int
    (a basic index, whose write casts the value)."""
    return isinstance(k, Tensor) and k.ndim == 0 and k.dtype not in (_C.dtype.bool, _C.dtype.uint8) and \
        not k.dtype.is_floating_point


def _basic_item(k):
    return k is None or k is Ellipsis or isinstance(k, (slice, numbers.Integral)) or _integer_scalar_index(k)


def _check_put_dtype(self, key, value):
    """PyTorch's index_put_ writes only a value of self's dtype, except where
    it becomes a masked_fill_: a single value under one bool mask (the other
    items basic: applied first, as a view). Keys of basic items only (0-d
    integer tensors included) write through a view and cast."""
    if value.dtype == self.dtype:
        return
    items = key if isinstance(key, tuple) else (key,)
    if builtins.all(_basic_item(k) for k in items):
        return
    masks = [k for k in items if isinstance(k, Tensor) and k.dtype == _C.dtype.bool and k.ndim]
    if not (value.numel() == 1 and len(masks) == 1 and
            builtins.all(k is masks[0] or _basic_item(k) for k in items)):
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{torch_type_name(self.dtype)} for the destination and {torch_type_name(value.dtype)} "
                           f"for the source.")


@_method("__setitem__")
def _setitem(self, key, value):
    if is_number(value):
        # PyTorch converts the number as fill_ does (refusing one out of the
        # dtype's range), except that 16-bit floats round to inf instead.
        if self.dtype not in (_C.dtype.float16, _C.dtype.bfloat16):
            _C.check_scalar_fits(value, self.dtype, "index_put_")
        value = _C.wrap_scalar(value, self)
    elif not isinstance(value, Tensor):  # a list or an array takes self's dtype
        from ._creation import tensor

        value = tensor(value, dtype=self.dtype, device=self.device)
    elif builtins.any(_is_index_tensor(k) for k in (key if isinstance(key, tuple) else (key,))):
        _check_put_dtype(self, key, value)
    # PyTorch drops the value's leading size-1 dims before any kind of write
    # (x[i] = v with v of shape (1, 1, n) writes like v of shape (n,)).
    lead_ones = next((d for d, n in enumerate(value.shape) if n != 1), value.ndim)
    if lead_ones:
        value = _C.reshape(value, list(value.shape)[lead_ones:])
    # A boolean mask over the whole tensor: a select, which also traces.
    if isinstance(key, Tensor) and key.dtype == _C.dtype.bool and tuple(key.shape) == tuple(self.shape):
        _C.assign_(self, _C.where(key, value, _source(self, value)))
        return
    items = _parse_key(self, key)
    if builtins.any(isinstance(k, tuple) for k in items):
        return  # x[False] = v selects nothing
    has_adv = builtins.any(isinstance(k, Tensor) for k in items)
    if not has_adv:
        # Basic indexing: a write into the view x[key] (PyTorch's copy_ into
        # the view, so the base's history is rewritten, not replaced).
        x, _ = _basic(self, items)
        _C.assign_(x, value)
        return
    lead = []
    for k in items:
        if not isinstance(k, Tensor):
            break
        lead.append(k)
    if builtins.all(isinstance(k, slice) and k == slice(None) for k in items[len(lead):]):
        # Index tensors over the leading dims: one index_put.
        _C.assign_(self, _C.index_put(_source(self, value), lead, value, False))
        return
    # Any other mix: the flat positions that reading x[key] would select,
    # found by indexing an arange with the same key, receive the values.
    pos = _C.reshape(_C.arange(0.0, builtins.float(self.numel()), 1.0, _C.dtype.int64, self.device),
                     list(self.shape))
    sel = _getitem(pos, key)
    v = _C.broadcast_to(_C.cast(value, self.dtype), list(sel.shape))
    flat = _C.reshape(_source(self, value), [self.numel()])
    out = _C.index_put(flat, [_C.reshape(sel, [sel.numel()])], _C.reshape(v, [sel.numel()]), False)
    _C.assign_(self, _C.reshape(out, list(self.shape)))


# ---------------------------------------------------------------------- repr
# PyTorch's printing rules (torch/_tensor_str.py), so printed tensors read
# the same: a shared width and mode (integer-valued, fixed or scientific)
# chosen from the non-zero finite values, summarised beyond 1000 elements.
_PRINT = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80}


class _Formatter:
    def __init__(self, arr):
        self.floating = arr.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        p = _PRINT["precision"]
        flat = arr.reshape(-1)
        if not self.floating:
            self.max_width = builtins.max([1] + [len(f"{v}") for v in flat.tolist()])
            return
        nz = flat[np.isfinite(flat) & (flat != 0)]
        if nz.size == 0:
            return
        mags = np.abs(nz.astype(np.float64))
        lo, hi = mags.min(), mags.max()
        self.int_mode = builtins.bool(np.all(nz == np.ceil(nz)))
        values = nz.tolist()
        if self.int_mode and not (hi / lo > 1000.0 or hi > 1.0e8):
            self.max_width = builtins.max(len(f"{v:.0f}") + 1 for v in values)
        elif hi / lo > 1000.0 or hi > 1.0e8 or (not self.int_mode and lo < 1.0e-4):
            self.sci_mode = True
            self.max_width = builtins.max(len(f"{v:.{p}e}") for v in values)
        else:
            self.max_width = builtins.max(len(f"{v:.{p}f}") for v in values)

    def format(self, v):
        p = _PRINT["precision"]
        if not self.floating:
            ret = f"{v}"
        elif self.sci_mode:
            ret = f"{v:{self.max_width}.{p}e}"
        elif self.int_mode:
            ret = f"{v:.0f}" + ("" if np.isinf(v) or np.isnan(v) else ".")
        else:
            ret = f"{v:.{p}f}"
        return " " * (self.max_width - len(ret)) + ret


def _summarized(arr):
    e = _PRINT["edgeitems"]
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate([arr[:e], arr[-e:]]) if arr.shape[0] > 2 * e else arr
    rows = list(range(e)) + list(range(arr.shape[0] - e, arr.shape[0])) if arr.shape[0] > 2 * e \
        else range(arr.shape[0])
    return np.stack([_summarized(arr[i]) for i in rows])


def _vector_str(arr, indent, summarize, fmt):
    e = _PRINT["edgeitems"]
    per_line = builtins.max(1, (_PRINT["linewidth"] - indent) // (fmt.max_width + 2))
    if summarize and arr.shape[0] > 2 * e:
        data = [fmt.format(v) for v in arr[:e].tolist()] + [" ..."] + [fmt.format(v) for v in arr[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(arr, indent, summarize, fmt):
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    e = _PRINT["edgeitems"]
    if summarize and arr.shape[0] > 2 * e:
        slices = ([_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] +
                  [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0] - e, arr.shape[0])])
    else:
        slices = [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0])]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text, suffixes, indent):
    out = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > _PRINT["linewidth"]:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line_len += len(suffix) + 2
    return "".join(out) + ")"


@_method("__repr__")
def _repr(self):
    if self.is_symbolic:
        return f"tensor(<traced>, shape={list(self.shape)}, dtype={self.dtype})"
    prefix, indent = "tensor(", len("tensor(")
    suffixes = []
    if self.device.type != "cpu":
        suffixes.append(f"device='{self.device}'")
    t = self.detach()
    if t.device.type == "cuda":  # device memory is printed from a host copy
        t = t.cpu()
    if t.numel() == 0:
        body = "[]"
        if self.ndim != 1:
            suffixes.append(f"size={tuple(self.shape)}")
        if self.dtype != _C.get_default_dtype():
            suffixes.append(f"dtype={self.dtype}")
    else:
        if self.dtype not in (_C.get_default_dtype(), _C.dtype.int64, _C.dtype.bool):
            suffixes.append(f"dtype={self.dtype}")
        arr = (_C.cast(t, _C.dtype.float32) if t.dtype in (_C.dtype.float16, _C.dtype.bfloat16) else t).cpu().numpy()
        summarize = arr.size > _PRINT["threshold"]
        fmt = _Formatter(_summarized(arr) if summarize else arr)
        body = _tensor_str(arr, indent, summarize, fmt)
    if self.grad_fn is not None:
        suffixes.append(f"grad_fn=<{self.grad_fn.name()}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


Tensor.__str__ = _repr


@_method("__format__")
def _format(self, spec):
    if self.ndim == 0 and not self.is_symbolic:
        return format(self.item(), spec)
    return format(_repr(self), spec)


@_method("register_hook")
def _register_hook(self, hook):
    """hook(grad) -> None or a new gradient, called each time a gradient for
    this tensor is computed (before it reaches .grad or the ops before it)."""
    from .autograd.function import RemovableHandle

    if not callable(hook):
        raise TypeError(f"register_hook expects a callable, got {type(hook).__name__}")
    return RemovableHandle(self, _C._register_hook(self, hook))


@_method("register_post_accumulate_grad_hook")
def _register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) after each accumulation of a gradient into this leaf's
    .grad; it must return None (PyTorch's RuntimeError otherwise)."""
    from .autograd.function import RemovableHandle

    import weakref

    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook expects a callable, got {type(hook).__name__}")
    # The hook sees this very object (a dict keyed by parameters finds it);
    # a weak reference, as the leaf's own hooks must not keep it alive.
    this = weakref.ref(self)

    def call(leaf):
        mine = this()
        return hook(leaf if mine is None else mine)

    return RemovableHandle(self, _C._register_post_accumulate_hook(self, call))
