"""Composite functions: more of torch's function surface, each written with
lucid ops, so it differentiates (and traces) through them. Functions that
need concrete values (unique, bincount, searchsorted, masked_select...) read
them on the host and say so; they run eagerly only.

Where a composition rounds differently from PyTorch's dedicated kernel (the
inverse trigonometric and hyperbolic functions, hypot), the difference is a
few float32 ulps (the tests hold them to 1e-5); 16-bit inputs are computed in
float32 and rounded once, as PyTorch's kernels do.
"""
import builtins
import collections
import itertools
import math
import numbers
import string

import numpy as np

from . import _C
from . import _functions as F
from ._utils import as_dims, as_shape, check_probability, check_std, is_number, to_dtype, torch_type_name

Tensor = _C.Tensor

__all__ = [
    # pointwise
    "absolute", "acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh", "arcsinh", "atan", "arctan",
    "atanh", "arctanh", "arctan2", "tan", "sinh", "cosh", "logit", "xlogy", "hypot", "fmod", "frac", "heaviside",
    "logaddexp", "logaddexp2", "lerp", "addcmul", "addcdiv", "clamp_min", "clamp_max", "nan_to_num", "sinc",
    "deg2rad", "rad2deg", "angle", "float_power", "positive", "signbit", "copysign", "fix", "divide", "true_divide",
    "greater", "greater_equal", "less", "less_equal", "not_equal", "rsub", "erfc",
    # comparisons
    "isclose", "allclose", "equal", "isneginf", "isposinf", "isreal",
    # reductions
    "logcumsumexp", "count_nonzero", "nansum", "nanmean", "median", "nanmedian", "renorm",
    "quantile", "nanquantile", "kthvalue", "aminmax", "cummax", "cummin", "mode", "index_put",
    # shapes
    "tile", "hstack", "vstack", "row_stack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d",
    "broadcast_tensors", "broadcast_shapes", "rot90", "fliplr", "flipud", "diff", "tensor_split", "unflatten",
    "moveaxis", "ravel", "meshgrid", "block_diag",
    # linear algebra
    "addmm", "addmv", "addbmm", "baddbmm", "mv", "inner", "tensordot", "einsum", "kron", "cross", "diag",
    "diag_embed", "trace", "tril_indices", "triu_indices", "cdist", "cartesian_prod", "vdot", "chain_matmul",
    # indexing
    "take_along_dim", "take", "index_fill", "index_copy", "masked_select", "masked_scatter", "argwhere",
    "unique", "unique_consecutive", "bincount", "histc", "searchsorted", "bucketize",
    # random
    "bernoulli", "normal", "poisson", "binomial", "randint_like", "_standard_gamma", "_standard_gamma_grad",
    "_dirichlet_grad", "_sample_dirichlet", "igamma", "igammac",
    # more
    "logspace", "fmax", "fmin", "isin", "ger", "diagflat", "hsplit", "vsplit", "dsplit", "unravel_index",
    "scalar_tensor", "split_with_sizes", "addr", "combinations", "cov", "corrcoef",
]


def _t(x):
    if isinstance(x, Tensor):
        return x
    from ._creation import tensor

    return tensor(x)


def _floating(x):
    """x as a floating tensor (integer and bool inputs take the default dtype, as PyTorch's unary float ops do)."""
    x = _t(x)
    return x if x.dtype.is_floating_point else _C.cast(x, _C.get_default_dtype())


def _floating_pair(input, other):  # noqa: A002
    """Both operands (tensors or Python numbers) as tensors of their promoted
    dtype, or of the default float dtype when that is integral or bool: the
    dtype PyTorch's float-valued binary ops compute in."""
    x = None if is_number(input) else _t(input)
    y = None if is_number(other) else _t(other)
    x = _C.wrap_scalar(input, y) if x is None else x
    y = _C.wrap_scalar(other, x) if y is None else y
    dtype = _C.result_type(x, y)
    dtype = dtype if dtype.is_floating_point else _C.get_default_dtype()
    return _C.cast(x, dtype), _C.cast(y, dtype)


# ------------------------------------------------------------------ pointwise
def absolute(input):  # noqa: A002
    return _C.abs(input)


def atan(input):  # noqa: A002
    x = _floating(input)
    return _C.atan2(x, _C.full([], 1.0, x.dtype, x.device))


def asin(input):  # noqa: A002
    x = _floating(input)
    return _C.atan2(x, _C.sqrt(_C.mul(_C.sub(1.0, x), _C.add(x, 1.0))))


def acos(input):  # noqa: A002
    x = _floating(input)
    return _C.atan2(_C.sqrt(_C.mul(_C.sub(1.0, x), _C.add(x, 1.0))), x)


def tan(input):  # noqa: A002
    x = _floating(input)
    return _C.div(_C.sin(x), _C.cos(x))


def sinh(input):  # noqa: A002
    x = _floating(input)
    return _C.mul(_C.sub(_C.expm1(x), _C.expm1(_C.neg(x))), 0.5)


def cosh(input):  # noqa: A002
    x = _floating(input)
    return _C.mul(_C.add(_C.exp(x), _C.exp(_C.neg(x))), 0.5)


def _computed_in_float32(fn, x):
    """fn(x) for a floating x, a 16-bit x computed in float32 and rounded
    back once (as PyTorch's kernels compute them): the composites' squares
    would overflow float16 from 256 on."""
    if x.dtype in (_C.dtype.float16, _C.dtype.bfloat16):
        return _C.cast(fn(_C.cast(x, _C.dtype.float32)), x.dtype)
    return fn(x)


# Beyond this magnitude asinh(x) and acosh(x) are log(2|x|) to the last bit in
# float64 too (the next term is 1 / (4 x^2)), and x^2 still fits float32.
_LOG2X_FROM = 2.0 ** 28


def _split_at(a, threshold):
    """(a where a <= threshold else 1, a where a > threshold else 1, the mask):
    each branch of a where() sees only finite inputs of its own range, so
    neither gives inf/NaN whose zero-weighted gradient would be NaN."""
    big = _C.gt(a, threshold)
    return _C.where(big, 1.0, a), _C.where(big, a, 1.0), big


def asinh(input):  # noqa: A002
    # sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): no cancellation for small
    # or negative x; log(2|x|) for large |x|, where x^2 overflows
    def f(x):
        small, large, big = _split_at(_C.abs(x), _LOG2X_FROM)
        sq = _C.mul(small, small)
        near = _C.log1p(_C.add(small, _C.div(sq, _C.add(_C.sqrt(_C.add(sq, 1.0)), 1.0))))
        far = _C.add(_C.log(large), math.log(2.0))
        return _C.mul(_C.sign(x), _C.where(big, far, near))
    return _computed_in_float32(f, _floating(input))


def acosh(input):  # noqa: A002
    # log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1); log(2x) for
    # large x, where t^2 overflows; NaN below 1
    def f(x):
        small, large, big = _split_at(x, _LOG2X_FROM)
        t = _C.sub(small, 1.0)
        near = _C.log1p(_C.add(t, _C.sqrt(_C.mul(t, _C.add(t, 2.0)))))
        far = _C.add(_C.log(large), math.log(2.0))
        return _C.where(_C.lt(x, 1.0), float("nan"), _C.where(big, far, near))
    return _computed_in_float32(f, _floating(input))


def atanh(input):  # noqa: A002
    x = _floating(input)
    return _C.mul(_C.log1p(_C.div(_C.mul(x, 2.0), _C.sub(1.0, x))), 0.5)


arccos, arccosh, arcsin, arcsinh, arctan, arctanh = acos, acosh, asin, asinh, atan, atanh
arctan2 = F.atan2


def erfc(input):  # noqa: A002
    """1 - erf(x). (Composed: for x above ~4 the result has few correct digits,
    where PyTorch's kernel keeps full relative precision.)"""
    return _C.sub(1.0, _C.erf(_floating(input)))


def logit(input, eps=None):  # noqa: A002
    x = _floating(input)
    if eps is not None:
        x = _C.clamp(x, float(eps), 1.0 - float(eps))
    return _C.log(_C.div(x, _C.sub(1.0, x)))


def xlogy(input, other):  # noqa: A002
    """x * log(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _floating_pair(input, other)
    zero = _C.logical_and(_C.eq(x, 0.0), _C.logical_not(_C.isnan(y)))
    safe_y = _C.where(zero, 1.0, y)
    return _C.where(zero, 0.0, _C.mul(x, _C.log(safe_y)))


def hypot(input, other):  # noqa: A002
    """sqrt(x^2 + y^2) without overflow or underflow: max * sqrt(1 + (min /
    max)^2); inf where either is infinite, NaN or not (C's hypot)."""
    x = _t(input) if not is_number(input) else None
    y = _t(other) if not is_number(other) else _C.wrap_scalar(float(other), x)
    x = x if x is not None else _C.wrap_scalar(float(input), y)
    dt = _C.result_type(x, y)
    dt = dt if dt.is_floating_point else _C.get_default_dtype()

    def f(a, b):
        a, b = _C.abs(a), _C.abs(b)
        big, small = _C.maximum(a, b), _C.minimum(a, b)
        scale = _C.where(_C.logical_or(_C.eq(big, 0.0), _C.isinf(big)), 1.0, big)
        ratio = _C.div(small, scale)
        h = _C.mul(big, _C.sqrt(_C.add(_C.mul(ratio, ratio), 1.0)))
        return _C.where(_C.logical_or(_C.isinf(a), _C.isinf(b)), float("inf"), h)
    if dt in (_C.dtype.float16, _C.dtype.bfloat16):
        return _C.cast(f(_C.cast(x, _C.dtype.float32), _C.cast(y, _C.dtype.float32)), dt)
    return f(_C.cast(x, dt), _C.cast(y, dt))


def fmod(input, other):  # noqa: A002
    """C's fmod: the remainder takes the dividend's sign (exact, as std::fmod)."""
    return _C.fmod(input, other)


def frac(input):  # noqa: A002
    return _C.sub(input, _C.trunc(input))


def fix(input):  # noqa: A002
    return _C.trunc(input)


def heaviside(input, values):  # noqa: A002
    if isinstance(values, Tensor) and values.dtype != input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return _C.where(_C.eq(input, 0), values, _C.cast(_C.gt(input, 0), input.dtype))


def logaddexp(input, other):  # noqa: A002
    dtype = F.result_type(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"logaddexp_cpu" not implemented for \'{torch_type_name(dtype)}\'')
    input, other = _floating_pair(input, other)
    m = _C.maximum(input, other)
    d = _C.neg(_C.abs(_C.sub(input, other)))
    # inf + inf: the maximum itself (the difference would be NaN)
    return _C.where(_C.eq(input, other), _C.add(input, math.log(2.0)), _C.add(m, _C.log1p(_C.exp(d))))


def logaddexp2(input, other):  # noqa: A002
    ln2 = math.log(2.0)
    return _C.div(logaddexp(_C.mul(input, ln2), _C.mul(other, ln2)), ln2)


def lerp(input, end, weight):  # noqa: A002
    """PyTorch's formula: start + w (end - start) for |w| < 0.5, else
    end - (end - start)(1 - w), exact at both ends. No type promotion:
    end (and a weight that is not 0-d) must have input's dtype, as PyTorch's."""
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, Tensor) and (name == "end" or other.dim() > 0) and other.dtype != input.dtype:
            raise RuntimeError(f"expected dtype {torch_type_name(input.dtype)} for `{name}` but got dtype "
                               f"{torch_type_name(other.dtype)}")
    diff = _C.sub(end, input)
    w = weight if isinstance(weight, Tensor) else _C.wrap_scalar(weight, input)
    low = _C.add(input, _C.mul(w, diff))
    high = _C.sub(end, _C.mul(diff, _C.sub(1.0, w)))
    return _C.where(_C.lt(_C.abs(w), 0.5), low, high)


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return _C.add(input, _C.mul(_C.mul(tensor1, tensor2), value))


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return _C.add(input, _C.mul(_C.div(tensor1, tensor2), value))


def clamp_min(input, min):  # noqa: A001,A002
    return F.clamp(input, min=min)


def clamp_max(input, max):  # noqa: A001,A002
    return F.clamp(input, max=max)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    if not input.dtype.is_floating_point:
        return _C.clone(input)
    info = finfo(input.dtype)
    nan = 0.0 if nan is None else nan
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = _C.where(_C.isnan(input), float(nan), input)
    out = _C.where(_C.eq(out, float("inf")), float(posinf), out)
    return _C.where(_C.eq(out, float("-inf")), float(neginf), out)


def sinc(input):  # noqa: A002
    def f(x):
        px = _C.mul(x, math.pi)
        zero = _C.eq(x, 0.0)
        return _C.where(zero, 1.0, _C.div(_C.sin(px), _C.where(zero, 1.0, px)))

    return _computed_in_float32(f, _floating(input))


def angle(input):  # noqa: A002
    """The argument of a real number: pi below zero, 0 at and above, NaN at NaN."""
    x = _floating(input)
    return _C.where(_C.isnan(x), x, _C.where(_C.lt(x, 0.0), math.pi, _C.mul(x, 0.0)))


def deg2rad(input):  # noqa: A002
    return _C.mul(_floating(input), math.pi / 180.0)


def rad2deg(input):  # noqa: A002
    return _C.mul(_floating(input), 180.0 / math.pi)


def float_power(input, exponent):  # noqa: A002
    a = _C.cast(_t(input), _C.dtype.float64)
    b = exponent if is_number(exponent) else _C.cast(exponent, _C.dtype.float64)
    return _C.pow(a, b)


def positive(input):  # noqa: A002
    if input.dtype == _C.dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def signbit(input):  # noqa: A002
    """x < 0, including -0.0 (the sign of a NaN is not read)."""
    if not input.dtype.is_floating_point:
        return _C.lt(input, 0)
    negative_zero = _C.logical_and(_C.eq(input, 0.0), _C.lt(_C.reciprocal(input), 0.0))
    return _C.logical_or(_C.lt(input, 0.0), negative_zero)


def copysign(input, other):  # noqa: A002
    x, o = _floating_pair(input, other)
    out = _C.where(signbit(o), _C.neg(_C.abs(x)), _C.abs(x))
    if isinstance(other, Tensor) and other.requires_grad:
        # PyTorch gives `other` a zero gradient: join it to the graph with one
        out = _C.add(out, _C.where(_C.isfinite(o), _C.mul(o, 0.0), 0.0))
    return out


def rsub(input, other, alpha=1):  # noqa: A002
    return F.sub(other, input, alpha=alpha)


divide = F.div
true_divide = F.true_divide
greater, greater_equal, less, less_equal, not_equal = F.gt, F.ge, F.lt, F.le, F.ne


# ---------------------------------------------------------------- comparisons
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """PyTorch's rule: equal, or a finite |input - other| <= atol + |rtol * other|
    (so inf is close only to the same inf); bools compare as the default dtype."""
    other = _t(other)
    close = _C.eq(input, other)
    if equal_nan and input.dtype.is_floating_point:
        close = _C.logical_or(close, _C.logical_and(_C.isnan(input), _C.isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    as_number = (lambda t: _C.cast(t, _C.get_default_dtype()) if t.dtype == _C.dtype.bool else t)
    a, b = as_number(input), as_number(other)
    actual_error = _C.abs(_C.sub(a, b))
    allowed_error = _C.add(_C.abs(_C.mul(b, rtol)), atol)
    return _C.logical_or(close, _C.logical_and(_C.isfinite(actual_error), _C.le(actual_error, allowed_error)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return builtins.bool(_C.all(isclose(input, other, rtol, atol, equal_nan), None, False).item())


def equal(input, other):  # noqa: A002
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool(_C.all(_C.eq(input, other), None, False).item())


def isneginf(input):  # noqa: A002
    return _C.eq(input, float("-inf")) if input.dtype.is_floating_point else _C.full(list(input.shape), False,
                                                                                    _C.dtype.bool, input.device)


def isposinf(input):  # noqa: A002
    return _C.eq(input, float("inf")) if input.dtype.is_floating_point else _C.full(list(input.shape), False,
                                                                                   _C.dtype.bool, input.device)


def isreal(input):  # noqa: A002
    return _C.full(list(input.shape), True, _C.dtype.bool, input.device)  # Lucid has no complex dtypes


# ----------------------------------------------------------------- reductions
def _logaddexp_finite_grad(a, b):
    """logaddexp(a, b), -inf where both are -inf with a zero gradient there
    (not logaddexp's NaN: a scan passes every -inf prefix through it)."""
    both = _C.logical_and(_C.eq(a, float("-inf")), _C.eq(b, float("-inf")))
    out = logaddexp(_C.where(both, 0.0, a), _C.where(both, 0.0, b))
    return _C.where(both, float("-inf"), out)


def logcumsumexp(input, dim):  # noqa: A002
    """log(cumsum(exp(x))) along `dim` as a scan of logaddexp (log2(n)
    steps, each adding the partial results k places back): exact for any
    spread of values, where one shift for the whole dim underflows every
    term far below its maximum (-inf for x = [0, 3e4])."""
    x = _floating(input)
    d = F._wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        return _C.clone(x)
    n = x.shape[d]

    def scan(y):
        k = 1
        while k < n:
            added = _logaddexp_finite_grad(_C.narrow(y, d, k, n - k), _C.narrow(y, d, 0, n - k))
            y = _C.cat([_C.narrow(y, d, 0, k), added], d)
            k *= 2
        return y
    return _computed_in_float32(scan, x)


def renorm(input, p, dim, maxnorm):  # noqa: A002
    """Each slice along `dim` whose p-norm exceeds maxnorm scaled to norm
    maxnorm (PyTorch's factor: maxnorm / (norm + 1e-7))."""
    x = _t(input)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor, got {x.dtype}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if x.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} dimensions")
    d = dim % x.ndim
    norms = F.norm(x, float(p), [i for i in range(x.ndim) if i != d], True)
    factor = _C.where(_C.gt(norms, maxnorm), _C.div(maxnorm, _C.add(norms, 1e-7)), 1.0)
    return _C.mul(x, _C.cast(factor, x.dtype))


def count_nonzero(input, dim=None):  # noqa: A002
    return _C.sum(_C.ne(input, 0), as_dims(dim), False, _C.dtype.int64)


def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    x = _C.where(_C.isnan(input), 0.0, input) if input.dtype.is_floating_point else input
    return F.sum(x, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {input.dtype}")
    keep = _C.logical_not(_C.isnan(input))
    total = nansum(input, dim, keepdim, dtype=dtype)
    return _C.div(total, _C.cast(_C.sum(keep, as_dims(dim), keepdim, None), total.dtype))


_ValuesIndices = collections.namedtuple("values_indices", ["values", "indices"])


def _k_along(input, dim, position, keepdim, what="median"):  # noqa: A002
    """(values, indices) of the element at sorted `position` along `dim`."""
    d = dim % input.ndim
    if input.shape[d] == 0:
        raise IndexError(f"{what}(): Expected reduction dim {d} to have non-zero size.")
    values, indices = F.sort(input, dim)
    # new row-major tensors, not views into the sorted ones (PyTorch's)
    v, i = _C.contiguous_copy(_C.narrow(values, d, position, 1)), _C.contiguous_copy(_C.narrow(indices, d, position, 1))
    if not keepdim:
        v, i = _C.squeeze(v, [d]), _C.squeeze(i, [d])
    return _ValuesIndices(v, i)


def median(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median; NaN if any value along the dim is NaN (PyTorch's rule)."""
    if dim is None:
        if input.numel() == 0:  # PyTorch's: NaN, cast to the dtype as x86 does (int32/int64: the minimum, 8/16 bits: 0)
            if input.dtype in (_C.dtype.int32, _C.dtype.int64):
                return _C.full([], int(np.iinfo(input.dtype.name).min), input.dtype, input.device)
            return _C.cast(_C.full([], float("nan"), _C.dtype.float32, input.device), input.dtype)
        flat = _C.reshape(input, [input.numel()])
        v = _k_along(flat, 0, (input.numel() - 1) // 2, False).values
        if input.dtype.is_floating_point:
            v = _C.where(_C.any(_C.isnan(flat), None, False), float("nan"), v)
        return v
    if input.ndim == 0:  # a 0-d tensor is its own median along dim 0 (or -1)
        _C.squeeze(input, [dim])  # (raises PyTorch's IndexError for any other dim)
        return _ValuesIndices(input, _C.full([], 0, _C.dtype.int64, input.device))
    n = input.shape[dim]
    if input.dtype.is_floating_point:
        has_nan = _C.any(_C.isnan(input), [dim % input.ndim], True)
        if builtins.bool(_C.any(has_nan, None, False).item()):
            # NaN sorts last: the median of a row with a NaN is that NaN (its first index)
            first_nan = _C.argmax(_C.cast(_C.isnan(input), _C.dtype.int32), dim % input.ndim, True)
            r = _k_along(input, dim, (n - 1) // 2, True)
            v = _C.where(has_nan, float("nan"), r.values)
            i = _C.where(has_nan, first_nan, r.indices)
            if not keepdim:
                v, i = _C.squeeze(v, [dim % input.ndim]), _C.squeeze(i, [dim % input.ndim])
            return _ValuesIndices(v, i)
    return _k_along(input, dim, (n - 1) // 2, keepdim)


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        flat = _C.reshape(input, [input.numel()])
        valid = int(_C.sum(_C.logical_not(_C.isnan(flat)), None, False, None).item()) \
            if input.dtype.is_floating_point else input.numel()
        if valid == 0:
            return _C.full([], float("nan"), input.dtype, input.device)
        return _k_along(flat, 0, (valid - 1) // 2, False).values
    raise NotImplementedError("nanmedian(dim=...) is not supported by lucid; use median over rows without NaN")


def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    n = input.shape[dim] if input.ndim else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {dim % input.ndim} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    return _k_along(input, dim, k - 1, keepdim, "kthvalue")


def _quantile_levels(input, q, interpolation):  # noqa: A002
    """PyTorch's argument checks of quantile and nanquantile; the levels q as
    a 1-D array, and whether q was a single number (its dim is dropped)."""
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. Got "
                         f"{interpolation}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    qs = np.atleast_1d(q.detach().cpu().numpy() if isinstance(q, Tensor) else np.asarray(q, dtype=np.float64))
    scalar_q = not isinstance(q, Tensor) and np.ndim(q) == 0 or isinstance(q, Tensor) and q.ndim == 0
    if np.any(qs < 0) or np.any(qs > 1):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    return qs, scalar_q


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """Quantiles of `input` (flattened when dim is None) by sorting."""
    qs, scalar_q = _quantile_levels(input, q, interpolation)
    x = _C.reshape(input, [input.numel()]) if dim is None else input
    d = 0 if dim is None else dim % x.ndim
    values = F.sort(x, d)[0]
    n = x.shape[d]
    pos = qs * (n - 1)
    lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = np.round(pos).astype(np.int64)  # ties to even, as PyTorch
    from ._creation import tensor

    a = _C.index_select(values, d, tensor(lo, device=x.device))
    b = _C.index_select(values, d, tensor(hi, device=x.device))
    if interpolation == "midpoint":
        w = np.where(lo != hi, 0.5, 0.0)
    elif interpolation == "linear":
        w = pos - lo
    else:
        w = np.zeros_like(pos)
    shape = [1] * x.ndim
    shape[d] = len(qs)
    if isinstance(q, Tensor) and interpolation == "linear":
        # the weights as ops of q, so q gets its gradient as in PyTorch
        w_t = _C.sub(_C.mul(_C.reshape(q, [len(qs)]), float(n - 1)), tensor(lo.astype(np.float64), dtype=x.dtype,
                                                                                device=x.device))
    else:
        w_t = tensor(w, dtype=x.dtype, device=x.device)
    out = lerp(a, b, _C.reshape(w_t, shape))
    # a slice holding a NaN (sorted last) has NaN quantiles, as PyTorch's
    out = _C.where(_C.isnan(_C.narrow(values, d, n - 1, 1)), float("nan"), out)
    # q's dim goes first, as PyTorch puts it
    out = _C.permute(out, [d] + [i for i in range(x.ndim) if i != d])
    if keepdim:
        if dim is None:
            out = _C.reshape(out, [len(qs)] + [1] * input.ndim)
        else:
            out = _C.unsqueeze(out, d + 1)
    elif dim is None:
        out = _C.reshape(out, [len(qs)])
    return _C.squeeze(out, [0]) if scalar_q else out


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """quantile over the values that are not NaN (NaN where a slice has none)."""
    if not input.dtype.is_floating_point or not builtins.bool(_C.any(_C.isnan(input), None, False).item()):
        return quantile(input, q, dim, keepdim, interpolation=interpolation)
    qs, scalar_q = _quantile_levels(input, q, interpolation)
    x = _C.reshape(input, [input.numel()]) if dim is None else input
    d = 0 if dim is None else dim % x.ndim
    values = F.sort(x, d)[0]  # NaN last
    count = _C.sum(_C.logical_not(_C.isnan(values)), [d], True)  # the values per slice
    last = _C.cast(_C.clamp(_C.sub(count, 1), 0, None), x.dtype)
    outs = []
    for qv in qs.tolist():
        pos = _C.mul(last, float(qv))
        lo, hi = _C.floor(pos), _C.ceil(pos)
        if interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        elif interpolation == "nearest":
            lo = hi = _C.round(pos)  # ties to even, as PyTorch
        a = _C.gather(values, d, _C.cast(lo, _C.dtype.int64))
        b = _C.gather(values, d, _C.cast(hi, _C.dtype.int64))
        if interpolation == "midpoint":
            w = _C.where(_C.ne(lo, hi), 0.5, 0.0)
        elif interpolation == "linear":
            w = _C.sub(pos, lo)
        else:
            w = _C.mul(pos, 0.0)
        outs.append(_C.where(_C.eq(count, 0), float("nan"), lerp(a, b, _C.cast(w, x.dtype))))
    out = _C.stack(outs, 0)  # [len(qs), ...x's shape with d of size 1]
    if dim is None:
        out = _C.reshape(out, [len(qs)] + ([1] * input.ndim if keepdim else []))
    elif not keepdim:
        out = _C.squeeze(out, [d + 1])
    return _C.squeeze(out, [0]) if scalar_q else out


_MinMax = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    dims = as_dims(dim)
    return _MinMax(_C.amin(input, dims, keepdim), _C.amax(input, dims, keepdim))


def _cum_extreme(input, dim, pick):  # noqa: A002
    d = F._wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return _ValuesIndices(_C.clone(input), _C.full([], 0, _C.dtype.int64, input.device))
    if input.shape[d] == 0:  # nothing to scan
        return _ValuesIndices(_C.clone(input), _C.full(list(input.shape), 0, _C.dtype.int64, input.device))
    parts = _C.split_with_sizes(input, [1] * input.shape[d], d)
    values = [parts[0]]
    idx = [_C.full(list(parts[0].shape), 0, _C.dtype.int64, input.device)]
    for k, p in enumerate(parts[1:], 1):
        take = pick(p, values[-1])  # ties take the later index, as PyTorch
        values.append(_C.where(take, p, values[-1]))
        idx.append(_C.where(take, _C.full(list(p.shape), k, _C.dtype.int64, input.device), idx[-1]))
    return _ValuesIndices(_C.cat(values, d), _C.cat(idx, d))


def cummax(input, dim):  # noqa: A002
    return _cum_extreme(input, dim, lambda new, best: _C.logical_or(_C.ge(new, best), _C.isnan(new)))


def cummin(input, dim):  # noqa: A002
    return _cum_extreme(input, dim, lambda new, best: _C.logical_or(_C.le(new, best), _C.isnan(new)))


def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """The most frequent value along `dim` (the smallest among ties) and an
    index of it. Counted on the host: eager only; the values are gathered at
    the indices, so the gradient goes there (PyTorch's)."""
    d = F._wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return _ValuesIndices(_C.clone(input), _C.full([], 0, _C.dtype.int64, input.device))
    if input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    host = input.detach()
    arr = (_C.cast(host, _C.dtype.float32) if host.dtype == _C.dtype.bfloat16 else host).cpu().numpy()  # NumPy has no bf16
    moved = np.moveaxis(arr, d, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    idxs = []
    for row in flat:
        u, counts = np.unique(row, return_counts=True)
        v = u[np.argmax(counts)]
        idxs.append(np.nonzero(row == v)[0][-1])
    shape = moved.shape[:-1]
    from ._creation import tensor

    i = _C.unsqueeze(tensor(np.array(idxs, dtype=np.int64).reshape(shape), device=input.device), d)
    v = _C.gather(input, d, i)
    if not keepdim:
        v, i = _C.squeeze(v, [d]), _C.squeeze(i, [d])
    return _ValuesIndices(v, i)


# --------------------------------------------------------------------- shapes
def tile(input, dims):  # noqa: A002
    dims = as_shape((dims,))
    if len(dims) < input.ndim:
        dims = [1] * (input.ndim - len(dims)) + list(dims)
    return input.repeat(*dims)


def atleast_1d(*tensors):
    out = [t if t.ndim >= 1 else _C.reshape(t, [1]) for t in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    out = []
    for t in _unpack(tensors):
        out.append(t if t.ndim >= 2 else _C.reshape(t, [1, t.numel()]))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*tensors):
    out = []
    for t in _unpack(tensors):
        if t.ndim == 0:
            t = _C.reshape(t, [1, 1, 1])
        elif t.ndim == 1:
            t = _C.reshape(t, [1, t.shape[0], 1])
        elif t.ndim == 2:
            t = _C.unsqueeze(t, -1)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def _unpack(tensors):
    return list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)


def hstack(tensors):
    ts = atleast_1d(*tensors)
    ts = [ts] if isinstance(ts, Tensor) else list(ts)
    return _C.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    ts = atleast_2d(*tensors)
    return _C.cat([ts] if isinstance(ts, Tensor) else list(ts), 0)


row_stack = vstack


def dstack(tensors):
    ts = atleast_3d(*tensors)
    return _C.cat([ts] if isinstance(ts, Tensor) else list(ts), 2)


def column_stack(tensors):
    ts = [(_C.reshape(t, [t.numel(), 1]) if t.ndim <= 1 else t) for t in tensors]
    return _C.cat(ts, 1)


def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in shapes]))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}") from None


def broadcast_tensors(*tensors):
    ts = _unpack(tensors)
    shape = list(broadcast_shapes(*[t.shape for t in ts]))
    return tuple(_C.broadcast_to(t, shape) for t in ts)


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = dims[0] % input.ndim, dims[1] % input.ndim
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return _C.transpose(F.flip(input, [d1]), d0, d1)
    if k == 2:
        return F.flip(input, [d0, d1])
    if k == 3:
        return F.flip(_C.transpose(input, d0, d1), [d1])
    return _C.clone(input)


def fliplr(input):  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return F.flip(input, [1])


def flipud(input):  # noqa: A002
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return F.flip(input, [0])


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = F._wrap_dim(dim, input.ndim)
    x = input
    if prepend is not None or append is not None:
        x = _C.cat([t for t in (prepend, x, append) if t is not None], d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break  # (an n past the length leaves it empty)
        x = _C.sub(_C.narrow(x, d, 1, m - 1), _C.narrow(x, d, 0, m - 1)) if x.dtype != _C.dtype.bool else \
            _C.logical_xor(_C.narrow(x, d, 1, m - 1), _C.narrow(x, d, 0, m - 1))
    return x


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = F._wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if isinstance(indices_or_sections, numbers.Integral):
        k = int(indices_or_sections)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    else:
        bounds = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
        sizes = [max(b - a, 0) for a, b in zip(bounds[:-1], bounds[1:])]
        starts = bounds[:-1]
        return tuple(_C.narrow(input, d, min(s, n), z) for s, z in zip(starts, sizes))
    return tuple(_C.split(input, sizes, d))


def unflatten(input, dim, sizes):  # noqa: A002
    return input.unflatten(dim, sizes)


def moveaxis(input, source, destination):  # noqa: A002
    return F.movedim(input, source, destination)



def ravel(input):  # noqa: A002
    return _C.reshape(input, [input.numel()])


def meshgrid(*tensors, indexing=None):
    ts = _unpack(tensors)
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = [_C.reshape(t, [t.numel()]) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(_C.broadcast_to(_C.reshape(t, view), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def block_diag(*tensors):
    ts = [t if t.ndim == 2 else (_C.reshape(t, [1, t.numel()]) if t.ndim == 1 else _C.reshape(t, [1, 1]))
          for t in tensors]
    cols = builtins.sum(t.shape[1] for t in ts)
    rows, at = [], 0
    for t in ts:
        rows.append(_C.pad(t, [at, cols - at - t.shape[1]], 0.0))
        at += t.shape[1]
    return _C.cat(rows, 0)


# ------------------------------------------------------------- linear algebra
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    prod = F.mm(mat1, mat2)
    return _C.add(_scale(input, beta), _scale(prod, alpha))


def _scale(t, s):
    return t if s == 1 else _C.mul(t, s)


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    return _C.add(_scale(input, beta), _scale(mv(mat, vec), alpha))


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _C.add(_scale(input, beta), _scale(_C.sum(F.bmm(batch1, batch2), [0], False), alpha))


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _C.add(_scale(input, beta), _scale(F.bmm(batch1, batch2), alpha))


def mv(input, vec):  # noqa: A002
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    return _C.matmul(input, vec)


def vdot(input, other):  # noqa: A002
    return F.dot(input, other)


def inner(input, other):  # noqa: A002
    if input.ndim == 0 or other.ndim == 0:
        return _C.mul(input, other)
    return tensordot(input, other, ([-1], [-1]))


def chain_matmul(*matrices):
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    out = matrices[0]
    for m in matrices[1:]:
        out = _C.matmul(out, m)
    return out


def tensordot(a, b, dims=2):
    """Contracts dims of a with dims of b: one reshape-and-matmul."""
    if isinstance(dims, numbers.Integral):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da = list(range(a.ndim - int(dims), a.ndim))
        db = list(range(int(dims)))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], numbers.Integral) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], numbers.Integral) else list(dims[1]))
        da, db = [d % a.ndim for d in da], [d % b.ndim for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} and "
                               f"second has size {b.shape[y]} in dim {y}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da])) if da else 1
    am = _C.reshape(_C.permute(a, fa + da), [-1, k] if fa else [1, k])
    bm = _C.reshape(_C.permute(b, db + fb), [k, -1] if fb else [k, 1])
    out = _C.matmul(am, bm)
    return _C.reshape(out, [a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def _einsum_sublists(args):
    """(equation, operands) of einsum's sublist form: operands each followed
    by a list of subscripts (ints 0-51, Ellipsis), then optionally the
    output's list."""
    def letters(sub):
        out = []
        for v in sub:
            if v is Ellipsis:
                out.append("...")
            elif isinstance(v, numbers.Integral) and not isinstance(v, (bool, Tensor)) and 0 <= v < 52:
                out.append((string.ascii_uppercase + string.ascii_lowercase)[v])  # PyTorch's labels
            else:
                raise ValueError(f"einsum(): expected subscripts to be in [0, 52) or Ellipsis, got {v!r}")
        return "".join(out)
    ops, terms = [], []
    for i in range(0, len(args) - 1, 2):
        op, sub = args[i], args[i + 1]
        if not isinstance(op, Tensor) or not isinstance(sub, (list, tuple)):
            raise TypeError("einsum(): the sublist form takes operands each followed by a list of subscripts")
        ops.append(op)
        terms.append(letters(sub))
    eq = ",".join(terms)
    if len(args) % 2:
        if not isinstance(args[-1], (list, tuple)):
            raise TypeError("einsum(): the sublist form ends with the output's list of subscripts, if any")
        eq += "->" + letters(args[-1])
    return eq, tuple(ops)


def einsum(equation, *operands):
    """Einstein summation, contracted pairwise (left to right) with matmuls:
    each pair's shared labels that no later operand or the output uses are
    summed by the GEMM; labels of one operand alone are summed first."""
    if isinstance(equation, Tensor):  # the sublist form: einsum(op1, [0, 1], op2, [1, 2], [0, 2])
        equation, operands = _einsum_sublists((equation,) + operands)
    elif not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs, out = eq, None
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise ValueError(f"einsum(): more operands were provided than specified in the equation" if len(ops) >
                         len(terms) else "einsum(): fewer operands were provided than specified in the equation")
    # '...' becomes fresh upper-case labels (broadcast batch dims)
    ell_rank = 0
    for t, op in zip(terms, ops):
        if "..." in t:
            ell_rank = builtins.max(ell_rank, op.ndim - (len(t) - 3))
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in eq]
    if ell_rank > len(free):
        raise RuntimeError("einsum(): too many subscripts in the equation")
    ell = "".join(free[:ell_rank])
    terms = [t.replace("...", ell[len(ell) - (op.ndim - (len(t) - 3)):] if "..." in t else "") for t, op in
             zip(terms, ops)]
    for t, op in zip(terms, ops):
        if len(t) != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match the "
                               f"number of dimensions ({op.ndim}) for operand {terms.index(t)}" +
                               ("" if len(t) < op.ndim else " and no ellipsis was given"))
    if out is None:
        counts = collections.Counter("".join(terms))
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
        for c in out:
            if c not in "".join(terms):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   f"operand")
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
    sizes = {}
    for t, op in zip(terms, ops):
        for c, n in zip(t, op.shape):
            if c in sizes and sizes[c] != n and sizes[c] != 1 and n != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped)")
            sizes[c] = builtins.max(sizes.get(c, 1), n)
    ts = [_diag_repeated(op, t) for op, t in zip(ops, terms)]
    terms = ["".join(dict.fromkeys(t)) for t in terms]
    # sum labels appearing in one operand only and not in the output
    for i in range(len(ts)):
        others = "".join(terms[:i] + terms[i + 1:]) + out
        lone = [j for j, c in enumerate(terms[i]) if c not in others]
        if lone:
            ts[i] = _C.sum(ts[i], lone, False)
            terms[i] = "".join(c for c in terms[i] if c in others)
    cur, cur_t = ts[0], terms[0]
    for i in range(1, len(ts)):
        rest = "".join(terms[i + 1:]) + out
        cur, cur_t = _contract(cur, cur_t, ts[i], terms[i], rest, sizes)
    # final: sum leftovers, then order as `out`
    extra = [j for j, c in enumerate(cur_t) if c not in out]
    if extra:
        cur = _C.sum(cur, extra, False)
        cur_t = "".join(c for c in cur_t if c in out)
    for c in out:
        if c not in cur_t:  # a label only broadcast in (size 1 on both sides)
            cur = _C.unsqueeze(cur, -1)
            cur_t += c
    cur = _C.permute(cur, [cur_t.index(c) for c in out]) if cur_t != out else cur
    shape = [sizes[c] for c in out]
    return _C.broadcast_to(cur, shape) if tuple(cur.shape) != tuple(shape) else cur


def _diag_repeated(op, t):
    """A term with a repeated label (ii) reads its diagonal."""
    while len(set(t)) != len(t):
        c = next(ch for ch in t if t.count(ch) > 1)
        i = t.index(c)
        j = t.index(c, i + 1)
        op = F.diagonal(op, 0, i, j)  # the diagonal goes last
        t = t[:i] + t[i + 1:j] + t[j + 1:] + c
    return op


def _contract(a, ta, b, tb, rest, sizes):
    """a (labels ta) x b (labels tb) summing the shared labels not in `rest`."""
    batch = [c for c in ta if c in tb and c in rest]
    summed = [c for c in ta if c in tb and c not in rest]
    a_only = [c for c in ta if c not in tb]
    b_only = [c for c in tb if c not in ta]
    pa = _C.permute(a, [ta.index(c) for c in batch + a_only + summed])
    pb = _C.permute(b, [tb.index(c) for c in batch + summed + b_only])
    bs = [builtins.max(a.shape[ta.index(c)], b.shape[tb.index(c)]) for c in batch]
    m = int(np.prod([a.shape[ta.index(c)] for c in a_only])) if a_only else 1
    k = int(np.prod([a.shape[ta.index(c)] for c in summed])) if summed else 1
    n = int(np.prod([b.shape[tb.index(c)] for c in b_only])) if b_only else 1
    pa = _C.broadcast_to(pa, bs + list(pa.shape[len(batch):])) if batch else pa
    pb = _C.broadcast_to(pb, bs + list(pb.shape[len(batch):])) if batch else pb
    am = _C.reshape(pa, bs + [m, k])
    bm = _C.reshape(pb, bs + [k, n])
    r = _C.matmul(am, bm)
    r = _C.reshape(r, bs + [a.shape[ta.index(c)] for c in a_only] + [b.shape[tb.index(c)] for c in b_only])
    return r, "".join(batch + a_only + b_only)


def kron(input, other):  # noqa: A002
    nd = builtins.max(input.ndim, other.ndim)
    a = _C.reshape(input, [1] * (nd - input.ndim) + list(input.shape))
    b = _C.reshape(other, [1] * (nd - other.ndim) + list(other.shape))
    inter_a, inter_b = [], []
    for sa, sb in zip(a.shape, b.shape):
        inter_a += [sa, 1]
        inter_b += [1, sb]
    out = _C.mul(_C.reshape(a, inter_a), _C.reshape(b, inter_b))
    return _C.reshape(out, [sa * sb for sa, sb in zip(a.shape, b.shape)])


def cross(input, other, dim=None):  # noqa: A002
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    a, b = broadcast_tensors(input, other)
    if dim is None:
        dim = next((i for i, s in enumerate(a.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = dim % a.ndim
    if a.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[d]} and "
                           f"{b.shape[d]}")
    ax, ay, az = _C.split(a, 1, d)
    bx, by, bz = _C.split(b, 1, d)
    return _C.cat([_C.sub(_C.mul(ay, bz), _C.mul(az, by)), _C.sub(_C.mul(az, bx), _C.mul(ax, bz)),
                   _C.sub(_C.mul(ax, by), _C.mul(ay, bx))], d)


def _diagonal_matrix(v, dim):
    """[..., n] -> [..., n, n] with v on the diagonal: selected, not multiplied
    by an identity (NaN * 0 would fill the row)."""
    n = v.shape[dim]
    return _C.where(_C.eye(n, n, _C.dtype.bool, v.device), _C.unsqueeze(v, -1), _C.full([], 0, v.dtype, v.device))


def diag(input, diagonal=0):  # noqa: A002
    if input.ndim == 1:
        n = input.shape[0]
        m = _diagonal_matrix(input, -1)
        # (F.pad order: columns left/right, then rows top/bottom)
        pads = [diagonal, 0, 0, diagonal] if diagonal >= 0 else [0, -diagonal, -diagonal, 0]
        return _C.pad(m, pads, 0.0) if diagonal else m
    if input.ndim == 2:
        return _C.clone(F.diagonal(input, diagonal, 0, 1))  # torch.diag copies; diagonal is the view
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.ndim}D")


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    out = _diagonal_matrix(input, -1)
    if offset:
        pads = [offset, 0, 0, offset] if offset > 0 else [0, -offset, -offset, 0]
        out = _C.pad(out, pads, 0.0)
    nd = out.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    if (d1, d2) != (nd - 2, nd - 1):
        order = [d for d in range(nd - 2)]
        perm = [None] * nd
        perm[d1], perm[d2] = nd - 2, nd - 1
        it = iter(order)
        perm = [p if p is not None else next(it) for p in perm]
        out = _C.permute(out, perm)
    return _C.contiguous(out)  # row-major, as PyTorch's (a zero tensor whose diagonal is written)


def trace(input):  # noqa: A002
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return _C.sum(F.diagonal(input), None, False)


def _triangle_indices(row, col, offset, lower, dtype, device):
    for name, v in (("row", row), ("col", col)):
        if not isinstance(v, numbers.Integral) or isinstance(v, builtins.bool):
            raise TypeError(f"{'tril' if lower else 'triu'}_indices(): argument '{name}' must be int, not "
                            f"{type(v).__name__}")
        if v < 0:
            raise RuntimeError(f"{name} must be non-negative, got{v}")  # (PyTorch's message, without the space)
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    from ._creation import tensor

    return tensor(np.stack([r, c]).astype(np.int64), dtype=to_dtype(dtype) or _C.dtype.int64, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(row, col, offset, False, dtype, device)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M]."""
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    d = _C.sub(_C.unsqueeze(x1, -2), _C.unsqueeze(x2, -3))
    return _C.norm(d, float(p), [-1], False)


def cartesian_prod(*tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    grids = meshgrid(*tensors, indexing="ij")
    if len(grids) == 1:
        return grids[0]
    return _C.stack([_C.reshape(g, [g.numel()]) for g in grids], 1)


# ------------------------------------------------------------------- indexing
def take_along_dim(input, indices, dim=None):  # noqa: A002
    if dim is None:
        return _C.gather(_C.reshape(input, [input.numel()]), 0, _C.reshape(indices, [indices.numel()]))
    d = F._wrap_dim(dim, input.ndim)
    shape = list(broadcast_shapes(tuple(s if i != d else 1 for i, s in enumerate(input.shape)),
                                  tuple(s if i != d else 1 for i, s in enumerate(indices.shape))))
    xi = _C.broadcast_to(input, shape[:d] + [input.shape[d]] + shape[d + 1:])
    ii = _C.broadcast_to(indices, shape[:d] + [indices.shape[d]] + shape[d + 1:])
    return _C.gather(xi, d, ii)


def take(input, index):  # noqa: A002
    n = input.numel()
    flat_idx = _C.reshape(index, [index.numel()])
    flat_idx = _C.where(_C.lt(flat_idx, 0), _C.add(flat_idx, n), flat_idx)
    out = _C.index_select(_C.reshape(input, [n]), 0, flat_idx)
    return _C.reshape(out, list(index.shape))


def _dim_mask(input, dim, index):  # noqa: A002
    d = F._wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    idx = _C.reshape(index, [index.numel()])
    hits = _C.index_add(_C.full([n], 0.0, _C.dtype.float32, input.device), 0, idx,
                        _C.full([idx.shape[0]], 1.0, _C.dtype.float32, input.device))
    shape = [1] * input.ndim
    if input.ndim:
        shape[d] = n
    return _C.reshape(_C.gt(hits, 0.0), shape)


def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """input with input[indices] = values; accumulate adds instead, repeated
    positions summed (PyTorch's index_put)."""
    indices = tuple(indices)
    if not all(isinstance(t, Tensor) for t in indices):
        raise TypeError("index_put(): indices must be a tuple of Tensors")
    if not isinstance(values, Tensor):
        values = _C.full([], values, input.dtype, input.device)
    elif accumulate and values.dtype != input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{torch_type_name(input.dtype)} for the destination and "
                           f"{torch_type_name(values.dtype)} for the source.")
    if not accumulate:
        out = _C.clone(input)
        out[indices] = values
        return out
    idx = []
    for t in indices:  # a bool mask stands for the positions it selects
        idx.extend(F.nonzero(t, as_tuple=True) if t.dtype == _C.dtype.bool else (t,))
    if len(idx) > input.ndim:
        raise _C.IndexError(f"too many indices for tensor of dimension {input.ndim} (got {len(idx)})")
    idx = broadcast_tensors(*idx)
    lead, rest = list(input.shape[:len(idx)]), list(input.shape[len(idx):])
    flat = None
    for dim, (size, t) in enumerate(zip(lead, idx)):
        bad = _C.logical_or(_C.ge(t, size), _C.lt(t, -size))
        if t.numel() and bool(_C.any(bad, None, False).item()):
            raise _C.IndexError(f"index {int(t[bad].reshape(-1)[0].item())} is out of bounds for dimension {dim} "
                                f"with size {size}")
        t = _C.where(_C.lt(t, 0), _C.add(t, size), t)
        flat = t if flat is None else _C.add(_C.mul(flat, size), t)
    src = _C.reshape(_C.broadcast_to(values, list(flat.shape) + rest), [flat.numel()] + rest)
    out = _C.index_add(_C.reshape(input, [math.prod(lead)] + rest), 0, _C.reshape(flat, [-1]), src)
    return _C.reshape(out, list(input.shape))


def index_fill(input, dim, index, value):  # noqa: A002
    """input with its slices at `index` along `dim` set to `value`, in
    input's dtype whatever the value's (PyTorch's: 2.7 into int64 is 2, 9
    into bool is True; a number the dtype cannot hold raises)."""
    fill = _C.full([], value, input.dtype, input.device) if is_number(value) else _C.cast(value, input.dtype)
    n = input.shape[F._wrap_dim(dim, input.ndim)] if input.ndim else 1
    if index.dtype in (_C.dtype.int64, _C.dtype.int32):  # PyTorch's index_fill counts -n..-1 from the end
        index = _C.where(_C.logical_and(_C.lt(index, 0), _C.ge(index, -n)), _C.add(index, n), index)
    return _C.where(_dim_mask(input, dim, index), fill, input)


def index_copy(input, dim, index, source):  # noqa: A002
    """input with its slices at `index` (along `dim`) replaced by source's;
    where an index repeats, the last of its slices stands (PyTorch's CPU
    result; PyTorch documents repeats as undefined)."""
    if index.ndim > 1:
        raise _C.IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    if input.ndim and source.ndim and -source.ndim <= dim < source.ndim:  # (a bad dim: index_add says so)
        along = source.shape[dim % source.ndim]
        if index.numel() != along:
            raise _C.IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal to "
                                f"source.size(dim) ({along})")
    if input.ndim == 0 or index.numel() <= 1:  # no repeats: source's slices added into zeros
        placed = _C.index_add(_C.mul(input, 0.0) if input.dtype.is_floating_point else _C.full(
            list(input.shape), 0, input.dtype, input.device), dim, index, source)
        return _C.where(_dim_mask(input, dim, index), placed, input)
    # The position of the last index naming each slice (-1: none), then those slices of source.
    d = F._wrap_dim(dim, input.ndim)
    k = index.numel()
    idx = _C.cast(_C.reshape(index, [k]), _C.dtype.int64)
    last = _C.scatter_reduce(_C.full([input.shape[d]], -1, _C.dtype.int64, input.device), 0, idx,
                             _C.arange(0, k, 1, _C.dtype.int64, input.device), "amax", True)
    placed = _C.index_select(source, d, _C.clamp(last, 0, None))
    shape = [1] * input.ndim
    shape[d] = input.shape[d]
    return _C.where(_C.reshape(_C.ge(last, 0), shape), placed, input)


def masked_select(input, mask):  # noqa: A002
    """The elements where mask is True, as a 1-D tensor (positions read on
    the host: eager only)."""
    if mask.dtype not in (_C.dtype.bool, _C.dtype.uint8):
        raise _C.TypeError("masked_select: expected BoolTensor for mask")
    shape = list(broadcast_shapes(input.shape, mask.shape))
    x = _C.broadcast_to(input, shape)
    m = _C.broadcast_to(mask, shape)
    idx = F.nonzero(_C.reshape(m, [int(np.prod(shape)) if shape else 1]), as_tuple=True)[0]
    return _C.index_select(_C.reshape(x, [int(np.prod(shape)) if shape else 1]), 0, idx)


def masked_scatter(input, mask, source):  # noqa: A002
    """input with the elements where mask is True taken, in order, from source."""
    if mask.dtype not in (_C.dtype.bool, _C.dtype.uint8):
        raise _C.TypeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    shape = list(broadcast_shapes(input.shape, mask.shape))
    m = _C.reshape(_C.broadcast_to(mask, shape), [int(np.prod(shape))])
    positions = F.nonzero(m, as_tuple=True)[0]
    k = positions.shape[0]
    if source.numel() < k:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    src = _C.narrow(_C.reshape(source, [source.numel()]), 0, 0, k)
    flat = _C.reshape(_C.broadcast_to(input, shape), [int(np.prod(shape))])
    return _C.reshape(_C.index_put(flat, [positions], _C.cast(src, input.dtype), False), shape)


def argwhere(input):  # noqa: A002
    return F.nonzero(input)


def _host(t, what):
    if t.is_symbolic:
        raise RuntimeError(f"{what}() needs concrete values and cannot run inside a compiled step")
    return (_C.cast(t.detach(), _C.dtype.float32) if t.dtype == _C.dtype.bfloat16 else t.detach()).cpu().numpy()


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (sorted), with optional inverse indices and
    counts. Computed on the host: eager only, no gradient."""
    from ._creation import tensor

    arr = _host(input, "unique")
    if dim is None:
        u, inv, counts = np.unique(arr, return_inverse=True, return_counts=True)
        inv = inv.reshape(arr.shape)
    else:
        u, inv, counts = np.unique(arr, return_inverse=True, return_counts=True, axis=dim)
    out = [tensor(u, dtype=input.dtype, device=input.device)]
    if return_inverse:
        out.append(tensor(inv.astype(np.int64), device=input.device))
    if return_counts:
        out.append(tensor(counts.astype(np.int64), device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    from ._creation import tensor

    if dim is not None:
        raise NotImplementedError("unique_consecutive(dim=...) is not supported by lucid")
    arr = _host(input, "unique_consecutive").reshape(-1)
    if arr.size == 0:
        starts = np.zeros(0, np.int64)
    else:
        starts = np.concatenate([[0], np.nonzero(arr[1:] != arr[:-1])[0] + 1])
    out = [tensor(arr[starts], dtype=input.dtype, device=input.device)]
    if return_inverse:
        inv = np.cumsum(np.isin(np.arange(arr.size), starts)) - 1
        out.append(tensor(inv.reshape(_host(input, "unique_consecutive").shape).astype(np.int64),
                          device=input.device))
    if return_counts:
        out.append(tensor(np.diff(np.concatenate([starts, [arr.size]])).astype(np.int64), device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    from ._creation import tensor

    if input.ndim != 1 or input.dtype.is_floating_point:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    arr = _host(input, "bincount")
    if arr.size and arr.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None if weights is None else _host(weights, "bincount")
    counts = np.bincount(arr, weights=w, minlength=minlength)
    if weights is None:
        return tensor(counts.astype(np.int64), device=input.device)
    # PyTorch: float32 weights give float32 counts, any other weights float64
    dt = _C.dtype.float32 if weights.dtype == _C.dtype.float32 else _C.dtype.float64
    return tensor(counts, dtype=dt, device=input.device)


def histc(input, bins=100, min=0, max=0):  # noqa: A001,A002
    from ._creation import tensor

    arr = _host(input, "histc").astype(np.float64).reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and arr.size:
        lo, hi = arr.min(), arr.max()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = np.histogram(arr[(arr >= lo) & (arr <= hi)], bins=bins, range=(lo, hi))
    return tensor(counts.astype(np.float64), dtype=input.dtype, device=input.device)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):  # noqa: A002
    from ._creation import tensor

    if side is not None:
        right = side == "right"
    seq = _host(sorted_sequence, "searchsorted")
    vals = _host(input, "searchsorted") if isinstance(input, Tensor) else np.asarray(input)
    if sorter is not None:
        seq = np.take_along_axis(seq, _host(sorter, "searchsorted"), -1)
    mode = "right" if right else "left"
    if seq.ndim != 1 and seq.shape[:-1] != vals.shape[:-1]:
        raise RuntimeError("searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           "of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(vals.shape)}")
    if seq.ndim == 1:
        out = np.searchsorted(seq, vals, side=mode)
    else:
        out = np.stack([np.searchsorted(s, v, side=mode) for s, v in zip(seq.reshape(-1, seq.shape[-1]),
                                                                         vals.reshape(-1, vals.shape[-1]))])
        out = out.reshape(vals.shape)
    return tensor(np.asarray(out).astype(np.int32 if out_int32 else np.int64), device=sorted_sequence.device)


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# --------------------------------------------------------------------- random
def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    """1 with probability `input` (or p), else 0, in input's dtype."""
    check_probability(input if p is None else p, "bernoulli")
    prob = input if p is None else _C.full(list(input.shape), float(p), input.dtype, input.device)
    if generator is not None:
        from ._sampling import generator_draw

        u = generator_draw("uniform", list(input.shape), prob.dtype, input.device, generator)
    else:
        u = _C.rand(list(input.shape), prob.dtype if prob.dtype.is_floating_point else _C.dtype.float32,
                    input.device)
    return _C.cast(_C.lt(u, prob), input.dtype)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal draws: mean and std may be tensors (broadcast) or numbers
    (then `size` gives the shape)."""
    from ._creation import randn

    check_std(std)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        shape = list(broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor))))
        like = mean if isinstance(mean, Tensor) else std
        z = randn(*shape, dtype=like.dtype, device=like.device, generator=generator)
        return _C.add(_C.mul(z, std), mean)
    if size is None:
        raise TypeError("normal() missing the 'size' argument for scalar mean and std")
    z = randn(*as_shape((size,)), dtype=dtype, device=device, generator=generator)
    out = _C.add(_C.mul(z, float(std)), float(mean))
    if requires_grad:
        out.requires_grad_(True)
    return out


def igamma(input, other):  # noqa: A002
    """The regularized lower incomplete gamma function (special.gammainc)."""
    from .special import gammainc

    return gammainc(input, other)


def igammac(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function (special.gammaincc)."""
    from .special import gammaincc

    return gammaincc(input, other)


def _random_key(generator):
    """The [seed, offset] key of a draw from `generator`'s own stream (None:
    the global generator's)."""
    if generator is None:
        return None
    from ._sampling import _check_generator

    _check_generator(generator)
    seed = int(generator._rng.integers(0, 2 ** 63))
    return _C.from_numpy_copy(np.array([seed, 0], dtype=np.int64))


def poisson(input, generator=None):  # noqa: A002
    """Poisson draws with rates `input` (non-negative), in input's dtype."""
    return _C.poisson(input, key=_random_key(generator))


def binomial(count, prob, generator=None):
    """Binomial draws: `count` trials of success probability `prob` each."""
    return _C.binomial(count, prob, key=_random_key(generator))


def _standard_gamma(input, generator=None):  # noqa: A002
    """Gamma(input, 1) draws, differentiable w.r.t. the concentration by the
    implicit reparameterisation gradient (_standard_gamma_grad)."""
    return _C.standard_gamma(input, key=_random_key(generator))


def _standard_gamma_grad(input, output):  # noqa: A002
    """d output / d input for output ~ Gamma(input, 1)."""
    return _C.standard_gamma_grad(input, output)


def _dirichlet_grad(x, alpha, total):
    """The Beta(alpha, total - alpha) reparameterisation gradient at x that
    Dirichlet draws use (PyTorch's _dirichlet_grad)."""
    return _C.dirichlet_grad(x, alpha, total)


def _sample_dirichlet(input, generator=None):  # noqa: A002
    """Dirichlet(input) draws along the last dim: Gamma draws, normalised
    (not differentiable; Dirichlet.rsample supplies the gradient)."""
    gammas = _C.standard_gamma(input.detach(), key=_random_key(generator))
    return _C.div(gammas, _C.sum(gammas, [-1], True, None))


def randint_like(input, low=0, high=None, *, dtype=None, device=None, generator=None):  # noqa: A002
    from ._creation import randint

    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                   generator=generator)


# ----------------------------------------------------------------------- more
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    from ._creation import linspace

    exps = linspace(start, end, steps, dtype=_C.dtype.float64)
    out = _C.cast(_C.pow(float(base), exps), to_dtype(dtype) or _C.get_default_dtype())
    if device is not None:
        out = out.to(device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def fmax(input, other):  # noqa: A002
    """maximum, but a NaN loses to a number."""
    return _C.where(_C.isnan(input), other, _C.where(_C.isnan(other), input, _C.maximum(input, other)))


def fmin(input, other):  # noqa: A002
    return _C.where(_C.isnan(input), other, _C.where(_C.isnan(other), input, _C.minimum(input, other)))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    te = _t(test_elements) if not is_number(test_elements) else _C.wrap_scalar(test_elements, elements)
    e = _t(elements) if not is_number(elements) else _C.wrap_scalar(elements, te)
    hit = _C.any(_C.eq(_C.unsqueeze(e, -1), _C.reshape(te, [te.numel()])), [-1], False) if te.numel() else \
        _C.full(list(e.shape), False, _C.dtype.bool, e.device)
    return _C.logical_not(hit) if invert else hit


def ger(input, vec2):  # noqa: A002
    return F.outer(input, vec2)


def diagflat(input, offset=0):  # noqa: A002
    return diag(_C.reshape(input, [input.numel()]), offset)


def _check_split(name, input, rank, sections, dim):  # noqa: A002
    if input.ndim < rank:
        raise RuntimeError(f"{name} requires a tensor with at least {rank} dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if isinstance(sections, numbers.Integral) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input.shape[dim]} is not divisible by the split_size {sections}!")


def hsplit(input, indices_or_sections):  # noqa: A002
    dim = 1 if input.ndim > 1 else 0
    _check_split("hsplit", input, 1, indices_or_sections, dim)
    return tensor_split(input, indices_or_sections, dim)


def vsplit(input, indices_or_sections):  # noqa: A002
    _check_split("vsplit", input, 2, indices_or_sections, 0)
    return tensor_split(input, indices_or_sections, 0)


def dsplit(input, indices_or_sections):  # noqa: A002
    _check_split("dsplit", input, 3, indices_or_sections, 2)
    return tensor_split(input, indices_or_sections, 2)


def unravel_index(indices, shape):
    """Flat indices -> a tuple of coordinate tensors for `shape`."""
    shape = as_shape((shape,))
    flat = _t(indices)
    out = []
    for s in reversed(shape):
        out.append(F.remainder(flat, s))
        flat = F.div(flat, s, rounding_mode="floor")
    return tuple(reversed(out))


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    from ._creation import tensor

    return tensor(s, dtype=to_dtype(dtype) or _C.get_default_dtype(), device=device, requires_grad=requires_grad)


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    return F.split(input, [int(s) for s in split_sizes], dim)


def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    return _C.add(_scale(input, beta), _scale(F.outer(vec1, vec2), alpha))


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """Length-r combinations of a 1-D tensor's elements (rows of the result)."""
    from ._creation import tensor

    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(n), r)), dtype=np.int64).reshape(-1, r)
    if idx.size == 0:
        return _C.full([0] if r else [0], 0, input.dtype, input.device) if r != 1 else _C.clone(input)
    out = _C.index_select(input, 0, tensor(idx.reshape(-1), device=input.device))
    return _C.reshape(out, [idx.shape[0], r]) if r > 1 else _C.reshape(out, [idx.shape[0]])


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """Covariance of the variables (rows) over the observations (columns)."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov(fweights=..., aweights=...) is not supported by lucid")
    if input.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input if input.ndim == 2 else _C.reshape(input, [1, input.numel()])
    x = _floating(x)
    n = x.shape[1]
    xc = _C.sub(x, _C.mean(x, [1], True))
    c = _C.div(_C.matmul(xc, _C.transpose(xc, 0, 1)), float(builtins.max(n - correction, 0)))
    return _C.reshape(c, []) if x.shape[0] == 1 else c  # one variable: a 0-d variance, as PyTorch


def corrcoef(input):  # noqa: A002
    c = cov(input)
    if c.ndim == 0:
        return _C.div(c, c)
    d = _C.sqrt(F.diagonal(c))
    return _C.clamp(_C.div(_C.div(c, _C.unsqueeze(d, 1)), _C.unsqueeze(d, 0)), -1.0, 1.0)


# ----------------------------------------------------------------- dtype info
class finfo:
    """Machine limits of a floating dtype (PyTorch's torch.finfo)."""

    def __init__(self, type=None):  # noqa: A002
        dt = to_dtype(type) if type is not None else _C.get_default_dtype()
        if not dt.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            f"'{dt}'")
        self.dtype = dt.name
        if dt == _C.dtype.bfloat16:
            self.bits, self.eps, self.max, self.tiny, self.resolution = 16, 0.0078125, 3.3895313892515355e38, \
                1.1754943508222875e-38, 0.01
            self.smallest_normal = self.tiny
            self.min = -self.max
        else:
            info = np.finfo(dt.name)
            self.bits, self.eps, self.max, self.min = info.bits, float(info.eps), float(info.max), float(info.min)
            self.tiny = self.smallest_normal = float(info.tiny)
            self.resolution = 10.0 ** -info.precision

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype (PyTorch's torch.iinfo)."""

    def __init__(self, type):  # noqa: A002
        dt = to_dtype(type)
        if dt.is_floating_point or dt == _C.dtype.bool:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to handle '{dt}'")
        info = np.iinfo(dt.name)
        self.dtype, self.bits, self.min, self.max = dt.name, info.bits, int(info.min), int(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


__all__ += ["finfo", "iinfo"]


def _in_place_functions():
    """torch.exp_(x) and friends: the Tensor method's in-place form as a function."""
    names = ["abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
             "asinh_", "atan_", "atanh_", "ceil_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_",
             "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "log10_", "log1p_", "log2_",
             "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_",
             "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "relu_"]
    out = {}
    for name in names:
        def fn(input, *args, _name=name, **kwargs):  # noqa: A002
            return getattr(input, _name)(*args, **kwargs)

        fn.__name__ = name
        out[name] = fn
    return out


_IN_PLACE = _in_place_functions()
globals().update(_IN_PLACE)
__all__ += list(_IN_PLACE)
