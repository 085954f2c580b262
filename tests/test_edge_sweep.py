"""Edge arguments for every public op, against PyTorch.

Each op in OPS is called on a generated set of edge cases — 0-d, empty,
size-1 and overflowing shapes, every dtype, NaN/inf and INT_MIN/INT_MAX
values, negative and out-of-range dims and indices, edge numbers — by Lucid
and by PyTorch. Per case:
- PyTorch raises: Lucid must raise an exception of the same kind (an
  instance of PyTorch's exception type; PyTorch's NotImplementedError for a
  dtype its kernels lack may be Lucid's TypeError for the same dtype);
- PyTorch returns: Lucid must return the same shapes, dtypes and values
  (NaN where NaN; floats within a tolerance by dtype);
- nothing may crash. The cases run in a worker process: when it dies, the
  test of that op fails naming the case that killed it, and the next test
  gets a fresh worker.
Known deviations are listed in DEVIATIONS with their reason; every entry must
still match a case (a fixed deviation is removed from the list).

`python tests/test_edge_sweep.py` prints the figures (cases, mismatches,
crashes) for the whole table.
"""
import itertools
import json
import math
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
NAN, INF = float("nan"), float("inf")
DTYPES = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
# (rtol, atol) per result dtype: 16-bit results may round once differently.
TOL = {"float16": (2e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (2e-5, 1e-6), "float64": (1e-9, 1e-12)}


# ------------------------------------------------------------------ inputs
def _values(dtype, n, salt=0):
    """n edge values of `dtype` (as a NumPy dtype that holds them)."""
    if dtype == "bool":
        pool = [True, False, False, True, True]
    elif dtype == "int32":
        pool = [0, 1, -1, I32_MAX, I32_MIN, 7, -3, 2]
    elif dtype == "int64":
        pool = [0, 1, -1, I64_MAX, I64_MIN, 7, -3, 2]
    else:
        pool = [0.5, -0.0, 1.0, -2.0, NAN, INF, -INF, 3.0, 0.0, -0.25, 1e30 if dtype != "float16" else 6e4]
    vals = [pool[(i + salt) % len(pool)] for i in range(n)]
    np_dtype = {"bool": bool, "bfloat16": np.float32}.get(dtype, dtype)
    return np.array(vals, dtype=np_dtype)


class Arr:
    """An input array and the dtype it stands for (bfloat16 is held as float32)."""

    def __init__(self, shape, dtype, salt=0, values=None):
        self.shape, self.dtype = tuple(shape), dtype
        n = int(np.prod(self.shape)) if self.shape else 1
        v = _values(dtype, n, salt) if values is None else np.asarray(values, {"bool": bool, "bfloat16": np.float32}
                                                                     .get(dtype, dtype))
        self.array = v.reshape(self.shape)

    def make(self, lib):
        import torch

        if lib is torch:
            t = torch.from_numpy(self.array.copy())
            return t.to(torch.bfloat16) if self.dtype == "bfloat16" else t
        import lucid

        t = lucid.tensor(self.array.copy())
        return t.to(lucid.bfloat16) if self.dtype == "bfloat16" else t

    def __repr__(self):
        return f"{self.dtype}{list(self.shape)}"


class Dt:
    """A dtype argument, resolved per library."""

    def __init__(self, name):
        self.name = name

    def make(self, lib):
        return getattr(lib, self.name)

    def __repr__(self):
        return self.name


class Lst:
    """A list argument holding tensors (cat, stack)."""

    def __init__(self, *items):
        self.items = items

    def make(self, lib):
        return [i.make(lib) if hasattr(i, "make") else i for i in self.items]

    def __repr__(self):
        return repr(list(self.items))


def _build(lib, args):
    return [a.make(lib) if hasattr(a, "make") else a for a in args]


SHAPES = [(), (0,), (1,), (3,), (2, 3), (0, 3), (3, 1, 2)]


def tensors(dtypes=DTYPES, shapes=SHAPES, salt=0):
    return [Arr(s, d, salt) for d in dtypes for s in shapes]


def dims_for(ndim):
    """Every valid dim and the nearest invalid ones on both sides."""
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    return sorted({lo - 1, lo, -1, 0, hi, hi + 1})


NUMBERS = [0, 1, -1, 2, 2.5, -0.5, True, False, NAN, INF, -INF, I32_MAX, I64_MAX, I64_MIN]


# ------------------------------------------------------------------- cases
def unary(name, fn=None, dtypes=DTYPES):
    fn = fn or (lambda m, x: getattr(m, name)(x))
    return name, fn, lambda: [(x,) for x in tensors(dtypes)]


def binary(name, fn=None, dtypes=DTYPES, numbers=True):
    fn = fn or (lambda m, a, b: getattr(m, name)(a, b))

    def cases():
        out = []
        for d in dtypes:  # same dtype, broadcasting and mismatched shapes
            for sa, sb in [((), ()), ((2, 3), (3,)), ((2, 3), ()), ((0, 3), (3,)), ((0,), (1,)), ((2, 3), (4,)),
                           ((3, 1, 2), (2, 1)), ((1,), (0,))]:
                out.append((Arr(sa, d), Arr(sb, d, salt=3)))
        for da, db in itertools.product(dtypes, repeat=2):  # promotion
            if da != db:
                out.append((Arr((2, 3), da), Arr((2, 3), db, salt=5)))
                out.append((Arr((2, 3), da), Arr((), db, salt=1)))
        if numbers:
            for d in dtypes:
                for v in NUMBERS:
                    out.append((Arr((2, 3), d), v))
                    out.append((v, Arr((3,), d, salt=2)))
        return out

    return name, fn, cases


def with_dim(name, fn=None, dtypes=DTYPES, shapes=SHAPES, extra=(None,)):
    """fn(m, x, dim[, extra]) over every dim of every input, valid or not."""
    fn = fn or (lambda m, x, d, *e: getattr(m, name)(x, d, *e))

    def cases():
        out = []
        for x in tensors(dtypes, shapes):
            for d in dims_for(len(x.shape)):
                for e in extra:
                    out.append((x, d) if e is None else (x, d, e))
        return out

    return name, fn, cases


def custom(name, fn, cases):
    return name, fn, cases


def _idx(values, dtype="int64"):
    return Arr((len(values),), dtype, values=values)


OPS = [
    # elementwise, unary
    *[unary(n) for n in ["abs", "neg", "sign", "sgn", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
                         "rsqrt", "square", "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "erf", "floor",
                         "ceil", "round", "trunc", "logical_not", "isfinite", "isnan", "isinf", "clone", "nonzero",
                         "msort", "t"]],
    unary("flatten"), unary("squeeze"), unary("numel"),
    unary("bitwise_not_op", lambda m, x: ~x),
    unary("round_decimals", lambda m, x: m.round(x, decimals=2), FLOATS),
    # elementwise, binary
    *[binary(n) for n in ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "atan2",
                          "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]],
    binary("div_floor", lambda m, a, b: m.div(a, b, rounding_mode="floor")),
    # (integers: PyTorch's own kernel dies of SIGFPE on INT_MIN / -1, which every
    # integer input here holds; test_hardening.py compares the other values)
    binary("div_trunc", lambda m, a, b: m.div(a, b, rounding_mode="trunc"), FLOATS),
    binary("matmul", numbers=False), binary("dot", numbers=False), binary("outer", numbers=False),
    custom("where", lambda m, c, a, b: m.where(c, a, b),
           lambda: [(Arr(s, "bool"), Arr(s, d), Arr((), d2, salt=2)) for s in [(), (2, 3), (0,)] for d in DTYPES
                    for d2 in ("int64", "float32")] + [(Arr((2,), "int64"), Arr((2,), "float32"), Arr((2,), "float32"))]
           + [(Arr((2, 3), "bool"), Arr((2, 3), "float32"), v) for v in NUMBERS]),
    custom("clamp", lambda m, x, lo, hi: m.clamp(x, lo, hi),
           lambda: [(x, lo, hi) for x in tensors(shapes=[(), (0,), (2, 3)]) for lo, hi in
                    [(0, 1), (-1, None), (None, 2.5), (NAN, None), (1, 0), (None, None), (I64_MIN, I64_MAX)]]),
    # reductions
    *[with_dim(n, extra=(False, True)) for n in ["sum", "mean", "prod", "amax", "amin", "all", "any", "argmax",
                                                  "argmin", "logsumexp", "var", "std", "max", "min"]],
    *[unary(n + "_all", (lambda n: lambda m, x: getattr(m, n)(x))(n))
      for n in ["sum", "mean", "prod", "amax", "amin", "all", "any", "argmax", "argmin", "var", "std", "max", "min",
                "norm"]],
    with_dim("norm", lambda m, x, d: m.norm(x, dim=d), dtypes=FLOATS),
    # sorting and scans
    *[with_dim(n) for n in ["cumsum", "cumprod", "softmax", "log_softmax", "argsort", "unsqueeze", "unbind"]],
    with_dim("sort", lambda m, x, d, desc: m.sort(x, d, descending=desc), extra=(False, True)),
    with_dim("topk", lambda m, x, d, k: m.topk(x, k, d), dtypes=[d for d in DTYPES if d != "bool"],
             extra=(0, 1, 2, 4, -1)),
    with_dim("cumsum_dtype", lambda m, x, d, dt: m.cumsum(x, d, dtype=dt.make(m)), dtypes=["bool", "int32", "float16"],
             extra=(Dt("int32"), Dt("float64"))),
    # shape
    with_dim("squeeze_dim", lambda m, x, d: m.squeeze(x, d)),
    with_dim("flatten_from", lambda m, x, d: m.flatten(x, d)),
    with_dim("flip", lambda m, x, d: m.flip(x, [d])),
    with_dim("roll", lambda m, x, d, s: m.roll(x, s, d), extra=(1, -4, 0)),
    with_dim("transpose", lambda m, x, d: m.transpose(x, d, 0)),
    with_dim("movedim", lambda m, x, d: m.movedim(x, d, 0)),
    with_dim("narrow", lambda m, x, d, a: m.narrow(x, d, a[0], a[1]), extra=((0, 1), (1, 2), (-1, 1), (0, 0), (3, 1))),
    with_dim("chunk", lambda m, x, d, n: m.chunk(x, n, d), extra=(1, 2, 0, -1)),
    with_dim("split", lambda m, x, d, n: m.split(x, n, d), extra=(1, 2, 0, [1, 2], [0, 3])),
    with_dim("cat", lambda m, x, d: m.cat([x, x], d)),
    with_dim("stack", lambda m, x, d: m.stack([x, x], d)),
    with_dim("repeat_interleave", lambda m, x, d, r: m.repeat_interleave(x, r, d), extra=(2, 0)),
    with_dim("index_select", lambda m, x, d, i: m.index_select(x, d, i.make(m)),
             extra=(_idx([0]), _idx([-1]), _idx([1, 0]), _idx([3]), _idx([], "int64"), _idx([0], "int32"))),
    custom("reshape", lambda m, x, s: m.reshape(x, s),
           lambda: [(x, s) for x in tensors(shapes=[(), (0,), (2, 3)], dtypes=["int64", "float32"])
                    for s in [(-1,), (6,), (3, -1), (-1, -1), (0, -1), (2, -2), (2**62, 4, 0), (1, 1, 6), ()]]),
    custom("broadcast_to", lambda m, x, s: m.broadcast_to(x, s),
           lambda: [(x, s) for x in tensors(shapes=[(), (1,), (3,), (2, 3)], dtypes=["float32"])
                    for s in [(3,), (2, 3), (0, 3), (4, 2, 3), (2**62, 4), (-1,), (3, 1)]]),
    custom("expand", lambda m, x, s: x.expand(*s),
           lambda: [(x, s) for x in tensors(shapes=[(), (1,), (3,)], dtypes=["float32"])
                    for s in [(3,), (-1,), (2, -1), (0, 3), (2**62, 3), (2**40, 2**40, 3)]]),
    custom("permute", lambda m, x, p: m.permute(x, p),
           lambda: [(x, p) for x in tensors(shapes=[(), (2, 3)], dtypes=["float32"])
                    for p in [(), (0,), (1, 0), (0, 0), (0, 2), (-1, 0), (0, 1, 2)]]),
    custom("tril", lambda m, x, k: m.tril(x, k), lambda: [(x, k) for x in tensors(shapes=[(), (3,), (2, 3), (0, 3)])
                                                          for k in (0, -1, 5, -9)]),
    custom("triu", lambda m, x, k: m.triu(x, k), lambda: [(x, k) for x in tensors(shapes=[(), (3,), (2, 3), (0, 3)])
                                                          for k in (0, -1, 5, -9)]),
    # indexing
    custom("gather", lambda m, x, d, i: m.gather(x, d, i.make(m)),
           lambda: [(x, d, Arr(ish, idt, values=iv)) for x in tensors(shapes=[(2, 3), (3,), ()])
                    for d in dims_for(len(x.shape)) for idt in ("int64", "int32")
                    for ish, iv in [((1,) * len(x.shape), [0]), ((1,) * len(x.shape), [-1]),
                                    ((1,) * len(x.shape), [2]), ((0,) * len(x.shape), [])] if ish or iv]),
    custom("scatter_add", lambda m, x, d, i, s: m.scatter_add(x, d, i.make(m), s.make(m)),
           lambda: [(x, 0, Arr(ish, "int64", values=iv), Arr(ish, x.dtype, salt=1))
                    for x in tensors(shapes=[(3,), (2, 3)], dtypes=["int64", "float32", "float16"])
                    for ish, iv in [((1,) * len(x.shape), [1]), ((1,) * len(x.shape), [-1]),
                                    ((1,) * len(x.shape), [5]), ((0,) * len(x.shape), [])]]),
    custom("scatter", lambda m, x, d, i, v: m.scatter(x, d, i.make(m), v),
           lambda: [(x, d, Arr((1,) * len(x.shape), "int64", values=[iv]), v)
                    for x in tensors(shapes=[(3,), (2, 3)], dtypes=["int64", "float32"])
                    for d in dims_for(len(x.shape)) for iv in (0, -1, 3) for v in (1.5, 7)]),
    custom("index_add", lambda m, x, d, i, s: m.index_add(x, d, i.make(m), s.make(m)),
           lambda: [(x, 0, _idx(iv), Arr((len(iv),) + x.shape[1:], x.dtype, salt=1))
                    for x in tensors(shapes=[(3,), (2, 3)], dtypes=["int64", "float32", "bool"])
                    for iv in ([0], [-1], [3], [], [1, 1])]),
    custom("masked_fill", lambda m, x, mask, v: m.masked_fill(x, mask.make(m), v),
           lambda: [(x, Arr(ms, "bool"), v) for x in tensors(shapes=[(), (2, 3), (0, 3)])
                    for ms in [(), (3,), (2, 3), (4,)] for v in (0, 2.5, NAN, True, I64_MAX)]),
    custom("one_hot", lambda m, i, n: m.nn.functional.one_hot(i.make(m), n),
           lambda: [(_idx(iv), n) for iv in ([0, 2], [-1], [3], []) for n in (-1, 3, 0)]),
    # linear algebra
    custom("mm", lambda m, a, b: m.mm(a, b), lambda: [(Arr(sa, d), Arr(sb, d, salt=1)) for d in DTYPES
                                                      for sa, sb in [((2, 3), (3, 4)), ((0, 3), (3, 2)),
                                                                     ((2, 0), (0, 2)), ((2, 3), (2, 3)),
                                                                     ((3, 0), (5, 6)), ((3,), (3, 2))]]),
    custom("matmul_nd", lambda m, a, b: m.matmul(a, b),
           lambda: [(Arr(sa, "float32"), Arr(sb, "float32", salt=1))
                    for sa, sb in [((2, 3, 4), (5, 6)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (3, 4, 5)), ((1, 3, 4), (2, 4, 5)),
                                   ((0, 3, 4), (4, 2)), ((3,), (2, 3, 1)), ((4,), (2, 3, 4))]]),
    # creation
    custom("zeros", lambda m, s, dt: m.zeros(*s, dtype=dt.make(m)),
           lambda: [(s, Dt(d)) for s in [(), (0,), (3,), (-1,), (2**32, 2**32), (2**62, 4, 0), (2**61,)]
                    for d in DTYPES]),
    custom("full", lambda m, s, v, dt: m.full(s, v, dtype=dt.make(m)),
           lambda: [(s, v, Dt(d)) for s in [(), (2,)] for d in DTYPES for v in (0, 1.5, NAN, INF, True, I64_MIN, -1)]),
    custom("arange", lambda m, a, b, st: m.arange(a, b, st),
           lambda: [(a, b, st) for a, b, st in [(0, 5, 1), (0, 5, 0), (5, 0, 1), (0, 5, -1), (0, 1e300, 1),
                                                (0, NAN, 1), (0, INF, 1), (0.5, 2.5, 0.5), (0, 0, 1), (-3, 3, 2),
                                                (0, 5, NAN), (I64_MIN, I64_MIN + 3, 1)]]),
    custom("linspace", lambda m, a, b, n: m.linspace(a, b, n),
           lambda: [(a, b, n) for a, b in [(0, 1), (1, -1), (0, NAN), (0, INF)] for n in (0, 1, 5, -1)]),
    custom("eye", lambda m, n, k: m.eye(n, k), lambda: [(n, k) for n in (0, 1, 3, -1) for k in (0, 2, -1)]),
    custom("rand_shape", lambda m, s: tuple(m.rand(*s).shape),
           lambda: [(s,) for s in [(), (0,), (2, 3), (-1,), (2**32, 2**32)]]),
    custom("randn_dtype", lambda m, dt: m.randn(2, dtype=dt.make(m)).dtype is not None,
           lambda: [(Dt(d),) for d in DTYPES]),
    custom("tensor", lambda m, v: m.tensor(v),
           lambda: [(v,) for v in ([], [[]], [1, 2.5], [True, 2], [I64_MAX], [NAN], [[1], [2, 3]], 3, [[1, 2], [3]])]),
    custom("zeros_like", lambda m, x: m.zeros_like(x), lambda: [(x,) for x in tensors()]),
    custom("full_like", lambda m, x, v: m.full_like(x, v), lambda: [(x, v) for x in tensors(shapes=[(), (2,)])
                                                                    for v in (0, 2.5, NAN, True)]),
    # nn.functional
    *[unary("F." + n, (lambda n: lambda m, x: getattr(m.nn.functional, n)(x))(n), FLOATS)
      for n in ["relu", "gelu", "silu", "elu", "selu", "celu", "softplus", "softsign", "hardtanh", "hardsigmoid",
                "hardswish", "leaky_relu", "logsigmoid", "mish", "relu6", "tanh", "sigmoid"]],
    with_dim("F.softmax", lambda m, x, d: m.nn.functional.softmax(x, d), dtypes=FLOATS),
    with_dim("F.glu", lambda m, x, d: m.nn.functional.glu(x, d), dtypes=FLOATS),
    with_dim("F.normalize", lambda m, x, d: m.nn.functional.normalize(x, dim=d), dtypes=FLOATS),
    custom("F.cross_entropy", lambda m, x, t, r: m.nn.functional.cross_entropy(x, t.make(m), reduction=r),
           lambda: [(Arr(xs, "float32"), Arr(ts, tdt, values=tv), r)
                    for xs, ts, tv in [((2, 4), (2,), [1, 3]), ((2, 4), (2,), [-1, 0]), ((2, 4), (2,), [4, 0]),
                                       ((2, 4), (2,), [-100, 1]), ((0, 4), (0,), []), ((4,), (), [2]),
                                       ((2, 4), (3,), [0, 1, 2]), ((2, 4, 3), (2, 3), [0, 1, 2, 3, 0, 1])]
                    for tdt in ("int64", "int32") for r in ("mean", "sum", "none")]),
    custom("F.nll_loss", lambda m, x, t: m.nn.functional.nll_loss(x, t.make(m)),
           lambda: [(Arr(xs, "float32"), Arr(ts, "int64", values=tv))
                    for xs, ts, tv in [((2, 4), (2,), [1, 3]), ((2, 4), (2,), [-1, 0]), ((2, 4), (2,), [9, 0]),
                                       ((0, 4), (0,), [])]]),
    custom("F.embedding", lambda m, i, w: m.nn.functional.embedding(i.make(m), w),
           lambda: [(Arr(ish, idt, values=iv), Arr((4, 3), "float32"))
                    for ish, iv in [((2,), [0, 3]), ((2,), [-1, 0]), ((1,), [4]), ((0,), []), ((), [2])]
                    for idt in ("int64", "int32")]),
    *[binary("F." + n, (lambda n: lambda m, a, b: getattr(m.nn.functional, n)(a, b))(n), FLOATS, numbers=False)
      for n in ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]],
    *[binary(n, numbers=n not in ("bmm", "dist")) for n in ["multiply", "subtract", "true_divide", "bmm", "dist"]],
    unary("negative"), unary("clip", lambda m, x: m.clip(x, -1, 2)),
    custom("concat", lambda m, a, b, d: m.concat([a, b], d),
           lambda: [(a, b, d) for a in tensors(shapes=[(), (0,), (2, 3)], dtypes=["bool", "int32", "float32"])
                    for b in tensors(shapes=[(0,), (2, 3), (2, 1)], dtypes=["int64", "float16"]) for d in (0, 1, -3)]),
    with_dim("swapaxes", lambda m, x, d: m.swapaxes(x, 0, d)),
    with_dim("var_mean", lambda m, x, d, c: m.var_mean(x, d, correction=c), dtypes=FLOATS, extra=(0, 1, 2)),
    with_dim("std_mean", lambda m, x, d: m.std_mean(x, d), dtypes=FLOATS),
    custom("ones", lambda m, s, dt: m.ones(*s, dtype=dt.make(m)),
           lambda: [(s, Dt(d)) for s in [(), (0,), (-2,), (2**31, 2**31, 4)] for d in DTYPES]),
    custom("empty_shape", lambda m, s: tuple(m.empty(*s).shape), lambda: [(s,) for s in [(0, 2), (3,), (-1,), (2**62, 2)]]),
    custom("ones_like", lambda m, x, dt: m.ones_like(x, dtype=dt.make(m)), lambda: [(x, Dt(d)) for x in tensors(
        shapes=[(), (0,), (2,)], dtypes=["bool", "float16", "int64"]) for d in DTYPES]),
    custom("randint_shape", lambda m, lo, hi, s: tuple(m.randint(lo, hi, s).shape),
           lambda: [(lo, hi, s) for lo, hi in [(0, 5), (5, 0), (3, 3), (-2**63, 2**63 - 1)] for s in [(2,), (0,), (-1,)]]),
    custom("promote_types", lambda m, a, b: m.promote_types(a.make(m), b.make(m)),
           lambda: [(Dt(a), Dt(b)) for a in DTYPES for b in DTYPES]),
    custom("result_type", lambda m, a, b: m.result_type(a, b),
           lambda: [(a, b) for a in tensors(shapes=[(), (2,)]) for b in (1, 2.5, True)]
           + [(a, b) for a in tensors(shapes=[()], dtypes=["int64", "float16"]) for b in tensors(shapes=[(2,)])]),
    custom("can_cast", lambda m, a, b: m.can_cast(a.make(m), b.make(m)),
           lambda: [(Dt(a), Dt(b)) for a in DTYPES for b in DTYPES]),
    custom("fill_", lambda m, x, v: m.clone(x).fill_(v), lambda: [(x, v) for x in tensors(shapes=[(), (2,)])
                                                                  for v in (0, 2.5, NAN, True, I64_MAX, 1e10)]),
    custom("zero_", lambda m, x: m.clone(x).zero_(), lambda: [(x,) for x in tensors(shapes=[(), (0,), (2,)])]),
    custom("is_floating_point", lambda m, x: m.is_floating_point(x), lambda: [(x,) for x in tensors(shapes=[()])]),
    unary("F.log_softmax_implicit", lambda m, x: m.nn.functional.log_softmax(x, -1), FLOATS),
    with_dim("F.softmin", lambda m, x, d: m.nn.functional.softmin(x, d), dtypes=FLOATS),
    custom("F.threshold", lambda m, x, t, v: m.nn.functional.threshold(x, t, v),
           lambda: [(x, t, v) for x in tensors(FLOATS + ["int64"], shapes=[(), (0,), (2, 3)]) for t, v in
                    [(0.0, -1.0), (NAN, 0.0), (1, 2)]]),
    custom("F.dropout", lambda m, x, p, tr: m.nn.functional.dropout(x, p, training=tr),
           lambda: [(Arr((2, 3), "float32"), p, tr) for p in (0.0, 1.0, -0.1, 1.5, NAN) for tr in (False, True)
                    if not (tr and 0.0 < p < 1.0)]),
    custom("F.linear", lambda m, x, w, b: m.nn.functional.linear(x, w, b.make(m) if b else None),
           lambda: [(Arr(xs, "float32"), Arr(ws, "float32", salt=1), Arr(bs, "float32", salt=2) if bs else None)
                    for xs, ws, bs in [((2, 3), (4, 3), (4,)), ((0, 3), (4, 3), None), ((2, 3), (4, 2), None),
                                       ((3,), (4, 3), (4,)), ((2, 3), (4, 3), (3,)), ((2, 0), (4, 0), (4,)),
                                       ((2, 3), (3,), None)]]),
    custom("F.layer_norm", lambda m, x, ns: m.nn.functional.layer_norm(x, ns),
           lambda: [(Arr(xs, d), ns) for d in FLOATS for xs, ns in [((2, 3), (3,)), ((2, 3), (2, 3)), ((0, 3), (3,)),
                                                                    ((2, 3), (4,)), ((2, 0), (0,)), ((3,), ())]]),
    custom("F.batch_norm", lambda m, x, tr: m.nn.functional.batch_norm(x, m.zeros(x.shape[1] if x.ndim > 1 else 1),
                                                                        m.ones(x.shape[1] if x.ndim > 1 else 1),
                                                                        training=tr),
           lambda: [(Arr(xs, "float32"), tr) for xs in [(2, 3), (1, 3), (0, 3), (2, 3, 4), (3,)] for tr in (False, True)]),
    custom("F.group_norm", lambda m, x, g: m.nn.functional.group_norm(x, g),
           lambda: [(Arr(xs, "float32"), g) for xs in [(2, 4, 3), (2, 4), (0, 4, 2)] for g in (1, 2, 3, 0)]),
    custom("F.conv2d", lambda m, x, w, s, p, d, g: m.nn.functional.conv2d(x, w, None, s, p, d, g),
           lambda: [(Arr(xs, "float32"), Arr(ws, "float32", salt=1), s, p, d, g)
                    for xs, ws, g in [((1, 2, 5, 5), (3, 2, 3, 3), 1), ((0, 2, 5, 5), (3, 2, 3, 3), 1),
                                      ((1, 2, 2, 2), (3, 2, 3, 3), 1), ((1, 4, 5, 5), (4, 2, 3, 3), 2),
                                      ((1, 3, 5, 5), (3, 2, 3, 3), 1), ((2, 5, 5), (3, 2, 3, 3), 1)]
                    for s, p, d in [(1, 0, 1), (2, 1, 1), (0, 0, 1), (1, -1, 1), (1, 0, 0), (1, 5, 2)]]),
    custom("F.conv1d", lambda m, x, w, s, p: m.nn.functional.conv1d(x, w, None, s, p),
           lambda: [(Arr(xs, "float32"), Arr(ws, "float32", salt=1), s, p)
                    for xs, ws in [((1, 2, 5), (3, 2, 3)), ((1, 2, 1), (3, 2, 3)), ((1, 2, 5), (3, 1, 3))]
                    for s, p in [(1, 0), (2, 1), (0, 0), (1, -2)]]),
    custom("F.max_pool2d", lambda m, x, k, s, p: m.nn.functional.max_pool2d(x, k, s, p),
           lambda: [(Arr(xs, "float32"), k, s, p) for xs in [(1, 1, 4, 4), (1, 1, 1, 1), (0, 1, 4, 4), (1, 4, 4)]
                    for k, s, p in [(2, 2, 0), (2, None, 1), (3, 1, 2), (0, 1, 0), (2, 0, 0), (5, 1, 0)]]),
    custom("F.avg_pool2d", lambda m, x, k, s, p: m.nn.functional.avg_pool2d(x, k, s, p),
           lambda: [(Arr(xs, "float32"), k, s, p) for xs in [(1, 1, 4, 4), (1, 1, 1, 1), (1, 4, 4)]
                    for k, s, p in [(2, 2, 0), (2, None, 1), (3, 1, 2), (0, 1, 0), (5, 1, 0)]]),
    custom("F.adaptive_avg_pool2d", lambda m, x, o: m.nn.functional.adaptive_avg_pool2d(x, o),
           lambda: [(Arr(xs, "float32"), o) for xs in [(1, 1, 4, 4), (1, 4, 5), (1, 1, 0, 4)]
                    for o in [(2, 2), 1, (5, 3), 0, (2, -1)]]),
    *[custom("F." + n, (lambda n: lambda m, x, t: getattr(m.nn.functional, n)(x, t))(n),
             lambda: [(Arr(s, "float32", values=v), Arr(s, "float32", values=w))
                      for s, v, w in [((3,), [0.5, 0.0, 1.0], [0.0, 1.0, 1.0]), ((3,), [1.5, -0.1, NAN], [0.5, 0.5, 0.5]),
                                      ((0,), [], []), ((), [0.25], [2.0])]])
      for n in ["binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"]],
    custom("F.cosine_similarity", lambda m, a, b, d: m.nn.functional.cosine_similarity(a, b, d),
           lambda: [(Arr(sa, "float32"), Arr(sb, "float32", salt=2), d) for sa, sb in [((2, 3), (2, 3)), ((2, 3), (3,)),
                                                                                       ((0, 3), (0, 3)), ((2, 3), (4,))]
                    for d in (1, 0, -1, 2)]),
    custom("F.scaled_dot_product_attention", lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v),
           lambda: [(Arr(qs, "float32"), Arr(ks, "float32", salt=1), Arr(vs, "float32", salt=2))
                    for qs, ks, vs in [((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 6)), ((1, 2, 0, 4), (1, 2, 5, 4), (1, 2, 5, 6)),
                                       ((1, 2, 3, 4), (1, 2, 0, 4), (1, 2, 0, 6)), ((2, 4), (3, 4), (3, 5)),
                                       ((1, 2, 3, 4), (1, 2, 5, 3), (1, 2, 5, 6))]]),
    custom("F.unfold", lambda m, x, k: m.nn.functional.unfold(x, k),
           lambda: [(Arr(xs, "float32"), k) for xs in [(1, 2, 4, 4), (2, 4, 4), (1, 1, 1, 1)] for k in (2, 5, 0, (1, 2))]),
    unary("median", lambda m, x: m.median(x)),
    with_dim("median_dim", lambda m, x, d: m.median(x, d).values, shapes=[(0,), (3,), (0, 3), (3, 0)]),
    with_dim("mode_dim", lambda m, x, d: m.mode(x, d), dtypes=["int64", "float32", "bfloat16"],
             shapes=[(), (0,), (3,), (0, 3), (3, 0), (2, 3)]),
    custom("kthvalue", lambda m, x, k, d: m.kthvalue(x, k, d).values,
           lambda: [(x, k, d) for x in tensors(["int64", "float32"], [(3,), (0,), (0, 3), (3, 0)]) for k in (1, 3)
                    for d in (0, -1)]),
    custom("quantile", lambda m, x, q: m.quantile(x, q),
           lambda: [(x, q) for x in tensors(FLOATS[2:], [(), (0,), (3,), (0, 3)]) for q in (0.0, 0.5, 1.0, 1.5)]),
    custom("inplace_on_transposed", lambda m, x, op: getattr(m.clone(x).transpose(0, -1), op)(),
           lambda: [(x, op) for x in tensors(["float32", "int64"], [(0, 3), (3, 0), (2, 0, 3), (2, 3)])
                    for op in ("floor_", "neg_", "zero_", "abs_")]),
    custom("einsum_sublist", lambda m, a, sa, b, sb, *out: m.einsum(a, sa, b, sb, *out),
           lambda: [(Arr((2, 3), "float32"), [0, 1], Arr((3, 4), "float32", salt=1), [1, 2], *out)
                    for out in ([], [[0, 2]], [[2, 0]], [[0]], [[5]])]
           + [(Arr((2, 3), "float32"), [Ellipsis, 1], Arr((3,), "float32", salt=1), [1]),
              (Arr((2, 3), "float32"), [0, 60], Arr((3,), "float32", salt=1), [60])]),
    with_dim("tensor_split", lambda m, x, d: m.tensor_split(x, 2, d), dtypes=["float32"]),
    custom("unflatten", lambda m, x, d, sizes: x.unflatten(d, sizes),
           lambda: [(x, d, sz) for x in tensors(["float32"], [(0, 4), (4, 0), (2, 6), (2, 0)]) for d in (0, 1, -1, 2)
                    for sz in [(-1, 2), (2, -1), (-1, 0), (4, -1), (2, 2), (-1, -1), ()]]),
    custom("as_strided_empty", lambda m, x, size, stride, off: x.as_strided(size, stride, off).shape,
           lambda: [(Arr((2, 3), "float32"), sz, st, off) for sz in [(3, 0), (0, 1), (0, 3)] for st in [(2, 2), (0, 0)]
                    for off in (0, 5)]),
    custom("unfold", lambda m, x, d, size, step: x.unfold(d, size, step),
           lambda: [(x, d, size, step) for x in tensors(["float32"], [(), (0,), (3,), (2, 3)]) for d in (0, -1, 1)
                    for size in (0, 1, 2) for step in (1, 2, 0)]),
    custom("tensor_type_empty", lambda m, name: m.__dict__[name](), lambda: [(n,) for n in (
        "FloatTensor", "LongTensor", "BoolTensor", "DoubleTensor")]),
    custom("F.pad", lambda m, x, p, mode: m.nn.functional.pad(x, p, mode=mode),
           lambda: [(Arr(s, "float32"), p, mode) for s in [(1, 2, 3), (1, 0, 3)] for mode in ("constant", "reflect",
                                                                                               "replicate", "circular")
                    for p in [(1, 1), (0, 0), (-1, 0), (3, 3), (2, 1)]]),
]

# Where Lucid knowingly differs from PyTorch: (ops, pattern of the case, pattern
# of the difference, why). Patterns are regular expressions searched in the
# op's name, the case's description and the reported difference.
DEVIATIONS = [
    (".*", "", r"torch raises TypeError \(.*(must be Tensor, not|received an invalid combination of arguments)",
     "Lucid's functions take a Python number for either operand, as its operators do (wrapped-number promotion); "
     "PyTorch's function forms of these ops take tensors only"),
    (".*", r"bool\[", r"torch raises NotImplementedError \(.*not implemented for 'Bool'\), lucid (returns|"
     r"RuntimeError \(ZeroDivisionError)",
     "Lucid computes these ops on bool tensors (as on the integers they promote to, so a false divisor raises "
     "ZeroDivisionError); PyTorch's CPU kernels lack a bool version"),
    ("roll", r"\[0[,\]]", r"lucid raises IndexError \(Dimension out of range",
     "PyTorch's roll returns an empty input before looking at `dims`; Lucid checks them"),
    ("(log_)?softmax", r"(bool|int32|int64)\[(0|\d+, 0)", r"lucid raises TypeError .*floating point input",
     "PyTorch's softmax of an empty integer tensor returns before looking at the dtype; Lucid refuses the dtype"),
    ("bitwise_not_op", "int", r"lucid raises TypeError \(bitwise operations are only supported on bool",
     "Lucid has no bitwise integer ops: ~ is logical_not on bool tensors"),
    (r"(F\.)?log_softmax(_implicit)?", r"bfloat16\[3, 1, 2\](, (-1|2))?,?\)", r"values differ",
     "bfloat16 log_softmax([3, 0]): Lucid gives -0.0486 (float64: -0.04859), PyTorch -0.0459: its bfloat16 kernel "
     "rounds an intermediate"),
    ("F.group_norm", r"float32\[2, 4, 3\], 2\)", r"lucid array\(\[-0., -0., -0.\].*torch array\(\[nan",
     "a group holding 1e30 (its variance overflows float32): PyTorch's kernel gives NaN, Lucid 0"),
    ("F.group_norm", r", 0\)", r"torch raises ZeroDivisionError",
     "group_norm(num_groups=0): PyTorch fails with Python's ZeroDivisionError; Lucid raises its InvalidArgument"),
    ("F.conv2d", r"\[0, 2, 5, 5\].*, 0, 1\)", r"dilation should be greater than zero",
     "conv2d of an empty batch: PyTorch returns before checking the dilation; Lucid checks it"),
    ("F.scaled_dot_product_attention", r"\[1, 2, 0, 4\]", r"lucid array\(\[0., 0., 0.\].*torch array\(\[nan",
     "attention over zero keys: PyTorch's fused CPU kernel divides 0 by 0; Lucid returns the empty sum, 0"),
    ("fill_", r"float16\[\]", r"lucid raises InvalidArgument \(.*without overflow",
     "PyTorch's fill_ of a 0-d float16 tensor skips the range check its other shapes make; Lucid checks always"),
    ("F.adaptive_avg_pool2d", r"\[1, 1, 0, 4\], 1\)", r"Expected input to have non-zero size",
     "PyTorch's output_size=1 shortcut (a mean) skips the non-zero-size check; Lucid checks always"),
    ("F.gelu", "", r"lucid array\(\[inf\].*torch array\(\[nan",
     "gelu(+inf) is inf; PyTorch's vectorised CPU kernel gives NaN and its scalar path inf, so which one a "
     "position gets depends on the tensor's length and the CPU (seen on an AMD EPYC, not on a Xeon)"),
    ("arange", r"-9223372036854775808", "",
     "arange computes in double: integer endpoints beyond 2**53 lose their exact value"),
]


# ------------------------------------------------------------------ oracle
def _normalize(lib, r):
    """A result -> plain data: tensors as (shape, dtype name, values)."""
    if isinstance(r, (tuple, list)):
        return [_normalize(lib, x) for x in r]
    if hasattr(r, "shape") and hasattr(r, "dtype") and not isinstance(r, np.ndarray):
        name = str(r.dtype).split(".")[-1]
        t = r.detach()
        if name == "bfloat16":
            t = t.float()
        return ("tensor", tuple(int(s) for s in r.shape), name, np.array(t.numpy()))
    if hasattr(r, "is_floating_point") and not hasattr(r, "shape"):  # a dtype
        return ("dtype", str(r).split(".")[-1])
    if isinstance(r, (bool, int, float)):
        return r
    return ("other", repr(r))


def _outcome(lib, fn, args):
    try:
        return True, _normalize(lib, fn(lib, *_build(lib, args)))
    except Exception as e:  # noqa: BLE001 - every kind is compared
        return False, e


def _same_kind(l_exc, t_exc):
    if isinstance(l_exc, type(t_exc)):
        return True
    # PyTorch reports a dtype its kernels lack as NotImplementedError; Lucid
    # may say TypeError for the same dtype.
    return type(t_exc) is NotImplementedError and isinstance(l_exc, TypeError)


def _compare_values(lv, tv, path="result"):
    if isinstance(tv, list):
        if not isinstance(lv, list) or len(lv) != len(tv):
            return f"{path}: {len(tv)} results from torch, lucid gave {lv!r:.80}"
        for i, (a, b) in enumerate(zip(lv, tv)):
            err = _compare_values(a, b, f"{path}[{i}]")
            if err:
                return err
        return None
    if isinstance(tv, tuple) and tv and tv[0] == "tensor":
        if not (isinstance(lv, tuple) and lv and lv[0] == "tensor"):
            return f"{path}: torch gave a tensor, lucid {lv!r:.80}"
        _, ts, tdt, ta = tv
        _, ls, ldt, la = lv
        if ls != ts:
            return f"{path}: shape {list(ls)} != torch {list(ts)}"
        if ldt != tdt:
            return f"{path}: dtype {ldt} != torch {tdt}"
        if tdt in TOL:
            rtol, atol = TOL[tdt]
            a, b = la.astype(np.float64), ta.astype(np.float64)
            with np.errstate(invalid="ignore"):  # inf - inf
                same = (np.isnan(a) == np.isnan(b)) & ((a == b) | (np.abs(a - b) <= atol + rtol * np.abs(b))
                                                       | np.isnan(b))
        else:
            same = la == ta
        if not np.all(same):
            bad = np.argwhere(~np.asarray(same))[:3].tolist()
            return (f"{path}: values differ at {bad}: lucid {la[tuple(zip(*bad))]!r:.120} torch "
                    f"{ta[tuple(zip(*bad))]!r:.120}") if la.ndim else f"{path}: value {la!r} != torch {ta!r}"
        return None
    if isinstance(tv, float) and isinstance(lv, (int, float)):
        return None if (math.isnan(tv) and math.isnan(lv)) or lv == tv or abs(lv - tv) <= 1e-6 * abs(tv) else \
            f"{path}: {lv} != torch {tv}"
    return None if lv == tv else f"{path}: {lv!r:.80} != torch {tv!r:.80}"


def compare_case(fn, args):
    """None when Lucid agrees with PyTorch on fn(*args), else the difference."""
    import torch

    import lucid

    t_ok, t_res = _outcome(torch, fn, args)
    l_ok, l_res = _outcome(lucid, fn, args)
    if not t_ok and not l_ok:
        if _same_kind(l_res, t_res):
            return None
        return (f"torch raises {type(t_res).__name__} ({str(t_res).splitlines()[0][:100]}), lucid "
                f"{type(l_res).__name__} ({str(l_res).splitlines()[0][:100]})")
    if not t_ok:
        return f"torch raises {type(t_res).__name__} ({str(t_res).splitlines()[0][:100]}), lucid returns"
    if not l_ok:
        return f"lucid raises {type(l_res).__name__} ({str(l_res).splitlines()[0][:140]}), torch returns"
    return _compare_values(l_res, t_res)


OPS_BY_NAME = {name: (fn, cases) for name, fn, cases in OPS}


def describe(op, args):
    return f"{op}{tuple(args)!r}"


def deviation_for(op, desc, diff):
    for i, (ops, case, difference, _) in enumerate(DEVIATIONS):
        if re.fullmatch(ops, op) and re.search(case, desc) and re.search(difference, diff):
            return i
    return None


# ----------------------------------------------------------------- worker
def worker_main():
    """Reads op names from stdin; per case prints `start i`, then `diff i
    <json>` for a mismatch; `end <count>` after the op."""
    import torch

    import lucid

    torch.set_num_threads(1)
    lucid.set_num_threads(1)
    for line in sys.stdin:
        op = line.strip()
        if not op:
            continue
        fn, cases = OPS_BY_NAME[op]
        all_cases = cases()
        for i, args in enumerate(all_cases):
            print(f"start {i}", flush=True)
            err = compare_case(fn, args)
            if err:
                print(f"diff {i} {json.dumps(err)}", flush=True)
        print(f"end {len(all_cases)}", flush=True)


class Worker:
    """The worker process and a thread that queues its output lines (so a
    hang is noticed by a timeout instead of a blocking read)."""

    def __init__(self):
        self.proc = None

    def _spawn(self):
        env = dict(os.environ, PYTHONFAULTHANDLER="1")
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True).start()

    @staticmethod
    def _pump(stream, lines):
        for line in stream:
            lines.put(line)
        lines.put(None)

    def run(self, op, timeout=120):
        """(number of cases, {case index: difference}, crash or None)."""
        if self.proc is None or self.proc.poll() is not None:
            self._spawn()
        self.proc.stdin.write(op + "\n")
        self.proc.stdin.flush()
        diffs, last, deadline = {}, None, time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = ""
            if not line:  # died (None) or hung ("")
                if line is None:
                    self.proc.wait()
                    why = f"the worker died (exit status {self.proc.returncode})"
                else:
                    self.proc.kill()
                    self.proc.wait()
                    why = f"no answer within {timeout} s"
                self.err.seek(0)
                err = self.err.read()[-3000:]
                self.proc = None
                return None, diffs, (last, f"{why}\n{err}")
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "start":
                last = int(rest)
            elif kind == "diff":
                i, _, msg = rest.partition(" ")
                diffs[int(i)] = json.loads(msg)
            elif kind == "end":
                return int(rest), diffs, None

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


@pytest.mark.parametrize("op", list(OPS_BY_NAME))
def test_edge_arguments_match_torch(op, worker):
    count, diffs, crash = worker.run(op)
    cases = OPS_BY_NAME[op][1]()
    if crash is not None:
        i, why = crash
        case = describe(op, cases[i]) if i is not None else "(before the first case)"
        pytest.fail(f"crash in {case}: {why}")
    unexpected = []
    for i, msg in sorted(diffs.items()):
        desc = describe(op, cases[i])
        if deviation_for(op, desc, msg) is None:
            unexpected.append(f"{desc}: {msg}")
    assert not unexpected, f"{len(unexpected)} of {count} cases differ from PyTorch:\n" + "\n".join(unexpected[:25])


def main():
    w = Worker()
    total = mism = crashes = 0
    used = [0] * len(DEVIATIONS)
    for op in OPS_BY_NAME:
        count, diffs, crash = w.run(op)
        cases = OPS_BY_NAME[op][1]()
        if crash:
            crashes += 1
            print(f"CRASH {describe(op, cases[crash[0]]) if crash[0] is not None else op}: {crash[1][:300]}")
            count = (crash[0] or 0) + 1
        total += count
        for i, msg in sorted(diffs.items()):
            desc = describe(op, cases[i])
            dev = deviation_for(op, desc, msg)
            if dev is None:
                mism += 1
                print(f"DIFF {desc}: {msg}")
            else:
                used[dev] += 1
    w.close()
    for i, n in enumerate(used):
        print(f"deviation {i} ({DEVIATIONS[i][3][:70]}...): {n} cases")
    print(f"ops: {len(OPS_BY_NAME)}  cases: {total}  listed deviations: {sum(used)}  unexplained differences: {mism}  "
          f"crashes: {crashes}")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker_main()
    else:
        main()
