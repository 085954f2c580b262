"""nn.AdaptiveLogSoftmaxWithLoss against torch: output, loss, gradients of
the input and every parameter (float64 tight), log_prob, predict, unbatched
input, errors; a compiled step equal to eager."""
import copy

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from conftest import assert_close


def _pair(cutoffs, div_value, head_bias, n_classes=20, features=16):
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(features, n_classes, cutoffs, div_value, head_bias).double()
    lm = nn.AdaptiveLogSoftmaxWithLoss(features, n_classes, cutoffs, div_value, head_bias, dtype=lucid.float64)
    lm.load_state_dict({k: lucid.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return lm, tm


@pytest.mark.parametrize("cutoffs", [[4], [4, 9, 15], [1, 19], [10, 11]])
@pytest.mark.parametrize("div_value", [4.0, 2.0])
@pytest.mark.parametrize("head_bias", [False, True])
def test_matches_torch(cutoffs, div_value, head_bias):
    lm, tm = _pair(cutoffs, div_value, head_bias)
    assert repr(lm) == repr(tm)
    assert sorted(lm.state_dict()) == sorted(tm.state_dict())
    g = torch.Generator().manual_seed(1)
    x = torch.randn(9, 16, dtype=torch.float64, generator=g).requires_grad_(True)
    t = torch.randint(0, 20, (9,), generator=g)
    t[:2] = torch.tensor([0, 19])
    lx = lucid.tensor(x.detach().numpy(), requires_grad=True)
    out, lout = tm(x, t), lm(lx, lucid.tensor(t.numpy()))
    assert_close(lout.output, out.output, 1e-12, 1e-12)
    assert_close(lout.loss, out.loss, 1e-12, 1e-12)
    out.loss.backward()
    lout.loss.backward()
    assert_close(lx.grad, x.grad, 1e-10, 1e-12)
    for (name, lp), tp in zip(lm.named_parameters(), tm.parameters()):
        assert_close(lp.grad, tp.grad, 1e-10, 1e-12, msg=f"{name}: ")
    assert_close(lm.log_prob(lx), tm.log_prob(x), 1e-12, 1e-12)
    np.testing.assert_array_equal(lm.predict(lx).numpy(), tm.predict(x).numpy())


def test_unbatched():
    lm, tm = _pair([4, 9], 4.0, False)
    x = torch.randn(16, dtype=torch.float64)
    out, lout = tm(x, torch.tensor(12)), lm(lucid.tensor(x.numpy()), lucid.tensor(12))
    assert tuple(lout.output.shape) == tuple(out.output.shape) == ()
    assert_close(lout.loss, out.loss, 1e-12, 1e-12)


@pytest.mark.parametrize("args", [dict(cutoffs=[]), dict(cutoffs=[5, 3]), dict(cutoffs=[0, 3]),
                                  dict(cutoffs=[3, 20]), dict(cutoffs=[3, 3])])
def test_bad_cutoffs(args):
    with pytest.raises(ValueError):
        torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, **args)
    with pytest.raises(ValueError):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, **args)


@pytest.mark.parametrize("shape,target", [((4, 16), [0, 1, 2]), ((2, 2, 16), [[0, 1], [1, 1]]),
                                          ((16,), [1]), ((3, 16), [0, 1, 20])])
def test_bad_inputs(shape, target):
    lm, tm = _pair([4], 4.0, False)
    with pytest.raises(RuntimeError):
        tm(torch.zeros(shape, dtype=torch.float64), torch.tensor(target))
    with pytest.raises(RuntimeError):
        lm(lucid.zeros(*shape, dtype=lucid.float64), lucid.tensor(np.array(target)))


def test_fused_step_equals_eager():
    from lucid.compile import fused_step

    lucid.manual_seed(0)
    eager = nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7])
    compiled = copy.deepcopy(eager)

    class Features(nn.Module):  # the layer is the loss: the model holds it and passes features through
        def __init__(self, asm):
            super().__init__()
            self.asm = asm

        def forward(self, x):
            return x

    model = Features(compiled)
    opt_e = lucid.optim.Adam(eager.parameters(), lr=0.05)
    opt_c = lucid.optim.Adam(model.parameters(), lr=0.05)
    step = fused_step(model, lambda out, t: model.asm(out, t).loss, opt_c)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = lucid.tensor(rng.standard_normal((6, 8)).astype(np.float32))
        t = lucid.tensor(rng.integers(0, 12, (6,)))
        opt_e.zero_grad()
        e = eager(x, t).loss
        e.backward()
        opt_e.step()
        c = step(x, t)
        np.testing.assert_allclose(float(c), float(e), rtol=1e-5)
    for (n, pe), (_, pc) in zip(eager.named_parameters(), compiled.named_parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
