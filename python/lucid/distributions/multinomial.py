from ..autograd import no_grad
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


def _lucid():
    import lucid

    return lucid


class Multinomial(Distribution):
    """Counts of each of K events over `total_count` categorical draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        lucid = _lucid()
        with no_grad():
            samples = self._categorical.sample((self.total_count,) + tuple(sample_shape))
            samples = samples.permute(*range(1, samples.ndim), 0)  # the draws last
            counts = lucid.zeros(self._extended_shape(sample_shape), dtype=samples.dtype, device=samples.device)
            counts.scatter_add_(-1, samples, lucid.ones_like(samples))
            return counts.type_as(self.probs)

    def entropy(self):
        n = _lucid().tensor(self.total_count)  # int64: lgamma(n + 1) is float32, as PyTorch computes it
        term1 = n * self._categorical.entropy() - (n + 1).lgamma()
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lucid = _lucid()
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        # An impossible event drawn zero times contributes 0, not 0 * -inf.
        logits = lucid.where((value == 0) & (logits == -float("inf")), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
