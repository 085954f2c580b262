"""layer_norm as one primitive per direction (ops/norm.h): values and
gradients against torch across shapes and dtypes, compiled == eager, and
results independent of the thread count."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F
from lucid.compile import make_step


def _both(shape, ns, dtype, seed=0, affine=True):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    d = tuple(shape[-len(ns):])
    w = rng.uniform(0.5, 1.5, d).astype(dtype)
    b = rng.standard_normal(d).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    return x, (w if affine else None), (b if affine else None), g


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape,ns", [((4, 7), (7,)), ((2, 3, 128), (128,)), ((3, 5, 4, 6), (4, 6)),
                                      ((1, 1000), (1000,)), ((5, 1), (1,))])
@pytest.mark.parametrize("affine", [True, False])
def test_values_and_gradients_match_torch(dtype, tol, shape, ns, affine):
    x, w, b, g = _both(shape, ns, dtype, affine=affine)
    grads = []
    for lib in (lucid, torch):
        f = F if lib is lucid else torch.nn.functional
        xt = lib.tensor(x).requires_grad_()
        wt = lib.tensor(w).requires_grad_() if affine else None
        bt = lib.tensor(b).requires_grad_() if affine else None
        y = f.layer_norm(xt, ns, wt, bt, 1e-5)
        y.backward(lib.tensor(g))
        grads.append([y.detach().numpy()] + [t.grad.numpy() for t in (xt, wt, bt) if t is not None])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=tol * 10, atol=tol * 10)


def test_half_precision_within_half_tolerance():
    x, w, b, _ = _both((6, 64), (64,), np.float32)
    ours = F.layer_norm(lucid.tensor(x).half(), (64,), lucid.tensor(w).half(), lucid.tensor(b).half())
    theirs = torch.nn.functional.layer_norm(torch.tensor(x), (64,), torch.tensor(w), torch.tensor(b))
    np.testing.assert_allclose(ours.float().numpy(), theirs.numpy(), rtol=1e-2, atol=1e-2)


def test_thread_count_does_not_change_results():
    x, w, b, g = _both((64, 96), (96,), np.float32)
    results = []
    for threads in (1, 2):
        lucid.set_num_threads(threads)
        xt = lucid.tensor(x).requires_grad_()
        y = F.layer_norm(xt, (96,), lucid.tensor(w), lucid.tensor(b))
        y.backward(lucid.tensor(g))
        results.append((y.detach().numpy(), xt.grad.numpy()))
    lucid.set_num_threads(2)
    for a, c in zip(*results):
        np.testing.assert_array_equal(a, c)


def test_compiled_step_equals_eager_bitwise():
    x, w, b, _ = _both((8, 16, 32), (32,), np.float32)

    class Model:
        training = True

        def __init__(self):
            self.w, self.b = lucid.tensor(w).requires_grad_(), lucid.tensor(b).requires_grad_()

        def parameters(self):
            return [self.w, self.b]

        def __call__(self, t):
            return F.layer_norm(t * 2.0, (32,), self.w, self.b).tanh()

    model = Model()
    xt = lucid.tensor(x)
    loss = model(xt).pow(2).mean()
    loss.backward()
    eager = [loss.detach().numpy(), model.w.grad.numpy().copy(), model.b.grad.numpy().copy()]
    model.w.grad = model.b.grad = None
    step = make_step(model, lambda out: out.pow(2).mean())
    loss = step(xt)
    compiled = [loss.numpy(), model.w.grad.numpy(), model.b.grad.numpy()]
    for e, c in zip(eager, compiled):
        np.testing.assert_array_equal(e, c)
    assert "layer_norm" in step.executables()[0].dump()


def test_bad_inputs_name_the_problem():
    with pytest.raises(TypeError, match="floating point"):
        lucid._C.layer_norm(lucid.tensor([[1, 2]]), 1, 1e-5)
    with pytest.raises(ValueError, match="last 3 dims of a 2-d input"):
        lucid._C.layer_norm(lucid.randn(2, 3), 3, 1e-5)
    with pytest.raises(ValueError, match="eps must be non-negative"):
        lucid._C.layer_norm(lucid.randn(2, 3), 1, -1.0)
