"""Weight and spectral normalization (nn.utils.weight_norm/spectral_norm
and their parametrizations) and nn.utils.parametrize, against PyTorch:
training losses, state_dict keys and values, parameter names, removal, and
the same training inside a fused step."""
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F
from lucid.compile import fused_step

KINDS = ["weight_norm", "parametrized_weight_norm", "spectral_norm", "parametrized_spectral_norm"]


def _start_vectors(m, module, kind):
    """Both power iterations start from the same unit vectors."""
    if kind == "spectral_norm":
        bufs = [module.weight_u, module.weight_v]
    else:
        p = module.parametrizations.weight[0]
        bufs = [p._u, p._v]
    for b in bufs:
        b.copy_(m.tensor(np.full(tuple(b.shape), 1 / np.sqrt(b.numel()))))


def _build(m, kind):
    rng = np.random.default_rng(0)
    lin, conv = m.nn.Linear(5, 4).double(), m.nn.ConvTranspose2d(3, 2, 3).double()
    with m.no_grad():
        for p in list(lin.parameters()) + list(conv.parameters()):
            p.copy_(m.tensor(rng.standard_normal(tuple(p.shape))))
    U = m.nn.utils
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's weight_norm is deprecated in favour of the parametrization
        if kind == "weight_norm":
            U.weight_norm(lin)
            U.weight_norm(conv, dim=None)
        elif kind == "parametrized_weight_norm":
            U.parametrizations.weight_norm(lin)
            U.parametrizations.weight_norm(conv, dim=1)
        else:
            f = U.spectral_norm if kind == "spectral_norm" else U.parametrizations.spectral_norm
            for mod in (f(lin), f(conv)):
                with m.no_grad():
                    _start_vectors(m, mod, kind)
    return lin, conv


def _train(m, kind):
    lin, conv = _build(m, kind)
    rng = np.random.default_rng(1)
    x, xc = m.tensor(rng.standard_normal((2, 5))), m.tensor(rng.standard_normal((1, 3, 4, 4)))
    opt = m.optim.SGD(list(lin.parameters()) + list(conv.parameters()), lr=0.1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = lin(x).pow(2).sum() + conv(xc).pow(2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    state = {**{k: v.detach().numpy() for k, v in lin.state_dict().items()},
             **{"conv." + k: v.detach().numpy() for k, v in conv.state_dict().items()}}
    return losses, state, [n for n, _ in lin.named_parameters()], type(lin).__name__


@pytest.mark.parametrize("kind", KINDS)
def test_training_and_state_dict_match_torch(kind):
    (want_loss, want_state, want_names, want_cls), (loss, state, names, cls) = _train(torch, kind), _train(lucid, kind)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-10)
    assert sorted(state) == sorted(want_state) and names == want_names and cls == want_cls
    for k in want_state:
        np.testing.assert_allclose(state[k], want_state[k], rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("kind", KINDS)
def test_a_state_dict_loads_into_a_fresh_module(kind):
    lin, conv = _build(lucid, kind)
    lin(lucid.randn(2, 5, dtype=lucid.float64))
    fresh, _ = _build(lucid, kind)
    with lucid.no_grad():
        for p in fresh.parameters():
            p.zero_()
    fresh.load_state_dict(lin.state_dict())
    lin.eval(), fresh.eval()
    x = lucid.randn(3, 5, dtype=lucid.float64)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), lin(x).detach().numpy())


def test_removal_leaves_the_computed_weight():
    U = lucid.nn.utils
    for apply, remove in [(U.weight_norm, U.remove_weight_norm), (U.spectral_norm, U.remove_spectral_norm)]:
        lin = lucid.nn.Linear(5, 4)
        apply(lin)
        lin.eval()
        x = lucid.randn(2, 5)
        before = lin(x).detach().numpy()
        remove(lin)
        assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"] and not lin._buffers
        np.testing.assert_allclose(lin(x).detach().numpy(), before, rtol=1e-6)
        with pytest.raises(ValueError, match="not found"):
            remove(lin)
    lin = U.parametrizations.weight_norm(lucid.nn.Linear(5, 4))
    x = lucid.randn(2, 5)
    before = lin(x).detach().numpy()
    U.parametrize.remove_parametrizations(lin, "weight")
    assert type(lin) is lucid.nn.Linear and not U.parametrize.is_parametrized(lin)
    np.testing.assert_allclose(lin(x).detach().numpy(), before, rtol=1e-6)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        U.weight_norm(U.weight_norm(lucid.nn.Linear(2, 2)))


def test_a_custom_parametrization_as_torch():
    class Symmetric:
        @staticmethod
        def make(m):
            class S(m.nn.Module):
                def forward(self, x):
                    return x.triu() + x.triu(1).transpose(-1, -2)

            return S()

    out = []
    for m in (torch, lucid):
        lin = m.nn.Linear(3, 3, bias=False).double()
        with m.no_grad():
            lin.weight.copy_(m.tensor(np.arange(9.0).reshape(3, 3)))
        m.nn.utils.parametrize.register_parametrization(lin, "weight", Symmetric.make(m))
        w = lin.weight
        lin(m.ones(2, 3, dtype=m.float64)).sum().backward()
        out.append((w.detach().numpy(), lin.parametrizations.weight.original.grad.numpy(),
                    sorted(lin.state_dict())))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])
    assert out[1][2] == out[0][2]


@pytest.mark.parametrize("kind", KINDS)
def test_fused_step_matches_eager(kind):
    U = lucid.nn.utils
    apply = {"weight_norm": U.weight_norm, "parametrized_weight_norm": U.parametrizations.weight_norm,
             "spectral_norm": U.spectral_norm, "parametrized_spectral_norm": U.parametrizations.spectral_norm}[kind]

    def train(fused):
        lucid.manual_seed(0)
        model = lucid.nn.Sequential(apply(lucid.nn.Linear(6, 8)), lucid.nn.ReLU(), apply(lucid.nn.Linear(8, 3)))
        opt = lucid.optim.Adam(model.parameters(), lr=0.01)
        step = fused_step(model, F.cross_entropy, opt) if fused else None
        rng = np.random.default_rng(1)
        losses = []
        for _ in range(4):
            x = lucid.tensor(rng.standard_normal((4, 6)).astype(np.float32))
            y = lucid.tensor(rng.integers(0, 3, 4))
            if fused:
                losses.append(float(step(x, y)))
            else:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                losses.append(float(loss))
        return losses, {k: v.numpy() for k, v in model.state_dict().items()}

    (eager_losses, eager), (fused_losses, fused) = train(False), train(True)
    assert eager_losses == fused_losses
    for k in eager:  # the power-iteration buffers too
        np.testing.assert_array_equal(fused[k], eager[k], err_msg=k)
