"""Resampling layers against torch.nn: F.interpolate / nn.Upsample (nearest,
nearest-exact, linear, bilinear with and without align_corners, trilinear,
area), PixelShuffle / PixelUnshuffle, and channel-wise Dropout1d/2d/3d."""
import copy

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import assert_close, check, rnd
from test_nn_helpers import compare_module

T = torch.nn
TF = torch.nn.functional

INTERP = [
    ((2, 3, 5, 7), dict(scale_factor=2)),
    ((2, 3, 5, 7), dict(size=(3, 11))),
    ((2, 3, 5, 7), dict(scale_factor=1.5, mode="nearest")),
    ((1, 1, 3, 3), dict(scale_factor=1.2)),
    ((2, 3, 5, 7), dict(size=(9, 4), mode="nearest-exact")),
    ((2, 3, 5, 7), dict(size=(3, 11), mode="bilinear")),
    ((2, 3, 5, 7), dict(size=(8, 9), mode="bilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=2, mode="bilinear")),
    ((2, 3, 5, 7), dict(scale_factor=(1.7, 0.6), mode="bilinear")),
    ((2, 3, 5, 7), dict(scale_factor=0.7, mode="bilinear", recompute_scale_factor=True)),
    ((2, 3, 1, 4), dict(size=(1, 6), mode="bilinear", align_corners=True)),
    ((2, 3, 5), dict(scale_factor=2.5, mode="linear")),
    ((2, 3, 5), dict(size=4, mode="linear", align_corners=True)),
    ((2, 3, 5), dict(scale_factor=3)),
    ((1, 2, 3, 4, 5), dict(scale_factor=(2, 1.5, 0.5), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(size=(2, 5, 3))),
    ((2, 3, 6, 8), dict(size=(3, 4), mode="area")),
    ((2, 3, 7, 5), dict(size=(3, 4), mode="area")),
    ((2, 3, 9), dict(size=4, mode="area")),
]


@pytest.mark.parametrize("shape,kw", INTERP, ids=[f"{s}-{k}" for s, k in INTERP])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate(shape, kw, dtype):
    check(lambda lib, x: lib.nn.functional.interpolate(x, **kw), rnd(*shape, dtype=dtype))


def test_interpolate_16_bit_and_integer_nearest():
    check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"), rnd(1, 2, 3, 4),
          dtypes=["bfloat16"], rtol=2e-2, atol=1e-2, grad_rtol=2e-2, grad_atol=2e-2)
    x = rnd(1, 2, 3, 4, dtype="int64", low=0, high=9)
    with pytest.raises(NotImplementedError):
        TF.interpolate(torch.tensor(x), size=(5, 6))
    with pytest.raises(NotImplementedError, match="int64"):
        F.interpolate(lucid.tensor(x), size=(5, 6))


@pytest.mark.parametrize("call", [
    dict(size=(2, 2), scale_factor=2),
    dict(),
    dict(scale_factor=2, align_corners=True),
    dict(scale_factor=2, mode="bilinear", size=None, x_shape=(2, 3, 4)),
    dict(scale_factor=(2, 2, 2)),
    dict(size=(2, 2, 2)),
], ids=["both", "neither", "align-corners-nearest", "bilinear-3d", "scales-rank", "size-rank"])
def test_interpolate_errors_match_torch(call):
    call = dict(call)
    shape = call.pop("x_shape", (1, 2, 3, 4))
    with pytest.raises((ValueError, NotImplementedError)) as t_err:
        TF.interpolate(torch.zeros(shape), **call)
    with pytest.raises(type(t_err.value)) as l_err:
        F.interpolate(lucid.zeros(*shape), **call)
    assert str(l_err.value) == str(t_err.value)


def test_interpolate_unsupported_modes_raise():
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.interpolate(lucid.zeros(1, 1, 3, 3), scale_factor=2, mode="bicubic")
    with pytest.raises(NotImplementedError, match="antialias"):
        F.interpolate(lucid.zeros(1, 1, 3, 3), scale_factor=0.5, mode="bilinear", antialias=True)


@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(4, 6), mode="bilinear"),
                                dict(scale_factor=(2.0, 3.0), mode="bilinear", align_corners=True)])
def test_upsample_modules(kw):
    lm, tm = nn.Upsample(**kw), T.Upsample(**kw)
    compare_module(lm, tm, rnd(2, 3, 3, 4))
    assert repr(lm) == repr(tm)
    for name in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
        lm, tm = getattr(nn, name)(scale_factor=2), getattr(T, name)(scale_factor=2)
        compare_module(lm, tm, rnd(2, 3, 3, 4))
        assert repr(lm) == repr(tm)
    assert F.upsample_bilinear(lucid.ones(1, 1, 2, 2), scale_factor=2).shape == (1, 1, 4, 4)


@pytest.mark.parametrize("r", [1, 2, 3])
def test_pixel_shuffle(r):
    compare_module(nn.PixelShuffle(r), T.PixelShuffle(r), rnd(2, 2 * r * r, 3, 4))
    compare_module(nn.PixelShuffle(r), T.PixelShuffle(r), rnd(2 * r * r, 3, 4))  # no batch dim
    compare_module(nn.PixelShuffle(r), T.PixelShuffle(r), rnd(2, 2, r * r, 3, 2))  # two batch dims
    compare_module(nn.PixelUnshuffle(r), T.PixelUnshuffle(r), rnd(2, 3, 2 * r, 3 * r))
    assert repr(nn.PixelShuffle(r)) == repr(T.PixelShuffle(r))
    x = lucid.tensor(rnd(2, 3 * r * r, 4, 5))
    assert_close(F.pixel_unshuffle(F.pixel_shuffle(x, r), r), torch.tensor(x.numpy()))


def test_pixel_shuffle_errors_match_torch():
    for fn, x, r in [("pixel_shuffle", (2, 3, 4, 4), 2), ("pixel_shuffle", (4, 4), 2),
                     ("pixel_unshuffle", (2, 3, 5, 4), 2), ("pixel_unshuffle", (2, 3, 4, 5), 2)]:
        with pytest.raises(RuntimeError) as t_err:
            getattr(TF, fn)(torch.zeros(x), r)
        with pytest.raises(RuntimeError) as l_err:
            getattr(F, fn)(lucid.zeros(*x), r)
        assert str(l_err.value) == str(t_err.value)


# --------------------------------------------------------------- dropout
# (name, shape, leading dims that pick a channel): Dropout2d reads a 3-D input as [N, C, L], as PyTorch does.
@pytest.mark.parametrize("name,shape,lead", [("Dropout1d", (4, 6, 50), 2), ("Dropout1d", (6, 50), 1),
                                             ("Dropout2d", (4, 6, 5, 9), 2), ("Dropout2d", (6, 5, 9), 2),
                                             ("Dropout3d", (4, 6, 2, 3, 8), 2), ("Dropout3d", (6, 2, 3, 8), 1)])
@pytest.mark.filterwarnings("ignore:dropout2d")
def test_channel_dropout_zeroes_whole_channels(name, shape, lead):
    lucid.manual_seed(0)
    m = getattr(nn, name)(p=0.5)
    x = lucid.ones(*shape, requires_grad=True)
    y = m(x)
    arr = y.detach().numpy().reshape(int(np.prod(shape[:lead])), -1)
    # each channel is all zeros or all 1/(1-p)
    assert np.all((arr == 0).all(axis=1) | (arr == 2.0).all(axis=1))
    assert 0 < (arr[:, 0] == 0).sum() < arr.shape[0]
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().reshape(arr.shape), arr)
    m.eval()
    assert m(x) is x
    assert repr(m) == repr(getattr(T, name)(p=0.5))


def test_channel_dropout_extremes_and_errors():
    x = lucid.tensor(rnd(2, 3, 4))
    assert_close(F.dropout1d(x, 0.0), torch.tensor(x.numpy()))
    assert float(F.dropout1d(x, 1.0).abs().sum()) == 0.0
    with pytest.raises(ValueError, match="Expected 2D or 3D input"):
        F.dropout1d(lucid.zeros(2, 3, 4, 5))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout2d(x, 1.5)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(x, 0.5)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(lucid.zeros(3, 4), 0.5)


def test_resampling_in_compiled_step_matches_eager():
    from lucid.compile import make_step

    lucid.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.PixelShuffle(2), nn.Upsample(scale_factor=1.5,
                          mode="bilinear"), nn.Flatten(), nn.Linear(144, 2))
    compiled = copy.deepcopy(eager)
    step = make_step(compiled, F.mse_loss)
    x, y = lucid.tensor(rnd(2, 1, 4, 4)), lucid.tensor(rnd(2, 2, seed=2))
    e = F.mse_loss(eager(x), y)
    e.backward()
    c = step(x, y)
    np.testing.assert_allclose(float(c), float(e), rtol=1e-5)
    for (n, pe), (_, pc) in zip(eager.named_parameters(), compiled.named_parameters()):
        np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
