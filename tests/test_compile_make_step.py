"""make_step and the compile machinery (tracer, executable, cache) against
the eager loop it replaces."""
import numpy as np
import pytest

import lucid
from lucid import _C
from lucid.compile import make_step


class TinyMLP:
    """A model made of raw ops, so these tests depend on nothing but the core."""

    def __init__(self, sizes=(6, 8, 3), seed=0):
        lucid.manual_seed(seed)
        self.training = True
        self.params = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            self.params.append(lucid.randn(a, b).mul_(0.5).requires_grad_())
            self.params.append(lucid.randn(b).mul_(0.1).requires_grad_())

    def parameters(self):
        return list(self.params)

    def __call__(self, x):
        for i in range(0, len(self.params), 2):
            x = x @ self.params[i] + self.params[i + 1]
            if i + 2 < len(self.params):
                x = lucid.tanh(x)
        return x


def mse(out, y):
    return ((out - y) ** 2).mean()


def grads(model):
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def eager_grads(model, x, y, loss_fn=mse):
    for p in model.parameters():
        p.grad = None
    loss = loss_fn(model(x), y)
    loss.backward()
    return loss.item(), grads(model)


@pytest.fixture
def data():
    lucid.manual_seed(1)
    return lucid.randn(5, 6), lucid.randn(5, 3)


def test_make_step_matches_backward(data):
    x, y = data
    model = TinyMLP()
    loss_e, g_e = eager_grads(model, x, y)
    for p in model.parameters():
        p.grad = None
    step = make_step(model, mse)
    loss_c = step(x, y)
    assert loss_c.item() == pytest.approx(loss_e, rel=1e-6)
    for a, b in zip(g_e, grads(model)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_make_step_accumulates_into_existing_grads(data):
    x, y = data
    model = TinyMLP()
    _, g1 = eager_grads(model, x, y)
    held = model.params[0].grad  # a reference to the existing buffer stays valid
    step = make_step(model, mse)
    step(x, y)
    for a, b in zip(g1, grads(model)):
        np.testing.assert_allclose(b, 2 * a, rtol=1e-5, atol=1e-6)
    assert held._same(model.params[0].grad)


def test_frozen_parameter_gets_no_grad(data):
    x, y = data
    model = TinyMLP()
    model.params[0].requires_grad_(False)
    step = make_step(model, mse)
    step(x, y)
    assert model.params[0].grad is None
    assert model.params[1].grad is not None


def test_one_executable_run_and_no_eager_dispatch_per_call(data):
    x, y = data
    model = TinyMLP()
    step = make_step(model, mse)
    step(x, y)  # compiles the no-grad signature
    step(x, y)  # grads now exist: compiles the accumulating signature
    runs0, disp0 = _C.executable_run_count(), _C.eager_dispatch_count()
    for _ in range(3):
        step(x, y)
    assert _C.executable_run_count() - runs0 == 3
    assert _C.eager_dispatch_count() - disp0 == 0


def test_new_batch_size_compiles_a_second_entry_and_stays_correct():
    model = TinyMLP()
    step = make_step(model, mse)
    for n in (4, 7, 4):
        lucid.manual_seed(n)
        x, y = lucid.randn(n, 6), lucid.randn(n, 3)
        for p in model.parameters():
            p.grad = None
        loss = step(x, y)
        loss_e, g_e = eager_grads(model, x, y)
        assert loss.item() == pytest.approx(loss_e, rel=1e-6)
    info = step.cache_info()
    assert info.misses == 2 and info.entries == 2 and info.hits == 1
    # the miss is reported in the user's terms
    assert info.last_miss == "input 0 shape [4, 6] -> [7, 6]; input 1 shape [4, 3] -> [7, 3]"


def test_cache_is_bounded_lru():
    model = TinyMLP()
    step = make_step(model, mse, cache_size=2)
    for n in (2, 3, 4):
        for p in model.parameters():
            p.grad = None
        step(lucid.randn(n, 6), lucid.randn(n, 3))
    assert step.cache_info().entries == 2
    step.cache_size = 1
    assert step.cache_info().entries == 1


@pytest.mark.parametrize("bad, kind", [
    (lambda x, y: (lucid.randn(5, 7), y), ValueError),                       # shape
    (lambda x, y: (x.double(), y), TypeError),                               # dtype
    (lambda x, y: (x,), ValueError),                                         # argument count
])
def test_bad_inputs_raise_and_change_nothing(data, bad, kind):
    x, y = data
    model = TinyMLP()
    step = make_step(model, mse)
    step(x, y)
    before = grads(model)
    step.cache_size = 1  # keep only the traced signature
    args = bad(x, y)
    entry_exe = step.executables()[0]
    with pytest.raises(kind):
        entry_exe.run(list(args), [])
    for a, b in zip(before, grads(model)):
        np.testing.assert_array_equal(a, b)


def test_data_dependent_call_inside_trace_raises_clearly(data):
    x, y = data
    model = TinyMLP()

    def loss_fn(out, y):
        if (out.sum() > 0).item():  # reads a value: cannot be compiled
            return mse(out, y)
        return mse(out, -y)

    step = make_step(model, loss_fn)
    with pytest.raises(RuntimeError, match="cannot be compiled"):
        step(x, y)
    assert all(p.grad is None for p in model.parameters())


def test_random_draws_are_fed_fresh_each_call_and_follow_manual_seed():
    w = lucid.ones(4, requires_grad=True)

    class Noisy:
        training = True

        def parameters(self):
            return [w]

        def __call__(self, x):
            return x * w * lucid.rand(4)

    step = make_step(Noisy(), lambda out, y: (out * y).sum())
    x, y = lucid.ones(4), lucid.ones(4)

    def run_three():
        lucid.manual_seed(123)
        out = []
        for _ in range(3):
            w.grad = None
            step(x, y)
            out.append(w.grad.numpy().copy())
        return out

    a, b = run_three(), run_three()
    assert not np.array_equal(a[0], a[1])  # a new mask every step
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)  # reproducible under manual_seed
    # and the same numbers eager mode draws
    lucid.manual_seed(123)
    w.grad = None
    (Noisy()(x) * y).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), a[0])


def test_rebinding_a_parameter_recompiles(data):
    x, y = data
    model = TinyMLP()
    step = make_step(model, mse)
    step(x, y)
    model.params[0].data = lucid.zeros(6, 8)
    for p in model.parameters():
        p.grad = None
    loss = step(x, y)
    loss_e, _ = eager_grads(model, x, y)
    assert loss.item() == pytest.approx(loss_e, rel=1e-6)
    assert "rebound" in step.cache_info().last_miss


def test_graph_passes_fold_and_dedupe(data):
    x, y = data
    model = TinyMLP()
    step = make_step(model, mse)
    step(x, y)
    exe = step.executables()[0]
    text = exe.dump()
    assert "full" not in text          # small constants folded at compile time
    assert "permute" not in text       # transposes folded into matmul flags
