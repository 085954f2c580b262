"""Sampling that needs concrete values: multinomial and randperm.

Both draw on the host. With no generator the draws come from Lucid's global
generator (so ``lucid.manual_seed`` reproduces them); with a ``Generator``,
from that generator's own stream. Neither can run inside a compiled step,
where values are symbolic.
"""
import numbers

import numpy as np

from . import _C
from ._utils import to_dtype
from .utils.data._random import Generator, rng


def _check_generator(generator):
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"generator must be a lucid.Generator, got {type(generator).__name__}")


def _uniform(shape, generator):
    """float64 uniforms in [0, 1) on the host."""
    if generator is None:
        return _C.rand(list(shape), _C.dtype.float64, "cpu").numpy()
    return generator._rng.random(shape)


def _concrete(t, fn):
    if t.is_symbolic:
        raise RuntimeError(f"{fn}() needs concrete values and cannot run inside a compiled step")
    return (t.detach() if t.dtype != _C.dtype.bfloat16 else _C.cast(t.detach(), _C.dtype.float32)).cpu().numpy()


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """Indices drawn from the categories of each row of `input` (1-D or 2-D,
    non-negative weights, not necessarily normalised). Without replacement
    each row's indices are distinct; zero-weight categories come last."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not {type(input).__name__}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    _check_generator(generator)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n = int(num_samples)
    k = input.shape[-1]
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p = _concrete(input, "multinomial").astype(np.float64).reshape(-1, k)
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(p.sum(axis=1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = p.shape[0]
    if replacement:
        # Inverse CDF: each row's CDF offset by its row number makes one
        # increasing array, so one searchsorted serves every row.
        cdf = np.cumsum(p, axis=1)
        cdf /= cdf[:, -1:]
        offsets = np.arange(rows, dtype=np.float64)[:, None]
        u = _uniform((rows, n), generator)
        flat = np.searchsorted((cdf + offsets).ravel(), (u + offsets).ravel(), side="right")
        out = np.minimum(flat.reshape(rows, n) - np.arange(rows)[:, None] * k, k - 1)
        # A category of zero weight ending a row cannot be chosen: step back to the last positive one.
        last_positive = k - 1 - np.argmax(p[:, ::-1] > 0, axis=1)
        out = np.minimum(out, last_positive[:, None])
    else:
        # Weighted sampling without replacement: the n largest keys
        # log(u) / p (Efraimidis-Spirakis); zero weights get -inf and go last.
        u = _uniform((rows, k), generator)
        with np.errstate(divide="ignore"):
            keys = np.where(p > 0, np.log(u) / np.where(p > 0, p, 1.0), -np.inf)
        out = np.argsort(-keys, axis=1, kind="stable")[:, :n]
    out = out.astype(np.int64)
    if input.ndim == 1:
        out = out[0]
    t = _C.from_numpy_copy(np.ascontiguousarray(out))
    return t if input.device.type == "cpu" else _C.to_device(t, str(input.device))


def generator_draw(kind, shape, dtype, device, generator):
    """rand / randn / integers from `generator`'s own stream, as a tensor of
    `dtype` (the draws are float64 on the host, then cast)."""
    _check_generator(generator)
    if kind == "uniform":
        arr = generator._rng.random(shape)
    elif kind == "normal":
        arr = generator._rng.standard_normal(shape)
    else:
        raise ValueError(f"unknown distribution {kind!r}")
    t = _C.cast(_C.from_numpy_copy(np.ascontiguousarray(arr, dtype=np.float64)), dtype)
    target = _C.get_default_device() if device is None else _C.device(str(device))
    return t if target.type == "cpu" else _C.to_device(t, target)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A random permutation of 0..n-1 (int64 unless `dtype` says otherwise)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    _check_generator(generator)
    perm = rng(generator).permutation(int(n)).astype(np.int64)
    t = _C.from_numpy_copy(perm)
    dtype = to_dtype(dtype)
    if dtype is not None and dtype != t.dtype:
        t = _C.cast(t, dtype)
    if device is not None and _C.device(str(device)) != t.device:
        t = _C.to_device(t, str(device))
    if requires_grad:
        t.requires_grad_(True)
    return t
