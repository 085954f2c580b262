"""Reductions, matmul and softmax against PyTorch: dim/keepdim variants,
dtypes, gradients (ties included), numerical stability and errors."""
import numpy as np
import pytest
import torch

import lucid
from conftest import assert_close, check, gradcheck, rnd

DIMS = [None, 0, 1, -1, (0, 2), (-1, 0), (0, 1, 2), ()]
KEEP = [False, True]


def _dim_args(dim, keepdim):
    return {} if dim is None else {"dim": dim, "keepdim": keepdim}


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "amax", "amin", "logsumexp", "norm"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", KEEP)
def test_reduce_dims(name, dim, keepdim):
    if name == "logsumexp" and dim is None:
        dim = (0, 1, 2)
    if name == "prod" and not (dim is None or isinstance(dim, int)):
        dim = 1  # torch.prod takes a single dim
    if dim == () and name in ("amax", "amin", "logsumexp", "prod", "norm"):
        dim = -1  # torch differs between these on dim=(); sum/mean cover it
    if name == "norm" and isinstance(dim, tuple) and len(dim) > 2:
        dim = (0, 2)  # torch.norm takes at most two dims
    x = rnd(3, 4, 5, seed=1)
    if name == "prod":
        x = np.abs(x) * 0.5 + 0.75
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    check(lambda m, a: getattr(m, name)(a, **kw), x, rtol=1e-5)
    check(lambda m, a: getattr(a, name)(**kw), x, rtol=1e-5)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), (0, 1, 2)])
@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("keepdim", KEEP)
def test_var_std(name, dim, correction, keepdim):
    x = rnd(3, 4, 5, seed=2)
    check(lambda m, a: getattr(m, name)(a, dim=dim, correction=correction, keepdim=keepdim), x, rtol=1e-5)


def test_var_std_unbiased_flag():
    x = rnd(4, 6, seed=3)
    check(lambda m, a: a.var(1, unbiased=False), x, rtol=1e-5)
    check(lambda m, a: a.std(unbiased=True), x, rtol=1e-5)
    check(lambda m, a: m.var(a, 0, True, True), x, rtol=1e-5)
    check(lambda m, a: m.var_mean(a, 1), x, rtol=1e-5)
    check(lambda m, a: m.std_mean(a, 0, keepdim=True), x, rtol=1e-5)


def test_var_single_element_is_nan_like_torch():
    x = rnd(1, 3, seed=4)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda m, a: m.var(a, 0), x, grad=False)
        check(lambda m, a: m.std(a, 0), x, grad=False)


@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 0), (0, 3)])
def test_sum_mean_prod_edge_shapes(shape):
    x = rnd(*shape, seed=5)
    check(lambda m, a: m.sum(a), x)
    check(lambda m, a: m.prod(a), x)
    if len(shape) == 2:
        check(lambda m, a: m.sum(a, 0), x)
        check(lambda m, a: m.sum(a, 1, keepdim=True), x)
        check(lambda m, a: m.prod(a, 0), x)
        check(lambda m, a: m.amax(a, 1) if shape[1] else m.amax(a, 0), x) if 0 not in shape else None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if 0 not in shape:
            check(lambda m, a: m.mean(a), x)


def test_zero_dim_reductions():
    x = rnd(seed=6)
    for name in ["sum", "mean", "prod", "amax", "amin", "norm"]:
        check(lambda m, a: getattr(m, name)(a), x)
    check(lambda m, a: m.sum(a, 0), x)
    check(lambda m, a: m.sum(a, -1, keepdim=True), x)
    check(lambda m, a: m.logsumexp(a, 0), x)
    check(lambda m, a: m.max(a, 0), x)
    check(lambda m, a: m.argmax(a, 0), x, grad=False)
    check(lambda m, a: m.argmax(a), x, grad=False)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_integer_reductions(dtype):
    x = rnd(3, 4, dtype=dtype, seed=7)
    check(lambda m, a: m.sum(a), x, grad=False)
    check(lambda m, a: m.sum(a, 1), x, grad=False)
    check(lambda m, a: m.prod(a, 0), x, grad=False)
    check(lambda m, a: m.sum(a, dtype=m.float64), x, grad=False)
    check(lambda m, a: a.max(), x, grad=False)
    check(lambda m, a: a.max(dim=1), x, grad=False)
    check(lambda m, a: m.all(a), x, grad=False)
    check(lambda m, a: m.any(a, 1), x, grad=False)
    check(lambda m, a: m.amin(a, 0), x, grad=False)
    if dtype != "bool":  # torch has no argmin for bool
        check(lambda m, a: a.argmin(1), x, grad=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_reductions(dtype):
    x = rnd(6, 33, seed=8)
    tol = dict(rtol=2e-2, atol=2e-2)
    for fn in [lambda m, a: a.sum(), lambda m, a: a.sum(1), lambda m, a: a.mean(0), lambda m, a: a.amax(1),
               lambda m, a: a.var(1), lambda m, a: m.softmax(a, 1), lambda m, a: m.logsumexp(a, 1)]:
        check(fn, x, dtypes=[dtype], grad_rtol=3e-2, grad_atol=3e-2, **tol)


def test_sum_accuracy_large():
    # 1M float32 ones + small noise: pairwise/blocked sums stay accurate
    x = (1.0 + 1e-3 * rnd(1 << 20, seed=9)).astype(np.float32)
    check(lambda m, a: a.sum(), x, grad=False, rtol=1e-6)
    check(lambda m, a: a.reshape(1024, 1024).sum(0), x, grad=False, rtol=1e-6)
    check(lambda m, a: a.reshape(1024, 1024).sum(1), x, grad=False, rtol=1e-6)
    check(lambda m, a: a.reshape(64, 128, 128).sum((0, 2)), x, grad=False, rtol=1e-6)


# ------------------------------------------------------------ max / min
@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", KEEP)
def test_max_min_dim(name, dim, keepdim):
    x = rnd(3, 4, 5, seed=10)
    out = check(lambda m, a: getattr(m, name)(a, dim, keepdim), x)
    v, i = out
    assert out.values is v and out.indices is i
    check(lambda m, a: getattr(a, name)(dim=dim, keepdim=keepdim).values, x)
    check(lambda m, a: getattr(m, "arg" + name)(a, dim, keepdim), x, grad=False)


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
def test_max_min_tie_gradients(name):
    """max/min over all elements and amax/amin split the gradient evenly
    among ties; max/min along a dim send it to the returned index."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], dtype=np.float32)
    check(lambda m, a: getattr(m, name)(a), x)
    if name in ("amax", "amin"):
        check(lambda m, a: getattr(m, name)(a, 1), x)
        check(lambda m, a: getattr(m, name)(a, (0, 1), keepdim=True), x)
    else:
        check(lambda m, a: getattr(m, name)(a, 1), x)


def test_max_binary_form_and_argmax_flat():
    a, b = rnd(3, 4, seed=11), rnd(4, seed=12)
    check(lambda m, x, y: m.max(x, y), a, b)
    check(lambda m, x, y: m.min(x, y), a, b)
    check(lambda m, x: m.argmax(x), a, grad=False)
    check(lambda m, x: m.argmin(x, keepdim=True), a, grad=False)
    check(lambda m, x: x.argmax(dim=-1, keepdim=True), a, grad=False)


def test_argmax_ties_and_nan():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [np.nan, 1.0, np.nan, 5.0], [2.0, 2.0, 2.0, 2.0]], dtype=np.float32)
    check(lambda m, a: m.argmax(a, 1), x, grad=False)
    check(lambda m, a: m.argmin(a, 1), x, grad=False)
    check(lambda m, a: m.max(a, 1), x, grad=False)
    check(lambda m, a: m.amax(a, 1), x, grad=False)
    check(lambda m, a: m.amin(a, 0), x, grad=False)
    check(lambda m, a: m.max(a), x, grad=False)


def test_all_any():
    x = rnd(3, 4, dtype="bool", seed=13)
    for dim in [None, 0, 1, -1]:
        kw = {} if dim is None else {"dim": dim}
        check(lambda m, a: m.all(a, **kw), x, grad=False)
        check(lambda m, a: m.any(a, **kw), x, grad=False)
        check(lambda m, a: a.any(**kw), x, grad=False)
    check(lambda m, a: m.all(a, 1, keepdim=True), x, grad=False)
    f = rnd(3, 4, seed=14)
    check(lambda m, a: (a > 0).all(), f, grad=False)
    check(lambda m, a: m.any(a), f, grad=False)
    check(lambda m, a: m.all(a), np.zeros((0, 2), np.float32), grad=False)
    check(lambda m, a: m.any(a), np.zeros((0, 2), np.float32), grad=False)


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, float("inf"), -float("inf"), 0, "fro"])
def test_norm(p):
    x = rnd(3, 4, seed=15)
    check(lambda m, a: m.norm(a, p), x, grad=p != 0, rtol=1e-5)
    check(lambda m, a: a.norm(p, dim=1), x, grad=p != 0, rtol=1e-5)
    check(lambda m, a: m.norm(a, p, dim=(0, 1), keepdim=True), x, grad=p != 0, rtol=1e-5) if p != "fro" else None


def test_logsumexp_stability():
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]], dtype=np.float32)
    check(lambda m, a: m.logsumexp(a, 1), x[[0, 2]])
    check(lambda m, a: m.logsumexp(a, 1), x, grad=False)
    check(lambda m, a: m.logsumexp(a, 1, keepdim=True), x, grad=False)
    check(lambda m, a: m.logsumexp(a, 1), np.array([[np.inf, 1.0]], dtype=np.float32), grad=False)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "amax", "logsumexp", "var", "std", "norm"])
def test_reduction_gradcheck(name):
    x = rnd(3, 4, dtype="float64", seed=16)
    if name == "prod":
        x = np.abs(x) + 0.5
    gradcheck(lambda a: getattr(lucid, name)(a, dim=1), x)
    gradcheck(lambda a: getattr(lucid, name)(a, dim=(0, 1)), x)


def test_prod_gradient_with_zeros():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], dtype=np.float64)
    check(lambda m, a: m.prod(a, 1), x)
    check(lambda m, a: m.prod(a), x[2:])
    check(lambda m, a: m.prod(a), x[:1])


# --------------------------------------------------------------- matmul
MATMUL_SHAPES = [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)),
    ((2, 3, 4), (4,)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (6, 4, 2)),
    ((0, 4), (4, 3)), ((3, 0), (0, 2)), ((2, 3, 4), (1, 4, 0)), ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(sa, sb):
    a, b = rnd(*sa, seed=1), rnd(*sb, seed=2)
    check(lambda m, x, y: m.matmul(x, y), a, b, rtol=1e-5, atol=1e-5)
    check(lambda m, x, y: x @ y, a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "float16", "bfloat16"])
def test_matmul_dtypes(dtype):
    a, b = rnd(3, 5, seed=3), rnd(5, 2, seed=4)
    if dtype.startswith("int"):
        a, b = rnd(3, 5, dtype=dtype, seed=3), rnd(5, 2, dtype=dtype, seed=4)
    tol = {"float16": 2e-3, "bfloat16": 2e-2}.get(dtype)
    check(lambda m, x, y: x @ y, a, b, dtypes=[dtype, dtype], rtol=tol, atol=tol, grad_rtol=3e-2, grad_atol=3e-2)
    check(lambda m, x, y: x @ y, rnd(2, 3, 5, seed=5).astype(a.dtype), b, dtypes=[dtype, dtype], rtol=tol, atol=tol,
          grad_rtol=3e-2, grad_atol=3e-2)


def test_mm_bmm_dot_outer():
    a, b = rnd(3, 4, seed=1), rnd(4, 2, seed=2)
    check(lambda m, x, y: m.mm(x, y), a, b, rtol=1e-5)
    check(lambda m, x, y: x.mm(y), a, b, rtol=1e-5)
    check(lambda m, x, y: m.bmm(x, y), rnd(2, 3, 4), rnd(2, 4, 5, seed=3), rtol=1e-5)
    check(lambda m, x, y: m.dot(x, y), rnd(5), rnd(5, seed=4), rtol=1e-5)
    check(lambda m, x, y: m.outer(x, y), rnd(3), rnd(5, seed=4), rtol=1e-5)


def test_matmul_gradcheck():
    gradcheck(lambda x, y: x @ y, rnd(2, 3, 4, dtype="float64"), rnd(4, 2, dtype="float64", seed=1))
    gradcheck(lambda x, y: x @ y, rnd(3, 1, 2, 4, dtype="float64"), rnd(2, 4, 5, dtype="float64", seed=1))
    gradcheck(lambda x, y: x @ y, rnd(4, dtype="float64"), rnd(4, dtype="float64", seed=1))
    gradcheck(lambda x, y: x @ y.T, rnd(3, 4, dtype="float64"), rnd(5, 4, dtype="float64", seed=1))


def _raises_like_torch(fn, *arrays, match=None):
    t_args = [torch.from_numpy(np.array(a)) for a in arrays]
    l_args = [lucid.tensor(np.array(a)) for a in arrays]
    with pytest.raises(Exception) as t_err:
        fn(torch, *t_args)
    with pytest.raises(type(t_err.value), match=match):
        fn(lucid, *l_args)


def test_matmul_errors():
    _raises_like_torch(lambda m, x, y: x @ y, rnd(2, 3), rnd(4, 5), match=r"2x3 and 4x5")
    _raises_like_torch(lambda m, x, y: x @ y, rnd(3), rnd(4), match=r"3.*4")
    _raises_like_torch(lambda m, x, y: x @ y, rnd(2, 2, 3), rnd(3, 3, 4), match=r"\[2\].*\[3\]|2.*3")
    _raises_like_torch(lambda m, x, y: x @ y, rnd(2, 3), rnd(3, 4, dtype="float64"), match="dtype")
    _raises_like_torch(lambda m, x, y: x @ y, np.float32(1.0), rnd(3), match="1D|1-D|dimension")
    _raises_like_torch(lambda m, x, y: m.mm(x, y), rnd(2, 3, 4), rnd(4, 2))
    _raises_like_torch(lambda m, x, y: m.bmm(x, y), rnd(2, 3, 4), rnd(3, 4, 2))


# --------------------------------------------------------------- softmax
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_softmax(name, dim):
    x = rnd(3, 4, 5, seed=17) * 3
    check(lambda m, a: getattr(m, name)(a, dim), x)
    check(lambda m, a: getattr(a, name)(dim), x)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_stability_and_edges(name):
    big = np.array([[1000.0, 999.0, -1000.0], [-1e4, -1e4 - 1, -1e4 + 1], [0.0, -np.inf, 1.0]], dtype=np.float32)
    check(lambda m, a: getattr(m, name)(a, 1), big)
    check(lambda m, a: getattr(m, name)(a, 0), rnd(seed=1))  # 0-d
    check(lambda m, a: getattr(m, name)(a, 1), rnd(0, 3, seed=2))
    check(lambda m, a: getattr(m, name)(a, 0), rnd(1, 3, seed=2))
    check(lambda m, a: getattr(m, name)(a, 1), rnd(2, 4, dtype="float64", seed=3))
    check(lambda m, a: getattr(m, name)(a, 1, dtype=m.float64), rnd(2, 4, seed=3))
    gradcheck(lambda a: getattr(lucid, name)(a, 1), rnd(3, 4, dtype="float64", seed=4))
    gradcheck(lambda a: getattr(lucid, name)(a, 0), rnd(3, 4, dtype="float64", seed=5))


def test_softmax_integer_input_is_an_error():
    x = rnd(3, dtype="int64")
    for m in (torch, lucid):  # torch: NotImplementedError, lucid: TypeError; both RuntimeErrors
        with pytest.raises(RuntimeError):
            m.softmax(m.tensor(x), 0)
    check(lambda m, a: m.softmax(a, 0, dtype=m.float32), x, grad=False)


# ---------------------------------------------------------------- errors
def test_reduction_errors():
    x = rnd(2, 3)
    _raises_like_torch(lambda m, a: m.sum(a, 2), x, match=r"range")
    _raises_like_torch(lambda m, a: m.sum(a, -3), x, match=r"range")
    _raises_like_torch(lambda m, a: m.sum(a, (0, 0)), x, match="multiple times")
    _raises_like_torch(lambda m, a: m.mean(a), rnd(3, dtype="int64"), match="dtype")
    _raises_like_torch(lambda m, a: m.max(a), rnd(0, 3), match="numel")
    _raises_like_torch(lambda m, a: m.argmax(a, 0), rnd(0, 3), match="non-zero size|empty")
    _raises_like_torch(lambda m, a: m.amax(a, 0), rnd(0, 3), match="non-zero size|empty")
    _raises_like_torch(lambda m, a: m.softmax(a, 2), x, match="range")
    _raises_like_torch(lambda m, a: m.argmax(a, 5), x, match="range")


def test_multithreaded_sizes():
    """Reductions and softmax above the parallel grain (rows, columns, a
    middle axis, non-adjacent axes)."""
    x = rnd(64, 129, 33, seed=30)
    for dims in [2, 0, 1, (0, 2), (0, 1, 2)]:
        check(lambda m, a: a.sum(dims), x, rtol=1e-5)
        check(lambda m, a: a.amax(dims), x)
    check(lambda m, a: a.argmax(1), x, grad=False)
    check(lambda m, a: a.max(0), x)
    check(lambda m, a: m.softmax(a, -1), x)
    check(lambda m, a: m.log_softmax(a, 1), x)
    check(lambda m, a: a.var(0), x, rtol=1e-5)
    check(lambda m, a, b: a @ b, rnd(8, 64, 48, seed=31), rnd(48, 40, seed=32), rtol=1e-5, atol=1e-5, grad_atol=1e-4)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_softmax_inner_dims(name, dtype):
    """Softmax over a dim with many columns after it (blocks of columns)."""
    x = rnd(3, 7, 300, seed=33) * 4
    x[0, :, 5] = [1000.0, -1000.0, 0.0, 1.0, 2.0, 3.0, 999.0]
    tol = {"float16": 2e-3, "bfloat16": 2e-2}.get(dtype)
    check(lambda m, a: getattr(m, name)(a, 1), x, dtypes=[dtype], rtol=tol, atol=tol, grad_rtol=3e-2 if tol else None,
          grad_atol=3e-2 if tol else None)
    check(lambda m, a: getattr(m, name)(a, 0), x, dtypes=[dtype], rtol=tol, atol=tol, grad=False)


@pytest.mark.parametrize("shape,dims", [
    ((16, 128, 128), (0, 1)),  # bias gradient: one block of columns, rows in chunks
    ((16, 128, 512), (0, 1)),
    ((300, 2100), 0),  # columns in several blocks, a partial chunk of rows
    ((5, 700, 3), 1),  # narrow columns under many outer rows
    ((4, 1, 9, 2500), (1, 2)),
    ((2, 3, 0), 1),
    ((7, 0, 5), 1),  # nothing to add: zeros
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_sum_over_leading_dims(shape, dims, dtype):
    """Sums with columns after the reduced dims, against float64 NumPy."""
    x = rnd(*shape, seed=40, dtype="float32" if dtype == "bfloat16" else dtype)
    xl = lucid.tensor(x).to(getattr(lucid, dtype))
    got = xl.sum(dims).to(lucid.float64).numpy()
    xr = xl.to(lucid.float64).numpy()
    ref = xr.sum(axis=dims)
    scale = np.abs(xr).sum(axis=dims) + 1.0  # error bound relative to the sum of magnitudes
    tol = {"float32": 1e-6, "float64": 1e-14, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    assert got.shape == ref.shape
    assert np.all(np.abs(got - ref) <= tol * scale)


@pytest.mark.parametrize("name", ["amax", "amin", "prod", "all", "any"])
def test_other_reductions_over_leading_dims(name):
    x = rnd(600, 130, seed=41)
    if name == "prod":
        x = np.abs(x) * 0.01 + 0.9995
    if name in ("all", "any"):
        x = rnd(600, 130, low=0, high=1, seed=41) < (0.999 if name == "all" else 0.001)
        check(lambda m, a: getattr(m, name)(a, 0), x, dtypes=["bool"], grad=False)
    else:
        check(lambda m, a: getattr(m, name)(a, 0), x, rtol=1e-5, grad=False)


def test_reductions_do_not_depend_on_thread_count():
    """The split of rows into partials is fixed by the shape, so 1 and 2
    threads give the same bits."""
    cases = [((16, 128, 512), (0, 1)), ((2048, 300), 0), ((3, 1000, 70), 1), ((64, 129, 33), (0, 2)),
             ((512, 1000), 1)]
    n = lucid.get_num_threads()
    try:
        for shape, dims in cases:
            x = lucid.tensor(rnd(*shape, seed=42))
            lucid.set_num_threads(1)
            one = [x.sum(dims).numpy(), x.amax(dims).numpy(), lucid.softmax(x, -1).numpy()]
            lucid.set_num_threads(2)
            two = [x.sum(dims).numpy(), x.amax(dims).numpy(), lucid.softmax(x, -1).numpy()]
            for a, b in zip(one, two):
                np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))
    finally:
        lucid.set_num_threads(n)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("r", [1, 7, 16, 33, 128, 1500])
def test_softmax_rows_of_any_length(name, dtype, r):
    """Softmax along contiguous rows: vector bodies and scalar tails of the
    max, exp and sum passes, long rows summed in blocks, special rows."""
    x = rnd(9, r, seed=34) * 4
    x[1, :] = -np.inf  # all -inf: NaN, like PyTorch
    x[2, -1] = np.inf  # +inf: NaN
    x[3, r // 2] = np.nan
    x[4, 0] = 80.0
    x[5, :] = -np.inf
    x[5, -1] = -3.0  # one finite entry
    tol = {"float16": 2e-3, "bfloat16": 2e-2}.get(dtype)
    check(lambda m, a: getattr(m, name)(a, -1), x, dtypes=[dtype], rtol=tol, atol=tol, grad=False)


# Cases the semantics probe (python -m tests.fuzz.semantics) found differing
# from PyTorch; each source runs with T = torch and T = lucid.
REDUCTION_CASES = [
    "result = T.prod(T.tensor([[[88]]], dtype=T.uint8), dtype=T.int32)",
    "result = T.tensor([[300, 300], [7, 1]], dtype=T.int16).prod(0, dtype=T.int16)",
    "result = T.prod(T.tensor([[1, 2], [0, 3]]), dtype=T.bool)",
    "result = T.sum(T.tensor([[1, 2], [0, 3]]), dtype=T.bool)",
    "result = T.sum(T.tensor([[1, 0], [0, 0]]), 0, dtype=T.bool)",
    "result = T.all(T.tensor([[-31, -10], [0, 2]], dtype=T.int8), dim=())",
    "result = T.any(T.tensor([[-7, 0, 2]]), dim=(), keepdim=True)",
    "result = T.any(T.tensor([[3, 6], [0, 0]], dtype=T.uint8))",
    "result = T.all(T.tensor([[3, 6], [0, 1]], dtype=T.uint8), dim=0)",
    "result = T.tensor([[3, 6], [0, 1]], dtype=T.uint8).any(-1, keepdim=True)",
    # out=: reductions compute in out's dtype; indices must be int64
    "o = T.empty(0, dtype=T.float32)\nr = T.sum(T.tensor([[4, -394], [-5, 835]], dtype=T.int32), dim=0, out=o)\n"
    "result = (o, r is o)",
    "o = T.empty(0, dtype=T.int8)\nr = T.cumsum(T.tensor([[-277, -155, 7]], dtype=T.int16), dim=-1, out=o)\n"
    "result = (o, r is o)",
    "o = T.empty(0, dtype=T.int64)\nr = T.sum(T.tensor([1.5, 2.5]), 0, out=o)\nresult = (o, r is o)",
    "result = T.amax(T.tensor([1.5, 2.5]), 0, out=T.empty(0, dtype=T.int64))",
    "v, i = T.empty(0), T.empty(0, dtype=T.int64)\nr = T.max(T.tensor([[1.5, 2.5]]), 1, out=(v, i))\n"
    "result = (v, i, r[0] is v)",
    "result = T.max(T.tensor([[1.5, 2.5]]), 1, out=(T.empty(0), T.empty(0, dtype=T.int32)))",
    # mode's values carry the gradient to their index
    "x = T.tensor([[1.0, 2.0, 1.0], [3.0, 3.0, -1.0]], dtype=T.float64, requires_grad=True)\nr = T.mode(x, 1)\n"
    "(r[0] * T.tensor([1.0, 2.0], dtype=T.float64)).sum().backward()\nresult = (r, x.grad)",
    "x = T.tensor(2.5, requires_grad=True)\nr = T.mode(x)\nr[0].backward()\nresult = (r, x.grad)",
    # empty scans and reductions
    "result = T.cummin(T.zeros((0, 2), dtype=T.int8), dim=0)",
    "result = T.cummax(T.zeros((2, 0)), dim=1)",
    "result = [T.median(T.zeros((0,), dtype=d)) for d in (T.int8, T.uint8, T.int16, T.int32, T.int64, T.float32)]",
    "result = T.take_along_dim(T.tensor([-997, 3, -5]), T.zeros((3,), dtype=T.int64), 1)",
]


@pytest.mark.parametrize("src", REDUCTION_CASES)
def test_reduction_semantics_match_torch(src):
    from tests.fuzz.semantics import check as difference_from_torch

    assert difference_from_torch(src) is None, difference_from_torch(src)


def test_var_without_degrees_of_freedom_like_torch():
    """correction above the element count: PyTorch's value divides by 0 (inf,
    or NaN for 0/0) and its gradient by the negative degrees of freedom, so
    it stays finite (not the NaN a division by 0 would give)."""
    import warnings

    for data in ([[-4.0], [-1.5]], [[1.0, 2.0, 4.0]], [[1.0, 1.0]]):
        results = []
        for m in (lucid, torch):
            x = m.tensor(data, dtype=m.float64, requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # PyTorch's "degrees of freedom is <= 0"
                v = m.var(x, dim=-1, correction=5)
            v.sum().backward()
            results.append((v.detach().numpy(), x.grad.numpy()))
        (lv, lg), (tv, tg) = results
        np.testing.assert_array_equal(lv, tv)
        assert np.all(np.isfinite(lg))
        np.testing.assert_allclose(lg, tg, rtol=1e-12, atol=0)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (0, True), (1, False), (-1, True)])
def test_quantiles_of_slices_with_nan_match_torch(interpolation, dim, keepdim):
    """quantile is NaN over a slice holding a NaN; nanquantile skips them
    (NaN where a slice has nothing else)."""
    x = np.array([[np.nan, 1., 3., 2.], [4., np.nan, np.nan, 0.], [np.nan] * 4, [5., 1., 2., 7.]])
    for q in (0.3, [0.1, 0.5, 0.77]):
        for name in ("quantile", "nanquantile"):
            want = getattr(torch, name)(torch.tensor(x), torch.tensor(q, dtype=torch.float64), dim=dim,
                                        keepdim=keepdim, interpolation=interpolation)
            got = getattr(lucid, name)(lucid.tensor(x), lucid.tensor(q, dtype=lucid.float64), dim=dim,
                                       keepdim=keepdim, interpolation=interpolation)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, equal_nan=True)
