"""lucid.multinomial, lucid.randperm and generator= on the random factories:
distributions (chi-square against the probabilities), distinctness without
replacement, reproducibility under manual_seed and a Generator, and
PyTorch's errors. The draws are not PyTorch's (another random stream), so
what is compared is the contract, not the values."""
import numpy as np
import pytest
import torch

import lucid
from conftest import assert_close


def _chi2_ok(counts, probs):
    """Pearson's chi-square is below the 99.9% quantile for its degrees of freedom."""
    from scipy.stats import chi2

    counts, probs = np.asarray(counts, np.float64), np.asarray(probs, np.float64)
    keep = probs > 0
    expected = counts.sum() * probs[keep] / probs[keep].sum()
    stat = ((counts[keep] - expected) ** 2 / expected).sum()
    return stat < chi2.ppf(0.999, keep.sum() - 1)


def test_multinomial_with_replacement_follows_the_probabilities():
    pytest.importorskip("scipy")
    lucid.manual_seed(0)
    p = np.array([0.1, 0.0, 0.3, 0.6, 0.0])
    draws = lucid.multinomial(lucid.tensor(p * 7, dtype=lucid.float32), 20000, replacement=True)  # unnormalised
    assert draws.dtype == lucid.int64 and tuple(draws.shape) == (20000,)
    counts = np.bincount(draws.numpy(), minlength=5)
    assert counts[1] == counts[4] == 0
    assert _chi2_ok(counts, p)


def test_multinomial_rows_and_without_replacement():
    pytest.importorskip("scipy")
    lucid.manual_seed(1)
    probs = lucid.tensor([[0.5, 0.5, 0.0, 0.0], [0.0, 0.2, 0.2, 0.6]], dtype=lucid.float64)
    out = lucid.multinomial(probs, 4000, True)
    assert tuple(out.shape) == (2, 4000)
    assert _chi2_ok(np.bincount(out.numpy()[0], minlength=4), probs.numpy()[0])
    assert _chi2_ok(np.bincount(out.numpy()[1], minlength=4), probs.numpy()[1])
    distinct = lucid.multinomial(lucid.rand(3, 6), 6)
    for row in distinct.numpy():
        assert sorted(row.tolist()) == list(range(6))
    # zero-weight categories come last when sampling them cannot be avoided (PyTorch too)
    assert lucid.multinomial(lucid.tensor([0.0, 1.0, 0.0]), 2).tolist()[0] == 1
    # first draw without replacement follows the weights
    firsts = lucid.multinomial(lucid.tensor([[0.2, 0.8]]).expand(4000, 2).contiguous(), 1).numpy().ravel()
    assert _chi2_ok(np.bincount(firsts, minlength=2), [0.2, 0.8])


def test_multinomial_is_reproducible():
    w = lucid.tensor([0.2, 0.3, 0.5])
    lucid.manual_seed(5)
    a = lucid.multinomial(w, 50, True)
    lucid.manual_seed(5)
    b = lucid.multinomial(w, 50, True)
    assert a.tolist() == b.tolist()
    g1, g2 = lucid.Generator().manual_seed(7), lucid.Generator().manual_seed(7)
    assert lucid.multinomial(w, 30, True, generator=g1).tolist() == lucid.multinomial(w, 30, True, generator=g2).tolist()
    assert lucid.multinomial(w, 30, True, generator=g1).tolist() != lucid.multinomial(w, 30, True,
                                                                                        generator=g1).tolist()


@pytest.mark.parametrize("args", [
    ([0.0, 0.3, 0.7], 0, False), ([0.0, 0.3, 0.7], 4, False), ([[-1.0, 1.0]], 1, False), ([0.0, 0.0], 1, True),
    ([float("nan"), 1.0], 1, True), ([float("inf"), 1.0], 1, True), ([[[1.0, 2.0]]], 1, True),
], ids=["zero-samples", "too-many", "negative", "zero-sum", "nan", "inf", "3-d"])
def test_multinomial_errors_match_torch(args):
    data, n, replacement = args
    with pytest.raises(RuntimeError) as t_err:
        torch.multinomial(torch.tensor(data), n, replacement)
    with pytest.raises(RuntimeError) as l_err:
        lucid.multinomial(lucid.tensor(data), n, replacement)
    assert str(l_err.value) == str(t_err.value)
    with pytest.raises(RuntimeError, match="floating-point"):
        lucid.multinomial(lucid.tensor([1, 2]), 1)
    with pytest.raises(TypeError, match="must be int"):
        lucid.multinomial(lucid.tensor([0.5, 0.5]), 2.0)


def test_randperm():
    lucid.manual_seed(3)
    p = lucid.randperm(50)
    assert p.dtype == lucid.int64 and sorted(p.tolist()) == list(range(50))
    lucid.manual_seed(3)
    assert lucid.randperm(50).tolist() == p.tolist()
    g = lucid.Generator().manual_seed(1)
    q = lucid.randperm(10, generator=g, dtype=lucid.float32)
    assert q.dtype == lucid.float32 and sorted(q.tolist()) == list(range(10))
    assert lucid.randperm(0).tolist() == []
    with pytest.raises(RuntimeError) as t_err:
        torch.randperm(-1)
    with pytest.raises(RuntimeError) as l_err:
        lucid.randperm(-1)
    assert str(l_err.value) == str(t_err.value)
    with pytest.raises(TypeError, match="must be a lucid.Generator"):
        lucid.randperm(3, generator=np.random.default_rng(0))


def test_factories_with_a_generator():
    """makemore's habit: torch.randn(shape, generator=g)."""
    g1, g2 = lucid.Generator().manual_seed(2147483647), lucid.Generator().manual_seed(2147483647)
    a, b = lucid.randn((27, 10), generator=g1), lucid.randn((27, 10), generator=g2)
    assert a.dtype == lucid.float32 and tuple(a.shape) == (27, 10)
    assert_close(a, torch.from_numpy(b.numpy()))
    assert abs(float(a.mean())) < 0.3 and 0.8 < float(a.std()) < 1.2
    u = lucid.rand(1000, generator=g1, dtype=lucid.float64)
    assert u.dtype == lucid.float64 and 0 <= float(u.min()) and float(u.max()) < 1
    i = lucid.randint(0, 5, (100,), generator=g1)
    assert i.dtype == lucid.int64 and set(i.tolist()) <= set(range(5))
    x = lucid.randn(3, generator=g1, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    # the global stream is untouched by generator draws
    lucid.manual_seed(0)
    ref = lucid.rand(3)
    lucid.manual_seed(0)
    lucid.rand(3, generator=g1)
    assert_close(lucid.rand(3), torch.from_numpy(ref.numpy()))


_BAD_DRAWS = {
    "normal tensor std": lambda m: m.normal(m.zeros(2), m.tensor([1., -1.])),
    "normal number std": lambda m: m.normal(m.zeros(2), -0.5),
    "normal sized": lambda m: m.normal(0., -1., (2,)),
    "normal_": lambda m: m.zeros(3).normal_(0, -1),
    "normal_ nan": lambda m: m.zeros(3).normal_(0, float("nan")),
    "log_normal_": lambda m: m.zeros(2).log_normal_(0, 0),
    "uniform_": lambda m: m.zeros(2).uniform_(2, 1),
    "exponential_": lambda m: m.zeros(2).exponential_(0),
    "bernoulli_ number": lambda m: m.zeros(2).bernoulli_(1.5),
    "bernoulli_ nan": lambda m: m.zeros(2).bernoulli_(float("nan")),
    "bernoulli_ tensor": lambda m: m.zeros(2).bernoulli_(m.tensor([0.5, 2.0])),
    "bernoulli": lambda m: m.bernoulli(m.tensor([1.5])),
}


@pytest.mark.parametrize("name", list(_BAD_DRAWS))
def test_bad_distribution_parameters_raise_as_torch(name):
    """A negative std, an empty range, a probability outside [0, 1] raise
    RuntimeError, as PyTorch's (they drew from a flipped or clipped law)."""
    with pytest.raises(RuntimeError) as want:
        _BAD_DRAWS[name](torch)
    with pytest.raises(RuntimeError) as got:
        _BAD_DRAWS[name](lucid)
    assert str(got.value).split(" ")[:2] == str(want.value).split(" ")[:2] or "Expected p_in" in str(want.value)
    assert lucid.zeros(2).uniform_(1, 1).tolist() == [1.0, 1.0] and lucid.zeros(2).normal_(0, 0).tolist() == [0, 0]
