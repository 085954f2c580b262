"""Every layer against torch.nn with the weights copied over: outputs and
the gradients of inputs and parameters; train/eval behaviour of BatchNorm
and Dropout."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from conftest import assert_close, rnd
from test_nn_helpers import compare_module, copy_weights

T = torch.nn
pytestmark = [pytest.mark.filterwarnings("ignore:Support for mismatched"),
              pytest.mark.filterwarnings("ignore:Using padding='same'")]


def build(name, *args, **kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(T, name)(*args, **kwargs)


# -------------------------------------------------------------------- linear
@pytest.mark.parametrize("shape,bias", [((5, 4), True), ((2, 3, 4), False), ((4,), True)])
def test_linear(shape, bias):
    lm, tm = build("Linear", 4, 3, bias=bias)
    compare_module(lm, tm, rnd(*shape))


def test_identity_flatten_unflatten():
    x = rnd(2, 3, 4, 5)
    compare_module(nn.Identity(7, a=1), T.Identity(), x)
    compare_module(nn.Flatten(), T.Flatten(), x)
    compare_module(nn.Flatten(0, 2), T.Flatten(0, 2), x)
    compare_module(nn.Unflatten(1, (3, 1)), T.Unflatten(1, (3, 1)), rnd(2, 3, 4))
    compare_module(nn.Unflatten(-1, (2, -1)), T.Unflatten(-1, (2, -1)), rnd(2, 3, 4))


# ---------------------------------------------------------------------- conv
CONV2D = [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=3, out_channels=4, kernel_size=3, padding=1, bias=False),
    dict(in_channels=2, out_channels=4, kernel_size=(2, 3), stride=(2, 1), padding=(1, 2)),
    dict(in_channels=2, out_channels=3, kernel_size=3, dilation=2, padding=2, stride=2),
    dict(in_channels=4, out_channels=6, kernel_size=3, groups=2, padding=1),
    dict(in_channels=4, out_channels=4, kernel_size=3, groups=4),
    dict(in_channels=2, out_channels=3, kernel_size=4, padding="same"),
    dict(in_channels=2, out_channels=3, kernel_size=(2, 3), padding="same", dilation=(1, 2)),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding="valid"),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding=1, padding_mode="reflect"),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding=(2, 1), padding_mode="replicate"),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding=1, padding_mode="circular", stride=2),
]


@pytest.mark.parametrize("kw", CONV2D, ids=[str(i) for i in range(len(CONV2D))])
def test_conv2d(kw):
    lm, tm = build("Conv2d", **kw)
    compare_module(lm, tm, rnd(2, kw["in_channels"], 7, 8))


def test_conv2d_unbatched_and_batch_of_one():
    lm, tm = build("Conv2d", 2, 3, 3, padding=1)
    compare_module(lm, tm, rnd(2, 6, 5))
    compare_module(lm, tm, rnd(1, 2, 6, 5))


CONV1D = [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=3, out_channels=4, kernel_size=2, stride=2, padding=1, bias=False),
    dict(in_channels=4, out_channels=2, kernel_size=3, groups=2, dilation=2, padding=2),
    dict(in_channels=2, out_channels=3, kernel_size=4, padding="same"),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding=2, padding_mode="reflect"),
]


@pytest.mark.parametrize("kw", CONV1D, ids=[str(i) for i in range(len(CONV1D))])
def test_conv1d(kw):
    lm, tm = build("Conv1d", **kw)
    compare_module(lm, tm, rnd(2, kw["in_channels"], 9))
    compare_module(lm, tm, rnd(kw["in_channels"], 9))


def test_conv_module_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="strided convolutions"):
        nn.Conv2d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string"):
        nn.Conv2d(2, 2, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    m = nn.Conv2d(3, 4, 3)
    with pytest.raises(ValueError, match="to have 3 channels, but got 2 channels"):
        m(lucid.randn(1, 2, 5, 5))
    with pytest.raises(ValueError, match="Kernel size can't be greater than actual input size"):
        m(lucid.randn(1, 3, 2, 2))
    with pytest.raises(ValueError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"):
        m(lucid.randn(3, 5))
    with pytest.raises(TypeError, match="should be the same"):
        m(lucid.randn(1, 3, 5, 5, dtype=lucid.float64))


# ------------------------------------------------------------------- pooling
MAXPOOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kw", MAXPOOL, ids=[str(i) for i in range(len(MAXPOOL))])
def test_maxpool2d(kw):
    lm, tm = build("MaxPool2d", **kw)
    compare_module(lm, tm, rnd(2, 3, 7, 8))
    compare_module(lm, tm, rnd(3, 7, 8))


def test_maxpool2d_indices_and_ties():
    # Integer-valued inputs have ties: the gradient goes to the first maximum, as in PyTorch.
    x = np.random.default_rng(0).integers(0, 3, (2, 2, 6, 6)).astype(np.float32)
    lm, tm = build("MaxPool2d", 3, stride=2, padding=1, return_indices=True)
    compare_module(lm, tm, x)
    compare_module(nn.MaxPool2d(2, return_indices=True), T.MaxPool2d(2, return_indices=True), x)


def test_maxpool1d_and_avgpool1d():
    x = rnd(2, 3, 9)
    compare_module(nn.MaxPool1d(3, 2, 1), T.MaxPool1d(3, 2, 1), x)
    compare_module(nn.MaxPool1d(2, return_indices=True), T.MaxPool1d(2, return_indices=True), x)
    compare_module(nn.AvgPool1d(3, 2, 1), T.AvgPool1d(3, 2, 1), x)
    compare_module(nn.AvgPool1d(2, ceil_mode=True, count_include_pad=False), T.AvgPool1d(2, ceil_mode=True,
                                                                                         count_include_pad=False), x)


AVGPOOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(2, 1), divisor_override=4),
]


@pytest.mark.parametrize("kw", AVGPOOL, ids=[str(i) for i in range(len(AVGPOOL))])
def test_avgpool2d(kw):
    lm, tm = build("AvgPool2d", **kw)
    compare_module(lm, tm, rnd(2, 3, 7, 8))


@pytest.mark.parametrize("size,out", [((4, 6), (2, 3)), ((7, 5), (3, 2)), ((7, 5), 1), ((5, 7), (None, 3)),
                                      ((3, 3), (5, 4))])
def test_adaptive_avg_pool2d(size, out):
    lm, tm = build("AdaptiveAvgPool2d", out)
    compare_module(lm, tm, rnd(2, 3, *size))
    compare_module(lm, tm, rnd(3, *size))


def test_adaptive_avg_pool1d():
    for n, out in [(8, 4), (7, 3), (3, 5)]:
        compare_module(nn.AdaptiveAvgPool1d(out), T.AdaptiveAvgPool1d(out), rnd(2, 3, n))


def test_pool_errors():
    with pytest.raises(ValueError, match="pad should be at most half of effective kernel size"):
        nn.MaxPool2d(2, padding=2)(lucid.randn(1, 1, 5, 5))
    with pytest.raises(ValueError, match="Output size is too small"):
        nn.MaxPool2d(4)(lucid.randn(1, 1, 3, 3))
    with pytest.raises(ValueError, match="pad should be at most half of kernel size"):
        nn.AvgPool2d(2, padding=2)(lucid.randn(1, 1, 5, 5))


# ------------------------------------------------------------ normalization
def _bn_pair(name, *args, **kwargs):
    lm, tm = build(name, *args, **kwargs)
    with torch.no_grad():  # non-trivial affine parameters and running stats
        if tm.weight is not None:
            tm.weight.uniform_(0.5, 1.5)
        if tm.bias is not None:
            tm.bias.uniform_(-0.5, 0.5)
        if tm.running_mean is not None:
            tm.running_mean.uniform_(-0.5, 0.5)
            tm.running_var.uniform_(0.5, 1.5)
    return lm, tm


@pytest.mark.parametrize("name,shape,kw", [
    ("BatchNorm2d", (4, 3, 5, 6), {}),
    ("BatchNorm2d", (4, 3, 5, 6), dict(momentum=None)),
    ("BatchNorm2d", (4, 3, 5, 6), dict(affine=False, momentum=0.3)),
    ("BatchNorm2d", (4, 3, 5, 6), dict(track_running_stats=False)),
    ("BatchNorm1d", (6, 3), dict(eps=1e-3)),
    ("BatchNorm1d", (4, 3, 5), {}),
    ("BatchNorm2d", (4, 3, 5, 6), dict(bias=False)),
])
def test_batchnorm_train_then_eval(name, shape, kw):
    lm, tm = _bn_pair(name, 3, **kw)
    copy_weights(lm, tm)
    for step in range(3):  # training: batch statistics, running stats updated each step
        x = rnd(*shape, seed=step)
        compare_module(lm, tm, x, grad_rtol=1e-4, grad_atol=1e-4)
        for k, v in tm.state_dict().items():
            assert_close(lm.state_dict()[k], v, 1e-5, 1e-6, msg=f"step {step} {k}: ")
    lm.eval(), tm.eval()  # eval: running statistics, nothing updated
    x = rnd(*shape, seed=9)
    before = {k: v.numpy().copy() for k, v in tm.state_dict().items()}  # what lm is loaded with
    compare_module(lm, tm, x, grad_rtol=1e-4, grad_atol=1e-4)
    for k, v in lm.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_batchnorm_errors():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(lucid.randn(2, 3))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(lucid.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(lucid.randn(1, 3))
    nn.BatchNorm1d(3).eval()(lucid.randn(1, 3))  # fine in eval mode
    bn = nn.BatchNorm2d(3)
    with pytest.raises(ValueError, match=r"running_mean of shape \[4\]"):
        bn(lucid.randn(2, 4, 3, 3))
    assert int(bn.num_batches_tracked.item()) == 0  # the failed call changed nothing
    assert not bn.running_mean.numpy().any()


@pytest.mark.parametrize("shape,ns,kw", [
    ((2, 3, 4), 4, {}), ((2, 3, 4), (3, 4), dict(eps=1e-3)), ((2, 3, 4), 4, dict(bias=False)),
    ((2, 3, 4), 4, dict(elementwise_affine=False)),
])
def test_layer_norm(shape, ns, kw):
    lm, tm = build("LayerNorm", ns, **kw)
    with torch.no_grad():
        for p in tm.parameters():
            p.uniform_(0.5, 1.5)
    compare_module(lm, tm, rnd(*shape))


@pytest.mark.parametrize("shape,ns,kw", [((2, 3, 4), 4, {}), ((2, 3, 4), (3, 4), dict(eps=1e-2)),
                                         ((2, 3, 4), 4, dict(elementwise_affine=False))])
def test_rms_norm(shape, ns, kw):
    lm, tm = build("RMSNorm", ns, **kw)
    with torch.no_grad():
        for p in tm.parameters():
            p.uniform_(0.5, 1.5)
    compare_module(lm, tm, rnd(*shape))


@pytest.mark.parametrize("groups,shape,kw", [(2, (3, 4, 5), {}), (1, (2, 4, 3, 3), {}), (4, (2, 4, 6), {}),
                                             (2, (2, 4, 3, 3), dict(affine=False))])
def test_group_norm(groups, shape, kw):
    lm, tm = build("GroupNorm", groups, 4, **kw)
    with torch.no_grad():
        for p in tm.parameters():
            p.uniform_(0.5, 1.5)
    compare_module(lm, tm, rnd(*shape))
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)


def test_layer_norm_shape_error():
    with pytest.raises(ValueError, match=r"expected input with shape \[\*, 4\]"):
        nn.LayerNorm(4)(lucid.randn(2, 3))


# ----------------------------------------------------------------- embedding
@pytest.mark.parametrize("kw", [{}, dict(padding_idx=2), dict(padding_idx=-1), dict(scale_grad_by_freq=True)])
def test_embedding(kw):
    lm, tm = build("Embedding", 6, 3, **kw)
    idx = np.array([[0, 2, 5], [2, 2, 1]], dtype=np.int64)
    compare_module(lm, tm, idx)
    if "padding_idx" in kw:
        row = tm.padding_idx
        assert not lm.weight.grad.numpy()[row].any()
        fresh = nn.Embedding(6, 3, **kw)
        assert not fresh.weight.detach().numpy()[row].any()  # initialised to zero


def test_embedding_max_norm_renormalises_used_rows():
    lm, tm = build("Embedding", 5, 3, max_norm=1.0)
    with torch.no_grad():
        tm.weight.mul_(3)
    idx = np.array([0, 3, 3], dtype=np.int64)
    compare_module(lm, tm, idx)
    assert_close(lm.weight, tm.weight.detach(), 1e-5, 1e-6)


def test_embedding_from_pretrained_and_errors():
    w = lucid.randn(4, 2)
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad
    assert_close(e(lucid.tensor([3])), torch.tensor(w.numpy()[[3]]))
    with pytest.raises(TypeError, match="Long, Int"):
        e(lucid.tensor([1.0]))
    with pytest.raises(IndexError):
        e(lucid.tensor([4]))
    with pytest.raises(AssertionError, match="Padding_idx"):  # PyTorch asserts it
        nn.Embedding(3, 2, padding_idx=3)


# ------------------------------------------------------------------- dropout
def test_dropout_train_statistics_and_gradient():
    lucid.manual_seed(1)
    m = nn.Dropout(0.3)
    x = lucid.ones(200, 200, requires_grad=True)
    y = m(x)
    vals = y.detach().numpy()
    kept = vals != 0
    assert abs(kept.mean() - 0.7) < 0.01  # 40000 Bernoulli draws: std 0.0023
    np.testing.assert_allclose(vals[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.7, 0.0), rtol=1e-6)
    y2 = m(x).detach().numpy()
    assert (y2 != vals).any()  # a fresh mask per call


def test_dropout_eval_and_edge_probabilities():
    x = lucid.randn(10, 10)
    m = nn.Dropout(0.5).eval()
    assert m(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert not nn.Dropout(1.0)(x).numpy().any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    assert repr(nn.Dropout(0.2)) == repr(T.Dropout(0.2))


def test_dropout_is_reproducible_under_manual_seed():
    lucid.manual_seed(7)
    a = nn.Dropout()(lucid.ones(50)).numpy()
    lucid.manual_seed(7)
    b = nn.Dropout()(lucid.ones(50)).numpy()
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- activations
ACTIVATIONS = [
    ("ReLU", (), {}), ("ReLU", (), dict(inplace=True)), ("LeakyReLU", (0.2,), {}), ("GELU", (), {}),
    ("GELU", (), dict(approximate="tanh")), ("SiLU", (), {}), ("Tanh", (), {}), ("Sigmoid", (), {}),
    ("Softmax", (1,), {}), ("Softmax", (-1,), {}), ("LogSoftmax", (1,), {}), ("LogSoftmax", (0,), {}),
    ("ELU", (0.5,), {}), ("CELU", (1.5,), {}), ("SELU", (), {}), ("ReLU6", (), {}), ("Hardtanh", (-0.5, 0.7), {}),
    ("Hardswish", (), {}), ("Hardsigmoid", (), {}), ("Softplus", (2.0, 1.0), {}), ("Mish", (), {}),
    ("LogSigmoid", (), {}), ("Softsign", (), {}), ("GLU", (1,), {}), ("Softmin", (1,), {}), ("PReLU", (), {}),
    ("PReLU", (4,), {}),
]


@pytest.mark.parametrize("name,args,kw", ACTIVATIONS, ids=[f"{a[0]}{i}" for i, a in enumerate(ACTIVATIONS)])
def test_activation(name, args, kw):
    lm, tm = build(name, *args, **kw)
    x = rnd(3, 4, 5) * 3
    if kw.get("inplace"):  # in place on a non-leaf, as in `h = relu_(linear(x))`
        lx = lucid.tensor(x, requires_grad=True)
        tx = torch.tensor(x, requires_grad=True)
        lo, to = lm(lx * 1.0), tm(tx * 1.0)
        assert_close(lo, to)
        lo.sum().backward(), to.sum().backward()
        assert_close(lx.grad, tx.grad)
        return
    compare_module(lm, tm, x)


# ----------------------------------------------------------------- attention
MHA = [
    dict(kw={}, call={}),
    dict(kw=dict(batch_first=True), call=dict(average_attn_weights=False)),
    dict(kw=dict(bias=False), call=dict(need_weights=False)),
    dict(kw=dict(kdim=3, vdim=5), call={}),
    dict(kw=dict(add_bias_kv=True, add_zero_attn=True), call={}),
    dict(kw={}, call=dict(attn_mask="bool2d")),
    dict(kw=dict(batch_first=True), call=dict(attn_mask="float3d", key_padding_mask="bool")),
    dict(kw=dict(add_bias_kv=True), call=dict(attn_mask="bool2d", key_padding_mask="bool", need_weights=False)),
    dict(kw={}, call=dict(attn_mask="causal", is_causal=True, need_weights=False)),
]


def _mha_inputs(case, E=8, H=2, L=4, S=5, N=3, self_attn=False):
    rng = np.random.default_rng(0)
    kdim, vdim = case["kw"].get("kdim", E), case["kw"].get("vdim", E)
    bf = case["kw"].get("batch_first", False)

    def seq(n, d):
        return rng.standard_normal((N, n, d) if bf else (n, N, d)).astype(np.float32)

    q = seq(L, E)
    k, v = (q, q) if self_attn else (seq(S, kdim), seq(S, vdim))
    src = L if self_attn else S
    call = dict(case["call"])
    masks = {}
    if call.get("attn_mask") == "bool2d":
        m = rng.random((L, src)) < 0.3
        m[:, 0] = False  # every query keeps one key
        masks["attn_mask"] = m
    elif call.get("attn_mask") == "float3d":
        masks["attn_mask"] = rng.standard_normal((N * H, L, src)).astype(np.float32)
    elif call.get("attn_mask") == "causal":
        masks["attn_mask"] = np.triu(np.ones((L, src), bool), 1)
    if call.get("key_padding_mask") == "bool":
        kpm = np.zeros((N, src), bool)
        kpm[0, -2:] = True
        masks["key_padding_mask"] = kpm
    call.update(masks)
    return q, k, v, call


@pytest.mark.parametrize("case", MHA, ids=[str(i) for i in range(len(MHA))])
def test_multihead_attention(case):
    lm, tm = build("MultiheadAttention", 8, 2, **case["kw"])
    q, k, v, call = _mha_inputs(case)
    compare_module(lm, tm, q, k, v, kwargs=call, grad_atol=1e-4)


def test_multihead_attention_self_attention_and_unbatched():
    lm, tm = build("MultiheadAttention", 8, 2)
    q, _, _, call = _mha_inputs(dict(kw={}, call={}), self_attn=True)
    copy_weights(lm, tm)
    lq, tq = lucid.tensor(q, requires_grad=True), torch.tensor(q, requires_grad=True)
    lo, lw = lm(lq, lq, lq)
    to, tw = tm(tq, tq, tq)
    assert_close(lo, to), assert_close(lw, tw)
    lo.sum().backward(), to.sum().backward()
    assert_close(lq.grad, tq.grad, 1e-4, 1e-5)
    compare_module(lm, tm, q[:, 0], q[:, 0], q[:, 0])  # unbatched [L, E]


def test_multihead_attention_errors():
    with pytest.raises(AssertionError, match="divisible by num_heads"):  # PyTorch asserts it
        nn.MultiheadAttention(6, 4)
    m = nn.MultiheadAttention(8, 2)
    x = lucid.randn(4, 3, 8)
    with pytest.raises(ValueError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(ValueError, match="2D attn_mask"):
        m(x, x, x, attn_mask=lucid.zeros(3, 3))


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True), dict(activation="gelu", batch_first=True),
                                dict(activation=torch.nn.functional.gelu, norm_first=True)],
                         ids=["post", "pre", "gelu_bf", "callable"])
def test_transformer_encoder_layer(kw):
    lkw = dict(kw)
    if callable(kw.get("activation")):
        lkw["activation"] = nn.functional.gelu
    lm = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **lkw)
    tm = T.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    x = rnd(4, 3, 8)
    mask = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    kpm = np.zeros((4, 4) if kw.get("batch_first") else (3, 4), bool)
    kpm[0, -1] = True
    if kw.get("batch_first"):
        x = rnd(3, 4, 8)
        kpm = np.zeros((3, 4), bool)
        kpm[0, -1] = True
    compare_module(lm, tm, x, kwargs=dict(src_mask=mask, src_key_padding_mask=kpm), grad_atol=1e-4)
    compare_module(lm, tm, x, grad_atol=1e-4)


def test_transformer_encoder_layer_eval_matches_torch_and_dropout_trains():
    lm = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5)
    tm = T.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5)
    copy_weights(lm, tm)
    lm.eval(), tm.eval()
    x = rnd(4, 3, 8)
    with torch.no_grad():
        assert_close(lm(lucid.tensor(x)), tm(torch.tensor(x)), 1e-5, 1e-5)
    lm.train()
    a, b = lm(lucid.tensor(x)).detach().numpy(), lm(lucid.tensor(x)).detach().numpy()
    assert not np.allclose(a, b)


def test_transformer_encoder_stack():
    layer_l = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    layer_t = T.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    lm = nn.TransformerEncoder(layer_l, 2, norm=nn.LayerNorm(8))
    tm = T.TransformerEncoder(layer_t, 2, norm=T.LayerNorm(8), enable_nested_tensor=False)
    assert lm.layers[0].linear1.weight is not lm.layers[1].linear1.weight
    compare_module(lm, tm, rnd(4, 3, 8), grad_atol=1e-4)


# Cases the semantics probe (python -m tests.fuzz.semantics --family nn) found
# differing from PyTorch; each runs with T = torch and T = lucid after the
# probe's prelude (tests/fuzz/semantics_nn.py: seeded data, init, outcome).
# (source, the exception PyTorch raises or None)
LAYER_PROBE_CASES = [
    # inplace=True returns the input tensor itself
    *[(f"x = data((2, 3), 1, lo=-8, hi=8, grad=True)\nz = x * 1\ny = T.nn.{name}(inplace=True)(z)\nbackward(y, 2)\n"
       "result = (y, y is z, x.grad)", None) for name in ("ReLU", "ReLU6", "LeakyReLU", "Hardtanh", "Mish", "SiLU")],
    ("x = data((2, 3), 1, grad=True)\nz = x * 1\nresult = T.nn.functional.elu(z, inplace=True) is z", None),
    # RReLU's eval slope applies at 0 too, as leaky_relu's does (its gradient there is the slope)
    ("m = T.nn.RReLU().eval()\nx = T.tensor([-1.0, 0.0, 2.0], dtype=T.float64, requires_grad=True)\ny = m(x)\n"
     "backward(y, 3)\nresult = (y, x.grad)", None),
    # Bilinear checks its inputs' ranks and batch dims instead of broadcasting them
    ("result = T.nn.Bilinear(2, 1, 2)(data((2,), 1, 'float32'), data((1, 1), 2, 'float32'))", RuntimeError),
    ("result = T.nn.Bilinear(2, 1, 2)(data((3, 2), 1, 'float32'), data((1, 1), 2, 'float32'))", RuntimeError),
    # Linear with no input features
    ("m = init(T.nn.Linear(0, 1, bias=False).double(), 1)\nx = data((0,), 2, grad=True)\n"
     "result = outcome(m, [x], m(x), 3)", None),
    # an empty batch leaves the running statistics as they were
    ("m = init(T.nn.BatchNorm2d(2, affine=False).double(), 1)\nx = data((0, 2, 2, 1), 2, grad=True)\n"
     "result = outcome(m, [x], m(x), 3)", None),
    ("m = init(T.nn.InstanceNorm1d(1, track_running_stats=True).double(), 1)\nx = data((0, 1, 3), 2, grad=True)\n"
     "result = outcome(m, [x], m(x), 3)", None),
    # InstanceNorm's momentum=None keeps the running statistics (no cumulative average)
    ("m = init(T.nn.InstanceNorm2d(2, track_running_stats=True, momentum=None).double(), 1)\n"
     "x = data((3, 2, 3, 3), 2, grad=True)\nresult = outcome(m, [x], m(x), 3)", None),
    # GroupNorm refuses one value per group, in eval mode too
    ("result = T.nn.GroupNorm(2, 2)(data((1, 2, 1), 1, 'float32'))", ValueError),
    ("result = T.nn.GroupNorm(4, 4).eval()(data((1, 4), 1, 'float32'))", ValueError),
    # PReLU: one slope keeps a 0-d input 0-d; several need a channel dim
    ("m = init(T.nn.PReLU().double(), 1)\nx = data((), 2, grad=True)\nresult = outcome(m, [x], m(x), 3)", None),
    ("result = T.nn.PReLU(3)(data((), 1, 'float32'))", RuntimeError),
    ("result = T.nn.PReLU(3)(data((3,), 1, 'float32'))", RuntimeError),
    # max-mode EmbeddingBag of empty bags: zeros still in the weight's history
    ("m = init(T.nn.EmbeddingBag(6, 2, mode='max').double(), 2)\ny = m(ints((0,), 1, 0, 6), T.tensor([0, 0]))\n"
     "result = outcome(m, [], y, 3)", None),
    # MaxUnpool of an empty batch; output_size of an unbatched input's full shape is refused
    ("p = T.nn.MaxPool3d(1, stride=3, return_indices=True)\nx = data((0, 2, 1, 5, 2), 1)\nv, i = p(x)\n"
     "v = v.detach().requires_grad_()\nm = T.nn.MaxUnpool3d(1, stride=3)\n"
     "result = outcome(m, [v], m(v, i, output_size=x.shape), 2)", None),
    ("v, i = T.nn.MaxPool2d(2, return_indices=True)(data((1, 4, 4), 1))\n"
     "result = T.nn.MaxUnpool2d(2)(v, i, output_size=(1, 4, 4))", ValueError),
    # a checkpoint without num_batches_tracked loads when it predates it (unversioned), not otherwise
    ("m = T.nn.BatchNorm1d(3)\nsd = {k: v + 1 for k, v in m.state_dict().items()}\ndel sd['num_batches_tracked']\n"
     "r = m.load_state_dict(sd)\nresult = (r.missing_keys, r.unexpected_keys, dict(m.state_dict()))", None),
    ("m = T.nn.BatchNorm1d(3)\nsd = m.state_dict()\ndel sd['num_batches_tracked']\nresult = m.load_state_dict(sd)",
     RuntimeError),
    # losses: validation, duplicate targets, infinite CTC losses
    ("result = T.nn.TripletMarginLoss(margin=0.0)", ValueError),
    ("result = T.nn.TripletMarginWithDistanceLoss(margin=-1.0)", ValueError),
    ("a = data((2, 3), 1, grad=True)\ny = T.nn.MultiLabelMarginLoss()(a, T.tensor([[1, 1, -1], [2, 0, 2]]))\n"
     "backward(y, 2)\nresult = (y, a.grad)", None),
    ("a = data((0, 3), 1, grad=True)\ny = T.nn.MultiLabelMarginLoss(reduction='none')(a, ints((0, 3), 2, -1, 3))\n"
     "backward(y, 2)\nresult = (y, a.grad)", None),
    ("result = T.nn.MultiLabelMarginLoss()(data((2, 3), 1), ints((2, 2), 2, 0, 3))", RuntimeError),
    ("result = T.nn.CrossEntropyLoss(ignore_index=1)(data((2, 3), 1), T.softmax(data((2, 3), 2), 1))", RuntimeError),
    *[(f"a = T.log_softmax(data((4, 2, 3), 1), 2).requires_grad_()\n"
       f"crit = T.nn.CTCLoss(reduction={red!r}, zero_infinity={zi})\n"
       f"y = crit(a, T.ones((2, 3), dtype=T.int64), T.tensor([3, 1]), T.tensor([2, 3]))\n"
       f"backward(y, 2)\nresult = (y, a.grad)", None) for red in ("mean", "none") for zi in (False, True)],
]


@pytest.mark.parametrize("src,raises", LAYER_PROBE_CASES)
def test_layer_semantics_match_torch(src, raises):
    from tests.fuzz.semantics import check_expecting

    assert check_expecting(src, raises) is None, check_expecting(src, raises)
