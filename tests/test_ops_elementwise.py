"""Elementwise ops against PyTorch: forward, gradient, broadcasting, dtype
promotion, 16-bit floats, finite-difference gradients and error cases."""
import itertools
import math

import numpy as np
import pytest
import torch

import lucid
from conftest import LUCID_TO_TORCH, assert_close, check, gradcheck, rnd


def _nnf(name):
    """torch.nn.functional's op and lucid's counterpart (lucid.nn.functional
    when present, otherwise the core op it wraps)."""
    try:
        import lucid.nn.functional as LF

        lf = getattr(LF, name, None)
    except ImportError:
        lf = None
    if lf is None:
        core = {
            "gelu": lambda x, approximate="none": lucid._C.gelu(x, approximate == "tanh"),
            "silu": lucid._C.silu,
            "softplus": lucid._C.softplus,
            "relu": lucid.relu,
        }
        lf = core[name]
    return lf, getattr(torch.nn.functional, name)


def nnf(m, name):
    lf, tf = _nnf(name)
    return lf if m is lucid else tf


# ---------------------------------------------------------------- unary ops
POSITIVE = {"log", "sqrt", "rsqrt", "log1p", "reciprocal"}
UNARY = ["neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
         "erf", "square", "reciprocal", "sign", "floor", "ceil", "round", "trunc"]


def _unary_input(name, shape, dtype="float32", seed=0):
    x = rnd(*shape, dtype=dtype, seed=seed) if dtype != "float64" else rnd(*shape, dtype="float64", seed=seed)
    if name in POSITIVE:
        x = np.abs(x) + 0.2
    if name == "abs":  # keep away from the kink
        x = np.where(np.abs(x) < 0.05, 0.3, x).astype(x.dtype)
    return x


@pytest.mark.parametrize("name", UNARY)
def test_unary_function_and_method(name):
    x = _unary_input(name, (3, 5))
    check(lambda m, a: getattr(m, name)(a), x)
    check(lambda m, a: getattr(a, name)(), x)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 0, 3)])
def test_unary_edge_shapes(name, shape):
    check(lambda m, a: getattr(m, name)(a), _unary_input(name, shape))


@pytest.mark.parametrize("name,dtype", [(n, d) for n in ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "erf", "abs",
                                                          "neg"]
                                         for d in ["int32", "int64", "bool"] if (n, d) != ("abs", "bool")])
def test_unary_integer_inputs(name, dtype):
    """Transcendental ops on integers compute in the default float dtype;
    abs/neg keep the integer dtype; neg of bool is an error (checked below)."""
    x = rnd(2, 3, dtype=dtype, low=1 if name in ("log", "sqrt") else None, seed=3)
    if dtype == "bool" and name == "neg":
        for m in (lucid, torch):
            with pytest.raises(RuntimeError):
                m.neg(m.tensor(x) if m is torch else lucid.tensor(x))
        return
    check(lambda m, a: getattr(m, name)(a), x, grad=False)


def test_unary_special_values():
    x = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 88.0, -88.0, 1e30], dtype=np.float32)
    for name in ["exp", "log1p", "expm1", "sqrt", "sin", "tanh", "sigmoid", "relu", "erf", "abs", "sign", "floor",
                 "round", "trunc", "square", "reciprocal"]:
        with np.errstate(all="ignore"):
            check(lambda m, a: getattr(m, name)(a), x, grad=False)


def test_round_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999], dtype=np.float32)
    check(lambda m, a: m.round(a), x, grad=False)
    check(lambda m, a: m.round(a, decimals=2), np.array([1.2345, -2.5551, 0.005], dtype=np.float32), grad=False,
          atol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = rnd(4, 6, seed=5) * 3
    check(lambda m, a: nnf(m, "gelu")(a, approximate=approximate), x)
    gradcheck(lambda a: nnf(lucid, "gelu")(a, approximate=approximate), rnd(7, dtype="float64") * 2)


def test_silu_softplus():
    x = rnd(4, 6, seed=6) * 4
    check(lambda m, a: nnf(m, "silu")(a), x)
    check(lambda m, a: nnf(m, "softplus")(a), x)
    check(lambda m, a: nnf(m, "softplus")(a, beta=2.0, threshold=3.0), x)
    big = np.array([-100.0, -20.0, 0.0, 19.0, 21.0, 100.0], dtype=np.float32)
    check(lambda m, a: nnf(m, "softplus")(a), big)
    gradcheck(lambda a: nnf(lucid, "silu")(a), rnd(6, dtype="float64"))
    gradcheck(lambda a: nnf(lucid, "softplus")(a, beta=1.5), rnd(6, dtype="float64"))


@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
                                  "erf", "square", "reciprocal", "abs", "neg", "relu"])
def test_unary_gradcheck(name):
    x = _unary_input(name, (5,), dtype="float64", seed=11)
    if name == "relu":
        x = np.where(np.abs(x) < 0.05, 0.3, x)
    gradcheck(lambda a: getattr(lucid, name)(a), x)


# --------------------------------------------------------------- binary ops
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "remainder", "floor_divide"]
NO_GRAD = {"floor_divide"}  # torch does not differentiate it
SHAPE_PAIRS = [
    ((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)), ((), (3, 2)), ((3, 2), ()),
    ((), ()), ((1,), (5,)), ((0, 3), (3,)), ((0, 3), (1, 3)), ((2, 0), (2, 1)),
]


def _binary_inputs(name, sa, sb, dtype="float32"):
    a = rnd(*sa, dtype=dtype, seed=1)
    b = rnd(*sb, dtype=dtype, seed=2)
    if name == "pow":
        a = np.abs(a) + 0.5
    if name in ("div", "remainder", "floor_divide"):
        b = np.where(np.abs(b) < 0.3, 1.3, b).astype(b.dtype)
    if name in ("maximum", "minimum"):  # no ties
        b = b + np.float32(0.01)
    return a, b


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS)
def test_binary_broadcasting(name, sa, sb):
    a, b = _binary_inputs(name, sa, sb)
    check(lambda m, x, y: getattr(m, name)(x, y), a, b, grad=name not in NO_GRAD)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**"])
def test_operators(op):
    a = np.abs(rnd(3, 4, seed=1)) + 0.5
    b = np.abs(rnd(4, seed=2)) + 0.5
    fn = eval(f"lambda m, x, y: x {op} y")
    check(fn, a, b, grad=op != "//")
    # with Python numbers on either side
    check(eval(f"lambda m, x: x {op} 2.5"), a, grad=op != "//")
    # torch has no derivative of remainder w.r.t. its second argument
    check(eval(f"lambda m, x: 1.5 {op} x"), a, grad=op not in ("//", "%"))
    check(eval(f"lambda m, x: x {op} 3"), a, grad=op != "//")
    check(eval(f"lambda m, x: 3 {op} x"), a, grad=op not in ("//", "%"))


def test_unary_operators():
    a = rnd(3, 4, seed=4)
    check(lambda m, x: -x, a)
    check(lambda m, x: abs(x), a)
    check(lambda m, x: +x, a)
    b = rnd(3, 4, dtype="bool", seed=5)
    check(lambda m, x: ~x, b, grad=False)


@pytest.mark.parametrize("name", ["remainder", "floor_divide"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_python_modulo_semantics(name, dtype):
    """Sign follows the divisor, like Python (and PyTorch)."""
    a = np.array([7, -7, 7, -7, 0, 5, -6], dtype=dtype)
    b = np.array([3, 3, -3, -3, 2, 5, 4], dtype=dtype)
    check(lambda m, x, y: getattr(m, name)(x, y), a, b, grad=False)


def test_integer_division_by_zero_floats():
    a = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    b = np.zeros(3, dtype=np.float32)
    with np.errstate(all="ignore"):
        check(lambda m, x, y: x / y, a, b, grad=False)
        check(lambda m, x, y: x // y, a, b, grad=False)
        check(lambda m, x, y: x % y, a, b, grad=False)


def test_integer_pow():
    a = np.array([2, -3, 0, 1, 5], dtype=np.int64)
    b = np.array([3, 2, 0, 7, 1], dtype=np.int64)
    check(lambda m, x, y: x ** y, a, b, grad=False)
    check(lambda m, x: x ** 2, a, grad=False)
    check(lambda m, x: 2 ** x, b, grad=False)


def test_pow_gradient_edge_cases():
    # zero base with positive/zero exponents, negative base with integer exponent
    a = np.array([0.0, 0.0, -2.0, 1.5, 2.0], dtype=np.float64)
    b = np.array([2.0, 0.0, 3.0, 0.0, -1.0], dtype=np.float64)
    check(lambda m, x, y: x ** y, a, b)
    check(lambda m, x: x ** 2, a)
    check(lambda m, x: x ** 0.5, np.abs(a) + 1)
    check(lambda m, x: 2.0 ** x, b)


def test_maximum_minimum_ties_and_nan():
    a = np.array([1.0, 2.0, np.nan, 3.0, -0.0], dtype=np.float32)
    b = np.array([1.0, 1.0, 1.0, np.nan, 0.0], dtype=np.float32)
    check(lambda m, x, y: m.maximum(x, y), a, b)
    check(lambda m, x, y: m.minimum(x, y), a, b)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "atan2", "maximum", "minimum", "remainder"])
def test_binary_gradcheck(name):
    a, b = _binary_inputs(name, (3, 1), (4,), dtype="float64")
    if name == "pow":
        a = np.abs(a) + 0.5
    gradcheck(lambda x, y: getattr(lucid, name)(x, y), a, b)


def test_add_sub_alpha():
    a, b = rnd(3, seed=1), rnd(3, seed=2)
    check(lambda m, x, y: m.add(x, y, alpha=2.5), a, b)
    check(lambda m, x, y: m.sub(x, y, alpha=-2), a, b)


def test_div_rounding_modes():
    a = np.array([7.5, -7.5, 3.0, -2.0], dtype=np.float32)
    b = np.array([2.0, 2.0, -2.0, 3.0], dtype=np.float32)
    for mode in ["trunc", "floor"]:
        check(lambda m, x, y: m.div(x, y, rounding_mode=mode), a, b, grad=False)
    ai, bi = a.astype(np.int64), b.astype(np.int64)
    for mode in [None, "trunc", "floor"]:
        check(lambda m, x, y: m.div(x, y, rounding_mode=mode), ai, bi, grad=False)


# --------------------------------------------------------- type promotion
TENSOR_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _values(dtype, shape, seed):
    if dtype == "bool":
        return rnd(*shape, dtype="bool", seed=seed)
    if dtype in ("uint8", "int8", "int16", "int32", "int64"):
        return rnd(*shape, dtype=dtype, low=1, high=5, seed=seed)
    return np.abs(rnd(*shape, dtype="float32", seed=seed)) + 0.5


@pytest.mark.parametrize("da,db", list(itertools.product(TENSOR_DTYPES, TENSOR_DTYPES)))
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((), (3,)), ((3,), ())])
def test_promotion_tensor_tensor(da, db, shapes):
    a, b = _values(da, shapes[0], 1), _values(db, shapes[1], 2)
    ops = ["add", "mul", "div", "maximum", "eq", "lt", "logical_and"]
    if "bool" not in (da, db):
        ops += ["sub"]
    for name in ops:
        check(lambda m, x, y: getattr(m, name)(x, y), a, b, dtypes=[da, db], grad=False, rtol=1e-2, atol=1e-2)
    lt = lucid.tensor(a).to(getattr(lucid, da))
    rt = lucid.tensor(b).to(getattr(lucid, db))
    tt = torch.from_numpy(np.array(a)).to(LUCID_TO_TORCH[getattr(lucid, da)])
    tu = torch.from_numpy(np.array(b)).to(LUCID_TO_TORCH[getattr(lucid, db)])
    assert LUCID_TO_TORCH[lucid.result_type(lt, rt)] == torch.result_type(tt, tu)
    assert LUCID_TO_TORCH[lucid.promote_types(lt.dtype, rt.dtype)] == torch.promote_types(tt.dtype, tu.dtype)


@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
@pytest.mark.parametrize("scalar", [True, 2, -3, 2.5, 1e10])
@pytest.mark.parametrize("shape", [(4,), ()])
def test_promotion_tensor_python_scalar(dtype, scalar, shape):
    a = _values(dtype, shape, 3)
    for fn in [lambda m, x: x + scalar, lambda m, x: scalar * x, lambda m, x: x / scalar, lambda m, x: x > scalar,
               lambda m, x: m.maximum(x, m.tensor(scalar)), lambda m, x: m.where(x > 1, x, scalar)]:
        if isinstance(scalar, float) and scalar > 1e5 and dtype in ("float16",):
            continue  # overflows to inf on both sides; values compared elsewhere
        check(fn, a, dtypes=[dtype], grad=False, rtol=1e-2, atol=1e-2)
    lt = lucid.tensor(a).to(getattr(lucid, dtype))
    tt = torch.from_numpy(np.array(a)).to(LUCID_TO_TORCH[getattr(lucid, dtype)])
    assert LUCID_TO_TORCH[lucid.result_type(lt, scalar)] == torch.result_type(tt, scalar)


def test_promotion_zero_dim_tensors():
    # a 0-d tensor only widens within a category when the other is also 0-d
    cases = [("int64", "float64"), ("float32", "float64"), ("int32", "int64"), ("bool", "int64"), ("float16", "int64"),
             ("int32", "float16"), ("bfloat16", "float16")]
    for da, db in cases:
        for sa, sb in [((3,), ()), ((), (3,)), ((), ())]:
            check(lambda m, x, y: x + y, _values(da, sa, 1), _values(db, sb, 2), dtypes=[da, db], grad=False,
                  rtol=1e-2, atol=1e-2)


def test_bool_arithmetic():
    a, b = rnd(5, dtype="bool", seed=1), rnd(5, dtype="bool", seed=2)
    check(lambda m, x, y: x + y, a, b, grad=False)
    check(lambda m, x, y: x * y, a, b, grad=False)
    check(lambda m, x, y: x & y, a, b, grad=False)
    check(lambda m, x, y: x | y, a, b, grad=False)
    check(lambda m, x, y: x ^ y, a, b, grad=False)
    check(lambda m, x: x + 1, a, grad=False)
    check(lambda m, x: x * 1.5, a, grad=False)


def test_int_float_gradient_flows_to_float_only():
    a = rnd(3, dtype="int64", seed=1)
    b = rnd(3, seed=2)
    check(lambda m, x, y: x * y, a, b)
    check(lambda m, x, y: x + y, b, a)


def test_mixed_precision_gradient_dtype():
    # the gradient of each input has that input's dtype
    a = rnd(3, seed=1)
    b = rnd(3, dtype="float64", seed=2)
    check(lambda m, x, y: x * y, a, b)
    check(lambda m, x, y: x * y, a, b, dtypes=["float16", "float32"], rtol=1e-2, atol=1e-2)


# ----------------------------------------------------- comparisons, logic
@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_comparison_operators(op):
    a = rnd(3, 4, dtype="int64", seed=1).astype(np.float32)
    b = rnd(4, dtype="int64", seed=2).astype(np.float32)
    check(eval(f"lambda m, x, y: x {op} y"), a, b, grad=False)
    check(eval(f"lambda m, x: x {op} 1"), a, grad=False)
    check(eval(f"lambda m, x: 1.0 {op} x"), a, grad=False)


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"])
def test_comparison_functions(name):
    a = rnd(2, 3, dtype="int32", seed=1)
    b = rnd(3, dtype="int64", seed=2)
    check(lambda m, x, y: getattr(m, name)(x, y), a, b, grad=False)
    check(lambda m, x, y: getattr(x, name)(y), a, b, grad=False)


def test_logical_not_and_nan_comparisons():
    a = np.array([0.0, 1.0, np.nan, -2.0], dtype=np.float32)
    check(lambda m, x: m.logical_not(x), a, grad=False)
    check(lambda m, x: x == x, a, grad=False)
    check(lambda m, x: x != x, a, grad=False)
    check(lambda m, x: x < 0.5, a, grad=False)


@pytest.mark.parametrize("name", ["isfinite", "isnan", "isinf"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool"])
def test_isfinite_family(name, dtype):
    a = np.array([0.0, np.inf, -np.inf, np.nan, 1.0, -3.5], dtype=np.float64)
    if dtype in ("int64", "bool"):
        a = np.array([0, 1, 5, -1], dtype=np.int64)
        a = a.astype(dtype)
    else:
        a = a.astype(dtype)
    check(lambda m, x: getattr(m, name)(x), a, grad=False)
    check(lambda m, x: getattr(x, name)(), a, grad=False)


# ------------------------------------------------------- where, clamp
@pytest.mark.parametrize("sc,sa,sb", [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), ()), ((4,), (3, 4), (3, 1)),
                                      ((), (2,), (2,)), ((0, 2), (2,), ())])
def test_where(sc, sa, sb):
    c = rnd(*sc, dtype="bool", seed=7)
    check(lambda m, cond, x, y: m.where(cond, x, y), c, rnd(*sa, seed=1), rnd(*sb, seed=2))


def test_where_scalars_and_promotion():
    c = rnd(5, dtype="bool", seed=3)
    x = rnd(5, seed=4)
    check(lambda m, cond, a: m.where(cond, a, 0.0), c, x)
    check(lambda m, cond, a: m.where(cond, 2, a), c, x)
    check(lambda m, cond, a: m.where(cond, a, 2), c, x.astype(np.int32), grad=False)
    check(lambda m, cond, a, b: m.where(cond, a, b), c, x.astype(np.int64), x.astype(np.float64))
    check(lambda m, cond: m.where(cond, 1.0, 0.0), c, grad=False)
    check(lambda m, cond: m.where(cond, 1, 0), c, grad=False)
    check(lambda m, a, b: m.where(a > 0, a, b), x, rnd(5, seed=8))
    check(lambda m, a, b: a.where(a > 0, b), x, rnd(5, seed=8))
    check(lambda m, a: a.where(a > 0, 0.5), x)


def test_where_gradcheck():
    c = lucid.tensor(rnd(3, 4, dtype="bool", seed=9))
    gradcheck(lambda a, b: lucid.where(c, a, b), rnd(3, 1, dtype="float64"), rnd(4, dtype="float64", seed=2))


@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (None, 0.2), (-0.2, None), (0.5, -0.5), (-1, 1)])
def test_clamp_scalars(lo, hi):
    x = rnd(4, 5, seed=3)
    check(lambda m, a: m.clamp(a, lo, hi), x)
    check(lambda m, a: a.clamp(min=lo, max=hi), x)
    check(lambda m, a: a.clip(lo, hi), x)


def test_clamp_tensors_and_ints():
    x, lo, hi = rnd(4, 5, seed=3), rnd(5, seed=4) - 0.5, rnd(4, 1, seed=5) + 0.5
    check(lambda m, a, b, c: m.clamp(a, b, c), x, lo, hi)
    check(lambda m, a, b: m.clamp(a, min=b), x, lo)
    check(lambda m, a, c: m.clamp(a, max=c), x, hi)
    check(lambda m, a: m.clamp(a, -2, 3), rnd(6, dtype="int64", seed=6), grad=False)
    check(lambda m, a: m.clamp(a, -2.5, 3.5), rnd(6, dtype="int64", seed=6), grad=False)
    nan = np.array([np.nan, 1.0, -5.0], dtype=np.float32)
    check(lambda m, a: m.clamp(a, -1, 1), nan, grad=False)


def test_clamp_requires_a_bound():
    for m in (lucid, torch):
        x = m.ones(3)
        with pytest.raises(RuntimeError):
            m.clamp(x)


# ------------------------------------------------------------ 16-bit floats
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_arithmetic(dtype):
    a, b = rnd(4, 8, seed=1), np.abs(rnd(8, seed=2)) + 0.5
    tol = dict(rtol=1e-2 if dtype == "bfloat16" else 1e-3, atol=1e-3)
    for fn in [lambda m, x, y: x + y, lambda m, x, y: x * y, lambda m, x, y: x / y, lambda m, x, y: x - 2 * y,
               lambda m, x, y: m.exp(x) + m.sqrt(y), lambda m, x, y: m.tanh(x) * m.sigmoid(y),
               lambda m, x, y: m.maximum(x, y)]:
        check(fn, a, b, dtypes=[dtype, dtype], grad_rtol=2e-2, grad_atol=2e-2, **tol)
    check(lambda m, x: nnf(m, "gelu")(x), a, dtypes=[dtype], grad_rtol=2e-2, grad_atol=2e-2, **tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_storage_round_trip(dtype):
    vals = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 6.1e-5, 5.96e-8, 1e-3, 3.14159, np.inf, -np.inf, np.nan],
                    dtype=np.float32)
    if dtype == "bfloat16":
        vals = np.concatenate([vals, np.array([3e38, 1e-38, 9.2e-41], dtype=np.float32)])
    t_ref = torch.from_numpy(vals).to(LUCID_TO_TORCH[getattr(lucid, dtype)])
    lt = lucid.tensor(vals).to(getattr(lucid, dtype))
    assert_close(lt, t_ref, rtol=0, atol=0)  # rounding to nearest even, bit for bit
    assert_close(lt.float(), t_ref.float(), rtol=0, atol=0)
    # random values across many binades
    x = (rnd(1000, seed=3) * np.exp(rnd(1000, seed=4) * 4)).astype(np.float32)
    assert_close(lucid.tensor(x).to(getattr(lucid, dtype)), torch.from_numpy(x).to(LUCID_TO_TORCH[getattr(lucid, dtype)]),
                 rtol=0, atol=0)
    if dtype == "float16":  # NumPy has float16: round trip through it (overflow to inf is expected)
        x = x[np.abs(x) < 65504]
        h = lucid.tensor(x.astype(np.float16))
        assert h.dtype == lucid.float16
        np.testing.assert_array_equal(h.numpy(), x.astype(np.float16))


# ---------------------------------------------------------------- errors
def _raises_like_torch(fn, *arrays, match=None):
    """fn(lib, *tensors) raises on both sides; lucid's error is an instance
    of torch's error type, and its message matches `match`."""
    t_args = [torch.from_numpy(np.array(a)) for a in arrays]
    l_args = [lucid.tensor(np.array(a)) for a in arrays]
    with pytest.raises(Exception) as t_err:
        fn(torch, *t_args)
    with pytest.raises(type(t_err.value), match=match):
        fn(lucid, *l_args)


def test_broadcast_mismatch_error():
    _raises_like_torch(lambda m, x, y: x + y, rnd(2, 3), rnd(4), match=r"\[2, 3\].*\[4\]")
    _raises_like_torch(lambda m, x, y: m.maximum(x, y), rnd(2, 3), rnd(3, 2), match=r"\[2, 3\].*\[3, 2\]")
    _raises_like_torch(lambda m, x, y, z: m.where(x > 0, y, z), rnd(2), rnd(3), rnd(2), match=r"\[2\].*\[3\]")


def test_bool_subtraction_and_negation_errors():
    b = rnd(3, dtype="bool")
    _raises_like_torch(lambda m, x: x - x, b, match="with a bool tensor is not supported")
    _raises_like_torch(lambda m, x: -x, b, match="logical_not")


def test_where_condition_must_be_bool():
    x = rnd(3)
    _raises_like_torch(lambda m, a: m.where(a, a, a), x, match="bool")


def test_unsupported_operand():
    x = lucid.ones(2)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x * object()


def test_failed_op_changes_nothing():
    x = lucid.tensor([1.0, 2.0, 3.0])
    before = x.numpy().copy()
    with pytest.raises(RuntimeError):
        x.add_(lucid.ones(4))
    np.testing.assert_array_equal(x.numpy(), before)
    assert x._version == 0


@pytest.mark.parametrize("name,lo,hi,max_ulp", [("exp", -103.9, 88.7, 1.5), ("tanh", -10, 10, 1.5),
                                                ("erf", -5, 5, 1.5), ("sigmoid", -30, 30, 2.5)])
def test_float32_transcendental_accuracy(name, lo, hi, max_ulp):
    """float32 exp/tanh/erf are Lucid's own vectorisable approximations: keep
    them within ~1 ulp of the exact (float64) values over their whole range,
    subnormal results included."""
    x = np.linspace(lo, hi, 200001, dtype=np.float32)
    got = getattr(lucid, name)(lucid.tensor(x)).numpy().astype(np.float64)
    ref = getattr(torch, name)(torch.from_numpy(x).double()).numpy()
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    assert (np.abs(got - ref) / ulp).max() <= max_ulp


def test_float32_log_accuracy():
    """float32 log is Lucid's own vectorisable approximation: within 1 ulp of
    the exact value on positive floats of every binade, subnormals included."""
    x = np.arange(1, 0x7F800000, 4099, dtype=np.int64).astype(np.int32).view(np.float32)
    got = lucid.log(lucid.tensor(x)).numpy().astype(np.float64)
    ref = np.log(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    assert (np.abs(got - ref) / ulp).max() <= 1.0


def test_multithreaded_sizes():
    """Sizes above the parallel grain, split across threads mid-row."""
    a, b = rnd(301, 257, seed=1), rnd(257, seed=2)
    check(lambda m, x, y: x * y + 1.0, a, b)
    check(lambda m, x, y: x - y, a, rnd(301, 1, seed=3))
    check(lambda m, x, y: m.maximum(x, y), rnd(7, 1, 40, 65, seed=4), rnd(3, 1, 1, seed=5), grad=False)
    check(lambda m, x: m.where(x > 0, x, x * 0.1), a)
    check(lambda m, x: m.tanh(x).sigmoid().exp(), a)
    check(lambda m, x: x.to(m.float64) * 2, a)
    check(lambda m, x: x.permute(1, 0) + 0.0, a)
    check(lambda m, x: x[3:290:2, 1:] * 1.0, a)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf", "sigmoid", "gelu", "silu"])
def test_results_do_not_depend_on_length(name):
    """Vectorised loop bodies and scalar tails compute the same bits, so a
    value does not change with the tensor's length or its split across threads."""
    fn = {"gelu": nnf(lucid, "gelu"), "silu": nnf(lucid, "silu")}.get(name) or getattr(lucid, name)
    x = lucid.tensor(rnd(1 << 16, seed=12) * 4)
    full = fn(x).numpy()
    pieces = np.concatenate([fn(x[i:i + 7]).numpy() for i in range(0, 350, 7)])
    np.testing.assert_array_equal(full[:350].view(np.int32), pieces.view(np.int32))


@pytest.mark.parametrize("name", ["exp", "log", "erf", "tanh", "sigmoid"])
def test_float32_transcendental_special_values(name):
    """NaN, infinities, signed zeros, overflow and the clamping edges of the
    float32 approximations, as PyTorch gives them."""
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 88.7, 89.5, 100.0, -87.5, -103.9, -104.5, -120.0,
                  0.927734375, -0.927734375, 0.9277, 3.9, -3.9, 4.5, 1e-30, -1e-30], np.float32)
    got = getattr(lucid, name)(lucid.tensor(x)).numpy()
    ref = getattr(torch, name)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, ref, rtol=3e-7, atol=0)
    # a NaN's sign bit carries no meaning (PyTorch's own CPU and CUDA kernels differ in it)
    number = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(got)[number], np.signbit(ref)[number])


_BITWISE = {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b,
            ">>": lambda a, b: a >> b, "bitwise_and": lambda a, b: a.bitwise_and(b),
            "bitwise_right_shift": lambda a, b: a.bitwise_right_shift(b), "& 6": lambda a, b: a & 6,
            "5 ^": lambda a, b: 5 ^ b, "<< 3": lambda a, b: a << 3, "1 <<": lambda a, b: 1 << b,
            ">> 70": lambda a, b: a >> 70, "~": lambda a, b: ~a}


@pytest.mark.parametrize("name", sorted(_BITWISE))
@pytest.mark.parametrize("da,db", [("int64", "int64"), ("int32", "int32"), ("int32", "int64"), ("bool", "bool"),
                                   ("bool", "int32"), ("int64", "bool"), ("float32", "int64"), ("int32", "float32")])
def test_bitwise_ops_match_torch(name, da, db):
    """Bit operations on integers and bools with PyTorch's promotion, its
    shifts by negative and too-large counts, and its errors for floats."""
    rng = np.random.default_rng(0)
    values = {"bool": rng.random((3, 5)) > 0.5, "float32": rng.standard_normal((3, 5)),
              "int64": rng.integers(-2 ** 40, 2 ** 40, (3, 5)), "int32": rng.integers(-300, 300, (3, 5))}
    counts = np.array([-1, 0, 1, 31, 63])  # a shift count per column, past each width and below 0
    outcome = []
    for m in (torch, lucid):
        a = m.tensor(values[da]).to(getattr(m, da))
        b = m.tensor(counts if db.startswith("int") else values[db][0]).to(getattr(m, db))
        try:
            r = _BITWISE[name](a, b)
            outcome.append((str(r.dtype).split(".")[-1], r.numpy().tolist()))
        except (RuntimeError, TypeError, NotImplementedError) as e:
            outcome.append(type(e).__name__)
    assert outcome[1] == outcome[0]


def test_bitwise_in_place_operators():
    results = []
    for m in (torch, lucid):
        a = m.tensor([5, 3, -8])
        alias = a
        a &= 6
        a |= 1
        a ^= 2
        a <<= 2
        a >>= 1
        assert a is alias  # in place, as PyTorch's
        results.append(a.tolist())
    assert results[1] == results[0]


_SPECIAL_ARGS = np.array([-5.0, -4.5, -2.0, -1.5, -0.5, -1e-8, 0.0, -0.0, 1e-300, 1e-8, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5,
                          3.0, 7.3, 9.999, 10.0, 10.5, 30.0, 171.5, 1e5, 1e17, 1e300, np.inf, -np.inf, np.nan])
_ERFINV_ARGS = np.array([-1.0, -0.999999, -0.9, -0.5, -1e-10, 0.0, 1e-10, 0.3, 0.7, 0.99, 0.9999999, 1.0, 1.1, -1.1,
                         np.nan])
_SPECIAL = {"lgamma": (lambda m, t: m.lgamma(t), _SPECIAL_ARGS, 1e-13),
            "digamma": (lambda m, t: m.digamma(t), _SPECIAL_ARGS, 1e-12),
            "polygamma1": (lambda m, t: m.polygamma(1, t), _SPECIAL_ARGS, 1e-12),
            "erfinv": (lambda m, t: m.erfinv(t), _ERFINV_ARGS, 1e-13),
            "special.gammaln": (lambda m, t: m.special.gammaln(t), _SPECIAL_ARGS, 1e-13),
            "special.psi": (lambda m, t: m.special.psi(t), _SPECIAL_ARGS, 1e-12),
            "method": (lambda m, t: t.lgamma() + t.abs().add(1).digamma(), _SPECIAL_ARGS[4:], 1e-12)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(_SPECIAL))
def test_special_functions_match_torch(name, dtype):
    """Poles, negative arguments (reflection), tiny and huge arguments,
    infinities and NaN; float64 to ~1e-13, float32 to 1e-5."""
    fn, x, rtol = _SPECIAL[name]
    if name == "polygamma1" and dtype == "float32":
        x = x[(x != np.trunc(x)) | (x > 0)]  # at its poles PyTorch's float32 trigamma is a finite rounding artefact
    want = fn(torch, torch.tensor(x).to(getattr(torch, dtype))).double().numpy()
    got = fn(lucid, lucid.tensor(x).to(getattr(lucid, dtype))).double().numpy()
    np.testing.assert_allclose(got, want, rtol=rtol if dtype == "float64" else 1e-5, atol=0, equal_nan=True)


def test_special_function_gradients_and_forms_match_torch():
    for fn, x in [(lambda m, t: m.lgamma(t), [0.3, 2.5, -1.5]), (lambda m, t: m.digamma(t), [0.3, 2.5, -1.5]),
                  (lambda m, t: m.erfinv(t), [-0.9, 0.2, 0.7]), (lambda m, t: m.mvlgamma(t, 3), [1.2, 4.0])]:
        grads = []
        for m in (torch, lucid):
            t = m.tensor(x, dtype=m.float64).requires_grad_()
            fn(m, t).sum().backward()
            grads.append(t.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    for m in (torch, lucid):  # integers compute in the default float type
        assert str(m.tensor([1, 2, 3]).lgamma().dtype).endswith("float32")
    np.testing.assert_allclose(lucid.mvlgamma(lucid.tensor([2.5, 3.0]), 3).numpy(),
                               torch.mvlgamma(torch.tensor([2.5, 3.0]), 3).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="greater than"):
        lucid.mvlgamma(lucid.tensor([0.5]), 3)
    with pytest.raises(NotImplementedError, match="order 2"):
        lucid.polygamma(2, lucid.tensor([1.0]))
    x = lucid.tensor([1.5])
    x.polygamma_(1)
    np.testing.assert_allclose(x.numpy(), torch.tensor([1.5]).polygamma_(1).numpy(), rtol=1e-6)


# Cases the semantics probe (python -m tests.fuzz.semantics) found differing
# from PyTorch; each source runs with T = torch and T = lucid and must give
# the same values, dtypes, shapes and exception kinds.
PROMOTION_CASES = [
    # augmented assignment is in place, and refuses a result it cannot cast
    "a = T.tensor([-3.5, 2.5])\nkeep = a\na %= 2\nresult = (a, a is keep)",
    "a = T.tensor([7, -7])\nkeep = a\na //= T.tensor(2)\nresult = (a, a is keep)",
    "a = T.tensor([3, 2])\nkeep = a\na **= 2\nresult = (a, a is keep)",
    "a = T.tensor([True, False])\na %= T.tensor([6, 5])\nresult = a",
    "a = T.tensor([1, 2])\na **= T.tensor([0.5, 1.0], dtype=T.float16)\nresult = a",
    # out=: cast within a category, refuse a lower one, resize an empty out
    "a = T.tensor([1, 2], dtype=T.uint8)\no = T.empty(0, dtype=T.float64)\nr = T.div(a, 7, out=o)\n"
    "result = (o, r is o)",
    "a = T.tensor([1.5, 2.5])\no = T.empty(2, dtype=T.int32)\nresult = T.floor_divide(a, 1.0, out=o)",
    "a = T.tensor([1, 2], dtype=T.uint8)\nr = T.maximum(a, T.tensor(1.5), out=a)\nresult = (r, a)",
    "a = T.tensor([0.5, 0.0])\no = T.empty(0, dtype=T.bool)\nr = T.logical_and(a, a, out=o)\nresult = (o, r is o)",
    "a = T.tensor([0.5, 0.0])\no = T.empty(0, dtype=T.float64)\nr = T.eq(a, a, out=o)\nresult = (o, r is o)",
    "a = T.tensor([0.5, 0.0], requires_grad=True)\nresult = T.add(a, 1, out=T.empty(2))",
    "a = T.tensor([0.5, 0.0])\nresult = T.clamp(a, 0, 1, out=T.empty(2, dtype=T.float64))",
    # float-valued binary ops promote like the arithmetic ones
    "result = T.xlogy(T.tensor(-4), T.tensor(5.0, dtype=T.bfloat16))",
    "result = T.xlogy(T.tensor([[3], [-5]], dtype=T.int16), T.tensor(-2.5, dtype=T.float16))",
    "result = T.logaddexp(T.tensor([[-4], [1]]), T.tensor([[4.0], [2.0]], dtype=T.bfloat16))",
    "result = T.logaddexp(T.tensor([1], dtype=T.int8), T.tensor([2], dtype=T.int8))",
    "result = T.copysign(T.tensor([0, 3], dtype=T.uint8), T.tensor([-5.0, 1.0], dtype=T.float64))",
    "result = T.ldexp(T.tensor(-2.5, dtype=T.float64), T.tensor([[5.0, -3.0]], dtype=T.float16))",
    "result = T.ldexp(T.tensor(1.5, dtype=T.bfloat16), T.tensor(2.0))",
    "result = T.ldexp(T.tensor(True), T.tensor(-5.0, dtype=T.bfloat16))",
    # clamp compares in the result dtype; an unsigned bound may wrap as PyTorch's check allows
    "result = T.clamp(T.tensor([1, 0, 2], dtype=T.uint8), -2, 0.5)",
    "result = T.clamp(T.tensor([112, 131], dtype=T.uint8), None, -2)",
    "result = T.clamp(T.tensor([112, 131], dtype=T.uint8), -2, None)",
    "result = T.clamp(T.tensor([1, -3], dtype=T.int8), None, 300)",
    "result = T.angle(T.tensor([-2, 0, 3], dtype=T.int8))",
    "result = T.tensor([-1.5, 0.0, float('nan'), 2.0]).angle()",
    "result = T.sinc(T.tensor([1.9140625, -2.5, -4.0, -3.0], dtype=T.bfloat16))",
    "result = T.heaviside(T.tensor([-1, 0, 2]), T.tensor([5, 5, 5], dtype=T.uint8))",
    "result = T.gcd(T.tensor([6], dtype=T.uint8), T.tensor([True]))",
    "result = T.gcd(T.tensor([True]), T.tensor([False]))",
    "result = T.lcm(T.tensor([-2.5]), T.tensor([4]))",
]


@pytest.mark.parametrize("src", PROMOTION_CASES)
def test_promotion_matches_torch(src):
    from tests.fuzz.semantics import check as difference_from_torch

    assert difference_from_torch(src) is None, difference_from_torch(src)
