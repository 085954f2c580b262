import math

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _lucid():
    import lucid

    return lucid


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batches."""
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """|L^-1 x|^2 for a batch of lower-triangular L [..., n, n] and vectors x
    [..., n] whose batch ends with L's: the leading dims of x become columns
    of one triangular solve per L."""
    lucid = _lucid()
    n = bx.shape[-1]
    l_batch = tuple(bL.shape[:-2])
    x_batch = tuple(bx.shape[:-1])
    if len(x_batch) < len(l_batch):
        x_batch = tuple(lucid.broadcast_shapes(x_batch, l_batch))
    split = len(x_batch) - len(l_batch)
    outer = x_batch[:split]
    inner = tuple(lucid.broadcast_shapes(x_batch[split:], l_batch))
    k = math.prod(outer)
    rhs = bx.expand(outer + inner + (n,)).reshape((k,) + inner + (n,))
    rhs = rhs.permute(*range(1, len(inner) + 2), 0)  # [inner..., n, k]
    solved = lucid.linalg.solve_triangular(bL.expand(inner + (n, n)), rhs, upper=False)
    M = solved.pow(2).sum(-2)  # [inner..., k]
    return M.permute(len(inner), *range(len(inner))).reshape(outer + inner)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1, from the Cholesky factor of P with
    rows and columns reversed (no explicit inverse of P)."""
    lucid = _lucid()
    Lf = lucid.linalg.cholesky(lucid.flip(P, (-2, -1)))
    L_inv = lucid.flip(Lf, (-2, -1)).transpose(-2, -1)
    Id = lucid.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return lucid.linalg.solve_triangular(L_inv, Id, upper=False)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution, given by `loc` and exactly one of
    `covariance_matrix`, `precision_matrix` or `scale_tril` (its lower
    Cholesky factor, the cheapest)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        lucid = _lucid()
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(name, m) for name, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                           ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = given[0]
        if matrix.ndim < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = tuple(lucid.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        self.__dict__[name] = matrix.expand(batch_shape + (-1, -1))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = lucid.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        event = tuple(self.event_shape)
        new.loc = self.loc.expand(batch_shape + event)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(batch_shape + event + event)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return _lucid().cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
