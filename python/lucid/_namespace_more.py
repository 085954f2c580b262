"""More of torch's top-level namespace, composed of lucid ops: window
functions, trapezoid rules, i0, ldexp/frexp, gcd/lcm, the deprecated
inclusive `range`, the unsafe_* splits and *_copy variants of the views,
creation helpers (asarray, empty_strided, frombuffer) and the predicates
that are constant for real tensors on one process."""
import builtins
import collections
import math
import warnings

import numpy as np

from . import _C
from ._utils import as_shape, torch_type_name

Tensor = _C.Tensor

__all__ = [
    "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
    "trapezoid", "trapz", "cumulative_trapezoid", "histogram", "i0", "i0_", "ldexp", "ldexp_", "frexp", "gcd", "gcd_", "lcm",
    "lcm_", "xlogy_", "fill", "fill_", "range", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
    "asarray", "empty_strided", "frombuffer", "is_nonzero", "is_same_size", "is_signed", "is_inference", "is_conj",
    "is_neg", "conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "real", "get_device",
    "typename", "is_storage",
]


# ------------------------------------------------------------------ windows
def _window(name, window_length, periodic, dtype, device, requires_grad, shape_of):
    """shape_of(n, denom) -> the window at positions n (float64) over `denom`
    = N - 1, N = window_length (+1 when periodic, the last point dropped)."""
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dtype = dtype or _C.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    device = device or _C.get_default_device()
    if window_length <= 1:
        out = _C.full([window_length], 1.0, dtype, device)
    else:
        n_points = window_length + 1 if periodic else window_length
        n = _C.arange(0.0, float(window_length), 1.0, _C.dtype.float64, device)
        out = _C.cast(shape_of(n, float(n_points - 1)), dtype)
    return out.requires_grad_(requires_grad) if requires_grad else out


def _cosine_sum(n, denom, coefficients):
    out = None
    for k, a in enumerate(coefficients):
        term = _C.mul(_C.cos(_C.mul(n, 2.0 * math.pi * k / denom)), float(a)) if k else None
        out = term if out is None else _C.add(out, term)
        if k == 0:
            out = _C.full(list(n.shape), float(a), n.dtype, n.device)
    return out


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: _cosine_sum(n, d, (0.5, -0.5)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: _cosine_sum(n, d, (alpha, -beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: _cosine_sum(n, d, (0.42, -0.5, 0.08)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: _C.sub(1.0, _C.abs(_C.sub(_C.mul(n, 2.0 / d), 1.0))))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    def kaiser(n, d):
        ratio = _C.sub(_C.mul(n, 2.0 / d), 1.0)
        arg = _C.mul(_C.sqrt(_C.clamp(_C.sub(1.0, _C.mul(ratio, ratio)), 0.0, None)), float(beta))
        return _C.div(i0(arg), float(i0(_C.full([], float(beta), _C.dtype.float64, n.device)).item()))

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, kaiser)


# -------------------------------------------------------------- integration
def _spacing_along(y, x, dx, dim):
    if x is None:
        return None, float(dx if dx is not None else 1.0)
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[dim] = x.shape[0]
        x = _C.reshape(x, shape)
    n = x.shape[dim]
    return _C.sub(_C.narrow(x, dim, 1, n - 1), _C.narrow(x, dim, 0, n - 1)), None


def _trapezoid_terms(y, x, dx, dim):
    if not y.dtype.is_floating_point:
        y = _C.cast(y, _C.get_default_dtype())
    dim = dim % y.ndim if y.ndim else 0
    n = y.shape[dim]
    if n == 0:
        return None, dim
    spacing, scale = _spacing_along(y, x, dx, dim)
    mid = _C.mul(_C.add(_C.narrow(y, dim, 1, n - 1), _C.narrow(y, dim, 0, n - 1)), 0.5)
    return (_C.mul(mid, scale) if spacing is None else _C.mul(mid, spacing)), dim


def trapezoid(y, x=None, *, dx=None, dim=-1):
    terms, d = _trapezoid_terms(y, x, dx, dim)
    if terms is None:
        shape = list(y.shape)
        del shape[d]
        return _C.full(shape, 0.0, y.dtype if y.dtype.is_floating_point else _C.get_default_dtype(), y.device)
    return _C.sum(terms, [d], False, None)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    terms, d = _trapezoid_terms(y, x, dx, dim)
    if terms is None:
        return y if y.dtype.is_floating_point else _C.cast(y, _C.get_default_dtype())
    return _C.cumsum(terms, d, None)


# ----------------------------------------------------------------- histogram
_Histogram = collections.namedtuple("histogram", ["hist", "bin_edges"])


def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A001,A002
    """(hist, bin_edges): bins equal-width bins over `range` (the data's
    [min, max] by default, widened by 0.5 each side when they are equal) or
    the given edges; the last bin includes its right edge. The range of the
    data is read on the host (eager, as PyTorch syncs here too)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for \'{torch_type_name(input.dtype)}\'')
    x = _C.reshape(input, [input.numel()])
    if isinstance(bins, Tensor):
        edges = _C.cast(bins, input.dtype)
    else:
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel():
            lo, hi = float(_C.amin(x, [0], False).item()), float(_C.amax(x, [0], False).item())
        else:
            lo, hi = 0.0, 0.0
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): max must be larger than min, but got min {lo} max {hi}")
        from ._creation import linspace

        edges = linspace(lo, hi, int(bins) + 1, dtype=input.dtype, device=input.device)
    n_bins = edges.shape[0] - 1
    first, last = edges[0], edges[n_bins]
    inside = _C.logical_and(_C.ge(x, first), _C.le(x, last))
    from ._composite import bucketize

    position = _C.sub(bucketize(x, edges, right=True), 1)
    position = _C.clamp(position, 0, n_bins - 1)  # the last edge belongs to the last bin
    counts = weight.reshape(-1).to(input.dtype) if weight is not None else _C.full([x.numel()], 1.0, input.dtype,
                                                                                    input.device)
    hist = _C.index_add(_C.full([n_bins], 0.0, input.dtype, input.device), 0, position,
                        _C.where(inside, counts, 0.0))
    if density:
        widths = _C.sub(_C.narrow(edges, 0, 1, n_bins), _C.narrow(edges, 0, 0, n_bins))
        hist = _C.div(hist, _C.mul(widths, _C.sum(hist, None, False, None)))
    return _Histogram(hist, edges)


# ---------------------------------------------------------------- pointwise
_I0_SERIES_TERMS = 60
_I0_ASYMPTOTIC_FROM = 30.0


def i0(input):  # noqa: A002
    """The modified Bessel function of the first kind, order 0: its power
    series below |x| = 30, and the asymptotic expansion
    e^|x| / sqrt(2 pi |x|) * sum_k ((2k-1)!!)^2 / (k! (8|x|)^k) above."""
    x = input if input.dtype.is_floating_point else _C.cast(input, _C.get_default_dtype())
    ax = _C.abs(x)
    small = _C.lt(ax, _I0_ASYMPTOTIC_FROM)
    xs = _C.where(small, ax, 0.0)
    q = _C.mul(_C.mul(xs, xs), 0.25)  # (x/2)^2
    term = _C.full(list(x.shape), 1.0, x.dtype, x.device)
    series = term
    for k in builtins.range(1, _I0_SERIES_TERMS):
        term = _C.mul(term, _C.div(q, float(k * k)))
        series = _C.add(series, term)
    xl = _C.where(small, _I0_ASYMPTOTIC_FROM, ax)
    inv = _C.reciprocal(_C.mul(xl, 8.0))
    # Horner form: 1 + inv r_1 (1 + inv r_2 (1 + ...)), r_k = (2k-1)^2 / k; every
    # factor is small, so the gradient's products stay finite where the result is.
    tail = _C.full(list(x.shape), 1.0, x.dtype, x.device)
    for k in builtins.range(11, 0, -1):
        tail = _C.add(_C.mul(_C.mul(inv, (2 * k - 1) ** 2 / k), tail), 1.0)
    # e^x / sqrt(2 pi x) as one exp, so neither it nor its gradient overflows before the result does
    scale = _C.exp(_C.sub(xl, _C.mul(_C.log(_C.mul(xl, 2.0 * math.pi)), 0.5)))
    asymptotic = _C.mul(scale, tail)
    return _C.where(small, series, asymptotic)


def ldexp(input, other):  # noqa: A002
    from ._composite import _floating_pair

    x, e = _floating_pair(input, other)
    return _C.mul(x, _C.pow(2.0, e))


def frexp(input):  # noqa: A002
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in
    [0.5, 1); zero, inf and NaN keep exponent 0 (PyTorch's)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    finite_nonzero = _C.logical_and(_C.isfinite(input), _C.ne(input, 0.0))
    ax = _C.where(finite_nonzero, _C.abs(input), 1.0)
    e = _C.add(_C.floor(_C.div(_C.log(ax), math.log(2.0))), 1.0)
    # log2 can round across a power of two: one correction step either way
    m = _C.div(ax, _C.pow(2.0, e))
    e = _C.where(_C.ge(m, 1.0), _C.add(e, 1.0), _C.where(_C.lt(m, 0.5), _C.sub(e, 1.0), e))
    e = _C.where(finite_nonzero, e, 0.0)
    mantissa = _C.where(finite_nonzero, _C.div(input, _C.pow(2.0, e)), input)
    return _FrexpResult(mantissa, _C.cast(e, _C.dtype.int32))


_FrexpResult = collections.namedtuple("frexp", ["mantissa", "exponent"])


def _check_integral(name, input, other):  # noqa: A002
    for position, (arg, t) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                            f"{type(t).__name__}")
    dtype = _C.promote_types(input.dtype, other.dtype)
    if dtype.is_floating_point or dtype == _C.dtype.bool:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{torch_type_name(dtype)}\'')


def gcd(input, other):  # noqa: A002
    """Euclid's algorithm, a fixed number of steps (enough for the dtype's
    worst case, consecutive Fibonacci numbers), so it traces."""
    _check_integral("gcd", input, other)
    dtype = _C.promote_types(input.dtype, other.dtype)
    a, b = _C.abs(_C.cast(input, dtype)), _C.abs(_C.cast(other, dtype))
    a = _C.add(a, _C.mul(b, 0))  # the broadcast shape
    steps = 93 if dtype == _C.dtype.int64 else 47
    for _ in builtins.range(steps):
        done = _C.eq(b, 0)
        safe_b = _C.where(done, 1, b)
        a, b = _C.where(done, a, b), _C.where(done, 0, _C.remainder(a, safe_b))
    return a


def lcm(input, other):  # noqa: A002
    _check_integral("lcm", input, other)
    g = gcd(input, other)
    zero = _C.eq(g, 0)
    return _C.abs(_C.where(zero, 0, _C.mul(_C.floor_divide(input, _C.where(zero, 1, g)), other)))


def _in_place(name):
    def fn(input, *args, **kwargs):  # noqa: A002
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = name
    return fn


i0_, ldexp_, gcd_, lcm_, xlogy_, fill_ = (_in_place(n) for n in ("i0_", "ldexp_", "gcd_", "lcm_", "xlogy_",
                                                                  "fill_"))


def fill(input, value):  # noqa: A002
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
    return _C.where(_C.full(list(input.shape), True, _C.dtype.bool, input.device),
                    _C.cast(value, input.dtype) if isinstance(value, Tensor) else value, input)


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):
    """The deprecated torch.range: [start, end] with the end included, in the
    default floating dtype unless dtype says otherwise."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    dtype = dtype or _C.get_default_dtype()
    device = device or _C.get_default_device()
    n = _C.arange(0.0, float(count), 1.0, _C.dtype.float64, device)
    out = _C.cast(_C.add(_C.mul(n, float(step)), float(start)), dtype)
    return out.requires_grad_(True) if requires_grad else out


def unsafe_chunk(input, chunks, dim=0):  # noqa: A002
    return input.chunk(chunks, dim)


def unsafe_split(input, split_size_or_sections, dim=0):  # noqa: A002
    return input.split(split_size_or_sections, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    return input.split_with_sizes(split_sizes, dim)


# ------------------------------------------------------- the *_copy variants
def _copy_of(view_name, returns_sequence=False):
    def fn(input, *args, **kwargs):  # noqa: A002
        out = getattr(input, view_name)(*args, **kwargs)
        return tuple(_C.clone(t) for t in out) if returns_sequence else _C.clone(out)

    fn.__name__ = view_name + "_copy"
    fn.__doc__ = f"torch.{view_name}_copy: a new tensor with the values of input.{view_name}(...)."
    return fn


_COPY_VIEWS = ["view", "permute", "transpose", "t", "squeeze", "unsqueeze", "expand", "diagonal", "select",
               "narrow", "detach", "as_strided", "unfold"]
_COPY_SEQUENCES = ["unbind", "split", "split_with_sizes"]
for _name in _COPY_VIEWS + _COPY_SEQUENCES:
    globals()[_name + "_copy"] = _copy_of(_name, _name in _COPY_SEQUENCES)
    __all__.append(_name + "_copy")


def alias_copy(input):  # noqa: A002
    return _C.clone(input)


__all__.append("alias_copy")


def slice_copy(input, dim=0, start=None, end=None, step=1):  # noqa: A002
    where = [slice(None)] * input.ndim
    where[dim] = slice(start, end, step)
    return _C.clone(input[tuple(where)])


__all__.append("slice_copy")


# ----------------------------------------------------------------- creation
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch.asarray: a tensor shares obj's memory where it can (a tensor of
    the asked dtype and device, or a NumPy array), copied when copy=True."""
    from ._creation import tensor

    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None and dtype != out.dtype:
            if copy is False:
                raise ValueError("can't alias tensor with a different dtype when copy=False")
            out = _C.cast(out, dtype)
        if device is not None:
            out = out.to(device)  # the same tensor when already there
        if copy and out is obj:
            out = _C.clone(obj)
    elif isinstance(obj, np.ndarray) and not copy:
        from ._creation import from_numpy

        out = from_numpy(obj)
        if dtype is not None and dtype != out.dtype:
            out = _C.cast(out, dtype)
        if device is not None:
            out = out.to(device)
    else:
        out = tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out = out.detach().requires_grad_(True) if out is obj else out.requires_grad_(True)
    return out


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    from ._creation import empty

    size, stride = list(as_shape(size)), list(as_shape(stride))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    extent = 0 if any(s == 0 for s in size) else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    base = empty(extent, dtype=dtype, device=device)
    out = base.as_strided(size, stride)
    return out.requires_grad_(True) if requires_grad else out


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over a Python buffer's bytes (shares its memory, as torch's)."""
    from ._creation import from_numpy, tensor

    np_dtype = tensor([], dtype=dtype).numpy().dtype
    array = np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
    if not array.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors.",
                      UserWarning, stacklevel=2)
        array = array.copy()
    out = from_numpy(array)
    return out.requires_grad_(True) if requires_grad else out


# --------------------------------------------------------------- predicates
def is_nonzero(input):  # noqa: A002
    return input.is_nonzero()


def is_same_size(input, other):  # noqa: A002
    return input.is_same_size(other)


def is_signed(input):  # noqa: A002
    return input.is_signed()


def is_inference(input):  # noqa: A002
    return input.is_inference()


def is_conj(input):  # noqa: A002
    return False


def is_neg(input):  # noqa: A002
    return False


# Real dtypes only: conjugation is the identity (PyTorch returns input itself).
def conj(input):  # noqa: A002
    return input


conj_physical = resolve_conj = resolve_neg = real = conj


def conj_physical_(input):  # noqa: A002
    return input


def get_device(input):  # noqa: A002
    return input.get_device()


def typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj):
    from ._tensor import UntypedStorage

    return isinstance(obj, UntypedStorage)


def _attach_methods():
    from ._tensor import _inplace

    for name in ("i0", "ldexp", "gcd", "lcm"):
        fn = globals()[name]
        setattr(Tensor, name, (lambda f: lambda self, *a, **k: f(self, *a, **k))(fn))
        _inplace(name + "_", fn)
    Tensor.frexp = lambda self: frexp(self)
    Tensor.histogram = lambda self, bins=100, *, range=None, weight=None, density=False: histogram(
        self, bins, range=range, weight=weight, density=density)
    Tensor.unsafe_chunk = unsafe_chunk
    Tensor.unsafe_split = unsafe_split
    Tensor.unsafe_split_with_sizes = unsafe_split_with_sizes
    Tensor.real = property(lambda self: self)
    Tensor.new = _new
    Tensor.apply_ = lambda self, callable: _elementwise_python("apply_", self, callable)
    Tensor.map_ = lambda self, tensor, callable: _elementwise_python("map_", self, callable, tensor)
    Tensor.map2_ = lambda self, x, y, callable: _elementwise_python("map2_", self, callable, x, y)
    Tensor.resize_ = _resize_
    Tensor.resize_as_ = lambda self, tensor, memory_format=None: _resize_(self, tuple(tensor.shape))
    Tensor.new_empty_strided = lambda self, size, stride, *, dtype=None, device=None, requires_grad=False, \
        layout=None, pin_memory=False: empty_strided(size, stride, dtype=dtype or self.dtype,
                                                     device=device or self.device, requires_grad=requires_grad)
    Tensor.record_stream = lambda self, stream: None  # allocations are stream-ordered already
    # stable: dims of equal stride keep their order, as torch's
    Tensor.dim_order = lambda self, *, ambiguity_check=False: tuple(
        sorted(builtins.range(self.ndim), key=lambda d: -self.stride()[d]))
    for device_kind in ("xpu", "ipu", "mtia", "vulkan", "maia"):
        if not hasattr(Tensor, "is_" + device_kind):
            setattr(Tensor, "is_" + device_kind, property(lambda self: False))


def _elementwise_python(name, self, fn, *others):
    """apply_/map_/map2_: fn called on Python numbers, element by element, on
    the host (PyTorch's CPU-only, no-autograd methods)."""
    from ._creation import tensor

    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    columns = [self.reshape(-1).tolist()]
    columns += [_C.broadcast_to(o, list(self.shape)).reshape(-1).tolist() for o in others]
    values = [fn(*args) for args in zip(*columns)]
    self.copy_(_C.reshape(tensor(values, dtype=self.dtype), list(self.shape)))
    return self


def _resize_(self, *sizes, memory_format=None):
    """The tensor takes the new shape; its first elements (row-major) are
    kept, new ones are uninitialised (PyTorch's resize_ without storage reuse:
    views of the old tensor do not follow)."""
    from ._creation import empty

    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = list(as_shape(sizes))
    out = empty(*shape, dtype=self.dtype, device=self.device)
    kept = min(out.numel(), self.numel())
    if kept:
        flat = _C.reshape(out, [out.numel()])
        flat[:kept] = _C.reshape(self, [self.numel()])[:kept]
    self._set_data(out)
    return self


def _new(self, *args, **kwargs):
    """Tensor.new, the legacy constructor: new(*sizes) uninitialised, new(data)
    from data, new(tensor) the same memory, new() empty; self's dtype and device."""
    from ._tensor_surface import _legacy_new

    dtype, device = kwargs.pop("dtype", self.dtype), kwargs.pop("device", self.device)
    if kwargs:
        raise TypeError(f"new() got unexpected keyword arguments {sorted(kwargs)}")
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].view(args[0].shape)
    return _legacy_new("new", dtype, args, device)


_attach_methods()
