"""The functional op surface (lucid.add, lucid.sum, ...), with PyTorch's
argument names. Each is a thin wrapper over a C++ op."""
import numbers

import numpy as np

from . import _C
from ._utils import as_dims, as_shape, is_number, to_dtype

__all__ = [
    "abs", "add", "all", "amax", "amin", "any", "argmax", "argmin", "atan2", "broadcast_to", "cat", "chunk",
    "clamp", "clip", "clone", "concat", "concatenate", "cos", "div", "eq", "erf", "exp", "expm1", "flatten",
    "floor", "floor_divide", "ceil", "gather", "ge", "gt", "index_add", "index_select", "isfinite", "isinf",
    "isnan", "le", "log", "log1p", "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logsumexp", "lt", "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum", "mm", "bmm", "mul",
    "multiply", "narrow", "ne", "neg", "negative", "norm", "one_hot", "permute", "pow", "prod", "reciprocal",
    "relu", "remainder", "reshape", "round", "rsqrt", "scatter", "scatter_add", "sigmoid", "sign", "sin",
    "softmax", "split", "sqrt", "square", "squeeze", "stack", "std", "sub", "subtract", "sum", "tanh",
    "transpose", "tril", "triu", "true_divide", "trunc", "unsqueeze", "var", "where", "nonzero", "numel",
    "dot", "outer", "square", "sort", "argsort", "msort", "topk", "cumsum", "cumprod", "unbind", "movedim", "swapaxes", "t", "dist",
    "var_mean", "std_mean", "sgn", "exp2", "log2", "log10", "flip", "roll", "repeat_interleave", "result_type",
    "can_cast", "clamp_", "zero_", "fill_", "detach", "detach_", "as_strided", "diagonal", "select", "swapdims",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "lgamma", "digamma", "polygamma", "erfinv", "mvlgamma",
]


def _wrap_dim(dim, ndim):
    """A possibly negative dim -> [0, ndim) (a 0-d tensor takes -1 and 0),
    PyTorch's IndexError otherwise."""
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise _C.IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim % ndim if ndim else 0


def _t(x, like=None):
    """A Python number or array-like -> Tensor (numbers stay numbers)."""
    if isinstance(x, _C.Tensor) or is_number(x):
        return x
    from ._creation import tensor

    return tensor(x)


def _binary(fn):
    def op(input, other, *, out=None):  # noqa: A002
        if out is not None:
            raise TypeError("the out= argument is not supported")
        a, b = _t(input), _t(other)
        if is_number(a) and is_number(b):
            from ._creation import tensor

            a = tensor(a)
        return fn(a, b)

    return op


def result_type(tensor1, tensor2):
    """The dtype PyTorch's promotion gives an op over the two operands
    (tensors or Python numbers)."""
    a, b = _t(tensor1), _t(tensor2)
    if is_number(a) and is_number(b):
        raise TypeError("result_type: at least one argument must be a Tensor")
    if is_number(a):
        a = _C.wrap_scalar(a, b)
    if is_number(b):
        b = _C.wrap_scalar(b, a)
    return _C.result_type(a, b)


def _category(dtype):
    return 2 if dtype.is_floating_point else (0 if dtype == _C.dtype.bool else 1)


def can_cast(from_, to):
    """Whether an op may write a `from_` result into a `to` tensor (PyTorch's
    rule: never down a category, bool < integer < floating)."""
    return _category(from_) <= _category(to)


def _times_alpha(other, alpha):
    other = _t(other)
    return other * alpha if is_number(other) else _C.mul(other, alpha)


def add(input, other, *, alpha=1, out=None):  # noqa: A002
    if alpha != 1:
        other = _times_alpha(other, alpha)
    return _binary(_C.add)(input, other, out=out)


def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    if alpha != 1:
        other = _times_alpha(other, alpha)
    return _binary(_C.sub)(input, other, out=out)


subtract = sub
mul = multiply = _binary(_C.mul)
true_divide = _binary(_C.div)


def div(input, other, *, rounding_mode=None):  # noqa: A002
    if rounding_mode is None:
        return _binary(_C.div)(input, other)
    if rounding_mode == "floor":
        return _binary(_C.floor_divide)(input, other)
    if rounding_mode == "trunc":
        a, b = _t(input), _t(other)
        if is_number(a) and is_number(b):
            from ._creation import tensor

            a = tensor(a)
        dtype = result_type(a, b)
        if dtype.is_floating_point:
            return _C.trunc(_C.div(a, b))
        # Integers stay exact (a float quotient loses bits past 2**53): the
        # floor quotient, moved up one where the signs differ and b does not
        # divide a. Division by zero raises with floor_divide.
        q, r = _C.floor_divide(a, b), _C.remainder(a, b)
        if dtype == _C.dtype.uint8:  # unsigned: no negative operands (-1 is 255 here)
            return q
        neg = _C.logical_xor(_C.lt(a, 0) if isinstance(a, _C.Tensor) else a < 0,
                             _C.lt(b, 0) if isinstance(b, _C.Tensor) else b < 0)
        return _C.add(q, _C.cast(_C.logical_and(_C.ne(r, 0), neg), q.dtype))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


floor_divide = _binary(_C.floor_divide)
remainder = _binary(_C.remainder)
pow = _binary(_C.pow)  # noqa: A001
maximum = _binary(_C.maximum)
minimum = _binary(_C.minimum)
atan2 = _binary(_C.atan2)
eq = _binary(_C.eq)
ne = _binary(_C.ne)
lt = _binary(_C.lt)
le = _binary(_C.le)
gt = _binary(_C.gt)
ge = _binary(_C.ge)
logical_and = _binary(_C.logical_and)
logical_or = _binary(_C.logical_or)
logical_xor = _binary(_C.logical_xor)
bitwise_and = _binary(_C.bitwise_and)
bitwise_or = _binary(_C.bitwise_or)
bitwise_xor = _binary(_C.bitwise_xor)
bitwise_left_shift = _binary(_C.bitwise_left_shift)
bitwise_right_shift = _binary(_C.bitwise_right_shift)
bitwise_not = _C.bitwise_not
lgamma = _C.lgamma
digamma = _C.digamma
erfinv = _C.erfinv


def polygamma(n, input):  # noqa: A002
    """The n-th derivative of digamma (n = 0: digamma itself; Lucid has
    n <= 1)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got {n}")
    if n > 1:
        raise NotImplementedError(f"polygamma of order {n} is not supported by lucid (orders 0 and 1 are)")
    return _C.digamma(input) if n == 0 else _C.trigamma(input)


def mvlgamma(input, p):  # noqa: A002
    """The multivariate log-gamma of dimension p: sum_j lgamma(x - j/2) +
    p (p-1)/4 log(pi); every element must exceed (p - 1)/2."""
    if not isinstance(input, _C.Tensor) or not input.dtype.is_floating_point:
        raise RuntimeError("mvlgamma is not implemented for integer tensors")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input.numel() and not bool(_C.all(_C.gt(input, (p - 1) / 2), None, False).item()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2")
    if p >= 2**63:
        raise ValueError("Overflow when unpacking long long")
    import math

    # One lgamma over input[..., None] - j/2 (PyTorch's form): a p too large
    # to hold fails to allocate at once instead of looping p times.
    halves = _C.div(_C.arange(0.0, float(p), 1.0, input.dtype, input.device), 2.0)
    terms = _C.lgamma(_C.sub(_C.reshape(input, list(input.shape) + [1]), halves))
    return _C.add(_C.sum(terms, [-1], False, None), p * (p - 1) / 4 * math.log(math.pi))

neg = negative = _C.neg
abs = _C.abs  # noqa: A001
sign = sgn = _C.sign
exp = _C.exp
log = _C.log
log1p = _C.log1p
expm1 = _C.expm1
sqrt = _C.sqrt
rsqrt = _C.rsqrt
square = _C.square
reciprocal = _C.reciprocal
sin = _C.sin
cos = _C.cos
tanh = _C.tanh
sigmoid = _C.sigmoid
relu = _C.relu
erf = _C.erf
floor = _C.floor
ceil = _C.ceil
trunc = _C.trunc
logical_not = _C.logical_not
isfinite = _C.isfinite
isnan = _C.isnan
isinf = _C.isinf
clone = _C.clone


def exp2(x):
    return _C.pow(2.0, x)


def log2(x):
    return _C.div(_C.log(x), float(np.log(2.0)))


def log10(x):
    return _C.div(_C.log(x), float(np.log(10.0)))


def round(input, decimals=0):  # noqa: A001,A002
    if decimals == 0:
        return _C.round(input)
    scale = 10.0 ** decimals
    return _C.div(_C.round(_C.mul(input, scale)), scale)


def where(condition, input=None, other=None):  # noqa: A002
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return _C.where(condition, _t(input), _t(other))


def clamp(input, min=None, max=None):  # noqa: A001,A002
    if isinstance(min, _C.Tensor) or isinstance(max, _C.Tensor):
        return _C.clamp_t(input, min, max)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _C.clamp(input, min, max)


clip = clamp


# In-place forms PyTorch also exposes as functions.
def clamp_(input, min=None, max=None):  # noqa: A001,A002
    return input.clamp_(min, max)


def zero_(input):  # noqa: A002
    return input.zero_()


def fill_(input, value):  # noqa: A002
    return input.fill_(value)


def detach(input):  # noqa: A002
    return input.detach()


def detach_(input):  # noqa: A002
    return input.detach_()


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001,A002
    dtype = to_dtype(dtype)
    if dtype == _C.dtype.bool:  # a sum of bools saturates: any nonzero (dim=() is every dim here)
        return any(_C.cast(input, dtype), as_dims(dim) or None, keepdim)
    return _C.sum(input, as_dims(dim), keepdim, dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if dtype is not None:
        input = _C.cast(input, to_dtype(dtype))
    return _C.mean(input, as_dims(dim), keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if dtype is None:
        return _C.prod(input, as_dims(dim), keepdim)
    dtype = to_dtype(dtype)
    if dtype == _C.dtype.bool:  # a product of bools: all nonzero
        return all(_C.cast(input, dtype), as_dims(dim) or None, keepdim)
    # An integer product accumulates in int64; wrapping it to a narrower
    # dtype afterwards gives the same bits as multiplying in that dtype.
    return _C.cast(_C.prod(_C.cast(input, dtype), as_dims(dim), keepdim), dtype)


def _correction(unbiased, correction):
    if correction is not None:
        return float(correction)
    if unbiased is None:
        return 1.0
    return 1.0 if unbiased else 0.0


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    if isinstance(dim, bool):  # var(x, False): the unbiased flag
        dim, unbiased = None, dim
    return _C.var(input, as_dims(dim), _correction(unbiased, correction), keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return _C.std(input, as_dims(dim), _correction(unbiased, correction), keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def amax(input, dim=(), keepdim=False):  # noqa: A002
    return _C.amax(input, as_dims(dim) or None, keepdim)


def amin(input, dim=(), keepdim=False):  # noqa: A002
    return _C.amin(input, as_dims(dim) or None, keepdim)


class _MinMax(tuple):
    """(values, indices) with attribute access, like torch.return_types."""

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def max(input, dim=None, keepdim=False):  # noqa: A001,A002
    if isinstance(dim, _C.Tensor):
        return maximum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return _C.amax(input, None, False)
    return _MinMax(_C.max_dim(input, dim, keepdim))


def min(input, dim=None, keepdim=False):  # noqa: A001,A002
    if isinstance(dim, _C.Tensor):
        return minimum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return _C.amin(input, None, False)
    return _MinMax(_C.min_dim(input, dim, keepdim))


def _logical_reduction(reduce, input, dim, keepdim):
    # PyTorch: dim=() reduces nothing (unlike sum's); a uint8 input gives
    # uint8 0/1, every other dtype bool.
    dims = as_dims(dim)
    out = _C.ne(input, _C.wrap_scalar(0, input)) if dims == [] else reduce(input, dims, keepdim)
    return _C.cast(out, _C.dtype.uint8) if input.dtype == _C.dtype.uint8 else out


def all(input, dim=None, keepdim=False):  # noqa: A001,A002
    return _logical_reduction(_C.all, input, dim, keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001,A002
    return _logical_reduction(_C.any, input, dim, keepdim)


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    return _C.argmax(input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    return _C.argmin(input, dim, keepdim)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    return _C.logsumexp(input, as_dims(dim), keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    if dtype is not None:
        input = _C.cast(input, to_dtype(dtype))
    if p == "fro" or p is None:
        p = 2.0
    elif p == "nuc":
        raise NotImplementedError("nuclear norm is not supported")
    return _C.norm(input, float(p), as_dims(dim), keepdim)


def dist(input, other, p=2):  # noqa: A002
    return norm(sub(input, other), p)


def matmul(input, other):  # noqa: A002
    return _C.matmul(input, other)


def mm(input, mat2):  # noqa: A002
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got {input.ndim}-D and {mat2.ndim}-D")
    return _C.matmul(input, mat2)


def bmm(input, mat2):  # noqa: A002
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got {input.ndim}-D and {mat2.ndim}-D)")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {input.shape[0]} and "
                           f"{mat2.shape[0]}")
    return _C.matmul(input, mat2)


def dot(input, other):  # noqa: A002
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return _C.matmul(input, other)


def outer(input, vec2):  # noqa: A002
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise _C.InvalidArgument(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return _C.mul(_C.unsqueeze(input, 1), _C.unsqueeze(vec2, 0))


def reshape(input, shape):  # noqa: A002
    return _C.reshape(input, as_shape((shape,)))


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    return _C.flatten(input, start_dim, end_dim)


def squeeze(input, dim=None):  # noqa: A002
    return _C.squeeze(input, as_dims(dim))


def unsqueeze(input, dim):  # noqa: A002
    return _C.unsqueeze(input, dim)


def permute(input, dims):  # noqa: A002
    return _C.permute(input, list(dims))


def transpose(input, dim0, dim1):  # noqa: A002
    return _C.transpose(input, dim0, dim1)


swapaxes = swapdims = transpose


def t(input):  # noqa: A002
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return _C.transpose(input, 0, 1) if input.ndim == 2 else _C.alias(input)


def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    return _C.as_strided(input, list(size), list(stride), storage_offset)


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    return _C.diagonal(input, offset, dim1, dim2)


def select(input, dim, index):  # noqa: A002
    return _C.select(input, dim, index)


def movedim(input, source, destination):  # noqa: A002
    source, destination = as_dims(source), as_dims(destination)
    if len(source) != len(destination):
        raise _C.InvalidArgument(f"movedim: Invalid source or destination dims: source ({source} dims) should "
                                 f"contain the same number of dims as destination ({destination} dims)")
    src = [_wrap_dim(s, input.ndim) for s in source]
    dst = [_wrap_dim(d, input.ndim) for d in destination]
    if len(set(src)) != len(src):
        raise _C.InvalidArgument(f"movedim: repeated dim in `source` ({source})")
    if len(set(dst)) != len(dst):
        raise _C.InvalidArgument(f"movedim: repeated dim in `destination` ({destination})")
    if input.ndim == 0:
        return input
    order = [d for d in range(input.ndim) if d not in src]
    perm = [None] * input.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(order)
    perm = [p if p is not None else next(it) for p in perm]
    return _C.permute(input, perm)


def broadcast_to(input, size):  # noqa: A002
    return _C.expand(input, as_shape((size,)))  # -1 keeps a dim, as in expand


def cat(tensors, dim=0):
    return _C.cat(list(tensors), dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    return _C.stack(list(tensors), dim)


def split(tensor, split_size_or_sections, dim=0):
    if isinstance(split_size_or_sections, numbers.Integral):
        return tuple(_C.split(tensor, int(split_size_or_sections), dim))
    return tuple(_C.split(tensor, [int(s) for s in split_size_or_sections], dim))


def chunk(input, chunks, dim=0):  # noqa: A002
    return tuple(_C.chunk(input, chunks, dim))


def unbind(input, dim=0):  # noqa: A002
    if input.ndim == 0:
        raise _C.IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if input.shape[_wrap_dim(dim, input.ndim)] == 0:
        return ()
    return tuple(_C.squeeze(p, [dim]) for p in _C.split(input, 1, dim))


def narrow(input, dim, start, length):  # noqa: A002
    return _C.narrow(input, dim, start, length)


def tril(input, diagonal=0):  # noqa: A002
    return _C.tril(input, diagonal)


def triu(input, diagonal=0):  # noqa: A002
    return _C.triu(input, diagonal)


def flip(input, dims):  # noqa: A002
    dims = [_wrap_dim(d, input.ndim) for d in as_dims(dims)]
    if len(set(dims)) != len(dims):
        raise _C.InvalidArgument(f"dims has duplicates, original flip dims size={len(dims)}, but unique flip dims "
                                 f"size={len(set(dims))}")
    if input.ndim == 0 or not dims:
        return _C.clone(input)  # PyTorch's flip always returns a new tensor, never a view of its input

    def flip_row_major(t, dims):
        for d in dims:
            n = t.shape[d]
            t = _C.index_select(t, d, _C.arange(float(n - 1), -1.0, -1.0, _C.dtype.int64, t.device))
        return t

    # In the input's memory order, as PyTorch (a flipped transpose is a transpose).
    order = _C.memory_order(input)
    return _C.in_memory_order(input, order, lambda t: flip_row_major(t, [order.index(d) for d in dims]))


def roll(input, shifts, dims=None):  # noqa: A002
    if dims is None:
        return reshape(roll(flatten(input), shifts, 0), input.shape)
    shifts, dims = as_dims(shifts), as_dims(dims)
    if len(shifts) != len(dims):
        raise _C.InvalidArgument(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if input.ndim == 0:
        raise _C.IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    out = input
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            a, b = _C.split(out, [n - s, s], d)
            out = _C.cat([b, a], d)
    return _C.contiguous_copy(out) if out is input else out  # new and row-major even for a zero shift, as PyTorch


def index_select(input, dim, index):  # noqa: A002
    return _C.index_select(input, dim, index)


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    if alpha != 1:
        source = _C.mul(source, alpha)
    return _C.index_add(input, dim, index, source)


def gather(input, dim, index):  # noqa: A002
    return _C.gather(input, dim, index)


def scatter_add(input, dim, index, src):  # noqa: A002
    return _C.scatter_add(input, dim, index, src)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):  # noqa: A002
    if reduce is not None:
        if reduce != "add":
            raise NotImplementedError(f"scatter(reduce={reduce!r}) is not supported")
        return _C.scatter_add(input, dim, index, src)
    if src is None:
        src = value
    if not isinstance(src, _C.Tensor):
        src = _C.full(list(index.shape), src, input.dtype, input.device)
    return _C.scatter(input, dim, index, src)


def masked_fill(input, mask, value):  # noqa: A002
    if not isinstance(value, _C.Tensor):
        value = _C.wrap_scalar(value, input)
    return _C.masked_fill(input, mask, value)


def one_hot(tensor, num_classes=-1):
    return _C.contiguous(_C.one_hot(tensor, num_classes))  # row-major for any input layout, as PyTorch's


def softmax(input, dim, dtype=None):  # noqa: A002
    if dtype is not None:
        input = _C.cast(input, to_dtype(dtype))
    return _C.softmax(input, dim)


def log_softmax(input, dim, dtype=None):  # noqa: A002
    if dtype is not None:
        input = _C.cast(input, to_dtype(dtype))
    return _C.log_softmax(input, dim)


def numel(input):  # noqa: A002
    return input.numel()


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """Coordinates of the non-zero elements, [count, ndim] (eager only: the
    count decides the shape, so it cannot be traced into a compiled step)."""
    idx = _C.nonzero(input)
    if not as_tuple:
        return idx
    if input.ndim == 0:  # PyTorch treats a 0-d input as 1-d here
        return (_C.full([idx.shape[0]], 0, _C.dtype.int64, input.device),)
    return tuple(_C.squeeze(c, [1]) for c in _C.split(idx, 1, 1))


def sort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """(values, indices) along `dim`. Always stable: equal elements keep their
    order (a valid answer for stable=False too); NaN sorts above every number."""
    return _MinMax(_C.sort(input, dim, descending))


def argsort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    return _C.argsort(input, dim, descending)


def msort(input):  # noqa: A002
    return _C.sort(input, 0, False)[0]


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the k largest (smallest) along `dim`, always sorted
    (a valid answer for sorted=False too); ties go to the lower index."""
    return _MinMax(_C.topk(input, k, dim, largest))


def cumsum(input, dim, *, dtype=None):  # noqa: A002
    return _C.cumsum(input, dim, to_dtype(dtype))


def cumprod(input, dim, *, dtype=None):  # noqa: A002
    return _C.cumprod(input, dim, to_dtype(dtype))


def repeat_interleave(input, repeats, dim=None):  # noqa: A002
    if dim is None:
        input, dim = flatten(input), 0
    n = input.shape[dim]
    idx = np.repeat(np.arange(n), repeats)
    from ._creation import tensor

    return _C.index_select(input, dim, tensor(idx.astype(np.int64)))
