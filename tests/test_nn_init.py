"""nn.init and every layer's default initialisation, checked statistically
(bounds, mean, std) against PyTorch's formulas; deterministic initialisers
against torch exactly."""
import math

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.init as init


def stats(t):
    a = t.detach().numpy().astype(np.float64).ravel()
    return a, a.mean(), a.std()


def assert_uniform(t, lo, hi):
    a, mean, std = stats(t)
    n = a.size
    assert a.min() >= lo and a.max() <= hi, (a.min(), a.max(), lo, hi)
    width = hi - lo
    assert abs(mean - (lo + hi) / 2) < 5 * width / math.sqrt(12 * n)
    assert abs(std - width / math.sqrt(12)) < 0.03 * width / math.sqrt(12)
    assert a.min() < lo + 0.01 * width and a.max() > hi - 0.01 * width  # the whole range is used


def assert_normal(t, mean, std):
    a, m, s = stats(t)
    assert abs(m - mean) < 5 * std / math.sqrt(a.size)
    assert abs(s - std) < 0.03 * std


def test_returns_the_same_tensor_and_records_no_history():
    p = nn.Parameter(lucid.zeros(10, 20))
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.zeros_):
        assert fn(p) is p
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


def test_uniform_and_normal():
    assert_uniform(init.uniform_(lucid.zeros(300, 200), -0.5, 2.0), -0.5, 2.0)
    assert_normal(init.normal_(lucid.zeros(300, 200), 1.5, 0.3), 1.5, 0.3)
    assert_normal(init.normal_(lucid.zeros(300, 200, dtype=lucid.float64)), 0.0, 1.0)


@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier(shape, gain):
    t = torch.empty(shape)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(t)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    assert_uniform(init.xavier_uniform_(lucid.zeros(*shape), gain), -math.sqrt(3) * std, math.sqrt(3) * std)
    assert_normal(init.xavier_normal_(lucid.zeros(*shape), gain), 0.0, std)


@pytest.mark.parametrize("a,mode,nonlinearity", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                                 (0, "fan_out", "relu"), (0.2, "fan_in", "leaky_relu"),
                                                 (0, "fan_in", "tanh"), (0, "fan_out", "linear")])
@pytest.mark.parametrize("shape", [(300, 200), (64, 16, 5, 5)])
def test_kaiming(a, mode, nonlinearity, shape):
    t = torch.empty(shape)
    fan = torch.nn.init._calculate_correct_fan(t, mode)
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    assert_uniform(init.kaiming_uniform_(lucid.zeros(*shape), a, mode, nonlinearity), -bound, bound)
    assert_normal(init.kaiming_normal_(lucid.zeros(*shape), a, mode, nonlinearity), 0.0, std)


def _truncnorm_moments(mean, std, a, b):
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m = (pdf(alpha) - pdf(beta)) / z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - m * m
    return mean + std * m, std * math.sqrt(var)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04), (1.0, 2.0, 0.0, 5.0)])
def test_trunc_normal(mean, std, a, b):
    t = init.trunc_normal_(lucid.zeros(300, 200), mean, std, a, b)
    arr, m, s = stats(t)
    assert arr.min() >= a and arr.max() <= b
    em, es = _truncnorm_moments(mean, std, a, b)
    assert abs(m - em) < 5 * es / math.sqrt(arr.size)
    assert abs(s - es) < 0.03 * es
    # and it is the truncated normal, not just any distribution on [a, b]: quartiles
    ref = torch.nn.init.trunc_normal_(torch.empty(300, 200), mean, std, a, b).numpy()
    np.testing.assert_allclose(np.quantile(arr, [0.25, 0.5, 0.75]), np.quantile(ref, [0.25, 0.5, 0.75]),
                               atol=0.03 * std)


@pytest.mark.parametrize("shape,gain", [((20, 20), 1.0), ((10, 30), 2.0), ((30, 10), 1.0), ((8, 3, 2, 2), 0.5)])
def test_orthogonal(shape, gain):
    t = init.orthogonal_(lucid.zeros(*shape), gain).numpy().reshape(shape[0], -1)
    rows, cols = t.shape
    gram = t @ t.T if rows <= cols else t.T @ t
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(min(rows, cols)), atol=1e-5)


def test_deterministic_initialisers_match_torch():
    for shape in [(3, 4), (2, 3, 2)]:
        for fn, args in [("constant_", (0.7,)), ("zeros_", ()), ("ones_", ())]:
            lt = getattr(init, fn)(lucid.randn(*shape), *args)
            tt = getattr(torch.nn.init, fn)(torch.empty(shape), *args)
            np.testing.assert_array_equal(lt.numpy(), tt.numpy())
    np.testing.assert_array_equal(init.eye_(lucid.zeros(3, 5)).numpy(), torch.nn.init.eye_(torch.empty(3, 5)).numpy())
    for shape, groups in [((4, 4, 3, 3), 1), ((6, 2, 3), 2), ((4, 6, 1, 3, 3), 2)]:
        lt = init.dirac_(lucid.zeros(*shape), groups)
        tt = torch.nn.init.dirac_(torch.empty(shape), groups)
        np.testing.assert_array_equal(lt.numpy(), tt.numpy())


def test_calculate_gain_matches_torch():
    for nl, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                      ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert init.calculate_gain(nl, param) == pytest.approx(torch.nn.init.calculate_gain(nl, param))
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def test_init_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(lucid.zeros(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(lucid.zeros(3, 3), mode="fan_avg")
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(lucid.zeros(0, 3))


def test_seeded_initialisation_is_reproducible():
    lucid.manual_seed(5)
    a = nn.Linear(30, 20).weight.detach().numpy()
    lucid.manual_seed(5)
    b = nn.Linear(30, 20).weight.detach().numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, nn.Linear(30, 20).weight.detach().numpy())


# ------------------------------------------------------- layers' default inits
def test_linear_and_conv_defaults():
    # kaiming_uniform_(a=sqrt(5)) on the weight and U(+-1/sqrt(fan_in)) on the bias, like PyTorch.
    lin = nn.Linear(400, 300)
    assert_uniform(lin.weight, -1 / math.sqrt(400), 1 / math.sqrt(400))
    big_bias = nn.Linear(100, 20000)
    assert_uniform(big_bias.bias, -0.1, 0.1)
    conv = nn.Conv2d(32, 64, 5, groups=2)
    fan_in = 16 * 25
    assert_uniform(conv.weight, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
    conv1 = nn.Conv1d(8, 4000, 3)
    assert_uniform(conv1.bias, -1 / math.sqrt(24), 1 / math.sqrt(24))


def test_norm_embedding_attention_defaults():
    bn = nn.BatchNorm2d(5)
    for name, value in [("weight", 1), ("bias", 0), ("running_mean", 0), ("running_var", 1),
                        ("num_batches_tracked", 0)]:
        assert (getattr(bn, name).detach().numpy() == value).all(), name
    for m in (nn.LayerNorm(6), nn.GroupNorm(2, 6), nn.RMSNorm(6)):
        assert (m.weight.detach().numpy() == 1).all()
        if getattr(m, "bias", None) is not None:
            assert (m.bias.detach().numpy() == 0).all()
    emb = nn.Embedding(500, 300, padding_idx=3)
    w = emb.weight.detach().numpy()
    assert not w[3].any()
    assert_normal(lucid.tensor(np.delete(w, 3, axis=0)), 0.0, 1.0)
    mha = nn.MultiheadAttention(240, 4, add_bias_kv=True)
    bound = math.sqrt(6.0 / (240 + 720))
    assert_uniform(mha.in_proj_weight, -bound, bound)
    assert not mha.in_proj_bias.detach().numpy().any() and not mha.out_proj.bias.detach().numpy().any()
    assert_uniform(mha.out_proj.weight, -1 / math.sqrt(240), 1 / math.sqrt(240))
    assert np.abs(mha.bias_k.detach().numpy()).max() > 0  # xavier_normal_
    sep = nn.MultiheadAttention(240, 4, kdim=100, vdim=50)
    b = math.sqrt(6.0 / (100 + 240))
    assert_uniform(sep.k_proj_weight, -b, b)


def test_dtype_and_device_factory_kwargs():
    m = nn.Linear(3, 2, dtype=lucid.float64, device="cpu")
    assert m.weight.dtype == lucid.float64 and m.bias.dtype == lucid.float64
    c = nn.Conv2d(2, 2, 3, dtype=lucid.float64)
    assert c.weight.dtype == lucid.float64
    bn = nn.BatchNorm1d(3, dtype=lucid.float64)
    assert bn.running_mean.dtype == lucid.float64 and bn.num_batches_tracked.dtype == lucid.int64
