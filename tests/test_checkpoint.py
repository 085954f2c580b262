"""lucid.utils.checkpoint against torch.utils.checkpoint."""
import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import lucid
import lucid.utils.checkpoint as lcp


def _models():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 3), nn.Sigmoid())
    t, m = build(torch).double(), build(lucid).double()
    m.load_state_dict({k: lucid.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, m


def _grads(module, x):
    return [x.grad.numpy()] + [p.grad.numpy() for p in module.parameters()]


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("form", ["module", "closure_with_number", "sequential", "tuple_output"])
def test_gradients_equal_torch(reentrant, form):
    t, m = _models()
    x = np.random.default_rng(0).standard_normal((5, 4))
    got = []
    for lib, model, cp in ((torch, t, tcp), (lucid, m, lcp)):
        xi = lib.tensor(x, requires_grad=True)
        if form == "module":
            out = model[4](cp.checkpoint(model[:4], xi, use_reentrant=reentrant))
        elif form == "closure_with_number":
            out = cp.checkpoint(lambda a, s: model(a) * s, xi, 3.0, use_reentrant=reentrant)
        elif form == "sequential":
            out = cp.checkpoint_sequential(model, 3, xi, use_reentrant=reentrant)
        else:
            a, b = cp.checkpoint(lambda a: (model[:2](a), model[:2](a).exp()), xi, use_reentrant=reentrant)
            out = model[2:](a) + b.sum()
        out.square().sum().backward()
        got.append(_grads(model, xi))
    for g, w in zip(*got):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_function_runs_again_in_backward_with_the_same_random_draws():
    calls = []
    drop = lucid.nn.Dropout(0.5)
    lin = lucid.nn.Linear(6, 6)

    def block(a):
        calls.append(1)
        return lin(drop(a))

    x = lucid.randn(8, 6, requires_grad=True)
    lucid.manual_seed(7)
    lcp.checkpoint(block, x, use_reentrant=False).sum().backward()
    assert len(calls) == 2  # forward, then the recomputation
    after = lucid.rand(3)
    ck_grad = x.grad.numpy().copy()
    x.grad = None
    lucid.manual_seed(7)
    block(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ck_grad)  # same dropout mask
    np.testing.assert_array_equal(lucid.rand(3).numpy(), after.numpy())  # the stream moved on as without


def test_non_reentrant_gives_parameters_gradients_without_input_grads():
    t, m = _models()
    x = np.ones((2, 4))
    for lib, model, cp in ((torch, t, tcp), (lucid, m, lcp)):
        model(lib.tensor(x))  # warm
        cp.checkpoint(model, lib.tensor(x), use_reentrant=False).sum().backward()
    for a, b in zip(t.parameters(), m.parameters()):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-12)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = lcp.checkpoint(m, lucid.tensor(x), use_reentrant=True)
    assert not out.requires_grad  # as torch's reentrant variant


def test_fused_step_with_checkpoint_equals_eager():
    def make():
        lucid.manual_seed(3)
        model = lucid.nn.Sequential(lucid.nn.Linear(4, 16), lucid.nn.ReLU(), lucid.nn.Linear(16, 2))
        return model, lucid.optim.Adam(model.parameters(), lr=1e-2)

    def loss_fn(out, y):
        return lucid.nn.functional.mse_loss(out, y)

    class Wrapped(lucid.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return lcp.checkpoint(self.inner, x, use_reentrant=False)

    x, y = lucid.randn(8, 4), lucid.randn(8, 2)
    (a, opt_a), (b, opt_b) = make(), make()
    step = lucid.compile.fused_step(Wrapped(b), loss_fn, opt_b)
    for _ in range(3):
        opt_a.zero_grad()
        loss = loss_fn(Wrapped(a)(x), y)
        loss.backward()
        opt_a.step()
        fused = step(x, y)
        assert float(fused) == float(loss)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_arguments_checked_as_torch():
    lin = lucid.nn.Linear(2, 2)
    x = lucid.randn(1, 2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        lcp.checkpoint(lin, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        lcp.checkpoint(lin, x, use_reentrant=True, scale=2)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        lcp.checkpoint(lin, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        lcp.checkpoint_sequential([lin], 1, x, use_reentrant=False, scale=2)
    with lucid.no_grad():
        assert not lcp.checkpoint(lin, x, use_reentrant=False).requires_grad


def test_autograd_grad_through_a_checkpoint_raises_and_changes_nothing():
    lin = lucid.nn.Linear(2, 2)
    x = lucid.randn(3, 2, requires_grad=True)
    for reentrant in (True, False):
        out = lcp.checkpoint(lin, x, use_reentrant=reentrant).sum()
        with pytest.raises(RuntimeError, match="Checkpointing is not compatible with .grad"):
            lucid.autograd.grad(out, [x])
        assert lin.weight.grad is None and x.grad is None
