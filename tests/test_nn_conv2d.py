"""The convolution primitives (Conv2d, Conv2dBackwardInput,
Conv2dBackwardWeight) against PyTorch: values, first and second order
gradients in float64 over random geometries (stride, dilation, per-side
padding, groups, 1x1, batch 1, non-contiguous and channels-last inputs),
on each CPU path (the unfolding one and the direct stride-1 one, pinned),
float32 and 16-bit tolerances, thread counts, empty sizes, determinism,
and a compiled training step equal to the eager one."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import assert_fused_step_matches_eager

PATHS = ["unfold", "direct"]


@pytest.fixture(params=PATHS)
def path(request):
    lucid._C._set_cpu_conv_path(request.param)
    yield request.param
    lucid._C._set_cpu_conv_path("auto")


@pytest.fixture
def threads():
    before = lucid.get_num_threads()
    yield lucid.set_num_threads
    lucid.set_num_threads(before)


def _geometries(count, seed):
    """Random convolutions: (N, C, H, W, O, kernel, stride, padding, dilation, groups)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        groups = int(rng.choice([1, 1, 2, 3]))
        cg, og = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        if rng.random() < 0.2:  # depthwise
            groups, cg, og = int(rng.integers(2, 6)), 1, int(rng.integers(1, 3))
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        stride = (int(rng.choice([1, 1, 2, 3])), int(rng.choice([1, 1, 2])))
        dilation = (int(rng.choice([1, 1, 2])), int(rng.choice([1, 1, 3])))
        if rng.random() < 0.3:
            padding = "same" if stride == (1, 1) else (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        else:
            padding = (int(rng.integers(0, kh + 1)), int(rng.integers(0, kw + 1)))
        n = int(rng.choice([1, 2, 3]))
        h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
        pad = (0, 0) if padding == "same" else padding
        if h + 2 * pad[0] < dilation[0] * (kh - 1) + 1 or w + 2 * pad[1] < dilation[1] * (kw - 1) + 1:
            continue
        out.append((n, cg * groups, h, w, og * groups, (kh, kw), stride, padding, dilation, groups))
    return out


GEOMETRIES = _geometries(40, seed=0) + [
    (2, 3, 7, 8, 4, (1, 1), (1, 1), (0, 0), (1, 1), 1),    # 1x1: the input is its own unfolded matrix
    (1, 1, 9, 9, 5, (3, 3), (1, 1), (1, 1), (1, 1), 1),    # one input channel (a first layer)
    (2, 6, 6, 7, 6, (3, 3), (1, 1), (1, 1), (1, 1), 6),    # depthwise
    (2, 4, 8, 8, 3, (2, 2), (1, 1), "same", (1, 1), 1),    # 'same' with an even kernel: padding 0 before, 1 after
    (2, 4, 9, 8, 2, (4, 3), (1, 1), "same", (2, 1), 2),
    (1, 3, 10, 10, 20, (3, 3), (2, 2), (1, 1), (1, 1), 1),  # output channels beyond one vector
    (2, 20, 6, 6, 3, (3, 3), (1, 1), (0, 0), (1, 1), 1),    # input channels beyond a tile's rows
]


def _id(g):
    return "n{}c{}h{}w{}o{}_k{}x{}_s{}x{}_p{}_d{}x{}_g{}".format(
        g[0], g[1], g[2], g[3], g[4], *g[5], *g[6], g[7] if g[7] == "same" else "{}x{}".format(*g[7]), *g[8], g[9])


def _tensors(g, seed=0, dtype=np.float64):
    n, c, h, w, o, (kh, kw), *_, groups = g
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c, h, w)).astype(dtype),
            rng.standard_normal((o, c // groups, kh, kw)).astype(dtype), rng.standard_normal(o).astype(dtype))


def _conv(lib, g, x, w, b):
    _, _, _, _, _, _, stride, padding, dilation, groups = g
    return lib.nn.functional.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)


def _close(got, want, tol=1e-10, what=""):
    got = got.detach().double().numpy() if isinstance(got, lucid.Tensor) else got
    want = want.detach().double().numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


@pytest.mark.parametrize("g", GEOMETRIES, ids=[_id(g) for g in GEOMETRIES])
def test_values_and_gradients_float64(g, path):
    x, w, b = _tensors(g)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    lx, lw, lb = (lucid.tensor(a, requires_grad=True) for a in (x, w, b))
    ty, ly = _conv(torch, g, tx, tw, tb), _conv(lucid, g, lx, lw, lb)
    _close(ly, ty, what="output")
    assert ly.is_contiguous()
    up = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(up))
    ly.backward(lucid.tensor(up))
    for name, lt, tt in (("input", lx, tx), ("weight", lw, tw), ("bias", lb, tb)):
        _close(lt.grad, tt.grad, what=f"{name} gradient")


SECOND_ORDER = [g for g in GEOMETRIES if g[0] * g[1] * g[2] * g[3] <= 300][:12]


@pytest.mark.parametrize("g", SECOND_ORDER, ids=[_id(g) for g in SECOND_ORDER])
def test_second_order_gradients_float64(g, path):
    """d/d(x, w) of a function of the first gradients (create_graph): the
    backward primitives' own VJPs (each another member of the family)."""
    x, w, b = _tensors(g, seed=2)
    up = None
    results = {}
    for lib in (torch, lucid):
        tx, tw = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = _conv(lib, g, tx, tw, lib.tensor(b))
        if up is None:
            up = np.random.default_rng(3).standard_normal(tuple(y.shape))
        tu = lib.tensor(up, requires_grad=True)  # the output gradient a variable too
        gx, gw = lib.autograd.grad([(y * tu).sum()], [tx, tw], create_graph=True)
        z = (gx * gx).sum() + (gw * lib.tensor(np.cos(w))).sum() + (gx * tx).sum() + (gw * gw).sum()
        results[lib] = [t.detach() for t in lib.autograd.grad([z], [tx, tw, tu])]
    for name, got, want in zip(("input", "weight", "output gradient"), results[lucid], results[torch]):
        _close(got, want, tol=1e-9, what=f"second-order {name} gradient")


def test_gradcheck_through_conv_transpose2d():
    """Finite differences through conv_transpose2d (Conv2dBackwardInput as an op)."""
    from conftest import gradcheck
    gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2),
              np.random.default_rng(0).standard_normal((2, 4, 3, 4)),
              np.random.default_rng(1).standard_normal((4, 3, 3, 2)))


def _strided_inputs(x):
    """x as non-contiguous views of the same values: a transposed copy read
    back, a slice of a larger tensor, a channels-last layout."""
    n, c, h, w = x.shape
    big = np.zeros((n, c, h + 2, w * 2), x.dtype)
    big[:, :, 1:h + 1, ::2] = x
    return {
        "transposed": lambda lib: lib.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(2, 3),
        "sliced": lambda lib: lib.tensor(big)[:, :, 1:h + 1, ::2],
        "channels_last": lambda lib: lib.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2),
    }


@pytest.mark.parametrize("layout", ["transposed", "sliced", "channels_last"])
def test_non_contiguous_inputs(layout, path):
    g = (2, 4, 7, 6, 6, (3, 3), (1, 1), (1, 1), (1, 1), 2)
    x, w, b = _tensors(g)
    make = _strided_inputs(x)[layout]
    lx, tx = make(lucid), make(torch)
    assert not lx.is_contiguous()
    lx.requires_grad_(True)
    tx.requires_grad_(True)
    wt = np.ascontiguousarray(w.transpose(1, 0, 2, 3))  # the weight non-contiguous too
    lw = lucid.tensor(wt).transpose(0, 1).requires_grad_(True)
    tw = torch.tensor(wt).transpose(0, 1).requires_grad_(True)
    ly, ty = _conv(lucid, g, lx, lw, lucid.tensor(b)), _conv(torch, g, tx, tw, torch.tensor(b))
    _close(ly, ty, what="output")
    ly.sum().backward()
    ty.sum().backward()
    _close(lx.grad, tx.grad, what="input gradient")
    _close(lw.grad, tw.grad, what="weight gradient")


# Shapes large enough for several blocks, bands of rows and both thread counts.
LARGE = [
    (16, 32, 30, 30, 32, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    (4, 1, 40, 44, 20, (5, 5), (1, 1), (0, 0), (1, 1), 1),
    (2, 24, 64, 60, 40, (3, 3), (2, 2), (1, 1), (1, 1), 1),
    (8, 64, 12, 12, 128, (5, 5), (1, 1), (0, 0), (1, 1), 1),
    (1, 48, 70, 70, 9, (3, 3), (1, 1), (2, 1), (1, 1), 3),
    (6, 40, 9, 9, 24, (1, 1), (1, 1), (0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("g", LARGE, ids=[_id(g) for g in LARGE])
def test_float32_larger_shapes(g, nthreads, path, threads):
    threads(nthreads)
    x, w, b = _tensors(g, dtype=np.float32)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    lx, lw = lucid.tensor(x, requires_grad=True), lucid.tensor(w, requires_grad=True)
    ty, ly = _conv(torch, g, tx, tw, torch.tensor(b)), _conv(lucid, g, lx, lw, lucid.tensor(b))
    _close(ly, ty, tol=2e-5, what="output")
    up = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(up))
    ly.backward(lucid.tensor(up))
    _close(lx.grad, tx.grad, tol=2e-5, what="input gradient")
    _close(lw.grad, tw.grad, tol=2e-5, what="weight gradient")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_floats(dtype, path):
    """16-bit operands compute in float32 and round once: against PyTorch's
    float32 convolution of the same (rounded) values."""
    g = (3, 6, 9, 8, 10, (3, 3), (1, 1), (1, 1), (1, 1), 2)
    x, w, _ = _tensors(g, dtype=np.float32)
    ldt, tdt = getattr(lucid, dtype), getattr(torch, dtype)
    lx = lucid.tensor(x).to(ldt).requires_grad_(True)
    lw = lucid.tensor(w).to(ldt).requires_grad_(True)
    tx = torch.tensor(x).to(tdt).float().requires_grad_(True)
    tw = torch.tensor(w).to(tdt).float().requires_grad_(True)
    ly, ty = _conv(lucid, g, lx, lw, None), _conv(torch, g, tx, tw, None)
    assert ly.dtype == ldt
    tol = 1e-2 if dtype == "float16" else 4e-2
    _close(ly.float(), ty, tol=tol, what="output")
    up = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(np.float32)
    ly.backward(lucid.tensor(up).to(ldt))
    ty.backward(torch.tensor(up).to(tdt).float())
    assert lx.grad.dtype == ldt and lw.grad.dtype == ldt
    _close(lx.grad.float(), tx.grad, tol=tol, what="input gradient")
    _close(lw.grad.float(), tw.grad, tol=tol, what="weight gradient")


@pytest.mark.parametrize("shapes", [((0, 3, 5, 5), (4, 3, 3, 3)), ((2, 0, 5, 5), (4, 0, 3, 3))],
                         ids=["empty_batch", "no_input_channels"])
def test_empty_sizes(shapes, path):
    """An empty batch gives an empty output; no input channels give empty
    sums, zeros of the output's shape (PyTorch returns an [N, 0, ...] tensor
    there, which has no output channels at all)."""
    xs, ws = shapes
    lx, lw = lucid.ones(*xs, dtype=lucid.float64, requires_grad=True), lucid.ones(*ws, dtype=lucid.float64,
                                                                                    requires_grad=True)
    ly = F.conv2d(lx, lw, padding=1)
    assert tuple(ly.shape) == (xs[0], ws[0], 5, 5)
    assert float(abs(ly).sum()) == 0
    ly.sum().backward()
    assert tuple(lx.grad.shape) == xs and tuple(lw.grad.shape) == ws
    assert float(abs(lx.grad).sum()) == 0 and float(abs(lw.grad).sum()) == 0


def test_no_output_channels_is_an_error():
    with pytest.raises(RuntimeError, match=r"expected weight to be at least 1 at dimension 0, but got weight of "
                                           r"size \[0, 3, 3, 3\] instead"):
        torch.nn.functional.conv2d(torch.ones(2, 3, 5, 5), torch.ones(0, 3, 3, 3))
    with pytest.raises(lucid.InvalidArgument, match=r"expected weight to be at least 1 at dimension 0, but got "
                                                    r"weight of size \[0, 3, 3, 3\] instead"):
        F.conv2d(lucid.ones(2, 3, 5, 5), lucid.ones(0, 3, 3, 3))


@pytest.mark.parametrize("g", [LARGE[0], LARGE[2]], ids=["stride1", "stride2"])
def test_weight_gradient_is_deterministic(g, path, threads):
    threads(2)
    x, w, _ = _tensors(g, dtype=np.float32)
    out_shape = tuple(_conv(lucid, g, lucid.tensor(x), lucid.tensor(w), None).shape)
    up = lucid.tensor(np.random.default_rng(1).standard_normal(out_shape).astype(np.float32))
    grads = []
    for _ in range(3):
        lw = lucid.tensor(w, requires_grad=True)
        _conv(lucid, g, lucid.tensor(x), lw, None).backward(up)
        grads.append(lw.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0], grads[2])


def test_conv_transpose2d_with_output_padding_beyond_stride():
    """output_padding >= stride (allowed below the dilation): the grid the
    convolution maps the output onto has a row and column more than the
    input, whose taps read zeros."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((3, 2, 3, 3))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    lx, lw = lucid.tensor(x, requires_grad=True), lucid.tensor(w, requires_grad=True)
    kw = dict(stride=1, output_padding=1, dilation=2)
    ty, ly = torch.nn.functional.conv_transpose2d(tx, tw, **kw), F.conv_transpose2d(lx, lw, **kw)
    _close(ly, ty)
    up = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(up))
    ly.backward(lucid.tensor(up))
    _close(lx.grad, tx.grad)
    _close(lw.grad, tw.grad)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.c = nn.Conv2d(8, 12, 1)
        self.d = nn.Conv2d(12, 4, (2, 3), padding="same", dilation=(1, 2), bias=False)
        self.head = nn.Linear(4 * 5 * 5, 5)

    def forward(self, x):
        x = F.relu(self.a(x))
        x = F.relu(self.b(x))
        x = F.relu(self.c(x))
        return self.head(self.d(x).flatten(1))


@pytest.mark.parametrize("conv_path", ["auto", "unfold", "direct"])
def test_fused_step_matches_eager(conv_path):
    lucid._C._set_cpu_conv_path(conv_path)
    try:
        lucid.manual_seed(0)
        rng = np.random.default_rng(0)
        batches = [(lucid.tensor(rng.standard_normal((4, 3, 10, 10)).astype(np.float32)),
                    lucid.tensor(rng.integers(0, 5, size=4))) for _ in range(4)]
        assert_fused_step_matches_eager(_Net(), F.cross_entropy,
                                        lambda ps: lucid.optim.SGD(ps, lr=0.05, momentum=0.9), batches)
    finally:
        lucid._C._set_cpu_conv_path("auto")
