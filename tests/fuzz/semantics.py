"""Differential probe of tensor semantics: Lucid beside PyTorch.

``python -m tests.fuzz.semantics [--seed S] [--minutes M] [--family F] [-v]``

Each case is a few lines of Python written against a namespace ``T``; the
probe runs the same text with ``T = torch`` and with ``T = lucid`` and
compares what comes back: values (NaN where NaN, a tolerance by dtype),
dtypes, shapes, strides and storage offsets where a case asks for them,
Python scalar types, whether an exception is raised and its kind (Lucid's
must be an instance of PyTorch's class). In-place cases return the mutated
input and ``result is input``; gradient cases return ``.grad`` (float64).

Families (``--family``):
- ``promotion``: binary/unary ops, operators, in-place forms, ``out=`` and
  reductions with ``dtype=``, across every dtype pair, Python scalars on
  either side and 0-d vs n-d tensors;
- ``indexing``: ``__getitem__``/``__setitem__`` with mixed index kinds,
  ``index_put_``, gradients through indexing;
- ``views``: chains of view ops, in-place writes through the view or the
  base, strides, offsets, and the errors autograd raises for in-place ops;
- ``reductions``: reductions and shape functions with keepdim, dim tuples,
  negative and empty dims;
- ``construction``: ``tensor``/``as_tensor``/``from_numpy`` from lists and
  NumPy arrays, memory sharing, ``tolist``/``item``;
- ``edge`` (tests/fuzz/edge.py): every public callable Lucid shares with
  PyTorch, with edge arguments, and whether a failed in-place call left its
  input as it was;
- ``nn``: modules and functional calls (tests/fuzz/semantics_nn.py): their
  outputs, input and parameter gradients, buffers, state_dict layout and
  the errors of invalid configurations;
- ``autograd`` (tests/fuzz/semantics_autograd.py): random programs on
  leaves with every backward form, higher derivatives, hooks, grad modes,
  in-place errors, custom Functions, checkpoint and the functional API;
- ``optim``, ``optim_compiled`` (tests/fuzz/semantics_optim.py): optimizers,
  schedulers, GradScaler and clipping against PyTorch; eager against
  compile_optimizer and fused_step.

Every case runs after ``semantics_nn.PRELUDE`` (seeded NumPy data and
module initialisation shared by both sides); a case may set
``tolerance = (rtol, atol)`` for its floating values.

Each mismatch is printed with the case's source, runnable as it stands with
``import torch as T`` or ``import lucid as T``. Cases run in a forked worker,
so a crash is reported with the case that caused it and the library that
was running; a case running past CASE_SECONDS is reported as a hang. The
worker's address space is capped (ADDRESS_SPACE_BYTES), so a huge size
fails to allocate instead of taking the machine's memory. Exit status 1
when a mismatch or a crash was found.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import resource
import signal
import sys
import time
import traceback
import warnings

import numpy as np
import torch

import lucid

from .edge import family_edge
from .literal import literal
from .semantics_autograd import family_autograd
from .semantics_nn import PRELUDE, family_nn
from .semantics_optim import OPTIM_CHECKS, OPTIM_FAMILIES

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
# (rtol, atol) by dtype: a few ulps of slack over torch.testing's defaults,
# since composed ops may round differently from PyTorch's kernels.
# Past these a case is a hang; its worker may hold this much address space.
CASE_SECONDS = 15
ADDRESS_SPACE_BYTES = 8 << 30
# Values of larger results are not compared (their shape and dtype are).
MAX_COMPARED_ELEMENTS = 1 << 20
TOLERANCE = {"float16": (2e-3, 1e-4), "bfloat16": (1.6e-2, 1e-3), "float32": (1e-5, 1e-6),
             "float64": (1e-10, 1e-12)}
# A family's check may widen the tolerance of one case (dtype -> (rtol, atol)).
TOLERANCE_OVERRIDE = {}


# ---------------------------------------------------------------- comparing

class Raised:
    def __init__(self, exc):
        self.exc = exc

    def __repr__(self):
        return f"raised {type(self.exc).__name__}: {str(self.exc).splitlines()[0] if str(self.exc) else ''}"


def _dtype_name(dt):
    return str(dt).rsplit(".", 1)[-1]


def _tensor_values(t, lib):
    t = t.detach()
    if t.numel() > MAX_COMPARED_ELEMENTS:
        return None
    name = _dtype_name(t.dtype)
    if name in FLOATS:
        return np.asarray(t.to(lib.float64).cpu().numpy(), dtype=np.float64)
    if name == "bool":
        return np.asarray(t.cpu().numpy(), dtype=bool)
    return np.asarray(t.to(lib.int64).cpu().numpy(), dtype=np.int64)


def describe(v, lib):
    """A library-neutral picture of a result, for comparison and printing."""
    if isinstance(v, Raised):
        return v
    if isinstance(v, Exception):  # a case's own try/except returned it: compared as raised
        return Raised(v)
    if isinstance(v, (torch.Tensor, lucid.Tensor)):
        return ("tensor", _dtype_name(v.dtype), tuple(v.shape), bool(v.requires_grad), _tensor_values(v, lib))
    if isinstance(v, (torch.dtype, lucid.dtype)):
        return ("dtype", _dtype_name(v))
    if isinstance(v, (torch.Size,)) or type(v).__name__ == "Size":
        return ("size", tuple(int(s) for s in v))
    if isinstance(v, np.ndarray):
        return ("ndarray", str(v.dtype), v.shape, v.copy())
    if isinstance(v, (bool, int, float, str, type(None))):
        return (type(v).__name__, v)
    if isinstance(v, np.generic):
        return ("np." + type(v).__name__, v.item())
    if isinstance(v, dict):
        return ("dict", {k: describe(x, lib) for k, x in v.items()})
    if isinstance(v, (tuple, list)):
        return ("list" if isinstance(v, list) else "tuple", [describe(x, lib) for x in v])
    return ("other", type(v).__name__)


def _close(a, b, dtype, tolerance=None):
    if a is None or b is None:  # (values not kept: too many elements)
        return a is None and b is None
    if a.shape != b.shape:
        return False
    if dtype in FLOATS:
        rtol, atol = TOLERANCE_OVERRIDE.get(dtype, TOLERANCE[dtype])
        if tolerance is not None and dtype in ("float32", "float64"):
            rtol, atol = max(rtol, tolerance[0]), max(atol, tolerance[1])
        with np.errstate(invalid="ignore", over="ignore"):
            return bool(np.all((np.isnan(a) & np.isnan(b))
                               | (a == b)
                               | (np.abs(a - b) <= atol + rtol * np.abs(b))))
    return bool(np.array_equal(a, b))


def difference(lv, tv, path="result", tolerance=None):
    """None when Lucid's picture ``lv`` matches PyTorch's ``tv``; else what
    differs. ``tolerance`` (rtol, atol) widens float32/float64's."""
    if isinstance(tv, Raised) or isinstance(lv, Raised):
        if isinstance(tv, Raised) and isinstance(lv, Raised):
            if isinstance(lv.exc, type(tv.exc)) or type(lv.exc).__name__ == type(tv.exc).__name__:
                return None
            return f"{path}: exception kind {type(lv.exc).__name__} ({lv.exc}), PyTorch {type(tv.exc).__name__} ({tv.exc})"
        return f"{path}: Lucid {lv!r}, PyTorch {tv!r}"
    if lv[0] != tv[0]:
        if {lv[0], tv[0]} == {"tuple", "list"}:
            pass  # a container's kind is not a semantic difference users meet
        else:
            return f"{path}: kind {lv[0]} {lv[1:]!r:.200}, PyTorch {tv[0]} {tv[1:]!r:.200}"
    kind = tv[0]
    if kind == "tensor":
        _, ldt, lsh, lrg, lval = lv
        _, tdt, tsh, trg, tval = tv
        if ldt != tdt:
            return f"{path}: dtype {ldt}, PyTorch {tdt}"
        if lsh != tsh:
            return f"{path}: shape {lsh}, PyTorch {tsh}"
        if lrg != trg:
            return f"{path}: requires_grad {lrg}, PyTorch {trg}"
        if not _close(lval, tval, tdt, tolerance):
            return f"{path}: values\n  lucid {lval.tolist()!r:.600}\n  torch {tval.tolist()!r:.600}"
        return None
    if kind in ("tuple", "list"):
        if len(lv[1]) != len(tv[1]):
            return f"{path}: length {len(lv[1])}, PyTorch {len(tv[1])}"
        for i, (a, b) in enumerate(zip(lv[1], tv[1])):
            d = difference(a, b, f"{path}[{i}]", tolerance)
            if d:
                return d
        return None
    if kind == "dict":
        if set(lv[1]) != set(tv[1]):
            return f"{path}: keys {sorted(lv[1])}, PyTorch {sorted(tv[1])}"
        for k in tv[1]:
            d = difference(lv[1][k], tv[1][k], f"{path}[{k!r}]", tolerance)
            if d:
                return d
        return None
    if kind == "ndarray":
        if lv[1] != tv[1] or lv[2] != tv[2]:
            return f"{path}: ndarray {lv[1]}{lv[2]}, PyTorch {tv[1]}{tv[2]}"
        ok = np.array_equal(lv[3], tv[3], equal_nan=lv[3].dtype.kind == "f")
        return None if ok else f"{path}: ndarray values {lv[3]!r}, PyTorch {tv[3]!r}"
    if kind == "float":
        a, b = lv[1], tv[1]
        if (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-6 * abs(b) + 1e-9:
            return None
        return f"{path}: {a!r}, PyTorch {b!r}"
    if lv[1:] != tv[1:]:
        return f"{path}: {lv[1:]!r}, PyTorch {tv[1:]!r}"
    return None


_PRELUDE_CODE = compile(PRELUDE, "<prelude>", "exec")


def run_source(src, lib):
    """(picture of ``result``, the case's ``tolerance`` or None)."""
    ns = {"T": lib, "np": np, "math": math, "nan": float("nan"), "inf": float("inf")}
    exec(_PRELUDE_CODE, ns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(src, "<case>", "exec"), ns)
            value = ns["result"]
        except Exception as e:  # noqa: BLE001 - every exception is an observable outcome
            value = Raised(e)
    try:
        return describe(value, lib), ns.get("tolerance")
    except Exception as e:  # noqa: BLE001
        return Raised(e), ns.get("tolerance")


# A case whose source sets this flag returns it first: True when a call that
# raised left its input changed.
LOST = "\nlost = "


class Filtered(str):
    """A difference a family's check explains (a PyTorch quirk Lucid does
    not copy, an artefact of the oracle): counted, not reported."""


def check(src, family=None, on_library=None):
    """None, or a description of how Lucid differs from PyTorch on ``src``
    (a :class:`Filtered` one when the family's check explains it).
    ``on_library(name)`` is called before each library runs the case."""
    special = FAMILY_CHECKS.get(family)
    if special is not None:
        return special(src, sys.modules[__name__])
    if on_library:
        on_library("torch")
    tv, tolerance = run_source(src, torch)
    if on_library:
        on_library("lucid")
    lv, _ = run_source(src, lucid)
    if LOST in src and isinstance(lv, tuple) and lv[0] == "tuple" and lv[1][0] == ("bool", True):
        return "lost: a failed call changed its input"  # whatever PyTorch did
    if LOST in src and isinstance(lv, tuple) and isinstance(tv, tuple) and tv[0] == "tuple" \
            and tv[1][0] == ("bool", True):
        # PyTorch wrote part of the input before it raised, Lucid nothing:
        # only the outcomes are compared
        return difference(lv[1][1], tv[1][1], "result[1]", tolerance)
    return difference(lv, tv, tolerance=tolerance)


def check_expecting(src, raises=None):
    """check(src) for a regression test, once PyTorch is seen to raise
    ``raises`` (an exception class) or, when None, to return: a case whose
    PyTorch side failed by accident (a typo) would otherwise pass."""
    tv, _ = run_source(src, torch)
    if raises is None:
        assert not isinstance(tv, Raised), f"PyTorch {tv!r}"
    else:
        assert isinstance(tv, Raised) and isinstance(tv.exc, raises), f"PyTorch {tv!r}, expected {raises.__name__}"
    return check(src)


# ---------------------------------------------------------------- values

def nested(values, shape):
    if not shape:
        return literal(values[0])
    step = len(values) // shape[0] if shape[0] else 0
    if shape[0] == 0:
        return "[]"
    return "[" + ", ".join(nested(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


class Gen:
    def __init__(self, rng: random.Random):
        self.r = rng

    def choice(self, xs):
        return self.r.choice(xs)

    def value(self, dtype, special=True):
        r = self.r
        if dtype == "bool":
            return r.random() < 0.5
        if dtype in INTS:
            lo, hi = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-300, 300),
                      "int32": (-1000, 1000), "int64": (-1000, 1000)}[dtype]
            if r.random() < 0.6:
                return r.randint(max(lo, -7), min(hi, 7))
            return r.randint(lo, hi)
        if special and r.random() < 0.12:
            return r.choice([float("nan"), float("inf"), float("-inf"), -0.0, 0.0])
        v = r.choice([r.uniform(-4, 4), float(r.randint(-5, 5)), r.choice([0.5, -0.5, 1.5, -2.5, 2.5])])
        if dtype in ("float16", "bfloat16"):
            v = float(torch.tensor(v, dtype=getattr(torch, dtype)))
        elif dtype == "float32":
            v = float(np.float32(v))
        return v

    def tensor(self, dtype, shape, special=True, requires_grad=False):
        n = int(np.prod(shape)) if shape else 1
        vals = [self.value(dtype, special) for _ in range(n)]
        rg = ", requires_grad=True" if requires_grad else ""
        if not shape:
            return f"T.tensor({literal(vals[0])}, dtype=T.{dtype}{rg})"
        if n == 0:
            return f"T.zeros({tuple(shape)}, dtype=T.{dtype}{rg})"
        return f"T.tensor({nested(vals, shape)}, dtype=T.{dtype}{rg})"

    def scalar(self, kind=None):
        kind = kind or self.r.choice(["int", "float", "bool"])
        if kind == "bool":
            return literal(self.r.random() < 0.5)
        if kind == "int":
            return literal(self.r.choice([0, 1, 2, 3, -1, -2, -3, 7, 100, 300]))
        return literal(self.r.choice([0.5, -1.5, 2.0, 0.0, -0.0, 3.25, float("nan"), float("inf"), 1e-3]))

    def shape(self, max_rank=3, max_size=4, allow_empty=False):
        rank = self.r.randint(1, max_rank)
        lo = 0 if allow_empty and self.r.random() < 0.15 else 1
        return tuple(self.r.randint(lo, max_size) for _ in range(rank))


# ---------------------------------------------------------------- families

BINARY_FUNCS = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
                "atan2", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge",
                "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                "bitwise_left_shift", "bitwise_right_shift", "hypot", "copysign", "xlogy", "logaddexp",
                "heaviside", "igamma", "ldexp", "gcd", "lcm", "float_power"]
BINARY_OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "<", "<=", ">", ">=",
                    "==", "!="]
UNARY_FUNCS = ["neg", "abs", "sign", "sgn", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10",
               "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "floor", "ceil", "round", "trunc", "frac",
               "reciprocal", "square", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite",
               "isposinf", "isneginf", "signbit", "positive", "erf", "erfinv", "asin", "atan", "sinh",
               "relu", "angle", "nan_to_num", "lgamma", "digamma", "deg2rad", "rad2deg", "logit", "i0",
               "sinc", "fix", "negative", "absolute", "clone", "isreal"]
REDUCTIONS = ["sum", "prod", "mean", "nansum", "nanmean", "amax", "amin", "max", "min", "argmax", "argmin",
              "all", "any", "std", "var", "logsumexp", "count_nonzero", "cumsum", "cumprod", "cummax",
              "cummin", "median", "nanmedian", "norm", "aminmax"]


def _operand(g: Gen, dtype, kind, shape):
    if kind == "nd":
        return g.tensor(dtype, shape)
    if kind == "0d":
        return g.tensor(dtype, ())
    return g.scalar(kind)


def family_promotion(g: Gen):
    r = g.r
    shape = g.shape(max_rank=2, max_size=3)
    da, db = g.choice(DTYPES), g.choice(DTYPES)
    ka = r.choice(["nd", "nd", "0d"])
    kb = r.choice(["nd", "0d", "int", "float", "bool"])
    a, b = _operand(g, da, ka, shape), _operand(g, db, kb, shape)
    form = r.choice(["func", "func", "operator", "roperator", "inplace", "iop", "out", "unary", "unary",
                     "reduction", "reduction", "where", "clamp", "unary_inplace", "div_mode", "comparison_scalar"])
    if form == "func":
        f = g.choice(BINARY_FUNCS)
        return f"a = {a}\nb = {b}\nresult = T.{f}(a, b)"
    if form == "operator":
        op = g.choice(BINARY_OPERATORS)
        return f"a = {a}\nb = {b}\nresult = a {op} b"
    if form == "roperator":
        op = g.choice(BINARY_OPERATORS)
        s = g.scalar()
        return f"a = {a}\nresult = {s} {op} a"
    if form in ("inplace", "iop"):
        if form == "inplace":
            f = g.choice(["add_", "sub_", "mul_", "div_", "floor_divide_", "remainder_", "fmod_", "pow_",
                          "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_left_shift_",
                          "maximum", "clamp_min_", "clamp_max_", "copysign_", "atan2_", "hypot_", "lerp_",
                          "logical_and_", "eq_", "lt_", "copy_", "fill_", "masked_fill_", "xlogy_"])
            if f == "lerp_":
                call = f"a.lerp_(b, 0.5)"
            elif f == "masked_fill_":
                call = f"a.masked_fill_(T.ones_like(a, dtype=T.bool), b)"
            elif f == "maximum":
                call = "T.maximum(a, b, out=a)"
            else:
                call = f"a.{f}(b)"
            return (f"a = {g.tensor(da, shape)}\nb = {b}\nr = {call}\n"
                    f"result = (r, a, r is a)")
        op = g.choice(["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="])
        return (f"a = {g.tensor(da, shape)}\nb = {b}\nkeep = a\na {op} b\n"
                f"result = (a, a is keep)")
    if form == "out":
        f = g.choice(["add", "mul", "sub", "div", "maximum", "eq", "floor_divide", "remainder", "pow",
                      "bitwise_and", "logical_and", "atan2"])
        do = g.choice(DTYPES)
        oshape = r.choice([shape, (0,), shape])
        return (f"a = {a}\nb = {b}\no = T.empty({tuple(oshape)}, dtype=T.{do})\nr = T.{f}(a, b, out=o)\n"
                f"result = (o, r is o)")
    if form in ("unary", "unary_inplace"):
        f = g.choice(UNARY_FUNCS)
        a = g.tensor(da, r.choice([shape, ()]))
        if form == "unary_inplace" and f not in ("isnan", "isinf", "isfinite", "isposinf", "isneginf",
                                                  "signbit", "positive", "angle", "clone", "isreal"):
            return f"a = {a}\nr = a.{f}_()\nresult = (r, a, r is a)"
        return f"a = {a}\nresult = T.{f}(a)"
    if form == "div_mode":
        mode = r.choice(["'floor'", "'trunc'", "None"])
        return f"a = {a}\nb = {b}\nresult = T.div(a, b, rounding_mode={mode})"
    if form == "comparison_scalar":
        s = g.scalar()
        f = g.choice(["eq", "ne", "lt", "ge", "maximum", "minimum", "fmod", "remainder", "pow", "mul", "add"])
        if f in ("maximum", "minimum"):
            return f"a = {a}\nresult = T.{f}(a, T.tensor({s}))"
        return f"a = {a}\nresult = T.{f}(a, {s})"
    if form == "where":
        c = g.tensor("bool", shape)
        return f"c = {c}\na = {a}\nb = {b}\nresult = T.where(c, a, b)"
    if form == "clamp":
        lo, hi = r.choice([(g.scalar(), "None"), ("None", g.scalar()), (g.scalar("int"), g.scalar("float")),
                           (b, "None")])
        return f"a = {a}\nb = {b}\nresult = T.clamp(a, {lo}, {hi})"
    # reductions
    f = g.choice(REDUCTIONS)
    x = g.tensor(da, g.shape(max_rank=3, max_size=3, allow_empty=True))
    kw = []
    if r.random() < 0.6:
        kw.append(f"dim={r.choice([0, -1, 1, (0, 1), (), (-1, 0)])}")
        if r.random() < 0.5:
            kw.append(f"keepdim={r.random() < 0.5}")
    if f in ("sum", "prod", "mean", "nansum", "nanmean", "cumsum", "cumprod", "norm", "logsumexp") \
            and r.random() < 0.5:
        kw.append(f"dtype=T.{g.choice(DTYPES)}")
    if f in ("cumsum", "cumprod") and not any(k.startswith("dim=") for k in kw):
        kw.append("dim=0")
    if f in ("cumsum", "cumprod", "cummax", "cummin"):
        kw = [k if not k.startswith("dim=") else f"dim={r.choice([0, -1])}" for k in kw if not k.startswith("keepdim")]
    if r.random() < 0.15 and f in ("sum", "prod", "mean", "amax", "cumsum"):
        return (f"x = {x}\no = T.empty(0, dtype=T.{g.choice(DTYPES)})\n"
                f"r = T.{f}(x, {', '.join(kw + ['out=o']) if kw else 'dim=0, out=o'})\nresult = (o, r is o)")
    if r.random() < 0.25 and f in ("sum", "mean", "cumsum", "prod", "logsumexp"):
        return f"x = {x}\nresult = T.{f}(x, {', '.join(kw) if kw else 'dim=0'}) if False else x.{f}({', '.join(kw)})"
    soft = r.random() < 0.1
    if soft:
        fn = r.choice(["softmax", "log_softmax"])
        dt = f", dtype=T.{g.choice(FLOATS)}" if r.random() < 0.5 else ""
        return f"x = {x}\nresult = T.{fn}(x, -1{dt})"
    return f"x = {x}\nresult = T.{f}(x{', ' if kw else ''}{', '.join(kw)})"


# ---- indexing

def _index_item(g: Gen, size, allow_adv=True):
    r = g.r
    kinds = ["int", "negint", "slice", "slice_step", "none", "full"]
    if allow_adv:
        kinds += ["long", "list", "bool", "zerod", "long2d", "intlist_neg"]
    k = r.choice(kinds)
    if k == "int":
        return str(r.randint(0, max(size - 1, 0)) if r.random() < 0.9 else size), 1
    if k == "negint":
        return str(-r.randint(1, max(size, 1))), 1
    if k == "slice":
        a = r.choice(["", str(r.randint(-size - 1, size + 1))])
        b = r.choice(["", str(r.randint(-size - 1, size + 1))])
        return f"{a}:{b}", 1
    if k == "slice_step":
        a = r.choice(["", str(r.randint(-size, size))])
        return f"{a}::{r.randint(1, 3)}", 1
    if k == "none":
        return "None", 0
    if k == "full":
        return ":", 1
    if k == "long":
        n = r.randint(0, 3)
        vals = [r.randint(-size, max(size - 1, 0)) if size else 0 for _ in range(n)]
        dt = r.choice(["int64", "int64", "int32"])
        return f"T.tensor({vals}, dtype=T.{dt})", 1
    if k == "list":
        n = r.randint(1, 3)
        return str([r.randint(-size, max(size - 1, 0)) if size else 0 for _ in range(n)]), 1
    if k == "intlist_neg":
        return str([r.randint(-size - 1, size) for _ in range(2)]), 1
    if k == "bool":
        return f"T.tensor({[r.random() < 0.5 for _ in range(size)]}, dtype=T.bool)", 1
    if k == "zerod":
        return f"T.tensor({r.randint(-size, max(size - 1, 0)) if size else 0})", 1
    # long2d
    return f"T.tensor({[[r.randint(0, max(size - 1, 0)) for _ in range(2)] for _ in range(2)]})", 1


def _index_expr(g: Gen, shape, allow_adv=True):
    r = g.r
    items = []
    dim = 0
    use_ellipsis = r.random() < 0.2
    n = r.randint(1, len(shape) + 1)
    for _ in range(n):
        if dim >= len(shape):
            if r.random() < 0.3:
                items.append("None")
            break
        it, consumed = _index_item(g, shape[dim], allow_adv)
        items.append(it)
        dim += consumed
    if use_ellipsis:
        items.insert(r.randint(0, len(items)), "...")
    if len(items) == 1 and r.random() < 0.5:
        return items[0]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def family_indexing(g: Gen):
    r = g.r
    shape = g.shape(max_rank=4, max_size=4, allow_empty=True)
    dtype = g.choice(DTYPES)
    adv = r.random() < 0.6
    idx = _index_expr(g, shape, adv)
    form = r.choice(["get", "get", "get_view", "set_scalar", "set_tensor", "grad", "index_put", "set_grad",
                     "get_bool_full"])
    x = g.tensor(dtype, shape)
    if form == "get":
        return f"x = {x}\nresult = x[{idx}]"
    if form == "get_view":
        idx = _index_expr(g, shape, False)
        return (f"x = {x}\ny = x[{idx}]\n"
                f"result = (y, y.stride(), y.storage_offset(), y.is_contiguous())")
    if form == "get_bool_full":
        m = g.tensor("bool", shape[: r.randint(1, len(shape))])
        return f"x = {x}\nm = {m}\nresult = x[m]"
    if form == "set_scalar":
        s = g.scalar()
        return f"x = {x}\nx[{idx}] = {s}\nresult = x"
    if form == "set_tensor":
        vdt = g.choice(DTYPES)
        vshape = r.choice([(), (1,), shape[-1:], (2,), (1, 1)])
        return (f"x = {x}\nv = {g.tensor(vdt, vshape)}\nx[{idx}] = v\nresult = x")
    if form == "grad":
        x = g.tensor("float64", shape, special=False, requires_grad=True)
        return (f"x = {x}\ny = x[{idx}]\nw = T.arange(y.numel(), dtype=T.float64).reshape(y.shape) + 1\n"
                f"(y * w).sum().backward()\nresult = (y, x.grad)")
    if form == "set_grad":
        x = g.tensor("float64", shape, special=False, requires_grad=True)
        v = g.tensor("float64", r.choice([(), (1,)]), special=False, requires_grad=True)
        return (f"x = {x}\nv = {v}\ny = x * 1\ny[{idx}] = v * 2\n"
                f"w = T.arange(y.numel(), dtype=T.float64).reshape(y.shape) + 1\n"
                f"(y * w).sum().backward()\nresult = (y, x.grad, v.grad)")
    # index_put
    nidx = r.randint(1, len(shape))
    ind = []
    for d in range(nidx):
        k = r.randint(1, 3)
        ind.append(f"T.tensor({[r.randint(-shape[d], max(shape[d] - 1, 0)) if shape[d] else 0 for _ in range(k if d == 0 else 1)]})")
    vdt = r.choice([dtype, dtype, g.choice(DTYPES)])
    vshape = r.choice([(), (1,)])
    acc = r.choice([True, False])
    return (f"x = {x}\nv = {g.tensor(vdt, vshape)}\nr = x.index_put_(({', '.join(ind)},), v, accumulate={acc})\n"
            f"result = (x, r is x)")


# ---- views and in-place

VIEW_OPS = [
    ("view", lambda g, s: f".view({_reshape_target(g, s)})"),
    ("reshape", lambda g, s: f".reshape({_reshape_target(g, s)})"),
    ("transpose", lambda g, s: f".transpose({g.r.randint(-len(s), len(s) - 1)}, {g.r.randint(-len(s), len(s) - 1)})" if s else ".t()"),
    ("permute", lambda g, s: f".permute({_perm(g, s)})"),
    ("t", lambda g, s: ".t()"),
    ("T", lambda g, s: ".T" if len(s) == 2 else ".mT" if len(s) > 2 else ".T"),
    ("expand", lambda g, s: f".expand({_expand_target(g, s)})"),
    ("narrow", lambda g, s: f".narrow({_narrow(g, s)})"),
    ("select", lambda g, s: f".select({_select(g, s)})"),
    ("unfold", lambda g, s: f".unfold({_unfold(g, s)})"),
    ("diagonal", lambda g, s: f".diagonal({g.r.choice([0, 1, -1])}, {g.r.choice([0, -1])}, {g.r.choice([1, -2])})"),
    ("movedim", lambda g, s: f".movedim({g.r.randint(-len(s), len(s) - 1)}, {g.r.randint(-len(s), len(s) - 1)})" if s else ".movedim(0, 0)"),
    ("squeeze", lambda g, s: g.r.choice([".squeeze()", f".squeeze({g.r.randint(-len(s), len(s) - 1) if s else 0})", f".squeeze({tuple(range(len(s)))})"])),
    ("unsqueeze", lambda g, s: f".unsqueeze({g.r.randint(-len(s) - 1, len(s))})"),
    ("split", lambda g, s: f".split({g.r.randint(1, 3)}, {g.r.randint(0, len(s) - 1) if s else 0})[{g.r.choice([0, -1])}]"),
    ("chunk", lambda g, s: f".chunk({g.r.randint(1, 3)}, {g.r.randint(0, len(s) - 1) if s else 0})[0]"),
    ("unbind", lambda g, s: f".unbind({g.r.randint(0, len(s) - 1) if s else 0})[{g.r.choice([0, -1])}]"),
    ("as_strided", lambda g, s: f".as_strided({_as_strided(g, s)})"),
    ("flatten", lambda g, s: f".flatten()"),
    ("basic_index", lambda g, s: f"[{_index_expr(g, s, False)}]" if s else "[...]"),
    ("detach", lambda g, s: ".detach()"),
    ("view_as", lambda g, s: ".view_as(T.empty(" + str(tuple(s)) + "))"),
    ("contiguous", lambda g, s: ".contiguous()"),
    ("swapaxes", lambda g, s: f".swapaxes(0, -1)"),
    ("view_dtype", lambda g, s: g.r.choice([".view(T.int32)", ".view(T.float32)", ".view(T.int16)", ".view(T.uint8)"])),
]


def _numel(s):
    return int(np.prod(s)) if s else 1


def _reshape_target(g, s):
    n = _numel(s)
    options = [(-1,), (n,), tuple(reversed(s)), s + (1,), (1,) + tuple(s)]
    if n % 2 == 0 and n:
        options += [(2, -1), (-1, 2)]
    if len(s) >= 2:
        options.append((s[0] * s[1],) + tuple(s[2:]))
    t = g.r.choice(options)
    return ", ".join(map(str, t)) if t else "()"


def _perm(g, s):
    p = list(range(len(s)))
    g.r.shuffle(p)
    if p and g.r.random() < 0.3:
        p[0] -= len(s)
    return ", ".join(map(str, p)) if p else "()"


def _expand_target(g, s):
    t = [x if x != 1 else g.r.choice([1, 3, -1]) for x in s]
    if g.r.random() < 0.3:
        t = [2] + t
    if g.r.random() < 0.15 and t:
        t[-1] = t[-1] + 1  # invalid
    return ", ".join(map(str, t)) if t else "()"


def _narrow(g, s):
    if not s:
        return "0, 0, 1"
    d = g.r.randint(0, len(s) - 1)
    start = g.r.randint(-s[d], s[d])
    length = g.r.randint(0, s[d])
    return f"{d}, {start}, {length}"


def _select(g, s):
    if not s:
        return "0, 0"
    d = g.r.randint(-len(s), len(s) - 1)
    return f"{d}, {g.r.randint(-s[d], s[d])}"


def _unfold(g, s):
    if not s:
        return "0, 1, 1"
    d = g.r.randint(0, len(s) - 1)
    return f"{d}, {g.r.randint(0, s[d] + 1)}, {g.r.randint(1, 2)}"


def _as_strided(g, s):
    n = _numel(s)
    size = g.r.choice([(2, 2), (n // 2, 2), (3,), (2, 3)])
    stride = g.r.choice([(1, 1), (2, 1), (1,), (0, 1), (1, 2)])[:len(size)]
    if len(stride) < len(size):
        stride = stride + (1,) * (len(size) - len(stride))
    off = g.r.choice([0, 0, 1])
    return f"{size}, {stride}, {off}"


def _apply_shape(op_src, shape):
    """The shape after a view op, computed with PyTorch (None when it raises)."""
    try:
        t = torch.zeros(shape)
        return tuple(eval("t" + op_src, {"T": torch, "t": t}).shape)  # noqa: S307
    except Exception:  # noqa: BLE001
        return None


def family_views(g: Gen):
    r = g.r
    shape = g.shape(max_rank=3, max_size=4)
    dtype = r.choice(["float32", "float64", "int64", "int32", "bool", "float16", "int16"])
    chain = ""
    cur = shape
    for _ in range(r.randint(1, 3)):
        name, mk = g.choice(VIEW_OPS)
        op = mk(g, cur)
        nxt = _apply_shape(op, cur) if name != "view_dtype" else None
        chain += op
        if nxt is None:
            break
        cur = nxt
    form = r.choice(["meta", "write_view", "write_base", "autograd_leaf", "version", "expanded_write",
                     "grad", "ptr", "view_inplace_grad"])
    x = g.tensor(dtype, shape, special=False)
    if form == "meta":
        return (f"x = {x}\ny = x{chain}\n"
                f"result = (y, y.shape, y.stride(), y.storage_offset(), y.is_contiguous())")
    if form == "ptr":
        return (f"x = {x}\ny = x{chain}\n"
                f"shared = y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()\n"
                f"result = (shared, (y.data_ptr() - x.data_ptr()) // x.element_size() if shared and y.numel() else None)")
    if form == "write_view":
        op = r.choice(["y.add_(1)", "y.mul_(2)", "y.fill_(7)", "y.zero_()", "y[...] = 5", "y.copy_(T.ones_like(y))",
                       "y.clamp_(0, 2)", "y.neg_()", "y += 3", "y.masked_fill_(T.ones_like(y, dtype=T.bool), 4)",
                       "y.index_fill_(0, T.tensor([0]), 9)", "y.t_()", "y.squeeze_()", "y.unsqueeze_(0)",
                       "y.transpose_(0, -1)", "y.abs_()", "y.sqrt_()"])
        return f"x = {x}\ny = x{chain}\n{op}\nresult = (x, y, y.stride(), y.shape)"
    if form == "write_base":
        op = r.choice(["x.add_(1)", "x.mul_(3)", "x.fill_(2)", "x[0] = 9", "x.zero_()", "x.copy_(T.ones_like(x))"])
        return f"x = {x}\ny = x{chain}\n{op}\nresult = (x, y)"
    if form == "expanded_write":
        return (f"x = {g.tensor(dtype, (1,) + shape[1:])}\ny = x.expand({', '.join(map(str, (3,) + shape[1:]))})\n"
                f"{r.choice(['y.add_(1)', 'y.fill_(1)', 'y.zero_()', 'y[0] = 1', 'y.copy_(T.ones(y.shape, dtype=y.dtype))', 'y.mul_(2)'])}\nresult = (x, y)")
    xf = g.tensor("float64", shape, special=False, requires_grad=True)
    if form == "autograd_leaf":
        op = r.choice(["x.add_(1)", "x[0] = 1", "x.zero_()", "x.fill_(1)", "x.view(-1).add_(1)", "x.data.add_(1)",
                       "x.detach().add_(1)", "x.requires_grad_(False)"])
        return f"x = {xf}\n{op}\nresult = (x, x.requires_grad, x.is_leaf)"
    if form == "version":
        fn = r.choice(["exp", "sigmoid", "tanh", "sqrt", "pow(2)", "mul(x)", "relu", "abs", "sin", "log", "add(1)",
                       "mul(2)", "sum()", "clone()", "reciprocal"])
        call = f".{fn}" if "(" in fn else f".{fn}()"
        mod = r.choice(["y.add_(1)", "z.add_(1)", "y.mul_(1)", "y[0] = 0", "y.detach().zero_()"])
        return (f"x = {xf}\ny = x * 1\nz = y{call}\n{mod}\nz.sum().backward()\n"
                f"result = (x.grad, y._version if hasattr(y, '_version') else 0)")
    if form == "view_inplace_grad":
        op = r.choice(["y.mul_(2)", "y.add_(y)", "y.exp_()", "y[0] = 0", "y.zero_()", "y.copy_(y.detach() * 3)",
                       "y.clamp_(0.2, 0.5)", "y.sigmoid_()"])
        return (f"x = {xf}\nb = x * 1\ny = b{chain}\n{op}\nw = T.arange(b.numel(), dtype=T.float64).reshape(b.shape)\n"
                f"(b * w).sum().backward()\nresult = (b, x.grad)")
    return (f"x = {xf}\ny = x{chain}\nw = T.arange(y.numel(), dtype=T.float64).reshape(y.shape)\n"
            f"(y * w).sum().backward()\nresult = (y, x.grad)")


# ---- reductions and shape functions

def family_reductions(g: Gen):
    r = g.r
    shape = g.shape(max_rank=4, max_size=3, allow_empty=True)
    dtype = r.choice(["float32", "float64", "int64", "int32", "bool", "float16", "uint8"])
    x = g.tensor(dtype, shape, special=r.random() < 0.3)
    nd = len(shape)
    dims = [0, -1, nd - 1, -nd, (0, -1), (), (0, 1), (1, 0), nd, (0, 0), [0], None]
    form = r.choice(["reduce", "reduce", "reduce", "shape", "shape", "grad"])
    if form in ("reduce", "grad"):
        f = g.choice(["sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "std", "var",
                      "logsumexp", "all", "any", "count_nonzero", "nansum", "median", "mode", "norm",
                      "std_mean", "var_mean", "aminmax", "kthvalue", "topk", "sort", "cumsum", "softmax",
                      "nanmean", "unique", "argsort", "msort", "logcumsumexp", "quantile"])
        kw = []
        d = r.choice(dims)
        if f in ("kthvalue",):
            args = f"1, {d if isinstance(d, int) else -1}"
        elif f == "topk":
            args = f"{r.randint(0, 2)}, {d if isinstance(d, int) else -1}"
        elif f in ("cumsum", "softmax", "logcumsumexp"):
            args = f"{d if isinstance(d, int) else 0}"
        elif f == "quantile":
            args = f"0.5, {d if isinstance(d, int) else None}"
        elif f in ("sort", "argsort", "msort", "unique"):
            args = ""
        else:
            args = ""
            if d is not None or r.random() < 0.3:
                kw.append(f"dim={d!r}")
            if r.random() < 0.6:
                kw.append(f"keepdim={r.random() < 0.5}")
            if f in ("std", "var", "std_mean", "var_mean") and r.random() < 0.5:
                kw.append(f"correction={r.choice([0, 1, 2])}")
        argstr = ", ".join([a for a in [args] if a] + kw)
        if form == "grad":
            if f in ("argmax", "argmin", "all", "any", "count_nonzero", "argsort", "unique"):
                f = "sum"
            x = g.tensor("float64", shape, special=False, requires_grad=True)
            return (f"x = {x}\nr = T.{f}(x{', ' if argstr else ''}{argstr})\n"
                    f"t = r if isinstance(r, T.Tensor) else r[0]\n"
                    f"w = T.arange(t.numel(), dtype=T.float64).reshape(t.shape) + 1\n"
                    f"(t * w).sum().backward()\nresult = (r, x.grad)")
        meth = r.random() < 0.3
        if meth:
            return f"x = {x}\nresult = x.{f}({argstr})"
        return f"x = {x}\nresult = T.{f}(x{', ' if argstr else ''}{argstr})"
    f = g.choice(["squeeze", "unsqueeze", "flatten", "unflatten", "movedim", "cat", "stack", "tile", "repeat",
                  "flip", "roll", "rot90", "tril", "triu", "diag_embed", "broadcast_to", "atleast_2d",
                  "split", "tensor_split", "chunk", "narrow", "swapdims", "reshape", "diff", "gather",
                  "take_along_dim", "repeat_interleave", "broadcast_tensors", "meshgrid", "einsum_sum",
                  "expand_as", "column_stack", "dstack", "hsplit", "vsplit", "ravel", "moveaxis"])
    d = r.choice([0, -1, nd - 1, -nd, nd, -nd - 1, (0, 1), (), (0, -1), [0]])
    di = d if isinstance(d, int) else 0
    calls = {
        "squeeze": f"T.squeeze(x, {d!r})",
        "unsqueeze": f"T.unsqueeze(x, {di})",
        "flatten": f"T.flatten(x, {di}, {r.choice([-1, 0, nd - 1])})",
        "unflatten": f"T.unflatten(x, {di}, {r.choice([(-1, 1), (1, -1), (shape[0] if shape else 1,), (2, -1)])})",
        "movedim": f"T.movedim(x, {d!r}, {d!r})",
        "moveaxis": f"T.moveaxis(x, {di}, {r.choice([0, -1])})",
        "cat": f"T.cat([x, x], {di})",
        "stack": f"T.stack([x, x], {di})",
        "tile": f"T.tile(x, {r.choice([(2,), (1, 2), (2, 1, 1, 1, 1)])})",
        "repeat": f"x.repeat({r.choice(['2', '1, 2', ', '.join(['2'] * (nd + 1)), ', '.join(['1'] * nd) or '()'])})",
        "flip": f"T.flip(x, {d if isinstance(d, (tuple, list)) else (d,)!r})",
        "roll": f"T.roll(x, {r.choice([1, -2, (1, 1)])}, {r.choice([di, None, (0, -1)])})",
        "rot90": f"T.rot90(x, {r.randint(-2, 3)}, {r.choice([(0, 1), (0, -1), (1, 0)])})",
        "tril": f"T.tril(x, {r.randint(-2, 2)})",
        "triu": f"T.triu(x, {r.randint(-2, 2)})",
        "diag_embed": f"T.diag_embed(x, {r.randint(-1, 1)})",
        "broadcast_to": f"T.broadcast_to(x, {(2,) + shape})",
        "atleast_2d": "T.atleast_2d(x)",
        "split": f"T.split(x, {r.choice([1, 2, [1, 1], [0, 2]])}, {di})",
        "tensor_split": f"T.tensor_split(x, {r.choice([2, 3, [1], [0, 5]])}, {di})",
        "chunk": f"T.chunk(x, {r.randint(1, 4)}, {di})",
        "narrow": f"T.narrow(x, {di}, {r.randint(-2, 2)}, {r.randint(0, 2)})",
        "swapdims": f"T.swapdims(x, {di}, {r.choice([0, -1])})",
        "reshape": f"T.reshape(x, {r.choice([(-1,), (0, -1), (-1, 0), (1, -1), (-1, -1)])})",
        "diff": f"T.diff(x, {r.randint(1, 2)}, {di})",
        "gather": f"T.gather(x, {di}, T.zeros({shape}, dtype=T.int64))",
        "take_along_dim": f"T.take_along_dim(x, T.zeros({shape}, dtype=T.int64), {r.choice([di, None])})",
        "repeat_interleave": f"T.repeat_interleave(x, {r.choice([2, 0])}, {r.choice([di, None])})",
        "broadcast_tensors": f"T.broadcast_tensors(x, T.zeros({r.choice([(1,), (2, 1) + shape[1:], shape[-1:]])}))",
        "meshgrid": f"T.meshgrid(x.flatten(), x.flatten()[:2], indexing={r.choice(['ij', 'xy'])!r})",
        "einsum_sum": "T.einsum('i...->...', x)",
        "expand_as": f"x.expand_as(T.zeros({(2,) + shape}))",
        "column_stack": "T.column_stack([x, x])",
        "dstack": "T.dstack([x, x])",
        "hsplit": f"T.hsplit(x, {r.choice([1, 2, [1]])})",
        "vsplit": f"T.vsplit(x, {r.choice([1, 2, [1]])})",
        "ravel": "x.t().ravel() if x.dim() <= 2 else x.ravel()",
    }
    return f"x = {x}\nresult = {calls[f]}"


# ---- construction and NumPy interop

NP_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "uint16",
             "uint32", "uint64", "complex64", "object"]


def family_construction(g: Gen):
    r = g.r
    form = r.choice(["nested", "nested", "numpy", "numpy_0d", "as_tensor", "from_numpy", "to_numpy", "tolist",
                     "item", "scalar_ctor", "tensor_of_tensors", "numpy_scalar", "strided_numpy", "factory"])
    if form == "nested":
        def elem():
            return r.choice(["True", "False", "1", "-2", "0", "2.5", "-0.0", "nan", "3", "1e10", "2**40",
                             "np.float32(1.5)", "np.int64(3)", "T.tensor(2)", "T.tensor(1.5)"])
        shape = r.choice([(2,), (2, 2), (1, 3), (3,), (0,)])
        vals = [elem() for _ in range(int(np.prod(shape)))]
        lit = "[" + ", ".join(vals) + "]" if len(shape) == 1 else \
            "[" + ", ".join("[" + ", ".join(vals[i * shape[1]:(i + 1) * shape[1]]) + "]" for i in range(shape[0])) + "]"
        if r.random() < 0.15:
            lit = "[[1, 2], [3]]"
        dt = r.choice(["", "", f", dtype=T.{g.choice(DTYPES)}"])
        return f"result = T.tensor({lit}{dt})"
    if form in ("numpy", "numpy_0d", "as_tensor", "from_numpy", "strided_numpy"):
        npd = g.choice(NP_DTYPES)
        shape = () if form == "numpy_0d" else r.choice([(3,), (2, 2), (0,)])
        if npd == "object":
            arr = f"np.array({[1, 2.5][:max(1, int(np.prod(shape)) and 2)]}, dtype=object)"
        else:
            arr = f"(np.arange({int(np.prod(shape))}) - 1).astype(np.{npd}).reshape({shape})"
        if form == "strided_numpy":
            arr = f"(np.arange(12) - 3).astype(np.{npd}).reshape(3, 4)[:, ::2].T" if npd != "object" else arr
        if form in ("numpy", "numpy_0d", "strided_numpy"):
            dt = r.choice(["", f", dtype=T.{g.choice(DTYPES)}"])
            return f"a = {arr}\nt = T.tensor(a{dt})\nresult = (t, t.shape)"
        if form == "as_tensor":
            dt = r.choice(["", "", f", dtype=T.{g.choice(DTYPES)}"])
            return (f"a = {arr}\nt = T.as_tensor(a{dt})\na.flat[0:1] = 7 if a.size else 0\n"
                    f"result = (t, a.copy())")
        return (f"a = {arr}\nt = T.from_numpy(a)\nt.add_(1) if t.numel() and t.dtype != T.bool else None\n"
                f"result = (t, a.copy(), t.stride(), t.is_contiguous())")
    if form == "to_numpy":
        dtype = r.choice(["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                          "bfloat16"])
        x = g.tensor(dtype, g.shape(), special=False)
        view = r.choice(["", ".t()", "[..., ::2]", "[0]", ".expand(2, *x.shape)"])
        return (f"x = {x}\ny = x{view}\na = y.numpy()\n"
                f"a.reshape(-1)[:1] = 1 if a.size and a.flags.writeable else 0\n"
                f"result = (a.dtype.name, a.shape, x, a.strides if a.size else None)")
    if form == "tolist":
        dtype = g.choice(DTYPES)
        x = g.tensor(dtype, r.choice([(), (2,), (2, 1), (0,), (1, 0)]))
        return f"x = {x}\nresult = x.tolist()"
    if form == "item":
        dtype = g.choice(DTYPES)
        x = g.tensor(dtype, r.choice([(), (1,), (1, 1), (2,)]))
        f = r.choice(["x.item()", "int(x)", "float(x)", "bool(x)", "x.__index__()", "complex(x).real",
                      "[1, 2, 3, 4][x]", "range(10)[x]", "math.floor(x)", "round(x)", "abs(x).item()", "-x.item()"])
        return f"x = {x}\nv = {f}\nresult = (v, type(v).__name__)"
    if form == "scalar_ctor":
        v = r.choice(["True", "3", "2.5", "-0.0", "nan", "2**62", "2**63", "-2**63", "2**31", "np.float64(1)",
                      "np.int32(4)", "np.bool_(True)", "np.float16(1.5)", "np.array(5)", "np.uint8(200)"])
        dt = r.choice(["", f", dtype=T.{g.choice(DTYPES)}"])
        return f"t = T.tensor({v}{dt})\nresult = (t, t.shape)"
    if form == "tensor_of_tensors":
        a = g.tensor(g.choice(DTYPES), r.choice([(), (2,)]))
        b = g.tensor(g.choice(DTYPES), r.choice([(), (2,)]))
        return f"result = T.tensor([{a}, {b}])"
    if form == "numpy_scalar":
        s = r.choice(["np.float32(2.5)", "np.int64(3)", "np.float64(1.5)", "np.bool_(True)", "np.int8(-3)",
                      "np.float16(0.5)", "np.uint8(250)"])
        x = g.tensor(g.choice(DTYPES), (3,))
        op = r.choice(["+", "*", "-", "/", "<"])
        return f"x = {x}\nresult = (x {op} {s}, {s} {op} x)"
    # factory
    f = r.choice([f"T.full((2,), {g.scalar()})", f"T.arange({r.choice(['5', '1.0, 3', '0, 5, 2', '3, 0, -1', '0, 1, 0.25', 'T.tensor(3)'])})",
                  f"T.zeros(2, dtype=T.{g.choice(DTYPES)})", f"T.full((2,), {g.scalar()}, dtype=T.{g.choice(DTYPES)})",
                  f"T.linspace(0, 1, {r.randint(0, 4)})", f"T.ones((), dtype=T.{g.choice(DTYPES)})",
                  f"T.empty(0).new_tensor({g.scalar()})", f"T.zeros_like(T.tensor([1, 2]), dtype=T.{g.choice(DTYPES)})",
                  f"T.tensor([1, 2]).new_full((2,), {g.scalar()})", f"T.arange({r.randint(0, 5)}, dtype=T.{g.choice(DTYPES)})",
                  f"T.eye({r.randint(0, 3)}, dtype=T.{g.choice(DTYPES)})",
                  f"T.full_like(T.tensor([1, 2]), {g.scalar()})", f"T.tensor([]).sum()"])
    return f"result = {f}"


FAMILIES = {
    "promotion": family_promotion,
    "indexing": family_indexing,
    "views": family_views,
    "reductions": family_reductions,
    "construction": family_construction,
    "edge": family_edge,
    "nn": family_nn,
    "autograd": family_autograd,
    **OPTIM_FAMILIES,
}
FAMILY_CHECKS = dict(OPTIM_CHECKS)


# ---------------------------------------------------------------- running

def case_source(family, seed, index):
    g = Gen(random.Random(f"{family}:{seed}:{index}"))
    return FAMILIES[family](g)


def _worker(family, seed, start, stop, deadline, pipe):
    """Runs cases start..stop-1 in a forked child; one line per case on ``pipe``."""
    for i in range(start, stop):
        if time.time() > deadline:
            break
        os.write(pipe, f"begin {i}\n".encode())
        signal.alarm(CASE_SECONDS)
        try:
            d = check(case_source(family, seed, i), family, lambda name: os.write(pipe, f"library {name}\n".encode()))
        except Exception:  # noqa: BLE001
            d = "probe error: " + traceback.format_exc()
        signal.alarm(0)
        if isinstance(d, Filtered):
            os.write(pipe, f"filtered {i} {d.splitlines()[0] if d else ''}\n".encode())
        elif d:
            payload = (d.replace("\\", "\\\\").replace("\n", "\\n"))
            os.write(pipe, f"diff {i} {payload}\n".encode())
        os.write(pipe, f"end {i}\n".encode())
    os.write(pipe, b"done\n")


def run_family(family, seed, count, deadline, filtered=None):
    """Runs ``count`` cases (or until ``deadline``); returns (cases run,
    [(index, what)]); explained differences go to ``filtered`` (a list)."""
    found = []
    i = 0
    ran = 0
    while i < count and time.time() < deadline:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            code = 0
            try:
                # The parent's thread pools (PyTorch's OpenMP team, Lucid's
                # workers) did not survive the fork: a parallel region would
                # wait on them forever. One thread each, and an alarm that
                # ends a child still running well past the deadline.
                import torch

                import lucid

                torch.set_num_threads(1)
                lucid.set_num_threads(1)
                resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
                _worker(family, seed, i, count, deadline, wfd)
            except BaseException:  # noqa: BLE001
                code = 1
            os._exit(code)
        os.close(wfd)
        current = None
        library = None
        finished = False
        with os.fdopen(rfd, "r") as f:
            for line in f:
                tag, _, rest = line.rstrip("\n").partition(" ")
                if tag == "begin":
                    current = int(rest)
                elif tag == "library":
                    library = rest
                elif tag == "end":
                    ran += 1
                    current = None
                    i = int(rest) + 1
                elif tag == "filtered":
                    if filtered is not None:
                        idx, _, why = rest.partition(" ")
                        filtered.append((int(idx), why))
                elif tag == "diff":
                    idx, _, what = rest.partition(" ")
                    found.append((int(idx), what.replace("\\n", "\n").replace("\\\\", "\\")))
                elif tag == "done":
                    finished = True
        _, status = os.waitpid(pid, 0)
        if current is not None:
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
                what = f"hang: {library} ran past {CASE_SECONDS} s"
            else:
                what = f"crash in {library} (wait status {status})"
            found.append((current, what))
            ran += 1
            i = current + 1
        elif finished:
            break
        elif i >= count:
            break
    return ran, found


def category(what):
    """The kind of a reported difference, for the summary."""
    if what.startswith(("crash", "hang", "probe error", "lost")):
        return what.split(" ")[0].split(":")[0]
    if "exception kind" in what:
        return "exception kind"
    if ": Lucid raised" in what:
        return "Lucid raises, PyTorch returns"
    if ", PyTorch raised" in what:
        return "PyTorch raises, Lucid returns"
    return "different result"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.semantics", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="seed (default: from the clock)")
    ap.add_argument("--minutes", type=float, default=1.0, help="wall-clock budget over all families")
    ap.add_argument("--count", type=int, default=100000, help="cases per family at most")
    ap.add_argument("--family", default="all", choices=["all"] + sorted(FAMILIES))
    ap.add_argument("--case", type=int, default=None, help="print and check one case (with --family)")
    ap.add_argument("--max-print", type=int, default=40, help="mismatches printed per family")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else int(time.time()) % 1_000_000
    families = sorted(FAMILIES) if a.family == "all" else [a.family]
    if a.case is not None:
        src = case_source(families[0], seed, a.case)
        print(src)
        d = check(src, families[0])
        print("->", ("explained: " + d) if isinstance(d, Filtered) else (d or "same"))
        return 0
    start = time.time()
    total = 0
    mismatches = 0
    for k, fam in enumerate(families):
        deadline = start + a.minutes * 60 * (k + 1) / len(families)
        filtered = []
        ran, found = run_family(fam, seed, a.count, deadline, filtered)
        total += ran
        mismatches += len(found)
        print(f"== {fam}: {ran} cases, {len(found)} mismatches, {len(filtered)} explained differences "
              f"(seed {seed})")
        reasons = {}
        for _, why in filtered:
            reasons[why] = reasons.get(why, 0) + 1
        for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            print(f"   explained {n:5d}: {why}")
        kinds = {}
        for _, what in found:
            kinds[category(what)] = kinds.get(category(what), 0) + 1
        for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print(f"   {n:5d}  {kind}")
        for idx, what in found[: a.max_print]:
            print(f"-- case {idx}  (--family {fam} --seed {seed} --case {idx})")
            print("   " + case_source(fam, seed, idx).replace("\n", "\n   "))
            print("   => " + what.replace("\n", "\n      "))
        sys.stdout.flush()
    print(f"total: {total} cases, {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
