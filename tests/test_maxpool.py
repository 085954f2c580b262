"""Max pooling (the MaxPool2d / MaxPool2dBackward primitives) against
torch.nn.functional.max_pool2d: values, return_indices and gradients over
many window geometries, ties, NaN, -inf and every dtype; the compiled step
equal to eager bit for bit; results independent of the thread count."""
import copy
import itertools

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.optim as optim
import lucid.nn.functional as F
from conftest import assert_close, rnd, to_lucid

from lucid.compile import fused_step, make_step

TF = torch.nn.functional


def run_both(x, dtype="float32", grad_seed=7, **kw):
    """(lucid, torch) results of max_pool2d on the float array x: values,
    indices and, for floating dtypes, the input gradient under a random
    upstream gradient; None for torch when it rejects the arguments."""
    tx = torch.from_numpy(np.array(x)).to(getattr(torch, dtype))
    floating = tx.is_floating_point()
    tx.requires_grad_(floating)
    try:
        t_out, t_idx = TF.max_pool2d(tx, return_indices=True, **kw)
    except RuntimeError:
        return None, None
    lx = to_lucid(tx, requires_grad=floating)
    out, idx = F.max_pool2d(lx, return_indices=True, **kw)
    res_l, res_t = [out, idx], [t_out, t_idx]
    if floating:
        g = np.random.default_rng(grad_seed).standard_normal(tuple(t_out.shape)).astype(np.float32)
        tg = torch.from_numpy(g).to(tx.dtype)
        t_out.backward(tg)
        out.backward(to_lucid(tg))
        res_l.append(lx.grad)
        res_t.append(tx.grad)
    return res_l, res_t


def assert_pool_equal(lres, tres, exact_grad=True):
    out, idx = lres[:2]
    t_out, t_idx = tres[:2]
    assert_close(out, t_out, rtol=0, atol=0)  # a maximum is exact in every dtype
    assert_close(idx, t_idx)
    if len(lres) > 2:
        tol = dict(rtol=0, atol=0) if exact_grad else {}
        assert_close(lres[2], tres[2], **tol)


# Every combination of kernel 1-3 (and a non-square one), stride 1-3,
# padding, dilation and ceil_mode, on a non-square input. Arguments torch
# rejects (padding over half the kernel, windows larger than the input)
# must be rejected too.
GRID = list(itertools.product([1, 2, 3, (3, 2)], [1, 2, 3, (1, 2)], [0, 1, (1, 0)], [1, 2, (1, 2)], [False, True]))


@pytest.mark.parametrize("k,s,p,d,ceil", GRID, ids=[str(g) for g in GRID])
def test_max_pool2d_grid(k, s, p, d, ceil):
    x = rnd(2, 3, 9, 7)
    kw = dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
    lres, tres = run_both(x, **kw)
    if tres is None:
        with pytest.raises(ValueError):
            F.max_pool2d(lucid.tensor(x), **kw)
        return
    # Same accumulation order as PyTorch (outputs in order within a plane):
    # even overlapping windows give bit-equal gradients.
    assert_pool_equal(lres, tres)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1),
                                dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), ceil_mode=True)])
def test_ties_go_to_the_first_maximum(kw):
    x = np.random.default_rng(0).integers(0, 3, (2, 3, 8, 9)).astype(np.float32)
    assert_pool_equal(*run_both(x, **kw))
    assert_pool_equal(*run_both(np.zeros((1, 2, 5, 5), np.float32), **kw))  # all tied


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=1, dilation=2)])
def test_nan_wins_its_window(kw):
    x = rnd(2, 2, 8, 8)
    rng = np.random.default_rng(1)
    x[rng.random(x.shape) < 0.15] = np.nan
    x[0, 0, :2, :2] = np.nan  # several NaNs in one window: PyTorch keeps the last
    lres, tres = run_both(x, **kw)
    assert np.isnan(lres[0].detach().numpy()).any()
    assert_pool_equal(lres, tres)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=2, ceil_mode=True),
                                dict(kernel_size=(1, 2), padding=(0, 1), dilation=(1, 3))])
def test_minus_infinity_and_padding(kw):
    x = rnd(1, 2, 5, 5)
    x[0, 0] = -np.inf  # a plane of -inf: padding must not win, the first tap keeps the index
    x[0, 1, ::2] = -np.inf
    assert_pool_equal(*run_both(x, **kw))


def test_window_over_padding_only():
    # Dilation can make a window read padding alone: -inf, PyTorch's index
    # (past the plane), and no gradient (PyTorch writes into the next plane).
    lres, tres = run_both(rnd(1, 2, 2, 2), kernel_size=(2, 1), stride=1, padding=(1, 0), dilation=(3, 1))
    assert_pool_equal(lres[:2], tres[:2])
    assert np.isneginf(lres[0].detach().numpy()).all()
    np.testing.assert_array_equal(lres[2].numpy(), 0)


def test_two_by_two_fast_path_every_width():
    # kernel = stride = 2 without padding has its own (vectorised) kernel:
    # full and partial blocks of a row, odd sizes, NaN, -inf and ties.
    rng = np.random.default_rng(2)
    for w in list(range(2, 20)) + [31, 32, 33, 47]:
        x = rng.integers(-3, 3, (2, 3, 5, w)).astype(np.float32)
        x[rng.random(x.shape) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.1] = -np.inf
        assert_pool_equal(*run_both(x, kernel_size=2))


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "int32", "int64"])
def test_dtypes(dtype):
    x = rnd(2, 3, 8, 7) * 4
    if dtype.startswith("int"):
        x = np.round(x)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)):
        lres, tres = run_both(x, dtype=dtype, **kw)
        assert lres[0].dtype == getattr(lucid, dtype) and lres[1].dtype == lucid.int64
        # 16-bit gradients accumulate in float32 and round once (PyTorch rounds per add).
        assert_pool_equal(lres, tres, exact_grad=dtype in ("float64",))


def test_unbatched_and_1d():
    assert_pool_equal(*run_both(rnd(3, 7, 8), kernel_size=3, stride=2, padding=1))
    x = rnd(2, 3, 11)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)):
        lx, tx = lucid.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, idx = F.max_pool1d(lx, return_indices=True, **kw)
        t_out, t_idx = TF.max_pool1d(tx, return_indices=True, **kw)
        assert_close(out, t_out), assert_close(idx, t_idx)
        out.sum().backward(), t_out.sum().backward()
        assert_close(lx.grad, tx.grad)
    out, idx = nn.MaxPool1d(3, return_indices=True)(lucid.tensor(x[0]))
    t_out, t_idx = torch.nn.MaxPool1d(3, return_indices=True)(torch.tensor(x[0]))
    assert_close(out, t_out), assert_close(idx, t_idx)


def test_module_and_errors():
    x = rnd(2, 3, 7, 8)
    out, idx = nn.MaxPool2d((3, 2), stride=(2, 1), padding=1, return_indices=True)(lucid.tensor(x))
    t_out, t_idx = torch.nn.MaxPool2d((3, 2), stride=(2, 1), padding=1, return_indices=True)(torch.tensor(x))
    assert_close(out, t_out), assert_close(idx, t_idx)
    with pytest.raises(TypeError, match="bool"):
        F.max_pool2d(lucid.ones(1, 1, 4, 4, dtype=lucid.bool), 2)
    with pytest.raises(ValueError, match="Expected 3D or 4D"):
        F.max_pool2d(lucid.ones(4, 4), 2)
    with pytest.raises(ValueError, match="pad should be smaller than or equal to half of kernel size"):
        F.max_pool2d(lucid.ones(1, 1, 6, 6), 3, 1, 2, 2)
    with pytest.raises(ValueError, match="stride must be greater than zero"):
        F.max_pool2d(lucid.ones(1, 1, 6, 6), 2, 0)


def test_empty_batch():
    out, idx = F.max_pool2d(lucid.ones(0, 3, 4, 4), 2, return_indices=True)
    assert tuple(out.shape) == (0, 3, 2, 2) and tuple(idx.shape) == (0, 3, 2, 2)


# ----------------------------------------------------------------- threads
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1)])
def test_thread_count_does_not_change_results(kw):
    x = rnd(8, 16, 33, 30)
    before = lucid.get_num_threads()
    results = []
    try:
        for n in (1, 2):
            lucid.set_num_threads(n)
            lx = lucid.tensor(x, requires_grad=True)
            out, idx = F.max_pool2d(lx, return_indices=True, **kw)
            (out * out).sum().backward()
            results.append([out.detach().numpy(), idx.numpy(), lx.grad.numpy()])
    finally:
        lucid.set_num_threads(before)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- compiled
class Pooled(nn.Module):
    """A scale parameter, then two max pools: overlapping windows, then a
    padded, dilated, ceil_mode one whose indices are used too."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(lucid.tensor(rnd(1, 3, 9, 8, seed=3)))

    def forward(self, x):
        h = x * self.w
        a = F.max_pool2d(h, 3, stride=1, padding=1)
        b, idx = F.max_pool2d(a, (2, 3), stride=2, padding=(1, 0), dilation=(1, 2), ceil_mode=True,
                              return_indices=True)
        return b.flatten(1) + idx.flatten(1).to(b.dtype) * 0.0


def _grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


def test_make_step_matches_eager_bitwise():
    lucid.manual_seed(0)
    eager = Pooled()
    compiled = copy.deepcopy(eager)
    step = make_step(compiled, F.mse_loss)
    for seed in range(2):
        x, y = lucid.tensor(rnd(4, 3, 9, 8, seed=10 + seed)), lucid.tensor(rnd(4, 3 * 5 * 3, seed=20 + seed))
        eager.zero_grad(), compiled.zero_grad()
        e_loss = F.mse_loss(eager(x), y)
        e_loss.backward()
        c_loss = step(x, y)
        assert float(c_loss) == float(e_loss)
        for a, b in zip(_grads(compiled), _grads(eager)):
            np.testing.assert_array_equal(a, b)


def test_fused_step_matches_eager_bitwise():
    lucid.manual_seed(0)
    eager = Pooled()
    compiled = copy.deepcopy(eager)
    e_opt = optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    step = fused_step(compiled, F.mse_loss, optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9))
    for seed in range(3):
        x, y = lucid.tensor(rnd(4, 3, 9, 8, seed=10 + seed)), lucid.tensor(rnd(4, 3 * 5 * 3, seed=20 + seed))
        e_opt.zero_grad()
        e_loss = F.mse_loss(eager(x), y)
        e_loss.backward()
        e_opt.step()
        assert float(step(x, y)) == float(e_loss)
        np.testing.assert_array_equal(compiled.w.detach().numpy(), eager.w.detach().numpy())


def test_compiled_cnn_matches_torch():
    # The cnn_small shape of pooling (kernel = stride = 2 fast path) inside a
    # compiled step, gradients checked against PyTorch.
    x = rnd(4, 2, 12, 10)
    w = rnd(1, 2, 12, 10, seed=5)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lucid.tensor(w))

        def forward(self, t):
            return F.max_pool2d(F.relu(t * self.w), 2).flatten(1)

    model = M()
    step = make_step(model, lambda out, tgt: (out * tgt).sum())
    tgt = rnd(4, 2 * 6 * 5, seed=6)
    step(lucid.tensor(x), lucid.tensor(tgt))
    tw = torch.tensor(w, requires_grad=True)
    (TF.max_pool2d(TF.relu(torch.tensor(x) * tw), 2).flatten(1) * torch.tensor(tgt)).sum().backward()
    assert_close(model.w.grad, tw.grad)
