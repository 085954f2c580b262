"""The `out=` argument of the functions PyTorch gives one.

Every function computes its result out of place; `accept_out` wraps the
public ones so that `out=` then writes that result into the given tensor
(or tuple of tensors), returning it, with PyTorch's rules:
- the out tensor takes the result's shape (resized; with PyTorch's warning
  when it held elements);
- its dtype: elementwise ops, comparisons and concatenations cast the result
  into it when the category allows (bool < integer < floating) and raise
  "result type Float can't be cast to the desired output type Long"
  otherwise; `sum`/`prod`/`cumsum`/... compute in it (as with `dtype=`);
  factories make their values in it; the other ops require it to be the
  result's dtype;
- a call that records history cannot take `out=` (PyTorch's error).
"""
import functools
import warnings

from . import _C
from ._utils import cast_error, torch_type_name

_CASTING = """abs absolute acos acosh add addcdiv addcmul arccos arccosh arcsin arcsinh arctan arctan2 arctanh asin
asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor ceil
copysign cos cosh deg2rad digamma div divide eq erf erfc erfinv exp exp2 expm1 fix float_power floor floor_divide
fmax fmin fmod frac gcd ge greater greater_equal gt heaviside hypot i0 igamma igammac isneginf isposinf lcm ldexp
le lerp less less_equal lgamma log log10 log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or
logical_xor logit lt maximum minimum mul multiply mvlgamma nan_to_num ne neg negative not_equal polygamma pow
rad2deg reciprocal remainder round rsqrt sgn sigmoid sign signbit sin sinc sinh sqrt square sub subtract tan tanh
true_divide trunc xlogy cat concat concatenate stack hstack vstack dstack column_stack row_stack logsumexp
tril triu""".split()
_COMPUTED_IN_OUT_DTYPE = "sum prod cumsum cumprod nansum mean nanmean".split()
_FACTORIES = "arange zeros ones full empty eye linspace logspace range rand randn randint randperm".split()
_SAME_DTYPE = """clamp clip where matmul mm bmm mv dot vdot outer ger inner addmm addmv addr addbmm baddbmm kron
cross index_select gather take_along_dim masked_select amax amin argmax argmin max min sort topk kthvalue mode
median nanmedian cummax cummin aminmax msort logcumsumexp std var quantile nanquantile nonzero searchsorted
bucketize histc narrow_copy diag renorm""".split()


def _requires_grad(values):
    for v in values:
        if isinstance(v, _C.Tensor):
            if v.requires_grad:
                return True
        elif isinstance(v, (list, tuple)) and _requires_grad(v):
            return True
    return False


def _write(name, out, value, policy):
    if not isinstance(out, _C.Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if value.dtype != out.dtype:
        if policy == "same":
            raise RuntimeError(f"Expected out tensor to have dtype {torch_type_name(value.dtype)}, but got "
                               f"{torch_type_name(out.dtype)} instead")
        if not _can_cast(value.dtype, out.dtype):
            raise cast_error(value.dtype, out.dtype)
    if tuple(out.shape) != tuple(value.shape):
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(value.shape)}. This behavior "
                          f"is deprecated, and in a future PyTorch release outputs will not be resized unless "
                          f"they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
                          f"inplace, to zero elements with t.resize_(0).", UserWarning, stacklevel=4)
        out.resize_(*value.shape) if value.ndim else out.resize_(())
    _C.assign_(out, value)
    return out


def _can_cast(from_, to):
    def category(d):
        return 2 if d.is_floating_point else (0 if d == _C.dtype.bool else 1)

    return category(from_) <= category(to)


def _with_out(name, fn, policy):
    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if _C.is_grad_enabled() and _requires_grad((*args, *kwargs.values(), out)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               f"differentiation, but one of the arguments requires grad.")
        if policy in ("factory", "in_out_dtype") and kwargs.get("dtype") is None and isinstance(out, _C.Tensor):
            kwargs["dtype"] = out.dtype
        result = fn(*args, **kwargs)
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors")
            for o, r in zip(out, result):
                _write(name, o, r, "same")
            return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
        return _write(name, out, result, policy)

    return call


def accept_out(namespace):
    """Gives the functions in `namespace` (a module's globals) PyTorch's `out=`."""
    for names, policy in ((_CASTING, "cast"), (_COMPUTED_IN_OUT_DTYPE, "in_out_dtype"), (_FACTORIES, "factory"),
                          (_SAME_DTYPE, "same")):
        for name in names:
            fn = namespace.get(name)
            if fn is not None and not getattr(fn, "_accepts_out", False):
                wrapped = _with_out(name, fn, policy)
                wrapped._accepts_out = True
                namespace[name] = wrapped
