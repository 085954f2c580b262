"""A random program: leaves (input, parameters, constants), a DAG of nodes in
SSA form, a loss, and a training recipe; rendered to Python source that runs
with Lucid or PyTorch alike.

The forward is plain source text: ``v3 = L.tanh(v1)`` with ``L`` bound to
``lucid`` or ``torch`` and ``F`` to the matching ``nn.functional``. Running
and printing a program therefore use one text, so a printed reproduction is
exactly what was checked.
"""
from __future__ import annotations

import copy
import zlib
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Leaf:
    """A tensor the forward reads: ``param`` (trained), ``frozen`` (a
    Parameter with requires_grad=False), ``const`` (a float buffer),
    ``index`` (int64 in [0, bound)) or ``mask`` (bool)."""
    name: str
    kind: str
    shape: tuple
    group: int = 0                       # optimizer param group (params only)
    bound_ref: tuple | None = None       # index leaves: (value name, dim) whose size bounds the values
    bound: int | None = None             # index leaves: a fixed bound (when no value gives it)


@dataclass
class Node:
    """``outs = tmpl.format(*ins)``; a tuple-valued op names all its outputs.
    A statement (``stmt``, the views family) is ``tmpl.format(*ins)`` alone:
    an in-place write into ``ins[0]`` (or a view of it)."""
    op: str
    outs: list
    ins: list
    tmpl: str
    multi: bool = False
    stmt: bool = False

    def line(self):
        rhs = self.tmpl.format(*self.ins)
        if self.stmt:
            return rhs
        if self.multi:
            lhs = ", ".join(self.outs) + ("," if len(self.outs) == 1 else "")
        else:
            lhs = self.outs[0]
        return f"{lhs} = {rhs}"


@dataclass
class Edit:
    """A change between steps, applied to the eager and compiled runs alike.

    kind: ``hyper`` (param_groups[group][key] = value), ``scale_lr`` (every
    group's lr times value), ``scheduler`` (one scheduler.step()),
    ``param_data`` (an in-place edit of a parameter's values through
    ``.data``), ``param_rebind`` (``p.data = new tensor``)."""
    kind: str
    group: int = 0
    key: str = ""
    value: object = None


@dataclass
class StepSpec:
    """How the ``train_step`` oracle wraps the program in a step function.

    ``api``: ``train_step`` (``fn(*inputs)`` computes its own loss) or
    ``fused_step`` (``loss_fn(model(x), *targets)``; plain inputs, no
    extras). ``inputs``: the order of the function's arguments among ``x``,
    ``y`` (the loss's target, when it has one), ``w`` (a weight the loss is
    multiplied by, shape ``w_shape``) and ``shift`` (added to the output
    before the loss). ``extras``: values the function returns after the loss
    (``out`` or a node's output), as a list when ``as_list``. ``clip``:
    None, ``norm`` (``max_norm``, ``norm_type``) or ``value`` (``max_norm``
    is the clip value). The step accumulates ``Train.micro`` micro-batches."""
    api: str = "train_step"
    inputs: tuple = ("x", "y")
    w_shape: tuple = ()
    extras: tuple = ()
    as_list: bool = False
    clip: str | None = None
    max_norm: float = 1.0
    norm_type: float = 2.0


@dataclass
class Train:
    """How the program is trained. ``micro`` micro-batches accumulate per
    step; ``zero_modes[s]`` is the set_to_none flag of step s's zero_grad."""
    steps: int = 2
    micro: int = 1
    optimizer: str = "SGD"
    opt_kwargs: dict = field(default_factory=dict)          # constructor keywords (group 0 defaults)
    group1: dict = field(default_factory=dict)              # overrides of the second param group
    scheduler: tuple | None = None                          # (name, kwargs)
    edits: dict = field(default_factory=dict)               # step -> [Edit]
    scaler: dict | None = None                              # GradScaler keywords
    poison: tuple = ()                                      # steps whose input holds an inf
    zero_modes: list = field(default_factory=list)
    step: StepSpec | None = None                            # the train_step oracle's step function

    def zero_mode(self, step):
        return self.zero_modes[step % len(self.zero_modes)] if self.zero_modes else True


@dataclass
class Program:
    seed: int
    dtype: str                 # "float32" | "float64"
    x_shape: tuple
    leaves: list
    nodes: list
    out: str
    loss: str                  # a loss kind of LOSSES
    loss_attrs: dict = field(default_factory=dict)
    train: Train = field(default_factory=Train)
    family: str = "graph"
    values: dict = field(default_factory=dict)  # literal data overriding the seeded draws (name -> array)

    def clone(self):
        return copy.deepcopy(self)

    # ------------------------------------------------------------ structure
    def leaf(self, name):
        for lf in self.leaves:
            if lf.name == name:
                return lf
        return None

    def params(self):
        return [lf for lf in self.leaves if lf.kind in ("param", "frozen")]

    def forward_source(self, name="forward", indent="    ", extras=()):
        lines = [f"def {name}(self, x):"]
        reads = [lf.name for lf in self.leaves]
        if reads:
            lines.append(indent + ", ".join(reads) + ("," if len(reads) == 1 else "") + " = " +
                         ", ".join(f"self.{n}" for n in reads) + ("," if len(reads) == 1 else ""))
        for nd in self.nodes:
            lines.append(indent + nd.line())
        lines.append(indent + "return " + ", ".join((self.out,) + tuple(extras)))
        return "\n".join(lines)

    def loss_source(self, name="loss_fn"):
        kind = LOSSES[self.loss]
        args = "out" + ("" if kind.target is None else ", y")
        return f"def {name}({args}):\n    return {kind.expr.format(**self.loss_attrs)}"

    def step_source(self, name="step_fn", indent="    "):
        """The train_step oracle's step function over ``model`` and
        ``loss_fn`` (train.step; None without one). Its model returns the
        node values among the extras after its output."""
        spec = self.train.step
        if spec is None:
            return None
        kind = LOSSES[self.loss]
        if spec.api == "fused_step":
            return None
        lines = [f"def {name}({', '.join(spec.inputs)}):"]
        nodes = self.step_model_extras()
        lines.append(indent + ", ".join(["out", *nodes]) + " = model(x)" if nodes else indent + "out = model(x)")
        arg = "out + shift" if "shift" in spec.inputs else "out"
        loss = f"loss_fn({arg}{'' if kind.target is None else ', y'})" + (" * w" if "w" in spec.inputs else "")
        lines.append(indent + f"loss = {loss}")
        extras = self.step_extras()
        if extras:
            items = ", ".join(["loss", *extras])
            lines.append(indent + (f"return [{items}]" if spec.as_list else f"return ({items},)"))
        else:
            lines.append(indent + "return loss")
        return "\n".join(lines)

    def step_extras(self):
        """What the step function returns after the loss: ``out`` and the
        node values among train.step.extras that still exist (shrinking
        removes nodes)."""
        spec = self.train.step
        if spec is None or spec.api == "fused_step":
            return ()
        names = {o for nd in self.nodes if not nd.stmt for o in nd.outs}
        return tuple(e for e in spec.extras if e == "out" or e in names)

    def step_model_extras(self):
        """The node values the step function's model returns, once each."""
        return tuple(dict.fromkeys(e for e in self.step_extras() if e != "out"))

    def used_names(self):
        used = {self.out}
        for nd in self.nodes:
            used.update(nd.ins)
        return used

    def dead_code_eliminated(self):
        """Drops nodes whose outputs nothing reads, and constants nothing
        reads (parameters stay: a parameter the loss never reaches is part of
        the program)."""
        p = self.clone()
        live = {p.out}
        keep = []
        for nd in reversed(p.nodes):
            # an in-place statement may change views read later: it stays
            if nd.stmt or any(o in live for o in nd.outs):
                keep.append(nd)
                live.update(nd.ins)
        p.nodes = list(reversed(keep))
        p.leaves = [lf for lf in p.leaves if lf.kind in ("param", "frozen") or lf.name in live]
        return p

    # ------------------------------------------------------------------ data
    def rng(self, *key):
        return np.random.default_rng([self.seed] + [zlib.crc32(str(k).encode()) for k in key])

    def leaf_value(self, leaf, shapes):
        """The NumPy value of a leaf (float leaves in the program's dtype)."""
        if leaf.name in self.values:
            return np.array(self.values[leaf.name])
        r = self.rng("leaf", leaf.name)
        shape = tuple(leaf.shape)
        if leaf.kind == "index":
            bound = leaf.bound
            if leaf.bound_ref is not None and leaf.bound_ref[0] in shapes:
                v, d = leaf.bound_ref
                bound = shapes[v][d]
            return r.integers(0, max(1, bound), size=shape).astype(np.int64)
        if leaf.kind == "mask":
            return r.random(shape) < 0.5
        return np.clip(r.standard_normal(shape), -3, 3).astype(self.dtype)

    def batch(self, call, out_shape):
        """(x, targets) of one call, NumPy."""
        if ("x", call) in self.values:
            x = np.array(self.values[("x", call)])
        else:
            x = np.clip(self.rng("x", call).standard_normal(self.x_shape), -3, 3).astype(self.dtype)
            if call in self.poisoned_calls():
                x.flat[0] = np.inf
        kind = LOSSES[self.loss]
        if kind.target is None:
            return x, ()
        if ("y", call) in self.values:
            return x, (np.array(self.values[("y", call)]),)
        return x, (kind.target(self.rng("y", call), tuple(out_shape), self.dtype, self.loss_attrs),)

    def calls(self):
        return self.train.steps * self.train.micro

    def poisoned_calls(self):
        return {s * self.train.micro for s in self.train.poison}


# ------------------------------------------------------------------- losses
@dataclass
class LossKind:
    expr: str
    target: object          # (rng, out_shape, dtype, attrs) -> array, or None
    accepts: object         # out_shape -> bool


def _normal_target(r, shape, dtype, attrs):
    return np.clip(r.standard_normal(shape), -3, 3).astype(dtype)


def _unit_target(r, shape, dtype, attrs):
    return r.random(shape).astype(dtype)


def _probs_target(dim_of):
    def make(r, shape, dtype, attrs):
        dim = dim_of(shape)
        z = r.standard_normal(shape)
        e = np.exp(z - z.max(axis=dim, keepdims=True))
        return (e / e.sum(axis=dim, keepdims=True)).astype(dtype)
    return make


def _class_target(r, shape, dtype, attrs):
    # out (C,) -> 0-d target; out (N, C, d...) -> (N, d...)
    n_class = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
    t = r.integers(0, n_class, size=tshape).astype(np.int64)
    ignore = attrs.get("ignore_index")
    if ignore is not None and t.size > 1:
        t.flat[0] = ignore  # one ignored target
    return t


LOSSES = {
    "mse": LossKind("F.mse_loss(out, y)", _normal_target, lambda s: True),
    "mse_sum": LossKind("F.mse_loss(out, y, reduction='sum')", _normal_target, lambda s: True),
    "l1": LossKind("F.l1_loss(out, y)", _normal_target, lambda s: True),
    "smooth_l1": LossKind("F.smooth_l1_loss(out, y, beta={beta})", _normal_target, lambda s: True),
    "huber": LossKind("F.huber_loss(out, y, delta={delta})", _normal_target, lambda s: True),
    "mean": LossKind("out.mean()", None, lambda s: True),
    "sum_sq": LossKind("(out * out).sum()", None, lambda s: True),
    "cross_entropy": LossKind("F.cross_entropy(out, y, label_smoothing={smoothing})", _class_target,
                              lambda s: 1 <= len(s) and all(d > 0 for d in s)),
    "cross_entropy_ignore": LossKind("F.cross_entropy(out, y, ignore_index={ignore_index})", _class_target,
                                     lambda s: 2 <= len(s) and s[1] > 0 and s[0] > 0),
    "cross_entropy_probs": LossKind("F.cross_entropy(out, y)", _probs_target(lambda s: 1), lambda s: len(s) >= 2 and s[1] > 0),
    "nll": LossKind("F.nll_loss(F.log_softmax(out, 1), y)", _class_target, lambda s: 2 <= len(s) and s[1] > 0),
    "bce_logits": LossKind("F.binary_cross_entropy_with_logits(out, y)", _unit_target, lambda s: True),
    "bce": LossKind("F.binary_cross_entropy(L.sigmoid(out), y)", _unit_target, lambda s: True),
    "kl_div": LossKind("F.kl_div(F.log_softmax(out, -1), y, reduction='batchmean')", _probs_target(lambda s: len(s) - 1),
                       lambda s: len(s) >= 1),
}
