"""The seeded generator of random programs.

A program grows one node at a time from the values it already has. Every
candidate node is run at once on PyTorch meta tensors (so its shape is known
and an ill-formed candidate is dropped), and carries a rough interval of its
values so that functions with a restricted domain (log, sqrt, division, exp)
only see arguments where they are well defined: the generator inserts guard
nodes (abs + c, sigmoid + c, tanh * c) instead of producing inf/NaN.

Families:
- ``graph``: DAGs of the ops below, a loss and a training recipe.
- ``views``: in-place ops on views, ``x[idx] = ...``, ``.data`` writes.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .program import LOSSES, Edit, Leaf, Node, Program, StepSpec, Train
from .runtime import namespace

BIG = 1e30


class Val:
    __slots__ = ("name", "shape", "dtype", "lo", "hi", "grad", "uses")

    def __init__(self, name, shape, dtype, lo, hi, grad):
        self.name, self.shape, self.dtype, self.lo, self.hi, self.grad = name, tuple(shape), dtype, lo, hi, grad
        self.uses = 0

    @property
    def mag(self):
        return max(abs(self.lo), abs(self.hi))

    @property
    def numel(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def is_float(self):
        return self.dtype.startswith("float")


def _clip(x):
    return max(-BIG, min(BIG, x))


def _iv_mul(a, b):
    ps = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    ps = [0.0 if math.isnan(p) else p for p in ps]
    return _clip(min(ps)), _clip(max(ps))


class Reject(Exception):
    pass


class Builder:
    """Grows one program; `values` are the tensors ops may read."""

    def __init__(self, rng: np.random.Generator, dtype: str, x_shape, big: bool):
        self.r = rng
        self.dtype = dtype
        self.big = big
        self.leaves = []
        self.nodes = []
        self.values = []
        self.meta = {}
        self.counter = 0
        self.tdt = getattr(torch, dtype)
        self.ns = namespace("meta")
        x = torch.empty(x_shape, dtype=self.tdt, device="meta")
        self.meta["x"] = x
        self.x = Val("x", x_shape, dtype, -3.0, 3.0, False)
        self.values.append(self.x)

    # ------------------------------------------------------------ helpers
    def rand(self):
        return float(self.r.random())

    def choice(self, seq, p=None):
        if p is not None:
            p = np.asarray(p, dtype=float)
            p = p / p.sum()
        return seq[int(self.r.choice(len(seq), p=p))]

    def randint(self, lo, hi):  # inclusive
        return int(self.r.integers(lo, hi + 1))

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def dim_size(self):
        if self.big and self.rand() < 0.3:
            return self.choice([17, 33, 64, 100, 129, 257])
        return self.choice([1, 2, 3, 4, 5, 6, 7, 8], p=[3, 3, 3, 3, 2, 1, 1, 2])

    def pick(self, pred=None, grad_bias=0.6):
        """A float value, recent ones and ones on a gradient path preferred."""
        cands = [v for v in self.values if v.is_float and (pred is None or pred(v))]
        if not cands:
            return None
        w = np.array([(1.0 + i) ** 1.5 * (2.0 if v.grad and self.rand() < grad_bias else 1.0)
                      for i, v in enumerate(cands)])
        return cands[int(self.r.choice(len(cands), p=w / w.sum()))]

    # ------------------------------------------------------------- leaves
    def _leaf(self, kind, shape, prefix, **kw):
        name = self.fresh(prefix)
        lf = Leaf(name, kind, tuple(shape), **kw)
        self.leaves.append(lf)
        if kind == "index":
            t = torch.empty(shape, dtype=torch.int64, device="meta")
        elif kind == "mask":
            t = torch.empty(shape, dtype=torch.bool, device="meta")
        else:
            t = torch.empty(shape, dtype=self.tdt, device="meta")
        self.meta[name] = t
        dt = {"index": "int64", "mask": "bool"}.get(kind, self.dtype)
        v = Val(name, shape, dt, -3.0, 3.0, kind == "param")
        if kind in ("param", "frozen", "const"):
            self.values.append(v)
        return v

    def param(self, shape, frozen=None):
        if frozen is None:
            frozen = self.rand() < 0.08
        return self._leaf("frozen" if frozen else "param", shape, "p", group=int(self.rand() < 0.4))

    def const(self, shape):
        return self._leaf("const", shape, "c")

    def index(self, shape, bound_ref=None, bound=None):
        return self._leaf("index", shape, "i", bound_ref=bound_ref, bound=bound)

    def mask(self, shape):
        return self._leaf("mask", shape, "m")

    def operand(self, shape, param_p=0.6):
        """A new leaf of `shape`: a parameter or a constant."""
        return self.param(shape) if self.rand() < param_p else self.const(shape)

    # -------------------------------------------------------------- nodes
    def emit(self, op, ins, tmpl, interval=None):
        """Adds ``outs = tmpl.format(*ins)`` after checking it on meta
        tensors. Returns the output Val (or list of Vals)."""
        names = [v.name for v in ins]
        rhs = tmpl.format(*names)
        try:
            res = eval(rhs, self.ns, dict(self.meta))  # noqa: S307
        except Exception as e:  # noqa: BLE001
            raise Reject(f"{rhs}: {e}") from None
        multi = isinstance(res, (tuple, list))
        outs = list(res) if multi else [res]
        if not all(isinstance(o, torch.Tensor) for o in outs) or not outs:
            raise Reject(rhs)
        if any(o.numel() > (300_000 if self.big else 20_000) for o in outs):
            raise Reject("too large")
        grad = any(v.grad for v in ins)
        lo, hi = interval if interval is not None else (-BIG, BIG)
        vals = []
        onames = [self.fresh() for _ in outs]
        for n, o in zip(onames, outs):
            self.meta[n] = o
            dt = str(o.dtype).replace("torch.", "")
            v = Val(n, tuple(o.shape), dt, lo, hi, grad and o.dtype.is_floating_point)
            vals.append(v)
            self.values.append(v)
        for v in ins:
            v.uses += 1
        self.nodes.append(Node(op, onames, names, tmpl, multi))
        return vals if multi else vals[0]

    def emit_stmt(self, op, ins, tmpl):
        """Adds the in-place statement ``tmpl.format(*ins)`` (checked on meta
        tensors); returns ins[0], the tensor it writes."""
        names = [v.name for v in ins]
        code = tmpl.format(*names)
        env = dict(self.meta)
        try:
            exec(code, self.ns, env)  # noqa: S102
        except Exception as e:  # noqa: BLE001
            raise Reject(f"{code}: {e}") from None
        for v in ins:
            v.uses += 1
        ins[0].grad = ins[0].grad or any(v.grad for v in ins[1:])
        ins[0].lo, ins[0].hi = min(v.lo for v in ins), max(v.hi for v in ins)
        self.nodes.append(Node(op, [], names, tmpl, stmt=True))
        return ins[0]

    # ---------------------------------------------------------- guarding
    def positive(self, v, lo=0.1):
        """A value > lo derived from v (v itself when it already is)."""
        if v.lo >= lo and v.hi < 1e6:
            return v
        g = self.choice(["abs", "sigmoid", "softplus", "square", "exp_tanh"])
        if g == "abs":
            a = self.emit("abs", [v], "L.abs({0})", (0.0, v.mag))
            return self.emit("add_scalar", [a], "{0} + 0.5", (0.5, a.hi + 0.5))
        if g == "sigmoid":
            a = self.emit("sigmoid", [v], "L.sigmoid({0})", (0.0, 1.0))
            return self.emit("add_scalar", [a], "{0} + 0.25", (0.25, 1.25))
        if g == "softplus":
            a = self.emit("softplus", [self.bounded(v, 20)], "F.softplus({0})", (0.0, 21.0))
            return self.emit("add_scalar", [a], "{0} + 0.2", (0.2, 21.2))
        if g == "square":
            b = self.bounded(v, 10)
            a = self.emit("square", [b], "L.square({0})", (0.0, b.mag ** 2))
            return self.emit("add_scalar", [a], "{0} + 0.3", (0.3, a.hi + 0.3))
        t = self.emit("tanh", [v], "L.tanh({0})", (-1.0, 1.0))
        return self.emit("exp", [t], "L.exp({0})", (math.exp(-1), math.exp(1)))

    def bounded(self, v, m):
        """A value with |.| <= m derived from v."""
        if v.mag <= m:
            return v
        g = self.choice(["tanh", "clamp", "scale"])
        if g == "tanh":
            t = self.emit("tanh", [v], "L.tanh({0})", (-1.0, 1.0))
            return self.emit("mul_scalar", [t], f"{{0}} * {min(m, 3.0)}", (-min(m, 3.0), min(m, 3.0)))
        if g == "clamp" or v.mag >= BIG:
            return self.emit("clamp", [v], f"L.clamp({{0}}, {-m}, {m})", (-m, m))
        s = m / v.mag
        return self.emit("mul_scalar", [v], f"{{0}} * {s!r}", (-m, m))

    def nonzero(self, v):
        """A divisor: bounded away from zero."""
        if v.lo >= 0.1 or v.hi <= -0.1:
            return v
        return self.positive(v, 0.1)

    # -------------------------------------------------------------- shapes
    def broadcast_partner_shape(self, shape):
        """A shape that broadcasts against `shape` (dims dropped or set to 1,
        sometimes one that widens a size-1 dim)."""
        s = list(shape)
        if s and self.rand() < 0.5:
            s = s[self.randint(0, len(s)):]  # drop leading dims
        s = [1 if self.rand() < 0.35 else d for d in s]
        for i, d in enumerate(s):
            if d == 1 and shape[len(shape) - len(s) + i] == 1 and self.rand() < 0.25:
                s[i] = self.choice([2, 3])  # the other side broadcasts
        if self.rand() < 0.1 and len(s) < 4:
            s = [self.choice([1, 2])] + s  # a new leading dim
        return tuple(s)

    def partner(self, v, same_shape=False):
        """A second operand for a binary op with v: an existing value of a
        compatible shape, or a new leaf."""
        if self.rand() < 0.5:
            if same_shape:
                cand = self.pick(lambda u: u.shape == v.shape and u is not v)
            else:
                cand = self.pick(lambda u: u is not v and _broadcastable(u.shape, v.shape) and
                                 math.prod(_bshape(u.shape, v.shape)) <= 4 * max(v.numel, u.numel))
            if cand is not None:
                return cand
        if self.rand() < 0.15:
            return v  # x op x: one value on two operands
        shape = v.shape if same_shape else self.broadcast_partner_shape(v.shape)
        return self.operand(shape)


def _broadcastable(a, b):
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def _bshape(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


# ====================================================================== ops
# Each op takes the builder, draws its operands and attributes, and emits.

UNARY_FREE = [
    # (name, template, interval rule (lo, hi) -> (lo, hi))
    ("neg", "L.neg({0})", lambda lo, hi: (-hi, -lo)),
    ("neg_op", "-{0}", lambda lo, hi: (-hi, -lo)),
    ("abs", "L.abs({0})", lambda lo, hi: (0.0, max(abs(lo), abs(hi)))),
    ("relu", "L.relu({0})", lambda lo, hi: (max(0.0, lo), max(0.0, hi))),
    ("relu_m", "{0}.relu()", lambda lo, hi: (max(0.0, lo), max(0.0, hi))),
    ("sigmoid", "L.sigmoid({0})", lambda lo, hi: (0.0, 1.0)),
    ("tanh", "L.tanh({0})", lambda lo, hi: (-1.0, 1.0)),
    ("tanh_m", "{0}.tanh()", lambda lo, hi: (-1.0, 1.0)),
    ("sin", "L.sin({0})", lambda lo, hi: (-1.0, 1.0)),
    ("cos", "L.cos({0})", lambda lo, hi: (-1.0, 1.0)),
    ("erf", "L.erf({0})", lambda lo, hi: (-1.0, 1.0)),
    ("gelu", "F.gelu({0})", lambda lo, hi: (-0.2, max(hi, 0.0))),
    ("gelu_tanh", "F.gelu({0}, approximate='tanh')", lambda lo, hi: (-0.2, max(hi, 0.0))),
    ("silu", "F.silu({0})", lambda lo, hi: (-0.3, max(hi, 0.0))),
    ("elu", "F.elu({0})", lambda lo, hi: (-1.0, max(hi, 0.0))),
    ("leaky_relu", "F.leaky_relu({0}, 0.1)", lambda lo, hi: (min(lo, 0.0) * 0.1, max(hi, 0.0))),
    ("hardtanh", "F.hardtanh({0})", lambda lo, hi: (-1.0, 1.0)),
    ("softsign", "F.softsign({0})", lambda lo, hi: (-1.0, 1.0)),
    ("logsigmoid", "F.logsigmoid({0})", lambda lo, hi: (min(lo, 0.0) - 1.0, 0.0)),
    ("hardswish", "F.hardswish({0})", lambda lo, hi: (-0.4, max(hi, 0.0))),
    ("hardsigmoid", "F.hardsigmoid({0})", lambda lo, hi: (0.0, 1.0)),
    ("relu6", "F.relu6({0})", lambda lo, hi: (0.0, 6.0)),
    ("mish", "F.mish({0})", lambda lo, hi: (-0.31, max(hi, 0.0))),
    ("celu", "F.celu({0}, 0.5)", lambda lo, hi: (-0.5, max(hi, 0.0))),
    ("selu", "F.selu({0})", lambda lo, hi: (-1.76, max(hi, 0.0) * 1.06)),
    ("sign", "L.sign({0})", lambda lo, hi: (-1.0, 1.0)),
    ("floor", "L.floor({0})", lambda lo, hi: (lo - 1, hi)),
    ("round", "L.round({0})", lambda lo, hi: (lo - 1, hi + 1)),
    ("clamp", "L.clamp({0}, -0.5, 0.7)", lambda lo, hi: (-0.5, 0.7)),
    ("clamp_min", "L.clamp({0}, min=-0.3)", lambda lo, hi: (-0.3, max(hi, -0.3))),
    ("square", "L.square({0})", lambda lo, hi: (0.0, max(lo * lo, hi * hi))),
    ("pow2", "{0} ** 2", lambda lo, hi: (0.0, max(lo * lo, hi * hi))),
    ("pow3", "L.pow({0}, 3)", lambda lo, hi: (_clip(lo ** 3), _clip(hi ** 3))),
    ("detach", "{0}.detach()", lambda lo, hi: (lo, hi)),
    ("clone", "{0}.clone()", lambda lo, hi: (lo, hi)),
]

UNARY_POS = [  # argument must be >= 0.1
    ("log", "L.log({0})", lambda lo, hi: (math.log(lo), math.log(hi))),
    ("sqrt", "L.sqrt({0})", lambda lo, hi: (math.sqrt(lo), math.sqrt(hi))),
    ("rsqrt", "L.rsqrt({0})", lambda lo, hi: (1 / math.sqrt(hi), 1 / math.sqrt(lo))),
    ("reciprocal", "L.reciprocal({0})", lambda lo, hi: (1 / hi, 1 / lo)),
    ("log2", "L.log2({0})", lambda lo, hi: (math.log2(lo), math.log2(hi))),
    ("pow_half", "L.pow({0}, 0.5)", lambda lo, hi: (math.sqrt(lo), math.sqrt(hi))),
    ("pow_m15", "{0} ** -1.5", lambda lo, hi: (hi ** -1.5, lo ** -1.5)),
    ("rdiv", "2.0 / {0}", lambda lo, hi: (2 / hi, 2 / lo)),
    ("log1p", "L.log1p({0})", lambda lo, hi: (math.log1p(lo), math.log1p(hi))),
]

UNARY_BOUNDED = [  # argument must be |.| <= 10
    ("exp", "L.exp({0})", lambda lo, hi: (math.exp(lo), math.exp(hi))),
    ("exp_m", "{0}.exp()", lambda lo, hi: (math.exp(lo), math.exp(hi))),
    ("expm1", "L.expm1({0})", lambda lo, hi: (math.expm1(lo), math.expm1(hi))),
    ("exp2", "L.exp2({0})", lambda lo, hi: (2 ** lo, 2 ** hi)),
    ("softplus", "F.softplus({0})", lambda lo, hi: (0.0, max(hi, 0.0) + 1)),
]


def op_unary(b: Builder):
    kind = b.choice(["free", "pos", "bounded"], p=[6, 2, 2])
    v = b.pick()
    if kind == "free":
        name, tmpl, rule = b.choice(UNARY_FREE)
        if name in ("pow3",):
            v = b.bounded(v, 5)
        return b.emit(name, [v], tmpl, rule(v.lo, v.hi))
    if kind == "pos":
        name, tmpl, rule = b.choice(UNARY_POS)
        v = b.positive(v)
        return b.emit(name, [v], tmpl, rule(v.lo, v.hi))
    name, tmpl, rule = b.choice(UNARY_BOUNDED)
    v = b.bounded(v, 6)
    return b.emit(name, [v], tmpl, rule(v.lo, v.hi))


def op_scalar(b: Builder):
    v = b.pick()
    c = b.choice([0.5, 2.0, -1.5, 3.0, 0.25, 1.0, -0.75])
    form = b.choice(["add", "radd", "sub", "rsub", "mul", "rmul", "div", "addm", "mulm", "sub_alpha"])
    tmpl = {"add": f"{{0}} + {c}", "radd": f"{c} + {{0}}", "sub": f"{{0}} - {c}", "rsub": f"{c} - {{0}}",
            "mul": f"{{0}} * {c}", "rmul": f"{c} * {{0}}", "div": f"{{0}} / {c}", "addm": f"{{0}}.add({c})",
            "mulm": f"{{0}}.mul({c})", "sub_alpha": f"L.sub({{0}}, {c}, alpha=2)"}[form]
    if form in ("add", "radd", "addm"):
        iv = (v.lo + c, v.hi + c)
    elif form == "sub":
        iv = (v.lo - c, v.hi - c)
    elif form == "sub_alpha":
        iv = (v.lo - 2 * c, v.hi - 2 * c)
    elif form == "rsub":
        iv = (c - v.hi, c - v.lo)
    elif form == "div":
        iv = _iv_mul((v.lo, v.hi), (1 / c, 1 / c))
    else:
        iv = _iv_mul((v.lo, v.hi), (c, c))
    return b.emit("scalar_" + form, [v], tmpl, iv)


def op_binary(b: Builder):
    v = b.pick()
    form = b.choice(["add", "sub", "mul", "div", "maximum", "minimum", "add_m", "mul_m", "atan2", "pow",
                     "add_alpha", "where_cmp"], p=[4, 3, 5, 2, 1, 1, 1, 1, 0.5, 0.5, 0.5, 1.5])
    w = b.partner(v)
    if w.shape == v.shape and b.rand() < 0.5:
        v, w = w, v
    if form in ("add", "sub", "add_m", "add_alpha"):
        tmpl = {"add": "{0} + {1}", "sub": "{0} - {1}", "add_m": "{0}.add({1})",
                "add_alpha": "L.add({0}, {1}, alpha=0.5)"}[form]
        iv = (v.lo - w.mag, v.hi + w.mag)
        return b.emit(form, [v, w], tmpl, iv)
    if form in ("mul", "mul_m"):
        return b.emit(form, [v, w], "{0} * {1}" if form == "mul" else "L.mul({0}, {1})",
                      _iv_mul((v.lo, v.hi), (w.lo, w.hi)))
    if form == "div":
        w = b.nonzero(w)
        inv = (1 / w.hi, 1 / w.lo) if w.lo > 0 else (1 / w.lo, 1 / w.hi)
        return b.emit("div", [v, w], b.choice(["{0} / {1}", "L.div({0}, {1})"]), _iv_mul((v.lo, v.hi), inv))
    if form in ("maximum", "minimum"):
        return b.emit(form, [v, w], f"L.{form}({{0}}, {{1}})", (min(v.lo, w.lo), max(v.hi, w.hi)))
    if form == "atan2":
        return b.emit("atan2", [v, b.nonzero(w)], "L.atan2({0}, {1})", (-math.pi, math.pi))
    if form == "pow":
        base = b.positive(v, 0.2)
        e = b.bounded(w, 2)
        hi = max(base.hi, 1.0) ** 2 * max(1.0, 1 / base.lo) ** 2
        return b.emit("pow", [base, e], "L.pow({0}, {1})", (0.0, _clip(hi)))
    # where(v > w, v * c, w)
    cmp_ = b.choice([">", "<", ">=", "<="])
    c = b.emit("cmp", [v, w], f"{{0}} {cmp_} {{1}}")
    a2 = b.emit("scalar_mul", [v], "{0} * 2.0", (2 * v.lo, 2 * v.hi))
    return b.emit("where", [c, a2, w], "L.where({0}, {1}, {2})",
                  (min(2 * v.lo, w.lo), max(2 * v.hi, w.hi)))


def op_mask(b: Builder):
    v = b.pick()
    form = b.choice(["where_const", "masked_fill", "mul_mask", "where_scalar"])
    if form == "where_const":
        m = b.mask(b.broadcast_partner_shape(v.shape))
        w = b.partner(v)
        return b.emit("where", [m, v, w], "L.where({0}, {1}, {2})", (min(v.lo, w.lo), max(v.hi, w.hi)))
    if form == "masked_fill":
        m = b.mask(b.broadcast_partner_shape(v.shape))
        return b.emit("masked_fill", [v, m], "{0}.masked_fill({1}, -1.25)", (min(v.lo, -1.25), max(v.hi, -1.25)))
    if form == "mul_mask":
        c = b.emit("cmp", [v], "{0} > 0.1")
        return b.emit("mul_mask", [v, c], "{0} * {1}.to({0}.dtype)", (min(v.lo, 0.0), max(v.hi, 0.0)))
    c = b.emit("cmp", [v], "{0} < -0.2")
    return b.emit("where", [c, v], "L.where({1}, 0.0, {0})", (min(v.lo, 0.0), max(v.hi, 0.0)))


def _dims(b, v, allow_all=True):
    if v.ndim == 0:
        return None
    n = b.randint(1, v.ndim)
    dims = sorted(b.r.choice(v.ndim, size=n, replace=False).tolist())
    dims = [d - v.ndim if b.rand() < 0.3 else d for d in dims]
    if len(dims) == 1 and b.rand() < 0.6:
        return dims[0]
    return tuple(dims)


def op_reduce(b: Builder):
    v = b.pick(lambda u: u.ndim >= 1)
    if v is None:
        v = b.pick()
    form = b.choice(["sum", "mean", "amax", "amin", "max_dim", "min_dim", "var", "std", "logsumexp", "prod",
                     "norm", "sum_all", "mean_all", "cumsum", "max_all", "sum_m"], p=[4, 4, 1.5, 1, 1.5, 1, 1.5, 1,
                                                                                     1.5, 0.5, 1, 1.5, 1.5, 1, 0.5, 1])
    keep = b.rand() < 0.4
    n = v.numel
    if form == "sum_all" or v.ndim == 0:
        return b.emit("sum", [v], "L.sum({0})", (_clip(v.lo * n), _clip(v.hi * n)))
    if form == "mean_all":
        return b.emit("mean", [v], "{0}.mean()", (v.lo, v.hi))
    if form == "max_all":
        return b.emit("amax", [v], b.choice(["L.max({0})", "{0}.max()", "L.amax({0})"]), (v.lo, v.hi))
    dims = _dims(b, v)
    if form in ("sum", "sum_m"):
        tmpl = f"L.sum({{0}}, {dims!r}, keepdim={keep})" if form == "sum" else f"{{0}}.sum({dims!r}, {keep})"
        return b.emit("sum", [v], tmpl, (_clip(v.lo * n), _clip(v.hi * n)))
    if form == "mean":
        return b.emit("mean", [v], f"L.mean({{0}}, {dims!r}, keepdim={keep})", (v.lo, v.hi))
    if form in ("amax", "amin"):
        return b.emit(form, [v], f"L.{form}({{0}}, {dims!r}, keepdim={keep})", (v.lo, v.hi))
    d = dims if isinstance(dims, int) else dims[0]
    if form in ("max_dim", "min_dim"):
        fn = form[:3]
        return b.emit(form, [v], f"L.{fn}({{0}}, {d}, keepdim={keep})[0]", (v.lo, v.hi))
    if form in ("var", "std"):
        corr = b.choice([0, 1])
        red = math.prod(v.shape[x] for x in ([dims] if isinstance(dims, int) else dims))
        if red <= corr:
            corr = 0
        hi = (v.mag ** 2) * max(1, red)
        if form == "std":
            v = b.emit("add", [v, b.operand(v.shape, 0.3)], "{0} + {1}", (v.lo - 3, v.hi + 3))  # no zero spread
            hi = math.sqrt(hi) * 3
        return b.emit(form, [v], f"L.{form}({{0}}, {dims!r}, correction={corr}, keepdim={keep})", (0.0, _clip(hi)))
    if form == "logsumexp":
        v = b.bounded(v, 30)
        return b.emit("logsumexp", [v], f"L.logsumexp({{0}}, {dims!r}, keepdim={keep})",
                      (v.lo, v.hi + math.log(max(n, 1))))
    if form == "prod":
        if v.shape[d] > 6:
            raise Reject("prod over a long dim")
        v = b.bounded(v, 1.5)
        return b.emit("prod", [v], f"L.prod({{0}}, {d}, keepdim={keep})", (-1.5 ** 6, 1.5 ** 6))
    if form == "norm":
        v = b.emit("add", [v, b.operand(v.shape, 0.3)], "{0} + {1}", (v.lo - 3, v.hi + 3))
        return b.emit("norm", [v], f"L.norm({{0}}, dim={dims!r}, keepdim={keep})", (0.0, _clip(v.mag * math.sqrt(n))))
    return b.emit("cumsum", [v], f"L.cumsum({{0}}, {d})", (_clip(v.lo * n), _clip(v.hi * n)))


def op_matmul(b: Builder):
    v = b.pick(lambda u: u.ndim >= 1)
    if v is None:
        v = b.pick()
        if v.ndim == 0:
            raise Reject("scalar matmul")
    form = b.choice(["matmul_param", "linear", "matmul_value", "bmm", "outer", "mm_t"], p=[3, 4, 2, 1, 0.5, 1])
    k = v.shape[-1]
    if form == "linear":
        n_out = b.dim_size()
        w = b.param((n_out, k))
        if b.rand() < 0.7:
            bias = b.param((n_out,))
            return b.emit("linear", [v, w, bias], "F.linear({0}, {1}, {2})",
                          (-_clip(v.mag * 3 * k + 3), _clip(v.mag * 3 * k + 3)))
        return b.emit("linear", [v, w], "F.linear({0}, {1})", (-_clip(v.mag * 3 * k), _clip(v.mag * 3 * k)))
    if form == "matmul_param":
        m = b.dim_size()
        shape = (k, m) if b.rand() < 0.8 or v.ndim < 2 else (v.shape[-3] if v.ndim >= 3 else 1, k, m)
        if b.rand() < 0.1:
            shape = (k,)
        w = b.operand(shape, 0.8)
        mag = _clip(v.mag * w.mag * k)
        return b.emit("matmul", [v, w], b.choice(["{0} @ {1}", "L.matmul({0}, {1})"]), (-mag, mag))
    if form == "matmul_value":
        w = b.pick(lambda u: u.ndim >= 1 and (u.shape[-2] if u.ndim >= 2 else u.shape[0]) == k and u is not v)
        if w is None:
            w = b.pick(lambda u: u.ndim >= 1 and u.shape[-1] == k)
            if w is None:
                raise Reject("no partner")
            w = b.emit("transpose", [w], "{0}.transpose(-1, -2)" if w.ndim >= 2 else "{0}", (w.lo, w.hi))
        mag = _clip(v.mag * w.mag * k)
        return b.emit("matmul", [v, w], "L.matmul({0}, {1})", (-mag, mag))
    if form == "bmm":
        if v.ndim != 3:
            raise Reject("bmm needs 3-d")
        w = b.operand((v.shape[0], k, b.dim_size()), 0.7)
        mag = _clip(v.mag * w.mag * k)
        return b.emit("bmm", [v, w], "L.bmm({0}, {1})", (-mag, mag))
    if form == "outer":
        if v.ndim != 1:
            raise Reject("outer needs 1-d")
        w = b.operand((b.dim_size(),))
        return b.emit("outer", [v, w], "L.outer({0}, {1})", _iv_mul((-v.mag, v.mag), (-w.mag, w.mag)))
    if v.ndim != 2:
        raise Reject("mm needs 2-d")
    w = b.operand((b.dim_size(), k), 0.8)
    mag = _clip(v.mag * w.mag * k)
    return b.emit("mm", [v, w], b.choice(["L.mm({0}, {1}.t())", "{0} @ {1}.T"]), (-mag, mag))


def op_shape(b: Builder):
    v = b.pick()
    iv = (v.lo, v.hi)
    form = b.choice(["reshape", "flatten", "unsqueeze", "squeeze", "permute", "transpose", "t", "expand",
                     "repeat", "flip", "roll", "movedim", "tril", "narrow", "slice", "select", "view", "broadcast_to"])
    nd = v.ndim
    if form == "reshape" or form == "view":
        n = v.numel
        # a random factorisation of numel into 1..4 dims (with -1 sometimes)
        dims, rest = [], n
        for _ in range(b.randint(0, 3)):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = b.choice(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        b.r.shuffle(dims)
        if b.rand() < 0.3:
            dims[b.randint(0, len(dims) - 1)] = -1
        m = "reshape" if form == "reshape" else "view"
        return b.emit(form, [v], f"{{0}}.{m}({', '.join(map(str, dims))})" if dims else f"{{0}}.{m}(())", iv)
    if form == "flatten":
        if nd < 2:
            return b.emit("flatten", [v], "L.flatten({0})", iv)
        s = b.randint(0, nd - 2)
        return b.emit("flatten", [v], f"L.flatten({{0}}, {s}, {b.randint(s + 1, nd - 1)})", iv)
    if form == "unsqueeze":
        return b.emit("unsqueeze", [v], f"{{0}}.unsqueeze({b.randint(-nd - 1, nd)})", iv)
    if form == "squeeze":
        ones = [i for i, d in enumerate(v.shape) if d == 1]
        if not ones:
            return b.emit("squeeze", [v], "L.squeeze({0})", iv)
        return b.emit("squeeze", [v], f"{{0}}.squeeze({b.choice(ones)})", iv)
    if nd == 0:
        raise Reject("0-d")
    if form == "permute":
        perm = b.r.permutation(nd).tolist()
        return b.emit("permute", [v], b.choice([f"{{0}}.permute({', '.join(map(str, perm))})",
                                                 f"L.permute({{0}}, {tuple(perm)!r})"]), iv)
    if form in ("transpose", "t"):
        if nd < 2:
            raise Reject("transpose of 1-d")
        if form == "t" and nd == 2:
            return b.emit("t", [v], b.choice(["{0}.t()", "{0}.T", "L.t({0})"]), iv)
        d0, d1 = b.r.choice(nd, 2, replace=False).tolist()
        return b.emit("transpose", [v], f"L.transpose({{0}}, {d0}, {d1})", iv)
    if form in ("expand", "broadcast_to"):
        shape = [d if d != 1 or b.rand() < 0.4 else b.choice([2, 3, 4]) for d in v.shape]
        if b.rand() < 0.3:
            shape = [b.choice([2, 3])] + shape
        if form == "expand":
            shape = [-1 if (i >= len(shape) - nd and d == v.shape[i - len(shape) + nd] and b.rand() < 0.5) else d
                     for i, d in enumerate(shape)]
            return b.emit("expand", [v], f"{{0}}.expand({', '.join(map(str, shape))})", iv)
        return b.emit("broadcast_to", [v], f"L.broadcast_to({{0}}, {tuple(shape)!r})", iv)
    if form == "repeat":
        reps = [b.choice([1, 1, 2, 3]) for _ in range(nd + (1 if b.rand() < 0.2 else 0))]
        return b.emit("repeat", [v], f"{{0}}.repeat({', '.join(map(str, reps))})", iv)
    if form == "flip":
        return b.emit("flip", [v], f"L.flip({{0}}, {_dims_list(b, v)!r})", iv)
    if form == "roll":
        d = b.randint(0, nd - 1)
        return b.emit("roll", [v], f"L.roll({{0}}, {b.randint(-3, 3)}, {d})", iv)
    if form == "movedim":
        return b.emit("movedim", [v], f"L.movedim({{0}}, {b.randint(0, nd - 1)}, {b.randint(0, nd - 1)})", iv)
    if form == "tril":
        if nd < 2:
            raise Reject("tril of 1-d")
        fn = b.choice(["tril", "triu"])
        return b.emit(fn, [v], f"L.{fn}({{0}}, {b.randint(-1, 1)})", (min(v.lo, 0.0), max(v.hi, 0.0)))
    d = b.randint(0, nd - 1)
    size = v.shape[d]
    if form == "narrow":
        start = b.randint(0, max(0, size - 1))
        return b.emit("narrow", [v], f"L.narrow({{0}}, {d}, {start}, {b.randint(1, size - start)})", iv)
    if form == "select":
        return b.emit("select", [v], "{0}[" + ":, " * d + f"{b.randint(-size, size - 1)}]", iv)
    # a basic slice along d: start:stop:step, negative bounds sometimes
    start = b.randint(0, max(0, size - 1))
    stop = b.randint(start + 1, size)
    step = b.choice([1, 1, 2, 3])
    sl = f"{start if start or b.rand() < 0.5 else ''}:{stop if stop != size or b.rand() < 0.5 else ''}"
    if step != 1:
        sl += f":{step}"
    pre = "..., " if d == nd - 1 and nd > 1 and b.rand() < 0.5 else ":, " * d
    extra = ", None" if b.rand() < 0.15 else ""
    return b.emit("slice", [v], "{0}[" + pre + sl + extra + "]", iv)


def _dims_list(b, v):
    n = b.randint(1, v.ndim)
    return sorted(b.r.choice(v.ndim, n, replace=False).tolist())


def op_join(b: Builder):
    """cat / stack / split / chunk / unbind."""
    v = b.pick(lambda u: u.ndim >= 1)
    if v is None:
        raise Reject("no tensor")
    form = b.choice(["cat", "stack", "split", "chunk", "unbind", "split_sizes"])
    d = b.randint(0, v.ndim - 1)
    if form in ("cat", "stack"):
        parts = [v]
        for _ in range(b.randint(1, 3)):
            if form == "cat":
                if b.rand() < 0.4:
                    w = b.pick(lambda u: u.ndim == v.ndim and all(
                        x == y for i, (x, y) in enumerate(zip(u.shape, v.shape)) if i != d))
                else:
                    s = list(v.shape)
                    s[d] = b.choice([1, 2, 3, s[d]])
                    w = b.operand(tuple(s))
            else:
                w = b.pick(lambda u: u.shape == v.shape) if b.rand() < 0.5 else b.operand(v.shape)
            parts.append(w or v)
        b.r.shuffle(parts)
        sd = b.randint(0, v.ndim) if form == "stack" else d
        if b.rand() < 0.3:
            sd = sd - (v.ndim + 1 if form == "stack" else v.ndim)
        tmpl = f"L.{form}([{', '.join('{%d}' % i for i in range(len(parts)))}], {sd})"
        return b.emit(form, parts, tmpl, (min(p.lo for p in parts), max(p.hi for p in parts)))
    size = v.shape[d]
    iv = (v.lo, v.hi)
    if form == "split":
        k = b.randint(1, max(1, size))
        outs = b.emit("split", [v], f"L.split({{0}}, {k}, {d})", iv)
    elif form == "split_sizes":
        if size < 2:
            raise Reject("split of size 1")
        a = b.randint(1, size - 1)
        outs = b.emit("split", [v], f"{{0}}.split([{a}, {size - a}], {d})", iv)
    elif form == "chunk":
        outs = b.emit("chunk", [v], f"L.chunk({{0}}, {b.randint(1, 4)}, {d})", iv)
    else:
        if size > 8:
            raise Reject("unbind of a long dim")
        outs = b.emit("unbind", [v], f"L.unbind({{0}}, {d})", iv)
    # combine two of the pieces when shapes allow, so more than one path is live
    if len(outs) >= 2 and b.rand() < 0.6:
        a, c = b.choice(outs), b.choice(outs)
        if _broadcastable(a.shape, c.shape):
            b.rand()  # (draws and bounds kept as they were, so that seeds keep their programs)
            tmpl = b.choice(["{0} * {1}", "{0} + {1}"])
            return b.emit("mul" if "*" in tmpl else "add", [a, c], tmpl, _iv_mul((-a.mag, a.mag), (-c.mag, c.mag)))
    return outs[-1]


def op_norm(b: Builder):
    v = b.pick(lambda u: u.ndim >= 1)
    if v is None:
        raise Reject("no tensor")
    form = b.choice(["softmax", "log_softmax", "layer_norm", "rms_norm", "normalize", "group_norm", "softmax_m",
                     "batch_norm"], p=[3, 2, 3, 1, 1, 1, 1, 1])
    d = b.randint(-v.ndim, v.ndim - 1)
    if form in ("softmax", "softmax_m"):
        v = b.bounded(v, 40)
        return b.emit("softmax", [v], f"F.softmax({{0}}, {d})" if form == "softmax" else f"{{0}}.softmax({d})",
                      (0.0, 1.0))
    if form == "log_softmax":
        v = b.bounded(v, 40)
        return b.emit("log_softmax", [v], f"F.log_softmax({{0}}, dim={d})", (-2 * v.mag - 10, 0.0))
    if form in ("layer_norm", "rms_norm"):
        k = b.randint(1, min(2, v.ndim))
        ns = v.shape[-k:]
        if math.prod(ns) < 2:
            raise Reject("normalising one element")
        ins, args = [v], []
        if b.rand() < 0.7:
            ins.append(b.operand(ns, 0.85))
            args.append("{1}")
            if form == "layer_norm" and b.rand() < 0.7:
                ins.append(b.operand(ns, 0.85))
                args.append("{2}")
        v2 = b.emit("add", [v, b.operand(v.shape, 0.2)], "{0} + {1}", (v.lo - 3, v.hi + 3))  # spread
        ins[0] = v2
        extra = "".join(", " + a for a in args)
        mag = math.sqrt(math.prod(ns)) * max([1.0] + [u.mag for u in ins[1:]]) * 2 + 3
        if form == "layer_norm":
            return b.emit("layer_norm", ins, f"F.layer_norm({{0}}, {tuple(ns)!r}{extra})", (-mag, mag))
        return b.emit("rms_norm", ins, f"F.rms_norm({{0}}, {tuple(ns)!r}{extra}, eps=1e-5)", (-mag, mag))
    if form == "normalize":
        v = b.emit("add", [v, b.operand(v.shape, 0.2)], "{0} + {1}", (v.lo - 3, v.hi + 3))
        return b.emit("normalize", [v], f"F.normalize({{0}}, dim={d})", (-1.0, 1.0))
    if v.ndim < 2 or v.shape[1] < 1:
        raise Reject("norm over channels needs 2-d")
    c = v.shape[1]
    if form == "batch_norm":
        if v.numel // c < 2:
            raise Reject("batch_norm needs more than one value per channel")
        v = b.emit("add", [v, b.operand(v.shape, 0.2)], "{0} + {1}", (v.lo - 3, v.hi + 3))
        w, bb = b.operand((c,), 0.9), b.operand((c,), 0.9)
        mag = _clip(3 * math.sqrt(v.numel) * 3 + 3)
        if b.rand() < 0.5:  # running statistics, updated in place (written back by a compiled step)
            rm, rv = b.const((c,)), b.const((c,))
            return b.emit("batch_norm", [v, w, bb, rm, rv],
                          "F.batch_norm({0}, {3}, {4}, {1}, {2}, training=True, momentum=0.3)", (-mag, mag))
        return b.emit("batch_norm", [v, w, bb], "F.batch_norm({0}, None, None, {1}, {2}, training=True)", (-mag, mag))
    groups = b.choice([g for g in range(1, c + 1) if c % g == 0])
    if v.numel // (v.shape[0] * groups) < 2:
        raise Reject("group of one element")
    v = b.emit("add", [v, b.operand(v.shape, 0.2)], "{0} + {1}", (v.lo - 3, v.hi + 3))
    w, bb = b.operand((c,), 0.9), b.operand((c,), 0.9)
    return b.emit("group_norm", [v, w, bb], f"F.group_norm({{0}}, {groups}, {{1}}, {{2}})",
                  (-_clip(3 * math.sqrt(v.numel) * 3 + 3), _clip(3 * math.sqrt(v.numel) * 3 + 3)))


def _pool_window_in_padding(n, k, s, pad, dil, ceil):
    """Whether some output window of a pooling along an axis of size n
    covers no input element (PyTorch's output-size rule, ceil_mode included)."""
    span = n + 2 * pad - dil * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= n + pad:
        out -= 1
    return any(all(not 0 <= i * s - pad + j * dil < n for j in range(k)) for i in range(out))


def op_conv(b: Builder):
    """conv2d / conv1d / pooling over a value reshaped to (N, C, H, W)."""
    v = b.pick(lambda u: u.ndim == 4) if b.rand() < 0.7 else None
    if v is None:
        v = b.pick(lambda u: u.numel >= 4)
        if v is None:
            raise Reject("nothing to convolve")
        n = v.numel
        hw = [d for d in range(2, int(math.isqrt(n)) + 1) if n % (d * d) == 0]
        if not hw:
            raise Reject("no square plane")
        h = b.choice(hw)
        v = b.emit("reshape", [v], f"{{0}}.reshape(-1, 1, {h}, {h})" if b.rand() < 0.5 else
                   f"{{0}}.reshape(1, -1, {h}, {h})", (v.lo, v.hi))
    nb, c, h, w = v.shape
    form = b.choice(["conv2d", "max_pool2d", "avg_pool2d", "conv1d", "adaptive_avg_pool2d", "max_pool1d",
                     "avg_pool1d", "pad"], p=[4, 3, 1.5, 1.5, 1, 0.5, 0.5, 1])
    if form == "conv2d":
        groups = b.choice([g for g in (1, 2, 3) if c % g == 0])
        oc = groups * b.randint(1, 3)
        kh, kw = b.randint(1, min(3, h + 2)), b.randint(1, min(3, w + 2))
        stride, pad, dil = b.randint(1, 2), b.randint(0, 1), b.choice([1, 1, 2])
        wt = b.param((oc, c // groups, kh, kw))
        ins = [v, wt]
        bias = ""
        if b.rand() < 0.6:
            ins.append(b.param((oc,)))
            bias = ", {2}"
        mag = _clip(v.mag * 3 * c * kh * kw + 3)
        return b.emit("conv2d", ins, f"F.conv2d({{0}}, {{1}}{bias}, stride={stride}, padding={pad}, dilation={dil}, "
                      f"groups={groups})", (-mag, mag))
    if form == "conv1d":
        x3 = b.emit("flatten", [v], "L.flatten({0}, 2)", (v.lo, v.hi))
        k = b.randint(1, 3)
        wt = b.param((b.randint(1, 4), c, k))
        mag = _clip(v.mag * 3 * c * k)
        return b.emit("conv1d", [x3, wt], f"F.conv1d({{0}}, {{1}}, stride={b.randint(1, 2)}, padding={b.randint(0, 1)})",
                      (-mag, mag))
    if form == "max_pool2d":
        k = b.randint(1, 3)
        s = b.choice([None, 1, 2])
        pad = b.randint(0, k // 2)
        dil = b.choice([1, 1, 2])
        ceil = b.rand() < 0.25
        if any(_pool_window_in_padding(n, k, s or k, pad, dil, ceil) for n in (h, w)):
            # PyTorch's CPU kernel then points the window's argmax outside its input, and its
            # backward writes there: heap corruption (graph soak seed 1605872, torch alone)
            raise Reject("a max_pool2d window that lies entirely in the padding")
        return b.emit("max_pool2d", [v], f"F.max_pool2d({{0}}, {k}, {s}, {pad}, dilation={dil}, ceil_mode={ceil})",
                      (v.lo, v.hi))
    if form == "avg_pool2d":
        k = b.randint(1, 3)
        return b.emit("avg_pool2d", [v], f"F.avg_pool2d({{0}}, {k}, {b.choice([None, 1, 2])}, {b.randint(0, k // 2)}, "
                      f"count_include_pad={b.rand() < 0.5})", (min(v.lo, 0.0), max(v.hi, 0.0)))
    if form == "adaptive_avg_pool2d":
        return b.emit("adaptive_avg_pool2d", [v], f"F.adaptive_avg_pool2d({{0}}, ({b.randint(1, h)}, {b.randint(1, w)}))",
                      (v.lo, v.hi))
    if form in ("max_pool1d", "avg_pool1d"):
        x3 = b.emit("flatten", [v], "L.flatten({0}, 2)", (v.lo, v.hi))
        k = b.randint(1, 3)
        return b.emit(form, [x3], f"F.{form}({{0}}, {k})", (min(v.lo, 0.0), max(v.hi, 0.0)))
    mode = b.choice(["constant", "reflect", "replicate"])
    p = [b.randint(0, 1) for _ in range(4)]
    if mode == "reflect" and (max(p[:2]) >= w or max(p[2:]) >= h):
        mode = "constant"
    return b.emit("pad", [v], f"F.pad({{0}}, {tuple(p)!r}, mode='{mode}')", (min(v.lo, 0.0), max(v.hi, 0.0)))


def op_index(b: Builder):
    form = b.choice(["embedding", "gather", "index_select", "adv_index", "scatter_add", "index_add", "one_hot",
                     "embedding_value"], p=[3, 2, 2, 1.5, 1, 1, 0.5, 1])
    if form == "embedding":
        n, dim = b.randint(2, 10), b.dim_size()
        wt = b.param((n, dim), frozen=b.rand() < 0.05)
        idx = b.index(tuple(b.dim_size() for _ in range(b.randint(1, 2))), bound=n)
        pad = f", padding_idx={b.randint(0, n - 1)}" if b.rand() < 0.2 else ""
        return b.emit("embedding", [idx, wt], f"F.embedding({{0}}, {{1}}{pad})", (-3.0, 3.0))
    v = b.pick(lambda u: u.ndim >= 1 and u.numel >= 1)
    if v is None:
        raise Reject("no tensor")
    d = b.randint(0, v.ndim - 1)
    size = v.shape[d]
    if form == "embedding_value":
        if v.ndim != 2:
            raise Reject("embedding table must be 2-d")
        idx = b.index((b.dim_size(),), bound_ref=(v.name, 0))
        return b.emit("embedding", [idx, v], "F.embedding({0}, {1})", (v.lo, v.hi))
    if form == "gather":
        shape = tuple(b.randint(1, s) if i != d else b.randint(1, 5) for i, s in enumerate(v.shape))
        idx = b.index(shape, bound_ref=(v.name, d))
        return b.emit("gather", [v, idx], b.choice([f"L.gather({{0}}, {d}, {{1}})", f"{{0}}.gather({d}, {{1}})"]),
                      (v.lo, v.hi))
    if form == "index_select":
        idx = b.index((b.randint(1, 6),), bound_ref=(v.name, d))
        return b.emit("index_select", [v, idx], f"L.index_select({{0}}, {d}, {{1}})", (v.lo, v.hi))
    if form == "adv_index":
        idx = b.index((b.randint(1, 6),), bound_ref=(v.name, 0))
        return b.emit("adv_index", [v, idx], "{0}[{1}]", (v.lo, v.hi))
    if form == "one_hot":
        idx = b.index((b.dim_size(),), bound=max(2, size))
        oh = b.emit("one_hot", [idx], f"F.one_hot({{0}}, {max(2, size)})", (0.0, 1.0))
        w = b.operand((max(2, size), b.dim_size()), 0.8)
        return b.emit("one_hot_mm", [oh, w], "{0}.to({1}.dtype) @ {1}", (-w.mag, w.mag))
    # scatter_add / index_add into v along d with a source value
    if form == "scatter_add":
        shape = tuple(b.randint(1, s) if i != d else b.randint(1, 5) for i, s in enumerate(v.shape))
        idx = b.index(shape, bound_ref=(v.name, d))
        src = b.operand(shape)
        return b.emit("scatter_add", [v, idx, src], f"L.scatter_add({{0}}, {d}, {{1}}, {{2}})",
                      (v.lo - 15, v.hi + 15))
    n = b.randint(1, 5)
    idx = b.index((n,), bound_ref=(v.name, d))
    sshape = tuple(n if i == d else s for i, s in enumerate(v.shape))
    src = b.operand(sshape)
    return b.emit("index_add", [v, idx, src], f"L.index_add({{0}}, {d}, {{1}}, {{2}})", (v.lo - 15, v.hi + 15))


def op_dropout(b: Builder):
    v = b.pick()
    p = b.choice([0.1, 0.25, 0.5, 0.75])
    return b.emit("dropout", [v], f"drop({{0}}, {p})", (min(v.lo, 0.0) / (1 - p), max(v.hi, 0.0) / (1 - p)))


def op_cast(b: Builder):
    v = b.pick()
    other = "float64" if v.dtype == "float32" else "float32"
    return b.emit("cast", [v], b.choice([f"{{0}}.to(L.{other})", "{0}.double()" if other == "float64" else
                                         "{0}.float()"]), (v.lo, v.hi))


def op_attention(b: Builder):
    """softmax(q k^T / sqrt(d)) v with q, k, v from one value (several paths)."""
    v = b.pick(lambda u: u.ndim in (2, 3))
    if v is None:
        raise Reject("no sequence")
    d = v.shape[-1]
    h = b.dim_size()
    wq, wk, wv = (b.param((h, d)) for _ in range(3))
    mag = _clip(v.mag * 3 * d)
    q = b.emit("linear", [v, wq], "F.linear({0}, {1})", (-mag, mag))
    k = b.emit("linear", [v, wk], "F.linear({0}, {1})", (-mag, mag))
    vv = b.emit("linear", [v, wv], "F.linear({0}, {1})", (-mag, mag))
    s = b.emit("scores", [q, k], f"({{0}} @ {{1}}.transpose(-1, -2)) * {1 / math.sqrt(h)!r}", (-BIG, BIG))
    if b.rand() < 0.5:
        t = s.shape[-1]
        m = b.mask((t, t))
        s = b.emit("masked_fill", [s, m], "{0}.masked_fill({1}, -1e9)", (-1e9, BIG))
    a = b.emit("softmax", [s], "L.softmax({0}, -1)", (0.0, 1.0))
    return b.emit("matmul", [a, vv], "{0} @ {1}", (-mag, mag))


OPS = {
    "unary": (op_unary, 6),
    "scalar": (op_scalar, 3),
    "binary": (op_binary, 6),
    "mask": (op_mask, 1.5),
    "reduce": (op_reduce, 4),
    "matmul": (op_matmul, 4),
    "shape": (op_shape, 5),
    "join": (op_join, 3),
    "norm": (op_norm, 3),
    "conv": (op_conv, 1.5),
    "index": (op_index, 2.5),
    "dropout": (op_dropout, 1),
    "cast": (op_cast, 0.5),
    "attention": (op_attention, 0.7),
}


# ================================================================= programs
def _x_shape(b_rng, big):
    def dim():
        if big and b_rng.random() < 0.3:
            return int(b_rng.choice([17, 33, 64, 100, 129]))
        return int(b_rng.choice([1, 2, 3, 4, 5, 6, 8]))
    nd = int(b_rng.choice([0, 1, 2, 3, 4], p=[0.03, 0.12, 0.45, 0.25, 0.15]))
    return tuple(dim() for _ in range(nd))


def _head(b: Builder, loss):
    """Adds the loss-facing tail: folds a few unused values into the output."""
    out = b.values[-1] if b.values[-1].is_float else b.pick()
    dangling = [v for v in b.values if v.is_float and v.uses == 0 and v is not out and v.grad]
    b.r.shuffle(dangling)
    for v in dangling[:b.randint(0, 3)]:
        red = b.emit("sum" if b.rand() < 0.5 else "mean", [v], b.choice(["{0}.sum()", "{0}.mean()", "L.amax({0})"]),
                     (-BIG, BIG))
        red = b.bounded(red, 10) if red.mag > 1e6 else red
        out = b.emit("add", [out, red], "{0} + {1}", (out.lo - red.mag, out.hi + red.mag))
    if out.mag > 1e4:
        out = b.bounded(out, 50)
    if out.dtype != b.dtype:
        out = b.emit("cast", [out], f"{{0}}.to(L.{b.dtype})", (out.lo, out.hi))
    return out


def _losses_for(shape, rng):
    names = [n for n, k in LOSSES.items() if k.accepts(shape)]
    return names


def gen_graph(seed: int, dtype=None, n_ops=None) -> Program:
    r = np.random.default_rng(seed)
    dtype = dtype or ("float32" if r.random() < 0.5 else "float64")
    big = r.random() < 0.12
    for _attempt in range(50):
        b = Builder(r, dtype, _x_shape(r, big), big)
        target = n_ops or int(r.integers(2, 16 if r.random() < 0.8 else 30))
        # a few parameters the loss never reaches, sometimes
        for _ in range(int(r.random() < 0.15)):
            b.param(tuple(b.dim_size() for _ in range(int(r.integers(0, 3)))))
        tries = 0
        while len(b.nodes) < target and tries < target * 20:
            tries += 1
            names = list(OPS)
            w = np.array([OPS[n][1] for n in names])
            fn = OPS[names[int(r.choice(len(names), p=w / w.sum()))]][0]
            n_nodes, n_leaves, n_vals = len(b.nodes), len(b.leaves), len(b.values)
            try:
                fn(b)
            except Reject:
                del b.nodes[n_nodes:]
                for lf in b.leaves[n_leaves:]:
                    b.meta.pop(lf.name, None)
                del b.leaves[n_leaves:]
                del b.values[n_vals:]
        if not b.nodes:
            continue
        try:
            out = _head(b, None)
        except Reject:
            continue
        if not any(v.grad for v in [out]):
            # nothing trainable reaches the output: mix one parameter in
            try:
                p = b.param(b.broadcast_partner_shape(out.shape), frozen=False)
                out = b.emit("add", [out, p], "{0} + {1}", (out.lo - 3, out.hi + 3))
            except Reject:
                continue
        losses = _losses_for(out.shape, r)
        if not losses:
            continue
        loss = str(r.choice(losses))
        attrs = {"beta": float(r.choice([0.5, 1.0])), "delta": float(r.choice([0.5, 1.0, 2.0])),
                 "smoothing": float(r.choice([0.0, 0.0, 0.1])),
                 "ignore_index": int(r.choice([-100, 0]))}
        attrs = {k: v for k, v in attrs.items() if "{" + k + "}" in LOSSES[loss].expr}
        prog = Program(seed=seed, dtype=dtype, x_shape=b.x.shape, leaves=b.leaves, nodes=b.nodes, out=out.name,
                       loss=loss, loss_attrs=attrs)
        prog = prog.dead_code_eliminated()
        prog.train = gen_train(r, prog)
        return prog
    raise RuntimeError(f"seed {seed}: no program generated")


# ================================================================ training
OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "SparseAdam", "Rprop",
              "ASGD", "RAdam", "LBFGS"]


def opt_kwargs(r, name):
    """Random constructor keywords of `name` (flags included)."""
    c = lambda *xs: xs[int(r.integers(len(xs)))]  # noqa: E731
    maximize = bool(r.random() < 0.2)
    if name == "SGD":
        mom = c(0.0, 0.0, 0.9, 0.5)
        nest = bool(mom > 0 and r.random() < 0.4)
        kw = dict(lr=c(0.1, 0.01, 0.05), momentum=mom, dampening=0.0 if nest else c(0.0, 0.1),
                  weight_decay=c(0.0, 0.0, 1e-2), nesterov=nest, maximize=maximize, foreach=c(None, True, False))
        if r.random() < 0.2:
            kw["fused"], kw["foreach"] = True, None
        return kw
    if name in ("Adam", "AdamW"):
        kw = dict(lr=c(1e-3, 1e-2, 0.05), betas=c((0.9, 0.999), (0.8, 0.99), (0.5, 0.9)), eps=c(1e-8, 1e-6),
                  weight_decay=c(0.0, 1e-2, 0.1), amsgrad=bool(r.random() < 0.3), maximize=maximize,
                  foreach=c(None, True, False))
        if r.random() < 0.2:
            kw["fused"], kw["foreach"] = True, None
        if name == "Adam" and r.random() < 0.2:
            kw["decoupled_weight_decay"] = True
        return kw
    if name == "RMSprop":
        return dict(lr=c(1e-2, 1e-3), alpha=c(0.99, 0.9), eps=c(1e-8, 1e-6), weight_decay=c(0.0, 1e-2),
                    momentum=c(0.0, 0.0, 0.9), centered=bool(r.random() < 0.4), maximize=maximize,
                    foreach=c(None, True, False))
    if name == "Adagrad":
        kw = dict(lr=c(1e-2, 0.1), lr_decay=c(0.0, 0.01), weight_decay=c(0.0, 1e-2),
                  initial_accumulator_value=c(0.0, 0.1), eps=c(1e-10, 1e-6), maximize=maximize,
                  foreach=c(None, True, False))
        if r.random() < 0.2:
            kw["fused"], kw["foreach"] = True, None
        return kw
    if name == "Adadelta":
        return dict(lr=c(1.0, 0.5), rho=c(0.9, 0.95), eps=c(1e-6, 1e-4), weight_decay=c(0.0, 1e-2),
                    maximize=maximize, foreach=c(None, True, False))
    if name == "Adamax":
        return dict(lr=c(2e-3, 1e-2), betas=c((0.9, 0.999), (0.8, 0.99)), eps=c(1e-8, 1e-6),
                    weight_decay=c(0.0, 1e-2), maximize=maximize, foreach=c(None, True, False))
    if name == "NAdam":
        return dict(lr=c(2e-3, 1e-2), betas=c((0.9, 0.999), (0.8, 0.99)), eps=c(1e-8, 1e-6),
                    weight_decay=c(0.0, 1e-2), momentum_decay=c(4e-3, 1e-2),
                    decoupled_weight_decay=bool(r.random() < 0.3), maximize=maximize, foreach=c(None, True, False))
    if name == "SparseAdam":
        return dict(lr=c(1e-3, 1e-2), betas=c((0.9, 0.999), (0.8, 0.99)), eps=c(1e-8, 1e-6), maximize=maximize)
    if name == "Rprop":
        return dict(lr=c(1e-2, 1e-3), etas=c((0.5, 1.2), (0.3, 1.5)), step_sizes=c((1e-6, 50), (1e-4, 1.0)),
                    maximize=maximize, foreach=c(None, True, False))
    if name == "ASGD":
        return dict(lr=c(1e-2, 0.05), lambd=c(1e-4, 1e-2), alpha=c(0.75, 0.5), t0=c(1e6, 1.0, 2.0),
                    weight_decay=c(0.0, 1e-2), maximize=maximize, foreach=c(None, True, False))
    if name == "RAdam":
        return dict(lr=c(1e-3, 1e-2), betas=c((0.9, 0.999), (0.8, 0.99)), eps=c(1e-8, 1e-6),
                    weight_decay=c(0.0, 1e-2), decoupled_weight_decay=bool(r.random() < 0.3), maximize=maximize,
                    foreach=c(None, True, False))
    if name == "LBFGS":
        return dict(lr=c(1.0, 0.5, 0.1), tolerance_grad=c(1e-7, 1e-5))
    raise ValueError(name)


# hyper-parameters that may be edited between steps, with new values
EDITABLE = {
    "lr": lambda r: float(r.choice([1e-3, 5e-3, 0.02, 0.1])),
    "weight_decay": lambda r: float(r.choice([0.0, 1e-3, 0.05])),
    "eps": lambda r: float(r.choice([1e-8, 1e-5])),
    "betas": lambda r: [(0.9, 0.999), (0.7, 0.95)][int(r.integers(2))],
    "momentum": lambda r: float(r.choice([0.5, 0.9])),
    "dampening": lambda r: float(r.choice([0.0, 0.2])),
    "alpha": lambda r: float(r.choice([0.9, 0.99])),
    "rho": lambda r: float(r.choice([0.8, 0.9])),
    "lr_decay": lambda r: float(r.choice([0.0, 0.05])),
    "lambd": lambda r: float(r.choice([1e-4, 1e-3])),
    "t0": lambda r: float(r.choice([1.0, 1e6])),
    "etas": lambda r: [(0.5, 1.2), (0.4, 1.3)][int(r.integers(2))],
    "step_sizes": lambda r: [(1e-6, 50), (1e-3, 0.5)][int(r.integers(2))],
    "momentum_decay": lambda r: float(r.choice([4e-3, 2e-2])),
    "maximize": lambda r: bool(r.random() < 0.5),
}

SCHEDULERS = [
    ("StepLR", {"step_size": 1, "gamma": 0.5}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 3}),
    ("MultiStepLR", {"milestones": [1, 2], "gamma": 0.3}),
    ("LinearLR", {"start_factor": 0.5, "total_iters": 2}),
    ("OneCycleLR", {"max_lr": 0.05, "total_steps": 10}),
    ("CyclicLR", {"base_lr": 0.001, "max_lr": 0.01, "step_size_up": 2}),
]


def gen_train(r, prog: Program) -> Train:
    name = OPTIMIZERS[int(r.integers(len(OPTIMIZERS)))]
    kw = opt_kwargs(r, name)
    t = Train(steps=int(r.integers(2, 5)), micro=int(r.choice([1, 1, 2, 3])), optimizer=name, opt_kwargs=kw)
    # the second group overrides a few numbers
    if name != "LBFGS":
        for key in ("lr", "weight_decay", "momentum", "eps", "betas"):
            if key in kw and r.random() < 0.4 and not (key == "momentum" and kw.get("nesterov")):
                t.group1[key] = EDITABLE[key](r)
                if key == "momentum" and kw.get("dampening", 0) == 0 and False:
                    pass
        if r.random() < 0.3 and name not in ("SparseAdam",):
            t.group1["maximize"] = not kw.get("maximize", False)
    # edits between steps
    for s in range(1, t.steps):
        edits = []
        for _ in range(int(r.choice([0, 0, 1, 2]))):
            k = r.random()
            if k < 0.5 and name != "LBFGS":
                key = str(r.choice([k for k in EDITABLE if k in kw or k == "lr"]))
                if key == "momentum" and kw.get("nesterov"):
                    continue
                if key == "dampening" and kw.get("nesterov"):
                    continue
                edits.append(Edit("hyper", int(r.integers(2)), key, EDITABLE[key](r)))
            elif k < 0.7:
                edits.append(Edit("scale_lr", value=float(r.choice([0.5, 2.0, 0.1]))))
            elif k < 0.9:
                params = [lf.name for lf in prog.params()]
                if params:
                    edits.append(Edit("param_data", key=str(r.choice(params)), value=float(r.choice([0.5, -1.0, 1.5]))))
            else:
                params = [lf.name for lf in prog.params()]
                if params:
                    edits.append(Edit("param_rebind", key=str(r.choice(params)), value=float(r.choice([0.5, 2.0]))))
        if edits:
            t.edits[s] = edits
    if r.random() < 0.3 and name not in ("LBFGS",):
        sname, skw = SCHEDULERS[int(r.integers(len(SCHEDULERS)))]
        t.scheduler = (sname, dict(skw))
        if name == "SparseAdam" and sname == "CosineAnnealingLR":
            # SparseAdam's lr must stay > 0: Lucid validates every step with the
            # constructor's rules (PyTorch checks only at construction)
            t.scheduler[1]["eta_min"] = 1e-4
    if r.random() < 0.3 and name != "LBFGS":
        c = lambda *xs: xs[int(r.integers(len(xs)))]  # noqa: E731
        t.scaler = dict(init_scale=c(2.0 ** 16, 2.0 ** 127, 1000.0, 3.0), growth_factor=c(2.0, 1.5),
                        backoff_factor=c(0.5, 2.0 ** -100), growth_interval=c(1, 2, 2000))
        if r.random() < 0.3:
            t.poison = (int(r.integers(t.steps)),)
    t.zero_modes = [bool(r.random() < 0.5) for _ in range(t.steps)]
    t.step = gen_step_spec(prog)
    return t


NORM_TYPES = [2.0, 1.0, float("inf"), 3.0, 0.5]


def gen_step_spec(prog: Program) -> StepSpec:
    """The train_step oracle's step function, from its own stream of the
    seed (the rest of the program draws as it always did)."""
    r = prog.rng("train_step")
    c = lambda *xs: xs[int(r.integers(len(xs)))]  # noqa: E731
    spec = StepSpec(clip=c(None, "norm", "norm", "value"), max_norm=float(c(1e-3, 0.05, 1.0, 100.0)),
                    norm_type=float(c(*NORM_TYPES)))
    inputs = ["x"] + (["y"] if LOSSES[prog.loss].target is not None else [])
    spec.inputs = tuple(inputs)
    if r.random() < 0.2:
        spec.api = "fused_step"
        return spec
    if r.random() < 0.4:
        inputs.append("w")
        spec.w_shape = c((), (1,))
    if r.random() < 0.3:
        inputs.append("shift")
    if r.random() < 0.5:
        inputs = [inputs[i] for i in r.permutation(len(inputs))]
    spec.inputs = tuple(inputs)
    values = [o for nd in prog.nodes if not nd.stmt for o in nd.outs]
    n = int(c(0, 1, 1, 2, 3))
    if n:
        spec.extras = tuple(str(v) for v in r.choice(["out"] + values, size=n))
        spec.as_list = bool(r.random() < 0.3)
    return spec


# ==================================================================== views
def _basic_key(b, shape):
    """A basic-indexing key (ints, slices with steps) as source text."""
    parts = []
    for d in shape:
        k = b.choice(["all", "int", "slice", "slice_step", "all"])
        if k == "int" and d > 0:
            parts.append(str(b.randint(-d, d - 1)))
        elif k == "slice" and d > 1:
            lo = b.randint(0, d - 1)
            parts.append(f"{lo}:{b.randint(lo + 1, d)}")
        elif k == "slice_step" and d > 2:
            parts.append(f"{b.randint(0, 1)}::{b.choice([2, 3])}")
        else:
            parts.append(":")
    while parts and parts[-1] == ":" and b.rand() < 0.7:
        parts.pop()
    return ", ".join(parts) if parts else "..."


def _view_expr(b, v):
    """Source text of a view of value v (``{0}`` stands for v)."""
    nd = v.ndim
    forms = ["key"]
    if nd >= 2:
        forms += ["transpose", "t_key"]
    if nd >= 1:
        forms += ["narrow", "select", "view"]
    form = b.choice(forms)
    if form == "key":
        return "{0}[" + _basic_key(b, v.shape) + "]"
    if form == "transpose":
        d0, d1 = b.r.choice(nd, 2, replace=False).tolist()
        return f"{{0}}.transpose({d0}, {d1})"
    if form == "t_key":
        return "{0}.transpose(0, 1)[" + _basic_key(b, (v.shape[1], v.shape[0]) + v.shape[2:]) + "]"
    d = b.randint(0, nd - 1)
    size = v.shape[d]
    if size == 0:
        raise Reject("empty dim")
    if form == "narrow":
        st = b.randint(0, size - 1)
        return f"{{0}}.narrow({d}, {st}, {b.randint(1, size - st)})"
    if form == "select":
        return f"{{0}}.select({d}, {b.randint(-size, size - 1)})"
    return "{0}.view(-1)"


def op_view_write(b: Builder):
    """An in-place write into a fresh tensor (or through a view of it)."""
    src = b.pick()
    t = b.emit("clone", [src], b.choice(["{0}.clone()", "{0} * 1.0", "{0} + 0.0"]), (src.lo, src.hi))
    form = b.choice(["setitem", "inplace_view", "setitem_index", "setitem_mask", "data_write", "base_then_view",
                     "augmented"])
    if form == "setitem":
        key = _basic_key(b, t.shape)
        sub = tuple(b.meta[t.name][eval(f"np.s_[{key}]", {"np": np})].shape)  # noqa: S307
        c = b.partner(t) if b.rand() < 0.3 else b.operand(b.broadcast_partner_shape(sub) if sub else ())
        return b.emit_stmt("setitem", [t, c], "{0}[" + key + "] = {1}")
    if form == "augmented":
        key = _basic_key(b, t.shape)
        sub = tuple(b.meta[t.name][eval(f"np.s_[{key}]", {"np": np})].shape)  # noqa: S307
        c = b.operand(b.broadcast_partner_shape(sub) if sub else ())
        opx = b.choice(["+=", "*=", "-="])
        return b.emit_stmt("augmented", [t, c], "{0}[" + key + f"] {opx} {{1}}")
    if form == "inplace_view":
        view = _view_expr(b, t)
        op = b.choice(["mul_(2.0)", "add_(0.5)", "zero_()", "fill_(0.25)", "clamp_(-0.5, 0.5)", "neg_()",
                       "add_({1})", "mul_({1})", "copy_({1})"])
        ins = [t]
        if "{1}" in op:
            try:
                sub = tuple(eval(view.format("b.meta[t.name]"), {"b": b, "t": t}).shape)  # noqa: S307
            except RuntimeError as e:  # PyTorch rejects the view (.view(-1) of a clone that kept its strides)
                raise Reject(str(e)) from None
            ins.append(b.operand(b.broadcast_partner_shape(sub) if sub else ()))
        return b.emit_stmt("inplace_view", ins, view + "." + op)
    if form == "setitem_index":
        if t.ndim == 0:
            raise Reject("0-d")
        idx = b.index((b.randint(1, 4),), bound_ref=(t.name, 0))
        sub = (idx.shape[0],) + t.shape[1:]
        c = b.operand(b.broadcast_partner_shape(sub))
        return b.emit_stmt("setitem_index", [t, idx, c], b.choice(["{0}[{1}] = {2}", "{0}[{1}] += {2}"]))
    if form == "setitem_mask":
        m = b.mask(t.shape)
        return b.emit_stmt("setitem_mask", [t, m], b.choice(["{0}[{1}] = 0.0", "{0}[{1}] = -1.5"]))
    if form == "data_write":
        key = _basic_key(b, t.shape)
        return b.emit_stmt("data_write", [t], "{0}.data[" + key + "] = 0.75")
    # read a view, then write the base: the view sees the write
    view = _view_expr(b, t)
    v = b.emit("view", [t], view, (min(t.lo, -0.5, 0.0), max(t.hi, 0.5)))
    b.emit_stmt("inplace_base", [t], b.choice(["{0}.mul_(2.0)", "{0}.add_(1.0)", "{0}.zero_()"]))
    t.lo, t.hi = 2 * min(t.lo, 0.0) - 1, 2 * max(t.hi, 0.0) + 1
    v.lo, v.hi = t.lo, t.hi
    return v


def gen_views(seed: int, dtype=None) -> Program:
    """A graph program with in-place writes into views interleaved."""
    r = np.random.default_rng(seed)
    dtype = dtype or ("float32" if r.random() < 0.5 else "float64")
    for _attempt in range(50):
        b = Builder(r, dtype, _x_shape(r, False) or (3,), False)
        n_views, n_ops = int(r.integers(1, 5)), int(r.integers(2, 10))
        tries = 0
        while len(b.nodes) < n_ops + n_views and tries < 200:
            tries += 1
            n_nodes, n_leaves, n_vals = len(b.nodes), len(b.leaves), len(b.values)
            fn = op_view_write if r.random() < n_views / (n_ops + n_views) else \
                OPS[str(r.choice(["unary", "binary", "matmul", "shape", "reduce", "scalar"]))][0]
            try:
                fn(b)
            except Reject:
                del b.nodes[n_nodes:]
                del b.leaves[n_leaves:]
                del b.values[n_vals:]
        if not any(nd.stmt for nd in b.nodes):
            continue
        try:
            out = _head(b, None)
        except Reject:
            continue
        losses = [n for n in _losses_for(out.shape, r) if n in ("mse", "mean", "sum_sq", "l1")]
        if not losses:
            continue
        prog = Program(seed=seed, dtype=dtype, x_shape=b.x.shape, leaves=b.leaves, nodes=b.nodes, out=out.name,
                       loss=str(r.choice(losses)), family="views")
        prog = prog.dead_code_eliminated()
        prog.train = Train(steps=2, micro=1, optimizer="SGD", opt_kwargs={"lr": 0.05},
                           zero_modes=[bool(r.random() < 0.5), bool(r.random() < 0.5)])
        return prog
    raise RuntimeError(f"seed {seed}: no program generated")


FAMILIES = {"graph": gen_graph, "views": gen_views}


def generate(seed, family="graph", **kw):
    return FAMILIES[family](seed, **kw)
