"""The cuda device.

- Without a driver (CI): the device says it is unavailable and using it
  raises a clear error; every kernel source compiles with NVRTC when NVRTC
  is installed (`pip install '.[cuda]'`; skipped otherwise).
- With a GPU: ops, gradients and whole training steps on cuda match the same
  computation on the CPU (itself checked against PyTorch by the rest of the
  suite).
"""
import os
import sys

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

HAS_CUDA = lucid.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_CUDA, reason=f"no CUDA device ({lucid.cuda.unavailable_reason()})")


def _nvrtc_missing():
    try:
        lucid.cuda._cuda.nvrtc_version()
        return ""
    except RuntimeError as e:
        return str(e)


# ------------------------------------------------------------ without a GPU
def test_kernel_sources_compile_with_nvrtc():
    why = _nvrtc_missing()
    if why:
        pytest.skip(f"NVRTC is not installed: {why}")
    failures = lucid.cuda.compile_kernel_modules("sm_90")
    assert not failures, "\n\n".join(f"module {name}:\n{log}" for name, log in failures)


def _elf_functions(image):
    """The global function symbols of an ELF64 little-endian file (a cubin)."""
    import struct

    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for k in range(size // entsize):
            name_at, info = struct.unpack_from("<IB", image, offset + k * entsize)
            if info >> 4 == 1 and info & 0xF == 2:  # STB_GLOBAL, STT_FUNC
                end = image.index(b"\0", strtab + name_at)
                names.add(image[strtab + name_at:end].decode())
    return names


def test_kernel_shards_hold_their_dtypes_kernels():
    # The runtime loads a kernel from the shard its name's first dtype or
    # width suffix names ("" for none): each kernel must be in that shard
    # and in no other.
    why = _nvrtc_missing()
    if why:
        pytest.skip(f"NVRTC is not installed: {why}")
    for module, shards in lucid.cuda._cuda.kernel_shards():
        where = {}
        for shard in shards:
            kernels = _elf_functions(lucid.cuda._cuda.compile_kernel_shard(module, shard, "sm_90"))
            for name in kernels:
                assert name not in where, f"{name} is in {module}[{where[name]}] and {module}[{shard}]"
                where[name] = shard
                suffixes = [t for t in name.split("_") if t in shards]
                assert (suffixes[0] if suffixes else "") == shard, f"{name} compiles in {module}[{shard}]"
        assert len(where) > 20, f"{module}: only {sorted(where)}"


@pytest.mark.skipif(HAS_CUDA, reason="a CUDA device is present")
def test_unavailable_device_raises_clearly():
    assert lucid.cuda.is_available() is False
    assert lucid.cuda.device_count() == 0
    assert lucid.cuda.unavailable_reason()
    x = lucid.ones(3)
    for use in (lambda: x.cuda(), lambda: x.to("cuda"), lambda: lucid.zeros(2, device="cuda:0"),
                lambda: lucid.cuda.synchronize()):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            use()
    model = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        model.to("cuda")
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert x.device.type == "cpu" and x.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.skipif(HAS_CUDA, reason="a CUDA device is present")
def test_cudnn_is_unavailable_without_a_device():
    cudnn = lucid.backends.cudnn
    assert cudnn.is_available() is False
    assert "CUDA is not available" in cudnn.unavailable_reason()
    assert cudnn.version() is None
    assert cudnn.is_acceptable(lucid.ones(1)) is False
    assert cudnn.enabled is True
    cudnn.enabled = False
    try:
        assert cudnn.enabled is False and lucid.backends.cudnn.enabled is False
    finally:
        cudnn.enabled = True
    assert cudnn.enabled is True


def test_device_strings():
    assert lucid.device("cuda:0") == lucid.device("cuda")
    assert str(lucid.device("cuda")) == "cuda"
    assert lucid.device("cuda:0").type == "cuda"
    with pytest.raises(RuntimeError, match="invalid device string"):
        lucid.device("cuda:x")


def test_default_device_is_where_factories_put_tensors():
    before = lucid.get_default_device()
    assert lucid.device("cpu") != None  # noqa: E711  (torch: a device never equals None)
    try:
        lucid.set_default_device("cpu")
        assert lucid.get_default_device() == lucid.device("cpu")
        assert lucid.zeros(2).device.type == "cpu"
        if not HAS_CUDA:
            lucid.set_default_device("cuda")  # the choice is kept; making a tensor there says why it cannot
            with pytest.raises(RuntimeError, match="CUDA is not available"):
                lucid.zeros(2)
            return
        lucid.set_default_device("cuda")
        made = [lucid.zeros(2), lucid.ones(2, 3), lucid.tensor([1.0, 2.0]), lucid.arange(3), lucid.randn(4),
                lucid.rand(2, generator=lucid.Generator().manual_seed(1)), lucid.eye(2), lucid.full((2,), 3.0),
                lucid.as_tensor(np.ones(3, np.float32)), lucid.randint(0, 5, (3,))]
        assert all(t.device.type == "cuda" for t in made)
        assert all(p.device.type == "cuda" for p in nn.Linear(3, 2).parameters())
        host = lucid.zeros(2, device="cpu")
        assert host.device.type == "cpu" and lucid.zeros_like(host).device.type == "cpu"  # *_like: the input's
        assert lucid.from_numpy(np.ones(2)).device.type == "cpu"  # shares host memory, as in PyTorch
    finally:
        lucid.set_default_device(before)


def test_tf32_flag_defaults_off():
    assert lucid.backends.cuda.matmul.allow_tf32 is False
    lucid.backends.cuda.matmul.allow_tf32 = True
    try:
        assert lucid.backends.cuda.matmul.allow_tf32 is True
    finally:
        lucid.backends.cuda.matmul.allow_tf32 = False


# ---------------------------------------------------------------- on a GPU
def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def both(*arrays, grad=False):
    """The same values as a cpu and a cuda tensor each."""
    cpu, dev = [], []
    for a in arrays:
        c = lucid.tensor(a)
        d = c.cuda()
        if grad:
            c.requires_grad_(True)
            d.requires_grad_(True)
        cpu.append(c)
        dev.append(d)
    return cpu, dev


def close(d, c, rtol=1e-5, atol=1e-6, what=""):
    assert d.device.type == "cuda", what
    assert c.device.type == "cpu", what
    assert d.dtype == c.dtype, f"{what}: dtype {d.dtype} != {c.dtype}"
    assert tuple(d.shape) == tuple(c.shape), what
    a, e = d.detach().cpu(), c.detach()
    if a.dtype in (lucid.bfloat16, lucid.float16):
        a, e = a.float(), e.float()
    a, e = a.numpy(), e.numpy()
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=what)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


def same(fn, *arrays, grad=True, rtol=1e-5, atol=1e-6):
    """fn on cpu and on cuda: outputs and (for float inputs) gradients agree."""
    floats = [a.dtype.kind == "f" for a in arrays]
    cpu, dev = both(*arrays)
    for c, d, f in zip(cpu, dev, floats):
        if grad and f:
            c.requires_grad_(True)
            d.requires_grad_(True)
    oc, od = fn(*cpu), fn(*dev)
    oc = list(oc) if isinstance(oc, (tuple, list)) else [oc]
    od = list(od) if isinstance(od, (tuple, list)) else [od]
    for k, (c, d) in enumerate(zip(oc, od)):
        close(d, c, rtol, atol, f"output {k}")
    if grad and any(floats):
        outs = [(c, d) for c, d in zip(oc, od) if c.dtype.is_floating_point and c.requires_grad]
        if outs:
            up = [rnd(*c.shape, seed=7 + k) for k, (c, _) in enumerate(outs)]
            sc = sum(((c * lucid.tensor(u).to(c.dtype)).sum() for (c, _), u in zip(outs, up)), lucid.tensor(0.0))
            sd = sum(((d * lucid.tensor(u).to(d.dtype).cuda()).sum() for (_, d), u in zip(outs, up)),
                     lucid.tensor(0.0).cuda())
            sc.backward()
            sd.backward()
            for k, (c, d, f) in enumerate(zip(cpu, dev, floats)):
                if f:
                    assert (c.grad is None) == (d.grad is None), f"grad {k}"
                    if c.grad is not None:
                        close(d.grad, c.grad, rtol, atol, f"grad of input {k}")


@gpu
def test_device_api():
    assert lucid.cuda.device_count() >= 1
    assert lucid.cuda.get_device_name()
    x = lucid.arange(6.0).reshape(2, 3)
    for y in (x.cuda(), x.to("cuda"), x.to("cuda:0"), x.cuda(0), lucid.tensor(x.numpy(), device="cuda")):
        assert y.device == lucid.device("cuda") and y.is_cuda
        assert y.cpu().tolist() == x.tolist()
    y = x.cuda()
    assert y.tolist() == x.tolist()
    assert y.sum().item() == 15.0
    assert "device='cuda'" in repr(y)
    with pytest.raises(TypeError, match="cpu"):
        y.numpy()
    with pytest.raises(TypeError, match="same device"):
        x + y
    lucid.cuda.synchronize()
    before = lucid.cuda.memory_allocated()
    big = lucid.zeros(1 << 20, device="cuda")
    assert lucid.cuda.memory_allocated() >= before + 4 * (1 << 20)
    assert lucid.cuda.max_memory_allocated() >= lucid.cuda.memory_allocated()
    del big
    assert lucid.cuda.memory_allocated() == before
    lucid.cuda.empty_cache()
    model = nn.Linear(3, 2)
    assert model.cuda() is model
    assert all(p.is_cuda for p in model.parameters())
    out = model(y)
    assert out.is_cuda and out.shape == (2, 2)
    model.to("cpu")
    np.testing.assert_allclose(model(x).detach().numpy(), out.detach().cpu().numpy(), rtol=1e-6, atol=1e-6)


@gpu
def test_random_draws_match_the_cpu():
    lucid.cuda.manual_seed_all(3)
    a = lucid.rand(1000)
    b = lucid.randn(257, 3)
    lucid.manual_seed(3)
    c = lucid.rand(1000, device="cuda")
    d = lucid.randn(257, 3, device="cuda")
    close(c, a, rtol=1e-6, atol=1e-7)
    close(d, b, rtol=1e-5, atol=1e-6)


UNARY = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "neg", "sign", "floor",
         "ceil", "round", "square", "reciprocal", "log1p", "expm1", "erf"]


@gpu
@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    x = rnd(5, 7)
    if name in ("log", "sqrt", "rsqrt", "log1p"):
        x = np.abs(x) + 0.1
    same(lambda t: getattr(lucid, name)(t), x, grad=name not in ("floor", "ceil", "round", "sign"))


@gpu
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "pow"])
def test_binary_broadcast_and_strided(name):
    a, b = rnd(4, 1, 6), rnd(3, 1, seed=1)
    if name == "pow":
        a = np.abs(a) + 0.5
    fn = getattr(lucid, name)
    same(fn, a, b)
    same(lambda x, y: fn(x.transpose(0, 2), y), rnd(3, 4, 5), rnd(5, 1, 3, seed=2))
    same(lambda x: fn(x, 2.5), a)


@gpu
def test_compare_where_cast():
    a, b = rnd(6, 5), rnd(6, 5, seed=1)
    same(lambda x, y: (x > y, x <= y, x == x, lucid.where(x > y, x, y)), a, b)
    for dt in (lucid.float16, lucid.bfloat16, lucid.float64, lucid.int32, lucid.int64, lucid.bool):
        same(lambda x: (x * 3).to(dt), a, grad=False)
    ints = np.arange(-6, 6).reshape(3, 4).astype(np.int64)
    same(lambda x: (x * 2 + 1, x // 3, x % 4, x.float() / 2), ints, grad=False)


@gpu
def test_reductions():
    x = rnd(3, 4, 5)
    for dims in (None, 0, 1, 2, (0, 2), (1, 2), -1):
        same(lambda t: (t.sum(dims) if dims is not None else t.sum()), x, rtol=1e-5, atol=1e-5)
        same(lambda t: (t.mean(dims, keepdim=True) if dims is not None else t.mean()), x, rtol=1e-5, atol=1e-5)
    same(lambda t: (t.amax(1), t.amin((0, 2)), t.argmax(2), t.argmin(0)), x)
    same(lambda t: t.var(1), x, rtol=1e-5, atol=1e-5)
    same(lambda t: t.transpose(0, 2).sum(1), x, rtol=1e-5, atol=1e-5)
    b = rnd(4, 4) > 0
    same(lambda t: (t.all(), t.any(1)), b, grad=False)
    big = rnd(1000, 3000)
    same(lambda t: (t.sum(), t.sum(0), t.sum(1)), big, grad=False, rtol=1e-4, atol=1e-3)


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul(dtype):
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    same(lambda a, b: a @ b, rnd(33, 65, dtype=dtype), rnd(65, 17, seed=1, dtype=dtype), **tol)
    same(lambda a, b: a @ b, rnd(3, 2, 8, 9, dtype=dtype), rnd(3, 2, 9, 5, seed=1, dtype=dtype), **tol)
    same(lambda a, b: a.mT @ b.mT, rnd(4, 9, 8, dtype=dtype), rnd(4, 5, 9, seed=1, dtype=dtype), **tol)
    same(lambda a, b: a @ b, rnd(7, dtype=dtype), rnd(7, 3, seed=1, dtype=dtype), **tol)
    same(lambda a, b: F.linear(a, b), rnd(5, 64, dtype=dtype), rnd(32, 64, seed=1, dtype=dtype), **tol)


@gpu
def test_matmul_is_float32_without_tf32():
    # TF32 keeps 10 mantissa bits: 1 + 2^-11 becomes 1 (or 1 + 2^-10) and a
    # row of 64 sums to 64 (or 64 + 2^-4). In float32 every partial sum of
    # the products 1 + 2^-11 is exact, so any order of summation gives
    # 64 + 2^-5 exactly.
    a = np.full((64, 64), 1 + 2.0 ** -11, np.float32)
    cpu, dev = both(a, np.ones((64, 64), np.float32))
    got = (dev[0] @ dev[1]).cpu().numpy()
    np.testing.assert_array_equal(got, np.float32(64 + 2.0 ** -5))
    np.testing.assert_array_equal(got, (cpu[0] @ cpu[1]).numpy())


@gpu
def test_row_ops():
    x = rnd(6, 7, 33)
    same(lambda t: t.softmax(-1), x)
    same(lambda t: t.softmax(1), x)
    same(lambda t: t.log_softmax(-1), x)
    same(lambda t: F.log_softmax(t, 0), x)
    w, b = rnd(33, seed=1), rnd(33, seed=2)
    same(lambda t, w_, b_: F.layer_norm(t, (33,), w_, b_), x, w, b, rtol=1e-4, atol=1e-5)
    same(lambda t: F.layer_norm(t, (7, 33)), x, rtol=1e-4, atol=1e-5)
    same(lambda t: F.gelu(t), x)
    wide = rnd(4, 5000)
    same(lambda t: (t.softmax(-1), F.layer_norm(t, (5000,))), wide, rtol=1e-4, atol=1e-5)



@gpu
def test_moves_between_devices_are_differentiable():
    # as PyTorch's .to(device): the gradient flows back to the source device
    w = lucid.tensor(rnd(3, 4, seed=6), requires_grad=True)
    y = w.cuda()
    assert y.grad_fn is not None and not y.is_leaf and y.requires_grad
    (y * y).sum().backward()
    assert w.grad.device.type == "cpu"
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy(), rtol=1e-6)
    v = lucid.tensor(rnd(5, seed=7), device="cuda", requires_grad=True)
    (v.to("cpu") * 3.0).sum().backward()
    assert v.grad.device.type == "cuda"
    np.testing.assert_allclose(v.grad.cpu().numpy(), np.full(5, 3.0, np.float32))
    with lucid.no_grad():
        assert w.cuda().grad_fn is None
    model = nn.Linear(4, 2)  # moving a module moves its leaves: they stay leaves
    model.to("cuda")
    assert all(p.is_leaf and p.grad_fn is None and p.device.type == "cuda" for p in model.parameters())


@gpu
def test_a_cuda_tensor_indexed_with_host_indices():
    # x_cuda[:, [-1]] and x_cuda[cpu_index] as in PyTorch (top-k sampling does the first); the
    # index moves to x's device, negative entries count from the end.
    (c,), (d,) = both(rnd(3, 5, seed=4))
    for key in [(slice(None), [-1]), ([2, 0, -1],), (lucid.tensor([1, -2]),), (slice(None), lucid.tensor([[0, 4]]))]:
        close(d[key], c[key], what=str(key))
    d[:, [-1]] = 7.0
    c[:, [-1]] = 7.0
    close(d, c, what="index_put")

@gpu
def test_indexing_and_losses():
    table = rnd(50, 8)
    idx = np.array([[1, 4, 49], [0, 0, 7]], np.int64)
    same(lambda w, i: F.embedding(i, w), table, idx)
    same(lambda w, i: w[i], table, idx)
    same(lambda w: w[3:40:4, ::2], table)
    same(lambda w, i: lucid.gather(w, 1, i), table, np.array([[0, 7], [3, 3]], np.int64))
    same(lambda w, i: w.index_select(0, i), table, np.array([5, 5, 2], np.int64))
    logits, target = rnd(16, 10), np.arange(16, dtype=np.int64) % 10
    same(lambda x, y: F.cross_entropy(x, y), logits, target, rtol=1e-5, atol=1e-6)
    same(lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1), logits, target, rtol=1e-5, atol=1e-6)
    same(lambda x, y: F.nll_loss(F.log_softmax(x, 1), y), logits, target)
    same(lambda x, y: F.mse_loss(x, y), logits, rnd(16, 10, seed=3))
    same(lambda x: lucid.cat([x, x * 2], 1).reshape(2, -1).permute(1, 0), logits)
    same(lambda x: F.one_hot(x, 10), target, grad=False)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_accumulating_index_ops_are_deterministic_and_add_in_the_cpu_order(dtype):
    """index_add (embedding's backward) and scatter_add with many repeated
    indices: the same bits on every run and the CPU's bits (each destination
    adds its sources in index order), not an order atomics happen to take."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal((40, 33)).astype(dtype) if dtype != "int64" else rng.integers(-9, 9, (40, 33))
    rows = rng.integers(0, 40, 500)
    src = (rng.standard_normal((500, 33)) * 100).astype(base.dtype)
    cols = rng.integers(0, 33, (40, 80))
    gsrc = (rng.standard_normal((40, 80)) * 100).astype(base.dtype)

    def both(device):
        on = lambda a: lucid.tensor(a).to(device)  # noqa: E731
        b = on(base)
        added = [b.index_add(0, on(rows), on(src)), lucid.scatter_add(b, 1, on(cols), on(gsrc))]
        return [t.cpu().numpy() for t in added]

    cpu = both("cpu")
    for _ in range(3):
        for got, want in zip(both("cuda"), cpu):
            np.testing.assert_array_equal(got, want)
    table = lucid.tensor(base.astype(np.float32)).cuda().requires_grad_()
    grads = []
    for _ in range(2):
        table.grad = None
        F.embedding(lucid.tensor(rows).cuda(), table).mul(lucid.tensor(src.astype(np.float32)).cuda()).sum().backward()
        grads.append(table.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@gpu
def test_out_of_range_index_raises():
    table = lucid.ones(5, 3, device="cuda")
    with pytest.raises(IndexError):
        F.embedding(lucid.tensor([1, 9]).cuda(), table)
        lucid.cuda.synchronize()
    assert table.sum().item() == 15.0  # the device is still usable


@gpu
def test_conv_and_pool():
    x, w, b = rnd(2, 3, 9, 9), rnd(4, 3, 3, 3, seed=1), rnd(4, seed=2)
    same(lambda x_, w_, b_: F.conv2d(x_, w_, b_, padding=1), x, w, b, rtol=1e-4, atol=1e-5)
    same(lambda x_: F.max_pool2d(x_, 2), x)


HAS_CUDNN = HAS_CUDA and lucid.backends.cudnn.is_available()
cudnn_gpu = pytest.mark.skipif(not HAS_CUDNN, reason=f"no cuDNN ({lucid.backends.cudnn.unavailable_reason()})")

# (x shape, weight shape, stride, padding, dilation, groups)
CUDNN_GEOMETRIES = [
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 11, 10), (6, 2, 3, 3), (2, 1), (1, 0), (1, 1), 2),
    ((1, 6, 13, 12), (6, 1, 3, 3), (1, 1), (2, 2), (2, 2), 6),  # depthwise, dilated
    ((3, 8, 7, 7), (16, 8, 1, 1), (2, 2), (0, 0), (1, 1), 1),  # pointwise, strided
    ((2, 3, 16, 16), (8, 3, 5, 5), (2, 2), (2, 2), (1, 2), 1),
    ((4, 32, 8, 8), (64, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1),
]
# Relative to the largest reference value: cuDNN may pick FFT or Winograd
# algorithms, and 16-bit operands are rounded.
CUDNN_TOL = {"float64": 1e-11, "float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2}


def cudnn_conv2d(direction, a, b, x_shape, w_shape, stride, padding, dilation, groups):
    return lucid.cuda._cuda.cudnn_conv2d(direction, a, b, list(x_shape), list(w_shape), list(stride), list(padding),
                                         list(dilation), groups)


@cudnn_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("geometry", range(len(CUDNN_GEOMETRIES)))
def test_cudnn_convolutions_match_the_cpu(dtype, geometry):
    x_shape, w_shape, stride, padding, dilation, groups = CUDNN_GEOMETRIES[geometry]
    dt = getattr(lucid, dtype)
    # The operands rounded to dtype; the reference is the CPU's float64 convolution of those values.
    x, w = lucid.tensor(rnd(*x_shape)).to(dt), lucid.tensor(rnd(*w_shape, seed=1)).to(dt)
    xr, wr = x.double().requires_grad_(True), w.double().requires_grad_(True)
    yr = F.conv2d(xr, wr, stride=stride, padding=padding, dilation=dilation, groups=groups)
    dy = lucid.tensor(rnd(*yr.shape, seed=2)).to(dt)
    yr.backward(dy.double())
    geo = (x_shape, w_shape, stride, padding, dilation, groups)
    runs = {"y": cudnn_conv2d("forward", x.cuda(), w.cuda(), *geo),
            "dx": cudnn_conv2d("backward_data", dy.cuda(), w.cuda(), *geo),
            "dw": cudnn_conv2d("backward_filter", x.cuda(), dy.cuda(), *geo)}
    for name, ref in (("y", yr), ("dx", xr.grad), ("dw", wr.grad)):
        got = runs[name]
        assert got is not None, f"cuDNN declined {name} for {dtype} {geo}"
        assert got.device.type == "cuda" and got.dtype == dt and tuple(got.shape) == tuple(ref.shape), name
        e = ref.detach().numpy()
        a = got.cpu().double().numpy()
        np.testing.assert_allclose(a, e, rtol=0, atol=CUDNN_TOL[dtype] * np.abs(e).max(), err_msg=f"{name} {geo}")


@cudnn_gpu
def test_cudnn_float32_is_float32_without_tf32():
    # TF32 keeps 10 mantissa bits: 1 + 2^-11 becomes 1 (or 1 + 2^-10) and y
    # 64 (or 64 + 2^-4). In float32 every partial sum of the products
    # 1 + 2^-11 is exact, so any order of summation gives 64 + 2^-5 exactly.
    geo = ((1, 64, 4, 4), (8, 64, 1, 1), (1, 1), (0, 0), (1, 1), 1)
    x = lucid.full(geo[0], 1 + 2.0 ** -11, device="cuda")
    w = lucid.ones(geo[1], device="cuda")
    assert lucid.backends.cuda.matmul.allow_tf32 is False
    y = cudnn_conv2d("forward", x, w, *geo)
    assert y is not None
    np.testing.assert_array_equal(y.cpu().numpy(), np.float32(64 + 2.0 ** -5))
    lucid.backends.cuda.matmul.allow_tf32 = True  # may use TF32: within its precision
    try:
        y = cudnn_conv2d("forward", x, w, *geo)
    finally:
        lucid.backends.cuda.matmul.allow_tf32 = False
    assert y is not None
    np.testing.assert_allclose(y.cpu().numpy(), 64, rtol=1e-3)


@cudnn_gpu
def test_cudnn_declines_what_it_does_not_run():
    geo = ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1)
    xi, wi = lucid.ones(geo[0], dtype=lucid.int32, device="cuda"), lucid.ones(geo[1], dtype=lucid.int32, device="cuda")
    assert cudnn_conv2d("forward", xi, wi, *geo) is None  # integer convolutions fall back
    x, w = lucid.ones(geo[0], device="cuda"), lucid.ones(geo[1], device="cuda")
    assert lucid.backends.cudnn.version() // 10000 == 9
    lucid.backends.cudnn.enabled = False
    try:
        assert cudnn_conv2d("forward", x, w, *geo) is None
    finally:
        lucid.backends.cudnn.enabled = True
    y = cudnn_conv2d("forward", x, w, *geo)
    assert y is not None and y.cpu()[0, 0, 4, 4].item() == 27.0


@gpu
def test_in_place_and_views():
    x = rnd(4, 6)
    cpu, dev = both(x)
    for t in (cpu[0], dev[0]):
        t[1:3, ::2] = 7.0
        t.mul_(2)
        t.T[0].add_(1)
    close(dev[0], cpu[0])


def _gpt_workload():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from benchmarks import workloads

    return workloads


def _to_device(model, device):
    model.to(device)
    # the benchmark GPT keeps its mask and positions as plain attributes
    for m in model.modules():
        for name in ("mask", "positions"):
            if isinstance(getattr(m, name, None), lucid.Tensor):
                setattr(m, name, getattr(m, name).to(device))
    return model


@gpu
@pytest.mark.parametrize("name", ["mlp_small", "gpt_tiny", "cnn_small"])
def test_training_steps_match_the_cpu(name):
    workloads = _gpt_workload()
    from benchmarks.workloads import torchlike

    w = dict(workloads.WORKLOADS[name])
    if name == "gpt_tiny":
        w.update(ctx=32, batch=4)
    if name == "cnn_small":
        w.update(batch=8)
    data = workloads.make_data(w)
    runs = {}
    for device in ("cpu", "cuda"):
        lucid.manual_seed(0)
        model = _to_device(torchlike.build_model(lucid, w), device)
        loss_fn = torchlike.loss_fn(lucid, w)
        opt = torchlike.make_optimizer(lucid, w["optimizer"], model.parameters())
        x, y = lucid.tensor(data["x"], device=device), lucid.tensor(data["y"], device=device)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs[device] = (losses, [p.detach().cpu().numpy() for p in model.parameters()])
    np.testing.assert_allclose(runs["cuda"][0], runs["cpu"][0], rtol=1e-4)
    for k, (a, e) in enumerate(zip(runs["cuda"][1], runs["cpu"][1])):
        np.testing.assert_allclose(a, e, rtol=1e-3, atol=1e-4, err_msg=f"parameter {k}")


@gpu
@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_optimizers_match_the_cpu(opt_name):
    p0, g0 = rnd(40, 3), rnd(40, 3, seed=1)
    out = {}
    for device in ("cpu", "cuda"):
        p = lucid.tensor(p0, device=device, requires_grad=True)
        kwargs = {"lr": 0.01}
        if opt_name == "SGD":
            kwargs["momentum"] = 0.9
        opt = getattr(lucid.optim, opt_name)([p], **kwargs)
        for k in range(3):
            p.grad = lucid.tensor(g0 * (k + 1), device=device)
            opt.step()
        out[device] = p.detach().cpu().numpy()
    np.testing.assert_allclose(out["cuda"], out["cpu"], rtol=1e-5, atol=1e-6)


# Compiled steps on the cuda device: tests/test_cuda_compile.py.


def test_fused_kernels_compile_with_nvrtc():
    # The kernels a compiled step on cuda generates for its fused elementwise
    # groups, compiled with NVRTC (no GPU needed) for real training steps;
    # the steps themselves run on the CPU and must still match eager.
    why = _nvrtc_missing()
    if why:
        pytest.skip(f"NVRTC is not installed: {why}")
    from lucid import _C
    from lucid.compile import fused_step

    workloads = _gpt_workload()
    from benchmarks.workloads import torchlike

    _C._compile_steps_with(lucid.cuda._cuda.fused_kernel_checker("sm_90"))
    try:
        for name in ("mlp_small", "gpt_tiny", "cnn_small"):
            w = dict(workloads.WORKLOADS[name], batch=2)
            if name == "gpt_tiny":
                w.update(ctx=8, layers=1)
            data = workloads.make_data(w)
            lucid.manual_seed(0)
            model = torchlike.build_model(lucid, w)
            opt = torchlike.make_optimizer(lucid, w["optimizer"], model.parameters())
            scaler = lucid.amp.GradScaler("cpu")
            step = fused_step(model, torchlike.loss_fn(lucid, w), opt, scaler)
            assert np.isfinite(step(lucid.tensor(data["x"]), lucid.tensor(data["y"])).item())
    finally:
        _C._compile_steps_with(None)


# Primitives that run on the host (backend/cuda/host_fallback.cpp): the
# operands are read back, the CPU kernel runs, the results go back.
@gpu
def test_sort_topk_nonzero_scan_split_on_the_host_fallback():
    x = rnd(5, 7)
    same(lambda t: lucid.sort(t, dim=1, descending=True), x)
    same(lambda t: lucid.argsort(t, dim=0), x, grad=False)
    same(lambda t: lucid.topk(t, 3, dim=1), x)
    same(lambda t: lucid.cumsum(t, 1), x)
    same(lambda t: lucid.cumprod(t, 0), x)
    same(lambda t: lucid.split(t * 2, [2, 5], dim=1), x)
    same(lambda t: lucid.chunk(t * 2, 3, dim=0), x)
    same(lambda t: lucid.nonzero(t > 0.3), x, grad=False)


@gpu
def test_conv_transpose_and_recurrent_layers_on_the_host_fallback():
    same(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1), rnd(2, 3, 5, 5), rnd(3, 4, 3, 3, seed=1),
         rnd(4, seed=2), rtol=1e-4, atol=1e-5)
    for cls in (nn.RNN, nn.GRU, nn.LSTM):
        lucid.manual_seed(0)
        cpu_layer = cls(6, 5, num_layers=2, batch_first=True)
        dev_layer = cls(6, 5, num_layers=2, batch_first=True)
        dev_layer.load_state_dict(cpu_layer.state_dict())
        dev_layer.cuda()
        x = rnd(3, 4, 6)

        def run(layer, t):
            out = layer(t)[0]
            (out * out).sum().backward()
            return out

        (c,), (d,) = both(x, grad=True)
        close(run(dev_layer, d), run(cpu_layer, c), 1e-5, 1e-6, cls.__name__)
        close(d.grad, c.grad, 1e-5, 1e-6, cls.__name__ + " input grad")
        for (name, pc), pd in zip(cpu_layer.named_parameters(), dev_layer.parameters()):
            close(pd.grad, pc.grad, 1e-4, 1e-5, f"{cls.__name__} {name}")
