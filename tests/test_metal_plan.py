"""The Metal backend's decisions, tested on the CPU: its lowering plans
(csrc/lucid/backend/metal/*.cpp) run by the reference interpreter of the
MPSGraph operations they use, compared with the CPU backend.

Every primitive kind the metal device supports is lowered through both of
its paths (the eager single-op plan of kernels.mm and the whole-step plan of
executable.mm) and, for the semantics MPSGraph's documentation leaves open,
under each reading (float modulo as fmod or floor-mod; reductions keeping or
dropping their axes): the plan must give the CPU's answer under every one.
Whole training steps run through the step plan, with its in-place update
buffers (the interpreter refuses a run that reads and writes one buffer).
"""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from lucid import _C
from lucid.compile import compile_optimizer, fused_step, make_step
from lucid.compile._trace import tracing

PLAN = _C._metal_plan
VARIANTS = {
    "step": dict(),
    "eager": dict(eager=True),
    "floormod": dict(floor_modulo=True),
    "dropaxes": dict(drop_reduced_axes=True),
}

SPECIAL = np.array([-3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 2.5, 10.0, np.nan, np.inf, -np.inf, 1e-8, -1e-8, 80.0,
                    -100.0, 0.5, 1.5, 2.0, -2.5], dtype=np.float32)
POSITIVE = np.array([0.0, 1e-30, 1e-3, 0.5, 1.0, 2.0, 7.5, 1e4, np.inf, np.nan], dtype=np.float32)


def arr(a, dtype=None):
    a = np.asarray(a)
    t = lucid.tensor(a.astype(np.float32) if a.dtype == np.float64 else a)
    return t.to(dtype) if dtype is not None else t


def rand(*shape, seed=0, dtype=None, low=-2.0, high=2.0):
    a = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    return arr(a, dtype)


def ints(*shape, seed=0, low=-9, high=10, dtype=lucid.int64):
    return arr(np.random.default_rng(seed).integers(low, high, shape).astype(np.int64), dtype)


def _numpy(t):
    if t.dtype in (lucid.float16, lucid.bfloat16):
        return t.float().numpy(), True
    return np.array(t.numpy()), False


def assert_same(got, want, what, rtol=1e-5, atol=1e-6):
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    g, half = _numpy(got)
    w, _ = _numpy(want)
    if g.dtype.kind == "f":
        if half:
            rtol, atol = max(rtol, 1e-2), max(atol, 1e-2)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def trace(fn, inputs):
    tracer = _C.GraphTracer()
    syms = [tracer.input(list(t.shape), t.dtype, "cpu") for t in inputs]
    with tracing(tracer):
        for o in _outputs(fn(*syms)):
            tracer.output(o)
    return tracer


def kinds_of(fn, inputs, optimize=True):
    rec = PLAN.PlanRecorder()
    trace(fn, inputs).compile_with(rec.compiler(optimize=optimize))
    return {k for k, _, _ in rec.keys}


# ------------------------------------------------------------ the cases
# (name, fn, inputs factory, primitive kinds it must lower, tolerances)
def _unary_cases():
    ops = {
        "neg": lambda x: -x, "abs": lambda x: x.abs(), "sign": lambda x: x.sign(), "exp": lambda x: x.exp(),
        "log": lambda x: x.log(), "log1p": lambda x: x.log1p(), "expm1": lambda x: x.expm1(),
        "sqrt": lambda x: x.sqrt(), "rsqrt": lambda x: x.rsqrt(), "square": lambda x: x.square(),
        "reciprocal": lambda x: x.reciprocal(), "sin": lambda x: x.sin(), "cos": lambda x: x.cos(),
        "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(), "relu": lambda x: x.relu(),
        "gelu": lambda x: F.gelu(x), "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "silu": lambda x: F.silu(x), "erf": lambda x: x.erf(), "floor": lambda x: x.floor(),
        "ceil": lambda x: x.ceil(), "round": lambda x: x.round(), "trunc": lambda x: x.trunc(),
        "logical_not": lambda x: x.logical_not(), "isfinite": lambda x: x.isfinite(),
        "isnan": lambda x: x.isnan(), "isinf": lambda x: x.isinf(),
    }
    out = []
    for name, fn in ops.items():
        out.append((f"unary_{name}_f32", fn, lambda: [arr(SPECIAL)], {"Unary"}))
        out.append((f"unary_{name}_f16", fn, lambda: [rand(3, 5, seed=1, dtype=lucid.float16)], {"Unary"}))
    for name in ("neg", "abs", "sign", "square", "relu", "logical_not", "isfinite", "isnan", "isinf"):
        kinds = set() if name.startswith("is") else {"Unary"}  # constants for integers, folded before lowering
        out.append((f"unary_{name}_i32", ops[name], lambda: [ints(4, 5, dtype=lucid.int32)], kinds))
        out.append((f"unary_{name}_i64", ops[name], lambda: [ints(4, 5, seed=2)], kinds))
    out.append(("unary_logical_not_bool", ops["logical_not"], lambda: [arr([True, False, True])], {"Unary"}))
    for dt in (lucid.int32, lucid.int64):
        out.append((f"unary_bitwise_not_{dt}", lambda x: ~x, lambda dt=dt: [ints(4, 5, dtype=dt)], {"Unary"}))
    return out


def _binary_cases():
    ops = {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
        "floor_divide": lambda a, b: a.floor_divide(b), "remainder": lambda a, b: a.remainder(b),
        "pow": lambda a, b: a.pow(b), "maximum": lambda a, b: a.maximum(b), "minimum": lambda a, b: a.minimum(b),
        "atan2": lambda a, b: a.atan2(b), "eq": lambda a, b: a.eq(b), "ne": lambda a, b: a.ne(b),
        "lt": lambda a, b: a.lt(b), "le": lambda a, b: a.le(b), "gt": lambda a, b: a.gt(b), "ge": lambda a, b: a.ge(b),
        "logical_and": lambda a, b: a.logical_and(b), "logical_or": lambda a, b: a.logical_or(b),
        "logical_xor": lambda a, b: a.logical_xor(b), "bitwise_and": lambda a, b: a & b,
        "bitwise_or": lambda a, b: a | b, "bitwise_xor": lambda a, b: a ^ b,
    }
    grid_a = np.repeat(SPECIAL, SPECIAL.size).reshape(SPECIAL.size, SPECIAL.size)
    grid_b = grid_a.T.copy()
    out = []
    for name, fn in ops.items():
        if name.startswith("bitwise"):
            continue  # bool operands only (below): integer bit operations have no Metal lowering
        out.append((f"binary_{name}_f32", fn, lambda: [arr(grid_a), arr(grid_b)], {"Binary"}))
        out.append((f"binary_{name}_bcast_f16", fn,
                    lambda: [rand(3, 1, 4, seed=3, dtype=lucid.float16), rand(5, 1, seed=4, dtype=lucid.float16)],
                    {"Binary"}))
        if name not in ("atan2",):
            ia = np.array([-7, -7, 7, 7, 0, 5, -5, 9, -9, 1, -1, 3], dtype=np.int64)
            ib = np.array([2, -2, 2, -2, 3, 0, 0, 1, -1, -4, 4, 3], dtype=np.int64)
            if name == "pow":
                ib = np.abs(ib) % 5 - np.array([0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 2])
            if name in ("floor_divide", "remainder"):  # by zero raises (test_integer_division_by_zero_raises)
                ib = np.where(ib == 0, 7, ib)
            out.append((f"binary_{name}_i64", fn, lambda ia=ia, ib=ib: [arr(ia), arr(ib)], {"Binary"}))
            out.append((f"binary_{name}_i32", fn,
                        lambda ia=ia, ib=ib: [arr(ia, lucid.int32), arr(ib, lucid.int32)], {"Binary"}))
    bools = lambda: [arr([True, True, False, False]), arr([True, False, True, False])]  # noqa: E731
    for name in ("add", "mul", "maximum", "minimum", "eq", "ne", "logical_and", "logical_or", "logical_xor", "lt", "ge",
                 "bitwise_and", "bitwise_or", "bitwise_xor"):
        out.append((f"binary_{name}_bool", ops[name], bools, {"Binary"}))
    return out


CAST_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"]


def _cast_cases():
    vals = np.array([-3.7, -1.0, -0.5, 0.0, 0.4, 1.0, 2.5, 3.9, 100.0, -100.0, np.nan, 65504.0], dtype=np.float32)
    # values that wrap or are out of range: defined for the 8- and 16-bit targets
    wrapping = np.array([300.7, -200.0, 40000.0, -129.5, 3e9, -np.inf], dtype=np.float32)
    out = []
    for src in CAST_DTYPES:
        for dst in CAST_DTYPES:
            if src == dst:
                continue

            def make(src=src, vals=np.concatenate([vals, wrapping]) if dst in ("uint8", "int8", "int16") else vals):
                if src in ("uint8", "int8", "int16", "int32", "int64", "bool"):
                    finite = vals[np.isfinite(vals) & (np.abs(vals) < 1e9)]
                    return [arr(finite.astype(np.int64)).to(getattr(lucid, src))]
                return [arr(vals).to(getattr(lucid, src))]

            out.append((f"cast_{src}_{dst}", lambda x, dst=dst: x.to(getattr(lucid, dst)), make, {"Cast"}))
    return out


def _reduce_cases():
    out = []
    x = lambda: [rand(3, 4, 5, seed=5)]  # noqa: E731
    for name, fn in {
        "sum": lambda t: t.sum((0, 2)), "sum_keep": lambda t: t.sum(1, keepdim=True), "sum_all": lambda t: t.sum(),
        "prod": lambda t: t.prod(1), "max": lambda t: t.amax((1, 2)), "min": lambda t: t.amin(0),
        "mean": lambda t: t.mean(-1), "all": lambda t: (t > 0).all(1), "any": lambda t: (t > 1).any((0, 1)),
        "var": lambda t: t.var(1),
    }.items():
        out.append((f"reduce_{name}", fn, x, {"Reduce"}))
    out.append(("reduce_max_nan", lambda t: t.amax(1), lambda: [arr([[1.0, np.nan, 3.0], [2.0, 1.0, -np.inf]])],
                {"Reduce"}))
    out.append(("reduce_sum_i32", lambda t: t.sum(0), lambda: [ints(4, 3, dtype=lucid.int32)], {"Reduce"}))
    out.append(("reduce_max_i64", lambda t: t.amax(1), lambda: [ints(4, 3, seed=3)], {"Reduce"}))
    out.append(("reduce_min_i32", lambda t: t.amin(1), lambda: [ints(4, 3, seed=4, dtype=lucid.int32)], {"Reduce"}))
    out.append(("reduce_sum_f16", lambda t: t.sum(1), lambda: [rand(4, 6, seed=6, dtype=lucid.float16)], {"Reduce"}))
    out.append(("reduce_empty_sum", lambda t: t.sum(0), lambda: [arr(np.zeros((0, 3), np.float32))], {"Reduce"}))
    out.append(("reduce_empty_prod_i64", lambda t: t.prod(0), lambda: [arr(np.zeros((0, 3), np.int64))], {"Reduce"}))
    out.append(("argmax", lambda t: t.argmax(1), lambda: [arr([[1.0, 3.0, 3.0, 2.0], [np.nan, 1.0, np.nan, 5.0]])],
                {"ArgReduce"}))
    out.append(("argmin_keep", lambda t: t.argmin(0, keepdim=True), lambda: [rand(5, 3, seed=7)], {"ArgReduce"}))
    out.append(("argmax_i32", lambda t: t.argmax(0), lambda: [arr([[1, 5], [5, 2], [0, 5]], lucid.int32)],
                {"ArgReduce"}))
    out.append(("argmax_all", lambda t: t.argmax(), lambda: [rand(3, 4, seed=8)], {"ArgReduce"}))
    return out


def _linalg_shape_cases():
    out = [
        ("matmul", lambda a, b: a @ b, lambda: [rand(4, 5, seed=1), rand(5, 3, seed=2)], {"Matmul"}),
        ("matmul_batched_f16", lambda a, b: a @ b,
         lambda: [rand(2, 3, 4, seed=1, dtype=lucid.float16), rand(2, 4, 2, seed=2, dtype=lucid.float16)], {"Matmul"}),
        ("matmul_bcast", lambda a, b: a @ b, lambda: [rand(2, 3, 4, seed=3), rand(4, 5, seed=4)], {"Matmul"}),
        ("matmul_int", lambda a, b: a @ b, lambda: [ints(3, 4, seed=1), ints(4, 2, seed=2)], {"Matmul"}),
        ("linear_transposed", lambda x, w: F.linear(x, w), lambda: [rand(6, 4, seed=5), rand(3, 4, seed=6)],
         {"Matmul"}),
        ("matmul_vec", lambda a, b: a @ b, lambda: [rand(4, seed=1), rand(4, 3, seed=2)], {"Matmul"}),
        ("reshape", lambda t: t.reshape(6, 2) * 2, lambda: [rand(3, 4)], {"Reshape"}),
        ("split_with_sizes", lambda t: [p * (k + 1) for k, p in enumerate(_C.split_with_sizes(t, [1, 0, 3, 2], 1))],
         lambda: [rand(3, 6)], {"Split"}),
        ("split_with_sizes_i64", lambda t: [p + k for k, p in enumerate(_C.split_with_sizes(t, [2, 1], 0))],
         lambda: [ints(3, 4)], {"Split"}),
        ("permute", lambda t: t.permute(2, 0, 1) + 1, lambda: [rand(2, 3, 4)], {"Permute"}),
        ("transpose", lambda t: t.transpose(0, 1) * 1, lambda: [ints(3, 2)], {"Permute"}),
        ("expand", lambda t: t.expand(3, 4) + 0, lambda: [rand(1, 4)], {"Broadcast"}),
        ("broadcast_add", lambda a, b: a + b, lambda: [rand(3, 1), rand(1, 4)], {"Binary"}),
        ("slice", lambda t: t[1:, ::2] * 1, lambda: [rand(4, 5)], {"Slice"}),
        ("slice_i64", lambda t: t[:, 1:4:2] * 1, lambda: [ints(3, 6)], {"Slice"}),
        ("narrow", lambda t: t.narrow(1, 1, 2) + 0, lambda: [rand(3, 4)], {"Slice"}),
        ("cat", lambda a, b: lucid.cat([a, b], 1), lambda: [rand(2, 3), rand(2, 2, seed=1)], {"Concat"}),
        ("stack_i32", lambda a, b: lucid.stack([a, b], 0),
         lambda: [ints(3, dtype=lucid.int32), ints(3, seed=1, dtype=lucid.int32)], {"Concat"}),
        ("where", lambda c, a, b: lucid.where(c, a, b),
         lambda: [arr([[True, False, True]]), rand(2, 3), rand(2, 1, seed=1)], {"Where"}),
        ("where_i64", lambda c, a, b: lucid.where(c, a, b),
         lambda: [arr([True, False]), ints(2), ints(2, seed=1)], {"Where"}),
        ("clone", lambda t: t.clone(), lambda: [rand(3)], set()),
    ]
    return out


def _index_cases():
    # Indices in [0, size): a negative one raises (test_negative_indices_raise_like_the_cpu).
    idx2 = lambda: np.array([[0, 2, 3], [1, 0, 2]], dtype=np.int64)  # noqa: E731
    return [
        ("gather", lambda x, i: x.gather(1, i), lambda: [rand(2, 4), arr(idx2())], {"Gather"}),
        ("gather_smaller", lambda x, i: x.gather(0, i), lambda: [rand(4, 3), arr(np.array([[3, 0], [1, 2]]))],
         {"Gather"}),
        ("gather_i32", lambda x, i: x.gather(1, i), lambda: [ints(2, 4, dtype=lucid.int32), arr(idx2())], {"Gather"}),
        ("scatter", lambda x, i, s: x.scatter(1, i, s),
         lambda: [rand(2, 4), arr(np.array([[0, 2, 3], [1, 0, 2]])), rand(2, 3, seed=1)], {"ScatterAdd"}),
        ("scatter_add", lambda x, i, s: x.scatter_add(1, i, s),
         lambda: [rand(2, 4), arr(np.array([[0, 0, 3], [1, 1, 1]])), rand(2, 3, seed=1)], {"ScatterAdd"}),
        ("scatter_add_smaller", lambda x, i, s: x.scatter_add(0, i, s),
         lambda: [rand(3, 4), arr(np.array([[2, 0], [0, 1]])), rand(3, 3, seed=2)], {"ScatterAdd"}),
        ("scatter_add_bool", lambda x, i, s: x.scatter_add(1, i, s),
         lambda: [arr([[False, True, False]]), arr(np.array([[0, 2]])), arr([[True, False]])], {"ScatterAdd"}),
        ("index_select", lambda x, i: x.index_select(0, i), lambda: [rand(4, 3), arr(np.array([3, 0, 1, 1]))],
         {"IndexSelect"}),
        ("index_select_i64", lambda x, i: x.index_select(1, i), lambda: [ints(2, 5), arr(np.array([4, 0]))],
         {"IndexSelect"}),
        ("index_add", lambda x, i, s: x.index_add(0, i, s),
         lambda: [rand(4, 3), arr(np.array([1, 1, 3])), rand(3, 3, seed=1)], {"IndexAdd"}),
        ("index_add_i32", lambda x, i, s: x.index_add(1, i, s),
         lambda: [ints(2, 3, dtype=lucid.int32), arr(np.array([0, 2])), ints(2, 2, seed=1, dtype=lucid.int32)],
         {"IndexAdd"}),
    ]


def _setitem(x, v, key):
    y = x.clone()
    y[key] = v
    return y


def _nn_cases():
    return [
        ("softmax", lambda x: F.softmax(x, 1), lambda: [rand(3, 5)], {"Softmax"}),
        ("log_softmax_f16", lambda x: F.log_softmax(x, -1), lambda: [rand(2, 3, 4, dtype=lucid.float16)],
         {"Softmax"}),
        ("softmax_inf_row", lambda x: F.softmax(x, 1), lambda: [arr([[-np.inf, -np.inf], [0.0, -np.inf]])],
         {"Softmax"}),
        ("layer_norm", lambda x: F.layer_norm(x, (4,)), lambda: [rand(3, 4)], {"LayerNorm"}),
        ("layer_norm_2d", lambda x: F.layer_norm(x, (3, 4)), lambda: [rand(2, 3, 4)], {"LayerNorm"}),
        ("conv2d", lambda x, w: F.conv2d(x, w, stride=1, padding=1), lambda: [rand(2, 3, 5, 5), rand(4, 3, 3, 3)],
         {"Conv2d"}),
        ("conv2d_strided_dilated", lambda x, w: F.conv2d(x, w, stride=2, padding=2, dilation=2),
         lambda: [rand(1, 2, 7, 6), rand(3, 2, 3, 2)], {"Conv2d"}),
        ("conv2d_groups_same_even", lambda x, w: F.conv2d(x, w, padding="same", groups=2),
         lambda: [rand(2, 4, 5, 6), rand(6, 2, 2, 4)], {"Conv2d"}),
        ("conv2d_f16", lambda x, w: F.conv2d(x, w, padding=(1, 0)),
         lambda: [rand(1, 3, 4, 5, dtype=lucid.float16), rand(2, 3, 3, 2, dtype=lucid.float16)], {"Conv2d"}),
        ("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2),
         lambda: [rand(2, 4, 3, 4), rand(4, 3, 3, 2)], {"Conv2dBackwardInput"}),
        ("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda: [rand(2, 3, 6, 6)], {"MaxPool2d"}),
        ("max_pool2d_pad_ceil", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
         lambda: [rand(1, 2, 7, 5)], {"MaxPool2d"}),
        ("avg_pool2d", lambda x: F.avg_pool2d(x, 2), lambda: [rand(1, 2, 4, 4)], {"Im2Col"}),
        ("as_strided", lambda x: x.as_strided((3, 2), (2, 5), 1) * 2, lambda: [rand(4, 5)], {"AsStrided"}),
        ("diagonal", lambda x: x.diagonal(1) + 1, lambda: [rand(4, 5)], {"StridedView"}),
        ("unfold_i64", lambda x: x.unfold(1, 3, 2) * 3, lambda: [ints(3, 7)], {"StridedView"}),
        ("setitem_slice", lambda x, v: _setitem(x, v, (slice(1, 3), slice(None, None, 2))),
         lambda: [rand(4, 5), rand(2, 3, seed=1)], {"AsStridedScatter"}),
        ("setitem_slice_i64", lambda x, v: _setitem(x, v, (slice(None), slice(1, 4, 2))),
         lambda: [ints(3, 5), ints(3, 2, seed=1)], {"AsStridedScatter"}),
        ("setitem_slice_bool", lambda x, v: _setitem(x, v, slice(0, 2)),
         lambda: [arr([True, True, False, True]), arr([False, False])], {"AsStridedScatter"}),
    ]


CASES = _unary_cases() + _binary_cases() + _cast_cases() + _reduce_cases() + _linalg_shape_cases() + \
    _index_cases() + _nn_cases()


def _variants(name):
    """Every case runs as a step plan and as eager plans; the two readings of
    undocumented semantics only where a plan uses them (float modulo in floor
    division and remainder, reductions wherever a plan reduces)."""
    out = ["step", "eager"]
    if "floor_divide" in name or "remainder" in name:
        out.append("floormod")
    if any(k in name for k in ("reduce", "arg", "softmax", "layer_norm", "matmul_int", "pool", "conv")):
        out.append("dropaxes")
    return out


PLAN_CASES = [pytest.param(*case, variant, id=f"{case[0]}-{variant}") for case in CASES for variant in
              _variants(case[0])]


@pytest.mark.parametrize("name, fn, make, kinds, variant", PLAN_CASES)
def test_plan_matches_cpu(name, fn, make, kinds, variant):
    inputs = make()
    want = _outputs(fn(*inputs))
    exe = trace(fn, inputs).compile_with(PLAN.reference_compiler(**VARIANTS[variant]))
    got = exe.run(inputs, [])
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"{name} [{variant}] output {k}")


def test_cases_lower_the_kinds_they_name():
    for name, fn, make, kinds in CASES:
        seen = kinds_of(fn, make())
        assert kinds <= seen, f"{name}: expected {kinds}, traced {seen}"


# ------------------------------------------------- creation and random
def _creation(x):
    return x + lucid.full((2, 3), 2.5) + lucid.arange(3).float() + lucid.rand(2, 3) + x.clone()


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "unoptimized"])
def test_creation_random_and_copy(variant, optimize):
    """Full, Arange and Copy (kept as nodes when the graph passes do not fold
    them into constants) and Philox draws made on the host."""
    x = rand(2, 3)
    lucid.manual_seed(7)
    want = _creation(x)
    exe = trace(_creation, [x]).compile_with(PLAN.reference_compiler(optimize=optimize, **VARIANTS[variant]))
    lucid.manual_seed(7)
    got = exe.run([x], [])[0]
    assert_same(got, want, f"creation [{variant}]")


def test_creation_kinds_reach_the_lowering_unoptimized():
    assert {"Full", "Arange", "Random", "Copy"} <= kinds_of(_creation, [rand(2, 3)], optimize=False)


# --------------------------------------------------------- backward ops
class _Wrap(nn.Module):
    def __init__(self, fn, *shapes, seed=0):
        super().__init__()
        self.fn = fn
        self.ps = nn.ParameterList([nn.Parameter(rand(*s, seed=seed + i)) for i, s in enumerate(shapes)])

    def forward(self, x):
        return self.fn(x, *self.ps)


BACKWARD_CASES = [
    ("softmax_backward", lambda x, p: F.softmax(x * p, 1), [(4, 5)], (4, 5), {"SoftmaxBackward"}),
    ("log_softmax_backward", lambda x, p: F.log_softmax(x + p, -1), [(3, 6)], (3, 6), {"SoftmaxBackward"}),
    ("layer_norm_backward", lambda x, p: F.layer_norm(x * p, (6,)), [(3, 6)], (3, 6), {"LayerNormBackward"}),
    ("conv_backward", lambda x, p, w: F.conv2d(x * p, w, padding=1), [(2, 2, 5, 5), (3, 2, 3, 3)], (2, 2, 5, 5),
     {"Conv2dBackwardInput", "Conv2dBackwardWeight"}),
    ("conv_backward_strided_groups", lambda x, p, w: F.conv2d(x * p, w, stride=(2, 1), padding=(0, 1), dilation=2,
                                                              groups=2), [(1, 4, 7, 6), (4, 2, 2, 3)], (1, 4, 7, 6),
     {"Conv2dBackwardInput", "Conv2dBackwardWeight"}),
    ("max_pool_backward", lambda x, p: F.max_pool2d(x * p, 2), [(1, 2, 4, 6)], (1, 2, 4, 6),
     {"MaxPool2dBackward"}),
    ("avg_pool_backward", lambda x, p: F.avg_pool2d(x * p, 3, stride=2, padding=1), [(1, 2, 5, 6)], (1, 2, 5, 6),
     {"Col2Im"}),
    ("gather_backward", lambda x, p: (x * p).gather(1, arr(np.array([[0, 0], [2, 1]]))), [(2, 3)], (2, 3),
     {"ScatterAdd"}),
    ("index_select_backward", lambda x, p: (x * p).index_select(0, arr(np.array([1, 1, 0]))), [(2, 3)], (2, 3),
     {"IndexAdd"}),
    ("slice_backward", lambda x, p: (x * p)[:, 1:3], [(2, 4)], (2, 4), {"SliceScatter"}),
]


@pytest.fixture
def compile_with():
    yield _C._compile_steps_with
    _C._compile_steps_with(None)


@pytest.mark.parametrize("variant", ["step", "eager"])
@pytest.mark.parametrize("name, fn, shapes, xshape, kinds", BACKWARD_CASES, ids=[c[0] for c in BACKWARD_CASES])
def test_gradients_through_the_plan(name, fn, shapes, xshape, kinds, variant, compile_with):
    x = rand(*xshape, seed=11)
    loss_fn = lambda out, target: ((out - target) ** 2).sum()  # noqa: E731
    target = rand(*_outputs(fn(x, *[rand(*s) for s in shapes]))[0].shape, seed=12)
    ref = _Wrap(fn, *shapes)
    ref_loss = loss_fn(ref(x), target)
    ref_loss.backward()
    model = _Wrap(fn, *shapes)
    rec = PLAN.PlanRecorder()
    compile_with(rec.compiler())
    make_step(model, loss_fn)(x, target)
    assert kinds <= {k for k, _, _ in rec.keys}, rec.keys
    model.zero_grad()
    compile_with(PLAN.reference_compiler(**VARIANTS[variant]))
    loss = make_step(model, loss_fn)(x, target)
    assert_same(loss, ref_loss.detach(), f"{name} loss", rtol=1e-5, atol=1e-5)
    for a, b in zip(model.parameters(), ref.parameters()):
        assert_same(a.grad, b.grad, f"{name} grad", rtol=1e-4, atol=1e-5)


def test_every_metal_kind_is_lowered_by_some_case(compile_with):
    seen = set()
    for _, fn, make, _ in CASES:
        seen |= kinds_of(fn, make())
    seen |= kinds_of(_creation, [rand(2, 3)], optimize=False)
    for name, fn, shapes, xshape, kinds in BACKWARD_CASES:
        seen |= kinds  # each backward case checks that its graph holds these
    supported = {k for k, _ in PLAN.kinds()}
    assert supported <= seen, f"no case lowers {sorted(supported - seen)}"


# ------------------------------------------------------------ whole steps
def _net(seed=0):
    lucid.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 4))


@pytest.mark.parametrize("variant", ["step", "eager", "dropaxes"])
def test_training_steps_through_the_plan_match_cpu(variant, compile_with):
    """Forward, loss and backward as one plan, three steps: gradients land in
    .grad (buffers bound per call), BatchNorm's running statistics are read
    and written in place (second buffers and copies), dropout draws on the host."""
    rng = np.random.default_rng(0)
    xs = [arr(rng.standard_normal((8, 6)).astype(np.float32)) for _ in range(3)]
    ys = [arr(rng.integers(0, 4, 8)) for _ in range(3)]
    runs = {}
    for label in ("cpu", "plan"):
        model = _net()
        if label == "plan":
            compile_with(PLAN.reference_compiler(**VARIANTS[variant]))
        step = make_step(model, F.cross_entropy)
        lucid.manual_seed(3)
        losses = []
        for x, y in zip(xs, ys):
            losses.append(float(step(x, y).item()))
            with lucid.no_grad():
                for p in model.parameters():
                    p.sub_(0.1 * p.grad)
        runs[label] = (losses, [t.detach().numpy().copy() for t in list(model.parameters()) + list(model.buffers())])
    np.testing.assert_allclose(runs["plan"][0], runs["cpu"][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(runs["plan"][1], runs["cpu"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


# Optimizer updates. A step traced on CPU tensors records each update as one
# EngineUpdate node (the CPU's fused kernel); the metal device has no form for
# it, so the plan decomposes the node into the rule's ops first.
ELEMENTWISE_OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.01, t0=2)),
    ("Rprop", dict(lr=0.01)),
    ("SparseAdam", dict(lr=0.01)),
]


def _optimizer_id(config):
    return config[0] + "".join(f"-{k}" for k in config[1] if k != "lr")


FUSED_STEP_OPTIMIZERS = [c for c in ELEMENTWISE_OPTIMIZERS if _optimizer_id(c) in (
    "Adam", "SGD-momentum-nesterov-weight_decay", "AdamW-amsgrad-weight_decay",
    "RMSprop-momentum-centered-weight_decay", "Adagrad-lr_decay-weight_decay", "Rprop")]


def _two_groups(name, kwargs, first, second):
    groups = [{"params": first}, {"params": second, "lr": kwargs["lr"] * 0.5}]
    return getattr(optim, name)(groups, **kwargs)


def _state(opt):
    return {(i, key): np.array(v, dtype=np.float32) for i, s in opt.state_dict()["state"].items()
            for key, v in s.items()}


def _engine_updates(step):
    return sum(exe.dump().count("engine_update(") for exe in step.executables())


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name, kwargs", ELEMENTWISE_OPTIMIZERS, ids=map(_optimizer_id, ELEMENTWISE_OPTIMIZERS))
def test_optimizer_update_through_the_plan_is_the_cpu_kernel(name, kwargs, dtype, compile_with):
    """compile_optimizer's step on the same gradients, five times (the first
    learning rate cut by 0.3 after the third): the rule's ops give the CPU
    kernel's parameters and state bit for bit. Both are the same float32
    operations in the same order (the core builds without contraction into
    FMAs, 16-bit values are computed in float32 and rounded once) and the
    interpreter rounds each as IEEE arithmetic does, so any difference is an
    operation lowered differently."""
    rng = np.random.default_rng(1)
    shapes = [(5, 3), (4,), (3, 2)]
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) * (rng.random(s) > 0.2) for s in shapes] for _ in range(5)]
    runs = {}
    for label in ("cpu", "plan"):
        params = [arr(a, dtype).requires_grad_() for a in start]
        opt = _two_groups(name, kwargs, params[:2], params[2:])
        compile_with(PLAN.reference_compiler() if label == "plan" else None)
        step = compile_optimizer(opt)
        trajectory = []
        for k, gs in enumerate(grads):
            if k == 3:
                opt.param_groups[0]["lr"] *= 0.3
            for p, g in zip(params, gs):
                p.grad = arr(g, dtype)
            step.step()
            trajectory.append(([p.detach().float().numpy().copy() for p in params], _state(opt)))
        runs[label] = (trajectory, _engine_updates(step), step.cache_info().misses)
    (cpu, cpu_updates, _), (plan, plan_updates, plan_misses) = runs["cpu"], runs["plan"]
    assert (cpu_updates, plan_updates, plan_misses) == (len(shapes), 0, 1), \
        "the CPU runs one EngineUpdate per parameter, the plan their decomposition, one trace for every lr"
    for k, ((params, state), (want_params, want_state)) in enumerate(zip(plan, cpu)):
        for j, (a, b) in enumerate(zip(params, want_params)):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} {kwargs}: step {k}, parameter {j}")
        assert state.keys() == want_state.keys()
        for key in want_state:
            np.testing.assert_array_equal(state[key], want_state[key], err_msg=f"{name} {kwargs}: step {k}, {key}")


def _mlp():
    # No BatchNorm: the bias of a layer feeding one has a zero gradient up to
    # rounding noise, which an adaptive optimizer scales into full steps in
    # the noise's direction, different on every backend.
    lucid.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.25), nn.Linear(16, 4))


@pytest.mark.parametrize("name, kwargs", FUSED_STEP_OPTIMIZERS, ids=map(_optimizer_id, FUSED_STEP_OPTIMIZERS))
def test_fused_step_with_an_optimizer_through_the_plan(name, kwargs, compile_with):
    """Four fused steps through the plan (two param groups, the first
    learning rate cut by 0.3 after the second step, dropout drawn on the
    host) against the same steps run eagerly and compiled on the CPU: loss,
    parameters and optimizer state after every step, with one trace.

    The forward and backward through the plan round differently from the
    CPU's (summation order, transcendental functions), a few float32 ulps on
    each gradient, and the rules carry that on smoothly: every tensor stays
    within 16 ulps of its largest element (the largest difference seen is
    about 2.4). Relative to each element the difference is unbounded where a
    rule's cancellation leaves a value near zero (RMSprop's grad_avg)."""
    rng = np.random.default_rng(0)
    xs = [arr(rng.standard_normal((8, 6)).astype(np.float32)) for _ in range(4)]
    ys = [arr(rng.integers(0, 4, 8)) for _ in range(4)]
    runs = {}
    for label in ("eager", "cpu", "plan"):
        model = _mlp()
        opt = _two_groups(name, kwargs, list(model[0].parameters()), list(model[3].parameters()))
        compile_with(PLAN.reference_compiler() if label == "plan" else None)
        step = None if label == "eager" else fused_step(model, F.cross_entropy, opt)
        lucid.manual_seed(3)
        trajectory = []
        for k, (x, y) in enumerate(zip(xs, ys)):
            if k == 2:
                opt.param_groups[0]["lr"] *= 0.3
            if step is None:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
            else:
                loss = step(x, y)
            params = [p.detach().numpy().copy() for p in model.parameters()]
            trajectory.append((np.float32(loss.item()), params, _state(opt)))
        runs[label] = trajectory
        if label == "plan":
            assert _engine_updates(step) == 0 and step.cache_info().misses == 1

    def close(got, want, what):
        np.testing.assert_allclose(got, want, rtol=0, atol=16 * 2.0 ** -23 * np.abs(want).max(), err_msg=what)

    for ref in ("eager", "cpu"):
        for k, (got, want) in enumerate(zip(runs["plan"], runs[ref])):
            (loss, params, state), (want_loss, want_params, want_state) = got, want
            what = f"{name} {kwargs} against {ref}: step {k}"
            close(loss, want_loss, f"{what}, loss")
            for j, (a, b) in enumerate(zip(params, want_params)):
                close(a, b, f"{what}, parameter {j}")
            assert state.keys() == want_state.keys()
            for key in want_state:
                close(state[key], want_state[key], f"{what}, {key}")


@pytest.mark.parametrize("variant", ["cpu", "step", "eager"])
def test_in_place_updates_follow_the_buffer_plan(variant):
    """A captured buffer read and written goes through a second buffer and a
    copy; one only written is computed straight into its buffer, unless the
    same buffer is also an argument of the run (MPSGraph must not read and
    write one buffer)."""
    state, written = lucid.zeros(3), lucid.zeros(3)

    def fn(x):
        state.add_(x)
        written.copy_(x * 2)
        return state * 1

    x = arr([1.0, 2.0, 3.0])
    tracer = trace(fn, [x])
    exe = tracer.compile("cpu") if variant == "cpu" else tracer.compile_with(PLAN.reference_compiler(**VARIANTS[variant]))
    if variant == "step":
        assert "2 in-place updates (1 written directly, the rest through a second buffer)" in exe.describe()
    out = exe.run([x], [])[0]
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(state.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(written.numpy(), [2, 4, 6])
    out = exe.run([written], [])[0]  # the run's argument is the buffer it overwrites
    np.testing.assert_array_equal(out.numpy(), [3, 6, 9])
    np.testing.assert_array_equal(state.numpy(), [3, 6, 9])
    np.testing.assert_array_equal(written.numpy(), [4, 8, 12])


# -------------------------------------------------------------- cache key
def test_eager_cache_key_is_the_plan():
    def keys(fn, inputs):
        rec = PLAN.PlanRecorder()
        trace(fn, inputs).compile_with(rec.compiler())
        return [k for _, _, k in rec.keys if k is not None]

    x = rand(3, 4)
    (a,) = keys(lambda t: t.sum(0), [x])
    (b,) = keys(lambda t: t.sum(0), [rand(3, 4, seed=9)])
    (c,) = keys(lambda t: t.sum(1), [x])
    (d,) = keys(lambda t: t.sum(0), [rand(3, 5)])
    (e,) = keys(lambda t: t.sum(0), [x.half()])
    (f,) = keys(lambda t: t.amax(0), [x])
    assert a == b, "same primitive, attributes, shapes and dtypes: one program"
    assert len({a, c, d, e, f}) == 5, "an axis, a shape, a dtype or an op changes the program"
    (g,) = keys(lambda t: F.layer_norm(t, (4,), eps=1e-5), [x])
    (h,) = keys(lambda t: F.layer_norm(t, (4,), eps=1e-3), [x])
    assert g != h, "an attribute that becomes a constant in the graph (eps) is part of the key"
    (i,) = keys(lambda t: t.pow(3.0), [x])  # (x ** 2 is x * x, a Unary square)
    (j,) = keys(lambda t: t.pow(2.5), [x])
    assert i == j, "an operand is fed, not part of the program"


# ----------------------------------------------------------------- views
@pytest.mark.parametrize("sizes, strides, offset, op", [
    ((3, 4), (4, 1), 0, "Placeholder"),
    ((2, 4), (4, 1), 4, "Slice"),
    ((4, 3), (1, 4), 0, "Gather"),          # a transpose
    ((3, 2), (4, 2), 1, "Gather"),          # a strided slice
    ((2, 3, 4), (0, 4, 1), 0, "Gather"),    # an expand (stride 0)
    ((3, 3), (1, 1), 2, "Gather"),          # overlapping windows
    ((1, 5), (99, 1), 3, "Slice"),          # extent-1 dims ignore their stride
])
def test_strided_operands_read_like_numpy(sizes, strides, offset, op):
    storage = np.arange(12, dtype=np.float32) * 1.5
    got, used = PLAN.read_strided(arr(storage), list(sizes), list(strides), offset)
    want = np.lib.stride_tricks.as_strided(storage[offset:], sizes, [s * 4 for s in strides])
    np.testing.assert_array_equal(got.numpy(), want)
    assert used == op


def test_strided_operand_past_its_buffer_is_refused():
    with pytest.raises(Exception, match="outside its buffer|past the end"):
        PLAN.read_strided(arr(np.zeros(6, np.float32)), [3, 3], [2, 1], 0)


# ------------------------------------------------------------- the plan's checks
def test_float64_is_refused_with_a_clear_error():
    x = rand(3).double()
    with pytest.raises(TypeError, match="float64"):
        trace(lambda t: t * 2, [x]).compile_with(PLAN.reference_compiler(eager=False))


# Errors the CPU kernels raise and a GPU cannot: the eager path reads the
# operands on the host first. Inside one compiled step nothing can check them.
@pytest.mark.parametrize("fn, make", [
    (lambda x, i: x.gather(1, i), lambda: [rand(2, 4), arr(np.array([[0, -1]]))]),
    (lambda x, i: x.index_select(0, i), lambda: [rand(4, 3), arr(np.array([3, -4]))]),
    (lambda x, i, s: x.index_add(0, i, s), lambda: [rand(4, 3), arr(np.array([-1])), rand(1, 3)]),
    (lambda x, i, s: x.scatter_add(1, i, s), lambda: [rand(2, 4), arr(np.array([[-1]])), rand(1, 1)]),
])
def test_negative_indices_raise_like_the_cpu(fn, make):
    inputs = make()
    with pytest.raises(IndexError, match="-1 is out of bounds|-4 is out of bounds"):
        fn(*inputs)
    exe = trace(fn, inputs).compile_with(PLAN.reference_compiler(eager=True))
    with pytest.raises(IndexError, match="-1 is out of bounds|-4 is out of bounds"):
        exe.run(inputs, [])


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "trunc"])
@pytest.mark.parametrize("dtype", [lucid.int32, lucid.int64])
def test_integer_division_by_zero_raises_like_the_cpu(op, dtype):
    fns = {"floor_divide": lambda a, b: a.floor_divide(b), "remainder": lambda a, b: a.remainder(b),
           "trunc": lambda a, b: a.div(b, rounding_mode="trunc")}
    inputs = [arr(np.array([7, -7, 3]), dtype), arr(np.array([2, 0, 1]), dtype)]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fns[op](*inputs)
    exe = trace(fns[op], inputs).compile_with(PLAN.reference_compiler(eager=True))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        exe.run(inputs, [])
