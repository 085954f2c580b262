"""F.ctc_loss / nn.CTCLoss against torch: padded and concatenated targets,
lengths as tensors or lists, blank, reductions, zero_infinity, repeated
labels, unbatched input; values and gradients with respect to log_probs
(float64 tight); error kinds; a compiled step equal to eager."""

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import assert_close, assert_fused_step_matches_eager

T = torch.nn.functional


def _case(seed, steps=12, batch=4, classes=5, width=4, blank=0):
    g = torch.Generator().manual_seed(seed)
    lp = torch.randn(steps, batch, classes, dtype=torch.float64, generator=g).log_softmax(2)
    labels = [c for c in range(classes) if c != blank]
    targets = torch.tensor(labels)[torch.randint(0, len(labels), (batch, width), generator=g)]
    targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between
    tl = torch.randint(0, width + 1, (batch,), generator=g)
    tl[0] = width
    il = torch.randint(max(1, 2 * width + 1), steps + 1, (batch,), generator=g)
    return lp, targets, il, tl


def _compare(lp, targets, il, tl, rtol=1e-10, atol=1e-12, **kwargs):
    tlp = lp.clone().requires_grad_(True)
    llp = lucid.tensor(lp.numpy(), requires_grad=True)
    conv = [(lucid.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v) for v in (targets, il, tl)]
    expected = T.ctc_loss(tlp, targets, il, tl, **kwargs)
    actual = F.ctc_loss(llp, *conv, **kwargs)
    assert_close(actual, expected, rtol, atol)
    up = torch.rand(expected.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    expected.backward(up)
    actual.backward(lucid.tensor(up.numpy()))
    assert_close(llp.grad, tlp.grad, rtol, atol)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("form", ["padded", "concatenated", "padded-lists", "concatenated-lists"])
def test_ctc_loss(seed, reduction, form):
    lp, targets, il, tl = _case(seed)
    if form.startswith("concatenated"):
        targets = torch.cat([targets[i, :tl[i]] for i in range(len(tl))])
    if form.endswith("lists"):
        il, tl = il.tolist(), tl.tolist()
    _compare(lp, targets, il, tl, reduction=reduction)


@pytest.mark.parametrize("blank", [0, 2, 4])
def test_blank(blank):
    _compare(*_case(7, blank=blank), blank=blank, reduction="sum")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_zero_infinity(reduction):
    lp, targets, il, tl = _case(3)
    il[1], tl[1] = 2, 3  # three labels cannot be emitted in two steps
    _compare(lp, targets, il, tl, reduction=reduction, zero_infinity=True)
    expected = T.ctc_loss(lp, targets, il, tl, reduction="none")
    actual = F.ctc_loss(lucid.tensor(lp.numpy()), lucid.tensor(targets.numpy()), lucid.tensor(il.numpy()),
                        lucid.tensor(tl.numpy()), reduction="none")
    assert_close(actual, expected, 1e-10, 1e-12)  # inf where impossible


def test_unbatched_int32_and_noncontiguous():
    lp, targets, il, tl = _case(5, batch=1)
    lp3 = lp.permute(1, 0, 2).contiguous().permute(1, 0, 2)
    _compare(lp3[:, 0], targets[0].int(), (int(il[0]),), (int(tl[0]),), reduction="none")
    _compare(lp3[:, 0], targets[0], il[0], tl[0], reduction="sum")  # 0-d lengths
    _compare(lp3[:, 0], targets[0], il[0:1].int(), tl[0:1].int(), reduction="mean")


def test_float32_module():
    lp, targets, il, tl = _case(6)
    tm, lm = torch.nn.CTCLoss(blank=0, zero_infinity=True), nn.CTCLoss(blank=0, zero_infinity=True)
    x = lp.float()
    out = lm(lucid.tensor(x.numpy()), lucid.tensor(targets.numpy()), lucid.tensor(il.numpy()),
             lucid.tensor(tl.numpy()))
    assert_close(out, tm(x, targets, il, tl), 1e-5, 1e-6)
    assert repr(lm) == repr(tm)


def test_through_log_softmax_gradient_of_logits():
    logits = torch.randn(10, 3, 6, dtype=torch.float64, requires_grad=True)
    ll = lucid.tensor(logits.detach().numpy(), requires_grad=True)
    targets, il, tl = torch.tensor([[1, 2, 2], [3, 4, 5], [1, 1, 1]]), [10, 9, 10], [3, 2, 3]
    T.ctc_loss(logits.log_softmax(2), targets, il, tl).backward()
    F.ctc_loss(F.log_softmax(ll, 2), lucid.tensor(targets.numpy()), il, tl).backward()
    assert_close(ll.grad, logits.grad, 1e-10, 1e-12)


@pytest.mark.parametrize("args,exc", [
    (dict(reduction="avg"), ValueError),
    (dict(blank=5), RuntimeError),
    (dict(input_lengths=[13, 12, 12, 12]), RuntimeError),
    (dict(target_lengths=[5, 1, 1, 1]), RuntimeError),
    (dict(input_lengths=[12, 12]), RuntimeError),
    (dict(input_lengths=12), TypeError),
])
def test_errors_as_torch(args, exc):
    lp, targets, il, tl = _case(0)
    kwargs = dict(input_lengths=il.tolist(), target_lengths=tl.tolist())
    kwargs.update(args)
    with pytest.raises(exc):
        T.ctc_loss(lp, targets, **kwargs)
    with pytest.raises(exc):
        F.ctc_loss(lucid.tensor(lp.numpy()), lucid.tensor(targets.numpy()), **kwargs)
    if exc is RuntimeError and "blank" not in args:  # the same lengths as tensors
        as_tensors = {k: lucid.tensor(np.array(v)) if isinstance(v, list) else v for k, v in kwargs.items()}
        with pytest.raises(exc):
            T.ctc_loss(lp, targets, **{k: torch.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()})
        with pytest.raises(exc):
            F.ctc_loss(lucid.tensor(lp.numpy()), lucid.tensor(targets.numpy()), **as_tensors)


def test_fused_step_equals_eager():
    targets, il, tl = lucid.tensor(np.array([[1, 2, 2], [3, 1, 0]])), lucid.tensor(np.array([8, 7])), \
        lucid.tensor(np.array([3, 2]))

    def loss_fn(out, targets, il, tl):
        return F.ctc_loss(F.log_softmax(out, 2), targets, il, tl)

    lucid.manual_seed(0)
    rng = np.random.default_rng(0)
    batches = [(lucid.tensor(rng.standard_normal((8, 2, 3)).astype(np.float32)), targets, il, tl) for _ in range(3)]
    assert_fused_step_matches_eager(nn.Linear(3, 4), loss_fn, lambda ps: lucid.optim.SGD(ps, lr=0.1), batches)
