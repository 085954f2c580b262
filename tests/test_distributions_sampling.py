"""Sampling in lucid.distributions: the Gamma/Poisson/Binomial primitive
(statistics, edge values, dtypes, seeding, generators, tracing), the
reparameterisation gradients against PyTorch's formulas at the same draw,
and, for every distribution, sample shapes and sample statistics against
PyTorch's moments and CDFs (fixed seeds, within a few standard errors)."""
import math

import numpy as np
import pytest
import torch

import lucid

D = lucid.distributions
N = 40_000
Z = 5.0  # standard errors allowed


def T(a, dtype=lucid.float64, grad=False):
    t = lucid.tensor(np.asarray(a, dtype=np.float64)).to(dtype)
    return t.requires_grad_() if grad else t


def _assert_mean(samples, mean, var, what):
    """Sample means within Z standard errors of `mean` (samples along dim 0)."""
    samples, mean, var = (np.asarray(x, dtype=np.float64) for x in (samples, mean, var))
    se = np.sqrt(var / samples.shape[0])
    err = np.abs(samples.mean(0) - mean)
    assert np.all(err <= Z * se + 1e-12), f"{what}: mean {samples.mean(0)} vs {mean} (se {se})"


def _assert_variance(samples, var, what):
    """Sample variances within Z standard errors (estimated from the samples)."""
    samples = np.asarray(samples, dtype=np.float64)
    dev2 = (samples - samples.mean(0)) ** 2
    se = dev2.std(0) / np.sqrt(samples.shape[0])
    err = np.abs(dev2.mean(0) - var)
    assert np.all(err <= Z * se + 1e-12), f"{what}: variance {dev2.mean(0)} vs {var} (se {se})"


# ---------------------------------------------------------------- primitive
@pytest.mark.parametrize("alpha", [0.01, 0.3, 1.0, 2.5, 30.0, 1000.0])
def test_standard_gamma_moments(alpha):
    lucid.manual_seed(1)
    x = lucid._standard_gamma(T(np.full(N, alpha))).numpy()
    assert np.all(x > 0)
    _assert_mean(x, alpha, alpha, f"Gamma({alpha})")
    _assert_variance(x, alpha, f"Gamma({alpha})")


@pytest.mark.parametrize("dtype", [lucid.float16, lucid.bfloat16, lucid.float32, lucid.float64])
def test_standard_gamma_dtypes_and_the_smallest_value(dtype):
    lucid.manual_seed(2)
    x = lucid._standard_gamma(T(np.full(4000, 1e-3), dtype))
    assert x.dtype == dtype
    tiny = float(lucid.finfo(dtype).tiny)
    assert float(x.min()) >= tiny  # draws below the smallest normal are clamped to it, as PyTorch's
    assert float(lucid._standard_gamma(T([0.0], dtype))[0]) == tiny  # PyTorch's value for a zero concentration
    if dtype in (lucid.float32, lucid.float64):
        want = torch._standard_gamma(torch.zeros(1, dtype=getattr(torch, str(dtype).split(".")[-1])))
        assert float(want[0]) == tiny


def test_draws_are_reproducible_and_independent_of_the_thread_split():
    alpha = T(np.linspace(0.1, 5, 50_000))
    lucid.manual_seed(7)
    full = lucid._standard_gamma(alpha).numpy()
    lucid.manual_seed(7)
    head = lucid._standard_gamma(alpha[:100]).numpy()  # one thread's worth
    np.testing.assert_array_equal(head, full[:100])
    g = lucid.Generator().manual_seed(3)
    a = lucid._standard_gamma(alpha[:10], generator=g).numpy()
    b = lucid._standard_gamma(alpha[:10], generator=lucid.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, full[:10])


@pytest.mark.parametrize("rate", [0.0, 0.4, 3.0, 9.99, 10.0, 57.0, 2000.0])
def test_poisson_moments(rate):
    lucid.manual_seed(3)
    x = lucid.poisson(T(np.full(N, rate))).numpy()
    assert np.all(x == np.round(x)) and np.all(x >= 0)
    if rate == 0:
        assert not x.any()
        return
    _assert_mean(x, rate, rate, f"Poisson({rate})")
    _assert_variance(x, rate, f"Poisson({rate})")


@pytest.mark.parametrize("count,prob", [(10, 0.3), (100, 0.05), (100, 0.5), (40, 0.9), (1000, 0.97), (7, 0.999)])
def test_binomial_moments(count, prob):
    lucid.manual_seed(4)
    x = lucid.binomial(T(np.full(N, count)), T(np.full(N, prob))).numpy()
    assert np.all(x == np.round(x)) and np.all((x >= 0) & (x <= count))
    _assert_mean(x, count * prob, count * prob * (1 - prob), f"Binomial({count}, {prob})")
    _assert_variance(x, count * prob * (1 - prob), f"Binomial({count}, {prob})")


def test_binomial_and_poisson_edges_match_torch():
    count, prob = [0.0, 5.0, 5.0, 3.0], [0.5, 0.0, 1.0, float("nan")]
    want = torch.binomial(torch.tensor(count), torch.tensor(prob))
    got = lucid.binomial(lucid.tensor(count), lucid.tensor(prob))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for m in (torch, lucid):
        with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
            m.poisson(m.tensor([1.0, -1.0]))
    with pytest.raises(TypeError, match="floating-point"):
        lucid.poisson(lucid.tensor([1, 2]))


def test_gamma_draws_trace_into_a_compiled_function():
    f = lucid.compile(lambda a: lucid._standard_gamma(a) * 2)
    a = T(np.full(N, 3.0), lucid.float32)
    x = f(a).numpy()
    _assert_mean(x / 2, 3.0, 3.0, "compiled Gamma(3)")
    assert not np.array_equal(x, f(a).numpy())  # a fresh key every call


# ------------------------------------------------- reparameterisation grads
GRID_ALPHA = np.array([0.05, 0.4, 0.9, 1.0, 2.0, 5.0, 7.9, 8.1, 20.0, 150.0])
GRID_X = np.array([1e-4, 0.01, 0.3, 0.79, 0.81, 1.5, 4.0, 7.5, 9.0, 18.0, 21.0, 140.0, 160.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_standard_gamma_grad_matches_torch(dtype):
    a, x = np.meshgrid(GRID_ALPHA, GRID_X)
    want = torch._standard_gamma_grad(torch.tensor(a).to(getattr(torch, dtype)), torch.tensor(x).to(getattr(torch, dtype)))
    got = lucid._standard_gamma_grad(T(a, getattr(lucid, dtype)), T(x, getattr(lucid, dtype)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12 if dtype == "float64" else 1e-6, atol=1e-30)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dirichlet_grad_matches_torch(dtype):
    x = np.array([0.001, 0.05, 0.2, 0.45, 0.5, 0.55, 0.8, 0.95, 0.999])
    alpha = np.array([0.3, 1.0, 3.0, 7.0, 20.0])
    total = np.array([0.5, 2.0, 9.0, 15.0, 40.0])
    X, Al, Tot = np.meshgrid(x, alpha, total, indexing="ij")
    Tot = Tot + Al  # total > alpha
    tdt, ldt = getattr(torch, dtype), getattr(lucid, dtype)
    want = torch._dirichlet_grad(*(torch.tensor(v).to(tdt) for v in (X, Al, Tot)))
    got = lucid._dirichlet_grad(*(T(v, ldt) for v in (X, Al, Tot)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12 if dtype == "float64" else 2e-5, atol=1e-30)


def test_reparameterisation_grads_are_not_differentiable():
    a, x = T([2.0], grad=True), T([1.0])
    with pytest.raises(NotImplementedError, match="_standard_gamma_grad"):
        lucid._standard_gamma_grad(a, x).sum().backward()


def test_gamma_rsample_gradient_is_pytorchs_at_the_same_draw():
    conc, rate = T([0.3, 1.0, 4.0, 30.0], grad=True), T([0.5, 2.0, 1.0, 3.0], grad=True)
    lucid.manual_seed(5)
    x = D.Gamma(conc, rate).rsample((3,))
    w = T(np.random.default_rng(0).standard_normal((3, 4)))
    (x * w).sum().backward()
    tc, tr, tx, tw = (torch.tensor(v.detach().numpy()) for v in (conc, rate, x, w))
    standard = tx * tr  # the Gamma(conc, 1) draw
    want_conc = (tw * torch._standard_gamma_grad(tc.expand(3, 4), standard) / tr).sum(0)
    want_rate = (-tw * tx / tr).sum(0)
    np.testing.assert_allclose(conc.grad.numpy(), want_conc.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rate.grad.numpy(), want_rate.numpy(), rtol=1e-12)


@pytest.mark.parametrize("kind", ["Dirichlet", "Beta"])
def test_dirichlet_and_beta_rsample_gradients_are_pytorchs_at_the_same_draw(kind):
    from torch.distributions.dirichlet import _Dirichlet_backward

    rng = np.random.default_rng(1)
    lucid.manual_seed(6)
    if kind == "Dirichlet":
        conc = T([[0.5, 2.0, 3.0], [4.0, 0.2, 1.0]], grad=True)
        x = D.Dirichlet(conc).rsample((2,))
        w = rng.standard_normal(tuple(x.shape))
        (x * T(w)).sum().backward()
        tc = torch.tensor(conc.detach().numpy()).expand(2, 2, 3)
        want = _Dirichlet_backward(torch.tensor(x.detach().numpy()), tc, torch.tensor(w)).sum(0)
        np.testing.assert_allclose(conc.grad.numpy(), want.numpy(), rtol=1e-12)
    else:
        c1, c0 = T([0.5, 3.0], grad=True), T([2.0, 0.7], grad=True)
        x = D.Beta(c1, c0).rsample((4,))
        w = rng.standard_normal(tuple(x.shape))
        (x * T(w)).sum().backward()
        tx = torch.tensor(x.detach().numpy())
        both = torch.stack([tx, 1 - tx], -1)
        tc = torch.stack([torch.tensor(c1.detach().numpy()), torch.tensor(c0.detach().numpy())], -1).expand(4, 2, 2)
        grad_out = torch.stack([torch.tensor(w), torch.zeros(4, 2, dtype=torch.float64)], -1)
        want = _Dirichlet_backward(both, tc, grad_out).sum(0)
        np.testing.assert_allclose(c1.grad.numpy(), want[:, 0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(c0.grad.numpy(), want[:, 1].numpy(), rtol=1e-12)


# ------------------------------------------------------ every distribution
def _dists(m):
    """(name, distribution, statistic) where statistic is "moments", "cdf" or "none"."""
    Dm = m.distributions
    t = (lambda a: m.tensor(np.asarray(a, dtype=np.float64)))
    loc, pos = t([-1.0, 0.5]), t([0.7, 2.0])
    return [
        ("Normal", Dm.Normal(loc, pos), "cdf"), ("Laplace", Dm.Laplace(loc, pos), "cdf"),
        ("Cauchy", Dm.Cauchy(loc, pos), "cdf"), ("Uniform", Dm.Uniform(loc, loc + pos), "cdf"),
        ("Exponential", Dm.Exponential(pos), "cdf"), ("Gamma", Dm.Gamma(pos, t([1.5, 0.5])), "cdf"),
        ("Chi2", Dm.Chi2(t([1.0, 5.0])), "cdf"), ("Beta", Dm.Beta(pos, t([0.4, 3.0])), "moments"),
        ("Dirichlet", Dm.Dirichlet(t([[0.4, 1.0, 3.0], [2.0, 2.0, 0.1]])), "moments"),
        ("StudentT", Dm.StudentT(t([5.0, 8.0]), loc, pos), "moments"),
        ("LogNormal", Dm.LogNormal(loc, t([0.3, 0.5])), "cdf"), ("HalfNormal", Dm.HalfNormal(pos), "cdf"),
        ("HalfCauchy", Dm.HalfCauchy(pos), "cdf"), ("Gumbel", Dm.Gumbel(loc, pos), "moments"),
        ("Weibull", Dm.Weibull(pos, t([1.5, 3.0])), "moments"), ("Pareto", Dm.Pareto(pos, t([5.0, 9.0])), "moments"),
        ("Kumaraswamy", Dm.Kumaraswamy(pos, t([2.0, 0.5])), "moments"),
        ("FisherSnedecor", Dm.FisherSnedecor(t([3.0, 10.0]), t([12.0, 20.0])), "moments"),
        ("InverseGamma", Dm.InverseGamma(t([6.0, 9.0]), pos), "moments"),
        ("GeneralizedPareto", Dm.GeneralizedPareto(loc, pos, t([0.1, -0.3])), "cdf"),
        ("VonMises", Dm.VonMises(loc, pos), "none"),
        ("ContinuousBernoulli", Dm.ContinuousBernoulli(t([0.2, 0.8])), "cdf"),
        ("RelaxedBernoulli", Dm.RelaxedBernoulli(t(0.5), probs=t([0.2, 0.7])), "none"),
        ("RelaxedOneHotCategorical", Dm.RelaxedOneHotCategorical(t(0.5), probs=t([0.2, 0.3, 0.5])), "none"),
        ("LogisticNormal", Dm.LogisticNormal(loc, pos), "none"),
        ("Bernoulli", Dm.Bernoulli(t([0.1, 0.7])), "moments"), ("Geometric", Dm.Geometric(t([0.2, 0.7])), "moments"),
        ("Poisson", Dm.Poisson(t([0.5, 30.0])), "moments"), ("Binomial", Dm.Binomial(t([10.0, 50.0]), t([0.3, 0.9])), "moments"),
        ("NegativeBinomial", Dm.NegativeBinomial(t([3.0, 10.0]), t([0.3, 0.6])), "moments"),
        ("Categorical", Dm.Categorical(t([0.2, 0.3, 0.5])), "none"),
        ("OneHotCategorical", Dm.OneHotCategorical(t([0.2, 0.3, 0.5])), "moments"),
        ("OneHotCategoricalStraightThrough", Dm.OneHotCategoricalStraightThrough(t([0.2, 0.3, 0.5])), "moments"),
        ("Multinomial", Dm.Multinomial(7, t([0.2, 0.3, 0.5])), "moments"),
        ("MultivariateNormal", Dm.MultivariateNormal(t([1.0, -1.0]), t([[2.0, 0.5], [0.5, 1.0]])), "moments"),
        ("LowRankMultivariateNormal", Dm.LowRankMultivariateNormal(t([1.0, -1.0]), t([[1.0], [0.5]]), pos), "moments"),
        ("MixtureSameFamily", Dm.MixtureSameFamily(Dm.Categorical(t([0.3, 0.7])), Dm.Normal(loc, pos)), "cdf"),
        ("Independent", Dm.Independent(Dm.Normal(loc, pos), 1), "moments"),
    ]


NAMES = [name for name, _, _ in _dists(torch)]


@pytest.mark.parametrize("name", NAMES)
def test_sample_shapes_and_gradients(name):
    d = dict((n, dist) for n, dist, _ in _dists(lucid))[name]
    s = d.sample((3, 2))
    assert tuple(s.shape) == (3, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert not s.requires_grad
    assert d.support.check(s).all()
    if d.has_rsample:
        assert tuple(d.rsample((4,)).shape) == (4,) + tuple(d.batch_shape) + tuple(d.event_shape)
    want = dict((n, dist) for n, dist, _ in _dists(torch))[name]
    assert s.dtype == getattr(lucid, str(want.sample().dtype).split(".")[-1])


@pytest.mark.parametrize("name", NAMES)
def test_sample_statistics_match_torch(name):
    (want, kind), d = [(dist, k) for n, dist, k in _dists(torch) if n == name][0], \
        [dist for n, dist, _ in _dists(lucid) if n == name][0]
    lucid.manual_seed(11)
    s = d.sample((N,)).numpy().astype(np.float64)
    if kind == "cdf":
        # The empirical CDF at the distribution's quartiles.
        for p in (0.1, 0.25, 0.5, 0.75, 0.9):
            q = _quantile(want, p)
            frac = (s <= q.numpy()).mean(0)
            assert np.all(np.abs(frac - p) <= Z * math.sqrt(p * (1 - p) / N)), f"{name}: P(X <= q{p}) = {frac}"
    elif kind == "moments":
        _assert_mean(s, want.mean.numpy(), want.variance.numpy(), name)
        _assert_variance(s, want.variance.numpy(), name)
    else:
        # No closed-form moments: the same statistics as PyTorch's own draws.
        torch.manual_seed(11)
        ref = want.sample((N,)).numpy().astype(np.float64)
        se = np.sqrt(ref.var(0) / N + s.var(0) / N)
        assert np.all(np.abs(s.mean(0) - ref.mean(0)) <= Z * se + 1e-12), name


def _quantile(d, p):
    """The p-quantile, by bisection on PyTorch's cdf where it has no icdf."""
    try:
        return d.icdf(torch.full(tuple(d.batch_shape), p, dtype=torch.float64))
    except NotImplementedError:
        pass
    lo, hi = torch.full(tuple(d.batch_shape), -50.0, dtype=torch.float64), torch.full(tuple(d.batch_shape), 50.0,
                                                                                    dtype=torch.float64)
    if isinstance(d.support, type(torch.distributions.constraints.nonnegative)) or \
            type(d.support).__name__ in ("_GreaterThan", "_GreaterThanEq", "_Interval"):
        lo = torch.zeros_like(lo) + 1e-12
        if type(d.support).__name__ == "_Interval":
            hi = torch.ones_like(hi) - 1e-12
    for _ in range(200):
        mid = (lo + hi) / 2
        below = d.cdf(mid) < p
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
    return (lo + hi) / 2


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Gamma", "Beta", "Dirichlet", "StudentT", "LogNormal",
                                  "Gumbel", "Weibull", "Kumaraswamy", "FisherSnedecor", "InverseGamma", "Pareto",
                                  "Chi2", "ContinuousBernoulli", "MultivariateNormal", "LowRankMultivariateNormal"])
def test_rsample_gradients_are_unbiased(name):
    """d/dparams of E[sum x^2] estimated from rsample equals the derivative of
    PyTorch's closed form (mean^2 + variance)."""
    def make(m, grad):
        dists = {n: dist for n, dist, _ in _dists(m)}
        d = dists[name]
        names = [k for k in d.arg_constraints if k in d.__dict__] or list(d.arg_constraints)
        params = []
        for k in names:
            v = getattr(d, k)
            if isinstance(v, m.Tensor) and v.dtype.is_floating_point:
                params.append((k, v.detach().clone().requires_grad_(grad)))
        kwargs = {k: v for k, v in params}
        return _rebuild(m, name, d, kwargs), [v for _, v in params]

    dt, tparams = make(torch, True)
    second = (dt.mean.pow(2) + dt.variance).sum()
    want = torch.autograd.grad(second, tparams, allow_unused=True)
    dl, lparams = make(lucid, True)
    lucid.manual_seed(12)
    x = dl.rsample((N,))
    # retain_graph: parameters derived in __init__ (Weibull's reciprocal...) are reused by the next rsample
    got = lucid.autograd.grad((x.pow(2)).sum() / N, lparams, allow_unused=True, retain_graph=True)
    # per-draw gradients give the standard error
    for w, g, p in zip(want, got, lparams):
        if w is None:
            continue
        assert g is not None, name
        per_draw = _per_draw_grad_std(dl, p, name)
        assert np.all(np.abs(g.numpy() - w.numpy()) <= Z * per_draw / math.sqrt(N) + 1e-9), \
            f"{name}: {g.numpy()} vs {w.numpy()}"


def _rebuild(m, name, d, kwargs):
    Dm = m.distributions
    if name == "Dirichlet":
        return Dm.Dirichlet(kwargs["concentration"])
    if name == "MultivariateNormal":
        return Dm.MultivariateNormal(kwargs["loc"], covariance_matrix=kwargs["covariance_matrix"])
    if name == "ContinuousBernoulli":
        return Dm.ContinuousBernoulli(kwargs["probs"])
    return type(d)(**kwargs)


def _per_draw_grad_std(d, p, name):
    """The standard deviation over draws of d(sum x^2)/dp, from 2000 single draws."""
    rows = []
    lucid.manual_seed(13)
    x = d.rsample((2000,))
    flat = (x.pow(2)).reshape(2000, -1).sum(-1)
    for i in range(200):
        (g,) = lucid.autograd.grad(flat[i], [p], retain_graph=True)
        rows.append(g.numpy())
    return np.std(np.stack(rows), axis=0) * 1.5 + 1e-6
