import math
import numbers

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


def _lucid():
    import lucid

    return lucid


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (exceedances over a threshold)
    with `loc`, `scale` and shape `concentration` (0: exponential tail)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, numbers.Number) for v in (loc, scale, concentration))
        super().__init__(() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(_lucid().rand(*shape, dtype=self.loc.dtype, device=self.loc.device))

    def _safe_concentration(self):
        """(concentration is ~0, concentration with 1 where it is): the
        branches of each formula, neither of them NaN."""
        lucid = _lucid()
        eq_zero = lucid.isclose(self.concentration, lucid.zeros_like(self.concentration))
        return eq_zero, lucid.where(eq_zero, lucid.ones_like(self.concentration), self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lucid = _lucid()
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + lucid.ones_like(z)
        where_nonzero = lucid.where(y == 0, y, y * (safe_conc * z).log1p())
        return -self.scale.log() - lucid.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        return _lucid().where(eq_zero, -z, -(safe_conc * z).log1p() / safe_conc)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = (-value).log1p()
        where_nonzero = self.loc + self.scale / safe_conc * (-safe_conc * logu).expm1()
        return _lucid().where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        lucid = _lucid()
        valid = self.concentration < 1
        safe_conc = lucid.where(valid, self.concentration, 0.5)
        return lucid.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        lucid = _lucid()
        valid = self.concentration < 0.5
        safe_conc = lucid.where(valid, self.concentration, 0.25)
        return lucid.where(valid, self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc)), math.nan)

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).broadcast_to(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lucid = _lucid()
        lower = self.loc
        upper = lucid.where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
