"""lucid.special: torch.special's functions that Lucid has (the others,
such as the Bessel functions and orthogonal polynomials, are not supported yet)."""
import math

from .. import _C
from .. import _composite
from .. import _functions as F
from ..autograd.function import Function

__all__ = ["expit", "logit", "xlogy", "erf", "erfc", "expm1", "exp2", "log1p", "log_softmax", "softmax",
           "logsumexp", "sinc", "round", "entr", "gammaln", "digamma", "psi", "polygamma", "multigammaln", "erfinv",
           "gammainc", "gammaincc", "i0", "ndtr", "xlog1py"]

expit = _C.sigmoid
logit = _composite.logit
xlogy = _composite.xlogy
erf = _C.erf
erfc = _composite.erfc
expm1 = _C.expm1
exp2 = F.exp2
log1p = _C.log1p
log_softmax = F.log_softmax
softmax = F.softmax
logsumexp = F.logsumexp
sinc = _composite.sinc
round = F.round  # noqa: A001
gammaln = _C.lgamma
digamma = psi = _C.digamma
polygamma = F.polygamma
multigammaln = F.mvlgamma
erfinv = _C.erfinv


def i0(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 0 (lucid.i0)."""
    from .. import i0 as top_level_i0

    return top_level_i0(input)


def ndtr(input):  # noqa: A002
    """The standard normal CDF: (1 + erf(x / sqrt(2))) / 2, written through
    erfc so that the lower tail keeps its relative precision."""
    x = input if input.dtype.is_floating_point else input.to(_C.get_default_dtype())
    return 0.5 * erfc(x * (-1.0 / math.sqrt(2.0)))


def xlog1py(input, other):  # noqa: A002
    """input * log1p(other), and 0 where input is 0 and other is not NaN (as xlogy)."""
    from .._creation import tensor

    x, y = input, other

    x = x if isinstance(x, _C.Tensor) else tensor(x)
    y = y if isinstance(y, _C.Tensor) else tensor(y, dtype=x.dtype if x.dtype.is_floating_point else None)
    product = x * _C.log1p(y)
    return F.where((x == 0) & ~_C.isnan(y), product.new_zeros(()).expand_as(product), product)


def entr(input):  # noqa: A002
    """-x log x (0 at 0, -inf below 0)."""
    return _C.where(_C.lt(input, 0), float("-inf"), _C.neg(_composite.xlogy(input, input)))


# ------------------------------------------------ regularized incomplete gamma
_IGAMMA_MAX_ITERATIONS = 2000
_IGAMMA_CHECK_EVERY = 8  # iterations between convergence checks on the host


def _filled(like, value):
    return _C.full(list(like.shape), value, like.dtype, like.device)


def _converged(change, tolerance):
    return bool(_C.all(_C.le(change, tolerance), None, False).item())


def _igamma_series(a, x):
    """P(a, x) by its power series (used where x < a + 1)."""
    term, total, denom = _filled(x, 1.0), _filled(x, 1.0), a
    for i in range(_IGAMMA_MAX_ITERATIONS):
        denom = _C.add(denom, 1.0)
        term = _C.mul(term, _C.div(x, denom))
        total = _C.add(total, term)
        if i % _IGAMMA_CHECK_EVERY == 0 and _converged(_C.div(term, total), 1e-17):
            break
    log_prefactor = _C.sub(_C.sub(_C.mul(a, _C.log(x)), x), _C.lgamma(_C.add(a, 1.0)))
    return _C.mul(_C.exp(log_prefactor), total)


def _igammac_continued_fraction(a, x):
    """Q(a, x) by its continued fraction, modified Lentz (used where x >= a + 1)."""
    tiny = 1e-300
    b = _C.add(_C.sub(x, a), 1.0)
    c = _filled(x, 1.0 / tiny)
    d = _C.reciprocal(b)
    h = d
    for i in range(1, _IGAMMA_MAX_ITERATIONS):
        an = _C.mul(_C.sub(a, float(i)), float(i))  # -i (i - a)
        b = _C.add(b, 2.0)
        d = _C.add(_C.mul(an, d), b)
        d = _C.where(_C.lt(_C.abs(d), tiny), tiny, d)
        c = _C.add(b, _C.div(an, c))
        c = _C.where(_C.lt(_C.abs(c), tiny), tiny, c)
        d = _C.reciprocal(d)
        delta = _C.mul(d, c)
        h = _C.mul(h, delta)
        if i % _IGAMMA_CHECK_EVERY == 0 and _converged(_C.abs(_C.sub(delta, 1.0)), 1e-16):
            break
    log_prefactor = _C.sub(_C.sub(_C.mul(a, _C.log(x)), x), _C.lgamma(a))
    return _C.mul(_C.exp(log_prefactor), h)


def _igamma(a, x, upper):
    """P(a, x) (or Q = 1 - P when `upper`), computed in float64, with
    PyTorch's values at the edges: NaN for negative or NaN arguments,
    P(0, x > 0) = 1, P(a > 0, 0) = 0, P(a >= 0, inf) = 1."""
    dtype = _C.result_type(a, x)  # PyTorch's promotion: a 0-d operand does not widen a dimensioned one
    a64, x64 = (_C.cast(t, _C.dtype.float64) for t in _composite.broadcast_tensors(a, x))
    regular = _C.logical_and(_C.gt(a64, 0.0), _C.logical_and(_C.gt(x64, 0.0), _C.isfinite(x64)))
    a_safe, x_safe = _C.where(regular, a64, 1.0), _C.where(regular, x64, 1.0)
    use_series = _C.lt(x_safe, _C.add(a_safe, 1.0))
    # Each branch evaluated at a point of its own region (the other's elements get a stand-in).
    p_series = _igamma_series(a_safe, _C.where(use_series, x_safe, 0.5))
    q_fraction = _igammac_continued_fraction(a_safe, _C.where(use_series, _C.add(a_safe, 2.0), x_safe))
    one_minus = (lambda t: _C.add(_C.neg(t), 1.0))
    result = _C.where(use_series, one_minus(p_series), q_fraction) if upper else \
        _C.where(use_series, p_series, one_minus(q_fraction))
    edge_one = _C.logical_or(_C.logical_and(_C.eq(a64, 0.0), _C.gt(x64, 0.0)),
                             _C.logical_and(_C.ge(a64, 0.0), _C.eq(x64, float("inf"))))
    edge_zero = _C.logical_and(_C.gt(a64, 0.0), _C.eq(x64, 0.0))
    result = _C.where(regular, result, float("nan"))
    result = _C.where(edge_one, 0.0 if upper else 1.0, result)
    result = _C.where(edge_zero, 1.0 if upper else 0.0, result)
    return _C.cast(result, dtype)


class _IncompleteGamma(Function):
    """Differentiable w.r.t. x only (d/dx P = x^(a-1) e^-x / Gamma(a)), as PyTorch's."""

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        return _igamma(a.detach(), x.detach(), upper)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{'igammac' if ctx.upper else 'igamma'}: input' is not "
                                      "implemented.")
        log_pdf = _C.sub(_C.sub(_C.mul(_C.sub(a, 1.0), _C.log(x)), x), _C.lgamma(a))
        dx = _C.mul(grad, _C.exp(log_pdf))
        return None, _C.neg(dx) if ctx.upper else dx, None


def _as_tensors(a, x):
    from .._creation import tensor

    like = a if isinstance(a, _C.Tensor) else x
    a = a if isinstance(a, _C.Tensor) else tensor(float(a), dtype=like.dtype)
    x = x if isinstance(x, _C.Tensor) else tensor(float(x), dtype=like.dtype)
    return a, x


def gammainc(input, other):  # noqa: A002
    """The regularized lower incomplete gamma function P(input, other). It is
    computed eagerly: the series and continued fraction run until every
    element has converged (checked on the host), so it does not trace."""
    return _IncompleteGamma.apply(*_as_tensors(input, other), False)


def gammaincc(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P."""
    return _IncompleteGamma.apply(*_as_tensors(input, other), True)
