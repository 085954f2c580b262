"""lucid.autograd.Function (custom forward/backward in Python) and
Tensor.register_hook, against PyTorch, eagerly and inside a fused step."""
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F
from lucid.compile import fused_step


def _functions(m):
    """The same custom Functions written against torch or lucid."""
    class Exp(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class GradReverse(m.autograd.Function):  # domain adaptation's gradient reversal layer
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g.neg() * ctx.alpha, None

    class StraightThrough(m.autograd.Function):  # forward without ctx, setup_context apart
        @staticmethod
        def forward(x):
            return x.round()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.seen = len(inputs)

        @staticmethod
        def backward(ctx, g):
            return g

    class TwoOutputs(m.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, scale=2.0):
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            return a * b * scale, a + b

        @staticmethod
        def backward(ctx, g1, g2):
            a, b = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, True)
            return g1 * b * ctx.scale + g2, g1 * a * ctx.scale + g2, None

    class AddBias(m.autograd.Function):  # the bias's gradient is returned broadcast: summed to its shape
        @staticmethod
        def forward(ctx, a, bias):
            return a + bias

        @staticmethod
        def backward(ctx, g):
            return g, g

    class Identity(m.autograd.Function):  # returns its input: the output is a new tensor
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return 3 * g

    class Unmaterialized(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            assert g2 is None
            return 2 * g1

    class ArgMaxAndValue(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax(1)
            value = x.amax(1)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return value, idx

        @staticmethod
        def backward(ctx, g, _):
            x, idx = ctx.saved_tensors
            return m.zeros_like(x).scatter(1, idx[:, None], g[:, None])

    class MulInPlace(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    return (Exp, GradReverse, StraightThrough, TwoOutputs, AddBias, Identity, Unmaterialized, ArgMaxAndValue,
            MulInPlace)


def _program(m):
    Exp, GradReverse, StraightThrough, TwoOutputs, AddBias, Identity, Unmaterialized, ArgMax, MulInPlace = \
        _functions(m)
    rng = np.random.default_rng(0)
    x = m.tensor(rng.standard_normal((3, 4))).requires_grad_()
    y = m.tensor(rng.standard_normal((3, 4))).requires_grad_()
    bias = m.tensor(rng.standard_normal(4)).requires_grad_()
    p, q = TwoOutputs.apply(x, y)
    value, idx = ArgMax.apply(x * y)
    loss = (Exp.apply(x).sum() + GradReverse.apply(x * y, 0.5).pow(2).sum() + StraightThrough.apply(x * 3).sum()
            + (p * q).sum() + AddBias.apply(x, bias).pow(2).sum() + Identity.apply(x).sum()
            + Unmaterialized.apply(x)[0].sum() + (value * value).sum() + MulInPlace.apply(y * 1).sum())
    loss.backward()
    return [loss.detach().numpy(), x.grad.numpy(), y.grad.numpy(), bias.grad.numpy(), idx.requires_grad,
            idx.numpy()]


def test_functions_match_torch():
    for want, got in zip(_program(torch), _program(lucid)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_backward_through_a_function_records_history_with_create_graph():
    out = []
    for m in (torch, lucid):
        class Cube(m.autograd.Function):
            @staticmethod
            def forward(ctx, v):
                ctx.save_for_backward(v)
                return v ** 3

            @staticmethod
            def backward(ctx, g):
                (v,) = ctx.saved_tensors
                return 3 * v * v * g

        z = m.tensor([1.5], dtype=m.float64).requires_grad_()
        (g,) = m.autograd.grad(Cube.apply(z).sum(), z, create_graph=True)
        (g2,) = m.autograd.grad(g.sum(), z)
        out.append((g.item(), g2.item()))
    assert out[0] == out[1] == (6.75, 9.0)


def test_function_errors_as_torch():
    class WrongCount(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    class GradForANumber(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    class Square(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = lucid.randn(3).requires_grad_()
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        WrongCount.apply(x, x * 1).sum().backward()
    with pytest.raises(RuntimeError, match="was not a Tensor"):
        GradForANumber.apply(x, 2.0).sum().backward()
    s = Square.apply(x).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()
    a = x * 1
    s = Square.apply(a).sum()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.backward()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        class Dirty(lucid.autograd.Function):
            @staticmethod
            def forward(ctx, v):
                ctx.mark_dirty(v)
                return v

            @staticmethod
            def backward(ctx, g):
                return g

        Dirty.apply(x)
    with pytest.raises(RuntimeError, match="apply"):
        Square()


def test_no_node_without_an_input_that_requires_grad():
    class Double(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("not called")

    assert not Double.apply(lucid.ones(2)).requires_grad
    with lucid.no_grad():
        assert not Double.apply(lucid.ones(2).requires_grad_()).requires_grad


def test_once_differentiable_backward_records_nothing():
    class Sq(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @lucid.autograd.function.once_differentiable
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = lucid.tensor([3.0]).requires_grad_()
    (g,) = lucid.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    assert g.item() == 6.0 and not g.requires_grad


# ----------------------------------------------------------------- hooks
def _hooked(m):
    rng = np.random.default_rng(2)
    x = m.tensor(rng.standard_normal(5)).requires_grad_()
    y = m.tensor(rng.standard_normal(5)).requires_grad_()
    seen = []
    h = x * 2
    h.register_hook(lambda g: g * 10)
    h.register_hook(lambda g: seen.append(g.sum().item()))  # sees the first hook's result
    h.retain_grad()  # .grad after every hook
    handle = y.register_hook(lambda g: g + 1)
    (h * y).sum().backward()
    first = [x.grad.numpy().copy(), y.grad.numpy().copy(), h.grad.numpy()]
    handle.remove()
    x.grad = y.grad = None
    (x * y).sum().backward()
    (gx,) = m.autograd.grad((x * x).sum(), x)  # grad() too sees no removed hook
    x.register_hook(lambda g: g * 0.5)
    (gx_hooked,) = m.autograd.grad((x * x).sum(), x)  # a leaf's hook applies to grad()'s result
    return first + [y.grad.numpy(), gx.numpy(), gx_hooked.numpy(), np.array(seen)]


def test_hooks_match_torch():
    for want, got in zip(_hooked(torch), _hooked(lucid)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_hook_errors():
    x = lucid.randn(3).requires_grad_()
    for hook, kind, match in [(lambda g: g[:2], RuntimeError, "changed the size"),
                              (lambda g: 3, TypeError, "None or a Tensor"),
                              (lambda g: 1 / 0, ZeroDivisionError, "")]:
        handle = x.register_hook(hook)
        with pytest.raises(kind, match=match):
            (x * 2).sum().backward()
        handle.remove()
    x.grad = None
    (x * 2).sum().backward()  # all removed: the plain gradient
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        lucid.randn(2).register_hook(lambda g: g)


# ------------------------------------------------------- inside a fused step
class _Reverse(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g.neg() * ctx.alpha, None


class _Clip(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)


class _Net(lucid.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = lucid.nn.Linear(6, 8), lucid.nn.Linear(8, 3)

    def forward(self, x):
        return self.b(_Reverse.apply(_Clip.apply(self.a(x)), 0.3))


def test_functions_and_hooks_in_a_fused_step_match_eager():
    def train(fused):
        lucid.manual_seed(0)
        model = _Net()
        for p in model.parameters():
            p.register_hook(lambda g: g.clamp(-0.05, 0.05))
        opt = lucid.optim.Adam(model.parameters(), lr=0.01)
        step = fused_step(model, F.cross_entropy, opt) if fused else None
        rng = np.random.default_rng(1)
        losses = []
        for _ in range(4):
            x = lucid.tensor(rng.standard_normal((4, 6)).astype(np.float32))
            y = lucid.tensor(rng.integers(0, 3, 4))
            if fused:
                losses.append(float(step(x, y)))
            else:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                losses.append(float(loss))
        return losses, [p.detach().numpy() for p in model.parameters()]

    (eager_losses, eager), (fused_losses, fused) = train(False), train(True)
    assert eager_losses == fused_losses
    for a, b in zip(eager, fused):
        np.testing.assert_array_equal(a, b)


def _module_backward_hooks(m):
    rng = np.random.default_rng(0)
    net = m.nn.Sequential(m.nn.Linear(4, 5), m.nn.Tanh(), m.nn.Linear(5, 2)).double()
    with m.no_grad():
        for p in net.parameters():
            p.copy_(m.tensor(rng.standard_normal(tuple(p.shape))))
    seen = []
    net[0].register_full_backward_hook(
        lambda mod, gi, go: seen.append([None if g is None else g.numpy().copy() for g in gi + go]))
    net[2].register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2,))
    net[2].register_full_backward_pre_hook(lambda mod, go: (go[0] + 1,))
    x = m.tensor(rng.standard_normal((3, 4))).requires_grad_()
    net(x).pow(2).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns that the hook fires with grad_input None
        net(m.tensor(rng.standard_normal((3, 4)))).sum().backward()  # the input needs no gradient
    return seen, [x.grad.numpy()] + [p.grad.numpy() for p in net.parameters()]


def test_module_backward_hooks_match_torch():
    (want_seen, want), (got_seen, got) = _module_backward_hooks(torch), _module_backward_hooks(lucid)
    assert len(got_seen) == len(want_seen) == 2
    for w_call, g_call in zip(want_seen, got_seen):
        for w, g in zip(w_call, g_call):
            assert (w is None) == (g is None)
            if w is not None:
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_post_accumulate_grad_hooks_step_an_optimizer_per_parameter_as_torch():
    """The optimizer-in-backward pattern: each parameter steps its own
    optimizer as soon as its gradient is accumulated."""
    results = []
    for m in (torch, lucid):
        rng = np.random.default_rng(5)
        net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 1)).double()
        with m.no_grad():
            for p in net.parameters():
                p.copy_(m.tensor(rng.standard_normal(tuple(p.shape))))
        opts = {p: m.optim.SGD([p], lr=0.1) for p in net.parameters()}

        def step(p, opts=opts):
            opts[p].step()
            opts[p].zero_grad()

        handles = [p.register_post_accumulate_grad_hook(step) for p in net.parameters()]
        x = m.tensor(rng.standard_normal((5, 3)))
        for _ in range(3):
            net(x).pow(2).sum().backward()
        for h in handles:
            h.remove()
        results.append([p.detach().numpy().copy() for p in net.parameters()] +
                       [p.grad is None for p in net.parameters()])
    for w, g in zip(*results):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (lucid.ones(2).requires_grad_() * 2).register_post_accumulate_grad_hook(lambda p: None)
