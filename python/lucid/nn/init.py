"""lucid.nn.init: in-place initialisers with PyTorch's names, formulas and
defaults. Random draws come from lucid's generator (lucid.manual_seed); each
function writes into the given tensor without recording history and returns
that same tensor."""
import contextlib
import functools
import math
import numbers
import threading
import warnings

import numpy as np

from .. import _C
from ..autograd import no_grad

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
]


def _write(tensor, value):
    with no_grad():
        _C.assign_(tensor, value)
    return tensor


def _check_generator(generator):
    if generator is not None:
        raise NotImplementedError("explicit generators are not supported; seed with lucid.manual_seed")


def _draw_dtype(tensor):
    return tensor.dtype if tensor.dtype.is_floating_point else _C.get_default_dtype()


def _uniform(tensor, a, b):
    u = _C.rand(list(tensor.shape), _draw_dtype(tensor), tensor.device)
    return _C.add(_C.mul(u, float(b) - float(a)), float(a))


def _normal(tensor, mean, std):
    n = _C.randn(list(tensor.shape), _draw_dtype(tensor), tensor.device)
    return _C.add(_C.mul(n, float(std)), float(mean))


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (numbers.Integral, numbers.Real)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills with U(a, b)."""
    _check_generator(generator)
    return _write(tensor, _uniform(tensor, a, b))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills with N(mean, std^2)."""
    _check_generator(generator)
    return _write(tensor, _normal(tensor, mean, std))


def _erfinv(y):
    """erfinv for float64 tensors in (-1, 1): Giles' approximation refined
    by two Newton steps on erf."""
    w = _C.neg(_C.log(_C.mul(_C.sub(1.0, y), _C.add(y, 1.0))))
    wc = _C.sub(w, 2.5)
    p = _C.full([], 2.81022636e-08, y.dtype, y.device)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p = _C.add(_C.mul(p, wc), c)
    wt = _C.sub(_C.sqrt(w), 3.0)
    q = _C.full([], -0.000200214257, y.dtype, y.device)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        q = _C.add(_C.mul(q, wt), c)
    x = _C.mul(_C.where(_C.lt(w, 5.0), p, q), y)
    for _ in range(2):
        err = _C.sub(_C.erf(x), y)
        x = _C.sub(x, _C.div(err, _C.mul(_C.exp(_C.neg(_C.mul(x, x))), 2.0 / math.sqrt(math.pi))))
    return x


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills with N(mean, std^2) truncated to [a, b] (inverse-CDF sampling,
    as PyTorch does)."""
    _check_generator(generator)
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
    u = _C.rand(list(tensor.shape), _C.dtype.float64, tensor.device)
    y = _C.add(_C.mul(u, (2 * hi - 1) - (2 * lo - 1)), 2 * lo - 1)
    x = _C.add(_C.mul(_erfinv(y), std * math.sqrt(2.0)), float(mean))
    x = _C.clamp(x, float(a), float(b))
    return _write(tensor, _C.cast(x, _draw_dtype(tensor)))


def constant_(tensor, val):
    return _write(tensor, _C.full(list(tensor.shape), val, tensor.dtype, tensor.device))


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    """The identity matrix (2-D tensors only)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, _C.eye(tensor.shape[0], tensor.shape[1], tensor.dtype, tensor.device))


def dirac_(tensor, groups=1):
    """The Dirac delta for {3, 4, 5}-D conv weights: each output channel
    copies one input channel (per group)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    w = np.zeros(sizes)
    center = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            w[(g * out_per_group + d, d) + center] = 1
    from .._creation import tensor as make

    return _write(tensor, make(w, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    _check_generator(generator)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _write(tensor, _uniform(tensor, -a, a))


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    _check_generator(generator)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _write(tensor, _normal(tensor, 0.0, std))


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al.)."""
    _check_generator(generator)
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return _write(tensor, _uniform(tensor, -bound, bound))


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2) with std = gain / sqrt(fan) (He et al.)."""
    _check_generator(generator)
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return _write(tensor, _normal(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity)))


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian
    draw, sign-corrected so it is uniformly distributed (Saxe et al.). The
    QR runs on the host: initialisation happens once, outside any step."""
    _check_generator(generator)
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _C.randn([rows, cols], _C.dtype.float64, "cpu").numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    from .._creation import tensor as make

    q = make(np.ascontiguousarray(q * gain).reshape(tuple(tensor.shape)), dtype=_draw_dtype(tensor),
             device=tensor.device)
    return _write(tensor, q)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D sparse matrix (Martens 2010): N(0, std^2) entries with
    ceil(sparsity * rows) of each column, chosen at random, set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    num_zeros = math.ceil(sparsity * rows)
    normal_(tensor, 0.0, std, generator=generator)
    if num_zeros == 0:
        return tensor
    # Each column's zeroed rows: the first num_zeros of a random order of its rows.
    import lucid

    zeroed = lucid.rand(rows, cols, device=tensor.device).argsort(0)[:num_zeros]
    mask = lucid.zeros(rows, cols, dtype=lucid.bool, device=tensor.device).scatter(0, zeroed, True)
    return _write(tensor, _C.where(mask, 0.0, tensor))


# skip_init (nn.utils.skip_init) makes a module without initialising it:
# while it runs, the in-place initialisers below leave their tensor as it is.
_skipping = threading.local()


@contextlib.contextmanager
def _skip_initialisation():
    _skipping.depth = getattr(_skipping, "depth", 0) + 1
    try:
        yield
    finally:
        _skipping.depth -= 1


def _skippable(fn):
    @functools.wraps(fn)
    def initialiser(tensor, *args, **kwargs):
        if getattr(_skipping, "depth", 0):
            return tensor
        return fn(tensor, *args, **kwargs)

    return initialiser


for _name in [n for n in __all__ if n.endswith("_")]:
    globals()[_name] = _skippable(globals()[_name])


# PyTorch's deprecated spellings.
def _deprecated(fn):
    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{fn.__name__[:-1]}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    old.__name__ = fn.__name__[:-1]
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
sparse = _deprecated(sparse_)
