"""lucid.linalg's decompositions and solvers against torch.linalg: values,
batches, float32/float64, gradients (float64, against torch's autograd),
second orders, errors, non-contiguous and empty inputs, and compiled steps."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.optim
from lucid.compile import fused_step

DTYPES = {"float32": (lucid.float32, torch.float32, 2e-4), "float64": (lucid.float64, torch.float64, 1e-10)}


def L(t):  # noqa: N802
    return lucid.tensor(t.detach().numpy())


def close(a, b, tol):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


def rand(*shape, dtype=torch.float64, seed=0):
    return torch.randn(tuple(shape), dtype=dtype, generator=torch.Generator().manual_seed(seed))


def well_conditioned(*shape, dtype=torch.float64, seed=0):
    n = shape[-1]
    return rand(*shape, dtype=dtype, seed=seed) + n * torch.eye(n, dtype=dtype)


def spd(*shape, dtype=torch.float64, seed=0):
    a = rand(*shape, dtype=dtype, seed=seed)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


def check_grad(lucid_fn, torch_fn, *inputs, tol=1e-8):
    """Gradients of sum(w_i * out_i) over the floating outputs, w random."""
    lt = [L(t).requires_grad_() for t in inputs]
    tt = [t.detach().clone().requires_grad_() for t in inputs]
    lo, to = lucid_fn(*lt), torch_fn(*tt)
    lo = lo if isinstance(lo, tuple) else (lo,)
    to = to if isinstance(to, tuple) else (to,)
    lsum = tsum = 0
    for i, (a, b) in enumerate(zip(lo, to)):
        if not b.dtype.is_floating_point or b.numel() == 0:
            continue
        w = rand(*b.shape, seed=100 + i)
        lsum = lsum + (a * L(w)).sum()
        tsum = tsum + (b * w).sum()
    lsum.backward()
    tsum.backward()
    for a, b in zip(lt, tt):
        close(a.grad, b.grad, tol)


# -------------------------------------------------------------------- values
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 2, 3, 3), (1, 1)])
def test_inv_det_slogdet_solve(dtype, shape):
    ld, td, tol = DTYPES[dtype]
    a = well_conditioned(*shape, dtype=td)
    a[..., 0, :] *= -1  # negative determinants too
    b = rand(*shape[:-1], 3, dtype=td, seed=1)
    close(lucid.linalg.inv(L(a)), torch.linalg.inv(a), tol)
    close(lucid.linalg.det(L(a)), torch.linalg.det(a), tol)
    sign, logabs = lucid.linalg.slogdet(L(a))
    ts, tl = torch.linalg.slogdet(a)
    close(sign, ts, 0)
    close(logabs, tl, tol)
    close(lucid.logdet(L(a.abs() + 5 * torch.eye(shape[-1], dtype=td))), torch.logdet(a.abs() + 5 * torch.eye(shape[-1], dtype=td)), tol)
    assert np.isnan(lucid.logdet(L(-torch.eye(3, dtype=td)[None].expand(1, 3, 3) * torch.tensor([1, 1, 1], dtype=td))).numpy()).all()
    close(lucid.linalg.solve(L(a), L(b)), torch.linalg.solve(a, b), tol)
    close(lucid.linalg.solve(L(a), L(b.mT), left=False), torch.linalg.solve(a, b.mT, left=False), tol)
    close(lucid.linalg.solve(L(a), L(b[..., 0])), torch.linalg.solve(a, b[..., 0]), tol)
    inverse, info = lucid.linalg.inv_ex(L(a))
    close(inverse, torch.linalg.inv(a), tol)
    assert info.dtype == lucid.int32 and (info.numpy() == 0).all() and info.shape == a.shape[:-2]


def test_solve_broadcasts_batches():
    a = well_conditioned(3, 1, 4, 4)
    b = rand(2, 4, 2, seed=1)
    close(lucid.linalg.solve(L(a), L(b)), torch.linalg.solve(a, b), 1e-10)
    close(lucid.linalg.solve(L(a[0, 0]), L(rand(5, 4, 2))), torch.linalg.solve(a[0, 0], rand(5, 4, 2)), 1e-10)
    check_grad(lucid.linalg.solve, torch.linalg.solve, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_eigh(dtype):
    ld, td, tol = DTYPES[dtype]
    s = spd(2, 5, 5, dtype=td)
    close(lucid.linalg.cholesky(L(s)), torch.linalg.cholesky(s), tol)
    close(lucid.linalg.cholesky(L(s), upper=True), torch.linalg.cholesky(s, upper=True), tol)
    close(lucid.linalg.cholesky_ex(L(s)).L, torch.linalg.cholesky_ex(s).L, tol)
    w, v = lucid.linalg.eigh(L(s))
    tw, tv = torch.linalg.eigh(s)
    close(w, tw, tol)
    close(v.abs(), tv.abs(), tol * 10)  # eigenvectors up to sign
    close(lucid.linalg.eigvalsh(L(s), UPLO="U"), torch.linalg.eigvalsh(s, UPLO="U"), tol)
    # only the named triangle is read
    garbage = s.clone()
    garbage[..., 0, 1:] = 100.0
    close(lucid.linalg.eigvalsh(L(garbage)), torch.linalg.eigvalsh(garbage), tol * 10)
    close(lucid.linalg.cholesky(L(garbage)), torch.linalg.cholesky(garbage), tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 6, 2)])
def test_qr_svd_lu(dtype, shape):
    ld, td, tol = DTYPES[dtype]
    m = rand(*shape, dtype=td)
    k = min(shape[-2:])
    for mode in ["reduced", "complete", "r"]:
        q, r = lucid.linalg.qr(L(m), mode)
        tq, tr = torch.linalg.qr(m, mode)
        close(q, tq, tol * 10)
        close(r, tr, tol * 10)
    u, s, vh = lucid.linalg.svd(L(m), full_matrices=False)
    tu, ts, tvh = torch.linalg.svd(m, full_matrices=False)
    close(s, ts, tol)
    close(lucid.linalg.svdvals(L(m)), ts, tol)
    close((u * s.unsqueeze(-2)) @ vh, m, tol * 10)
    close(u.abs(), tu.abs(), tol * 100)
    u, s, vh = lucid.linalg.svd(L(m))
    eye_m, eye_n = np.eye(shape[-2]), np.eye(shape[-1])
    np.testing.assert_allclose((u.mT @ u).numpy(), np.broadcast_to(eye_m, u.shape), atol=tol * 10)
    np.testing.assert_allclose((vh @ vh.mT).numpy(), np.broadcast_to(eye_n, vh.shape), atol=tol * 10)
    close(vh[..., :k, :].abs(), torch.linalg.svd(m)[2][..., :k, :].abs(), tol * 100)
    for got, want in zip(lucid.linalg.lu(L(m)), torch.linalg.lu(m)):
        close(got, want, tol * 10)
    lu, piv = lucid.linalg.lu_factor(L(m))
    tlu, tpiv = torch.linalg.lu_factor(m)
    close(lu, tlu, tol * 10)
    assert piv.dtype == lucid.int32 and (piv.numpy() == tpiv.numpy()).all()


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular(upper, left, unitriangular):
    a = well_conditioned(2, 4, 4)
    b = rand(2, 4, 3, seed=1) if left else rand(2, 3, 4, seed=1)
    kw = dict(upper=upper, left=left, unitriangular=unitriangular)
    close(lucid.linalg.solve_triangular(L(a), L(b), **kw), torch.linalg.solve_triangular(a, b, **kw), 1e-10)
    check_grad(lambda x, y: lucid.linalg.solve_triangular(x, y, **kw),
               lambda x, y: torch.linalg.solve_triangular(x, y, **kw), a, b)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(left, adjoint):
    a = well_conditioned(3, 4, 4)
    b = rand(3, 4, 2, seed=1) if left else rand(3, 2, 4, seed=1)
    lu, piv = torch.linalg.lu_factor(a)
    close(lucid.linalg.lu_solve(L(lu), L(piv), L(b), left=left, adjoint=adjoint),
          torch.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint), 1e-10)
    check_grad(lambda y: lucid.linalg.lu_solve(L(lu), L(piv), y, left=left, adjoint=adjoint),
               lambda y: torch.linalg.lu_solve(lu, piv, y, left=left, adjoint=adjoint), b)


# ----------------------------------------------------------------- gradients
GRAD_CASES = {
    "inv": (lambda m: m.linalg.inv, "square"),
    "det": (lambda m: m.linalg.det, "square"),
    "slogdet": (lambda m: m.linalg.slogdet, "square"),
    "cholesky": (lambda m: m.linalg.cholesky, "spd"),
    "cholesky_upper": (lambda m: lambda x: m.linalg.cholesky(x, upper=True), "spd"),
    "eigh": (lambda m: lambda x: (lambda w, v: (w, v * v, (v * w.unsqueeze(-2)) @ v.mT))(*m.linalg.eigh(x)), "spd"),
    "eigvalsh": (lambda m: m.linalg.eigvalsh, "spd"),
    "lu_factor": (lambda m: lambda x: m.linalg.lu_factor(x)[0], "square"),
    "lu": (lambda m: lambda x: m.linalg.lu(x)[1:], "square"),
    "matrix_power_neg": (lambda m: lambda x: m.linalg.matrix_power(x, -3), "square"),
    "matrix_exp": (lambda m: lambda x: m.linalg.matrix_exp(x / 4), "square"),
    "inverse_method": (lambda m: lambda x: x.inverse(), "square"),
    "cholesky_inverse": (lambda m: lambda x: m.cholesky_inverse(m.linalg.cholesky(x)), "spd"),
}
# sign-invariant functions of Q/R and U/S/V (their signs are a convention)
RECT_GRAD_CASES = {
    "qr": lambda m: lambda x: (lambda q, r: (q * r.diagonal(0, -2, -1).unsqueeze(-2), r * r.diagonal(0, -2, -1).unsqueeze(-1)))(*m.linalg.qr(x)),
    "svd": lambda m: lambda x: (lambda u, s, vh: ((u * s.unsqueeze(-2)) @ vh, s, u @ u.mT, vh.mT @ vh))(*m.linalg.svd(x, full_matrices=False)),
    "svd_full": lambda m: lambda x: (lambda u, s, vh: (s, u[..., :s.shape[-1]] @ vh[..., :s.shape[-1], :]))(*m.linalg.svd(x)),
    "svdvals": lambda m: m.linalg.svdvals,
    "pinv": lambda m: m.linalg.pinv,
    "lstsq": lambda m: lambda x: m.linalg.lstsq(x, x.sum(-1, keepdim=True) + 1).solution,
    "nuclear_norm": lambda m: lambda x: m.linalg.matrix_norm(x, "nuc"),
    "spectral_norm": lambda m: lambda x: m.linalg.matrix_norm(x, 2),
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradients_match_torch(name):
    fn, kind = GRAD_CASES[name]
    x = spd(2, 4, 4) if kind == "spd" else well_conditioned(2, 4, 4)
    check_grad(fn(lucid), fn(torch), x)


@pytest.mark.parametrize("name", RECT_GRAD_CASES)
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (4, 4)])
def test_rectangular_gradients_match_torch(name, shape):
    fn = RECT_GRAD_CASES[name]
    check_grad(fn(lucid), fn(torch), rand(*shape, seed=3), tol=1e-7)


def test_solve_gradients_match_torch():
    a, b = well_conditioned(3, 4, 4), rand(3, 4, 2, seed=1)
    check_grad(lucid.linalg.solve, torch.linalg.solve, a, b)
    check_grad(lambda x, y: lucid.linalg.solve(x, y, left=False), lambda x, y: torch.linalg.solve(x, y, left=False),
               a, b.mT)


@pytest.mark.parametrize("name", ["det", "inv", "slogdet", "solve", "cholesky"])
def test_second_order_matches_torch(name):
    def build(m):
        if name == "solve":
            return lambda x: m.linalg.solve(x, x.sum(-1, keepdim=True))
        if name == "slogdet":
            return lambda x: m.linalg.slogdet(x)[1]
        if name == "cholesky":
            return lambda x: m.linalg.cholesky(x @ x.mT + 4 * m.eye(4, dtype=x.dtype))
        return getattr(m.linalg, name)

    x = well_conditioned(2, 4, 4)
    w = rand(2, 4, 4, seed=7)
    lx, tx = L(x).requires_grad_(), x.clone().requires_grad_()
    outs = []
    for lib, xx in ((lucid, lx), (torch, tx)):
        y = build(lib)(xx)
        (g,) = (lucid if lib is lucid else torch).autograd.grad(y.sum(), xx, create_graph=True)
        (gg,) = (lucid if lib is lucid else torch).autograd.grad((g * (L(w) if lib is lucid else w)).sum(), xx)
        outs.append((g, gg))
    close(outs[0][0], outs[1][0], 1e-8)
    close(outs[0][1], outs[1][1], 1e-7)


# ---------------------------------------------------------------- composites
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_composed_functions(shape):
    m = rand(*shape)
    close(lucid.linalg.pinv(L(m)), torch.linalg.pinv(m), 1e-10)
    close(lucid.linalg.pinv(L(m), rtol=0.5), torch.linalg.pinv(m, rtol=0.5), 1e-10)
    close(lucid.linalg.matrix_rank(L(m)), torch.linalg.matrix_rank(m), 0)
    deficient = m[..., :1] * m[..., :1, :]  # rank 1
    close(lucid.linalg.matrix_rank(L(deficient)), torch.linalg.matrix_rank(deficient), 0)
    close(lucid.linalg.pinv(L(deficient)), torch.linalg.pinv(deficient), 1e-10)
    for o in [2, -2, "nuc", "fro", 1, -1, float("inf")]:
        close(lucid.linalg.matrix_norm(L(m), o), torch.linalg.matrix_norm(m, o), 1e-10)
        close(lucid.linalg.norm(L(m), o, dim=(-1, -2), keepdim=True),
              torch.linalg.norm(m, o, dim=(-1, -2), keepdim=True), 1e-10)
    close(lucid.linalg.cond(L(m)), torch.linalg.cond(m), 1e-9)
    for driver in ["gels", "gelsy", "gelsd", "gelss"]:
        b = rand(*shape[:-1], 2, seed=1)
        got, want = lucid.linalg.lstsq(L(m), L(b), driver=driver), torch.linalg.lstsq(m, b, driver=driver)
        for g, t in zip(got, want):
            close(g, t, 1e-9)


def test_more_composed_functions():
    a = well_conditioned(2, 4, 4)
    for p in [None, 2, -2, "fro", "nuc", 1, -1, float("inf"), float("-inf")]:
        close(lucid.linalg.cond(L(a), p), torch.linalg.cond(a, p), 1e-9)
    for n in [0, 1, 2, 3, 5, 8, -1, -2, -5]:
        close(lucid.linalg.matrix_power(L(a), n), torch.linalg.matrix_power(a, n), 1e-9)
        close(L(a).matrix_power(n), a.matrix_power(n), 1e-9)
    for scale in [0.01, 1.0, 30.0]:
        x = a * scale / 4
        x[0] *= 0.001  # each matrix of a batch scaled on its own
        close(lucid.linalg.matrix_exp(L(x)), torch.linalg.matrix_exp(x), 1e-10)
        close(lucid.linalg.matrix_exp(L(x).float()), torch.linalg.matrix_exp(x.float()), 1e-5)
    ms = [rand(3), rand(3, 6, seed=1), rand(6, 2, seed=2), rand(2, 5, seed=3), rand(5, seed=4)]
    close(lucid.linalg.multi_dot([L(t) for t in ms]), torch.linalg.multi_dot(ms), 1e-10)
    close(lucid.linalg.multi_dot([L(t) for t in ms[1:4]]), torch.linalg.multi_dot(ms[1:4]), 1e-10)
    h, tau = rand(5, 3), torch.rand(3, dtype=torch.float64)
    close(lucid.linalg.householder_product(L(h), L(tau)), torch.linalg.householder_product(h, tau), 1e-10)
    geqrf, tau = torch.geqrf(rand(2, 5, 3))
    close(lucid.linalg.householder_product(L(geqrf), L(tau)), torch.linalg.householder_product(geqrf, tau), 1e-10)
    x = rand(2, 4)
    close(lucid.linalg.vander(L(x)), torch.linalg.vander(x), 1e-12)
    close(lucid.linalg.vander(L(x), N=6), torch.linalg.vander(x, N=6), 1e-12)
    close(lucid.linalg.vander(lucid.tensor([1, 2, 3])), torch.linalg.vander(torch.tensor([1, 2, 3])), 0)
    t = well_conditioned(24, 24).reshape(4, 6, 8, 3)
    close(lucid.linalg.tensorinv(L(t)), torch.linalg.tensorinv(t), 1e-10)
    b = rand(4, 6, seed=5)
    close(lucid.linalg.tensorsolve(L(t), L(b)), torch.linalg.tensorsolve(t, b), 1e-10)
    t2 = well_conditioned(6, 6).reshape(6, 2, 3)
    close(lucid.linalg.tensorsolve(L(t2), L(rand(2, 3)), dims=(0,)), torch.linalg.tensorsolve(t2, rand(2, 3), dims=(0,)),
          1e-10)


def test_top_level_and_method_forms():
    s = spd(2, 4, 4)
    b = rand(2, 4, 3, seed=1)
    chol = torch.linalg.cholesky(s)
    ls, lb, lchol = L(s), L(b), L(chol)
    close(lucid.cholesky_solve(lb, lchol), torch.cholesky_solve(b, chol), 1e-10)
    close(lucid.cholesky_solve(lb, lchol.mT, upper=True), torch.cholesky_solve(b, chol.mT, upper=True), 1e-10)
    close(lucid.cholesky_inverse(lchol), torch.cholesky_inverse(chol), 1e-10)
    close(lchol.cholesky_inverse(), chol.cholesky_inverse(), 1e-10)
    close(lucid.cholesky(ls), torch.cholesky(s), 1e-10)
    close(ls.det(), s.det(), 1e-10)
    close(ls.logdet(), s.logdet(), 1e-10)
    close(ls.slogdet()[1], s.slogdet()[1], 1e-10)
    close(ls.inverse(), s.inverse(), 1e-10)
    close(lucid.inverse(ls), torch.inverse(s), 1e-10)
    close(ls.pinverse(), s.pinverse(), 1e-10)
    close(ls.matrix_exp(), s.matrix_exp(), 1e-8)
    with torch.no_grad():
        for upper in (True, False):
            for transpose in (True, False):
                tri = torch.triu(s) if upper else torch.tril(s)
                got = lucid.triangular_solve(lb, L(tri), upper=upper, transpose=transpose)
                want = torch.triangular_solve(b, tri, upper=upper, transpose=transpose)
                close(got.solution, want.solution, 1e-10)
                close(got.cloned_coefficient, want.cloned_coefficient, 0)
    m = rand(5, 3)
    u, sv, v = lucid.svd(L(m))
    tu, tsv, tv = torch.svd(m)
    close(sv, tsv, 1e-10)
    close(v.abs(), tv.abs(), 1e-8)
    close((u * sv) @ v.mT, m, 1e-10)
    assert lucid.svd(L(m), some=False).U.shape == torch.svd(m, some=False).U.shape
    _, sv0, v0 = lucid.svd(L(m), compute_uv=False)
    close(v0, torch.svd(m, compute_uv=False).V, 0)
    q, r = lucid.qr(L(m), some=False)
    tq, tr = torch.qr(m, some=False)
    close(q, tq, 1e-10)
    close(L(m).qr().R, m.qr().R, 1e-10)
    lu, piv = torch.linalg.lu_factor(s)
    close(lucid.lu_solve(lb, L(lu), L(piv)), torch.lu_solve(b, lu, piv), 1e-10)
    close(lucid.lu(ls)[0], torch.linalg.lu_factor(s)[0], 1e-10)
    close(lucid.matrix_power(ls, 3), torch.matrix_power(s, 3), 1e-9)


# -------------------------------------------------------------------- errors
def _raises_like(lucid_call, torch_call, kind=None):
    with pytest.raises(Exception) as te:
        torch_call()
    with pytest.raises(Exception) as le:
        lucid_call()
    assert str(le.value) == str(te.value), (str(le.value), str(te.value))
    if kind is not None:
        assert isinstance(le.value, kind)
    assert isinstance(le.value, RuntimeError)


def test_singular_and_not_positive_definite_raise_linalg_error():
    assert issubclass(lucid.linalg.LinAlgError, RuntimeError)
    assert lucid.linalg.LinAlgError.__name__ == "LinAlgError"
    z, zb = torch.zeros(3, 3), torch.zeros(2, 3, 3)
    err = lucid.linalg.LinAlgError
    _raises_like(lambda: lucid.linalg.inv(L(z)), lambda: torch.linalg.inv(z), err)
    _raises_like(lambda: lucid.linalg.inv(L(zb)), lambda: torch.linalg.inv(zb), err)
    _raises_like(lambda: lucid.linalg.solve(L(z), lucid.ones(3)), lambda: torch.linalg.solve(z, torch.ones(3)), err)
    _raises_like(lambda: lucid.linalg.solve(L(zb), lucid.ones(3)), lambda: torch.linalg.solve(zb, torch.ones(3)), err)
    neg = -torch.eye(3).expand(2, 3, 3)
    _raises_like(lambda: lucid.linalg.cholesky(L(neg)), lambda: torch.linalg.cholesky(neg), err)
    _raises_like(lambda: lucid.linalg.cholesky(L(neg[0])), lambda: torch.linalg.cholesky(neg[0]), err)
    _raises_like(lambda: lucid.linalg.lu_factor(L(z)), lambda: torch.linalg.lu_factor(z))
    # the _ex forms report instead
    assert lucid.linalg.inv_ex(L(zb)).info.numpy().tolist() == torch.linalg.inv_ex(zb).info.tolist()
    assert lucid.linalg.cholesky_ex(L(neg)).info.numpy().tolist() == torch.linalg.cholesky_ex(neg).info.tolist()
    assert lucid.linalg.solve_ex(L(zb), lucid.ones(3)).info.numpy().tolist() == [1, 1]
    assert lucid.linalg.lu_factor_ex(L(z)).info.item() == torch.linalg.lu_factor_ex(z).info.item()
    # singular matrices: det 0, slogdet (0, -inf)
    assert lucid.linalg.det(L(z)).item() == 0
    sign, logabs = lucid.linalg.slogdet(L(z))
    assert sign.item() == 0 and logabs.item() == float("-inf")


def test_bad_arguments_raise_like_torch():
    rect, vec = torch.zeros(2, 3), torch.zeros(3)
    for name in ["inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh"]:
        _raises_like(lambda: getattr(lucid.linalg, name)(L(rect)), lambda: getattr(torch.linalg, name)(rect))
    for name in ["inv", "svd", "qr", "svdvals", "lu_factor"]:
        _raises_like(lambda: getattr(lucid.linalg, name)(L(vec)), lambda: getattr(torch.linalg, name)(vec))
    ints = torch.zeros(3, 3, dtype=torch.long)
    _raises_like(lambda: lucid.linalg.inv(L(ints)), lambda: torch.linalg.inv(ints))
    _raises_like(lambda: lucid.linalg.solve(lucid.eye(3), lucid.ones(4)), lambda: torch.linalg.solve(torch.eye(3), torch.ones(4)))
    _raises_like(lambda: lucid.linalg.solve_triangular(lucid.eye(3), lucid.ones(4, 1), upper=True),
                 lambda: torch.linalg.solve_triangular(torch.eye(3), torch.ones(4, 1), upper=True))
    with pytest.raises(RuntimeError, match="mode"):
        lucid.linalg.qr(lucid.ones(3, 3), mode="bogus")
    with pytest.raises(RuntimeError, match="UPLO"):
        lucid.linalg.eigh(lucid.eye(3), UPLO="X")
    with pytest.raises(RuntimeError, match="mode='r'"):
        x = lucid.ones(3, 3, requires_grad=True)
        lucid.linalg.qr(x * 2 + lucid.eye(3), mode="r")[1].sum().backward()


# ------------------------------------------------------ layouts and shapes
def test_non_contiguous_inputs():
    base = well_conditioned(4, 4, 4).permute(2, 0, 1)  # a permuted batch
    tb = base.mT
    lb = L(base.contiguous()).mT
    assert not lb.is_contiguous()
    close(lucid.linalg.inv(lb), torch.linalg.inv(tb), 1e-10)
    close(lucid.linalg.det(lb), torch.linalg.det(tb), 1e-10)
    close(lucid.linalg.solve(lb, lb[..., :2]), torch.linalg.solve(tb, tb[..., :2]), 1e-10)
    close(lucid.linalg.svdvals(lb[:, ::2]), torch.linalg.svdvals(tb[:, ::2]), 1e-10)
    close(lucid.linalg.qr(lb[..., 1:])[1].abs(), torch.linalg.qr(tb[..., 1:])[1].abs(), 1e-10)
    s = spd(4, 4)
    close(lucid.linalg.cholesky(L(s).t()), torch.linalg.cholesky(s.t()), 1e-10)
    check_grad(lambda x: lucid.linalg.inv(x.mT), lambda x: torch.linalg.inv(x.mT), base)


def test_empty_batches_and_matrices():
    for shape in [(0, 3, 3), (2, 0, 0), (0, 0)]:
        a = torch.zeros(shape, dtype=torch.float64)
        close(lucid.linalg.inv(L(a)), torch.linalg.inv(a), 0)
        close(lucid.linalg.det(L(a)), torch.linalg.det(a), 0)
        close(lucid.linalg.cholesky(L(a)), torch.linalg.cholesky(a), 0)
        close(lucid.linalg.eigvalsh(L(a)), torch.linalg.eigvalsh(a), 0)
        close(lucid.linalg.svdvals(L(a)), torch.linalg.svdvals(a), 0)
        close(lucid.linalg.solve(L(a), L(a)), torch.linalg.solve(a, a), 0)
    wide = torch.zeros(0, 3, dtype=torch.float64)
    for got, want in zip(lucid.linalg.svd(L(wide)), torch.linalg.svd(wide)):
        close(got, want, 0)
    for got, want in zip(lucid.linalg.qr(L(wide), "complete"), torch.linalg.qr(wide, "complete")):
        close(got, want, 0)


# ---------------------------------------------------- compiled steps, devices
class _Whitened(nn.Module):
    """A model whose forward solves with, and takes the log-determinant of, an SPD matrix made from its weight."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(lucid.randn(4, 4) * 0.3)

    def forward(self, x):
        a = self.w @ self.w.mT + 2 * lucid.eye(4)
        sign, logabs = lucid.linalg.slogdet(a)
        y = lucid.linalg.solve(a, x.mT).mT
        chol = lucid.linalg.cholesky(a)
        q, r = lucid.linalg.qr(a)
        spectral = lucid.linalg.eigvalsh(a).sum() * 0.1 + lucid.linalg.svdvals(a).amax() * 0.1
        triangular = (chol.diagonal() * r.diagonal().abs()).sum() * 0.01
        return y.sum(-1) + logabs + spectral + triangular + lucid.linalg.matrix_exp(self.w).diagonal().sum() * 0.01


def test_fused_step_equals_eager():
    lucid.manual_seed(0)
    eager = _Whitened()
    lucid.manual_seed(0)
    compiled = _Whitened()
    opt_e = lucid.optim.SGD(eager.parameters(), lr=0.05)
    opt_c = lucid.optim.SGD(compiled.parameters(), lr=0.05)
    step = fused_step(compiled, lucid.nn.functional.mse_loss, opt_c)
    for i in range(3):
        x, y = lucid.randn(6, 4), lucid.randn(6)
        opt_e.zero_grad()
        le = lucid.nn.functional.mse_loss(eager(x), y)
        le.backward()
        opt_e.step()
        lc = step(x, y)
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    np.testing.assert_allclose(compiled.w.detach().numpy(), eager.w.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_metal_raises_not_implemented_naming_the_op():
    if not lucid.backends.mps.is_available():
        pytest.skip("no metal device")
    with pytest.raises(NotImplementedError, match="inverse.*metal"):
        lucid.linalg.inv(lucid.eye(3).to("metal"))


def test_det_gradient_at_singular_matrices():
    """At a singular matrix the derivative of det is the adjugate, through the
    SVD: PyTorch's value when the backward records history. (Its first-order
    backward without create_graph gives 0 at an exactly zero determinant.)"""
    cases = [torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64),
             torch.arange(9, dtype=torch.float64).reshape(3, 3), torch.zeros(3, 3, dtype=torch.float64),
             torch.stack([well_conditioned(3, 3), torch.arange(9, dtype=torch.float64).reshape(3, 3)])]
    for a in cases:
        la, ta = L(a).requires_grad_(), a.clone().requires_grad_()
        (g,) = lucid.autograd.grad(lucid.linalg.det(la).sum(), la, create_graph=True)
        (tg,) = torch.autograd.grad(torch.linalg.det(ta).sum(), ta, create_graph=True)
        close(g, tg, 1e-10)
        assert np.isfinite(g.detach().numpy()).all()
