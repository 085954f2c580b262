"""Volumetric layers against torch: conv3d and conv_transpose3d (one 2-D
convolution over gathered depth slices), max/avg/adaptive/LP 3-D pooling,
max unpooling 1-D to 3-D, their modules; forward and gradients (float64
tight), unbatched and non-contiguous inputs, error kinds, and a compiled
training step equal to eager."""

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import assert_fused_step_matches_eager, check, rnd
from test_nn_helpers import compare_module

CONV3D = [
    dict(stride=1, padding=0, dilation=1, groups=1),
    dict(stride=2, padding=1, dilation=1, groups=1),
    dict(stride=(1, 2, 3), padding=(1, 0, 2), dilation=(2, 1, 1), groups=2),
    dict(stride=1, padding="same", dilation=(1, 2, 1), groups=1),
    dict(stride=1, padding="valid", dilation=1, groups=4),
    dict(stride=(2, 1, 1), padding=(0, 1, 1), dilation=1, groups=1),
]


@pytest.mark.parametrize("args", CONV3D)
@pytest.mark.parametrize("kernel", [(3, 3, 3), (2, 1, 3), (1, 1, 1)])
@pytest.mark.parametrize("bias", [True, False])
def test_conv3d(args, kernel, bias):
    g = args["groups"]
    x = rnd(2, 4, 5, 6, 7, dtype="float64", seed=1)
    w = rnd(6 if g != 4 else 4, 4 // g, *kernel, dtype="float64", seed=2)
    b = rnd(w.shape[0], dtype="float64", seed=3) if bias else None
    inputs = (x, w) + ((b,) if bias else ())
    check(lambda lib, x, w, *b: lib.nn.functional.conv3d(x, w, b[0] if b else None, **args), *inputs,
          rtol=1e-10, atol=1e-10)


def test_conv3d_unbatched_noncontiguous_float32():
    x = rnd(5, 4, 6, 3, seed=4)  # permuted below to [C=3, 5, 4, 6]
    w = rnd(2, 3, 2, 2, 2, seed=5)
    check(lambda lib, x, w: lib.nn.functional.conv3d(x.permute(3, 0, 1, 2), w, padding=1), x, w)


CT3D = [
    dict(stride=1, padding=0, output_padding=0, groups=1, dilation=1),
    dict(stride=2, padding=1, output_padding=1, groups=1, dilation=1),
    dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2), groups=2, dilation=(1, 2, 1)),
    dict(stride=3, padding=0, output_padding=(2, 0, 1), groups=1, dilation=1),
    dict(stride=1, padding=1, output_padding=0, groups=4, dilation=2),
]


@pytest.mark.parametrize("args", CT3D)
@pytest.mark.parametrize("kernel", [(3, 3, 3), (2, 3, 1)])
def test_conv_transpose3d(args, kernel):
    g = args["groups"]
    x = rnd(2, 4, 3, 4, 3, dtype="float64", seed=6)
    w = rnd(4, 8 // g, *kernel, dtype="float64", seed=7)
    b = rnd(8, dtype="float64", seed=8)
    check(lambda lib, x, w, b: lib.nn.functional.conv_transpose3d(x, w, b, **args), x, w, b, rtol=1e-10, atol=1e-10)


def test_conv_transpose3d_unbatched():
    check(lambda lib, x, w: lib.nn.functional.conv_transpose3d(x, w, stride=2), rnd(2, 3, 3, 3, seed=1),
          rnd(2, 3, 2, 2, 2, seed=2))


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module(padding_mode):
    torch.manual_seed(0)
    tm = torch.nn.Conv3d(4, 6, 3, stride=(1, 2, 1), padding=(1, 2, 1), groups=2, padding_mode=padding_mode)
    lm = nn.Conv3d(4, 6, 3, stride=(1, 2, 1), padding=(1, 2, 1), groups=2, padding_mode=padding_mode)
    compare_module(lm, tm, rnd(2, 4, 4, 5, 6))
    assert repr(lm) == repr(tm)


def test_conv_transpose3d_module_output_size():
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose3d(3, 2, 3, stride=2, padding=1)
    lm = nn.ConvTranspose3d(3, 2, 3, stride=2, padding=1)
    compare_module(lm, tm, rnd(1, 3, 3, 4, 2), kwargs=dict(output_size=[6, 8, 4]))
    assert repr(lm) == repr(tm)


POOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), ceil_mode=True),
    dict(kernel_size=(3, 2, 2), stride=2, padding=(1, 0, 1), ceil_mode=True),
    dict(kernel_size=(1, 3, 3), stride=(1, 1, 2)),
]


@pytest.mark.parametrize("args", POOL)
@pytest.mark.parametrize("dilation", [1, (2, 1, 1)])
def test_max_pool3d(args, dilation):
    x = rnd(2, 3, 7, 6, 5, dtype="float64", seed=9)
    x[0, 0, :2] = 1.0  # ties: the first maximum wins, as PyTorch's
    check(lambda lib, x: lib.nn.functional.max_pool3d(x, dilation=dilation, return_indices=True, **args), x)


def test_max_pool3d_unbatched_noncontiguous_and_nan():
    x = rnd(5, 6, 4, 3, seed=10)
    x[1, 2, 0, 0] = np.nan
    check(lambda lib, x: lib.nn.functional.max_pool3d(x.permute(3, 0, 1, 2), 2, return_indices=True), x)


@pytest.mark.parametrize("args", POOL)
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("divisor_override", [None, 5])
def test_avg_pool3d(args, count_include_pad, divisor_override):
    check(lambda lib, x: lib.nn.functional.avg_pool3d(x, count_include_pad=count_include_pad,
                                                      divisor_override=divisor_override, **args),
          rnd(2, 3, 7, 6, 5, dtype="float64", seed=11), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [1, (3, 4, 2), (7, 3, 5), (None, 2, 3), (4, 4, 4), (2, 3, 5)])
def test_adaptive_pool3d(size):
    x = rnd(2, 3, 7, 6, 5, dtype="float64", seed=12)
    check(lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, size), x, rtol=1e-12, atol=1e-12)
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, size, return_indices=True), x)
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x[0], size), x)  # unbatched


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0])
def test_lp_pool3d(norm_type):
    check(lambda lib, x: lib.nn.functional.lp_pool3d(x, norm_type, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
          rnd(2, 3, 5, 6, 5, dtype="float64", seed=13, low=0.1, high=2.0), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("nd,shape,k,s,p", [
    (1, (2, 3, 9), 2, None, 0), (1, (3, 8), 3, 2, 1), (2, (2, 3, 6, 7), 2, None, 0), (2, (2, 2, 7, 7), 3, 2, 1),
    (3, (2, 2, 6, 5, 4), 2, None, 0), (3, (2, 5, 4, 6), (2, 3, 2), (1, 2, 2), (1, 1, 0)),
])
def test_max_unpool(nd, shape, k, s, p):
    def fn(lib, x):
        F_ = lib.nn.functional
        pool = (F_.max_pool1d, F_.max_pool2d, F_.max_pool3d)[nd - 1]
        unpool = (F_.max_unpool1d, F_.max_unpool2d, F_.max_unpool3d)[nd - 1]
        y, i = pool(x, k, s, p, return_indices=True)
        return unpool(y, i, k, s, p, output_size=x.shape[-nd:])

    check(fn, rnd(*shape, dtype="float64", seed=14))


def test_max_unpool_modules():
    for nd in (1, 2, 3):
        x = rnd(2, 3, *([6] * nd), seed=nd)
        tp = getattr(torch.nn, f"MaxPool{nd}d")(2, return_indices=True)
        y, i = tp(torch.tensor(x))
        lu, tu = getattr(nn, f"MaxUnpool{nd}d")(2), getattr(torch.nn, f"MaxUnpool{nd}d")(2)
        out = lu(lucid.tensor(y.numpy()), lucid.tensor(i.numpy()))
        np.testing.assert_array_equal(out.numpy(), tu(y, i).numpy())
        assert repr(lu) == repr(tu)


@pytest.mark.parametrize("name,args", [
    ("MaxPool3d", (3, 2, 1)), ("AvgPool3d", ((2, 3, 2),)), ("AdaptiveAvgPool3d", ((3, 2, 4),)),
    ("AdaptiveMaxPool3d", ((3, 2, 4),)), ("LPPool3d", (2, 2)),
])
def test_pool_modules(name, args):
    lm, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    compare_module(lm, tm, rnd(2, 3, 6, 7, 8, low=0.1, high=1.0))
    assert repr(lm) == repr(tm)


@pytest.mark.parametrize("fn,exc", [
    (lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 3, 4, 4), lib.zeros(2, 3, 1, 1, 1)), RuntimeError),
    (lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 4, 4, 4, 4), lib.zeros(2, 3, 1, 1, 1)), RuntimeError),
    (lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 3, 2, 4, 4), lib.zeros(2, 3, 3, 1, 1)), RuntimeError),
    (lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 3, 4, 4, 4), lib.zeros(2, 3, 1, 1, 1), stride=2,
                                          padding="same"), RuntimeError),
    (lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 3, 4, 4, 4), lib.zeros(2, 3, 1, 1, 1), padding="full"),
     RuntimeError),
    (lambda lib: lib.nn.functional.max_pool3d(lib.zeros(1, 4, 4), 2), RuntimeError),
    (lambda lib: lib.nn.functional.max_pool3d(lib.zeros(1, 1, 4, 4, 4), 2, padding=2), RuntimeError),
    (lambda lib: lib.nn.functional.avg_pool3d(lib.zeros(1, 1, 4, 4, 4), 2, divisor_override=0), RuntimeError),
    (lambda lib: lib.nn.functional.adaptive_avg_pool3d(lib.zeros(1, 4, 4), 2), RuntimeError),
    (lambda lib: lib.nn.functional.conv_transpose3d(lib.zeros(1, 3, 2, 2, 2), lib.zeros(3, 2, 2, 2, 2),
                                                    stride=2, output_padding=2), RuntimeError),
])
def test_errors_as_torch(fn, exc):
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc):
        fn(lucid)


def test_fused_step_equals_eager():
    lucid.manual_seed(0)
    model = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
                          nn.ConvTranspose3d(4, 3, 2, stride=2), nn.AvgPool3d(2), nn.AdaptiveMaxPool3d((1, 2, 1)),
                          nn.Flatten())
    batches = [(lucid.tensor(rnd(2, 2, 4, 6, 4, seed=seed)), lucid.tensor(rnd(2, 6, seed=seed + 10)))
               for seed in range(3)]
    assert_fused_step_matches_eager(model, F.mse_loss, lambda ps: lucid.optim.SGD(ps, lr=0.1, momentum=0.9),
                                    batches)


@pytest.mark.parametrize("fn", [
    lambda x: F.conv3d(x, lucid.ones(4, 3, 3, 3, 3), padding=1),
    lambda x: F.conv_transpose3d(x, lucid.ones(3, 2, 3, 3, 3), stride=2, padding=1),
    lambda x: F.max_pool3d(x, 2),
    lambda x: F.avg_pool3d(x, 2),
    lambda x: F.adaptive_avg_pool3d(x, (3, 2, 3)),
    lambda x: F.adaptive_max_pool3d(x, (3, 2, 3)),
])
def test_outputs_are_contiguous_and_view_works(fn):
    out = fn(lucid.tensor(rnd(2, 3, 4, 6, 5)))
    assert out.is_contiguous()
    assert tuple(out.view(2, -1).shape) == (2, out.numel() // 2)


def test_empty_batch():
    assert tuple(F.conv3d(lucid.zeros(0, 2, 3, 3, 3), lucid.ones(4, 2, 2, 2, 2)).shape) == (0, 4, 2, 2, 2)
    assert tuple(F.conv_transpose3d(lucid.zeros(0, 2, 3, 3, 3), lucid.ones(2, 4, 2, 2, 2), stride=2).shape) == \
        (0, 4, 6, 6, 6)
    assert tuple(F.max_pool3d(lucid.zeros(0, 2, 4, 4, 4), 2).shape) == (0, 2, 2, 2, 2)
