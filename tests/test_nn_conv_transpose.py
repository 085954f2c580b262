"""ConvTranspose1d/2d (the Conv2dBackwardInput primitive, whose VJP is the
convolution and its weight gradient) against torch.nn: outputs, input, weight
and bias gradients over strides, padding, output_padding, groups, dilation,
dtypes and output_size; error messages; inside a compiled step."""
import copy

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import assert_close, check, gradcheck, rnd
from test_nn_helpers import compare_module

T = torch.nn

CT2D = [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=3, out_channels=4, kernel_size=3, stride=2),
    dict(in_channels=3, out_channels=4, kernel_size=4, stride=2, padding=1),  # DCGAN's up-sampling block
    dict(in_channels=2, out_channels=3, kernel_size=3, stride=2, padding=1, output_padding=1, bias=False),
    dict(in_channels=4, out_channels=6, kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), output_padding=(1, 0),
         groups=2, dilation=(1, 2)),
    dict(in_channels=2, out_channels=2, kernel_size=3, stride=2, output_padding=2, dilation=3),
    dict(in_channels=6, out_channels=6, kernel_size=3, groups=6, padding=1),
    dict(in_channels=4, out_channels=2, kernel_size=1, stride=3),
    dict(in_channels=2, out_channels=4, kernel_size=(5, 2), stride=(1, 3), padding=(2, 1), dilation=(2, 1)),
]


@pytest.mark.parametrize("kw", CT2D, ids=[str(i) for i in range(len(CT2D))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_transpose2d(kw, dtype):
    lm, tm = nn.ConvTranspose2d(**kw), T.ConvTranspose2d(**kw)
    if dtype == "float64":
        lm, tm = lm.double(), tm.double()
    compare_module(lm, tm, rnd(2, kw["in_channels"], 5, 4, dtype=dtype))
    compare_module(lm, tm, rnd(kw["in_channels"], 3, 6, dtype=dtype))  # unbatched
    assert repr(lm) == repr(tm)


CT1D = [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=3, out_channels=4, kernel_size=3, stride=2, output_padding=1, padding=1),
    dict(in_channels=4, out_channels=2, kernel_size=2, groups=2, dilation=3, bias=False),
]


@pytest.mark.parametrize("kw", CT1D, ids=[str(i) for i in range(len(CT1D))])
def test_conv_transpose1d(kw):
    lm, tm = nn.ConvTranspose1d(**kw), T.ConvTranspose1d(**kw)
    compare_module(lm, tm, rnd(2, kw["in_channels"], 7))
    compare_module(lm, tm, rnd(kw["in_channels"], 7))
    assert repr(lm) == repr(tm)


def test_parameters_and_init_match_torch_layout():
    lm, tm = nn.ConvTranspose2d(4, 6, 3, groups=2), T.ConvTranspose2d(4, 6, 3, groups=2)
    assert {k: tuple(v.shape) for k, v in lm.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    # kaiming_uniform(a=sqrt(5)) with PyTorch's fan_in of a transposed weight: (out/groups) * kH * kW
    bound = 1 / np.sqrt(3 * 9)
    w = lm.weight.detach().numpy()
    assert np.all(np.abs(w) <= bound) and np.abs(w).max() > 0.8 * bound
    assert np.all(np.abs(lm.bias.detach().numpy()) <= bound)


@pytest.mark.parametrize("size", [(9, 9), (10, 10), (1, 3, 10, 9), [9, 10]])
def test_output_size(size):
    lm, tm = nn.ConvTranspose2d(3, 2, 3, stride=2), T.ConvTranspose2d(3, 2, 3, stride=2)
    out = compare_module(lm, tm, rnd(1, 3, 4, 4), kwargs=dict(output_size=size))
    assert tuple(out.shape[-2:]) == tuple(size[-2:])
    lm1, tm1 = nn.ConvTranspose1d(3, 2, 3, stride=3), T.ConvTranspose1d(3, 2, 3, stride=3)
    compare_module(lm1, tm1, rnd(2, 3, 4), kwargs=dict(output_size=[13]))


def test_output_size_errors_match_torch():
    lm, tm = nn.ConvTranspose2d(3, 2, 3, stride=2), T.ConvTranspose2d(3, 2, 3, stride=2)
    for size in [(8, 9), (11, 9), (1, 2, 3)]:
        with pytest.raises(ValueError) as t_err:
            tm(torch.zeros(1, 3, 4, 4), output_size=size)
        with pytest.raises(ValueError) as l_err:
            lm(lucid.zeros(1, 3, 4, 4), output_size=size)
        assert str(l_err.value) == str(t_err.value).replace("torch.Size([4, 4])", "[4, 4]")


@pytest.mark.parametrize("args,kw", [
    ((rnd(1, 3, 5, 5), rnd(4, 2, 3, 3)), {}),
    ((rnd(1, 4, 5, 5), rnd(4, 2, 3, 3)), dict(stride=2, output_padding=2)),
    ((rnd(1, 4, 1, 1), rnd(4, 2, 3, 3)), dict(padding=3)),
    ((rnd(1, 4, 5, 5), rnd(4, 2, 3, 3)), dict(groups=3)),
    ((rnd(1, 4, 5, 5), rnd(4, 2, 3, 3), rnd(3)), {}),
    ((rnd(4, 5, 5), rnd(4, 2, 3, 3)), dict(stride=0)),
    ((rnd(4, 5, 5), rnd(4, 2, 3, 3)), dict(padding=-1)),
    ((rnd(4, 5, 5), rnd(4, 2, 3, 3)), dict(output_padding=-1)),
    ((rnd(5, 5), rnd(4, 2, 3, 3)), {}),
], ids=["channels", "output_padding", "too-small", "groups", "bias", "stride", "padding", "neg-output_padding",
        "2d-input"])
def test_functional_errors_match_torch(args, kw):
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.functional.conv_transpose2d(*[torch.tensor(a) for a in args], **kw)
    with pytest.raises(RuntimeError) as l_err:
        F.conv_transpose2d(*[lucid.tensor(a) for a in args], **kw)
    # (PyTorch's groups message prints the weight size in double brackets.)
    assert str(l_err.value) == str(t_err.value).replace("[[", "[").replace("]]", "]")


def test_module_errors():
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="must be divisible by groups"):
        nn.ConvTranspose2d(3, 2, 3, groups=2)
    with pytest.raises(TypeError, match="should be the same"):
        F.conv_transpose2d(lucid.zeros(1, 2, 3, 3, dtype=lucid.float64), lucid.zeros(2, 2, 3, 3))


def test_functional_with_torch_weights_and_16_bit():
    x, w, b = rnd(2, 4, 3, 5), rnd(4, 3, 2, 2), rnd(6)
    check(lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(x, w, b, stride=2, groups=2), x, w, b)
    check(lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, None, 2, 1, 1, 1, 2), rnd(2, 4, 6), rnd(4, 3, 3))
    for dt in ("bfloat16", "float16"):
        check(lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, stride=2), x, w[:, :2], dtypes=[dt, dt],
              rtol=2e-2, atol=2e-2, grad_rtol=5e-2, grad_atol=5e-2)


def test_gradcheck_float64():
    gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=(2, 1), padding=1, output_padding=(1, 0), dilation=(1, 2)),
              rnd(2, 2, 3, 4, dtype="float64"), rnd(2, 3, 3, 2, dtype="float64"))


def test_empty_batch():
    out = F.conv_transpose2d(lucid.zeros(0, 2, 3, 3), lucid.ones(2, 3, 2, 2), stride=2)
    assert tuple(out.shape) == (0, 3, 6, 6)


def test_in_compiled_step_matches_eager():
    from lucid.compile import make_step

    lucid.manual_seed(0)
    eager = nn.Sequential(nn.ConvTranspose2d(4, 3, 4, stride=2, padding=1), nn.ReLU(),
                          nn.ConvTranspose2d(3, 1, 3, stride=1, padding=1), nn.Flatten())
    compiled = copy.deepcopy(eager)
    step = make_step(compiled, torch_like_mse)
    for seed in range(2):
        x, y = lucid.tensor(rnd(2, 4, 3, 3, seed=seed)), lucid.tensor(rnd(2, 36, seed=seed + 10))
        eager.zero_grad()
        compiled.zero_grad()
        e = torch_like_mse(eager(x), y)
        e.backward()
        c = step(x, y)
        np.testing.assert_allclose(float(c), float(e), rtol=1e-5)
        for (n, pe), (_, pc) in zip(eager.named_parameters(), compiled.named_parameters()):
            np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)


def torch_like_mse(out, y):
    return F.mse_loss(out, y)
