"""lucid.linalg: torch.linalg for real float32/float64 matrices.

The decompositions and solvers (lu_factor, lu_solve, inv, solve, det, slogdet,
cholesky, solve_triangular, qr, eigh, svd) are primitives of the core: LAPACK
on the CPU, the host's LAPACK from CUDA tensors, NotImplementedError on
Metal. Their derivatives are PyTorch's formulas written with ops, so they
trace into compiled steps and differentiate again (create_graph). The rest
(lstsq, pinv, matrix_rank, matrix_power, matrix_exp, cond, the spectral
norms, multi_dot, householder_product, vander, tensorinv, tensorsolve) is
composed of those. Matrices are the last two dims; leading dims are a batch.
Singular or non-positive-definite input raises LinAlgError (a RuntimeError)
where torch.linalg does. Complex tensors (eig, eigvals) are not supported.
"""
import collections
import math

import lucid
from .. import _C
from .. import _composite
from .. import _functions as F
from .._utils import as_dims, to_dtype

__all__ = ["norm", "vector_norm", "matrix_norm", "cross", "vecdot", "diagonal", "matmul", "LinAlgError",
           "inv", "inv_ex", "det", "slogdet", "solve", "solve_ex", "solve_triangular", "cholesky", "cholesky_ex",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "lstsq", "pinv", "matrix_rank", "matrix_power",
           "matrix_exp", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "cond", "multi_dot",
           "householder_product", "vander", "tensorinv", "tensorsolve"]

LinAlgError = _C.LinAlgError


def _result(name, fields):
    return collections.namedtuple(name, fields)


_InvEx = _result("linalg_inv_ex", ["inverse", "info"])
_Slogdet = _result("linalg_slogdet", ["sign", "logabsdet"])
_SolveEx = _result("linalg_solve_ex", ["result", "info"])
_CholeskyEx = _result("linalg_cholesky_ex", ["L", "info"])
_Qr = _result("linalg_qr", ["Q", "R"])
_Eigh = _result("linalg_eigh", ["eigenvalues", "eigenvectors"])
_Svd = _result("linalg_svd", ["U", "S", "Vh"])
_Lstsq = _result("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_LuFactor = _result("linalg_lu_factor", ["LU", "pivots"])
_LuFactorEx = _result("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_Lu = _result("linalg_lu", ["P", "L", "U"])


# ---------------------------------------------------------------- solvers
def inv(A):  # noqa: N803
    return _C.linalg_inv(A)


def inv_ex(A, *, check_errors=False):  # noqa: N803
    return _InvEx(*_C.linalg_inv_ex(A, check_errors))


def det(A):  # noqa: N803
    return _C.linalg_det(A)


def slogdet(A):  # noqa: N803
    return _Slogdet(*_C.linalg_slogdet(A))


def solve(A, B, *, left=True):  # noqa: N803
    return _C.linalg_solve(A, B, left)


def solve_ex(A, B, *, left=True, check_errors=False):  # noqa: N803
    return _SolveEx(*_C.linalg_solve_ex(A, B, left, check_errors))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):  # noqa: N803
    return _C.linalg_solve_triangular(A, B, upper, left, unitriangular)


def cholesky(A, *, upper=False):  # noqa: N803
    return _C.linalg_cholesky_ex(A, upper, True)[0]


def cholesky_ex(A, *, upper=False, check_errors=False):  # noqa: N803
    return _CholeskyEx(*_C.linalg_cholesky_ex(A, upper, check_errors))


def lu_factor(A, *, pivot=True):  # noqa: N803
    LU, pivots, _ = _C.linalg_lu_factor_ex(A, pivot, True, "torch.linalg.lu_factor")  # noqa: N806
    return _LuFactor(LU, pivots)


def lu_factor_ex(A, *, pivot=True, check_errors=False):  # noqa: N803
    return _LuFactorEx(*_C.linalg_lu_factor_ex(A, pivot, check_errors))


def lu(A, *, pivot=True):  # noqa: N803
    return _Lu(*_C.linalg_lu(A, pivot))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):  # noqa: N803
    return _C.linalg_lu_solve(LU, pivots, B, left, adjoint)


# --------------------------------------------------------- decompositions
def qr(A, mode="reduced"):  # noqa: N803
    return _Qr(*_C.linalg_qr(A, mode))


def eigh(A, UPLO="L"):  # noqa: N803
    return _Eigh(*_C.linalg_eigh(A, UPLO))


def eigvalsh(A, UPLO="L"):  # noqa: N803
    return _C.linalg_eigvalsh(A, UPLO)


def _check_svd_driver(driver):
    if driver is not None:  # PyTorch: cuSOLVER's drivers, accepted on CUDA only
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def svd(A, full_matrices=True, *, driver=None):  # noqa: N803
    _check_svd_driver(driver)
    return _Svd(*_C.linalg_svd(A, full_matrices))


def svdvals(A, *, driver=None):  # noqa: N803
    _check_svd_driver(driver)
    return _C.linalg_svdvals(A)


# ---------------------------------------------------------------- composed
def _eps(dtype):
    return 2.220446049250313e-16 if dtype == _C.dtype.float64 else 1.1920928955078125e-07


def _tolerance(S, smax, atol, rtol, m, n):  # noqa: N803
    """PyTorch's pinv/matrix_rank threshold: max(atol, rtol * largest singular
    value), rtol defaulting to eps * max(m, n) unless a non-zero atol is given."""
    atol_given = atol is not None and (lucid.is_tensor(atol) or atol != 0)
    if rtol is None:
        rtol = 0.0 if atol_given else _eps(S.dtype) * max(m, n)
    if atol is None:
        atol = 0.0
    # batch-shaped tolerances broadcast against the singular values' last dim
    atol, rtol = (t.unsqueeze(-1) if lucid.is_tensor(t) and t.ndim > 0 else t for t in (atol, rtol))
    tol = smax * rtol
    return F.maximum(tol, atol) if lucid.is_tensor(atol) else tol.clamp(min=atol)


def _check_float(A, op):  # noqa: N803
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype}")


def pinv(A, *, atol=None, rtol=None, hermitian=False, rcond=None):  # noqa: N803
    _check_float(A, "linalg.pinv")
    if rcond is not None:
        rtol = rcond
    m, n = A.shape[-2], A.shape[-1]
    # hermitian=True changes nothing computed here: a symmetric matrix's
    # singular values are its eigenvalues' magnitudes, and through the SVD the
    # derivative is PyTorch's pinv_backward (not one confined to symmetric A).
    U, S, Vh = svd(A, full_matrices=False)  # noqa: N806
    smax = S.narrow(-1, 0, 1) if S.shape[-1] else lucid.zeros_like(S.sum(-1, keepdim=True))
    tol = _tolerance(S, smax, atol, rtol, m, n)
    Sinv = F.where(S > tol, S.reciprocal(), lucid.zeros_like(S))  # noqa: N806
    return F.matmul(Vh.mT * Sinv.unsqueeze(-2), U.mT)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):  # noqa: N803
    _check_float(A, "linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    m, n = A.shape[-2], A.shape[-1]
    S = eigvalsh(A).abs() if hermitian else svdvals(A)  # noqa: N806
    if S.shape[-1] == 0:
        return lucid.zeros(S.shape[:-1], dtype=_C.dtype.int64)
    smax = S.amax(-1, keepdim=True)
    return (S > _tolerance(S, smax, atol, rtol, m, n)).sum(-1)


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares solution for full-rank A (QR of A, or of A^T for the
    minimum-norm solution of a wide A); `driver` picks which extra results are
    filled, as in PyTorch (residuals for tall A, not with 'gelsy'; rank but
    with 'gels'; singular values with 'gelsd'/'gelss')."""
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    if driver is None:
        driver = "gelsy"
    if driver not in drivers:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of {drivers}")
    _check_float(A, "torch.linalg.lstsq")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype} and other's dtype {B.dtype}")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B  # noqa: N806
    m, n = A.shape[-2], A.shape[-1]
    if Bm.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    batch = lucid.broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    A = A.expand(*batch, m, n)  # noqa: N806
    Bm = Bm.expand(*batch, m, Bm.shape[-1])  # noqa: N806
    if m >= n:
        Q, R = qr(A)  # noqa: N806
        X = solve_triangular(R, F.matmul(Q.mT, Bm), upper=True)  # noqa: N806
    else:
        Q, R = qr(A.mT)  # noqa: N806  A = R^T Q^T: X = Q R^-T B
        X = F.matmul(Q, solve_triangular(R.mT, Bm, upper=False))  # noqa: N806
    empty = lucid.zeros((0,), dtype=A.dtype)
    residuals = empty
    if m > n and driver != "gelsy":
        residuals = (F.matmul(A, X) - Bm).square().sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    rank = matrix_rank(A) if driver != "gels" else lucid.zeros((0,), dtype=_C.dtype.int64)
    singular_values = svdvals(A) if driver in ("gelsd", "gelss") else empty
    return _Lstsq(X.squeeze(-1) if vector else X, residuals, rank, singular_values)


def _square(A, op):  # noqa: N803
    _check_float(A, op) if op != "linalg.matrix_power" else None
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def matrix_power(A, n):  # noqa: N803
    """A^n by repeated squaring, multiplied in PyTorch's order; A^-n = (A^-1)^n."""
    _square(A, "linalg.matrix_power")
    if n == 0:
        return lucid.eye(A.shape[-1], dtype=A.dtype).expand(*A.shape).clone()
    if n < 0:
        A = inv(A)  # noqa: N806
        n = -n
    if n == 1:
        return A.clone()
    if n == 2:
        return F.matmul(A, A)
    if n == 3:
        return F.matmul(F.matmul(A, A), A)
    z = result = None
    while n > 0:
        z = A if z is None else F.matmul(z, z)
        if n & 1:
            result = z if result is None else F.matmul(result, z)
        n >>= 1
    return result


# Taylor degree and the 1-norm up to which it is accurate to the dtype's
# precision (Higham's scaling-and-squaring thresholds for degree 18).
_EXP_DEGREE = 18
_EXP_THETA = {_C.dtype.float32: 3.01, _C.dtype.float64: 1.09}
# Squarings a compiled step allows for (it cannot read the norms): enough for
# 1-norms up to theta * 2**40.
_EXP_TRACED_SQUARINGS = 40


def matrix_exp(A):  # noqa: N803
    """exp(A) by scaling and squaring a degree-18 Taylor polynomial, each
    matrix scaled by its own power of two, s = ceil(log2(|A|_1 / theta)).
    Squaring runs max(s) times over the batch, a matrix keeping its result
    once its own s is reached; eagerly max(s) is read once (a sync, as
    PyTorch's CPU kernel does), in a compiled step it is fixed at
    _EXP_TRACED_SQUARINGS (same values, more matmuls)."""
    _square(A, "linalg.matrix_exp")
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    if n == 1:
        return A.exp()
    theta = _EXP_THETA.get(A.dtype, 1.09)
    norm1 = A.detach().abs().sum(-2).amax(-1)  # the scaling is a constant of the derivative
    s = (norm1 / theta).log2().ceil().clamp(min=0).nan_to_num(0.0, posinf=0.0)
    if norm1.is_symbolic:
        squarings = _EXP_TRACED_SQUARINGS
    else:
        squarings = int(s.amax().item()) if s.numel() else 0
    X = A * s.neg().exp2().unsqueeze(-1).unsqueeze(-1)  # noqa: N806  (exact: a power of two)
    eye = lucid.eye(n, dtype=A.dtype)
    # Horner: I + X (I + X/2 (I + X/3 (...)))
    result = eye + X / _EXP_DEGREE
    for k in range(_EXP_DEGREE - 1, 0, -1):
        result = eye + F.matmul(X, result) / k
    for k in range(squarings):
        more = (s > k).unsqueeze(-1).unsqueeze(-1)
        result = F.where(more, F.matmul(result, result), result)
    return result


def cond(A, p=None):  # noqa: N803
    _check_float(A, "linalg.cond")
    if p is None or p in (2, -2):
        S = svdvals(A)  # noqa: N806
        first, last = S.narrow(-1, 0, 1).squeeze(-1), S.narrow(-1, S.shape[-1] - 1, 1).squeeze(-1)
        return last / first if p == -2 else first / last
    _square(A, "linalg.cond")
    return matrix_norm(A, p) * matrix_norm(inv_ex(A).inverse, p)


def multi_dot(tensors):
    """The chain of matmuls in the cheapest order (PyTorch's dynamic program);
    a 1-D first (last) tensor is a row (column) vector, removed at the end."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first_1d, last_1d = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_1d:
        mats[0] = mats[0].unsqueeze(0)
    if last_1d:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i, t in enumerate(mats):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].ndim}D")
    dims = [mats[0].shape[0]] + [t.shape[1] for t in mats]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def chain(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return F.matmul(chain(i, k), chain(k + 1, j))

    out = chain(0, n - 1)
    if first_1d and last_1d:
        return out.reshape(())
    if first_1d:
        return out.squeeze(0)
    if last_1d:
        return out.squeeze(-1)
    return out


def householder_product(A, tau):  # noqa: N803
    """Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i column i of A below
    its diagonal and 1 on it (LAPACK's orgqr), as matmuls."""
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if k > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    eye_m = lucid.eye(m, dtype=A.dtype)
    V = F.tril(A, -1) + lucid.eye(m, n, dtype=A.dtype)  # noqa: N806
    Q = eye_m.expand(*A.shape[:-2], m, m)  # noqa: N806
    for i in range(k):
        v = V.narrow(-1, i, 1)
        H = eye_m - tau.narrow(-1, i, 1).unsqueeze(-1) * F.matmul(v, v.mT)  # noqa: N806
        Q = F.matmul(Q, H)  # noqa: N806
    return Q.narrow(-1, 0, n)


def vander(x, N=None):  # noqa: N803
    """Columns x^0, x^1, ..., x^(N-1) (increasing powers), by a cumulative product."""
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        if n < 1:
            raise RuntimeError("N must be greater than 1.")
        return lucid.ones_like(x).unsqueeze(-1)
    if x.dtype == _C.dtype.bool:
        x = x.to(_C.dtype.int64)
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return F.cat([lucid.ones_like(x).unsqueeze(-1), powers], -1)


def tensorinv(A, ind=2):  # noqa: N803
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*in_shape, *out_shape)


def tensorsolve(A, B, dims=None):  # noqa: N803
    if dims is not None:
        nd = A.ndim
        dims = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        A = A.permute(*rest, *dims)  # noqa: N806
    result_shape = tuple(A.shape[B.ndim:])
    rows = B.numel()
    cols = math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(*result_shape)


# ------------------------------------------------------------------- norms
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if dtype is not None:
        x = _C.cast(x, to_dtype(dtype))
    return _C.norm(x, float(ord), as_dims(dim), keepdim)  # every order, the infinite ones and 0 too


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: N803
    if dtype is not None:
        A = _C.cast(A, to_dtype(dtype))  # noqa: N806
    if ord == "fro":
        return _C.norm(A, 2.0, list(dim), keepdim)
    if ord in (1, -1, float("inf"), float("-inf")):
        col, row = dim
        inner, outer = (row, col) if ord in (float("inf"), float("-inf")) else (col, row)
        sums = _C.sum(_C.abs(A), [inner], True, None)
        pick = _C.amax if ord > 0 else _C.amin
        out = pick(sums, [outer], True)
        return out if keepdim else _C.squeeze(out, sorted([d % A.ndim for d in dim]))
    if ord in (2, -2, "nuc"):
        # Of the singular values: the largest, the smallest, or their sum.
        rows, cols = (d % A.ndim for d in dim)
        S = svdvals(F.movedim(A, (rows, cols), (-2, -1)))  # noqa: N806
        out = S.sum(-1) if ord == "nuc" else (S.amax(-1) if ord == 2 else S.amin(-1))
        if keepdim:
            for d in sorted((rows, cols)):
                out = out.unsqueeze(d)
        return out
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: N803
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:  # 2-norm of the flattened dims (Frobenius for matrices)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if (dim is not None and len(dim) == 2) or (dim is None and A.ndim == 2):
        return matrix_norm(A, ord, dim or (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cross(input, other, *, dim=-1):  # noqa: A002
    return _composite.cross(input, other, dim)


def vecdot(x, y, *, dim=-1):
    return _C.sum(_C.mul(x, y), [dim], False, None)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    return _composite.diagonal(A, offset, dim1, dim2)


matmul = F.matmul


# ------------------------------------------- torch's top-level and Tensor forms
_Svd_old = _result("svd", ["U", "S", "V"])
_Qr_old = _result("qr", ["Q", "R"])
_TriangularSolve = _result("triangular_solve", ["solution", "cloned_coefficient"])


def _svd_old(input, some=True, compute_uv=True):  # noqa: A002
    """torch.svd: V rather than Vh; `some` is not full_matrices; without
    compute_uv, U and V are zeros of the full shapes."""
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        S = svdvals(input)  # noqa: N806
        return _Svd_old(lucid.zeros((*input.shape[:-2], m, m), dtype=input.dtype), S,
                        lucid.zeros((*input.shape[:-2], n, n), dtype=input.dtype))
    U, S, Vh = svd(input, full_matrices=not some)  # noqa: N806
    return _Svd_old(U, S, Vh.mT)


def _qr_old(input, some=True):  # noqa: A002
    return _Qr_old(*qr(input, "reduced" if some else "complete"))


def _cholesky_old(input, upper=False):  # noqa: A002
    return cholesky(input, upper=upper)


def _cholesky_solve(B, L, upper=False):  # noqa: N803
    """A X = B for A = L L^T (or U^T U): two triangular solves."""
    if upper:
        return solve_triangular(L, solve_triangular(L.mT, B, upper=False), upper=True)
    return solve_triangular(L.mT, solve_triangular(L, B, upper=False), upper=True)


def _cholesky_inverse(L, upper=False):  # noqa: N803
    eye = lucid.eye(L.shape[-1], dtype=L.dtype).expand(*L.shape)
    return _cholesky_solve(eye, L, upper)


def _triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803
    """torch.triangular_solve: op(A) X = b, and a copy of A."""
    X = solve_triangular(A.mT if transpose else A, b, upper=upper != transpose, unitriangular=unitriangular)  # noqa: N806
    return _TriangularSolve(X, A.clone())


def _lu_solve_old(b, LU_data, LU_pivots):  # noqa: N803
    return lu_solve(LU_data, LU_pivots, b)


def _lu_old(A, pivot=True, get_infos=False):  # noqa: N803
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)  # noqa: N806
    return (LU, pivots, info) if get_infos else (LU, pivots)


def _pinverse(input, rcond=1e-15):  # noqa: A002
    return pinv(input, rtol=rcond)


# name in lucid (and Tensor method) -> function
TOP_LEVEL = {"det": det, "logdet": _C.logdet, "slogdet": slogdet, "inverse": inv, "pinverse": _pinverse,
             "svd": _svd_old, "qr": _qr_old, "cholesky": _cholesky_old, "cholesky_solve": _cholesky_solve,
             "cholesky_inverse": _cholesky_inverse, "matrix_power": matrix_power, "matrix_exp": matrix_exp,
             "triangular_solve": _triangular_solve, "lu_solve": _lu_solve_old, "lu": _lu_old}
