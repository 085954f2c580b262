"""lucid.special: torch.special's functions that Lucid has (the others,
such as i0 and the Bessel functions, are not supported yet)."""
from .. import _C
from .. import _composite
from .. import _functions as F

__all__ = ["expit", "logit", "xlogy", "erf", "erfc", "expm1", "exp2", "log1p", "log_softmax", "softmax",
           "logsumexp", "sinc", "round", "entr", "gammaln", "digamma", "psi", "polygamma", "multigammaln", "erfinv"]

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


def entr(input):  # noqa: A002
    """-x log x (0 at 0, -inf below 0)."""
    return _C.where(_C.lt(input, 0), float("-inf"), _C.neg(_composite.xlogy(input, input)))
