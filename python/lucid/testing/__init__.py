"""Test helpers (torch.testing): `assert_close` compares tensors, numbers,
booleans, None and nested sequences/mappings of them with PyTorch's default
tolerances per dtype and its error messages; `make_tensor` makes random
tensors for tests as PyTorch's does."""
import cmath
import collections.abc
import contextlib
import math
import warnings

import numpy as np

from .. import _C

__all__ = ["assert_close", "make_tensor", "assert_allclose"]


def _lucid():
    import lucid

    return lucid


def _dtype_precisions():
    dt = _C.dtype
    return {dt.float16: (0.001, 1e-05), dt.bfloat16: (0.016, 1e-05), dt.float32: (1.3e-06, 1e-05),
            dt.float64: (1e-07, 1e-07)}


def default_tolerances(*inputs, dtype_precisions=None):
    """(rtol, atol): the largest defaults among the inputs' dtypes (0 for integers and bool)."""
    dtypes = []
    for inp in inputs:
        if isinstance(inp, _C.Tensor):
            dtypes.append(inp.dtype)
        elif isinstance(inp, _C.dtype):
            dtypes.append(inp)
        else:
            raise TypeError(f"Expected a torch.Tensor or a torch.dtype, but got {type(inp)} instead.")
    precisions = dtype_precisions or _dtype_precisions()
    rtols, atols = zip(*[precisions.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


class _ErrorMeta(Exception):
    """An error to raise, with the path of the failing item in nested inputs."""

    def __init__(self, type, msg, *, id=()):  # noqa: A002
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


def _get_tolerances(*inputs, rtol, atol, id=()):  # noqa: A002
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                     f"{'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*inputs)


def _mismatch_msg(*, identifier, extra, abs_diff, abs_diff_idx, atol, rel_diff, rel_diff_idx, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_diff_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_diff_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(identifier="Scalars", extra=f"Expected {expected} but got {actual}.", abs_diff=abs_diff,
                         abs_diff_idx=None, atol=atol, rel_diff=rel_diff, rel_diff_idx=None, rtol=rtol)


def _tensor_mismatch_msg(actual, expected, matches, *, rtol, atol):
    lucid = _lucid()
    shape = tuple(matches.shape)

    def unravel(flat_index):
        return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()

    total = matches.numel()
    mismatches = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    actual_flat, expected_flat, matches_flat = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point:
        actual_flat, expected_flat = actual_flat.to(lucid.int64), expected_flat.to(lucid.int64)
    abs_diff = lucid.where(matches_flat, 0, (actual_flat - expected_flat).abs())
    max_abs, max_abs_idx = abs_diff.max(0)
    rel_diff = lucid.where(matches_flat, 0, abs_diff / expected_flat.abs())
    max_rel, max_rel_idx = rel_diff.max(0)
    return _mismatch_msg(identifier="Tensor-likes", extra=extra, abs_diff=max_abs.item(),
                         abs_diff_idx=unravel(int(max_abs_idx)), atol=atol, rel_diff=max_rel.item(),
                         rel_diff_idx=unravel(int(max_rel_idx)), rtol=rtol)


class _Unsupported(Exception):
    """This kind of pair cannot compare the inputs; the next one is tried."""


class _NonePair:
    def __init__(self, actual, expected, *, id=(), **options):  # noqa: A002
        if not (actual is None or expected is None):
            raise _Unsupported
        self.actual, self.expected, self.id = actual, expected, id

    def compare(self):
        if not (self.actual is None and self.expected is None):
            raise _ErrorMeta(AssertionError, f"None mismatch: {self.actual} is not {self.expected}", id=self.id)


class _BooleanPair:
    def __init__(self, actual, expected, *, id=(), **options):  # noqa: A002
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected, self.id = bool(actual), bool(expected), id

    def compare(self):
        if self.actual is not self.expected:
            raise _ErrorMeta(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}", id=self.id)


class _NumberPair:
    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False, check_dtype=False,  # noqa: A002
                 **options):
        if not all(isinstance(x, (int, float, complex, np.number)) and not isinstance(x, (bool, np.bool_))
                   for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        to_dtype = {int: _C.dtype.int64, float: _C.dtype.float64, complex: _C.dtype.float64}
        self.actual, self.expected, self.id = actual, expected, id
        self.rtol, self.atol = _get_tolerances(*[to_dtype[type(x)] for x in (actual, expected)], rtol=rtol, atol=atol,
                                               id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            raise _ErrorMeta(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.", id=self.id)
        if a == e or (self.equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        abs_diff = abs(a - e)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(e):
            return
        raise _ErrorMeta(AssertionError, _scalar_mismatch_msg(a, e, rtol=self.rtol, atol=self.atol), id=self.id)


class _TensorLikePair:
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None,  # noqa: A002
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True, check_stride=False,
                 **options):
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        self.actual, self.expected = (self._to_tensor(x) for x in (actual, expected))
        self.id = id
        self.rtol, self.atol = _get_tolerances(self.actual, self.expected, rtol=rtol, atol=atol, id=id)
        self.equal_nan, self.check_device, self.check_dtype = equal_nan, check_device, check_dtype
        self.check_stride = check_stride

    @staticmethod
    def _to_tensor(x):
        if isinstance(x, _C.Tensor):
            return x
        try:
            return _lucid().as_tensor(x)
        except Exception:
            raise _Unsupported from None

    def _mismatch(self, attribute, a, e):
        raise _ErrorMeta(AssertionError, f"The values for attribute '{attribute}' do not match: {a} != {e}.",
                         id=self.id)

    def compare(self):
        lucid = _lucid()
        a, e = self.actual, self.expected
        if a.shape != e.shape:
            self._mismatch("shape", a.shape, e.shape)
        if self.check_stride and a.stride() != e.stride():
            self._mismatch("stride()", a.stride(), e.stride())
        if self.check_device and a.device != e.device:
            self._mismatch("device", a.device, e.device)
        if self.check_dtype and a.dtype != e.dtype:
            self._mismatch("dtype", a.dtype, e.dtype)
        if a.device != e.device:
            a, e = a.cpu(), e.cpu()
        if a.dtype != e.dtype:
            dtype = lucid.promote_types(a.dtype, e.dtype)
            a, e = a.to(dtype), e.to(dtype)
        a, e = a.detach(), e.detach()
        matches = lucid.isclose(a, e, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)
        if bool(matches.all()):
            return
        if a.ndim == 0:
            msg = _scalar_mismatch_msg(a.item(), e.item(), rtol=self.rtol, atol=self.atol)
        else:
            msg = _tensor_mismatch_msg(a, e, matches, rtol=self.rtol, atol=self.atol)
        raise _ErrorMeta(AssertionError, msg, id=self.id)


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate_pairs(actual, expected, id=(), **options):  # noqa: A002
    """The leaf pairs of two (nested) inputs, checking the structure matches."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and isinstance(expected, seq) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                             id=id)
        return [p for i in range(len(actual)) for p in _originate_pairs(actual[i], expected[i], (*id, i), **options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _ErrorMeta(AssertionError, "The keys of the mappings do not match:\n"
                                             f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                                             f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}",
                             id=id)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        return [p for k in keys for p in _originate_pairs(actual[k], expected[k], (*id, k), **options)]
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
    raise _ErrorMeta(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                                f"{type(expected)}.", id=id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False, check_device=True,
                 check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raises (AssertionError for a mismatch) unless `actual` and `expected`
    are close: |actual - expected| <= atol + rtol * |expected| elementwise,
    with attributes (shape, device, dtype) equal. Defaults: rtol/atol of the
    dtype (float32 1.3e-6/1e-5, float64 1e-7/1e-7, float16 1e-3/1e-5,
    bfloat16 1.6e-2/1e-5, exact for integers). `msg`: a string, or a
    callable given the generated message."""
    __tracebackhide__ = True
    try:
        pairs = _originate_pairs(actual, expected, allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                                 equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                                 check_layout=check_layout, check_stride=check_stride)
    except _ErrorMeta as error:
        raise error.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _ErrorMeta as error:
            raise error.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated predecessor of assert_close (equal_nan on, dtypes not checked)."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    lucid = _lucid()
    if not isinstance(actual, _C.Tensor):
        actual = lucid.tensor(actual)
    if not isinstance(expected, _C.Tensor):
        expected = lucid.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        dt = _C.dtype
        rtol, atol = default_tolerances(actual, expected, dtype_precisions={
            dt.float16: (0.001, 0.001), dt.float32: (0.0001, 1e-05), dt.float64: (1e-05, 1e-08)})
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)


# ----------------------------------------------------------------- make_tensor
def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A random tensor: floats uniform in [low, high) (default [-9, 9)),
    integers in [low, high) (default [-9, 10)), booleans either value.
    `noncontiguous` gives a strided view, `exclude_zero` replaces zeros."""
    lucid = _lucid()
    integral = not dtype.is_floating_point

    def bounds(low, high, lowest, highest, default_low, default_high):
        low = default_low if low is None else low
        high = default_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low!r} and high={high!r}")
        if low == high and not integral:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                          "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest or low >= highest:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                             f"supports [{lowest}, {highest})")
        low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
        return (math.ceil(low), math.ceil(high)) if integral else (low, high)

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous!r} and memory_format={memory_format!r}")
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype!r}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype == lucid.bool:
        low, high = bounds(low, high, 0, 2, 0, 2)
        result = lucid.randint(low, high, shape, device=device).to(dtype)
    elif integral:
        info = lucid.iinfo(dtype)
        low, high = bounds(low, high, info.min, info.max + (1 if dtype != lucid.int64 else 0), -9, 10)
        result = lucid.randint(low, high, shape, device=device, dtype=lucid.int64).to(dtype)
    else:
        info = lucid.finfo(dtype)
        low, high = bounds(low, high, info.min, info.max, -9, 9)
        result = lucid.empty(shape, device=device, dtype=dtype)
        if high - low >= info.max:  # the width itself would overflow
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else lucid.finfo(dtype).tiny
    if not integral:
        result.requires_grad_(requires_grad)
    return result
