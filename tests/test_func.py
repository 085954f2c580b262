"""lucid.func against torch.func: functional_call, grad (nested),
grad_and_value, vjp, jacrev, hessian and vmap (per-sample gradients)."""
import numpy as np
import pytest
import torch

import lucid


def _quantities(m):
    rng = np.random.default_rng(0)
    net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 1)).double()
    with m.no_grad():
        for p in net.parameters():
            p.copy_(m.tensor(rng.standard_normal(tuple(p.shape))))
    x, y = m.tensor(rng.standard_normal((5, 3))), m.tensor(rng.standard_normal((5, 1)))
    params = {k: v.detach() for k, v in net.named_parameters()}
    F = m.func

    def loss(p, x, y):
        return ((F.functional_call(net, p, (x,)) - y) ** 2).mean()

    def f(v):
        return (v.sin() * v).sum()

    g = F.grad(loss)(params, x, y)
    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x.unsqueeze(1), y.unsqueeze(1))
    v = m.tensor(rng.standard_normal(4))
    gv, value = F.grad_and_value(f)(v)
    out, vjp_fn = F.vjp(lambda a, b: a * b + a.exp(), v, v * 2)
    return ([g[k] for k in sorted(g)] + [per_sample[k] for k in sorted(per_sample)] +
            [F.grad(lambda u: F.grad(f)(u).sum())(v), F.hessian(f)(v), F.jacrev(lambda u: u.exp() * u.sum())(v),
             gv, value, out, *vjp_fn(m.ones(4, dtype=m.float64)),
             F.vmap(lambda a, b: (a @ b, a.sum()), in_dims=(0, None))(m.tensor(rng.standard_normal((3, 4))), v)[0],
             net[0].weight.detach()])


def test_transforms_match_torch_func():
    want, got = _quantities(torch), _quantities(lucid)
    assert len(want) == len(got) == 18
    for w, g in zip(want, got):
        assert not g.requires_grad  # outermost results carry no history, as torch.func's
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def test_functional_call_restores_the_module_and_checks_names():
    class Failing(lucid.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lucid.nn.Parameter(lucid.ones(2))

        def forward(self, x):
            assert self.w.sum().item() == 0  # the swapped-in tensor
            raise ZeroDivisionError

    failing = Failing()
    kept = failing.w
    with pytest.raises(ZeroDivisionError):
        lucid.func.functional_call(failing, {"w": lucid.zeros(2)}, lucid.ones(2))
    assert failing.w is kept  # restored after the call raised
    net = lucid.nn.Linear(2, 2)
    before = net.weight
    out = lucid.func.functional_call(net, {"weight": lucid.zeros(2, 2), "bias": lucid.ones(2)}, lucid.ones(3, 2))
    np.testing.assert_array_equal(out.numpy(), np.ones((3, 2)))
    assert net.weight is before
    with pytest.raises(AttributeError, match="no parameter or buffer"):
        lucid.func.functional_call(net, {"scale": lucid.ones(1)}, lucid.ones(1, 2))
    with pytest.raises(RuntimeError, match="missing keys"):
        lucid.func.functional_call(net, {"weight": lucid.ones(2, 2)}, lucid.ones(1, 2), strict=True)


def test_grad_errors_as_torch():
    for m in (torch, lucid):
        with pytest.raises(RuntimeError):
            m.func.grad(lambda v: v * 2)(m.ones(3))  # not a scalar
        with pytest.raises(ValueError):
            m.func.vmap(lambda a, b: a + b)(m.ones(3), m.ones(4))  # mapped sizes differ
