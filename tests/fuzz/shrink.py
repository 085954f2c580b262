"""Shrinking a failing program to a minimal one that fails the same way.

Greedy passes, repeated until none makes progress: fewer steps, calls and
edits; a simpler training recipe; nodes bypassed (their output replaced by
an input of the same shape) or cut (replaced by a fresh leaf); unused
leaves dropped; smaller shapes; the other loss kinds; short decimal values.
A candidate is kept when it is well-formed and the same oracle still reports
a mismatch of the same kind.
"""
from __future__ import annotations

import time

import numpy as np

from .oracles import check
from .program import LOSSES, Leaf
from .runtime import Instance, Invalid, shapes


def signature(mismatches):
    """What "failing the same way" means: the oracle and whether it is an
    error (and of which type) or a numeric difference."""
    m = mismatches[0]
    if m.what == "error":
        return (m.oracle, "error", m.detail.split(":")[0])
    # a finite mismatch must not drift into one with NaN/inf (a guard removed)
    nonfinite = any(k in m.detail for k in ("nan", "inf"))
    return (m.oracle, "numeric", m.what.split()[0].split("[")[0], nonfinite)


class Shrinker:
    def __init__(self, oracle, sig, budget_s=300.0, log=None):
        self.oracle = oracle
        self.sig = sig
        self.deadline = time.monotonic() + budget_s
        self.checks = 0
        self.log = log or (lambda *a: None)
        self.seen = {}

    def fails(self, prog):
        if time.monotonic() > self.deadline:
            return False
        key = _key(prog)
        if key not in self.seen:
            self.seen[key] = self._fails(prog)
        return self.seen[key]

    def _fails(self, prog):
        self.checks += 1
        try:
            shapes(prog)
            res = check(prog, [self.oracle])[self.oracle]
        except Invalid:
            return False
        except Exception:  # noqa: BLE001
            return False
        if isinstance(res, str) or not res.found:
            return False
        return signature(res.found) == self.sig

    def run(self, prog):
        best = prog
        progress = True
        while progress and time.monotonic() < self.deadline:
            progress = False
            for pass_ in (self._train_passes, self._graph_passes, self._leaf_passes, self._shape_passes,
                          self._loss_passes):
                for cand in pass_(best):
                    if cost(cand) < cost(best) and self.fails(cand):
                        best = cand
                        progress = True
                        self.log(f"  shrunk: {len(best.nodes)} nodes, {best.train.steps} steps")
                        break
                if progress:
                    break
        return self._values_pass(best)

    # ------------------------------------------------------------ training
    def _train_passes(self, p):
        t = p.train
        if t.steps > 1:
            for steps in (1, t.steps - 1):
                q = p.clone()
                q.train.steps = steps
                q.train.edits = {s: e for s, e in q.train.edits.items() if s < steps}
                q.train.poison = tuple(s for s in q.train.poison if s < steps)
                yield q
            q = p.clone()  # drop the first step (the later ones keep their data)
            yield from ()
        if t.micro > 1:
            for m in (1, t.micro - 1):
                q = p.clone()
                q.train.micro = m
                yield q
        for s in list(t.edits):
            for i in range(len(t.edits[s])):
                q = p.clone()
                del q.train.edits[s][i]
                if not q.train.edits[s]:
                    del q.train.edits[s]
                yield q
        if t.scheduler is not None:
            q = p.clone()
            q.train.scheduler = None
            yield q
        if t.poison:
            q = p.clone()
            q.train.poison = ()
            yield q
        if t.scaler is not None:
            q = p.clone()
            q.train.scaler = None
            q.train.poison = ()
            yield q
            for k, v in (("init_scale", 2.0 ** 16), ("growth_interval", 2000), ("growth_factor", 2.0),
                         ("backoff_factor", 0.5)):
                if t.scaler.get(k) != v:
                    q = p.clone()
                    q.train.scaler[k] = v
                    yield q
        if t.group1:
            q = p.clone()
            q.train.group1 = {}
            yield q
            for k in list(t.group1):
                q = p.clone()
                del q.train.group1[k]
                yield q
        if any(lf.group for lf in p.leaves):
            q = p.clone()
            for lf in q.leaves:
                lf.group = 0
            yield q
        for k in list(t.opt_kwargs):
            if k in ("lr", "tolerance_grad"):
                continue
            q = p.clone()
            del q.train.opt_kwargs[k]
            yield q
        if any(not z for z in t.zero_modes):
            q = p.clone()
            q.train.zero_modes = [True]
            yield q
        if t.step is not None:
            for change in _step_simplifications(t.step):
                q = p.clone()
                change(q.train.step)
                yield q
        if t.optimizer not in ("SGD", "LBFGS") and self.oracle in ("make_step", "torch"):
            q = p.clone()
            q.train.optimizer, q.train.opt_kwargs, q.train.group1 = "SGD", {"lr": 0.01}, {}
            q.train.scheduler = None
            yield q

    # --------------------------------------------------------------- graph
    def _graph_passes(self, p):
        try:
            shp, dts = shapes(p)
        except Invalid:
            return
        n = len(p.nodes)
        # the output moved to an earlier value
        for nd in reversed(p.nodes[:-1]):
            for o in nd.outs:
                if o in shp and dts.get(o) == p.dtype and LOSSES[p.loss].accepts(shp[o]) and o != p.out:
                    q = p.clone()
                    q.out = o
                    yield q.dead_code_eliminated()
                    break
        for i in reversed(range(n)):
            nd = p.nodes[i]
            if nd.stmt:  # an in-place statement: dropped
                q = p.clone()
                del q.nodes[i]
                yield q.dead_code_eliminated()
                continue
            for o in nd.outs:
                # bypass: uses of o read one of the node's inputs instead
                for a in nd.ins:
                    if a in shp and o in shp and shp[a] == shp[o] and dts.get(a) == dts.get(o) and a != o:
                        yield _rename_uses(p, o, a).dead_code_eliminated()
                # cut: o becomes a leaf (a constant, or a parameter)
                if o in shp and dts.get(o, "").startswith("float"):
                    for kind in ("const", "param"):
                        q = _cut(p, o, kind, shp[o], dts[o])
                        if q is not None:
                            yield q.dead_code_eliminated()

    # -------------------------------------------------------------- leaves
    def _leaf_passes(self, p):
        used = p.used_names()
        for lf in p.leaves:
            if lf.kind in ("param", "frozen") and lf.name not in used:
                q = p.clone()
                q.leaves = [x for x in q.leaves if x.name != lf.name]
                q.train.edits = {s: [e for e in es if e.key != lf.name] for s, es in q.train.edits.items()}
                yield q
        for lf in p.leaves:
            if lf.kind == "frozen":
                q = p.clone()
                q.leaf(lf.name).kind = "const"
                yield q
            if lf.kind == "param":
                q = p.clone()
                q.leaf(lf.name).kind = "const"
                q.train.edits = {s: [e for e in es if e.key != lf.name] for s, es in q.train.edits.items()}
                yield q

    def _shape_passes(self, p):
        targets = [("x", p.x_shape)] + [(lf.name, lf.shape) for lf in p.leaves]
        for name, shape in targets:
            for d, size in enumerate(shape):
                for new in sorted({1, size // 2} - {size, 0}):
                    q = p.clone()
                    s = list(shape)
                    s[d] = new
                    if name == "x":
                        q.x_shape = tuple(s)
                    else:
                        q.leaf(name).shape = tuple(s)
                    q.values = {}
                    yield q
            if len(shape) >= 1 and name == "x":
                q = p.clone()
                q.x_shape = tuple(shape[1:])
                yield q

    def _loss_passes(self, p):
        for loss in ("mean", "sum_sq", "mse"):
            if p.loss != loss:
                q = p.clone()
                q.loss, q.loss_attrs = loss, {}
                yield q

    # -------------------------------------------------------------- values
    def _values_pass(self, p):
        """Short decimals instead of random draws, where the failure stays."""
        self.deadline = max(self.deadline, time.monotonic() + 30.0)  # a few checks even after the budget
        try:
            inst = Instance(p)
        except Invalid:
            return p
        for decimals in (0, 1, 2):
            q = p.clone()
            for lf in p.leaves:
                v = inst.leaf_values[lf.name]
                q.values[lf.name] = np.round(v, decimals).astype(v.dtype) if v.dtype.kind == "f" else v
            for c, (x, ys) in enumerate(inst.batches):
                q.values[("x", c)] = np.round(x, decimals).astype(x.dtype)
                if ys:
                    y = ys[0]
                    q.values[("y", c)] = np.round(y, decimals).astype(y.dtype) if y.dtype.kind == "f" else y
            if self.fails(q):
                return q
        return p


_LOSS_RANK = {"mean": 0, "sum_sq": 1, "mse": 2}


def _step_simplifications(spec):
    """Edits that make the train_step oracle's step function simpler."""
    def drop_input(n):
        def f(sp):
            sp.inputs = tuple(i for i in sp.inputs if i != n)
        return f
    out = [drop_input(n) for n in ("w", "shift") if n in spec.inputs]
    if spec.extras:
        out.append(lambda sp: setattr(sp, "extras", ()))
        out += [lambda sp, j=j: setattr(sp, "extras", sp.extras[:j] + sp.extras[j + 1:]) for j in range(len(spec.extras))]
    if spec.as_list:
        out.append(lambda sp: setattr(sp, "as_list", False))
    if spec.clip is not None:
        out.append(lambda sp: setattr(sp, "clip", None))
    if list(spec.inputs[:1]) != ["x"]:
        out.append(lambda sp: setattr(sp, "inputs", tuple(sorted(sp.inputs, key=("x", "y", "w", "shift").index))))
    return out


def _step_cost(spec):
    if spec is None:
        return 0
    return (10 * len(spec.extras) + 10 * ("w" in spec.inputs) + 10 * ("shift" in spec.inputs)
            + 10 * (spec.clip is not None) + spec.as_list + (spec.inputs[:1] != ("x",)))


def cost(p):
    """What shrinking decreases, strictly (so no pass can cycle): nodes
    first, then tensor sizes, then the training recipe."""
    t = p.train
    numel = int(np.prod(p.x_shape)) + sum(int(np.prod(lf.shape)) for lf in p.leaves)
    recipe = (100 * t.steps * t.micro + 50 * sum(len(e) for e in t.edits.values()) + 50 * (t.scheduler is not None)
              + 50 * (t.scaler is not None) + 20 * len(t.poison) + 10 * len(t.opt_kwargs) + 10 * len(t.group1)
              + 5 * sum(lf.group for lf in p.leaves) + (0 if t.optimizer in ("SGD", "LBFGS") else 10)
              + sum(1 for z in t.zero_modes if not z) + (t.scaler or {}).get("growth_interval", 0) % 7
              + _step_cost(t.step))
    leaves = 20 * len(p.leaves) + sum(3 for lf in p.leaves if lf.kind == "param")
    return 1000 * len(p.nodes) + numel + recipe + leaves + 5 * _LOSS_RANK.get(p.loss, 3)


def _key(p):
    vals = tuple(sorted((str(k), np.asarray(v).tobytes()) for k, v in p.values.items()))
    return (p.forward_source(), p.loss, repr(p.loss_attrs), repr(p.train), p.x_shape, p.dtype,
            repr(p.leaves), vals)


def _rename_uses(p, old, new):
    q = p.clone()
    for nd in q.nodes:
        nd.ins = [new if a == old else a for a in nd.ins]
    if q.out == old:
        q.out = new
    return q


def _cut(p, name, kind, shape, dtype):
    if dtype != p.dtype:
        return None
    q = p.clone()
    i = next(k for k, nd in enumerate(q.nodes) if name in nd.outs)
    leaf_name = f"{'c' if kind == 'const' else 'p'}{name[1:]}_"
    q.leaves.append(Leaf(leaf_name, kind, tuple(shape)))
    nd = q.nodes[i]
    if len(nd.outs) == 1:
        del q.nodes[i]
    for other in q.nodes:
        other.ins = [leaf_name if a == name else a for a in other.ins]
    if q.out == name:
        q.out = leaf_name
    return q


def shrink(program, mismatches, budget_s=300.0, log=None):
    """The smallest program found that the same oracle still flags."""
    sig = signature(mismatches)
    s = Shrinker(sig[0], sig, budget_s, log)
    return s.run(program), s.checks
