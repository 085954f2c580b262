"""torch's top-level names that Lucid mirrors: the neural-network functions
with their top-level signatures (torch.conv2d, torch.batch_norm,
torch.dropout(input, p, train), int reductions...), window functions and
more of the namespace; forward and gradients against PyTorch."""
import numpy as np
import pytest
import torch

import lucid
from conftest import assert_close


def _pair(arr, requires_grad=False):
    arr = np.asarray(arr)
    return lucid.tensor(arr, requires_grad=requires_grad), torch.tensor(arr, requires_grad=requires_grad)


def _same(name, arrays, *args, grad=True, tol=1e-10, **kwargs):
    """lucid.<name> and torch.<name> on the same float64 arrays (and other args): outputs and gradients."""
    # an array given as (array, False) takes no gradient (targets, weights PyTorch does not differentiate)
    arrays = [a if isinstance(a, tuple) else (a, True) for a in arrays]
    pairs = [_pair(a, grad and wants and a.dtype.kind == "f") for a, wants in arrays]
    out_l = getattr(lucid, name)(*[p[0] for p in pairs], *args, **kwargs)
    out_t = getattr(torch, name)(*[p[1] for p in pairs], *args, **kwargs)
    first_l = out_l[0] if isinstance(out_l, tuple) else out_l
    first_t = out_t[0] if isinstance(out_t, tuple) else out_t
    assert_close(out_l, out_t, rtol=tol, atol=tol)
    if grad and first_t.requires_grad:
        g = np.random.default_rng(0).standard_normal(tuple(first_t.shape))
        first_t.backward(torch.from_numpy(g))
        first_l.backward(lucid.tensor(g))
        for (pl, pt) in pairs:
            if pt.requires_grad:
                assert_close(pl.grad, pt.grad, rtol=tol, atol=tol)


R = np.random.default_rng(1)


def r(*shape):
    return R.standard_normal(shape)


NN_CASES = [
    ("conv1d", [r(2, 4, 9), r(6, 2, 3), r(6)], (2, 1, 1, 2), {}),
    ("conv2d", [r(2, 3, 7, 6), r(4, 3, 3, 2)], (), dict(padding=1, stride=(2, 1))),
    ("conv_transpose1d", [r(2, 4, 5), r(4, 3, 3)], (None, 2, 1, 1), {}),
    ("conv_transpose2d", [r(1, 2, 4, 4), r(2, 3, 3, 3), r(3)], (2, 1), {}),
    ("layer_norm", [r(3, 4, 5)], ((4, 5),), {}),
    ("group_norm", [r(3, 4, 5), ], (2,), {}),
    ("rms_norm", [r(3, 4, 5)], ((4, 5),), dict(eps=1e-6)),
    ("max_pool1d", [r(2, 3, 9)], (3,), {}),
    ("max_pool1d", [r(2, 3, 9)], (3, 2, 1, 1, True), {}),
    ("max_pool2d", [r(2, 3, 6, 7)], ((2, 3),), {}),
    ("max_pool1d_with_indices", [r(2, 3, 9)], (2,), {}),
    ("avg_pool1d", [r(2, 3, 9)], (3, 2, 1, False, False), {}),
    ("adaptive_avg_pool1d", [r(2, 3, 9)], (4,), {}),
    ("adaptive_max_pool1d", [r(2, 3, 9)], (4,), {}),
    ("bilinear", [r(4, 3), r(4, 5), r(2, 3, 5), r(2)], (), {}),
    ("celu", [r(3, 4)], (0.7,), dict()),
    ("selu", [r(3, 4)], (), {}),
    ("threshold", [r(3, 4)], (0.1, -2.0), {}),
    ("prelu", [r(2, 3, 4), np.array([0.1, 0.2, 0.3])], (), {}),
    ("rrelu", [r(3, 4)], (), {}),
    ("hardshrink", [r(3, 4)], (0.3,), {}),
    ("pixel_shuffle", [r(2, 8, 3, 3)], (2,), {}),
    ("pixel_unshuffle", [r(2, 2, 4, 6)], (2,), {}),
    ("channel_shuffle", [r(2, 6, 3, 3)], (3,), {}),
    ("native_channel_shuffle", [(r(2, 6, 3), False)], (2,), {}),
    ("cosine_similarity", [r(4, 5), r(4, 5)], (1,), {}),
    ("pairwise_distance", [r(4, 5), r(4, 5)], (3.0, 1e-6, True), {}),
    ("pdist", [r(5, 3)], (1.5,), {}),
    ("constant_pad_nd", [r(2, 3)], ((1, 2, 0, 1), 0.5), {}),
    ("dropout", [r(3, 4)], (0.5, False), {}),
    ("alpha_dropout", [r(3, 4)], (0.5, False), {}),
    ("feature_dropout", [r(2, 3, 4)], (0.5, False), {}),
    ("feature_alpha_dropout", [r(2, 3, 4)], (0.5, False), {}),
    ("kl_div", [r(3, 4), (r(3, 4), False)], (2,), dict(log_target=True)),
    ("binary_cross_entropy_with_logits", [r(3, 4), (R.random((3, 4)), False), (R.random((3, 4)), False),
                                          (R.random(4), False)], (0,), {}),
    ("cosine_embedding_loss", [r(4, 5), r(4, 5), (np.array([1.0, -1, 1, -1]), False)], (0.1, 2), {}),
    ("hinge_embedding_loss", [r(4, 5), (np.sign(r(4, 5)), False)], (0.5, 1), {}),
    ("margin_ranking_loss", [r(6), r(6), (np.sign(r(6)), False)], (0.2, 0), {}),
    ("triplet_margin_loss", [r(4, 5), r(4, 5), r(4, 5)], (1.0, 2.0, 1e-6, True, 1), {}),
    ("poisson_nll_loss", [r(3, 4), (R.random((3, 4)) * 3, False)], (True, True, 1e-8, 2), {}),
    ("poisson_nll_loss", [R.random((3, 4)) + 0.1, (R.random((3, 4)) * 3, False)], (False, False, 1e-8, 1), {}),
]


@pytest.mark.parametrize("name,arrays,args,kwargs", NN_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(NN_CASES)])
def test_nn_functions_at_top_level(name, arrays, args, kwargs):
    # celu: Lucid's expm1-based form and PyTorch's differ by ~1e-9 relative in float64
    _same(name, arrays, *args, tol=1e-7 if name == "celu" else 1e-10, **kwargs)


def test_layer_norm_and_rms_norm_with_affine_parameters():
    x, w, b = r(3, 4, 5), r(4, 5), r(4, 5)
    for lib_args in ("layer_norm", "rms_norm"):
        lx, tx = _pair(x, True)
        lw, tw = _pair(w, True)
        lb, tb = _pair(b, True)
        if lib_args == "layer_norm":
            out_l, out_t = lucid.layer_norm(lx, (4, 5), lw, lb, 1e-5, True), torch.layer_norm(tx, (4, 5), tw, tb, 1e-5,
                                                                                               True)
        else:
            out_l, out_t = lucid.rms_norm(lx, [4, 5], lw, 1e-6), torch.rms_norm(tx, [4, 5], tw, 1e-6)
        assert_close(out_l, out_t, rtol=1e-10, atol=1e-10)
        out_l.sum().backward()
        out_t.sum().backward()
        assert_close(lx.grad, tx.grad, rtol=1e-9, atol=1e-9)
        assert_close(lw.grad, tw.grad, rtol=1e-9, atol=1e-9)


def test_embedding_and_norms_with_top_level_signatures():
    w = r(10, 3)
    idx = np.array([[1, 2, 9], [0, 2, 2]])
    _same("embedding", [w, idx])
    _same("embedding", [w, idx], 2)  # padding_idx: no gradient into row 2
    x, rm, rv = r(4, 3, 5), R.random(3), R.random(3) + 0.5
    for training in (True, False):
        lx, tx = _pair(x, True)
        lw, tw = _pair(r(3), True)
        lb, tb = _pair(r(3), True)
        lrm, trm = _pair(rm.copy())
        lrv, trv = _pair(rv.copy())
        out_l = lucid.batch_norm(lx, lw, lb, lrm, lrv, training, 0.2, 1e-5, False)
        out_t = torch.batch_norm(tx, tw, tb, trm, trv, training, 0.2, 1e-5, False)
        assert_close(out_l, out_t)
        assert_close(lrm, trm)
        assert_close(lrv, trv)
        out_t.sum().backward()
        out_l.sum().backward()
        for a, b in ((lx, tx), (lw, tw), (lb, tb)):
            assert_close(a.grad, b.grad, rtol=1e-9, atol=1e-9)
    lx, tx = _pair(x, True)
    lrm, trm = _pair(rm.copy())
    lrv, trv = _pair(rv.copy())
    out_l = lucid.instance_norm(lx, None, None, lrm, lrv, True, 0.1, 1e-5, False)
    out_t = torch.instance_norm(tx, None, None, trm, trv, True, 0.1, 1e-5, False)
    assert_close(out_l, out_t)
    assert_close(lrm, trm)


def test_in_place_top_level_activations_and_dropout():
    for name, args in [("celu_", (0.5,)), ("selu_", ()), ("threshold_", (0.0, 3.0)), ("rrelu_", ()),
                       ("dropout_", (0.3, False)), ("alpha_dropout_", (0.3, False)),
                       ("feature_alpha_dropout_", (0.3, False)), ("feature_dropout_", (0.3, False))]:
        x = r(2, 3, 4)
        lx, tx = _pair(x)
        assert getattr(lucid, name)(lx, *args) is lx
        getattr(torch, name)(tx, *args)
        assert_close(lx, tx, msg=name)


def test_dropout_training_statistics_and_errors():
    lucid.manual_seed(0)
    y = lucid.dropout(lucid.ones(20000), 0.25, True)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.02
    assert np.all(np.isclose(y.numpy(), 0.0) | np.isclose(y.numpy(), 1 / 0.75))
    z = lucid.feature_dropout(lucid.ones(64, 32, 5), 0.5, True)
    per_channel = z.numpy().std(axis=2)
    assert np.all(per_channel == 0)  # whole channels kept or dropped
    with pytest.raises(ValueError):
        lucid.kl_div(lucid.zeros(2), lucid.zeros(2), 3)
