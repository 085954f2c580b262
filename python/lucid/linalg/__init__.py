"""lucid.linalg: the norms of torch.linalg (composed of ops, so they
differentiate and trace). Decompositions and solvers (inv, det, solve, svd,
qr, eigh, cholesky) are not supported yet."""
from .. import _C
from .. import _composite
from .. import _functions as F
from .._utils import as_dims, to_dtype

__all__ = ["norm", "vector_norm", "matrix_norm", "cross", "vecdot", "diagonal", "matmul"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if dtype is not None:
        x = _C.cast(x, to_dtype(dtype))
    dims = as_dims(dim)
    if ord == float("inf"):
        return _C.amax(_C.abs(x), dims, keepdim)
    if ord == float("-inf"):
        return _C.amin(_C.abs(x), dims, keepdim)
    if ord == 0:
        return _C.sum(_C.cast(_C.ne(x, 0), x.dtype), dims, keepdim, None)
    return _C.norm(x, float(ord), dims, keepdim)


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
    raise NotImplementedError(f"matrix_norm(ord={ord!r}) is not supported by lucid (it needs singular values)")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: N803
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:  # 2-norm of the flattened dims (Frobenius for matrices)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if (dim is not None and len(dim) == 2) or (dim is None and A.ndim == 2 and isinstance(ord, str)):
        return matrix_norm(A, ord, dim or (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cross(input, other, *, dim=-1):  # noqa: A002
    return _composite.cross(input, other, dim)


def vecdot(x, y, *, dim=-1):
    return _C.sum(_C.mul(x, y), [dim], False, None)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    return _composite.diagonal(A, offset, dim1, dim2)


matmul = F.matmul
