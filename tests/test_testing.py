"""lucid.testing against torch.testing: assert_close's outcome and message
for tensors of each dtype, numbers, booleans, None, nested sequences and
mappings, attribute checks and tolerances; make_tensor's ranges, shapes,
layouts and errors."""
import math
import warnings

import numpy as np
import pytest
import torch

import lucid


def _outcome(m, make):
    try:
        make(m)
    except Exception as e:  # noqa: BLE001 (the outcome is compared)
        text = str(e).replace("torch.", "lucid.").replace("<class 'lucid.Tensor'>", "<class 'lucid._C.Tensor'>")
        return type(e).__name__, text
    return "ok", ""


def _t(m, values, dtype="float32"):
    return m.tensor(values, dtype=getattr(m, dtype))


CASES = {
    "equal": lambda m: m.testing.assert_close(_t(m, [1.0, 2.0]), _t(m, [1.0, 2.0])),
    "float32-within-defaults": lambda m: m.testing.assert_close(_t(m, [1.0, 2.0]), _t(m, [1.0, 2.0 + 2e-6])),
    "float32-mismatch": lambda m: m.testing.assert_close(_t(m, [1.0, 2.0, 3.0]), _t(m, [1.0, 2.5, 3.0])),
    "float64-mismatch": lambda m: m.testing.assert_close(_t(m, [[1.0, 2.0], [3.0, 4.0]], "float64"),
                                                         _t(m, [[1.0, 2.0], [3.0001, 4.1]], "float64")),
    "float16-defaults": lambda m: m.testing.assert_close(_t(m, [1.0, 100.0], "float16"),
                                                         _t(m, [1.0005, 100.1], "float16")),
    "bfloat16-defaults": lambda m: m.testing.assert_close(_t(m, [1.0, 8.0], "bfloat16"),
                                                          _t(m, [1.01, 8.1], "bfloat16")),
    "int-mismatch": lambda m: m.testing.assert_close(_t(m, [1, 2, 3], "int64"), _t(m, [1, 5, 3], "int64")),
    "bool-mismatch": lambda m: m.testing.assert_close(_t(m, [True, False], "bool"), _t(m, [True, True], "bool")),
    "scalar-tensor": lambda m: m.testing.assert_close(_t(m, 1.0), _t(m, 1.5)),
    "shape": lambda m: m.testing.assert_close(_t(m, [1.0, 2.0]), _t(m, [1.0, 2.0, 3.0])),
    "dtype": lambda m: m.testing.assert_close(_t(m, [1.0]), _t(m, [1.0], "float64")),
    "dtype-unchecked": lambda m: m.testing.assert_close(_t(m, [1.0]), _t(m, [1.0], "float64"), check_dtype=False),
    "stride": lambda m: m.testing.assert_close(_t(m, [[1.0, 2.0], [3.0, 4.0]]).t(),
                                               _t(m, [[1.0, 3.0], [2.0, 4.0]]), check_stride=True),
    "nan": lambda m: m.testing.assert_close(_t(m, [float("nan"), 1.0]), _t(m, [float("nan"), 1.0])),
    "nan-equal": lambda m: m.testing.assert_close(_t(m, [float("nan"), 1.0]), _t(m, [float("nan"), 1.0]),
                                                  equal_nan=True),
    "inf": lambda m: m.testing.assert_close(_t(m, [float("inf")]), _t(m, [float("inf")])),
    "inf-sign": lambda m: m.testing.assert_close(_t(m, [float("inf")]), _t(m, [-float("inf")])),
    "explicit-tolerances": lambda m: m.testing.assert_close(_t(m, [1.0]), _t(m, [1.05]), rtol=0.0, atol=0.1),
    "explicit-tolerances-fail": lambda m: m.testing.assert_close(_t(m, [1.0, 2.0]), _t(m, [1.05, 2.0]), rtol=0.01,
                                                                 atol=0.0),
    "zero-tolerance": lambda m: m.testing.assert_close(_t(m, [1.0, 2.0]), _t(m, [1.0, 2.0 + 1e-6]), rtol=0, atol=0),
    "only-rtol": lambda m: m.testing.assert_close(_t(m, [1.0]), _t(m, [1.0]), rtol=0.1),
    "only-atol": lambda m: m.testing.assert_close(_t(m, [1.0]), _t(m, [1.0]), atol=0.1),
    "numbers": lambda m: m.testing.assert_close(1.0, 1.0 + 1e-8),
    "numbers-fail": lambda m: m.testing.assert_close(1.0, 1.1),
    "ints": lambda m: m.testing.assert_close(3, 4),
    "number-types": lambda m: m.testing.assert_close(1, 1.0, check_dtype=True),
    "number-expected-zero": lambda m: m.testing.assert_close(0.5, 0.0),
    "bools": lambda m: m.testing.assert_close(True, False),
    "none": lambda m: m.testing.assert_close(None, None),
    "none-mismatch": lambda m: m.testing.assert_close(None, 1.0),
    "tensor-vs-number": lambda m: m.testing.assert_close(_t(m, [1.0]), 1.0),
    "strings": lambda m: m.testing.assert_close("a", "a"),
    "sequences": lambda m: m.testing.assert_close([_t(m, [1.0]), (2.0, _t(m, [3.0]))], [_t(m, [1.0]), (2.0, _t(m, [3.0]))]),
    "sequence-length": lambda m: m.testing.assert_close([1.0, 2.0], [1.0, 2.0, 3.0]),
    "nested-mismatch": lambda m: m.testing.assert_close([_t(m, 1.0), {"a": _t(m, [1.0, 2.0])}],
                                                        [_t(m, 1.0), {"a": _t(m, [1.0, 3.0])}]),
    "mapping-keys": lambda m: m.testing.assert_close({"a": 1.0, "b": 2.0}, {"a": 1.0, "c": 2.0}),
    "numpy-arrays": lambda m: m.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.5])),
    "numpy-scalars": lambda m: m.testing.assert_close(np.float64(1.0), np.float64(1.5)),
    "msg-string": lambda m: m.testing.assert_close(_t(m, [1.0]), _t(m, [2.0]), msg="custom"),
    "msg-callable": lambda m: m.testing.assert_close(_t(m, [1.0]), _t(m, [2.0]), msg=lambda s: "prefix: " + s),
    "requires-grad": lambda m: m.testing.assert_close(_t(m, [1.0]).requires_grad_(), _t(m, [1.0])),
    "empty": lambda m: m.testing.assert_close(_t(m, []), _t(m, [])),
    "large-mismatch-count": lambda m: m.testing.assert_close(m.arange(1000, dtype=m.float64) * 1.001,
                                                             m.arange(1000, dtype=m.float64)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_assert_close_matches_torch(name):
    assert _outcome(lucid, CASES[name]) == _outcome(torch, CASES[name])


def test_assert_allclose_is_deprecated_and_lenient():
    for m in (torch, lucid):
        with pytest.warns(FutureWarning, match="assert_allclose"):
            m.testing.assert_allclose(_t(m, [1.0, float("nan")]), [1.00001, float("nan")])
        with pytest.warns(FutureWarning), pytest.raises(AssertionError):
            m.testing.assert_allclose(_t(m, [1.0]), [1.1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
                                   "int64", "bool"])
def test_make_tensor_ranges(dtype):
    lucid.manual_seed(0)
    dt = getattr(lucid, dtype)
    t = lucid.testing.make_tensor(1000, dtype=dt, device="cpu")
    assert t.dtype == dt and tuple(t.shape) == (1000,)
    v = t.to(lucid.float64).numpy()
    if dtype == "bool":
        assert set(np.unique(v)) == {0.0, 1.0}
    elif dtype == "uint8":
        assert v.min() >= 0 and v.max() < 10  # [-9, 10) clamped to the dtype's range
    elif dt.is_floating_point:
        assert v.min() >= -9 and v.max() <= 9 and v.std() > 3
    else:
        assert v.min() >= -9 and v.max() < 10 and np.all(v == np.round(v))
    lo = lucid.testing.make_tensor((50,), dtype=dt, device="cpu", low=0, high=2, exclude_zero=True)
    assert bool((lo != 0).all())


def test_make_tensor_layout_grad_and_errors():
    t = lucid.testing.make_tensor(3, 4, dtype=lucid.float64, device="cpu", noncontiguous=True, requires_grad=True)
    assert tuple(t.shape) == (3, 4) and not t.is_contiguous() and t.requires_grad and t.is_leaf
    assert lucid.testing.make_tensor([2, 3], dtype=lucid.float32, device="cpu").shape == (2, 3)
    for m in (torch, lucid):
        mk = m.testing.make_tensor
        for kwargs, error in [(dict(low=3, high=1), "`low` must be less than `high`, but got 3 >= 1"),
                              (dict(low=float("nan")), "`low` and `high` cannot be NaN"),
                              (dict(requires_grad=True, dtype=m.int64), "`requires_grad=True` is not supported"),
                              (dict(dtype=m.uint8, low=-5, high=-1), "The value interval specified by `low` and `high`"),
                              (dict(noncontiguous=True, memory_format=m.contiguous_format), "mutually exclusive")]:
            kwargs.setdefault("dtype", m.float32)
            with pytest.raises(ValueError, match=error.replace("(", r"\(").replace("[", r"\[")):
                mk(2, 2, device="cpu", **kwargs)
        with pytest.warns(FutureWarning, match="low==high"):
            mk(2, dtype=m.float32, device="cpu", low=1.0, high=1.0)
