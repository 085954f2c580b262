"""lucid.distributions transforms, constraints, biject_to/transform_to and
kl_divergence against torch.distributions (float64): forward, inverse and
log|det J| values and gradients, shapes, domains, constraint checks, every
KL pair PyTorch registers, validation messages."""
import numpy as np
import pytest
import torch

import lucid

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3))
SQUARE = RNG.standard_normal((2, 3, 3))


def T(m, a, grad=False):
    t = m.tensor(np.asarray(a, dtype=np.float64))
    return t.requires_grad_() if grad else t


def _transforms(m):
    tr = m.distributions.transforms
    return {
        "Exp": (tr.ExpTransform(), X),
        "Affine": (tr.AffineTransform(T(m, [1.0, -2.0, 0.5]), T(m, [2.0, -0.5, 3.0])), X),
        "Affine-number": (tr.AffineTransform(1.5, -2.0), X),
        "Affine-event": (tr.AffineTransform(T(m, [1.0, -2.0, 0.5]), T(m, [2.0, -0.5, 3.0]), event_dim=1), X),
        "Sigmoid": (tr.SigmoidTransform(), X),
        "Tanh": (tr.TanhTransform(), X),
        "Softplus": (tr.SoftplusTransform(), X),
        "Power": (tr.PowerTransform(T(m, [0.5, 2.0, 3.0])), np.abs(X) + 0.1),
        "Abs": (tr.AbsTransform(), X),
        "Softmax": (tr.SoftmaxTransform(), X),
        "StickBreaking": (tr.StickBreakingTransform(), X),
        "LowerCholesky": (tr.LowerCholeskyTransform(), SQUARE),
        "PositiveDefinite": (tr.PositiveDefiniteTransform(), SQUARE),
        "CorrCholesky": (tr.CorrCholeskyTransform(), X),
        "Compose": (tr.ComposeTransform([tr.TanhTransform(), tr.AffineTransform(1.0, 2.0), tr.ExpTransform()]), X),
        "Compose-event": (tr.ComposeTransform([tr.StickBreakingTransform(), tr.AffineTransform(0.0, 3.0)]), X),
        "Independent": (tr.IndependentTransform(tr.ExpTransform(), 1), X),
        "Reshape": (tr.ReshapeTransform((3,), (3, 1)), X),
        "Cat": (tr.CatTransform([tr.ExpTransform(), tr.SigmoidTransform()], dim=-1, lengths=[1, 2]), X),
        "Stack": (tr.StackTransform([tr.ExpTransform(), tr.TanhTransform(), tr.AffineTransform(1.0, 3.0)], dim=-1), X),
        "Inverse-Exp": (tr.ExpTransform().inv, np.abs(X) + 0.1),
        "Inverse-Sigmoid": (tr.SigmoidTransform().inv, 1 / (1 + np.exp(-X))),
        "CDF-Normal": (tr.CumulativeDistributionTransform(m.distributions.Normal(T(m, [0.0, 1.0, -1.0]), T(m, [1.0, 2.0, 0.5]))), X),
        "identity": (tr.identity_transform, X),
    }


NAMES = sorted(_transforms(torch))


def _apply(m, name, grad=False):
    t, x0 = _transforms(m)[name]
    x = T(m, x0, grad)
    y = t(x)
    out = {"y": y, "x_again": t.inv(y)}
    try:
        out["ladj"] = t.log_abs_det_jacobian(x, y)
    except NotImplementedError:
        out["ladj"] = NotImplementedError
    return t, x, out


@pytest.mark.parametrize("name", NAMES)
def test_transform_values_match_torch(name):
    tt, _, want = _apply(torch, name)
    tl, _, got = _apply(lucid, name)
    for k in want:
        if want[k] is NotImplementedError:
            assert got[k] is NotImplementedError, (name, k)
            continue
        assert tuple(got[k].shape) == tuple(want[k].shape), (name, k)
        np.testing.assert_allclose(got[k].detach().numpy(), want[k].detach().numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name}.{k}")
    assert tl.bijective == tt.bijective
    assert repr(tl.domain) == repr(tt.domain) and repr(tl.codomain) == repr(tt.codomain)
    shape = (4, 2, 3) if name not in ("LowerCholesky", "PositiveDefinite") else (4, 3, 3)
    assert tuple(tl.forward_shape(shape)) == tuple(tt.forward_shape(shape))
    try:
        want_sign = tt.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            tl.sign
    else:
        got_sign = tl.sign
        np.testing.assert_array_equal(np.asarray(getattr(got_sign, "numpy", lambda: got_sign)()),
                                      np.asarray(getattr(want_sign, "numpy", lambda: want_sign)()))


@pytest.mark.parametrize("name", NAMES)
def test_transform_gradients_match_torch(name):
    grads = []
    for m in (torch, lucid):
        _, x, out = _apply(m, name, grad=True)
        loss = out["y"].sum() + (out["ladj"].sum() if out["ladj"] is not NotImplementedError else 0)
        grads.append(m.autograd.grad(loss, [x])[0].numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-9, atol=1e-12)


def test_cached_inverse_returns_the_input():
    t = lucid.distributions.transforms.AbsTransform(cache_size=1)
    x = T(lucid, X)
    assert t.inv(t(x)) is x
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        lucid.distributions.transforms.ExpTransform(cache_size=2)


def test_transform_equality_as_torch():
    tr = lucid.distributions.transforms
    assert tr.ExpTransform() == tr.ExpTransform() and tr.ExpTransform().inv == tr.ExpTransform().inv
    assert tr.AffineTransform(1.0, 2.0) == tr.AffineTransform(1.0, 2.0) != tr.AffineTransform(1.0, 3.0)
    assert tr.ComposeTransform([tr.ExpTransform()]) == tr.ComposeTransform([tr.ExpTransform()])
    assert tr.ExpTransform().inv.inv == tr.ExpTransform()


# ------------------------------------------------------------- constraints
def _constraints(m):
    c = m.distributions.constraints
    return [c.real, c.boolean, c.positive, c.nonnegative, c.unit_interval, c.simplex, c.real_vector, c.one_hot,
            c.nonnegative_integer, c.positive_integer, c.lower_triangular, c.lower_cholesky, c.corr_cholesky,
            c.square, c.symmetric, c.positive_definite, c.positive_semidefinite, c.greater_than(0.5),
            c.greater_than_eq(0.5), c.less_than(0.5), c.interval(-0.5, 0.5), c.half_open_interval(-0.5, 0.5),
            c.integer_interval(0, 2), c.multinomial(3), c.independent(c.positive, 1),
            c.cat([c.positive, c.real], dim=-1, lengths=[1, 2]), c.stack([c.positive, c.real, c.unit_interval], -1)]


VALUES = [np.array([[0.0, 1.0, 2.0], [0.5, -0.5, 1.0]]), np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]),
          np.array([[[1.0, 0, 0], [0.5, 2, 0], [0, 1, 1]], [[1.0, 2, 0], [2, 1, 0], [0, 0, 1]]]),
          np.array([[[1.0, 0, 0], [0.6, 0.8, 0], [0, 0, 1]], [[2.0, 0.5, 0], [0.5, 1, 0], [0, 0, -1]]])]


@pytest.mark.parametrize("i", range(len(_constraints(torch))))
def test_constraints_match_torch(i):
    ct, cl = _constraints(torch)[i], _constraints(lucid)[i]
    assert repr(cl) == repr(ct) and cl.event_dim == ct.event_dim and cl.is_discrete == ct.is_discrete
    for v in VALUES:
        if v.ndim < ct.event_dim:
            continue
        try:
            want = ct.check(torch.tensor(v))
        except (RuntimeError, IndexError) as e:  # a check that does not apply to this shape
            with pytest.raises(type(e)):
                cl.check(lucid.tensor(v))
            continue
        np.testing.assert_array_equal(cl.check(lucid.tensor(v)).numpy(), want.numpy(), err_msg=repr(ct))


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("i", range(len(_constraints(torch))))
def test_constraint_registries_match_torch(registry, i):
    ct, cl = _constraints(torch)[i], _constraints(lucid)[i]
    try:
        want = getattr(torch.distributions, registry)(ct)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match=str(e).split(" constraints")[0].replace("(", r"\(")):
            getattr(lucid.distributions, registry)(cl)
        return
    got = getattr(lucid.distributions, registry)(cl)
    assert repr(got).replace("lucid.", "torch.") == repr(want)
    shape = {2: (2, 3, 3), 1: (2, 3), 0: (2, 3)}[want.domain.event_dim]
    if type(want).__name__ == "CorrCholeskyTransform":
        shape = (2, 3)
    x = RNG.standard_normal(shape)
    np.testing.assert_allclose(got(lucid.tensor(x)).numpy(), want(torch.tensor(x)).numpy(), rtol=1e-10, atol=1e-12)
    assert bool(cl.check(got(lucid.tensor(x))).all())


# ---------------------------------------------------------------------- KL
def _kl_dists(m):
    """Instances for every distribution type in a registered KL pair, batch (2,)."""
    Dm, t = m.distributions, (lambda a: T(m, a))
    pos, loc = t([0.7, 2.5]), t([-0.5, 1.0])
    return {
        "Bernoulli": [Dm.Bernoulli(t([0.3, 0.8])), Dm.Bernoulli(t([0.6, 0.1]))],
        "Beta": [Dm.Beta(pos, t([1.5, 0.6])), Dm.Beta(t([2.0, 0.4]), pos)],
        "Binomial": [Dm.Binomial(t([5.0, 7.0]), t([0.3, 0.8])), Dm.Binomial(t([5.0, 4.0]), t([0.6, 0.1]))],
        "Categorical": [Dm.Categorical(t([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]])), Dm.Categorical(t([[0.1, 0.1, 0.8], [0.3, 0.0, 0.7]]))],
        "ContinuousBernoulli": [Dm.ContinuousBernoulli(t([0.3, 0.8])), Dm.ContinuousBernoulli(t([0.6, 0.5]))],
        "Dirichlet": [Dm.Dirichlet(t([[0.5, 2.0], [1.0, 3.0]])), Dm.Dirichlet(t([[1.5, 0.2], [2.0, 2.0]]))],
        "Exponential": [Dm.Exponential(pos), Dm.Exponential(t([1.5, 0.3]))],
        "Gamma": [Dm.Gamma(pos, t([1.5, 0.3])), Dm.Gamma(t([2.0, 0.4]), pos)],
        "Gumbel": [Dm.Gumbel(loc, pos), Dm.Gumbel(t([0.5, 0.0]), t([1.5, 0.3]))],
        "Geometric": [Dm.Geometric(t([0.3, 0.8])), Dm.Geometric(t([0.6, 0.1]))],
        "HalfNormal": [Dm.HalfNormal(pos), Dm.HalfNormal(t([1.5, 0.3]))],
        "Laplace": [Dm.Laplace(loc, pos), Dm.Laplace(t([0.5, 0.0]), t([1.5, 0.3]))],
        "LowRankMultivariateNormal": [Dm.LowRankMultivariateNormal(t([[1.0, 0.0, 2.0]] * 2), t(np.ones((2, 3, 2)) * 0.3 + np.eye(3, 2)), t([[1.0, 2.0, 0.5]] * 2)),
                                      Dm.LowRankMultivariateNormal(t([0.5, 1.0, 0.0]), t(np.eye(3, 1)), t([0.5, 1.0, 1.5]))],
        "MultivariateNormal": [Dm.MultivariateNormal(t([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]), t(np.eye(3) * 2 + 0.5)),
                               Dm.MultivariateNormal(t([0.5, 1.0, 0.0]), scale_tril=t(np.tril(np.ones((3, 3))) * 0.7))],
        "Normal": [Dm.Normal(loc, pos), Dm.Normal(t([0.5, 0.0]), t([1.5, 0.3]))],
        "OneHotCategorical": [Dm.OneHotCategorical(t([[0.2, 0.8], [0.5, 0.5]])), Dm.OneHotCategorical(t([[0.1, 0.9], [0.3, 0.7]]))],
        "Pareto": [Dm.Pareto(pos, t([2.5, 3.5])), Dm.Pareto(t([0.5, 3.0]), t([1.5, 0.8]))],
        "Poisson": [Dm.Poisson(pos), Dm.Poisson(t([1.5, 0.3]))],
        "TransformedDistribution": [Dm.LogNormal(loc, pos), Dm.LogNormal(t([0.5, 0.0]), t([1.5, 0.3]))],
        "Uniform": [Dm.Uniform(t([0.1, -1.0]), t([0.6, 2.0])), Dm.Uniform(t([0.0, -2.0]), t([0.9, 3.0]))],
        "Independent": [Dm.Independent(Dm.Normal(t([[0.0, 1.0]]), t([[1.0, 2.0]])), 1),
                        Dm.Independent(Dm.Normal(t([[1.0, 1.0]]), t([[3.0, 0.5]])), 1)],
        "Cauchy": [Dm.Cauchy(loc, pos), Dm.Cauchy(t([0.5, 0.0]), t([1.5, 0.3]))],
        "ExponentialFamily": [Dm.Exponential(pos), Dm.Exponential(t([1.5, 0.3]))],
    }


PAIRS = sorted((p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY)


def test_the_same_kl_pairs_are_registered():
    got = sorted((p.__name__, q.__name__) for p, q in lucid.distributions.kl._KL_REGISTRY)
    assert got == PAIRS


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_matches_torch(pair):
    out = []
    for m in (torch, lucid):
        dists = _kl_dists(m)
        results = []
        for p in dists[pair[0]]:
            for q in dists[pair[1]]:
                try:
                    results.append(m.distributions.kl_divergence(p, q).numpy())
                except NotImplementedError:
                    results.append("NotImplementedError")
        out.append(results)
    for w, g in zip(*out):
        if isinstance(w, str):
            assert g == w, pair
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=str(pair))


def test_kl_of_an_unregistered_pair_and_gradients():
    D = lucid.distributions
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type Binomial"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Binomial(3, lucid.tensor(0.5)))
    grads = []
    for m in (torch, lucid):
        loc, cov = T(m, [1.0, -1.0], True), T(m, [[2.0, 0.3], [0.3, 1.0]], True)
        p = m.distributions.MultivariateNormal(loc, cov)
        q = m.distributions.MultivariateNormal(T(m, [0.0, 0.0]), scale_tril=T(m, [[1.0, 0.0], [0.5, 2.0]]))
        grads.append([g.numpy() for g in m.autograd.grad(m.distributions.kl_divergence(p, q), [loc, cov])])
    for w, g in zip(*grads):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_register_kl_for_a_subclass_wins():
    D = lucid.distributions

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return lucid.tensor(42.0)

    try:
        assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
        assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 0.0
    finally:
        del D.kl._KL_REGISTRY[MyNormal, D.Normal]
        D.kl._KL_MEMOIZE.clear()


# -------------------------------------------------------------- validation
@pytest.mark.parametrize("case", range(12))
def test_invalid_parameters_and_values_raise_torchs_errors(case):
    def call(m):
        Dm, t = m.distributions, (lambda a: T(m, a))
        return [lambda: Dm.Gamma(t([1.0, -1.0]), 1.0),
                lambda: Dm.Beta(t([0.5]), t([0.0])),
                lambda: Dm.Dirichlet(t([1.0, -2.0])),
                lambda: Dm.Dirichlet(t(2.0)),
                lambda: Dm.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])),
                lambda: Dm.MultivariateNormal(t([0.0, 0.0])),
                lambda: Dm.Poisson(t([1.0])).log_prob(t([0.5])),
                lambda: Dm.Binomial(t([3.0]), t([0.5])).log_prob(t([4.0])),
                lambda: Dm.Geometric(t([0.0])),
                lambda: Dm.Dirichlet(t([1.0, 2.0])).log_prob(t([0.5, 0.3, 0.2])),
                lambda: Dm.Multinomial(3, t([0.2, 0.8])).log_prob(t([4.0, 0.0])),
                lambda: Dm.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.0, 1.0]]), t([1.0, 1.0]))][case]()

    errors = []
    for m in (torch, lucid):
        with pytest.raises(Exception) as info:
            call(m)
        errors.append((type(info.value).__name__, str(info.value).replace("torch.", "lucid.")))
    assert errors[1] == errors[0]


@pytest.mark.parametrize("family", ["Gamma", "Beta", "Normal", "Dirichlet", "Poisson", "ContinuousBernoulli"])
def test_bregman_entropy_and_kl_of_exponential_families_match_torch(family):
    """ExponentialFamily's generic entropy and KL (autograd through the log normalizer)."""
    out = []
    for m in (torch, lucid):
        dists = _kl_dists(m)[family]
        fam = m.distributions.ExponentialFamily
        kl = m.distributions.kl._kl_expfamily_expfamily(dists[0], dists[1])
        try:
            entropy = fam.entropy(dists[0]).detach().numpy()
        except NotImplementedError:  # no _mean_carrier_measure (Beta, Dirichlet, Poisson)
            entropy = None
        out.append((entropy, kl.detach().numpy()))
    for w, g in zip(*out):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
