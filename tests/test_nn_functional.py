"""lucid.nn.functional against torch.nn.functional: the functional layers,
attention, padding, the sliding-window primitives, and the losses with
every reduction (values and gradients), plus their error cases."""
import math

import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F
from conftest import assert_close, check, gradcheck, rnd

TF = torch.nn.functional


def nnf(lib):
    return lib.nn.functional


# ------------------------------------------------------------- conv / linear
def test_linear_and_bilinear():
    check(lambda m, x, w, b: nnf(m).linear(x, w, b), rnd(2, 3, 4), rnd(5, 4, seed=1), rnd(5, seed=2))
    check(lambda m, x, w: nnf(m).linear(x, w), rnd(4), rnd(5, 4, seed=1))
    check(lambda m, a, b, w, bias: nnf(m).bilinear(a, b, w, bias), rnd(3, 2), rnd(3, 4, seed=1), rnd(5, 2, 4, seed=2),
          rnd(5, seed=3))
    with pytest.raises(ValueError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x4 and 3x5\)"):
        F.linear(lucid.randn(2, 4), lucid.randn(5, 3))


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), ((1, 2), (0, 1), (2, 1), 1),
                                                            (1, "same", 2, 2), (1, 1, 1, 4)])
def test_conv2d_functional(stride, padding, dilation, groups):
    check(lambda m, x, w, b: nnf(m).conv2d(x, w, b, stride, padding, dilation, groups),
          rnd(2, 4, 6, 7), rnd(4, 4 // groups, 3, 2, seed=1), rnd(4, seed=2), grad_rtol=1e-4, grad_atol=1e-5)


def test_conv1d_functional():
    check(lambda m, x, w: nnf(m).conv1d(x, w, None, 2, 1, 1, 1), rnd(2, 3, 9), rnd(4, 3, 3, seed=1))
    check(lambda m, x, w: nnf(m).conv1d(x, w, padding="same", dilation=2), rnd(2, 3, 9), rnd(4, 3, 4, seed=1))


def test_conv_gradcheck_float64():
    gradcheck(lambda x, w: F.conv2d(x, w, stride=2, padding=(1, 0), dilation=(1, 2)), rnd(1, 2, 5, 6, dtype="float64"),
              rnd(3, 2, 2, 2, dtype="float64", seed=1))


def test_conv2d_float64_and_16_bit():
    check(lambda m, x, w: nnf(m).conv2d(x, w, padding=1), rnd(1, 2, 5, 5, dtype="float64"),
          rnd(3, 2, 3, 3, dtype="float64", seed=1))
    x, w = lucid.randn(1, 2, 5, 5), lucid.randn(3, 2, 3, 3)
    out = F.conv2d(x.to(lucid.bfloat16), w.to(lucid.bfloat16))
    assert out.dtype == lucid.bfloat16
    ref = TF.conv2d(torch.tensor(x.numpy()), torch.tensor(w.numpy()))
    assert_close(out.float(), ref, 0.05, 0.1)


def test_unfold_fold():
    check(lambda m, x: nnf(m).unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), rnd(2, 3, 5, 6))
    check(lambda m, x: nnf(m).fold(x, (5, 6), (2, 3), padding=1, stride=(2, 1)), rnd(2, 3 * 6, 3 * 6))
    check(lambda m, x: nnf(m).unfold(x, 2), rnd(3, 4, 4))


def test_im2col_col2im_are_adjoint():
    # <im2col(x), y> == <x, col2im(y)> for any window, padding included.
    x, y = rnd(2, 3, 6, 7, dtype="float64"), rnd(3 * 6, 2, 3 * 6, dtype="float64", seed=1)
    win = dict(kernel=(2, 3), stride=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2))
    cols = lucid._C.im2col(lucid.tensor(x), win["kernel"], win["stride"], win["padding"], win["dilation"])
    assert tuple(cols.shape) == y.shape
    back = lucid._C.col2im(lucid.tensor(y), (6, 7), win["kernel"], win["stride"], win["padding"], win["dilation"])
    np.testing.assert_allclose(np.sum(cols.numpy() * y), np.sum(x * back.numpy()), rtol=1e-12)
    gradcheck(lambda t: lucid._C.im2col(t, (2, 2), (1, 2), (1, 1, 0, 1), (2, 1), -3.0), x)
    gradcheck(lambda t: lucid._C.col2im(t, (6, 7), win["kernel"], win["stride"], win["padding"], win["dilation"]), y)


def test_im2col_pad_value_and_errors():
    cols = lucid._C.im2col(lucid.ones(1, 1, 2, 2), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), float("-inf"))
    assert np.isinf(cols.numpy()).sum() == 4 * 9 - 4 * 4
    with pytest.raises(ValueError, match="Kernel size can't be greater"):
        lucid._C.im2col(lucid.ones(1, 1, 2, 2), (3, 3), (1, 1), (0, 0, 0, 0), (1, 1))
    with pytest.raises(ValueError, match="negative padding"):
        lucid._C.im2col(lucid.ones(1, 1, 2, 2), (1, 1), (1, 1), (-1, 0, 0, 0), (1, 1))
    with pytest.raises(ValueError, match="4-D input"):
        lucid._C.im2col(lucid.ones(1, 2, 2), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1))


# ------------------------------------------------------------------- pooling
def test_pool_functionals():
    x = rnd(2, 3, 7, 8)
    check(lambda m, t: nnf(m).max_pool2d(t, 3, 2, 1, ceil_mode=True), x)
    check(lambda m, t: nnf(m).avg_pool2d(t, (3, 2), (2, 1), (1, 0), count_include_pad=False), x)
    check(lambda m, t: nnf(m).adaptive_avg_pool2d(t, (3, 5)), x)
    check(lambda m, t: nnf(m).adaptive_avg_pool2d(t, 1), x)
    check(lambda m, t: nnf(m).max_pool1d(t, 2, ceil_mode=True), rnd(2, 3, 7))
    check(lambda m, t: nnf(m).avg_pool1d(t, 3, 1, 1), rnd(2, 3, 7))
    check(lambda m, t: nnf(m).adaptive_avg_pool1d(t, 3), rnd(2, 3, 7))
    out, idx = F.max_pool2d(lucid.tensor(x), 2, return_indices=True)
    t_out, t_idx = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    assert_close(idx, t_idx)


def test_maxpool_pads_with_minus_infinity():
    x = -np.abs(rnd(1, 1, 4, 4)) - 1  # all negative: zero padding would win the max
    check(lambda m, t: nnf(m).max_pool2d(t, 3, 1, 1), x)


# ------------------------------------------------------------- normalization
def test_normalization_functionals():
    x = rnd(4, 3, 5)
    w, b = rnd(3, seed=1), rnd(3, seed=2)
    check(lambda m, t, w, b: nnf(m).layer_norm(t, (5,), None, None, 1e-3), x, w, b)
    check(lambda m, t, w, b: nnf(m).group_norm(t, 3, w, b), x, w, b)
    check(lambda m, t, w: nnf(m).rms_norm(t, (3, 5), None), x, w)
    rm, rv = rnd(3, seed=3), rnd(3, low=0.5, high=1.5, seed=4)
    check(lambda m, t, w, b: nnf(m).batch_norm(t, m.tensor(rm), m.tensor(rv), w, b, False), x, w, b)
    check(lambda m, t, w, b: nnf(m).batch_norm(t, None, None, w, b, True), x, w, b, grad_atol=1e-4)
    check(lambda m, t: nnf(m).instance_norm(t), x, grad_atol=1e-4)
    check(lambda m, t: nnf(m).normalize(t, 2.0, 1), x)


def test_functional_batch_norm_updates_running_stats_in_place():
    x = rnd(8, 3)
    lrm, lrv = lucid.zeros(3), lucid.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    F.batch_norm(lucid.tensor(x), lrm, lrv, training=True, momentum=0.2)
    TF.batch_norm(torch.tensor(x), trm, trv, training=True, momentum=0.2)
    assert_close(lrm, trm), assert_close(lrv, trv)


# ------------------------------------------------------------------ embedding
def test_embedding_functional():
    idx = np.array([[1, 0], [3, 1]], dtype=np.int64)
    check(lambda m, w: nnf(m).embedding(m.tensor(idx), w, padding_idx=1), rnd(4, 3))
    check(lambda m, w: nnf(m).embedding(m.tensor(idx.astype(np.int32)), w), rnd(4, 3))
    check(lambda m, w: nnf(m).one_hot(m.tensor(idx), 5), rnd(1), grad=False)


# --------------------------------------------------------------- activations
ACTS = [("relu", {}), ("relu6", {}), ("leaky_relu", dict(negative_slope=0.1)), ("elu", dict(alpha=0.7)),
        ("selu", {}), ("celu", {}), ("gelu", {}), ("gelu", dict(approximate="tanh")), ("silu", {}), ("mish", {}),
        ("softplus", dict(beta=2.0, threshold=3.0)), ("softsign", {}), ("logsigmoid", {}),
        ("hardtanh", dict(min_val=-0.3, max_val=0.8)), ("hardsigmoid", {}), ("hardswish", {}), ("tanh", {}),
        ("sigmoid", {}), ("softmax", dict(dim=1)), ("softmin", dict(dim=0)), ("log_softmax", dict(dim=-1)),
        ("glu", dict(dim=1)), ("threshold", dict(threshold=0.1, value=-2.0))]


@pytest.mark.parametrize("name,kw", ACTS, ids=[f"{n}{i}" for i, (n, _) in enumerate(ACTS)])
def test_activation_functionals(name, kw):
    check(lambda m, t: getattr(nnf(m), name)(t, **kw), rnd(3, 4, 5) * 3)


def test_inplace_activation_writes_input():
    x = lucid.tensor([-1.0, 2.0])
    out = F.relu(x, inplace=True)
    assert out._same(x) or out._shares_storage(x)
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0])


def test_softmax_without_dim_warns_and_picks_torchs_dim():
    x = rnd(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = F.softmax(lucid.tensor(x))
    with pytest.warns(UserWarning):
        ref = TF.softmax(torch.tensor(x))
    assert_close(out, ref)


def test_dropout_functional():
    x = lucid.ones(1000)
    assert F.dropout(x, 0.5, training=False) is x
    y = F.dropout(x, 0.25).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, -0.1)


# ----------------------------------------------------------------------- pad
@pytest.mark.parametrize("pad,mode", [((1, 2), "constant"), ((1, 0, 2, 1), "constant"), ((-1, 2), "constant"),
                                      ((2, 1, 1, 2), "reflect"), ((3, 1), "replicate"), ((1, 2, 2, 0), "circular"),
                                      ((1, 1), "reflect")])
def test_pad(pad, mode):
    value = 1.5 if mode == "constant" else None
    shape = (2, 3, 4, 5) if mode == "constant" or len(pad) == 4 else (2, 4, 5)  # torch's supported ranks
    check(lambda m, t: nnf(m).pad(t, pad, mode=mode, value=value), rnd(*shape))


def test_pad_errors():
    with pytest.raises(ValueError, match="divisible by 2"):
        F.pad(lucid.ones(3), (1,))
    with pytest.raises(ValueError, match="Padding size should be less than"):
        F.pad(lucid.ones(1, 2, 3), (3, 0), mode="reflect")


# ----------------------------------------------------------------- attention
@pytest.mark.parametrize("kw", [{}, dict(is_causal=True), dict(scale=0.3), dict(mask="bool"), dict(mask="float"),
                                dict(gqa=True)], ids=["plain", "causal", "scale", "bool_mask", "float_mask", "gqa"])
def test_scaled_dot_product_attention(kw):
    kw = dict(kw)
    q, k, v = rnd(2, 4, 3, 8), rnd(2, 4, 5, 8, seed=1), rnd(2, 4, 5, 6, seed=2)
    mask = kw.pop("mask", None)
    if kw.pop("gqa", False):
        k, v = k[:, :2], v[:, :2]
        kw["enable_gqa"] = True
    if kw.get("is_causal"):
        k, v = k[:, :, :3], v[:, :, :3]
    if mask == "bool":
        m = np.random.default_rng(3).random((3, 5)) < 0.4
        m[:, 0] = True
        kw["attn_mask"] = m
    elif mask == "float":
        kw["attn_mask"] = rnd(2, 1, 3, 5, seed=4)

    def f(lib, q, k, v):
        args = {a: (lib.tensor(b) if isinstance(b, np.ndarray) else b) for a, b in kw.items()}
        return nnf(lib).scaled_dot_product_attention(q, k, v, **args)

    check(f, q, k, v)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_query_gives_zeros(kind):
    q = rnd(1, 2, 3, 4)
    m = np.ones((3, 3), bool)
    m[1] = False
    mask = m if kind == "bool" else np.where(m, 0.0, -np.inf).astype(np.float32)
    check(lambda lib, a, b, c: nnf(lib).scaled_dot_product_attention(a, b, c, attn_mask=lib.tensor(mask)),
          q, rnd(1, 2, 3, 4, seed=1), rnd(1, 2, 3, 4, seed=2))


def test_sdpa_dropout_and_errors():
    q = lucid.randn(2, 3, 4)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert tuple(out.shape) == (2, 3, 4)
    with pytest.raises(ValueError, match="attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=lucid.ones(3, 3), is_causal=True)


# -------------------------------------------------------------------- losses
REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["plain", "weight", "ignore", "smooth", "smooth_weight_ignore", "extra_dims",
                                  "probs", "probs_smooth_weight", "unbatched"])
def test_cross_entropy(case, reduction):
    rng = np.random.default_rng(0)
    x = rnd(6, 4) * 2
    y = rng.integers(0, 4, 6)
    kw = {}
    if "weight" in case:
        kw["weight"] = rnd(4, low=0.2, high=2.0, seed=5)
    if "ignore" in case:
        y[[1, 4]] = 2
        kw["ignore_index"] = 2
    if "smooth" in case:
        kw["label_smoothing"] = 0.2
    if case == "extra_dims":
        x, y = rnd(2, 4, 3, 2), rng.integers(0, 4, (2, 3, 2))
    if case == "unbatched":
        x, y = rnd(4), np.array(3)
    target = y.astype(np.int64)
    if case.startswith("probs"):
        target = rng.dirichlet(np.ones(4), 6).astype(np.float32)

    def f(lib, x):
        args = {a: (lib.tensor(b) if isinstance(b, np.ndarray) else b) for a, b in kw.items()}
        return nnf(lib).cross_entropy(x, lib.tensor(target), reduction=reduction, **args)

    check(f, x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    logp = np.log(np.random.default_rng(0).dirichlet(np.ones(5), 6)).astype(np.float32)
    y = np.array([0, 4, 2, 2, 1, 3])
    w = rnd(5, low=0.5, high=1.5, seed=1)
    check(lambda m, x: nnf(m).nll_loss(x, m.tensor(y), weight=m.tensor(w), ignore_index=1, reduction=reduction), logp)
    check(lambda m, x: nnf(m).nll_loss(x, m.tensor(y), reduction=reduction), logp)


def test_cross_entropy_is_stable_for_large_logits():
    x = np.array([[1000.0, 0.0, -1000.0], [-500.0, 500.0, 0.0]], np.float32)
    check(lambda m, t: nnf(m).cross_entropy(t, m.tensor([2, 1])), x)


def test_cross_entropy_all_ignored_is_nan_like_torch():
    x, y = rnd(2, 3), np.array([-100, -100])
    check(lambda m, t: nnf(m).cross_entropy(t, m.tensor(y)), x, grad=False)


def test_cross_entropy_legacy_reduction_args():
    x, y = rnd(3, 4), np.array([0, 1, 2])
    with pytest.warns(UserWarning):
        ref = TF.cross_entropy(torch.tensor(x), torch.tensor(y), size_average=False)
    assert_close(F.cross_entropy(lucid.tensor(x), lucid.tensor(y), size_average=False), ref)


def test_loss_errors():
    x = lucid.randn(3, 4)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.cross_entropy(x, lucid.tensor([0, 1, 2]), reduction="avg")
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
        F.cross_entropy(x, lucid.tensor([0, 1]))
    with pytest.raises(IndexError):
        F.cross_entropy(x, lucid.tensor([0, 1, 4]))
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, lucid.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="same size"):
        F.binary_cross_entropy(lucid.rand(3), lucid.rand(3, 1))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(lucid.rand(3), lucid.rand(3, 1))
    with pytest.raises(TypeError):
        F.nll_loss(x, lucid.tensor([0.0, 1.0, 2.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}),
                                     ("smooth_l1_loss", dict(beta=0.5)), ("smooth_l1_loss", dict(beta=0.0)),
                                     ("huber_loss", {}), ("huber_loss", dict(delta=0.3))])
def test_regression_losses(name, kw, reduction):
    check(lambda m, a, b: getattr(nnf(m), name)(a, b, reduction=reduction, **kw), rnd(4, 5), rnd(4, 5, seed=1))


def test_mse_loss_broadcast_warns_like_torch():
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(lucid.randn(3, 1), lucid.randn(3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    p, t, w = rnd(4, 3, low=0.02, high=0.98), rnd(4, 3, low=0, high=1, seed=1), rnd(4, 3, low=0.5, high=2, seed=2)
    check(lambda m, a, b: nnf(m).binary_cross_entropy(a, b, reduction=reduction), p, t)
    check(lambda m, a, b: nnf(m).binary_cross_entropy(a, b, weight=m.tensor(w), reduction=reduction), p, t)


def test_binary_cross_entropy_clamps_log_at_minus_100():
    p, t = np.array([0.0, 1.0, 0.5], np.float32), np.array([1.0, 0.0, 1.0], np.float32)
    check(lambda m, a: nnf(m).binary_cross_entropy(a, m.tensor(t), reduction="none"), p, grad=False)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x, t = rnd(4, 3) * 4, rnd(4, 3, low=0, high=1, seed=1)
    pw, w = rnd(3, low=0.5, high=3.0, seed=2), rnd(4, 3, low=0.5, high=2, seed=3)
    check(lambda m, a, b: nnf(m).binary_cross_entropy_with_logits(a, b, reduction=reduction), x, t)
    check(lambda m, a, b: nnf(m).binary_cross_entropy_with_logits(a, b, weight=m.tensor(w), pos_weight=m.tensor(pw),
                                                                    reduction=reduction), x, t)


def test_bce_with_logits_is_stable_and_exact_at_zero():
    x = np.array([-200.0, -30.0, 0.0, 30.0, 200.0], np.float32)
    t = np.array([1.0, 0.0, 1.0, 0.0, 0.5], np.float32)
    check(lambda m, a: nnf(m).binary_cross_entropy_with_logits(a, m.tensor(t), reduction="none"), x)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_bce_with_logits_and_logsigmoid_keep_exp_x_below_minus_20(dtype):
    # exp(x) for x in (-37, -20) is above float64's resolution of the loss: a
    # softplus thresholded at 20 dropped it (relative error 1e-10 in float64).
    x = np.array([-36.0, -30.0, -21.13, -20.0, -5.0, -1e-8, 0.0, 1e-8, 5.0, 21.13, 40.0, -700.0, 700.0])
    for t in (0.0, 1.0, 0.3):
        for pw in (None, 2.5):
            a = lucid.tensor(x, dtype=getattr(lucid, dtype), requires_grad=True)
            ta = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
            got = F.binary_cross_entropy_with_logits(a, lucid.full_like(a, t), reduction="none",
                                                     pos_weight=None if pw is None else lucid.tensor(pw, dtype=a.dtype))
            want = torch.nn.functional.binary_cross_entropy_with_logits(
                ta, torch.full_like(ta, t), reduction="none", pos_weight=None if pw is None else torch.tensor(pw, dtype=ta.dtype))
            got.sum().backward()
            want.sum().backward()
            g, w = got.detach().numpy().astype(np.float64), want.detach().numpy().astype(np.float64)
            if dtype == "float16":
                # computed in float32 and rounded once; PyTorch rounds (1 - t) x to half before adding
                # -log_sigmoid(x): within half an ulp of the terms' magnitude
                assert np.all(np.abs(g - w) <= 2.0 ** -10 * np.maximum(np.abs(x), 1.0)), (g, w)
            else:
                np.testing.assert_array_equal(g, w)
            # d/dx = (1 + (pw - 1) t) sigmoid(x) - pw t, and 1/2 - t at 0; in float16 PyTorch's
            # sigmoid(x) - t is rounded twice, the float32 one once: an ulp of the terms apart
            assert_close(a.grad, ta.grad, atol=2.0 ** -9 if dtype == "float16" else None)
    a = lucid.tensor(x, requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    F.logsigmoid(a).sum().backward()
    torch.nn.functional.logsigmoid(ta).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy()[x == 0], [0.5])
    assert_close(a.grad, ta.grad)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    logq = np.log(np.random.default_rng(0).dirichlet(np.ones(5), 4)).astype(np.float32)
    p = np.random.default_rng(1).dirichlet(np.ones(5), 4).astype(np.float32)
    target = np.log(p).astype(np.float32) if log_target else p
    check(lambda m, a, b: nnf(m).kl_div(a, b, reduction=reduction, log_target=log_target), logq, target)
    # A zero target contributes 0 * log 0 = 0. (The gradient w.r.t. such a target is NaN in PyTorch and
    # finite here, so only the input's gradient is compared.)
    p[0, 1] = 0.0
    if not log_target:
        check(lambda m, a: nnf(m).kl_div(a, m.tensor(p), reduction=reduction), logq)


def test_kl_div_mean_warns_like_torch():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(lucid.randn(2, 3), lucid.rand(2, 3))


def test_loss_modules_match_functionals():
    import lucid.nn as nn

    x, y = rnd(5, 3), np.array([0, 2, 1, 1, 0])
    w = rnd(3, low=0.5, high=1.5, seed=1)
    lm = nn.CrossEntropyLoss(weight=lucid.tensor(w), label_smoothing=0.1, reduction="sum")
    tm = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), label_smoothing=0.1, reduction="sum")
    assert_close(lm(lucid.tensor(x), lucid.tensor(y)), tm(torch.tensor(x), torch.tensor(y)))
    assert list(lm.state_dict()) == list(tm.state_dict()) == ["weight"]
    pairs = [(nn.MSELoss(), torch.nn.MSELoss()), (nn.L1Loss(reduction="sum"), torch.nn.L1Loss(reduction="sum")),
             (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5)), (nn.HuberLoss(delta=2.0),
                                                                            torch.nn.HuberLoss(delta=2.0)),
             (nn.BCEWithLogitsLoss(pos_weight=lucid.tensor(w)), torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(w))),
             (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"))]
    a, b = rnd(5, 3, seed=2), rnd(5, 3, low=0, high=1, seed=3)
    for lm, tm in pairs:
        assert_close(lm(lucid.tensor(a), lucid.tensor(b)), tm(torch.tensor(a), torch.tensor(b)))
    p = rnd(5, 3, low=0.1, high=0.9, seed=4)
    assert_close(nn.BCELoss()(lucid.tensor(p), lucid.tensor(b)), torch.nn.BCELoss()(torch.tensor(p), torch.tensor(b)))
    lp = np.log(rnd(5, 3, low=0.1, high=0.9, seed=4))
    assert_close(nn.NLLLoss()(lucid.tensor(lp), lucid.tensor(y)), torch.nn.NLLLoss()(torch.tensor(lp), torch.tensor(y)))


@pytest.mark.parametrize("name,kw", [("elu", {"alpha": 1.3}), ("celu", {"alpha": 0.5}), ("selu", {})])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_exponential_activations_keep_a_finite_gradient_where_expm1_overflows(name, kw, dtype):
    # The branch not taken (expm1 of a large positive x) overflowed to inf, and
    # inf times where's zero cotangent made the gradient NaN; PyTorch's is 1 (scaled for selu).
    x = np.array([-800.0, -100.0, -1.0, -1e-8, 0.0, 1e-8, 1.0, 50.0, 100.0, 800.0])
    a = lucid.tensor(x, dtype=getattr(lucid, dtype), requires_grad=True)
    t = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    getattr(F, name)(a, **kw).sum().backward()
    getattr(torch.nn.functional, name)(t, **kw).sum().backward()
    assert np.isfinite(a.grad.numpy()).all()
    assert_close(a.grad, t.grad)


def test_losses_promote_a_bool_target_as_pytorch():
    x = np.array([0.5, 2.0, -1.0])
    mask = np.array([True, False, True])
    for name in ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss"]:
        outcome = []
        for m in (torch, lucid):
            try:
                r = getattr(m.nn.functional, name)(m.tensor(x), m.tensor(mask))
                outcome.append((str(r.dtype).split(".")[-1], float(r)))
            except (RuntimeError, TypeError) as e:
                outcome.append(type(e).__name__)
        if isinstance(outcome[0], str) or isinstance(outcome[1], str):
            assert isinstance(outcome[0], str) and isinstance(outcome[1], str), (name, outcome)
        else:  # the same dtype and value, to an ulp (the GPU's sum may round the last bit otherwise)
            assert outcome[0][0] == outcome[1][0], (name, outcome)
            assert math.isclose(outcome[0][1], outcome[1][1], rel_tol=1e-14), (name, outcome)


def test_hardtanh_and_relu6_keep_an_integer_dtype():
    x = np.array([-5, 0, 3, 9])
    for fn in [lambda m, t: m.nn.functional.hardtanh(t), lambda m, t: m.nn.functional.relu6(t),
               lambda m, t: m.nn.functional.hardtanh(t, -2.5, 2.5)]:
        want, got = fn(torch, torch.tensor(x)), fn(lucid, lucid.tensor(x))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# Cases the semantics probe (python -m tests.fuzz.semantics --family nn) found
# differing from PyTorch; each runs with T = torch and T = lucid after the
# probe's prelude (tests/fuzz/semantics_nn.py). (source, PyTorch's exception or None)
FUNCTIONAL_PROBE_CASES = [
    # the non-constant pad modes take 1-3 trailing dims of a batched or unbatched input only
    ("result = T.nn.functional.pad(data((2, 3, 1, 4, 1), 1), (3, 0), mode='reflect')", NotImplementedError),
    ("result = T.nn.functional.pad(data((4, 4, 1, 1), 1), (0, 3), mode='circular')", NotImplementedError),
    ("result = T.nn.functional.pad(data((4,), 1), (1, 1), mode='replicate')", NotImplementedError),
    ("x = data((3, 4), 1, grad=True)\ny = T.nn.functional.pad(x, (1, 2), mode='replicate')\nbackward(y, 2)\n"
     "result = (y, x.grad)", None),
    # cosine_similarity floors each norm at eps in value only: the gradient is the norm's
    ("a = data((3,), 1, lo=-0.2, hi=0.2, grad=True)\nb = data((1,), 2, lo=-0.2, hi=0.2, grad=True)\n"
     "y = T.nn.functional.cosine_similarity(a, b, dim=0, eps=0.5)\nbackward(y, 3)\nresult = (y, a.grad, b.grad)",
     None),
    ("a = data((2, 3), 1, grad=True)\nb = data((2, 3), 2, grad=True)\n"
     "y = T.nn.functional.cosine_similarity(a, b)\nbackward(y, 3)\nresult = (y, a.grad, b.grad)", None),
    # a p=0 norm keeps its input's history
    ("a = data((2, 3), 1, grad=True)\nresult = T.nn.functional.pairwise_distance(a, data((2, 3), 2), p=0.0)", None),
    ("result = T.linalg.vector_norm(T.tensor([1.0, 0.0, 2.0], requires_grad=True), 0)", None),
    # bilinear's shape checks
    ("result = T.nn.functional.bilinear(data((3, 2), 1), data((2, 4), 2), data((5, 2, 4), 3))", RuntimeError),
    # antialias: PyTorch's ValueError for the modes and ranks it does not apply to
    ("result = T.nn.functional.interpolate(data((1, 1, 2), 1), scale_factor=2, mode='linear', antialias=True)",
     ValueError),
    # triplet losses need a positive margin and inputs of one rank
    ("result = T.nn.functional.triplet_margin_loss(data((2, 3), 1), data((2, 3), 2), data((2, 3), 3), margin=0.0)",
     ValueError),
    ("result = T.nn.functional.triplet_margin_loss(data((2, 3), 1), data((2, 3), 2), data((3,), 3))", RuntimeError),
    ("result = T.nn.functional.prelu(data((), 1), T.tensor([0.25], dtype=T.float64))", None),
    # activations and poolings PyTorch has no integer kernel for refuse integers (no silent float result)
    *[(f"result = T.nn.functional.{fn}(T.zeros(2, 4, dtype=T.int64))", NotImplementedError)
      for fn in ("silu", "elu", "selu", "leaky_relu", "gelu", "hardswish", "logsigmoid", "mish", "hardsigmoid",
                 "softplus", "softshrink", "hardshrink", "rrelu", "glu")],
    ("result = T.nn.functional.adaptive_avg_pool1d(T.zeros(1, 1, 4, dtype=T.int64), 2)", NotImplementedError),
    ("result = T.nn.functional.mse_loss(T.zeros(2, dtype=T.int64), T.zeros(2, dtype=T.int64))", NotImplementedError),
    ("result = T.nn.functional.threshold(T.zeros(2, dtype=T.bool), 0.5, 1.0)", NotImplementedError),
    ("result = T.nn.functional.hardtanh(T.zeros(2), 1.0, -1.0)", ValueError),
    ("result = T.nn.functional.batch_norm(T.zeros(2, 3), None, None, training=False)", RuntimeError),
    ("result = T.nn.functional.adaptive_avg_pool2d(T.zeros(1, 0, 4, 4), 2)", None),
    ("result = T.nn.functional.affine_grid(T.zeros(2, 2, 3), [1, 1, 2, 2])", RuntimeError),
    ("result = T.nn.functional.nll_loss(T.zeros(2, 3), T.tensor([0.0, 1.0]))", RuntimeError),
    ("result = T.nn.functional.embedding(T.tensor([1.0]), T.zeros(3, 2))", RuntimeError),
    # PyTorch validates these with assert
    ("result = T.nn.Embedding(3, 2, padding_idx=3)", AssertionError),
    ("result = T.nn.Hardtanh(1.0, -1.0)", AssertionError),
    ("result = T.nn.MultiheadAttention(5, 2)", AssertionError),
    ("result = T.nn.MultiheadAttention(4, 2)(T.zeros(3, 2, 4), T.zeros(3, 2, 4), T.zeros(2, 2, 4))", AssertionError),
    ("result = T.nn.MultiheadAttention(4, 2)(T.zeros(3, 2, 5), T.zeros(3, 2, 5), T.zeros(3, 2, 5))", AssertionError),
]


@pytest.mark.parametrize("src,raises", FUNCTIONAL_PROBE_CASES)
def test_functional_semantics_match_torch(src, raises):
    from tests.fuzz.semantics import check_expecting

    assert check_expecting(src, raises) is None, check_expecting(src, raises)
