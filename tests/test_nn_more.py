"""The added torch.nn.functional functions and nn layers against PyTorch:
shrinkage and in-place activations, PReLU, adaptive max and power-average
pooling, local response and instance normalisation, padding layers,
distances, the margin/embedding/likelihood losses; randomized ones
(RReLU, alpha dropout, Gumbel-softmax) by their distributions."""
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


def pos(*shape, seed=0):
    return rnd(*shape, low=0.1, high=3.0, seed=seed)


def labels(*shape, seed=0):
    return np.where(rnd(*shape, seed=seed) > 0, 1.0, -1.0).astype(np.float32)


FUNCTIONS = [
    ("hardshrink", lambda lib, x: lib.nn.functional.hardshrink(x, 0.4), [rnd(4, 5)], {}),
    ("softshrink", lambda lib, x: lib.nn.functional.softshrink(x, 0.3), [rnd(4, 5)], {}),
    ("tanhshrink", lambda lib, x: lib.nn.functional.tanhshrink(x), [rnd(4, 5)], {}),
    ("rrelu eval", lambda lib, x: lib.nn.functional.rrelu(x), [rnd(4, 5)], {}),
    ("prelu", lambda lib, x, w: lib.nn.functional.prelu(x, w), [rnd(2, 3, 4), rnd(3)], {}),
    ("prelu single", lambda lib, x, w: lib.nn.functional.prelu(x, w), [rnd(2, 3), rnd(1)], {}),
    ("max_pool2d_with_indices", lambda lib, x: lib.nn.functional.max_pool2d_with_indices(x, 2), [rnd(1, 2, 4, 6)], {}),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 3, return_indices=True),
     [rnd(2, 3, 7)], {}),
    ("adaptive_max_pool2d even", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (2, 3), True),
     [rnd(2, 3, 4, 6)], {}),
    ("adaptive_max_pool2d uneven", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (3, 2), True),
     [rnd(2, 3, 5, 7)], {}),
    ("adaptive_max_pool2d 3d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, 4), [rnd(3, 5, 6)], {}),
    ("lp_pool1d", lambda lib, x: lib.nn.functional.lp_pool1d(x, 2, 3, 2), [pos(2, 3, 9)], dict(rtol=1e-5)),
    ("lp_pool2d", lambda lib, x: lib.nn.functional.lp_pool2d(x, 3, (2, 2)), [pos(2, 3, 4, 6)], dict(rtol=1e-5)),
    ("local_response_norm", lambda lib, x: lib.nn.functional.local_response_norm(x, 3), [rnd(2, 5, 4, 3)],
     dict(rtol=1e-5)),
    ("local_response_norm 3d", lambda lib, x: lib.nn.functional.local_response_norm(x, 2, 1e-2, 0.5, 2.0),
     [rnd(2, 4, 6)], dict(rtol=1e-5)),
    ("channel_shuffle", lambda lib, x: lib.nn.functional.channel_shuffle(x, 3), [rnd(2, 6, 2, 2)], {}),
    ("pdist", lambda lib, x: lib.nn.functional.pdist(x), [rnd(5, 3)], dict(rtol=1e-5)),
    ("instance_norm", lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b), [rnd(2, 3, 5),
                                                                                                  rnd(3), rnd(3)],
     dict(rtol=1e-5)),
    ("margin_ranking_loss", lambda lib, a, b, y: lib.nn.functional.margin_ranking_loss(a, b, y, margin=0.2),
     [rnd(6), rnd(6, seed=1), labels(6)], {}),
    ("hinge_embedding_loss", lambda lib, x, y: lib.nn.functional.hinge_embedding_loss(x, y, reduction="sum"),
     [rnd(6), labels(6)], {}),
    ("cosine_embedding_loss", lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y, 0.1),
     [rnd(5, 4), rnd(5, 4, seed=1), labels(5)], dict(rtol=1e-5)),
    ("soft_margin_loss", lambda lib, x: lib.nn.functional.soft_margin_loss(x, lib.tensor(labels(6))), [rnd(6)], {}),
    ("multilabel_soft_margin_loss", lambda lib, x, y: lib.nn.functional.multilabel_soft_margin_loss(x, y),
     [rnd(3, 5), (labels(3, 5) > 0).astype(np.float32)], dict(rtol=1e-5)),
    # a target that broadcasts the input: PyTorch divides by the input's class count
    ("multilabel_soft_margin_loss broadcast", lambda lib, x, y: lib.nn.functional.multilabel_soft_margin_loss(x, y),
     [rnd(3, 1), (labels(3, 4) > 0).astype(np.float32)], dict(rtol=1e-5)),
    ("triplet_margin_loss", lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n, swap=True),
     [rnd(4, 3), rnd(4, 3, seed=1), rnd(4, 3, seed=2)], dict(rtol=1e-5)),
    ("triplet_margin_with_distance_loss",
     lambda lib, a, p, n: lib.nn.functional.triplet_margin_with_distance_loss(a, p, n, margin=0.5),
     [rnd(4, 3), rnd(4, 3, seed=1), rnd(4, 3, seed=2)], dict(rtol=1e-5)),
    ("poisson_nll_loss", lambda lib, x, y: lib.nn.functional.poisson_nll_loss(x, y), [rnd(6), pos(6)], {}),
    ("poisson_nll_loss full", lambda lib, x, y: lib.nn.functional.poisson_nll_loss(x, y, log_input=False, full=True),
     [pos(6), pos(6, seed=1) * 2], dict(rtol=1e-5)),
    ("gaussian_nll_loss", lambda lib, x, y, v: lib.nn.functional.gaussian_nll_loss(x, y, v), [rnd(4, 3),
                                                                                             rnd(4, 3, seed=1),
                                                                                             pos(4, 3)], {}),
    ("gaussian_nll_loss clamped var", lambda lib, x, y, v: lib.nn.functional.gaussian_nll_loss(x, y, v, eps=0.5,
                                                                                               full=True),
     [rnd(4, 3), rnd(4, 3, seed=1), pos(4, 1)], {}),
    ("multi_margin_loss", lambda lib, x: lib.nn.functional.multi_margin_loss(x, lib.tensor([0, 2, 1])),
     [rnd(3, 4)], {}),
    ("multi_margin_loss p2 weight", lambda lib, x: lib.nn.functional.multi_margin_loss(
        x, lib.tensor([0, 2, 1]), p=2, margin=0.5, weight=lib.tensor(pos(4))), [rnd(3, 4)], {}),
    ("multilabel_margin_loss", lambda lib, x: lib.nn.functional.multilabel_margin_loss(
        x, lib.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])), [rnd(2, 4)], {}),
]


@pytest.mark.parametrize("case", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_functional_matches_torch(case):
    _, fn, inputs, kw = case
    check(fn, *inputs, **kw)


@pytest.mark.parametrize("name", ["relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_"])
def test_in_place_activations(name):
    x = rnd(3, 4)
    lx, tx = lucid.tensor(x), torch.tensor(x)
    assert getattr(F, name)(lx) is lx
    getattr(TF, name)(tx)
    assert_close(lx, tx)
    lx, tx = lucid.tensor(x), torch.tensor(x)
    F.threshold_(lx, 0.1, -2.0)
    TF.threshold_(tx, 0.1, -2.0)
    assert_close(lx, tx)


MODULES = [
    ("Hardshrink", (0.3,), (2, 5)), ("Softshrink", (), (2, 5)), ("Tanhshrink", (), (2, 5)),
    ("Threshold", (0.1, -1.0), (2, 5)), ("Softmax2d", (), (2, 3, 4, 2)), ("AdaptiveMaxPool1d", (3,), (2, 3, 8)),
    ("AdaptiveMaxPool2d", ((2, 3),), (2, 3, 5, 7)), ("LPPool1d", (2, 3), (2, 3, 8)),
    ("LPPool2d", (2, 2), (2, 3, 4, 4)), ("LocalResponseNorm", (3,), (2, 6, 3, 3)), ("ChannelShuffle", (2,),
                                                                                      (2, 4, 3, 3)),
    ("ZeroPad1d", ((1, 2),), (2, 3, 4)), ("ZeroPad2d", (1,), (2, 3, 4)), ("ZeroPad3d", (1,), (1, 2, 3, 3)),
    ("ConstantPad1d", (2, 3.5), (2, 3, 4)), ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (2, 3, 4)),
    ("ConstantPad3d", (1, 0.5), (1, 2, 2, 2)), ("ReflectionPad1d", (2,), (2, 3, 5)),
    ("ReflectionPad2d", ((1, 2, 0, 1),), (1, 2, 4, 5)), ("ReplicationPad1d", (2,), (2, 3, 4)),
    ("ReplicationPad2d", (1,), (1, 2, 3, 3)), ("ReplicationPad3d", (1,), (1, 1, 2, 3, 3)),
    ("CircularPad1d", (1,), (2, 3, 4)), ("CircularPad2d", ((1, 1, 2, 0),), (1, 2, 3, 4)),
    ("InstanceNorm1d", (3,), (2, 3, 6)), ("InstanceNorm2d", (3,), (2, 3, 4, 4)),
    ("BatchNorm3d", (2,), (2, 2, 2, 3, 3)),
]


@pytest.mark.parametrize("name,args,shape", MODULES, ids=[m[0] for m in MODULES])
def test_module_matches_torch(name, args, shape):
    lm, tm = getattr(nn, name)(*args), getattr(T, name)(*args)
    compare_module(lm, tm, rnd(*shape), rtol=1e-5)
    assert repr(lm) == repr(tm)


def test_instance_norm_affine_and_running_stats():
    for kw in [dict(affine=True), dict(track_running_stats=True), dict(affine=True, track_running_stats=True)]:
        lm, tm = nn.InstanceNorm2d(3, **kw), T.InstanceNorm2d(3, **kw)
        compare_module(lm, tm, rnd(2, 3, 4, 4), rtol=1e-5)
        for (n, lb), (_, tb) in zip(lm.named_buffers(), tm.named_buffers()):
            assert_close(lb, tb, rtol=1e-5, msg=n)
        lm.eval()
        tm.eval()
        compare_module(lm, tm, rnd(2, 3, 4, 4, seed=1), rtol=1e-5)
        assert repr(lm) == repr(tm)
    compare_module(nn.InstanceNorm1d(3), T.InstanceNorm1d(3), rnd(3, 5))  # unbatched


def test_distance_modules():
    compare_module(nn.CosineSimilarity(dim=1), T.CosineSimilarity(dim=1), rnd(3, 4), rnd(3, 4, seed=1), rtol=1e-5)
    compare_module(nn.PairwiseDistance(p=1.0), T.PairwiseDistance(p=1.0), rnd(3, 4), rnd(3, 4, seed=1))


LOSSES = [
    ("MarginRankingLoss", dict(margin=0.1), [rnd(5), rnd(5, seed=1), labels(5)]),
    ("HingeEmbeddingLoss", dict(margin=0.5), [rnd(5), labels(5)]),
    ("CosineEmbeddingLoss", {}, [rnd(3, 4), rnd(3, 4, seed=1), labels(3)]),

    ("MultiLabelSoftMarginLoss", {}, [rnd(3, 4), (labels(3, 4) > 0).astype(np.float32)]),
    ("TripletMarginLoss", dict(margin=0.5, p=1.0), [rnd(3, 4), rnd(3, 4, seed=1), rnd(3, 4, seed=2)]),
    ("PoissonNLLLoss", {}, [rnd(5), pos(5)]),
    ("GaussianNLLLoss", {}, [rnd(4, 2), rnd(4, 2, seed=1), pos(4, 2)]),
]


@pytest.mark.parametrize("name,kw,inputs", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_modules(name, kw, inputs):
    compare_module(getattr(nn, name)(**kw), getattr(T, name)(**kw), *inputs, rtol=1e-5)


def test_multi_margin_and_multilabel_margin_modules():
    lm, tm = nn.MultiMarginLoss(p=2), T.MultiMarginLoss(p=2)
    x = rnd(3, 4)
    lx, tx = lucid.tensor(x), torch.tensor(x)
    assert_close(lm(lx, lucid.tensor([1, 0, 3])), tm(tx, torch.tensor([1, 0, 3])))
    lm, tm = nn.MultiLabelMarginLoss(), T.MultiLabelMarginLoss()
    assert_close(lm(lx, lucid.tensor([[0, -1, 0, 0], [3, 2, -1, 0], [1, 2, 3, 0]])),
                 tm(tx, torch.tensor([[0, -1, 0, 0], [3, 2, -1, 0], [1, 2, 3, 0]])))


def test_randomized_layers():
    lucid.manual_seed(0)
    x = lucid.ones(4000) * -1.0
    m = nn.RReLU(0.1, 0.3)
    y = m(x).numpy()
    assert np.all((y <= -0.1 + 1e-6) & (y >= -0.3 - 1e-6)) and y.std() > 0.03
    m.eval()
    np.testing.assert_allclose(m(x).numpy(), -0.2, rtol=1e-6)
    assert repr(m) == repr(T.RReLU(0.1, 0.3))
    # alpha dropout keeps a unit normal input at zero mean and unit variance
    z = lucid.randn(200000)
    out = F.alpha_dropout(z, 0.2, training=True)
    assert abs(float(out.mean())) < 0.02 and abs(float(out.std()) - 1.0) < 0.02
    assert F.alpha_dropout(z, 0.2, training=False) is z
    feat = F.feature_alpha_dropout(lucid.randn(500, 8, 6), 0.5, training=True).numpy()
    per_channel = feat.reshape(500 * 8, 6)
    dropped = np.all(np.isclose(per_channel, per_channel[:, :1]), axis=1)
    assert 0.35 < dropped.mean() < 0.65  # whole channels take one value
    logits = lucid.tensor(np.log(np.array([[0.1, 0.6, 0.3]] * 20000, np.float32)))
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.numpy().sum(1), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, tau=1.0, hard=True)
    h = hard.numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and np.all(h.sum(1) == 1)
    np.testing.assert_allclose(h.mean(0), [0.1, 0.6, 0.3], atol=0.02)  # Gumbel-max samples the distribution
    g = lucid.tensor(np.zeros((2, 3), np.float32), requires_grad=True)
    F.gumbel_softmax(g, hard=True).sum().backward()
    assert g.grad is not None  # straight-through gradient of the soft sample


def test_errors():
    with pytest.raises(ValueError, match="Mismatch of parameter numbers"):
        F.prelu(lucid.zeros(2, 3), lucid.zeros(2))
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(lucid.zeros(3), lucid.zeros(3), lucid.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="divisible by groups"):
        F.channel_shuffle(lucid.zeros(1, 5, 2, 2), 2)
    with pytest.raises(ValueError, match="expected 5D input"):
        nn.BatchNorm3d(2)(lucid.zeros(2, 2, 3))


@pytest.mark.parametrize("lambd", [0.5, 0.0, -1.5])
def test_hardshrink_keeps_nan_and_follows_torch_for_any_lambda(lambd):
    x = [float("nan"), float("inf"), -float("inf"), 0.3, -0.5, 0.5, -2.0, 0.0]
    want = torch.nn.functional.hardshrink(torch.tensor(x), lambd)
    got = lucid.nn.functional.hardshrink(lucid.tensor(x), lambd)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
