"""The metal device (MPSGraph on Apple Silicon) against PyTorch and against
lucid's own CPU device: storage and NumPy interop, every primitive eagerly
(values and gradients), the compiled steps, and the errors that are specific
to Metal.

Every test that touches the device skips cleanly without a usable Metal
device (Linux, hosted macOS runners). LUCID_TEST_DEVICE=cpu skips them too;
with LUCID_REQUIRE_METAL=1 a missing device is a failure instead of a skip.
"""
import math
import os

import numpy as np
import pytest
import torch

import lucid
from lucid import _C
from conftest import LUCID_TO_TORCH, assert_close, rnd

METAL = _C.device_available("metal")
SELECTED = os.environ.get("LUCID_TEST_DEVICE", "")
REQUIRED = os.environ.get("LUCID_REQUIRE_METAL", "") not in ("", "0")
DEV = "metal"

needs_metal = pytest.mark.skipif(not METAL or SELECTED == "cpu",
                                 reason="needs a usable Metal device (Apple Silicon, macOS 13 or newer)")


def on(a, dtype=None, requires_grad=False):
    """A NumPy array as a lucid tensor on the metal device."""
    t = lucid.tensor(np.asarray(a))
    if dtype is not None:
        t = t.to(dtype)
    t = t.to(DEV)
    return t.requires_grad_() if requires_grad else t


def compare(fn, *inputs, grad=True, rtol=None, atol=None, grad_rtol=1e-4, grad_atol=1e-5, seed=1):
    """fn(lib, *tensors) with lib = lucid on the metal device and lib = torch
    on the CPU: outputs, then the gradients of the floating inputs after a
    backward pass with one random upstream gradient."""
    lt, tt = [], []
    for a in inputs:
        if not isinstance(a, np.ndarray):
            lt.append(a)
            tt.append(a)
            continue
        rg = grad and a.dtype.kind == "f"
        lt.append(on(a, requires_grad=rg))
        tt.append(torch.from_numpy(a.copy()).requires_grad_(rg))
    lo, to = fn(lucid, *lt), fn(torch, *tt)
    assert lo.device.type == DEV
    assert_close(lo.detach(), to.detach(), rtol, atol)
    if not grad or not to.requires_grad:
        return lo
    up = np.random.default_rng(seed).standard_normal(tuple(to.shape)).astype(np.float32)
    to.backward(torch.from_numpy(up).to(to.dtype))
    lucid.autograd.backward([lo], [on(up).to(lo.dtype)])
    for i, (l, t) in enumerate(zip(lt, tt)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            assert l.grad is not None, f"input {i}: no gradient on metal"
            assert l.grad.device.type == DEV
            assert_close(l.grad, t.grad, grad_rtol, grad_atol, msg=f"grad of input {i}: ")
    return lo


def same_as_cpu(fn, *arrays):
    """fn(*tensors) on the metal device equals fn on lucid's CPU device, bit for bit."""
    m = fn(*[on(a) for a in arrays])
    c = fn(*[lucid.tensor(a) for a in arrays])
    assert m.device.type == DEV and m.dtype == c.dtype and tuple(m.shape) == tuple(c.shape)
    a, b = m.numpy(), c.numpy()
    assert a.tobytes() == b.tobytes(), f"metal {a} != cpu {b}"


# ------------------------------------------------------------- the device
def test_metal_is_available_where_required():
    if not REQUIRED:
        pytest.skip("LUCID_REQUIRE_METAL is not set")
    assert METAL, "LUCID_REQUIRE_METAL=1 but this build of lucid has no usable Metal device"


@pytest.mark.skipif(METAL, reason="checks the behaviour without a Metal device")
def test_without_metal_the_device_is_reported_missing():
    with pytest.raises(TypeError, match="'metal' is not available"):
        lucid.zeros(2, device="metal")


@needs_metal
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float16", "float32"])
def test_storage_round_trip_and_numpy(dtype):
    a = rnd(3, 4, dtype=dtype)
    t = on(a)
    assert t.device.type == DEV and str(t.device) == DEV
    # Shared memory: numpy() reads the device buffer in place.
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    assert t.cpu().device.type == "cpu"
    assert t[1, 2].item() == a[1, 2].item()


@needs_metal
def test_bfloat16_where_supported():
    a = rnd(5, dtype="float32")
    try:
        t = on(a, dtype=lucid.bfloat16)
        r = (t * 2).float()
    except TypeError as e:
        assert "macOS 14" in str(e)
        pytest.skip("bfloat16 on Metal needs macOS 14")
    expected = (torch.from_numpy(a).to(torch.bfloat16) * 2).float().numpy()
    np.testing.assert_array_equal(r.numpy(), expected)


@needs_metal
def test_float64_is_rejected_with_a_clear_error():
    with pytest.raises(TypeError, match="float64"):
        lucid.ones(3, dtype=lucid.float64, device=DEV)
    x = lucid.ones(3, dtype=lucid.float64).to(DEV)  # a copy moves bytes: allowed
    with pytest.raises(TypeError, match="float64"):
        x + x


# ------------------------------------------------------------ elementwise
UNARY = [
    ("neg", lambda L, x: -x, None),
    ("abs", lambda L, x: L.abs(x), None),
    ("exp", lambda L, x: L.exp(x), None),
    ("log", lambda L, x: L.log(x), (0.1, 5.0)),
    ("log1p", lambda L, x: L.log1p(x), (-0.9, 5.0)),
    ("expm1", lambda L, x: L.expm1(x), None),
    ("sqrt", lambda L, x: L.sqrt(x), (0.1, 5.0)),
    ("rsqrt", lambda L, x: L.rsqrt(x), (0.1, 5.0)),
    ("square", lambda L, x: L.square(x), None),
    ("reciprocal", lambda L, x: L.reciprocal(x), (0.5, 3.0)),
    ("sin", lambda L, x: L.sin(x), None),
    ("cos", lambda L, x: L.cos(x), None),
    ("tanh", lambda L, x: L.tanh(x), None),
    ("sigmoid", lambda L, x: L.sigmoid(x), None),
    ("relu", lambda L, x: L.relu(x), None),
    ("erf", lambda L, x: L.erf(x), None),
    ("gelu", lambda L, x: L.nn.functional.gelu(x) if L is torch else L._C.gelu(x, False), None),
    ("gelu_tanh", lambda L, x: L.nn.functional.gelu(x, approximate="tanh") if L is torch else L._C.gelu(x, True),
     None),
    ("silu", lambda L, x: L.nn.functional.silu(x) if L is torch else L._C.silu(x), None),
]


@needs_metal
@pytest.mark.parametrize("name,fn,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_torch(name, fn, domain):
    lo, hi = domain or (None, None)
    x = rnd(4, 5, low=lo, high=hi) if domain else rnd(4, 5)
    compare(fn, x, rtol=1e-5, atol=1e-6)


@needs_metal
def test_rounding_sign_and_special_values():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.0, np.nan, np.inf, -np.inf, 3.7], np.float32)
    for name in ["floor", "ceil", "round", "trunc", "sign"]:
        compare(lambda L, t: getattr(L, name)(t), x, grad=False)
    for name in ["isnan", "isinf", "isfinite"]:
        compare(lambda L, t: getattr(L, name)(t), x, grad=False)
    compare(lambda L, t: L.relu(t), x, grad=False)
    compare(lambda L, t: L.log1p(t), np.array([1e-10, -1e-10, 0.0, -1.0, np.inf, 1e30], np.float32), grad=False,
            rtol=1e-6)
    compare(lambda L, t: L.expm1(t), np.array([1e-10, -1e-10, 0.0, -np.inf, 80.0, -80.0], np.float32), grad=False,
            rtol=1e-6)


@needs_metal
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3))])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum", "atan2"])
def test_binary_matches_torch_with_broadcasting(op, shapes):
    a, b = rnd(*shapes[0], seed=1), rnd(*shapes[1], seed=2)
    if op == "div":
        b = np.where(np.abs(b) < 0.2, 0.7, b).astype(np.float32)
    compare(lambda L, x, y: getattr(L, op)(x, y), a, b, rtol=1e-5, atol=1e-6)


@needs_metal
def test_pow_of_negative_bases_and_special_exponents():
    base = np.array([-2.0, -2.0, -2.0, -0.0, 0.0, 3.0, -1.0, 1.0, np.nan, -np.inf, 2.0], np.float32)
    expo = np.array([3.0, 2.0, 0.5, -3.0, -1.0, 0.0, np.inf, np.nan, 0.0, 0.5, -2.0], np.float32)
    compare(lambda L, x, y: L.pow(x, y), base, expo, grad=False, rtol=1e-6)
    compare(lambda L, x: x ** 3, rnd(3, 4), rtol=1e-5, atol=1e-6)


@needs_metal
def test_python_floor_division_and_modulo():
    a = np.array([7.0, -7.0, 7.0, -7.0, 0.5, -0.5, 5.0, 0.0], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 2.0, 2.0, 0.0, -3.0], np.float32)
    compare(lambda L, x, y: L.floor_divide(x, y), a, b, grad=False)
    compare(lambda L, x, y: L.remainder(x, y), a[:6], b[:6], grad=False)
    ia = np.array([7, -7, 7, -7, 0, 9, -9], np.int64)
    ib = np.array([2, 2, -2, -2, 3, 4, 4], np.int64)
    compare(lambda L, x, y: L.floor_divide(x, y), ia, ib, grad=False)
    compare(lambda L, x, y: L.remainder(x, y), ia, ib, grad=False)
    compare(lambda L, x, y: x * y - x, ia, ib, grad=False)


@needs_metal
def test_integer_division_by_zero_and_power_match_cpu():
    ia = np.array([7, -7, 0, 5, -3], np.int64)
    ib = np.array([0, 0, 0, 2, 3], np.int64)
    same_as_cpu(lambda x, y: lucid.floor_divide(x, y), ia, ib)
    same_as_cpu(lambda x, y: lucid.remainder(x, y), ia, ib)
    base = np.array([2, -3, 1, -1, -1, 0, 5, 2], np.int64)
    expo = np.array([10, 3, -4, -3, -2, 0, 0, 40], np.int64)
    same_as_cpu(lambda x, y: lucid.pow(x, y), base, expo)


@needs_metal
def test_comparisons_and_logical_ops():
    a, b = rnd(4, 5, seed=1), rnd(4, 5, seed=2)
    b[0] = a[0]
    for op in ["eq", "ne", "lt", "le", "gt", "ge"]:
        compare(lambda L, x, y: getattr(L, op)(x, y), a, b, grad=False)
    p, q = rnd(6, dtype="bool", seed=1), rnd(6, dtype="bool", seed=2)
    for op in ["logical_and", "logical_or", "logical_xor"]:
        compare(lambda L, x, y: getattr(L, op)(x, y), p, q, grad=False)
    compare(lambda L, x: L.logical_not(x), p, grad=False)
    compare(lambda L, x, y: x < y, p, q, grad=False)


@needs_metal
def test_where_clamp_and_casts():
    c = rnd(3, 4, dtype="bool")
    a, b = rnd(3, 4, seed=1), rnd(1, 4, seed=2)
    compare(lambda L, m, x, y: L.where(m, x, y), c, a, b)
    compare(lambda L, x: L.clamp(x, -0.5, 0.5), a)
    x = np.array([np.nan, 1.7, -2.5, 0.0, -0.0, 3.2], np.float32)
    same_as_cpu(lambda t: t.to(lucid.int32), x)
    same_as_cpu(lambda t: t.to(lucid.int64), x)
    same_as_cpu(lambda t: t.to(lucid.bool), x)
    same_as_cpu(lambda t: t.to(lucid.float16).to(lucid.float32), rnd(20))
    same_as_cpu(lambda t: t.to(lucid.float32), rnd(4, dtype="int64"))


@needs_metal
def test_float16_computes_in_float32_and_rounds_once():
    a, b = rnd(64, seed=1), rnd(64, seed=2)
    for fn in [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: lucid.exp(x) / (1 + y * y),
               lambda x, y: lucid.sum(x * y), lambda x, y: lucid.tanh(x)]:
        m = fn(on(a, dtype=lucid.float16), on(b, dtype=lucid.float16))
        c = fn(lucid.tensor(a).half(), lucid.tensor(b).half())
        assert m.dtype == lucid.float16
        np.testing.assert_allclose(m.float().numpy(), c.float().numpy(), rtol=1e-3, atol=1e-3)


# ------------------------------------------------------------- reductions
@needs_metal
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 2), False), (-1, True)])
def test_reductions_match_torch(dim, keepdim):
    x = rnd(3, 4, 5)
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    compare(lambda L, t: L.sum(t, **kw), x, rtol=1e-5, atol=1e-5)
    compare(lambda L, t: L.mean(t, **kw), x, rtol=1e-5, atol=1e-6)
    compare(lambda L, t: L.amax(t, **({"dim": dim if dim is not None else (0, 1, 2), "keepdim": keepdim})), x)
    if dim is not None and not isinstance(dim, tuple):
        compare(lambda L, t: L.prod(t, dim=dim, keepdim=keepdim), rnd(3, 4, 5, low=0.5, high=1.5), rtol=1e-5)
        compare(lambda L, t: L.argmax(t, dim=dim, keepdim=keepdim), x, grad=False)
        compare(lambda L, t: L.argmin(t, dim=dim, keepdim=keepdim), x, grad=False)


@needs_metal
def test_reductions_propagate_nan_and_argmax_takes_first():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [np.nan, 1.0, np.nan, 5.0], [-1.0, -1.0, -2.0, -2.0]], np.float32)
    compare(lambda L, t: L.argmax(t, dim=1), x, grad=False)
    compare(lambda L, t: L.argmin(t, dim=1), x, grad=False)
    compare(lambda L, t: L.amax(t, dim=1), x, grad=False)
    compare(lambda L, t: L.amin(t, dim=1), x, grad=False)
    b = rnd(3, 4, dtype="bool")
    compare(lambda L, t: L.all(t, dim=1), b, grad=False)
    compare(lambda L, t: L.any(t, dim=0), b, grad=False)
    compare(lambda L, t: L.sum(t, dim=1), rnd(3, 4, dtype="int64"), grad=False)


@needs_metal
def test_softmax_and_log_softmax():
    x = rnd(4, 7)
    for dim in (0, 1, -1):
        compare(lambda L, t: L.softmax(t, dim), x, rtol=1e-5, atol=1e-6)
        compare(lambda L, t: L.log_softmax(t, dim), x, rtol=1e-5, atol=1e-5)
    row = np.array([[-np.inf, -np.inf], [0.0, -np.inf]], np.float32)
    compare(lambda L, t: L.softmax(t, 1), row, grad=False)


@needs_metal
@pytest.mark.parametrize("shape,ns", [((4, 7), (7,)), ((2, 3, 4, 5), (4, 5))])
def test_layer_norm(shape, ns):
    x, w, b = rnd(*shape) * 3, rnd(*ns, seed=2), rnd(*ns, seed=3)
    compare(lambda L, t, w, b: L.nn.functional.layer_norm(t, ns, w, b, 1e-5), x, w, b, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------- matmul
@needs_metal
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((4,), (4, 2)), ((5, 3), (3,))])
def test_matmul_matches_torch(sa, sb):
    compare(lambda L, a, b: L.matmul(a, b), rnd(*sa, seed=1), rnd(*sb, seed=2), rtol=1e-5, atol=1e-5)


@needs_metal
def test_matmul_with_transposes_and_integers():
    a, b = rnd(4, 3, seed=1), rnd(5, 4, seed=2)
    compare(lambda L, x, y: x.t() @ y.t(), a, b, rtol=1e-5, atol=1e-5)
    ia, ib = rnd(3, 4, dtype="int64", seed=1), rnd(4, 2, dtype="int64", seed=2)
    compare(lambda L, x, y: x @ y, ia, ib, grad=False)
    compare(lambda L, x, y: x @ y, rnd(3, 0), rnd(0, 2), grad=False)


# -------------------------------------------------------- shape, indexing
@needs_metal
def test_layout_ops_and_their_gradients():
    x = rnd(2, 3, 4)
    compare(lambda L, t: t.reshape(4, 6) * 2, x)
    compare(lambda L, t: t.permute(2, 0, 1) * 2, x)
    compare(lambda L, t: t.transpose(0, 1) * 2, x)
    compare(lambda L, t: t[:, 1:, ::2] * 2, x)
    compare(lambda L, t: t.unsqueeze(0).expand(3, 2, 3, 4) * 1.5, x)
    compare(lambda L, a, b: L.cat([a, b], dim=1), x, rnd(2, 2, 4, seed=3))
    compare(lambda L, a, b: L.stack([a, b], dim=0), x, rnd(2, 3, 4, seed=3))


@needs_metal
def test_slice_assignment():
    for dtype in ["float32", "int64", "bool"]:
        base, src = rnd(4, 6, dtype=dtype, seed=1), rnd(2, 3, dtype=dtype, seed=2)

        def fn(L, b, s):
            b = b.clone()
            b[1:4:2, ::2] = s
            return b

        compare(fn, base, src, grad=dtype == "float32")


@needs_metal
def test_gather_scatter_index_ops():
    x = rnd(3, 5)
    idx = np.array([[0, 4, 2], [1, 1, 3], [4, 0, 0]], np.int64)
    compare(lambda L, t, i: L.gather(t, 1, i), x, idx)
    compare(lambda L, t, i: L.gather(t, 1, i[:2, :2]), x, idx)
    compare(lambda L, t, i, s: L.scatter_add(t, 1, i, s), x, idx, rnd(3, 3, seed=4))
    compare(lambda L, t, i, s: L.scatter_add(t, 1, i[:2], s), x, idx, rnd(3, 4, seed=4), grad=False)
    uniq = np.array([[0, 4, 2], [1, 3, 0], [4, 1, 2]], np.int64)
    compare(lambda L, t, i, s: L.scatter(t, 1, i, s), x, uniq, rnd(3, 3, seed=4))
    compare(lambda L, t, i: L.index_select(t, 1, i), x, np.array([2, 0, 2, 4], np.int64))
    compare(lambda L, t, i, s: L.index_add(t, 0, i, s), x, np.array([0, 2, 0], np.int64), rnd(3, 5, seed=5))
    with pytest.raises(IndexError):
        lucid.gather(on(x), 1, on(np.array([[5, 0, 0]] * 3, np.int64)))
    with pytest.raises(IndexError):
        lucid.index_select(on(x), 0, on(np.array([3], np.int64)))


@needs_metal
def test_convolution_and_pooling():
    x, w, b = rnd(2, 3, 7, 6, seed=1), rnd(4, 3, 3, 2, seed=2), rnd(4, seed=3)
    compare(lambda L, t, k, c: (L.nn.functional.conv2d(t, k, c, stride=(2, 1), padding=(1, 0), dilation=(1, 2))
                                if L is torch else L._C.conv2d(t, k, c, (2, 1), (1, 1, 0, 0), (1, 2), 1)),
            x, w, b, rtol=1e-5, atol=1e-5)
    compare(lambda L, t: (L.nn.functional.max_pool2d(t, 3, 2, 1) if L is torch
                          else L._C.max_pool2d(t, (3, 3), (2, 2), (1, 1), (1, 1), False, False)), x)


# --------------------------------------------------------------- creation
@needs_metal
def test_creation_ops_match_cpu():
    for dtype in [lucid.float32, lucid.float16, lucid.int32, lucid.int64, lucid.bool]:
        m, c = lucid.full((3, 5), 2.75, dtype=dtype, device=DEV), lucid.full((3, 5), 2.75, dtype=dtype)
        assert m.device.type == DEV
        assert m.numpy().tobytes() == c.numpy().tobytes()
    m, c = lucid.arange(-3, 7, 0.5, device=DEV), lucid.arange(-3, 7, 0.5)
    assert m.numpy().tobytes() == c.numpy().tobytes()
    np.testing.assert_array_equal(lucid.eye(4, 3, device=DEV).numpy(), np.eye(4, 3, dtype=np.float32))


@needs_metal
@pytest.mark.parametrize("make", [lucid.rand, lucid.randn])
def test_random_draws_match_the_cpu_bit_for_bit(make):
    lucid.manual_seed(7)
    m = make(3, 1000, device=DEV)
    lucid.manual_seed(7)
    c = make(3, 1000)
    assert m.device.type == DEV
    assert m.numpy().tobytes() == c.numpy().tobytes()


# -------------------------------------------------------- compiled steps
class TinyMLP:
    """Raw ops on the device, so these tests depend on nothing but the core."""

    def __init__(self, device, sizes=(6, 8, 3), seed=0):
        lucid.manual_seed(seed)
        self.training = True
        self.params = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            self.params.append((lucid.randn(a, b) * 0.5).to(device).requires_grad_())
            self.params.append((lucid.randn(b) * 0.1).to(device).requires_grad_())

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


def data(device, seed=1):
    lucid.manual_seed(seed)
    return lucid.randn(5, 6).to(device), lucid.randn(5, 3).to(device)


@needs_metal
def test_make_step_on_metal_matches_eager_on_cpu():
    from lucid.compile import make_step

    cpu, metal = TinyMLP("cpu"), TinyMLP(DEV)
    (xc, yc), (xm, ym) = data("cpu"), data(DEV)
    loss_c = mse(cpu(xc), yc)
    loss_c.backward()
    step = make_step(metal, mse)
    runs = _C.executable_run_count()
    loss_m = step(xm, ym)
    assert _C.executable_run_count() == runs + 1
    assert loss_m.device.type == DEV
    assert loss_m.item() == pytest.approx(loss_c.item(), rel=1e-5)
    for pc, pm in zip(cpu.parameters(), metal.parameters()):
        assert pm.grad.device.type == DEV
        np.testing.assert_allclose(pm.grad.numpy(), pc.grad.numpy(), rtol=1e-4, atol=1e-6)
    # A second call accumulates into the existing gradients, as backward() does.
    step(xm, ym)
    for pc, pm in zip(cpu.parameters(), metal.parameters()):
        np.testing.assert_allclose(pm.grad.numpy(), 2 * pc.grad.numpy(), rtol=1e-4, atol=1e-6)


@needs_metal
@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01))])
def test_fused_step_on_metal_matches_eager_on_cpu(name, kwargs):
    from lucid.compile import fused_step

    optim = pytest.importorskip("lucid.optim")
    cpu, metal = TinyMLP("cpu"), TinyMLP(DEV)
    opt_c = getattr(optim, name)(cpu.parameters(), **kwargs)
    opt_m = getattr(optim, name)(metal.parameters(), **kwargs)
    step = fused_step(metal, mse, opt_m)
    for i in range(5):
        (xc, yc), (xm, ym) = data("cpu", seed=i), data(DEV, seed=i)
        opt_c.zero_grad()
        loss_c = mse(cpu(xc), yc)
        loss_c.backward()
        opt_c.step()
        loss_m = step(xm, ym)
        assert loss_m.item() == pytest.approx(loss_c.item(), rel=1e-4, abs=1e-6)
    for pc, pm in zip(cpu.parameters(), metal.parameters()):
        np.testing.assert_allclose(pm.detach().numpy(), pc.detach().numpy(), rtol=1e-4, atol=1e-5)


@needs_metal
def test_fused_step_updates_parameters_in_place():
    from lucid.compile import fused_step

    optim = pytest.importorskip("lucid.optim")
    model = TinyMLP(DEV)
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = fused_step(model, mse, opt)
    p = model.params[0]
    ptr, version = p.data_ptr(), p._version
    view = p.detach().numpy()  # shares the device buffer
    before = view.copy()
    step(*data(DEV))
    # The new values land in the parameter's own buffer (never a swapped one):
    # its address is unchanged and views made before the step see them.
    assert p.data_ptr() == ptr
    assert p._version > version
    assert not np.array_equal(view, before)
    np.testing.assert_array_equal(view, p.detach().numpy())
