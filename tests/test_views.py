"""Views as in PyTorch: which ops share memory, their strides and offsets,
in-place writes through views (values and gradients), version counters,
NumPy sharing, and views inside compiled steps. PyTorch is the oracle."""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim  # noqa: F401
from lucid.compile import fused_step, make_step

from conftest import to_lucid, to_torch

torch = pytest.importorskip("torch")

# Each view op, written once for both libraries (`m` is the module).
VIEW_OPS = {
    "basic_index_int": lambda m, x: x[1],
    "basic_index_slice_step": lambda m, x: x[:, 1::2],
    "basic_index_none_ellipsis": lambda m, x: x[None, ..., 1:],
    "neg_slice": lambda m, x: x[-2:, :-1],
    "view": lambda m, x: x.view(4, 6),
    "view_minus_one": lambda m, x: x.view(-1),
    "reshape_viewable": lambda m, x: x.reshape(2, 2, 6),
    "transpose": lambda m, x: x.transpose(0, 1),
    "t": lambda m, x: x.t(),
    "T": lambda m, x: x.T,
    "mT": lambda m, x: x.mT,
    "permute": lambda m, x: x.permute(1, 0),
    "narrow": lambda m, x: x.narrow(1, 2, 3),
    "select": lambda m, x: x.select(1, 2),
    "unsqueeze": lambda m, x: x.unsqueeze(1),
    "squeeze": lambda m, x: x[:1].squeeze(0),
    "flatten": lambda m, x: x.flatten(),
    "unflatten": lambda m, x: x.unflatten(1, (2, 3)),
    "expand": lambda m, x: x[:, :1].expand(4, 5),
    "split": lambda m, x: x.split(2, 1)[1],
    "chunk": lambda m, x: x.chunk(3, 0)[1],
    "unbind": lambda m, x: x.unbind(1)[3],
    "diagonal": lambda m, x: x.diagonal(),
    "diagonal_offset": lambda m, x: x.diagonal(1),
    "diagonal_neg_offset": lambda m, x: x.diagonal(-2),
    "unfold": lambda m, x: x.unfold(1, 3, 2),
    "as_strided": lambda m, x: x.as_strided((3, 2), (2, 5), 1),
    "detach": lambda m, x: x.detach(),
    "data": lambda m, x: x.data,
    "view_of_view": lambda m, x: x.t()[1:3].unsqueeze(0)[0, :, ::2],
    "movedim": lambda m, x: m.movedim(x, 0, 1),
}
NOT_VIEWS = {"detach", "data"}  # share memory, but have no _base


def _pair(shape=(4, 6), dtype="float32", seed=0):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return lucid.tensor(arr), torch.tensor(arr)


@pytest.mark.parametrize("name", sorted(VIEW_OPS))
def test_view_ops_share_memory_with_pytorchs_layout(name):
    x, tx = _pair()
    v, tv = VIEW_OPS[name](lucid, x), VIEW_OPS[name](torch, tx)
    assert tuple(v.shape) == tuple(tv.shape)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    assert v.stride() == tv.stride(), (v.stride(), tv.stride())
    assert v.storage_offset() == tv.storage_offset()
    assert v.is_contiguous() == tv.is_contiguous()
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert (v.data_ptr() - x.data_ptr()) == (tv.data_ptr() - tx.data_ptr())
    if name in NOT_VIEWS:
        assert v._base is None and tv._base is None
    else:
        assert v._base._same(x) and tv._base is tx
    assert v is not x


@pytest.mark.parametrize("name", sorted(set(VIEW_OPS) - {"expand", "unfold", "as_strided"}))
def test_inplace_through_each_view_writes_the_base(name):
    x, tx = _pair()
    v, tv = VIEW_OPS[name](lucid, x), VIEW_OPS[name](torch, tx)
    v.mul_(3).add_(1)
    tv.mul_(3).add_(1)
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-6)
    v.zero_()
    tv.zero_()
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_overlapping_views_refuse_inplace_writes():
    x, tx = _pair()
    for lib, t in ((lucid, x), (torch, tx)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            t[:, :1].expand(4, 5).add_(1)


def test_issue_snippets():
    z = lucid.zeros(3, 2)
    z[0].add_(1)
    z[1].fill_(2)
    np.testing.assert_array_equal(z.numpy(), [[1, 1], [2, 2], [0, 0]])
    r = z[:, 0]
    r += 5
    np.testing.assert_array_equal(z.numpy(), [[6, 1], [7, 2], [5, 0]])
    a = lucid.tensor([1., 2., 3., 4.], requires_grad=True)
    b = a * 1
    b.view(2, 2).mul_(3)
    (b * b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [18, 36, 54, 72])


# In-place through views with autograd: each program runs on both libraries
# and the gradients of every leaf are compared.
def _weight_surgery(m, a, b):
    w = a * 1
    w[:, :2].zero_()
    return (w * b).sum()


def _setitem_from_grad(m, a, b):
    buf = m.zeros(4, 6, dtype=a.dtype)
    buf[1] = a[0] * 2
    buf[2:, ::2] = b[:2, :3]
    return (buf * buf).sum()


def _narrow_copy(m, a, b):
    x = a.clone()
    x.narrow(1, 1, 3).copy_(b[:, :3].sin())
    return (x.exp() * a).sum()


def _kv_cache(m, a, b):
    cache = m.zeros(2, 4, 6, dtype=a.dtype)
    for t in range(2):
        cache[t, :, :] = a * (t + 1)
        cache[t, 1:3] += b[1:3]
    return (cache.sum(0) * b).sum()


def _sibling_views(m, a, b):
    x = a * 1
    top, bottom = x[:2], x[2:]
    bottom.mul_(b[2:])
    return (top.sum() + (x * x).sum() + bottom.sum())


def _transpose_inplace(m, a, b):
    x = a + 0
    x.t()[1:3].mul_(b.t()[1:3])
    return (x ** 2).sum()


def _view_of_view_inplace(m, a, b):
    x = a * 2
    v = x.view(2, 12)[:, 3:9].view(2, 2, 3)
    v.sub_(b.view(2, 12)[:, :6].view(2, 2, 3))
    return (x * a).sum()


def _diagonal_inplace(m, a, b):
    x = a[:, :4] * 1
    x.diagonal().mul_(b[0, :4])
    return (x ** 3).sum()


def _rnn_hidden_by_index(m, a, b):
    h = m.zeros(3, 6, dtype=a.dtype)
    for i in range(3):
        h[i] = m.tanh(a[i] + (h[i - 1] if i else 0))
    return (h * b[:3]).sum()


def _base_written_then_view_used(m, a, b):
    x = a * 1
    v = x[1:3]
    x.mul_(b)
    return (v ** 2).sum() + x.sum()


PROGRAMS = [_weight_surgery, _setitem_from_grad, _narrow_copy, _kv_cache, _sibling_views, _transpose_inplace,
            _view_of_view_inplace, _diagonal_inplace, _rnn_hidden_by_index, _base_written_then_view_used]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_autograd_through_inplace_views_matches_pytorch(program, dtype):
    rng = np.random.default_rng(3)
    arrs = [rng.standard_normal((4, 6)).astype(dtype) for _ in range(2)]
    la = [lucid.tensor(a, requires_grad=True) for a in arrs]
    ta = [torch.tensor(a, requires_grad=True) for a in arrs]
    out, tout = program(lucid, *la), program(torch, *ta)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.item(), tout.item(), **tol)
    out.backward()
    tout.backward()
    for l, t in zip(la, ta):
        np.testing.assert_allclose(l.grad.numpy(), t.grad.numpy(), **tol)


def test_view_of_a_leaf_cannot_be_modified_in_place():
    a = lucid.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        a[1:].mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        a[0] = 5.0
    with lucid.no_grad():
        a[0] = 5.0  # allowed without gradient recording
    assert a.detach().numpy()[0] == 5


def test_view_made_without_grad_refuses_tracked_inplace():
    a = lucid.ones(3, requires_grad=True)
    b = a * 2
    with lucid.no_grad():
        v = b[1:]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)


def test_saved_tensor_modified_through_a_view_raises():
    a = lucid.randn(4, requires_grad=True)
    b = a * 1
    c = b.sin()  # saves b
    b[1:].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()
    ta = torch.randn(4, requires_grad=True)
    tb = ta * 1
    tc = tb.sin()
    tb[1:].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tc.sum().backward()


def test_version_counter_is_shared_by_views():
    x = lucid.zeros(4)
    v = x[1:]
    before = x._version
    v.add_(1)
    assert x._version == v._version > before


def test_reshape_copies_only_when_the_strides_require_it():
    x, tx = _pair()
    y, ty = x.t().reshape(-1), tx.t().reshape(-1)
    assert (y._base is None) == (ty._base is None) and y._base is None
    y[0] = 100.0
    assert x.numpy()[0, 0] != 100.0
    z = x.reshape(6, 4)
    assert z._base._same(x)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(-1)
    assert x.t().contiguous().is_contiguous() and x.contiguous() is x


def test_numpy_shares_memory_both_ways():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = lucid.from_numpy(arr)
    t[1].fill_(-1)
    assert (arr[1] == -1).all()
    back = t.t().numpy()
    assert back.strides == (4, 16) and np.shares_memory(back, arr)
    strided = lucid.from_numpy(arr[:, ::2])
    assert strided.stride() == (4, 2) and np.shares_memory(strided.numpy(), arr)
    strided.zero_()
    assert (arr[:, ::2] == 0).all() and (arr[:, 1::2] != 0).any()
    with pytest.raises(ValueError, match="negative"):
        lucid.from_numpy(arr[::-1])


def test_kernels_read_strided_operands():
    x, tx = _pair((5, 7))
    ops = [lambda m, a: a.t() * 2 + a.t().exp(), lambda m, a: a[:, ::3].sum(0), lambda m, a: a.t() @ a[:, :5],
           lambda m, a: m.softmax(a.t(), -1), lambda m, a: a.unfold(1, 3, 2).amax(-1),
           lambda m, a: m.cat([a.t(), a.t()[::2]], 0)]
    for op in ops:
        np.testing.assert_allclose(op(lucid, x).numpy(), op(torch, tx).numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------ compiled steps
class _SliceWriter(nn.Module):
    """In-place writes through views of traced values and of a buffer."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.register_buffer("cache", lucid.zeros(3, 6))

    def forward(self, x):
        h = self.lin(x)
        h[:, :2] = h[:, :2].tanh()
        h.t()[3:].mul_(0.5)
        self.cache[1:] = h[:2].detach()
        return h * self.cache.sum(0) + h.diagonal().sum()


def test_compiled_steps_follow_views_and_inplace_writes():
    lucid.manual_seed(0)
    eager, compiled = _SliceWriter(), _SliceWriter()
    compiled.load_state_dict(eager.state_dict())
    opt_e = lucid.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = lucid.optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9)
    step = fused_step(compiled, F.mse_loss, opt_c)
    for _ in range(3):
        x, y = lucid.randn(4, 6), lucid.randn(4, 6)
        opt_e.zero_grad()
        loss = F.mse_loss(eager(x), y)
        loss.backward()
        opt_e.step()
        got = step(x, y)
        np.testing.assert_allclose(got.item(), loss.item(), rtol=1e-5)
        for (n, pe), pc in zip(eager.named_parameters(), compiled.parameters()):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
        np.testing.assert_allclose(compiled.cache.numpy(), eager.cache.numpy(), rtol=1e-5, atol=1e-6)


def test_make_step_with_strided_arguments_and_views_of_parameters():
    lucid.manual_seed(1)
    w = nn.Parameter(lucid.randn(6, 4))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = w

        def forward(self, x):
            return x @ self.w.t()[:, 1:5] + self.w[2:4].sum()

    m = M()
    x = lucid.randn(4, 3).t()  # a strided argument
    y = lucid.randn(3, 4)
    F.mse_loss(m(x), y).backward()
    want = w.grad.numpy().copy()
    m.zero_grad()
    make_step(m, F.mse_loss)(x, y)
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-5, atol=1e-6)


def test_full_basic_index_is_a_new_view_of_every_tensor_even_0d():
    """x[...] and x[:] are views, never x itself (views soak seeds 951889,
    952588, 953997: a write through c[...] of a 0-d buffer after c[...] = p
    dropped p's zero gradient, as c[...] was c)."""
    grads = []
    for m in (torch, lucid):
        p = m.tensor(2.0, requires_grad=True)
        q = m.tensor(1.0, requires_grad=True)
        c = m.tensor(1.0)
        c[...] = p
        v = c[...]
        assert v is not c and v._base is not None
        v.copy_(q)
        c.mean().backward()
        grads.append((p.grad.item(), q.grad.item()))
        for x in (m.ones(2, 3), m.ones(3)):
            assert x[...] is not x and x[:] is not x and x[...]._base is not None
    assert grads[1] == grads[0] == (0.0, 1.0)


# Cases the semantics probe (python -m tests.fuzz.semantics) found differing
# from PyTorch; each source runs with T = torch and T = lucid.
VIEW_CASES = [
    # the strides PyTorch gives size-1 dims (they address nothing, but stride() reports them)
    "x = T.zeros(1, 2, 4, dtype=T.int32)\ny = x.unbind(1)[0]\nresult = (y.stride(), x.select(1, 0).stride())",
    "x = T.zeros(4, 1, 4).swapaxes(0, -1)\nresult = (x.unsqueeze(-1).stride(), x.unsqueeze(1).stride(), "
    "x.squeeze().stride(), x.squeeze(1).stride())",
    "x = T.zeros(2, 1, 3)[:, :, ::2]\nresult = (x.unsqueeze(0).stride(), x.unsqueeze(2).stride(), x.squeeze(1).stride())",
    # an empty tensor is contiguous and keeps its offset
    "x = T.tensor([True, True, True])\ny = x.unfold(0, 0, 2).t()\nresult = (y.shape, y.is_contiguous())",
    "x = T.tensor([-0.5], dtype=T.float64)\ny = x.narrow(0, 1, 0)\nresult = (y.storage_offset(), y.is_contiguous())",
    # fill_ and zero_ write one value, so an expanded tensor takes them; other writes refuse it
    "x = T.tensor([[242, 7, 232, 2]], dtype=T.int16)\ny = x.expand(3, 4)\ny.zero_()\nresult = (x, y)",
    "x = T.zeros(1, 4)\ny = x.expand(3, 4)\ny.fill_(2)\nresult = (x, y)",
    "x = T.zeros(1, 4)\ny = x.expand(3, 4)\ny.add_(1)\nresult = x",
    "x = T.zeros(1, 4)\ny = x.expand(3, 4)\ny.fill_(T.tensor(2.0))\nresult = x",
    # the pieces of split/chunk/unbind refuse in-place writes while the base records history
    "x = T.tensor([5.0, 1.5], dtype=T.float64, requires_grad=True)\nb = x * 1\ny = b.chunk(2, 0)[0]\ny.mul_(2)\n"
    "result = b",
    "x = T.tensor([5.0, 1.5], dtype=T.float64, requires_grad=True)\nb = x * 1\ny = b.unbind(0)[0]\ny.mul_(2)\n"
    "result = b",
    "x = T.tensor([5.0, 1.5], dtype=T.float64, requires_grad=True)\nb = x * 1\ny = b.split(1)[1].view(1)\n"
    "y.zero_()\nresult = b",
    "x = T.tensor([5.0, 1.5], dtype=T.float64)\nb = x * 1\ny = b.split(1)[1]\ny.zero_()\nresult = b",
    "x = T.tensor([5.0, 1.5], dtype=T.float64, requires_grad=True)\nb = x * 1\nwith T.no_grad():\n"
    "    y = b.split(1)[1]\n    y.zero_()\nresult = b",
    # y * 2 and y / 2 do not save y: writing y afterwards is legal (PyTorch saves what its formula reads)
    "x = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)\ny = x * 1\nz = y.mul(2)\ny[0] = 0\n"
    "z.sum().backward()\nresult = x.grad",
    "x = T.tensor([[1.0, 2.0]], dtype=T.float64, requires_grad=True)\ny = x * 1\nz = y / 2\ny.add_(1)\n"
    "z.sum().backward()\nresult = x.grad",
    "x = T.tensor([[1.0, 2.0]], dtype=T.float64, requires_grad=True)\ny = x * 1\nz = y * x\ny.add_(1)\n"
    "z.sum().backward()\nresult = x.grad",
    "x = T.tensor([[1.0, 2.0]], dtype=T.float64, requires_grad=True)\ny = x * 1\nz = x / y\ny.add_(1)\n"
    "z.sum().backward()\nresult = x.grad",
    # a diagonal of fewer than 2 dims: PyTorch wraps the dims first
    "result = T.tensor([-4]).diagonal(1, 0, -2)",
]


@pytest.mark.parametrize("src", VIEW_CASES)
def test_view_semantics_match_torch(src):
    from tests.fuzz.semantics import check as difference_from_torch

    assert difference_from_torch(src) is None, difference_from_torch(src)
