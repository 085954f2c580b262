"""nn.utils fusion (conv/linear + batch norm), skip_init, Module.to_empty
and the remaining nn.init functions (sparse_, the deprecated spellings)
against PyTorch."""
import warnings

import numpy as np
import pytest
import torch

import lucid

RNG = np.random.default_rng(2)


def _bn(m, kind, n, affine=True):
    bn = getattr(m.nn, kind)(n, affine=affine).double().eval()
    with m.no_grad():
        bn.running_mean.copy_(m.tensor(RNG_MEAN[:n]))
        bn.running_var.copy_(m.tensor(RNG_VAR[:n]))
        if affine:
            bn.weight.copy_(m.tensor(RNG_W[:n]))
            bn.bias.copy_(m.tensor(RNG_B[:n]))
    return bn


RNG_MEAN, RNG_VAR = RNG.standard_normal(8), RNG.random(8) + 0.5
RNG_W, RNG_B = RNG.standard_normal(8), RNG.standard_normal(8)


def _set(layer, m, **arrays):
    with m.no_grad():
        for k, v in arrays.items():
            getattr(layer, k).copy_(m.tensor(v))
    return layer.double().eval()


CASES = {
    "conv2d": (lambda m: _set(m.nn.Conv2d(3, 4, 3), m, weight=W4, bias=B4), "BatchNorm2d", 4, (2, 3, 6, 6), False),
    "conv2d-no-bias": (lambda m: _set(m.nn.Conv2d(3, 4, 3, bias=False), m, weight=W4), "BatchNorm2d", 4,
                       (2, 3, 6, 6), False),
    "conv1d": (lambda m: _set(m.nn.Conv1d(3, 4, 3), m, weight=W4[..., 0], bias=B4), "BatchNorm1d", 4, (2, 3, 7),
               False),
    "conv-transpose2d": (lambda m: _set(m.nn.ConvTranspose2d(4, 3, 3), m, weight=W4, bias=B4[:3]), "BatchNorm2d", 3,
                         (2, 4, 5, 5), True),
    "linear": (lambda m: _set(m.nn.Linear(6, 4), m, weight=WL, bias=B4), "BatchNorm1d", 4, (5, 6), None),
    "linear-one-feature-bn": (lambda m: _set(m.nn.Linear(6, 4), m, weight=WL, bias=B4), "BatchNorm1d", 1, (5, 6),
                              None),
}
W4, B4, WL = RNG.standard_normal((4, 3, 3, 3)), RNG.standard_normal(4), RNG.standard_normal((4, 6))
X = {shape: RNG.standard_normal(shape) for *_, shape, _ in CASES.values()}


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_layer_equals_layer_then_batch_norm_and_torchs_fusion(name, affine):
    make, bn_kind, n, shape, transpose = CASES[name]
    outs = []
    for m in (torch, lucid):
        layer, bn = make(m), _bn(m, bn_kind, n, affine)
        x = m.tensor(X[shape])
        U = m.nn.utils
        if transpose is None and not affine:
            # PyTorch's linear fusion needs the bn's affine weight (it multiplies by None otherwise).
            with pytest.raises(TypeError):
                U.fuse_linear_bn_eval(layer, bn)
            continue
        fused = U.fuse_linear_bn_eval(layer, bn) if transpose is None else U.fuse_conv_bn_eval(layer, bn, transpose)
        assert fused is not layer and isinstance(fused.weight, m.nn.Parameter)
        if n == 1:  # a one-channel bn over linear outputs: broadcast in the fused layer only
            outs.append((fused(x).detach().numpy(), fused.weight.detach().numpy(), fused.bias.detach().numpy()))
            continue
        ref = bn(layer(x)).detach().numpy()
        np.testing.assert_allclose(fused(x).detach().numpy(), ref, rtol=1e-10, atol=1e-12)
        outs.append((fused(x).detach().numpy(), fused.weight.detach().numpy(), fused.bias.detach().numpy()))
    for w, g in zip(*outs):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_fusion_errors_match_torch():
    for m in (torch, lucid):
        U = m.nn.utils
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            U.fuse_conv_bn_eval(m.nn.Conv2d(3, 4, 3), m.nn.BatchNorm2d(4))
        with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
            U.fuse_linear_bn_eval(m.nn.Linear(3, 4).eval(), m.nn.BatchNorm1d(3).eval())
        w, b = U.fuse_conv_bn_weights(m.ones(2, 1, 1, 1, requires_grad=True), None, m.zeros(2), m.ones(2), 0.0,
                                      None, None)
        assert w.requires_grad and not b.requires_grad  # each as its source (no conv bias: a new zero one)


def test_skip_init_and_to_empty():
    lin = lucid.nn.utils.skip_init(lucid.nn.Linear, 3, 4, bias=False)
    assert isinstance(lin, lucid.nn.Linear) and tuple(lin.weight.shape) == (4, 3) and lin.bias is None
    assert lucid.nn.init.kaiming_uniform_(lucid.zeros(4, 3)).abs().sum() > 0  # initialisers work again afterwards
    for m in (torch, lucid):
        with pytest.raises(RuntimeError, match="Expected a Module"):
            m.nn.utils.skip_init(int)

        class NoDevice(m.nn.Module):
            def __init__(self):
                super().__init__()

        with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
            m.nn.utils.skip_init(NoDevice)
    seq = lucid.nn.Sequential(lucid.nn.Linear(2, 3), lucid.nn.BatchNorm1d(3))
    p = seq[0].weight
    assert seq.to_empty(device="cpu") is seq
    assert seq[0].weight is p and tuple(p.shape) == (3, 2) and tuple(seq[1].running_mean.shape) == (3,)


def test_init_sparse_and_deprecated_spellings_match_torch():
    for m in (torch, lucid):
        w = m.nn.init.sparse_(m.empty(20, 7), sparsity=0.3, std=0.5)
        assert [int(c) for c in (w == 0).sum(0)] == [6] * 7
        assert 0.2 < float(w[w != 0].std()) < 1.0
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            m.nn.init.sparse_(m.empty(2, 2, 2), 0.5)
        for name in ("eye", "dirac", "sparse"):
            args = {"eye": (m.empty(3, 3),), "dirac": (m.empty(2, 2, 3),), "sparse": (m.empty(3, 3), 0.5)}[name]
            with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of "
                                                   f"`nn.init.{name}_`"):
                getattr(m.nn.init, name)(*args)
