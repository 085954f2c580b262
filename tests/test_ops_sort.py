"""Sorting and scans (sort, argsort, msort, topk, nonzero, cumsum, cumprod)
against PyTorch: values, indices, gradients, stability, ties, NaN order,
descending, every dim and dtype, and their use inside compiled steps."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim
from lucid.compile import fused_step, make_step
from conftest import FLOAT_DTYPES, LUCID_TO_TORCH, assert_close, check, gradcheck, rnd, to_lucid, to_torch

ALL_DTYPES = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
NAN, INF = float("nan"), float("inf")


def _tensor(lib, arr, dtype):
    t = torch.from_numpy(np.array(arr)) if lib is torch else lucid.tensor(np.array(arr))
    return t.to(torch.bfloat16 if lib is torch else lucid.bfloat16) if dtype == "bfloat16" else t


def _with_ties(shape, dtype, seed=0):
    """Few distinct values, so most elements tie; NaN and infinities among the floats."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    x = rng.integers(-3, 4, size=shape)
    if dtype in ("int32", "int64"):
        return x.astype(dtype)
    x = x.astype("float64") * 0.5
    flat = x.reshape(-1)
    if flat.size >= 6:
        flat[rng.choice(flat.size, 3, replace=False)] = [NAN, INF, -INF]
        flat[rng.integers(flat.size)] = -0.0
    return x.astype("float32" if dtype == "bfloat16" else dtype)


SHAPES_DIMS = [((7,), 0), ((7,), -1), ((4, 6), 0), ((4, 6), 1), ((3, 4, 5), 1), ((3, 4, 5), -1), ((2, 3, 4, 5), 2),
               ((0,), 0), ((3, 0), 1), ((3, 0), 0), ((1, 5), 0), ((5, 1), 1)]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch_stable(dtype, shape, dim, descending):
    x = _with_ties(shape, dtype)
    lv, li = lucid.sort(_tensor(lucid, x, dtype), dim=dim, descending=descending, stable=True)
    tv, ti = torch.sort(_tensor(torch, x, dtype), dim=dim, descending=descending, stable=True)
    assert_close(lv, tv)
    assert_close(li, ti)  # stable: the exact permutation, NaNs and ties included
    assert_close(lucid.argsort(_tensor(lucid, x, dtype), dim=dim, descending=descending, stable=True),
                 torch.argsort(_tensor(torch, x, dtype), dim=dim, descending=descending, stable=True))


def test_sort_nan_order_and_signed_zero():
    x = np.array([2.0, NAN, 1.0, -INF, 2.0, NAN, -0.0, 0.0, INF], "float32")
    for desc in (False, True):
        lv, li = lucid.tensor(x).sort(descending=desc, stable=True)
        tv, ti = torch.from_numpy(x).sort(descending=desc, stable=True)
        assert_close(lv, tv)
        assert_close(li, ti)


def test_sort_unstable_is_a_valid_sort():
    x = _with_ties((5, 9), "float32", seed=3)
    lv, li = lucid.sort(lucid.tensor(x), 1)
    tv, _ = torch.sort(torch.from_numpy(x), 1)
    assert_close(lv, tv)
    assert_close(lucid.gather(lucid.tensor(x), 1, li), tv)


def test_sort_zero_dim_and_bad_dims():
    lv, li = lucid.sort(lucid.tensor(3.0))
    assert lv.item() == 3.0 and li.item() == 0 and li.dtype == lucid.int64 and li.ndim == 0
    for fn in (lambda m, x: m.sort(x, 2), lambda m, x: m.sort(x, -3), lambda m, x: m.argsort(x, 5),
               lambda m, x: m.topk(x, 1, 2), lambda m, x: m.cumsum(x, 4), lambda m, x: m.cumsum(x, -7),
               lambda m, x: m.cumprod(x, 2)):
        with pytest.raises(IndexError) as t_err:
            fn(torch, torch.ones(2, 3))
        with pytest.raises(IndexError, match="out of range") as l_err:
            fn(lucid, lucid.ones(2, 3))
        assert str(t_err.value).lower().split("(")[0] == str(l_err.value).lower().split("(")[0]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_gradient(dtype, descending):
    check(lambda m, x: m.sort(x, 1, descending=descending)[0], rnd(4, 6, seed=2), dtypes=[dtype])
    check(lambda m, x: m.sort(x, 0, descending=descending)[0] * 2, rnd(4, 6, seed=3), dtypes=[dtype])


def test_sort_gradient_finite_differences():
    gradcheck(lambda x: lucid.sort(x, 1)[0] * lucid.arange(5).double(), rnd(3, 5, dtype="float64"))
    gradcheck(lambda x: lucid.topk(x, 2, 0)[0], rnd(4, 3, dtype="float64"))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bool"])
@pytest.mark.parametrize("shape,dim", [s for s in SHAPES_DIMS if 0 not in s[0]])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_and_indices(dtype, shape, dim, largest):
    x = _with_ties(shape, dtype, seed=5)
    n = shape[dim]
    for k in sorted({0, 1, n // 2, n}):
        lv, li = lucid.topk(_tensor(lucid, x, dtype), k, dim=dim, largest=largest)
        tv, ti = torch.topk(_tensor(torch, x, dtype), k, dim=dim, largest=largest)
        assert_close(lv, tv)
        # PyTorch leaves the order of ties open; Lucid takes the lower index
        # first, which must pick the same values.
        assert li.dtype == lucid.int64 and tuple(li.shape) == tuple(ti.shape)
        assert_close(lucid.gather(_tensor(lucid, x, dtype), dim, li), tv)
        ref = torch.sort(_tensor(torch, x, dtype), dim=dim, descending=largest, stable=True)[1]
        assert_close(li, ref.narrow(dim if dim >= 0 else dim + len(shape), 0, k))


def test_topk_errors_and_edges():
    for k in (-1, 4):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            torch.topk(torch.ones(3), k)
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            lucid.topk(lucid.ones(3), k)
    with pytest.raises(RuntimeError):
        torch.topk(torch.ones(3, dtype=torch.bool), 1)
    with pytest.raises(RuntimeError, match="bool"):
        lucid.topk(lucid.ones(3, dtype=lucid.bool), 1)
    v, i = lucid.topk(lucid.tensor(3.0), 1)
    assert v.item() == 3.0 and i.item() == 0
    v, i = lucid.ones(3).topk(0)
    assert tuple(v.shape) == (0,) and i.dtype == lucid.int64
    # sorted=False is answered sorted (a valid order)
    x = rnd(10, seed=1)
    assert_close(lucid.topk(lucid.tensor(x), 4, sorted=False)[0], torch.topk(torch.from_numpy(x), 4)[0])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_gradient(dtype, largest):
    check(lambda m, x: m.topk(x, 3, 1, largest=largest)[0], rnd(4, 7, seed=4), dtypes=[dtype])
    check(lambda m, x: m.topk(x, 2, 0, largest=largest).values.sum(), rnd(5, 3, seed=6), dtypes=[dtype])


def test_msort():
    x = _with_ties((5, 4), "float32")
    assert_close(lucid.msort(lucid.tensor(x)), torch.msort(torch.from_numpy(x)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (6,), (3, 4), (2, 0, 3), (2, 3, 4), (1, 1)])
def test_nonzero(dtype, shape):
    x = _with_ties(shape, dtype, seed=7) if shape else np.array(_with_ties((1,), dtype, seed=7)[0])
    assert_close(lucid.nonzero(_tensor(lucid, x, dtype)), torch.nonzero(_tensor(torch, x, dtype)))
    assert_close(_tensor(lucid, x, dtype).nonzero(as_tuple=True), torch.nonzero(_tensor(torch, x, dtype), as_tuple=True))
    if dtype == "bool":
        assert_close(lucid.where(_tensor(lucid, x, dtype)), torch.where(_tensor(torch, x, dtype)))


def test_nonzero_zero_dim_and_nan():
    for v in (0.0, 5.0, NAN):
        assert_close(lucid.nonzero(lucid.tensor(v)), torch.nonzero(torch.tensor(v)))
        assert_close(lucid.nonzero(lucid.tensor(v), as_tuple=True), torch.nonzero(torch.tensor(v), as_tuple=True))
    x = np.array([NAN, 0.0, -0.0, 1.0], "float32")
    assert_close(lucid.nonzero(lucid.tensor(x)), torch.nonzero(torch.from_numpy(x)))


def _scan_input(shape, dtype, seed=0):
    if dtype in ("int32", "int64", "bool"):
        return rnd(*shape, dtype=dtype, seed=seed)
    return rnd(*shape, dtype=dtype, low=0.5, high=1.5, seed=seed)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((4, 6), 0), ((4, 6), -1), ((3, 4, 5), 1), ((2, 300, 3), 1),
                                       ((2, 3, 700), 2), ((0,), 0), ((3, 0), 0), ((3, 0), 1)])
def test_scan_values(op, dtype, shape, dim):
    x = _scan_input(shape, dtype)
    check(lambda m, t: getattr(m, op)(t, dim), x, dtypes=[dtype], grad=False)
    check(lambda m, t: getattr(t, op)(dim), x, dtypes=[dtype], grad=False)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_zero_dim_and_dtype_argument(op):
    for v in (3, 2.5, True):
        check(lambda m, t: getattr(m, op)(t, 0), np.array(v), grad=False)
        check(lambda m, t: getattr(m, op)(t, -1), np.array(v), grad=False)
    for dt in ("float32", "float64", "int32", "int64", "float16"):
        check(lambda m, t: getattr(m, op)(t, 1, dtype=getattr(m, dt)), rnd(3, 4, dtype="int64", seed=1), grad=False)
        check(lambda m, t: getattr(m, op)(t, 0, dtype=getattr(m, dt)), rnd(3, 4, low=0.5, high=1.5), grad=False)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_integer_overflow_wraps(op):
    big = np.array([2**62, 2**62, 3, -(2**63)], "int64")
    check(lambda m, t: getattr(m, op)(t, 0), big, grad=False)
    i32 = np.array([2**30, 2**30, 7, -(2**31)], "int32")
    check(lambda m, t: getattr(m, op)(t, 0, dtype=m.int32), i32, grad=False)


def test_cumsum_accumulates_like_torch():
    # float32 sums accumulate in double on PyTorch's CPU: the bits agree.
    x = rnd(100000, dtype="float32", seed=9)
    assert np.array_equal(lucid.cumsum(lucid.tensor(x), 0).numpy(), torch.cumsum(torch.from_numpy(x), 0).numpy())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((4, 6), 0), ((4, 6), 1), ((3, 4, 5), 1)])
def test_scan_gradients(dtype, shape, dim):
    check(lambda m, t: m.cumsum(t, dim), rnd(*shape, seed=1), dtypes=[dtype])
    check(lambda m, t: m.cumprod(t, dim), rnd(*shape, low=0.5, high=1.5, seed=2), dtypes=[dtype])


@pytest.mark.parametrize("zeros", [[0], [3], [0, 4], [2, 5], [6], [1, 2, 3]])
def test_cumprod_gradient_with_zeros(zeros):
    x = rnd(2, 7, low=0.5, high=2.0, dtype="float64", seed=4)
    x[:, zeros] = 0.0
    check(lambda m, t: m.cumprod(t, 1), x)
    check(lambda m, t: m.cumprod(t, 0), x.T.copy())
    gradcheck(lambda t: lucid.cumprod(t, 1), x)


def test_scan_gradient_finite_differences():
    gradcheck(lambda t: lucid.cumsum(t, 0), rnd(6, 3, dtype="float64"))
    gradcheck(lambda t: lucid.cumprod(t, 1), rnd(3, 6, dtype="float64", low=0.5, high=1.5))


def test_sort_topk_cumsum_trace_into_a_compiled_step():
    """Each op's gradient is written with ops, so a step using them compiles
    and matches the eager loop."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)

        def forward(self, x):
            h = self.lin(x)
            s = lucid.sort(h, dim=1, descending=True)[0]
            t = lucid.topk(h, 3, dim=1)[0].sum(1, keepdim=True)
            return lucid.cumsum(s, 1) * 0.1 + lucid.cumprod(lucid.sigmoid(h), 1) + t

    rng = np.random.default_rng(0)
    xs = [lucid.tensor(rng.standard_normal((8, 6)).astype("float32")) for _ in range(3)]
    ys = [lucid.tensor(rng.standard_normal((8, 6)).astype("float32")) for _ in range(3)]
    lucid.manual_seed(0)
    eager = Net()
    lucid.manual_seed(0)
    compiled = Net()
    opt_e = lucid.optim.SGD(eager.parameters(), lr=0.1)
    opt_c = lucid.optim.SGD(compiled.parameters(), lr=0.1)
    step = fused_step(compiled, F.mse_loss, opt_c)
    for x, y in zip(xs, ys):
        opt_e.zero_grad()
        le = F.mse_loss(eager(x), y)
        le.backward()
        opt_e.step()
        lc = step(x, y)
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    for pe, pc in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_nonzero_refuses_to_trace():
    model = nn.Linear(3, 3)
    step = make_step(model, lambda out, y: (lucid.nonzero(out).float().sum() + out.sum()))
    with pytest.raises(RuntimeError, match="nonzero"):
        step(lucid.ones(2, 3), lucid.ones(2, 3))


def test_sort_of_a_large_line_and_many_lines():
    x = rnd(3, 5000, seed=11)
    assert_close(lucid.sort(lucid.tensor(x), 1, descending=True)[1],
                 torch.sort(torch.from_numpy(x), dim=1, descending=True, stable=True)[1])
    y = rnd(2000, 3, seed=12)
    assert_close(lucid.sort(lucid.tensor(y), 0)[1], torch.sort(torch.from_numpy(y), dim=0, stable=True)[1])
    assert_close(lucid.cumsum(lucid.tensor(y), 0), torch.cumsum(torch.from_numpy(y), 0))
