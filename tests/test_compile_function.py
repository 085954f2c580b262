"""lucid.compile(module_or_function): forward graphs compiled per signature,
equal to the eager call, with eager fallbacks that say why."""
import warnings

import numpy as np
import pytest

import lucid
import lucid.compile
import lucid.nn as nn
import lucid.nn.functional as F


def _model():
    lucid.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Dropout(0.5), nn.Linear(16, 3))


def test_a_module_in_eval_matches_eager_and_compiles_per_signature():
    model = _model().eval()
    fast = lucid.compile(model)
    with lucid.no_grad():
        for n in (4, 4, 7, 4):
            x = lucid.randn(n, 6)
            np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())
    info = fast.cache_info()
    assert (info.misses, info.hits, info.entries) == (2, 2, 2)
    assert info.last_miss == "input 0 shape [4, 6] -> [7, 6]"
    assert not fast.fallback_reasons


def test_training_mode_is_part_of_the_signature():
    model = _model()
    fast = lucid.compile(model)
    x = lucid.randn(5, 6)
    with lucid.no_grad():
        lucid.manual_seed(3)
        a = fast(x)
        lucid.manual_seed(3)
        b = model(x)
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the same dropout mask
        model.eval()
        np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())
    assert fast.cache_info().last_miss == "model.training: True -> False"


def test_a_function_with_several_inputs_and_outputs():
    def f(a, b):
        return F.softmax(a @ b, dim=-1), (a * b.t()).sum()

    cf = lucid.compile(f)
    a, b = lucid.randn(3, 4), lucid.randn(4, 3)
    out, total = cf(a, b)
    ref_out, ref_total = f(a, b)
    np.testing.assert_array_equal(out.numpy(), ref_out.numpy())
    np.testing.assert_allclose(total.item(), ref_total.item(), rtol=1e-6)
    assert isinstance(cf(a, b), tuple)


@pytest.mark.parametrize("case", ["item", "grad", "non_tensor", "kwargs", "returns_int"])
def test_what_cannot_be_compiled_runs_eagerly_with_a_reason(case):
    model = nn.Linear(3, 2)

    def reads_a_value(x):
        return x * 2 if x.sum().item() > 0 else -x

    fn, args, kwargs, expect = {
        "item": (reads_a_value, (lucid.ones(3),), {}, "item()"),
        "grad": (model, (lucid.ones(2, 3),), {}, "autograd is recording"),
        "non_tensor": (lambda x, k: x * k, (lucid.ones(3), 2), {}, "not all tensors"),
        "kwargs": (lambda x, scale=1.0: x * scale, (lucid.ones(3),), {"scale": 2.0}, "keyword arguments"),
        "returns_int": (lambda x: 3, (lucid.ones(3),), {}, "returned int"),
    }[case]
    cf = lucid.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = cf(*args, **kwargs)
    ref = fn(*args, **kwargs)
    if isinstance(ref, lucid.Tensor):
        np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
        assert out.requires_grad == ref.requires_grad  # the eager result, history included
    else:
        assert out == ref
    assert any(expect in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_errors_of_the_compiled_run_are_raised_not_hidden():
    def pick(x, i):
        return x.gather(1, i)

    cf = lucid.compile(pick)
    x = lucid.randn(2, 3)
    cf(x, lucid.tensor([[0], [1]]))
    with pytest.raises(IndexError):
        cf(x, lucid.tensor([[0], [5]]))


def test_compile_rejects_what_is_not_callable():
    with pytest.raises(TypeError, match="module or a function"):
        lucid.compile(3)
