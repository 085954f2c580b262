"""Autograd against PyTorch: backward, accumulation, retain_graph, grad
modes, autograd.grad, retain_grad, detach and in-place ops with their
safety checks."""
import numpy as np
import pytest
import torch

import lucid
from conftest import assert_close, check, rnd, to_torch


def _pair(array, requires_grad=True):
    """The same leaf on both sides."""
    return (lucid.tensor(array, requires_grad=requires_grad), torch.tensor(array, requires_grad=requires_grad))


def test_backward_scalar_and_with_gradient():
    xl, xt = _pair(rnd(3, 4, seed=1))
    (xl.exp() * 2).sum().backward()
    (xt.exp() * 2).sum().backward()
    assert_close(xl.grad, xt.grad)
    g = rnd(3, 4, seed=2)
    xl, xt = _pair(rnd(3, 4, seed=1))
    (xl * xl).backward(lucid.tensor(g))
    (xt * xt).backward(torch.tensor(g))
    assert_close(xl.grad, xt.grad)
    xl, xt = _pair(rnd(seed=1))
    (xl * 3).backward()  # 0-d output
    (xt * 3).backward()
    assert_close(xl.grad, xt.grad)


def test_grad_accumulates_across_backward_calls():
    xl, xt = _pair(rnd(5, seed=3))
    for x in (xl, xt):
        (x * 2).sum().backward()
        g = x.grad
        (x * x).sum().backward()
        assert x.grad is g or x.grad.data_ptr() == g.data_ptr()  # accumulated in place
    assert_close(xl.grad, xt.grad)
    for x in (xl, xt):
        x.grad = None
        x.sum().backward()
    assert_close(xl.grad, xt.grad)


def test_grad_of_shared_subexpressions():
    """A value used several times (a diamond) sums its gradients."""
    check(lambda m, a: (a * a + a.exp() * a).sum(), rnd(4, seed=4))
    check(lambda m, a, b: ((a @ b) * a.sum(1, keepdim=True) + (a @ b).tanh()).mean(), rnd(3, 4, seed=5),
          rnd(4, 2, seed=6))


def test_multiple_outputs_backward():
    xl, xt = _pair(rnd(4, seed=7))
    for m, x in ((lucid, xl), (torch, xt)):
        a, b = x * 2, x.sin()
        m.autograd.backward([a, b], [m.ones(4), m.full((4,), 0.5)])
    assert_close(xl.grad, xt.grad)


def test_retain_graph():
    for m in (lucid, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        assert_close(x.grad, torch.tensor([1.0, 2.0]).exp().mul(torch.tensor([2.0, 3.0])).mul(2)) if m is lucid \
            else None
        x.grad = None
        z = (x.exp() * x).sum()
        z.backward()
        with pytest.raises(RuntimeError, match="second time|retain_graph"):
            z.backward()


def test_backward_errors():
    for m in (lucid, torch):
        x = m.ones(3)
        with pytest.raises(RuntimeError, match="does not require grad"):
            x.sum().backward()
        x = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="scalar"):
            (x * 2).backward()
        with pytest.raises(RuntimeError, match="shape"):
            (x * 2).sum().backward(m.ones(3))


def test_no_grad_enable_grad_set_grad_enabled():
    x = lucid.ones(3, requires_grad=True)
    with lucid.no_grad():
        y = x * 2
        assert not lucid.is_grad_enabled()
        with lucid.enable_grad():
            z = x * 2
            assert lucid.is_grad_enabled()
        assert not lucid.is_grad_enabled()
    assert lucid.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None

    with lucid.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert lucid.is_grad_enabled()
    lucid.set_grad_enabled(False)  # a plain call takes effect, like torch
    assert not lucid.is_grad_enabled()
    lucid.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_mode_decorators():
    x = lucid.ones(3, requires_grad=True)

    @lucid.no_grad()
    def f():
        return x * 2

    @lucid.enable_grad()
    def g():
        return x * 2

    @lucid.set_grad_enabled(False)
    def h():
        return x * 2

    assert lucid.is_grad_enabled()  # set_grad_enabled as a decorator does not leak
    assert not f().requires_grad
    with lucid.no_grad():
        assert g().requires_grad
    assert not h().requires_grad
    assert lucid.is_grad_enabled()
    # the decorator restores the mode even when the function raises
    @lucid.no_grad()
    def boom():
        raise KeyError("x")

    with pytest.raises(KeyError):
        boom()
    assert lucid.is_grad_enabled()


def test_requires_grad_flags():
    for m in (lucid, torch):
        x = m.ones(2)
        assert not x.requires_grad and x.is_leaf
        assert x.requires_grad_() is x
        assert x.requires_grad
        x.requires_grad_(False)
        assert not x.requires_grad
        x.requires_grad = True
        y = x * 2
        assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
        with pytest.raises(RuntimeError, match="floating point"):
            m.ones(2, dtype=m.int64).requires_grad_()
        with pytest.raises(RuntimeError, match="leaf"):
            y.requires_grad_(False)
        assert m.zeros(2, requires_grad=True).requires_grad
        assert m.tensor([1.0], requires_grad=True).requires_grad


def test_integer_and_bool_results_do_not_require_grad():
    x = lucid.ones(3, requires_grad=True)
    assert not (x > 0).requires_grad
    assert not x.argmax().requires_grad
    v, i = x.max(0)
    assert v.requires_grad and not i.requires_grad


def test_autograd_grad():
    xl, xt = _pair(rnd(3, seed=8))
    wl, wt = _pair(rnd(3, seed=9))
    gl = lucid.autograd.grad((xl * wl).sum(), [xl, wl])
    gt = torch.autograd.grad((xt * wt).sum(), [xt, wt])
    assert_close(list(gl), list(gt))
    assert xl.grad is None and wl.grad is None  # .grad untouched
    # a single input, a grad_outputs, retain_graph
    yl, yt = xl.exp(), xt.exp()
    up = rnd(3, seed=10)
    gl = lucid.autograd.grad(yl, xl, lucid.tensor(up), retain_graph=True)
    gt = torch.autograd.grad(yt, xt, torch.tensor(up), retain_graph=True)
    assert isinstance(gl, tuple) and len(gl) == 1
    assert_close(gl[0], gt[0])
    assert_close(lucid.autograd.grad(yl.sum(), xl)[0], torch.autograd.grad(yt.sum(), xt)[0])


def test_autograd_grad_unused_inputs():
    xl, xt = _pair(rnd(3, seed=11))
    zl, zt = _pair(rnd(3, seed=12))
    for m, x, z in ((lucid, xl, zl), (torch, xt, zt)):
        with pytest.raises(RuntimeError, match="allow_unused"):
            m.autograd.grad((x * 2).sum(), [x, z])
        g = m.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
        assert g[1] is None


def test_autograd_grad_of_intermediate():
    xl, xt = _pair(rnd(3, seed=13))
    hl, ht = xl.sin(), xt.sin()
    assert_close(lucid.autograd.grad((hl * hl).sum(), hl)[0], torch.autograd.grad((ht * ht).sum(), ht)[0])


def test_retain_grad():
    xl, xt = _pair(rnd(3, seed=14))
    for x in (xl, xt):
        h = x * 3
        h.retain_grad()
        assert h.retains_grad
        y = (h * h).sum()
        y.backward()
        x.h = h
    assert_close(xl.h.grad, xt.h.grad)
    assert_close(xl.grad, xt.grad)
    # a non-leaf without retain_grad keeps no .grad
    x = lucid.ones(2, requires_grad=True)
    h = x * 2
    h.sum().backward()
    assert h.grad is None


def test_detach():
    x = lucid.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d._shares_storage(y)
    d.add_(1.0)  # shares memory: y sees it (like torch)
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, 3.0, 3.0])
    z = (x * d).sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
    w = x * 2
    assert w.detach_() is w and not w.requires_grad


def test_gradient_dtype_matches_input():
    xl = lucid.ones(3, dtype=lucid.float16, requires_grad=True)
    (xl.float() * 2).sum().backward()
    assert xl.grad.dtype == lucid.float16
    xl = lucid.ones(3, dtype=lucid.float64, requires_grad=True)
    (xl * lucid.ones(3)).sum().backward()
    assert xl.grad.dtype == lucid.float64


def test_grad_assignment_checks():
    x = lucid.ones(3, requires_grad=True)
    x.grad = lucid.full((3,), 2.0)
    (x * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
    # PyTorch's kinds: RuntimeError for a wrong size or dtype, TypeError for
    # something that is not a tensor.
    with pytest.raises(RuntimeError, match="size"):
        x.grad = lucid.ones(4)
    with pytest.raises(RuntimeError, match="dtype"):
        x.grad = lucid.ones(3, dtype=lucid.float64)
    with pytest.raises(TypeError, match="Tensor or None"):
        x.grad = 5.0


# ------------------------------------------------------------------ in-place
INPLACE = [
    ("add_", lambda m, t, o: t.add_(o)), ("add_ alpha", lambda m, t, o: t.add_(o, alpha=2.0)),
    ("mul_", lambda m, t, o: t.mul_(o)), ("sub_", lambda m, t, o: t.sub_(o)), ("div_", lambda m, t, o: t.div_(o)),
    ("clamp_", lambda m, t, o: t.clamp_(-0.3, 0.4)), ("clamp_ min", lambda m, t, o: t.clamp_(min=0.1)),
    ("copy_", lambda m, t, o: t.copy_(o)), ("fill_", lambda m, t, o: t.fill_(1.5)), ("zero_", lambda m, t, o: t.zero_()),
    ("+=", lambda m, t, o: t.__iadd__(o)), ("*=", lambda m, t, o: t.__imul__(o)), ("-=", lambda m, t, o: t.__isub__(o)),
    ("/=", lambda m, t, o: t.__itruediv__(o)), ("exp_", lambda m, t, o: t.exp_()), ("relu_", lambda m, t, o: t.relu_()),
]


@pytest.mark.parametrize("name,op", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_forward_and_gradient(name, op):
    def fn(m, a, b):
        t = a * 1.0  # a non-leaf that requires grad
        r = op(m, t, b)
        assert r is t
        return t * a

    check(fn, rnd(3, 4, seed=15), np.abs(rnd(4, seed=16)) + 0.5)


@pytest.mark.parametrize("name,op", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_without_grad(name, op):
    def fn(m, a, b):
        op(m, a, b)
        return a

    check(fn, rnd(3, 4, seed=17), np.abs(rnd(4, seed=18)) + 0.5, grad=False)


def test_inplace_dtype_rules():
    """An in-place op's result must be castable to self's dtype (no float
    into an integer tensor, nothing but bool into a bool tensor)."""
    for m in (lucid, torch):
        x = m.zeros(3, dtype=m.int64)
        with pytest.raises(RuntimeError, match="can't be cast"):
            x.add_(2.7)
        with pytest.raises(RuntimeError, match="can't be cast"):
            x.mul_(m.ones(3))
        with pytest.raises(RuntimeError, match="can't be cast"):
            m.zeros(2, dtype=m.bool).add_(1)
        np.testing.assert_array_equal(x.numpy(), np.zeros(3))
        x.add_(2)
        x.add_(m.ones(3, dtype=m.int32))
        x.copy_(m.full((3,), 2.7))  # copy_ converts like a cast
        np.testing.assert_array_equal(x.numpy(), np.full(3, 2))
    assert lucid.can_cast(lucid.int64, lucid.float16) and not lucid.can_cast(lucid.float32, lucid.int32)


def test_inplace_result_cast_to_self_dtype():
    xl = lucid.tensor([1, 2, 3])
    xt = torch.tensor([1, 2, 3])
    xl.mul_(2)
    xt.mul_(2)
    assert_close(xl, xt)
    xl = lucid.ones(3, dtype=lucid.float16)
    xt = torch.ones(3, dtype=torch.float16)
    xl.add_(lucid.tensor([0.1, 0.2, 0.3], dtype=lucid.float64))
    xt.add_(torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64))
    assert_close(xl, xt)


def test_inplace_on_leaf_requiring_grad_raises():
    for m in (lucid, torch):
        x = m.ones(3, requires_grad=True)
        for op in (lambda: x.add_(1.0), lambda: x.mul_(2.0), lambda: x.zero_(), lambda: x.fill_(1.0),
                   lambda: x.copy_(m.zeros(3)), lambda: x.clamp_(0, 1)):
            with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
                op()
        np.testing.assert_array_equal(x.detach().numpy(), np.ones(3))  # nothing changed
        with m.no_grad():  # allowed under no_grad (how optimizers update parameters)
            x.add_(1.0)
        np.testing.assert_array_equal(x.detach().numpy(), np.full(3, 2.0))


def test_layer_norm_saves_its_input_not_its_output_as_torch():
    """PyTorch's layer_norm backward reads the input, mean and rstd: its output
    may be written in place before backward, its input may not."""
    x0 = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    grads = []
    for m in (lucid, torch):
        x = m.tensor(x0, requires_grad=True)
        y = m.nn.functional.layer_norm(x * 1, (5,))
        y.relu_()
        y.sum().backward()
        grads.append(np.asarray(x.grad.numpy()))
        h = m.tensor(x0, requires_grad=True) * 1
        z = m.nn.functional.layer_norm(h, (5,))
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_modified_saved_tensor_raises_at_backward():
    for m in (lucid, torch):
        x = m.ones(3, requires_grad=True)
        h = x * 2
        y = h.exp()  # saves its output
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        x = m.ones(3, requires_grad=True)
        a = x * 1.0
        b = a * a  # saves a
        a.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            b.sum().backward()


def test_inplace_on_unsaved_tensor_is_fine():
    check(lambda m, a: ((a * 2).add_(1.0) * 3).sum(), rnd(4, seed=19))
    check(lambda m, a: ((a + 1).mul_(a) + (a + 1)).sum(), rnd(4, seed=19))


def test_inplace_copy_from_leaf_gives_history():
    for m in (lucid, torch):
        src = m.ones(3, requires_grad=True)
        dst = m.zeros(3)
        dst.copy_(src)
        assert dst.requires_grad
        (dst * 4).sum().backward()
        np.testing.assert_array_equal(src.grad.numpy(), np.full(3, 4.0))


def test_inplace_broadcast_errors():
    for m in (lucid, torch):
        x = m.zeros(3)
        with pytest.raises(RuntimeError):
            x.add_(m.ones(2, 3))
        np.testing.assert_array_equal(x.numpy(), np.zeros(3))


def test_version_counter():
    x = lucid.zeros(3)
    assert x._version == 0
    x.add_(1.0)
    x.mul_(2.0)
    x.zero_()
    assert x._version == 3


def test_inplace_through_a_view_updates_the_base_history():
    check(lambda m, a: (lambda b: (b.view(2, 2).mul_(3), (b * b).sum())[1])(a * 1), rnd(4, seed=20))


def test_inplace_on_an_indexed_view_writes_the_base():
    def fn(m, a):
        b = a * 1
        b[0].mul_(5)
        return b

    check(fn, rnd(2, 2, seed=21))


# ------------------------------------------------------ higher-order gradients
def _normalized_as_ops(x, dims):
    xc = x - x.mean(dims, keepdim=True)
    return xc * torch.rsqrt((xc * xc).mean(dims, keepdim=True) + 1e-5)


_SECOND_ORDER = {
    "exp": lambda m, x, y: m.exp(x), "log": lambda m, x, y: m.log(x), "tanh": lambda m, x, y: m.tanh(x),
    "sigmoid": lambda m, x, y: m.sigmoid(x), "sqrt": lambda m, x, y: m.sqrt(x), "rsqrt": lambda m, x, y: m.rsqrt(x),
    "erf": lambda m, x, y: m.erf(x), "asinh": lambda m, x, y: m.asinh(x), "atan": lambda m, x, y: m.atan(x),
    "gelu": lambda m, x, y: m.nn.functional.gelu(x), "silu": lambda m, x, y: m.nn.functional.silu(x),
    "softplus": lambda m, x, y: m.nn.functional.softplus(x), "elu": lambda m, x, y: m.nn.functional.elu(x - 1),
    "softmax": lambda m, x, y: m.softmax(x, 1), "log_softmax": lambda m, x, y: m.log_softmax(x, 0),
    "logsumexp": lambda m, x, y: m.logsumexp(x, 1), "cumprod": lambda m, x, y: m.cumprod(x, 1),
    "norm": lambda m, x, y: m.linalg.vector_norm(x, dim=1), "std": lambda m, x, y: x.std(1),
    # PyTorch's native batch_norm and layer_norm double backwards are not
    # themselves differentiated exactly (their third orders differ from the same
    # formulas spelled in ops): the oracle is that formula.
    "batch_norm": lambda m, x, y: (m.nn.functional.batch_norm(x, None, None, training=True) if m is lucid else
                                   _normalized_as_ops(x, (0,))),
    "group_norm": lambda m, x, y: m.nn.functional.group_norm(x.reshape(3, 2, 2), 1),
    "layer_norm": lambda m, x, y: (m.nn.functional.layer_norm(x, [4], y[0], y[1]) if m is lucid else
                                   _normalized_as_ops(x, (1,)) * y[0] + y[1]),
    "layer_norm_2d": lambda m, x, y: (m.nn.functional.layer_norm(x * y, [3, 4]) if m is lucid else
                                      _normalized_as_ops(x * y, (0, 1))) ** 2,
    "max_pool2d": lambda m, x, y: m.nn.functional.max_pool2d((x * y).reshape(1, 1, 3, 4), 2, 1) ** 2,
    "max_pool2d_padded": lambda m, x, y: m.nn.functional.max_pool2d(
        (x * y).reshape(1, 3, 2, 2), 3, 2, padding=1) ** 3,
    "index": lambda m, x, y: x[[0, 2, 0]] ** 2, "where": lambda m, x, y: m.where(x > 0.8, x * x, x ** 3),
    "mul": lambda m, x, y: x * y, "div": lambda m, x, y: x / y, "pow": lambda m, x, y: x ** y,
    "atan2": lambda m, x, y: m.atan2(x, y), "hypot": lambda m, x, y: m.hypot(x, y),
    "matmul": lambda m, x, y: x @ y.T, "conv1d": lambda m, x, y: m.nn.functional.conv1d(x.reshape(1, 3, 4),
                                                                                       y.reshape(2, 3, 2)),
    "cross_entropy": lambda m, x, y: m.nn.functional.cross_entropy(x, y.softmax(1)),
    "mse_loss": lambda m, x, y: m.nn.functional.mse_loss(x, y),
    "binary_cross_entropy": lambda m, x, y: m.nn.functional.binary_cross_entropy(m.sigmoid(x), y / 2),
    "attention": lambda m, x, y: m.nn.functional.scaled_dot_product_attention(
        x.reshape(1, 3, 4), y.reshape(1, 3, 4), x.reshape(1, 3, 4)),
}


@pytest.mark.parametrize("name", sorted(_SECOND_ORDER))
def test_second_and_third_order_gradients_match_torch(name):
    """autograd.grad(create_graph=True) records the backward pass: its
    gradients differentiate again, as PyTorch's (float64, to 1e-6)."""
    rng = np.random.default_rng(0)
    a, b = rng.random((3, 4)) * 1.5 + 0.2, rng.random((3, 4)) * 1.5 + 0.3
    got = []
    for m in (torch, lucid):
        x, y = m.tensor(a).requires_grad_(), m.tensor(b).requires_grad_()
        out = _SECOND_ORDER[name](m, x, y)
        w = m.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        gx, gy = m.autograd.grad((out * w).sum(), [x, y], create_graph=True, allow_unused=True)
        first = sum((g * g).sum() for g in (gx, gy) if g is not None)
        hx, hy = m.autograd.grad(first, [x, y], create_graph=True, allow_unused=True)
        third = m.autograd.grad(sum((h * h).sum() for h in (hx, hy) if h is not None), [x], allow_unused=True)[0]
        got.append([None if t is None else t.detach().numpy() for t in (hx, hy, third)])
    for want, have in zip(*got):
        if want is None or have is None:  # PyTorch may give a zero tensor where Lucid gives none, or back
            assert np.allclose(want if have is None else have, 0.0) if (want is None) != (have is None) else True
        else:
            np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-9)


def test_backward_with_create_graph_leaves_a_differentiable_grad():
    for m in (torch, lucid):
        x = m.tensor([2.0], dtype=m.float64).requires_grad_()
        (x ** 3).backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.item() == 12.0
        x.grad = None
        g.backward()
        assert x.grad.item() == 12.0  # d(3 x^2)/dx


@pytest.mark.parametrize("kind", ["RNN", "RNN_relu", "LSTM", "GRU"])
def test_second_order_gradients_through_recurrent_layers_match_torch(kind):
    """The cells' vjp is recorded as ops when the backward records history."""
    got = []
    for m in (torch, lucid):
        kw = {"nonlinearity": "relu"} if kind == "RNN_relu" else {}
        net = getattr(m.nn, kind.split("_")[0])(3, 4, batch_first=True, **kw).double()
        rng = np.random.default_rng(0)
        with m.no_grad():
            for p in net.parameters():
                p.copy_(m.tensor(rng.standard_normal(tuple(p.shape)) * 0.5))
        x = m.tensor(rng.standard_normal((2, 5, 3))).requires_grad_()
        out = net(x)[0]
        w = m.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        (gx,) = m.autograd.grad((out * w).sum(), x, create_graph=True)
        second = m.autograd.grad((gx * gx).sum(), [x] + list(net.parameters()), allow_unused=True)
        got.append([gx.detach().numpy()] + [None if g is None else g.numpy() for g in second])
    for want, have in zip(*got):
        if want is None or have is None:  # relu's second derivative: a zero tensor in PyTorch, none in Lucid
            assert np.allclose(want if have is None else have, 0.0) if (want is None) != (have is None) else True
        else:
            np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-12)


def test_maml_meta_gradient_through_a_conv_net_matches_torch():
    """Two inner SGD steps taken with create_graph=True, then the query loss
    differentiated back to the initial parameters (second-order MAML) through
    conv, batch_norm, max_pool, layer_norm and gelu."""
    def meta_grads(m):
        rng = np.random.default_rng(3)
        F = m.nn.functional
        params = {k: m.tensor(v).requires_grad_() for k, v in {
            "conv_w": rng.standard_normal((4, 1, 3, 3)) * 0.3, "conv_b": rng.standard_normal(4) * 0.1,
            "bn_w": 1 + rng.standard_normal(4) * 0.1, "bn_b": rng.standard_normal(4) * 0.1,
            "ln_w": 1 + rng.standard_normal(16) * 0.1, "ln_b": rng.standard_normal(16) * 0.1,
            "fc_w": rng.standard_normal((5, 16)) * 0.3, "fc_b": rng.standard_normal(5) * 0.1}.items()}
        support = m.tensor(rng.standard_normal((6, 1, 8, 8))), m.tensor(rng.integers(0, 5, 6))
        query = m.tensor(rng.standard_normal((6, 1, 8, 8))), m.tensor(rng.integers(0, 5, 6))

        def forward(p, x):
            h = F.conv2d(x, p["conv_w"], p["conv_b"], padding=1)
            h = F.max_pool2d(F.relu(F.batch_norm(h, None, None, p["bn_w"], p["bn_b"], training=True)), 2)
            h = F.layer_norm(F.adaptive_avg_pool2d(h, 2).flatten(1), [16], p["ln_w"], p["ln_b"])
            return F.linear(F.gelu(h), p["fc_w"], p["fc_b"])

        fast = dict(params)
        for _ in range(2):
            grads = m.autograd.grad(F.cross_entropy(forward(fast, support[0]), support[1]), list(fast.values()),
                                    create_graph=True)
            fast = {k: v - 0.4 * g for (k, v), g in zip(fast.items(), grads)}
        F.cross_entropy(forward(fast, query[0]), query[1]).backward()
        return {k: v.grad.numpy() for k, v in params.items()}

    want, got = meta_grads(torch), meta_grads(lucid)
    for k in want:  # conv_b's gradient is 0 in exact arithmetic (batch_norm follows): rounding on both sides
        np.testing.assert_allclose(got[k], want[k], rtol=1e-9, atol=1e-14, err_msg=k)
