"""lucid.distributions against torch.distributions: densities, entropies,
moments, KL divergences, derived parameters, shapes, validation errors,
gradients through log_prob/rsample, and sample statistics."""
import math

import numpy as np
import pytest
import torch

import lucid


def _t(m, a):
    return m.tensor(np.asarray(a))


_RNG = np.random.default_rng(0)
_LOC, _SCALE = _RNG.standard_normal(3), _RNG.random(3) + 0.5
_VALUE = _RNG.standard_normal((2, 3))
_PROBS, _LOGITS = _RNG.random((2, 4)), _RNG.standard_normal((2, 4))


def _quantities(m):
    """Every deterministic quantity, by name."""
    D = m.distributions
    out = {}
    n, v = D.Normal(_t(m, _LOC), _t(m, _SCALE)), _t(m, _VALUE)
    out.update(normal_log_prob=n.log_prob(v), normal_entropy=n.entropy(), normal_cdf=n.cdf(v),
               normal_variance=n.variance, normal_stddev=n.stddev, normal_sample_shape=n.sample((5, 2)).shape,
               normal_scalar_log_prob=D.Normal(0.0, 1.0).log_prob(_t(m, 0.3)),
               normal_scalar_sample_shape=D.Normal(0.0, 1.0).sample((4,)).shape,
               kl_normal=D.kl_divergence(n, D.Normal(_t(m, _LOC[::-1].copy()), _t(m, _SCALE * 2))))
    c, cl = D.Categorical(probs=_t(m, _PROBS)), D.Categorical(logits=_t(m, _LOGITS))
    idx = _t(m, [[0, 3], [1, 2], [3, 3]])  # broadcasts against the batch of 2
    out.update(cat_log_prob=c.log_prob(idx), cat_logits_log_prob=cl.log_prob(idx), cat_entropy=c.entropy(),
               cat_logits_entropy=cl.entropy(), cat_probs=c.probs, cat_logits=c.logits, cat_from_logits=cl.logits,
               cat_from_logits_probs=cl.probs, cat_sample_shape=c.sample((3,)).shape, kl_cat=D.kl_divergence(c, cl),
               cat_mode=c.mode, cat_support=c.enumerate_support(),
               cat_zero_prob_entropy=D.Categorical(probs=_t(m, [0.0, 0.5, 0.5])).entropy())
    b, bl = D.Bernoulli(probs=_t(m, _PROBS)), D.Bernoulli(logits=_t(m, _LOGITS))
    bv = _t(m, (_VALUE[:, :1] > 0).astype(np.float64) * np.ones((2, 4)))
    out.update(bern_log_prob=b.log_prob(bv), bern_logits_log_prob=bl.log_prob(bv), bern_entropy=b.entropy(),
               bern_logits_entropy=bl.entropy(), bern_logits=b.logits, kl_bern=D.kl_divergence(b, bl),
               bern_variance=bl.variance, bern_sample_shape=b.sample((2,)).shape)
    u = D.Uniform(_t(m, [0.0, -1.0]), _t(m, [2.0, 3.0]))
    uv = _t(m, [[0.5, 2.9], [1.5, -1.0]])
    out.update(uniform_log_prob=u.log_prob(uv), uniform_entropy=u.entropy(), uniform_cdf=u.cdf(uv),
               uniform_mean=u.mean, uniform_variance=u.variance,
               kl_uniform=D.kl_divergence(u, D.Uniform(_t(m, [-1.0, -1.0]), _t(m, [3.0, 2.0]))))
    e, ev = D.Exponential(_t(m, _SCALE)), _t(m, np.abs(_VALUE))
    out.update(exp_log_prob=e.log_prob(ev), exp_entropy=e.entropy(), exp_cdf=e.cdf(ev),
               kl_exp=D.kl_divergence(e, D.Exponential(_t(m, _SCALE * 3))))
    lap = D.Laplace(_t(m, _LOC), _t(m, _SCALE))
    out.update(laplace_log_prob=lap.log_prob(v), laplace_entropy=lap.entropy(), laplace_cdf=lap.cdf(v),
               kl_laplace=D.kl_divergence(lap, D.Laplace(_t(m, _LOC * 0), _t(m, _SCALE + 1))))
    ind = D.Independent(D.Normal(_t(m, np.zeros((2, 3))), _t(m, np.ones((2, 3)))), 1)
    out.update(indep_log_prob=ind.log_prob(v), indep_entropy=ind.entropy(), indep_batch=ind.batch_shape,
               indep_event=ind.event_shape,
               kl_indep=D.kl_divergence(ind, D.Independent(D.Normal(_t(m, np.ones((2, 3))),
                                                                   _t(m, np.ones((2, 3)) * 2)), 1)))
    oh = D.OneHotCategorical(probs=_t(m, _PROBS))
    ohv = m.nn.functional.one_hot(_t(m, [1, 3]), 4).to(m.float64)
    out.update(onehot_log_prob=oh.log_prob(ohv), onehot_sample_shape=oh.sample((5,)).shape,
               onehot_entropy=oh.entropy())
    return out


def test_quantities_match_torch():
    want, got = _quantities(torch), _quantities(lucid)
    assert want.keys() == got.keys()
    for k in want:
        w, g = want[k], got[k]
        if isinstance(w, torch.Size):
            assert tuple(g) == tuple(w), k
        else:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-14, err_msg=k)


def test_gradients_through_log_prob_entropy_and_kl_match_torch():
    got = []
    for m in (torch, lucid):
        D = m.distributions
        loc, scale, logits = (_t(m, a).requires_grad_() for a in (_LOC, _SCALE, _LOGITS))
        n = D.Normal(loc, scale)
        c = D.Categorical(logits=logits)
        loss = (n.log_prob(_t(m, _VALUE)).sum() + n.entropy().sum() + c.log_prob(_t(m, [1, 2])).sum()
                + D.kl_divergence(c, D.Categorical(probs=_t(m, _PROBS))).sum()
                + D.kl_divergence(n, D.Normal(0.0, 1.0)).sum())
        loss.backward()
        got.append([t.grad.numpy() for t in (loc, scale, logits)])
    for w, g in zip(*got):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_rsample_is_differentiable_and_sample_is_not():
    loc, scale = lucid.zeros(3).requires_grad_(), lucid.ones(3).requires_grad_()
    d = lucid.distributions.Normal(loc, scale)
    lucid.manual_seed(0)
    s = d.rsample((4,))
    s.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [4, 4, 4])
    assert not d.sample((4,)).requires_grad
    assert lucid.distributions.Normal.has_rsample and not lucid.distributions.Categorical.has_rsample


def test_sample_statistics():
    lucid.manual_seed(0)
    D, n = lucid.distributions, 200_000
    s = D.Normal(_t(lucid, [1.0, -2.0]), _t(lucid, [0.5, 2.0])).sample((n,)).numpy()
    np.testing.assert_allclose(s.mean(0), [1.0, -2.0], atol=0.02)
    np.testing.assert_allclose(s.std(0), [0.5, 2.0], rtol=0.01)
    counts = np.bincount(D.Categorical(probs=_t(lucid, [0.1, 0.6, 0.3])).sample((n,)).numpy(), minlength=3)
    np.testing.assert_allclose(counts / n, [0.1, 0.6, 0.3], atol=0.005)
    np.testing.assert_allclose(D.Bernoulli(logits=_t(lucid, [0.0, 2.0])).sample((n,)).numpy().mean(0),
                               [0.5, 1 / (1 + math.exp(-2))], atol=0.005)
    u = D.Uniform(-1.0, 3.0).sample((n,)).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.02
    np.testing.assert_allclose(D.Exponential(_t(lucid, 2.0)).sample((n,)).numpy().mean(), 0.5, rtol=0.01)
    np.testing.assert_allclose(D.Laplace(0.0, 1.0).sample((n,)).numpy().var(), 2.0, rtol=0.02)


@pytest.mark.parametrize("case", range(8))
def test_invalid_arguments_raise_as_torch(case):
    def call(m):
        D = m.distributions
        return [lambda: D.Normal(_t(m, [0.0]), _t(m, [-1.0])),
                lambda: D.Normal(0.0, 1.0).log_prob(0.5),
                lambda: D.Bernoulli(probs=_t(m, [1.5])),
                lambda: D.Categorical(probs=_t(m, [0.5, 0.5])).log_prob(_t(m, [2])),
                lambda: D.Uniform(_t(m, [1.0]), _t(m, [0.0])),
                lambda: D.Categorical(),
                lambda: D.Bernoulli(_t(m, [0.3])).log_prob(_t(m, [0.5])),
                lambda: D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(_t(m, 0.3)))][case]()

    outcome = []
    for m in (torch, lucid):
        with pytest.raises(Exception) as info:
            call(m)
        outcome.append(type(info.value).__name__)
    assert outcome[0] == outcome[1]


def test_validation_can_be_turned_off():
    d = lucid.distributions.Normal(_t(lucid, [0.0]), _t(lucid, [-1.0]), validate_args=False)
    assert np.isnan(d.log_prob(_t(lucid, [0.0])).item())


def test_reinforce_policy_gradient_matches_torch():
    """A policy-gradient step: actions drawn once, then the same
    log-probability loss differentiated in both."""
    rng = np.random.default_rng(4)
    w0, x, ret = rng.standard_normal((4, 3)) * 0.5, rng.standard_normal((6, 4)), rng.standard_normal(6)
    actions = rng.integers(0, 3, 6)
    grads = []
    for m in (torch, lucid):
        w = _t(m, w0).requires_grad_()
        dist = m.distributions.Categorical(logits=_t(m, x) @ w)
        loss = -(dist.log_prob(_t(m, actions)) * _t(m, ret)).mean() - 0.01 * dist.entropy().mean()
        loss.backward()
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
