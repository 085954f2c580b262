"""Running a program: its shapes (PyTorch's meta tensors), its modules for
Lucid and PyTorch, its batches, and the masks of its dropouts."""
from __future__ import annotations

import numpy as np
import torch

import lucid
import lucid.nn as lnn
import lucid.nn.functional as LF
import lucid.optim  # noqa: F401
import torch.nn.functional as TF

from .program import LOSSES, Program


class Invalid(Exception):
    """The program itself is ill-formed (both sides reject it): not a finding."""


def _lucid_drop(a, p):
    return LF.dropout(a, p)


class _TorchDropout:
    """Lucid's dropout on PyTorch: the masks Lucid's generator draws for the
    same seed, consumed in the order the forward runs them."""

    def __init__(self):
        self.masks = []

    def __call__(self, a, p):
        return a * self.masks.pop(0)


class ExactTorchF:
    """torch.nn.functional with PyTorch's float64 quirks replaced by the
    exact computation (Lucid computes the mathematically right value):
    hardsigmoid's float64 backward multiplies by float32(1/6)."""

    def __getattr__(self, name):
        return getattr(TF, name)

    @staticmethod
    def hardsigmoid(x, inplace=False):
        inside = (x > -3) & (x < 3)
        return torch.where(inside, (x + 3) / 6, torch.clamp(x.detach() + 3, 0, 6) / 6)


TORCH_F = ExactTorchF()


def namespace(lib, dropout=None):
    if lib == "lucid":
        return {"L": lucid, "F": LF, "drop": _lucid_drop}
    if lib == "torch":
        return {"L": torch, "F": TORCH_F, "drop": dropout}
    if lib == "meta":
        return {"L": torch, "F": TF, "drop": lambda a, p: TF.dropout(a, p)}
    raise ValueError(lib)


def compile_source(src, ns, name):
    scope = dict(ns)
    exec(compile(src, f"<fuzz {name}>", "exec"), scope)  # noqa: S102
    return scope[name]


def _torch_dtype(name):
    return getattr(torch, name)


class _Leaves:
    pass


def shapes(program: Program):
    """Every value's shape (and the output's), from running the forward on
    PyTorch meta tensors. Raises Invalid for an ill-formed program."""
    src = program.forward_source().rsplit("\n", 1)[0] + "\n    return dict(locals())"
    fn = compile_source(src, namespace("meta"), "forward")
    obj = _Leaves()
    dt = _torch_dtype(program.dtype)
    for lf in program.leaves:
        if lf.kind == "index":
            t = torch.empty(lf.shape, dtype=torch.int64, device="meta")
        elif lf.kind == "mask":
            t = torch.empty(lf.shape, dtype=torch.bool, device="meta")
        else:
            t = torch.empty(lf.shape, dtype=dt, device="meta", requires_grad=lf.kind == "param")
        setattr(obj, lf.name, t)
    x = torch.empty(program.x_shape, dtype=dt, device="meta")
    try:
        env = fn(obj, x)
    except Exception as e:  # noqa: BLE001
        raise Invalid(f"{type(e).__name__}: {e}") from None
    out, dtypes = {}, {}
    for k, v in env.items():
        if isinstance(v, torch.Tensor):
            out[k] = tuple(v.shape)
            dtypes[k] = str(v.dtype).replace("torch.", "")
    if program.out not in out:
        raise Invalid("output is not a tensor")
    if not LOSSES[program.loss].accepts(out[program.out]):
        raise Invalid(f"loss {program.loss} does not take shape {out[program.out]}")
    if not dtypes[program.out].startswith("float"):
        raise Invalid("output is not floating point")
    return out, dtypes


def dropout_nodes(program):
    """(value name, p) of every dropout, in the order the forward runs them."""
    out = []
    for nd in program.nodes:
        if nd.op == "dropout":
            out.append((nd.outs[0], float(nd.tmpl.split(",")[-1].strip(" )"))))
    return out


class Instance:
    """A program made concrete: shapes, leaf values and batches."""

    def __init__(self, program: Program):
        self.program = program
        self.shapes, self.dtypes = shapes(program)
        self.out_shape = self.shapes[program.out]
        self.leaf_values = {lf.name: program.leaf_value(lf, self.shapes) for lf in program.leaves}
        self.batches = [program.batch(c, self.out_shape) for c in range(program.calls())]
        self.drops = dropout_nodes(program)

    # --------------------------------------------------------------- lucid
    def lucid_model(self, extras=()):
        """The Lucid model; its forward returns (out, *extras) with value names."""
        p = self.program
        cls = type("FuzzModel", (lnn.Module,), {"forward": compile_source(p.forward_source(extras=extras),
                                                                          namespace("lucid"), "forward")})
        m = cls()
        for lf in p.leaves:
            v = lucid.tensor(self.leaf_values[lf.name])
            if lf.kind in ("param", "frozen"):
                setattr(m, lf.name, lnn.Parameter(v, requires_grad=lf.kind == "param"))
            else:
                m.register_buffer(lf.name, v, persistent=False)
        return m

    def lucid_loss(self):
        return compile_source(self.program.loss_source(), namespace("lucid"), "loss_fn")

    def lucid_batch(self, call):
        x, ys = self.batches[call]
        return lucid.tensor(x), tuple(lucid.tensor(y) for y in ys)

    # --------------------------------------------------------------- torch
    def torch_model(self):
        p = self.program
        drop = _TorchDropout()
        cls = type("FuzzModel", (torch.nn.Module,), {"forward": compile_source(
            p.forward_source(), namespace("torch", drop), "forward")})
        m = cls()
        m.dropout = drop
        for lf in p.leaves:
            v = torch.from_numpy(np.array(self.leaf_values[lf.name]))
            if lf.kind in ("param", "frozen"):
                setattr(m, lf.name, torch.nn.Parameter(v, requires_grad=lf.kind == "param"))
            else:
                m.register_buffer(lf.name, v, persistent=False)
        return m

    def torch_loss(self):
        return compile_source(self.program.loss_source(), namespace("torch"), "loss_fn")

    def torch_batch(self, call):
        x, ys = self.batches[call]
        return torch.from_numpy(np.array(x)), tuple(torch.from_numpy(np.array(y)) for y in ys)

    def step_inputs(self, call):
        """The train_step oracle's arguments of one call by name: x, y (the
        target, when the loss has one), w (a loss weight in [0.5, 2)) and
        shift (added to the output), NumPy."""
        p = self.program
        x, ys = self.batches[call]
        out = {"x": x}
        if ys:
            out["y"] = ys[0]
        spec = p.train.step
        if spec is not None and "w" in spec.inputs:
            out["w"] = (0.5 + 1.5 * p.rng("w", call).random(spec.w_shape)).astype(p.dtype)
        if spec is not None and "shift" in spec.inputs:
            out["shift"] = np.clip(p.rng("shift", call).standard_normal(self.out_shape), -3, 3).astype(p.dtype)
        return out

    def dropout_masks(self, seed):
        """The keep-masks (scaled by 1/(1-p)) Lucid's dropouts draw after
        lucid.manual_seed(seed): its own dropout applied to ones, in order."""
        lucid.manual_seed(seed)
        masks = []
        for name, p in self.drops:
            ones = lucid.ones(list(self.shapes[name]), dtype=getattr(lucid, self.dtypes[name]))
            masks.append(torch.from_numpy(np.array(LF.dropout(ones, p).numpy())))
        return masks


def call_seed(program, call):
    """The generator seed set before every call (dropout masks)."""
    return (program.seed * 7919 + call) % (2**31)
