"""Orthogonal, weight and spectral normalization parametrizations
(torch.nn.utils.parametrizations)."""
import enum

import numpy as np

from ... import _C
from ... import linalg
from ..._creation import eye, randn, zeros_like
from ..._composite import allclose
from ..._functions import cat, where
from ...autograd import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, default_spectral_dim, norm_except_dim, weight_as_matrix


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """`name` computed as g v / ||v|| from parametrizations.<name>.original0
    (g) and original1 (v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            self.register_buffer("_u", F.normalize(weight_mat.new_empty(h).normal_(0, 1), dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(weight_mat.new_empty(w).normal_(0, 1), dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        return weight_as_matrix(weight, self.dim)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():  # the buffers are updated in place
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_C.matmul(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_C.matmul(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = _C.matmul(u, _C.matmul(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """`name` divided by its largest singular value, estimated by power
    iteration (buffers parametrizations.<name>.0._u and ._v)."""
    weight = getattr(module, name, None)
    if weight is None or not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = default_spectral_dim(module)
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---------------------------------------------------------------- orthogonal
class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


def _is_orthogonal(Q):
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * float(np.finfo(np.dtype(str(Q.dtype).split(".")[-1].replace("bfloat16", "float32"))).eps)
    return allclose(Q.mT @ Q, eye(k, dtype=Q.dtype, device=Q.device), atol=eps)


def _make_orthogonal(A):
    """The Q of A = QR (A tall) with diag(R) >= 0."""
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _geqrf(A):
    """LAPACK's geqrf of a (batch of) tall matrices: the Householder vectors
    below the diagonal and R on and above it, and the reflectors' tau (the
    inputs of linalg.householder_product). Runs on the host, once, when an
    orthogonal parametrization is assigned."""
    a = np.array(A.detach().cpu().numpy(), dtype=np.float64)
    batch = a.reshape(-1, *a.shape[-2:])
    n, k = batch.shape[-2:]
    taus = np.zeros((batch.shape[0], k))
    for m, tau in zip(batch, taus):
        for j in range(min(n, k)):
            alpha, tail = m[j, j], m[j + 1:, j]
            tail_norm = np.linalg.norm(tail)
            if tail_norm == 0.0:
                continue  # no reflection: tau = 0
            beta = -np.copysign(np.hypot(alpha, tail_norm), alpha)
            tau[j] = (beta - alpha) / beta
            v = np.concatenate([[1.0], tail / (alpha - beta)])
            m[j:, j + 1:] -= tau[j] * np.outer(v, v @ m[j:, j + 1:])
            m[j, j], m[j + 1:, j] = beta, v[1:]
    as_tensor = lambda x: _C.from_numpy_copy(np.ascontiguousarray(x)).to(A.dtype)  # noqa: E731
    return as_tensor(batch.reshape(a.shape)), as_tensor(taus.reshape(*a.shape[:-2], k))


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # A skew-symmetric A from the n*k - k(k-1)/2 free entries
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:  # the Cayley map (I + A/2)(I - A/2)^-1
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # the diagonal of X holds +-1 (not differentiated through)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if tuple(Q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # The reflectors of Q's QR, with diag(R) > 0 stored as the signs +-1 the forward reads.
            A, tau = _geqrf(Q)
            diag = A.diagonal(dim1=-2, dim2=-1)
            diag.copy_(diag.sign() * where(tau == 0.0, -1.0, 1.0).to(A.dtype))
            return A.mT if transpose else A
        if n == k:
            Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
        else:  # complete Q into an n x n orthogonal matrix
            N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        # -Id: with it householder(zeros) is eye, and every map starts at the base
        neg_id = zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Makes ``module.<name>`` (a matrix or batch of matrices) orthogonal:
    orthonormal columns when it is tall, rows when it is wide. The map from
    the unconstrained original is ``"matrix_exp"`` (exp of a skew-symmetric
    matrix), ``"cayley"`` ((I + A/2)(I - A/2)^-1) or ``"householder"`` (a
    product of reflectors); by default matrix_exp for square matrices and
    householder otherwise. With ``use_trivialization`` (the default) the map
    is applied on top of a stored orthogonal ``base`` (PyTorch's dynamic
    trivialization), which starts at the QR orthogonalization of the weight."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
