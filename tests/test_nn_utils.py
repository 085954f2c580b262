"""nn.utils against torch.nn.utils: gradient clipping and parameter/vector
conversion."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from conftest import assert_close, rnd


def _params_with_grads(scale=1.0, n=3):
    lp, tp = [], []
    for i in range(n):
        w, g = rnd(3, 4 - i, seed=i), rnd(3, 4 - i, seed=10 + i) * scale
        a = nn.Parameter(lucid.tensor(w))
        a.grad = lucid.tensor(g)
        b = torch.nn.Parameter(torch.tensor(w))
        b.grad = torch.tensor(g)
        lp.append(a), tp.append(b)
    return lp, tp


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.3, float("inf")),
                                                (2.0, 3.0)])
def test_clip_grad_norm(max_norm, norm_type):
    lp, tp = _params_with_grads()
    grads = [p.grad for p in lp]
    total = nn.utils.clip_grad_norm_(lp, max_norm, norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    assert_close(total, t_total, 1e-6, 1e-6)
    for a, b, g in zip(lp, tp, grads):
        assert_close(a.grad, b.grad, 1e-6, 1e-7)
        assert a.grad._same(g)  # clipped in place


def test_clip_grad_norm_single_tensor_skips_missing_grads_and_empty():
    p = nn.Parameter(lucid.ones(4))
    q = nn.Parameter(lucid.ones(2))  # no grad
    p.grad = lucid.full((4,), 3.0)
    total = nn.utils.clip_grad_norm_([p, q], 1.0)
    assert float(total) == pytest.approx(6.0)
    np.testing.assert_allclose(p.grad.numpy(), 3.0 / (6.0 + 1e-6), rtol=1e-6)
    assert q.grad is None
    p.grad = lucid.full((4,), 0.1)
    assert float(nn.utils.clip_grad_norm_(p, 1.0)) == pytest.approx(0.2)
    np.testing.assert_allclose(p.grad.numpy(), 0.1)  # below max_norm: unchanged
    assert float(nn.utils.clip_grad_norm_([], 1.0)) == 0.0


def test_clip_grad_norm_nonfinite():
    lp, _ = _params_with_grads()
    lp[1].grad = lucid.tensor(np.array([[np.inf] * 3] * 3, np.float32))
    before = [p.grad.numpy().copy() for p in lp]
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(lp, 1.0, error_if_nonfinite=True)
    for p, b in zip(lp, before):
        np.testing.assert_array_equal(p.grad.numpy(), b)  # nothing clipped
    total = nn.utils.clip_grad_norm_(lp, 1.0)
    assert np.isinf(float(total))


def test_clip_grad_value():
    lp, tp = _params_with_grads(scale=3.0)
    nn.utils.clip_grad_value_(lp, 0.5)
    torch.nn.utils.clip_grad_value_(tp, 0.5)
    for a, b in zip(lp, tp):
        assert_close(a.grad, b.grad)


def test_clip_grad_norm_on_model_after_backward():
    m = nn.Linear(5, 3)
    t = torch.nn.Linear(5, 3)
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = rnd(8, 5)
    (m(lucid.tensor(x)) ** 2).sum().backward()
    (t(torch.tensor(x)) ** 2).sum().backward()
    assert_close(nn.utils.clip_grad_norm_(m.parameters(), 0.1), torch.nn.utils.clip_grad_norm_(t.parameters(), 0.1),
                 1e-5, 1e-6)
    for a, b in zip(m.parameters(), t.parameters()):
        assert_close(a.grad, b.grad, 1e-5, 1e-7)


def test_parameters_to_vector_and_back():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 4))
    t = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 4))
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert_close(vec, torch.nn.utils.parameters_to_vector(t.parameters()).detach())
    vec.sum().backward()  # differentiable, like torch
    assert (m[0].weight.grad.numpy() == 1).all()
    new = lucid.arange(vec.shape[0], dtype=lucid.float32)
    weights = [p for p in m.parameters()]
    nn.utils.vector_to_parameters(new, m.parameters())
    torch.nn.utils.vector_to_parameters(torch.arange(vec.shape[0], dtype=torch.float32), t.parameters())
    for a, b, w in zip(m.parameters(), t.parameters(), weights):
        assert a is w
        assert_close(a.detach(), b.detach())
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], m.parameters())
    with pytest.raises(ValueError, match="elements"):
        nn.utils.vector_to_parameters(lucid.zeros(3), m.parameters())
