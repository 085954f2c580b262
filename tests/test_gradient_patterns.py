"""Gradients that were once silently wrong, each pinned in float32 and float64.

1. make_step accumulating after zero_grad(set_to_none=True): the accumulating
   executable wrote into the .grad buffer of the previous cycle (its capture
   was bound at trace time, and a dead owner was taken for a constant).
2-4. Compiled float32 steps: a value read by a fused group's early member
   was freed when its last reader *by node index* ran, although the group
   runs later, at its last member; a later kernel reused the bytes.
5. Eager: two leaves handed the same gradient tensor (the VJP of add) shared
   one .grad buffer, so the next backward accumulated into both twice.
"""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim  # noqa: F401
from lucid.compile import fused_step, make_step

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64"]


def _grads(model):
    return {n: p.grad.numpy().copy() for n, p in model.named_parameters() if p.grad is not None}


def _assert_grads_equal(got, want, dtype):
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5 if dtype == "float32" else 1e-12,
                                   atol=1e-6 if dtype == "float32" else 1e-13, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("set_to_none", [True, False])
def test_make_step_accumulates_across_zero_grad_cycles(dtype, set_to_none):
    lucid.manual_seed(0)
    dt = getattr(lucid, dtype)
    eager = nn.Linear(4, 3).to(dt)
    compiled = nn.Linear(4, 3).to(dt)
    compiled.load_state_dict(eager.state_dict())
    step = make_step(compiled, F.mse_loss)
    xs = [lucid.randn(5, 4, dtype=dt) for _ in range(6)]
    ys = [lucid.randn(5, 3, dtype=dt) for _ in range(6)]
    for cycle in range(3):
        batch = list(zip(xs[2 * cycle:2 * cycle + 2], ys[2 * cycle:2 * cycle + 2]))
        eager.zero_grad(set_to_none)
        compiled.zero_grad(set_to_none)
        for x, y in batch:
            F.mse_loss(eager(x), y).backward()
            step(x, y)
        _assert_grads_equal(_grads(compiled), _grads(eager), dtype)


class _TwoPathCell(nn.Module):
    """A GRU-like cell: h0 reaches the loss through a cat and a product."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 3)
        self.b = nn.Linear(6, 3)
        self.h0 = nn.Parameter(lucid.randn(4, 3))

    def forward(self, x):
        u = F.sigmoid(self.a(lucid.cat([x, self.h0], dim=1))) * self.h0
        return self.b(lucid.cat([x, u], dim=1))


class _ScaledByMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(lucid.tensor(np.arange(9.).reshape(3, 3) / 10, dtype=lucid.float32))
        self.v = nn.Parameter(lucid.ones(3))

    def forward(self, x):
        return self.p * self.v + self.p.mean() + x


class _MaxOfMaximum(nn.Module):
    def __init__(self):
        super().__init__()
        self.p0 = nn.Parameter(lucid.tensor([0.3, -0.1, 0.2]))
        self.p1 = nn.Parameter(lucid.tensor([0.1]))

    def forward(self, x):
        return lucid.max(lucid.maximum(self.p0, self.p1), -1, False)[0] + x


_MODELS = {
    "two_path_cell": (_TwoPathCell, lambda dt: (lucid.randn(4, 3, dtype=dt), lucid.randn(4, 3, dtype=dt))),
    "scaled_by_mean": (_ScaledByMean, lambda dt: (lucid.zeros(3, dtype=dt), lucid.randn(3, 3, dtype=dt))),
    "max_of_maximum": (_MaxOfMaximum, lambda dt: (lucid.zeros((), dtype=dt), lucid.tensor(2.0, dtype=dt))),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(_MODELS))
def test_make_step_matches_backward_on_values_read_by_fused_groups(name, dtype):
    make_model, make_batch = _MODELS[name]
    dt = getattr(lucid, dtype)
    lucid.manual_seed(1)
    eager = make_model().to(dt)
    compiled = make_model().to(dt)
    compiled.load_state_dict(eager.state_dict())
    step = make_step(compiled, F.mse_loss)
    for call in range(3):  # a fresh trace, then accumulating calls
        x, y = make_batch(dt)
        F.mse_loss(eager(x), y).backward()
        step(x, y)
        _assert_grads_equal(_grads(compiled), _grads(eager), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(_MODELS))
@pytest.mark.parametrize("opt_name", ["Rprop", "Adam", "SGD"])
def test_fused_step_matches_the_eager_loop(name, dtype, opt_name):
    make_model, make_batch = _MODELS[name]
    dt = getattr(lucid, dtype)
    lucid.manual_seed(2)
    eager = make_model().to(dt)
    compiled = make_model().to(dt)
    compiled.load_state_dict(eager.state_dict())
    opt_e = getattr(lucid.optim, opt_name)(eager.parameters(), lr=0.01)
    opt_c = getattr(lucid.optim, opt_name)(compiled.parameters(), lr=0.01)
    step = fused_step(compiled, F.mse_loss, opt_c)
    for _ in range(3):
        x, y = make_batch(dt)
        opt_e.zero_grad()
        F.mse_loss(eager(x), y).backward()
        opt_e.step()
        step(x, y)
        for (n, pe), pc in zip(eager.named_parameters(), compiled.parameters()):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5 if dtype == "float32" else 1e-12,
                                       atol=1e-6 if dtype == "float32" else 1e-13, err_msg=n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("combine", ["add", "add3", "stack_sum"])
def test_leaves_given_one_gradient_tensor_keep_separate_grads(combine, dtype):
    # Three identical backward passes accumulate three times one pass's
    # gradient. (PyTorch itself shares one buffer between the leaves of
    # stack(...).sum(0) -- its grads are views of one expanded tensor -- and
    # then counts twice; Lucid gives the sum.)
    values = [[.1, .2, .3], [-.3, .5, 0.], [.7, -.2, .4]]
    n = 3 if combine == "add3" else 2
    ps = [lucid.tensor(v, dtype=getattr(lucid, dtype), requires_grad=True) for v in values[:n]]
    ts = [torch.tensor(v, dtype=getattr(torch, dtype), requires_grad=True) for v in values[:n]]

    def run(lib, leaves):
        target = lib.tensor([1., 2., 3.], dtype=leaves[0].dtype)
        if combine == "stack_sum":
            s = lib.stack(leaves).sum(0)
        else:
            s = leaves[0]
            for leaf in leaves[1:]:
                s = s + leaf
        ((s - target) ** 2).mean().backward()

    run(torch, ts)
    for _ in range(3):
        run(lucid, ps)
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.grad.numpy(), 3 * t.grad.numpy(), rtol=1e-6, atol=1e-7)
    ps[0].grad.zero_()  # one leaf's buffer is its own
    assert np.abs(ps[1].grad.numpy()).sum() > 0
