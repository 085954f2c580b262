"""The checks run on every program.

- ``torch``: eager Lucid's loss and gradients vs PyTorch on the same program
  (parameters synchronised before each step, so errors do not compound).
- ``torch_optim``: one eager optimizer step (and GradScaler step) vs
  torch.optim from identical parameters, gradients and state.
- ``make_step``: eager backward vs ``make_step`` (gradients after every call,
  accumulation over micro-batches, both ``zero_grad`` modes).
- ``fused_step``: the eager loop vs ``fused_step`` (random optimizer and
  flags, two param groups, edits between steps, scheduler, GradScaler).
- ``compile_optimizer``: the eager optimizer vs ``compile_optimizer`` on the
  same gradients (LBFGS: its documented closure-less rule, in NumPy).
- ``accumulate``: ``make_step`` + ``compile_optimizer`` over several
  micro-batches vs the eager loop.
- ``train_step``: the eager loop (clip_grad_norm_/clip_grad_value_ after
  unscale_, k micro-batches) vs ``train_step`` over the program as a step
  function (several inputs, its own loss, extra results) or ``fused_step``
  with the same options (clipping, accumulation, GradScaler, scheduler).

Compiled vs eager on the CPU is asserted bit for bit: the same kernels run
(``-ffp-contract=off``), only scheduled differently. Lucid vs PyTorch is
compared with a tolerance (see ``Tolerance``).
"""
from __future__ import annotations

import contextlib
import copy
import math
import traceback
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as TF

import lucid
import lucid.optim as loptim
from lucid.amp import GradScaler
from lucid.compile import compile_optimizer, fused_step, make_step, train_step
from lucid.nn.utils import clip_grad_norm_, clip_grad_value_

from .runtime import ExactTorchF, Instance, Invalid, call_seed, compile_source, namespace

ORACLES = ["torch", "torch_optim", "make_step", "fused_step", "compile_optimizer", "accumulate", "train_step"]


@dataclass
class Mismatch:
    oracle: str
    where: str      # "step 1 call 2"
    what: str       # "grad p3", "param p1", "state[0].exp_avg", "loss", "error"
    detail: str

    def __str__(self):
        return f"[{self.oracle}] {self.where}: {self.what}: {self.detail}"


class Skip(Exception):
    """The oracle does not apply to this program."""


# ================================================================ comparing
def _arr(v):
    if v is None:
        return None
    if isinstance(v, lucid.Tensor):
        v = v.detach()
        if v.dtype in (lucid.bfloat16, lucid.float16):
            v = v.float()
        return np.array(v.numpy())
    if isinstance(v, torch.Tensor):
        return v.detach().numpy().copy()
    return np.array(v)


def bitwise_diff(a, b):
    """None when a and b hold the same bits (NaNs equal), else a description."""
    a, b = _arr(a), _arr(b)
    if a is None or b is None:
        return None if a is None and b is None else f"{'missing' if a is None else 'present'} vs " \
                                                     f"{'missing' if b is None else 'present'}"
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.dtype.kind == "f":
        same = (a == b) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    if same.all():
        return None
    return _describe(a, b, ~same)


def _describe(a, b, bad):
    idx = np.argwhere(bad)
    first = tuple(int(i) for i in idx[0]) if a.ndim else ()
    with np.errstate(invalid="ignore"):
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    d = np.where(np.isnan(d), np.inf, d)
    scale = float(np.nanmax(np.abs(b))) if b.size and np.isfinite(b).any() else 0.0
    return (f"{int(bad.sum())}/{a.size} elements differ, max |diff| {float(d.max()):.3g} (max |ref| {scale:.3g}); "
            f"first at {first}: {a[first]!r} vs {b[first]!r}")


def close_diff(a, b, rtol, slack=None, scale=None, overflow=None):
    """None when |a - b| <= rtol * max(max|b|, scale) + slack elementwise
    (norm-wise relative error; `scale` the magnitude of the whole result the
    tensor is part of, `slack` the reference's own uncertainty). Where the
    mask `overflow` is set, b is non-finite only because its dtype's range
    was exceeded: any non-finite a matches it (inf or NaN there depends on
    summation order and FMA contraction: an overflowed product added to its
    opposite is NaN, the same fused is inf)."""
    a, b = _arr(a), _arr(b)
    if a is None or b is None:
        return None if a is None and b is None else f"{'missing' if a is None else 'present'} vs " \
                                                     f"{'missing' if b is None else 'present'}"
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if overflow is not None and np.shape(overflow) == a.shape:
        either = overflow & ~np.isfinite(a64)
        a64, b64 = np.where(either, np.nan, a64), np.where(either, np.nan, b64)
    fin = np.isfinite(b64)
    kind = (np.isfinite(a64) != fin) | (np.isnan(a64) != np.isnan(b64))  # finite vs not, NaN vs inf
    if kind.any():
        return _describe(a, b, kind)
    if not fin.any():
        return None
    scale = max(float(np.abs(b64[fin]).max()), scale or 0.0)
    tol = rtol * scale + (0.0 if slack is None else slack)
    bad = fin & (np.abs(a64 - b64) > tol)
    if (~fin).any():  # infs of the same sign, NaNs anywhere the other has one
        bad |= ~fin & (a64 != b64) & ~(np.isnan(a64) & np.isnan(b64))
    if bad.any():
        return _describe(a, b, bad)
    return None


# Deviations understood and waiting on work in progress elsewhere: counted and
# reported as "known", each pinned by a strict xfail in
# tests/test_fuzz_regressions.py, never silently passed.
KNOWN = {
    "inf_input": (
        "a call whose input holds an inf (the poisoned steps that make a GradScaler skip) is run but "
        "not compared with PyTorch: inf/NaN propagation through Lucid's composite gradients differs "
        "from PyTorch's dedicated kernels there (huber/smooth_l1 give NaN where PyTorch clamps to "
        "+-delta; var with an inf element gives NaN where PyTorch gives -inf)."),
}


class Ledger:
    """What one oracle found on one program: mismatches, and occurrences of
    KNOWN deviations."""

    def __init__(self, oracle):
        self.oracle = oracle
        self.found = []
        self.known = []

    def __bool__(self):
        return bool(self.found)

    def bitwise(self, where, what, got, want):
        d = bitwise_diff(got, want)
        if not d:
            return
        self.found.append(Mismatch(self.oracle, where, what, d))

    def close(self, where, what, got, want, rtol, slack=None, scale=None, overflow=None):
        d = close_diff(got, want, rtol, slack, scale, overflow)
        if d:
            self.found.append(Mismatch(self.oracle, where, what, d))

    def error(self, where, exc):
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        self.found.append(Mismatch(self.oracle, where, "error", tb))


# ============================================================== optimizers
def _groups(program, params_by_name):
    g0 = [params_by_name[lf.name] for lf in program.params() if lf.group == 0]
    g1 = [params_by_name[lf.name] for lf in program.params() if lf.group == 1]
    if not g0:
        g0, g1 = g1, []
    groups = [{"params": g0}]
    if g1:
        groups.append({"params": g1, **program.train.group1})
    return groups


def make_optimizer(program, model, lib="lucid", name=None, kwargs=None):
    t = program.train
    name = name or t.optimizer
    kwargs = dict(t.opt_kwargs if kwargs is None else kwargs)
    params = dict(model.named_parameters())
    groups = _groups(program, params)
    cls = getattr(torch.optim if lib == "torch" else loptim, name)
    if name == "LBFGS" and len(groups) > 1:
        groups = [{"params": groups[0]["params"] + groups[1]["params"]}]  # LBFGS takes one group
    return cls(groups, **kwargs)


def make_scheduler(program, opt, lib="lucid"):
    if program.train.scheduler is None:
        return None
    name, kw = program.train.scheduler
    kw = dict(kw)
    mod = loptim.lr_scheduler if lib == "lucid" else torch.optim.lr_scheduler
    from .repro import _cycle_momentum

    cycle = _cycle_momentum(name, opt.defaults)
    if cycle is not None:
        kw["cycle_momentum"] = cycle
    return getattr(mod, name)(opt, **kw)


def apply_edits(program, step, opt, model, lib="lucid"):
    """The program's edits before `step`, on one run (Lucid or PyTorch)."""
    for e in program.train.edits.get(step, []):
        if e.kind == "hyper":
            groups = opt.param_groups
            g = groups[min(e.group, len(groups) - 1)]
            if e.key in g:
                g[e.key] = e.value
        elif e.kind == "scale_lr":
            for g in opt.param_groups:
                g["lr"] = g["lr"] * e.value
        elif e.kind == "param_data":
            p = dict(model.named_parameters())[e.key]
            p.data.mul_(e.value)
        elif e.kind == "param_rebind":
            p = dict(model.named_parameters())[e.key]
            p.data = p.data * e.value


def make_scaler(program, lib="lucid"):
    kw = program.train.scaler
    if kw is None:
        return None
    if lib == "torch":
        return torch.amp.GradScaler("cpu", **kw)
    return GradScaler(**kw)


def state_items(opt):
    """The optimizer's state as {label: array or number} (PyTorch's layout)."""
    sd = opt.state_dict()
    out = {}
    for idx, st in sorted(sd["state"].items(), key=lambda kv: int(kv[0])):
        for k, v in sorted(st.items()):
            out[f"state[{idx}].{k}"] = _arr(v) if isinstance(v, (lucid.Tensor, torch.Tensor, np.ndarray)) else \
                np.array(float(v))
    for gi, g in enumerate(sd["param_groups"]):
        for k in ("lr",):
            out[f"group[{gi}].{k}"] = np.array(float(g[k]))
    return out


def params_of(model):
    return {n: _arr(p) for n, p in model.named_parameters()}


def grads_of(model):
    return {n: _arr(p.grad) for n, p in model.named_parameters()}


def buffers_of(model):
    """Float buffers (running statistics a step updates in place)."""
    return {n: _arr(b) for n, b in model.named_buffers() if b.dtype.is_floating_point}


# ============================================================== the runs
@contextlib.contextmanager
def _quiet():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _eager_update_name(program):
    # make_step/accumulate drive an eager optimizer; LBFGS needs a closure
    return "SGD" if program.train.optimizer == "LBFGS" else program.train.optimizer


def _eager_update_kwargs(program):
    return {"lr": 0.01} if program.train.optimizer == "LBFGS" else program.train.opt_kwargs


def run_make_step(inst: Instance, accumulate_compiled_opt=False):
    """make_step (or make_step + compile_optimizer) vs eager backward."""
    p = inst.program
    oracle = "accumulate" if accumulate_compiled_opt else "make_step"
    led = Ledger(oracle)
    if accumulate_compiled_opt and p.train.micro < 2:
        raise Skip("one micro-batch")
    name, kw = _eager_update_name(p), _eager_update_kwargs(p)
    me, mc = inst.lucid_model(), inst.lucid_model()
    loss_e, loss_c = inst.lucid_loss(), inst.lucid_loss()
    oe = make_optimizer(p, me, name=name, kwargs=kw)
    oc = make_optimizer(p, mc, name=name, kwargs=kw)
    if accumulate_compiled_opt:
        oc = compile_optimizer(oc)
    step = make_step(mc, loss_c)
    call = 0
    for s in range(p.train.steps):
        if s:
            apply_edits(p, s, oe, me)
            apply_edits(p, s, oc, mc)
        mode = p.train.zero_mode(s)
        me.zero_grad(mode)
        mc.zero_grad(mode)
        for k in range(p.train.micro):
            where = f"step {s} call {k}"
            x, ys = inst.lucid_batch(call)
            lucid.manual_seed(call_seed(p, call))
            try:
                le = loss_e(me(x), *ys)
                le.backward()
            except Exception as e:  # noqa: BLE001
                raise Skip(f"eager fails: {e}") from None  # reported by the torch oracle
            lucid.manual_seed(call_seed(p, call))
            try:
                lc = step(x, *ys)
            except Exception as e:  # noqa: BLE001
                led.error(where, e)
                return led
            led.bitwise(where, "loss", lc, le)
            ge, gc = grads_of(me), grads_of(mc)
            for n in ge:
                led.bitwise(where, f"grad {n}", gc[n], ge[n])
            be, bc = buffers_of(me), buffers_of(mc)
            for n in be:
                led.bitwise(where, f"buffer {n}", bc[n], be[n])
            call += 1
            if led.found:
                return led
        try:
            oe.step()
        except Exception as e:  # noqa: BLE001
            raise Skip(f"eager optimizer fails: {e}") from None
        try:
            oc.step()
        except Exception as e:  # noqa: BLE001
            led.error(f"step {s} optimizer", e)
            return led
        pe, pc = params_of(me), params_of(mc)
        for n in pe:
            led.bitwise(f"step {s}", f"param {n}", pc[n], pe[n])
        if accumulate_compiled_opt:
            se, sc = state_items(oe), state_items(oc)
            for k in se:
                led.bitwise(f"step {s}", k, sc.get(k), se[k])
        if led.found:
            return led
    return led


def _eager_loop_step(inst, model, loss_fn, opt, scaler, call, set_to_none):
    p = inst.program
    x, ys = inst.lucid_batch(call)
    opt.zero_grad(set_to_none)
    lucid.manual_seed(call_seed(p, call))
    loss = loss_fn(model(x), *ys)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()
    return loss


def run_fused_step(inst: Instance):
    p = inst.program
    led = Ledger("fused_step")
    me, mc = inst.lucid_model(), inst.lucid_model()
    loss_e, loss_c = inst.lucid_loss(), inst.lucid_loss()
    if p.train.optimizer == "LBFGS":
        # LBFGS has no closure-less update to fuse: fused_step must refuse it.
        try:
            fused_step(mc, loss_c, make_optimizer(p, mc))
        except TypeError:
            raise Skip("LBFGS is refused by fused_step (as documented)") from None
        led.found.append(Mismatch("fused_step", "construction", "error", "fused_step accepted LBFGS"))
        return led
    oe, oc = make_optimizer(p, me), make_optimizer(p, mc)
    se, sc = make_scheduler(p, oe), make_scheduler(p, oc)
    scale_e, scale_c = make_scaler(p), make_scaler(p)
    step = fused_step(mc, loss_c, oc, grad_scaler=scale_c)
    for s in range(p.train.steps):
        where = f"step {s}"
        call = s * p.train.micro
        if s:
            apply_edits(p, s, oe, me)
            apply_edits(p, s, oc, mc)
        try:
            le = _eager_loop_step(inst, me, loss_e, oe, scale_e, call, p.train.zero_mode(s))
        except Exception as e:  # noqa: BLE001
            raise Skip(f"eager fails: {e}") from None
        lucid.manual_seed(call_seed(p, call))
        try:
            lc = step(*_flat(inst.lucid_batch(call)))
        except Exception as e:  # noqa: BLE001
            led.error(where, e)
            return led
        led.bitwise(where, "loss", lc, le)
        _compare_updates(led, where, me, mc, oe, oc, scale_e, scale_c)
        if se is not None:
            se.step()
            sc.step()
        if led.found:
            return led
    return led


def _compare_updates(led, where, me, mc, oe, oc, scale_e, scale_c):
    """After one eager and one compiled update step: parameters, buffers,
    optimizer state and the GradScaler's scale, bit for bit."""
    pe, pc = params_of(me), params_of(mc)
    for n in pe:
        led.bitwise(where, f"param {n}", pc[n], pe[n])
    be, bc = buffers_of(me), buffers_of(mc)
    for n in be:
        led.bitwise(where, f"buffer {n}", bc[n], be[n])
    ste, stc = state_items(oe), state_items(oc)
    for k in sorted(set(ste) | set(stc)):
        led.bitwise(where, k, stc.get(k), ste.get(k))
    if scale_e is not None:
        led.bitwise(where, "scale", np.array(scale_c.get_scale()), np.array(scale_e.get_scale()))


def step_arguments(inst, step):
    """The train_step oracle's arguments of `step` by name, as Lucid
    tensors per micro-batch ([{name: tensor}] of length Train.micro), and
    stacked along a new dim 0 as the compiled step takes them (accumulate > 1)."""
    p = inst.program
    k = p.train.micro
    per = [inst.step_inputs(step * k + m) for m in range(k)]
    micro = [{n: lucid.tensor(a) for n, a in d.items()} for d in per]
    if k == 1:
        return micro, dict(micro[0])
    return micro, {n: lucid.tensor(np.stack([d[n] for d in per])) for n in per[0]}


def _step_function(inst, model, loss_fn):
    """The program's step function over `model` (one whose forward returns
    the extras too); fused_step's form is loss_fn(model(x), *targets)."""
    p = inst.program
    if p.train.step.api == "fused_step":
        return lambda x, *ys: loss_fn(model(x), *ys)
    return compile_source(p.step_source(), {"model": model, "loss_fn": loss_fn}, "step_fn")


def _clip_kwargs(spec):
    if spec.clip == "norm":
        return {"clip_grad_norm": spec.max_norm, "norm_type": spec.norm_type}
    if spec.clip == "value":
        return {"clip_grad_value": spec.max_norm}
    return {}


def eager_train_step(inst, model, fn, opt, scaler, micro):
    """What train_step(fn, opt, scaler, clip..., accumulate=k) does, in
    eager Lucid: from zero gradients (set to None), the gradients of
    loss_m / k (times the scale) summed over the k micro-batches, unscaled,
    clipped (clip_grad_norm_ / clip_grad_value_ over the optimizer's
    parameters), one (scaler) step. Returns (loss, extras, norm): the mean of
    the k losses, the extras as fn computed them (copied before the update:
    one that is a view of a parameter does not show it), stacked along a new
    dim 0 when k > 1, the total norm."""
    spec = inst.program.train.step
    k = len(micro)
    order = spec.inputs
    opt.zero_grad(True)
    losses, extras, kind = [], [], None
    for args in micro:
        out = fn(*(args[n] for n in order))
        if isinstance(out, (tuple, list)):
            kind = type(out)
            loss, rest = out[0], out[1:]
        else:
            loss, rest = out, ()
        root = loss / k if k > 1 else loss
        (root if scaler is None else scaler.scale(root)).backward()
        losses.append(loss.detach())
        extras.append([t.detach().clone() for t in rest])
    loss = lucid.stack(losses, 0).mean() if k > 1 else losses[0]
    ex = [lucid.stack([e[j] for e in extras], 0) for j in range(len(extras[0]))] if k > 1 else extras[0]
    if scaler is not None:
        scaler.unscale_(opt)
    params = [q for g in opt.param_groups for q in g["params"]]
    norm = None
    if spec.clip == "norm":
        norm = clip_grad_norm_(params, spec.max_norm, spec.norm_type)
    elif spec.clip == "value":
        clip_grad_value_(params, spec.max_norm)
    if scaler is not None:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    return loss, (kind, ex), norm


def run_train_step(inst: Instance):
    """train_step (or fused_step with the same options) vs eager_train_step:
    the program as a step function with several inputs, its own loss and
    extra results, clipping, accumulation over Train.micro micro-batches,
    GradScaler (poisoned steps skipped), scheduler and edits."""
    p = inst.program
    spec = p.train.step
    led = Ledger("train_step")
    if spec is None:
        raise Skip("the program has no step function")
    nodes = p.step_model_extras()
    me, mc = inst.lucid_model(nodes), inst.lucid_model(nodes)
    fn_e, fn_c = _step_function(inst, me, inst.lucid_loss()), _step_function(inst, mc, inst.lucid_loss())
    k = p.train.micro
    kw = dict(_clip_kwargs(spec), accumulate=k)
    if p.train.optimizer == "LBFGS":
        try:
            train_step(fn_c, make_optimizer(p, mc), **kw)
        except TypeError:
            raise Skip("LBFGS is refused by train_step (as documented)") from None
        led.found.append(Mismatch("train_step", "construction", "error", "train_step accepted LBFGS"))
        return led
    oe, oc = make_optimizer(p, me), make_optimizer(p, mc)
    se, sc = make_scheduler(p, oe), make_scheduler(p, oc)
    scale_e, scale_c = make_scaler(p), make_scaler(p)
    if spec.api == "fused_step":
        step = fused_step(mc, inst.lucid_loss(), oc, grad_scaler=scale_c, **kw)
    else:
        step = train_step(fn_c, oc, scale_c, **kw)
    n_extras = len(p.step_extras())
    for s in range(p.train.steps):
        where = f"step {s}"
        if s:
            apply_edits(p, s, oe, me)
            apply_edits(p, s, oc, mc)
        micro, stacked = step_arguments(inst, s)
        lucid.manual_seed(call_seed(p, s * k))
        try:
            le, (kind_e, xe), ne = eager_train_step(inst, me, fn_e, oe, scale_e, micro)
        except Exception as e:  # noqa: BLE001
            raise Skip(f"eager fails: {e}") from None
        lucid.manual_seed(call_seed(p, s * k))
        try:
            res = step(*(stacked[n] for n in spec.inputs))
        except Exception as e:  # noqa: BLE001
            led.error(where, e)
            return led
        nc = None
        if spec.clip == "norm":
            res, nc = res
        if n_extras:
            if type(res) is not kind_e:
                led.found.append(Mismatch("train_step", where, "result", f"{type(res).__name__} returned, "
                                          f"the function returned a {kind_e.__name__}"))
                return led
            lc, xc = res[0], list(res[1:])
        else:
            lc, xc = res, []
        led.bitwise(where, "loss", lc, le)
        if len(xc) != len(xe):
            led.found.append(Mismatch("train_step", where, "result", f"{len(xc)} extras vs {len(xe)}"))
            return led
        for j, (a, b) in enumerate(zip(xc, xe)):
            led.bitwise(where, f"extra {j} ({p.step_extras()[j]})", a, b)
        led.bitwise(where, "norm", nc, ne)
        _compare_updates(led, where, me, mc, oe, oc, scale_e, scale_c)
        if se is not None:
            se.step()
            sc.step()
        if led.found:
            return led
    return led


def _magnitude(v):
    a = np.asarray(_arr(v), dtype=np.float64)
    a = a[np.isfinite(a)]
    return float(np.abs(a).max()) if a.size else 0.0


def _flat(batch):
    x, ys = batch
    return (x,) + tuple(ys)


def run_compile_optimizer(inst: Instance):
    p = inst.program
    led = Ledger("compile_optimizer")
    if p.train.optimizer == "LBFGS":
        return run_lbfgs_rule(inst)
    me, mc = inst.lucid_model(), inst.lucid_model()
    loss_fn = inst.lucid_loss()
    oe = make_optimizer(p, me)
    oc = compile_optimizer(make_optimizer(p, mc))
    scale_e, scale_c = make_scaler(p), make_scaler(p)
    se, sc = make_scheduler(p, oe), make_scheduler(p, oc.optimizer)
    for s in range(p.train.steps):
        where = f"step {s}"
        if s:
            apply_edits(p, s, oe, me)
            apply_edits(p, s, oc, mc)
        mode = p.train.zero_mode(s)
        oe.zero_grad(mode)
        oc.zero_grad(mode)
        for k in range(p.train.micro):
            call = s * p.train.micro + k
            for m in (me, mc):
                x, ys = inst.lucid_batch(call)
                lucid.manual_seed(call_seed(p, call))
                try:
                    loss = loss_fn(m(x), *ys)
                    (loss if scale_e is None else (scale_e if m is me else scale_c).scale(loss)).backward()
                except Exception as e:  # noqa: BLE001
                    raise Skip(f"eager fails: {e}") from None
        try:
            if scale_e is not None:
                scale_e.step(oe)
                scale_e.update()
            else:
                oe.step()
        except Exception as e:  # noqa: BLE001
            raise Skip(f"eager optimizer fails: {e}") from None
        try:
            if scale_c is not None:
                scale_c.step(oc)
                scale_c.update()
            else:
                oc.step()
        except Exception as e:  # noqa: BLE001
            led.error(where, e)
            return led
        pe, pc = params_of(me), params_of(mc)
        for n in pe:
            led.bitwise(where, f"param {n}", pc[n], pe[n])
        ste, stc = state_items(oe), state_items(oc)
        for k in sorted(set(ste) | set(stc)):
            led.bitwise(where, k, stc.get(k), ste.get(k))
        if se is not None:
            se.step()
            sc.step()
        if led.found:
            return led
    return led


def lbfgs_reference(param, grad, prev, prev_grad, lr, first, tolerance_grad):
    """compile_optimizer(LBFGS)'s documented step in NumPy (see
    lucid.compile._optimizer.lbfgs_bb_rule's docstring): per-element
    Barzilai-Borwein, h = s*s/(s*y) where s*y > 0 (never on the first step),
    else 1; x <- x - lr*h*g unless max|g| <= tolerance_grad."""
    dt = param.dtype
    s = param - prev
    y = grad - prev_grad
    sy = s * y
    ok = (sy * dt.type(1 - first)) > 0
    h = np.where(ok, (s * s) / np.where(ok, sy, dt.type(1.0)), dt.type(1.0))
    new = param - (grad * h) * dt.type(lr)
    converged = np.abs(grad).max() <= tolerance_grad if grad.size else True
    return (param if converged else new), param.copy(), grad.copy()


def run_lbfgs_rule(inst: Instance):
    p = inst.program
    led = Ledger("compile_optimizer")
    mc = inst.lucid_model()
    loss_fn = inst.lucid_loss()
    oc = compile_optimizer(make_optimizer(p, mc))
    lr, tol = float(p.train.opt_kwargs["lr"]), float(p.train.opt_kwargs["tolerance_grad"])
    ref = {n: (_arr(q), np.zeros_like(_arr(q)), np.zeros_like(_arr(q)), 0) for n, q in mc.named_parameters()}
    for s in range(p.train.steps):
        where = f"step {s}"
        if s:
            apply_edits(p, s, oc, mc)
            for e in p.train.edits.get(s, []):  # the reference follows the same edits
                if e.kind in ("param_data", "param_rebind"):
                    prm, pv, pg, k = ref[e.key]
                    ref[e.key] = (prm * prm.dtype.type(e.value), pv, pg, k)
                elif e.kind == "scale_lr":
                    lr *= e.value
        oc.zero_grad(p.train.zero_mode(s))
        x, ys = inst.lucid_batch(s * p.train.micro)
        lucid.manual_seed(call_seed(p, s * p.train.micro))
        try:
            loss_fn(mc(x), *ys).backward()
        except Exception as e:  # noqa: BLE001
            raise Skip(f"eager fails: {e}") from None
        grads = grads_of(mc)
        lr_now = float(oc.param_groups[0]["lr"])
        try:
            oc.step()
        except Exception as e:  # noqa: BLE001
            led.error(where, e)
            return led
        for n, q in mc.named_parameters():
            prm, pv, pg, k = ref[n]
            if grads[n] is None:
                continue
            new, pv, pg = lbfgs_reference(prm, grads[n], pv, pg, lr_now, 1.0 if k == 0 else 0.0, tol)
            ref[n] = (new, pv, pg, k + 1)
            led.close(where, f"param {n}", _arr(q), new, 4 * np.finfo(new.dtype).eps)
        if led.found:
            return led
    return led


# ================================================================== torch
def gradient_scale(grads):
    """The largest finite element of all parameters' gradients together.

    The gradient is one vector: its elements are compared norm-wise against
    this scale. A parameter whose whole gradient is cancellation residue
    (mathematically 0, e.g. through sum(softmax)) is then judged against the
    magnitude of the terms that cancelled, not against its own rounding noise.
    """
    m = 0.0
    for g in grads:
        if g is not None:
            a = _arr(g).astype(np.float64)
            a = a[np.isfinite(a)]
            if a.size:
                m = max(m, float(np.abs(a).max()))
    return m


class Tolerance:
    """Lucid vs PyTorch: |lucid - torch| <= rtol * scale + slack, elementwise.

    scale: the largest element of the tensor, and for gradients of all the
    parameters' gradients together (gradient_scale): a norm-wise relative
    error, so an element that cancels to ~0 is judged against the magnitude
    it cancelled from, not its own.
    rtol: 1e-12 for float64 programs; 2**-20 * (8 + number of nodes) where
    any value is float32: each node adds a few float32 ulps (2**-23) in the
    forward and again in the backward, and sums over up to 2**10 terms add
    log2 of their length.
    slack: PyTorch's own rounding error on this very program, measured with
    its twin in the other precision (_reference_error); it absorbs
    ill-conditioned elements (a relu/max kink crossed by rounding, gradients
    that are pure cancellation residue) without loosening the others.
    """

    @staticmethod
    def rtol(inst):
        if inst.program.dtype == "float64" and "float32" not in inst.dtypes.values():
            return 1e-12
        return 2.0 ** -20 * (8 + len(inst.program.nodes))


_NUDGE = 2.0 ** -22


def _nudged(tm):
    """tm with every float parameter and buffer moved by ~1 float32 ulp
    (a fixed random sign per element)."""
    r = np.random.default_rng(0)
    with torch.no_grad():
        for t in list(tm.parameters()) + list(tm.buffers()):
            if t.is_floating_point():
                t.mul_(torch.from_numpy(np.asarray(1 + _NUDGE * r.choice([-1.0, 1.0], size=tuple(t.shape)))).to(t.dtype))
    return tm


def _torch_step_values(inst, tm, tloss, call, torch_dtype=None, nudge=False):
    """Loss and grads of PyTorch at one call (grads accumulate in tm)."""
    p = inst.program
    x, ys = inst.torch_batch(call)
    if nudge and x.is_floating_point():
        signs = np.random.default_rng(1).choice([-1.0, 1.0], size=tuple(x.shape))
        x = x * torch.from_numpy(np.asarray(1 + _NUDGE * signs)).to(x.dtype)
    tm.dropout.masks = inst.dropout_masks(call_seed(p, call))
    if torch_dtype is not None:
        x = x.to(torch_dtype)
        ys = tuple(y.to(torch_dtype) if y.is_floating_point() else y for y in ys)
        tm.dropout.masks = [m.to(torch_dtype) if m.dtype == getattr(torch, p.dtype) else m
                            for m in tm.dropout.masks]
    out = tm(x)
    if out.requires_grad:
        out.retain_grad()
    loss = tloss(out, *ys)
    loss.backward()
    # PyTorch quirk: a leaf handed a view of a shared gradient (the leaves of
    # stack(...).sum(0)) keeps that view as its .grad, so the next backward
    # accumulates into one buffer twice. Each leaf's .grad is made its own, as
    # Lucid keeps it: accumulation over micro-batches then sums as it should.
    for q in tm.parameters():
        if q.grad is not None:
            q.grad = q.grad.clone()
    tm.out_grad, tm.out = out.grad, out.detach()
    return loss


def _torch_model_like(inst, lucid_model, dtype=None):
    tm = inst.torch_model()
    with torch.no_grad():
        for (n, tp), (_, lp) in zip(tm.named_parameters(), lucid_model.named_parameters()):
            tp.copy_(torch.from_numpy(_arr(lp)))
        lb = dict(lucid_model.named_buffers())
        for n, tb in tm.named_buffers():
            if tb.is_floating_point():
                tb.copy_(torch.from_numpy(_arr(lb[n])))
    if dtype is not None:
        tm = _retype(tm, inst, dtype)
    return tm


def _retype(tm, inst, dtype):
    """A float64 twin of a float32 torch model (for the reference's own error)."""
    src = getattr(torch, inst.program.dtype)
    for name, prm in list(tm.named_parameters()):
        setattr(tm, name, torch.nn.Parameter(prm.detach().to(dtype), requires_grad=prm.requires_grad))
    for name, buf in list(tm.named_buffers()):
        if buf.dtype == src:
            tm.register_buffer(name, buf.to(dtype), persistent=False)
    return tm


def run_torch(inst: Instance):
    p = inst.program
    led = Ledger("torch")
    ml = inst.lucid_model()
    loss_l = inst.lucid_loss()
    tloss = inst.torch_loss()
    ol = make_optimizer(p, ml, name=_eager_update_name(p), kwargs=_eager_update_kwargs(p))
    rtol = Tolerance.rtol(inst)
    pure64 = rtol == 1e-12
    call = 0
    buffer_scale = {}  # name: the largest magnitude a buffer has held
    for s in range(p.train.steps):
        if s:
            apply_edits(p, s, ol, ml)
        mode = p.train.zero_mode(s)
        ml.zero_grad(mode)
        tm = _torch_model_like(inst, ml)
        other = torch.float32 if pure64 else torch.float64
        tmo = _torch_model_like(inst, ml, other)
        tmp = _nudged(_torch_model_like(inst, ml, torch.float32 if pure64 else None))
        grad_scale = 0.0  # over the calls whose gradients accumulate
        for k in range(p.train.micro):
            where = f"step {s} call {k}"
            x, ys = inst.lucid_batch(call)
            t_err = l_err = tl = None
            try:
                before = copy.deepcopy(tm)  # a forward may write into its leaves (views family)
                tl = _torch_step_values(inst, tm, tloss, call)
            except Exception as e:  # noqa: BLE001
                t_err = e
            lucid.manual_seed(call_seed(p, call))  # after the twin's masks were drawn
            try:
                with _quiet():
                    ll = loss_l(ml(x), *ys)
                    ll.backward()
            except Exception as e:  # noqa: BLE001
                l_err = e
            if call in p.poisoned_calls() and t_err is None and l_err is None:
                # accumulated grads and running statistics carry the inf on: the
                # rest of the run is not compared
                led.known.append(("inf_input", where, "all"))
                return led
            if t_err is not None and l_err is not None:
                raise Invalid(f"both fail: torch {t_err!r}; lucid {l_err!r}")
            if t_err is not None:
                raise Invalid(f"torch fails: {t_err!r}")  # Lucid accepts more than torch
            if l_err is not None:
                led.error(where, l_err)
                return led
            slack = _reference_error(inst, tm, tmo, tmp, tloss, tl, call, other)
            # the loss's rounding is relative to what each output element
            # contributes, |dL/dout_i * out_i| to first order, cancelled or not
            loss_scale = 0.0
            if tm.out_grad is not None:
                contrib = np.abs(_arr(tm.out_grad).astype(np.float64) * _arr(tm.out).astype(np.float64)).sum()
                loss_scale = float(contrib) if np.isfinite(contrib) else 0.0
            loss_slack = slack.get("loss")
            if close_diff(ll, tl, rtol, loss_slack, loss_scale):
                # judged against the rounding its intermediates allow (a loss
                # that is exactly 0 in PyTorch has no scale of its own)
                loss_slack = max(loss_slack or 0.0, _intermediate_rounding(inst, before, tloss, call, tl))
            overflow = slack.get("overflow", {})
            led.close(where, "loss", ll, tl, rtol, loss_slack, loss_scale, overflow.get("loss"))
            # a running statistic is (1 - m) * old + m * batch: its rounding is
            # relative to the terms it combines, which may cancel (graph soak
            # seed 6407435: a running mean of -0.50 moved to 0.0027)
            tb = dict(tm.named_buffers())
            for n, b in before.named_buffers():
                if b.is_floating_point():
                    buffer_scale[n] = max(buffer_scale.get(n, 0.0), gradient_scale([b]))
            for n, b in ml.named_buffers():
                if b.dtype.is_floating_point:
                    led.close(where, f"buffer {n}", b, tb[n], rtol, scale=buffer_scale.get(n))
            tg = {n: tp.grad for n, tp in tm.named_parameters()}
            # every gradient is a sum over the output of dL/dout_i * dout_i/dtheta
            # (O(1) factors here): its rounding is relative to sum|dL/dout|, of
            # every call accumulated so far (graph soak seed 3009155: a call whose
            # targets are all ignored adds nothing to a cancelled 1e-19 residue)
            out_scale = float(np.abs(_arr(tm.out_grad)).sum()) if tm.out_grad is not None else 0.0
            grad_scale = max(grad_scale, gradient_scale(tg.values()), out_scale if np.isfinite(out_scale) else 0.0)
            moved = None  # this call's gradients under the intermediates' rounding, measured when needed
            for n, lp in ml.named_parameters():
                grad_slack = slack.get(n)
                if close_diff(lp.grad, tg[n], rtol, grad_slack, grad_scale, overflow.get(n)):
                    if moved is None:
                        moved = _intermediate_rounding(inst, before, tloss, call, tl, grads=True)
                    if n in moved:
                        grad_slack = np.maximum(0.0 if grad_slack is None else grad_slack, moved[n])
                led.close(where, f"grad {n}", lp.grad, tg[n], rtol, grad_slack, grad_scale, overflow.get(n))
            call += 1
            if led.found:
                return led
        try:
            ol.step()
        except Exception as e:  # noqa: BLE001
            led.error(f"step {s} optimizer", e)
            return led
    return led


def _reference_error(inst, tm, tmo, tmp, tloss, tl, call, other):
    """PyTorch's own rounding error on this program: {"loss": slack,
    param name: slack}, from two more PyTorch runs of the same call: its twin
    in the other precision (the error against a more exact result), and a
    float32 run with every input nudged by ~1 ulp (how much this program
    amplifies rounding: a cancellation residue multiplied by a large count
    shows up there, even where the first run happened to be exact).

    Programs with float32 values: _ERROR_FACTOR x the larger of the two
    float32 runs' distances to the float64 one, elementwise, plus that
    times its largest value over all gradients as a floor. float64 programs: that
    floor, measured in float32, scaled by 2**-29 (the ratio of the unit
    roundoffs: rounding error scales with it to first order)."""
    try:
        tlo = _torch_step_values(inst, tmo, tloss, call, other)
        tlp = _torch_step_values(inst, tmp, tloss, call, torch.float32, nudge=True)
    except Exception:  # noqa: BLE001
        return {}
    f32_prog = other == torch.float64
    base = (tm, tl) if f32_prog else (tmo, tlo)  # the unnudged float32 run

    def d(a, b):
        r = np.abs(_arr(a).astype(np.float64) - _arr(b).astype(np.float64))
        return np.where(np.isfinite(r), r, 0.0)
    exact = tl if not f32_prog else tlo  # the float64 result
    errs = {"loss": np.maximum(d(base[1], exact), d(tlp, exact))}
    named = zip(tm.named_parameters(), tmo.named_parameters(), tmp.named_parameters(), base[0].named_parameters())
    for (n, a), (_, b), (_, c), (_, z) in named:
        if all(q.grad is not None for q in (a, b, c, z)):
            ref64 = b.grad if f32_prog else a.grad
            errs[n] = np.maximum(d(z.grad, ref64), d(c.grad, ref64))
    k = _ERROR_FACTOR
    floor = k * max([float(e.max()) for key, e in errs.items() if key != "loss" and e.size] + [0.0])
    if f32_prog:
        out = {key: k * e + floor for key, e in errs.items()}
        out["loss"] = k * errs["loss"]
        out["overflow"] = _overflowed(tm, tl, tmo, tlo)
        return out
    scale = 2.0 ** -29
    return {**{key: floor * scale for key in errs}, "loss": k * float(errs["loss"]) * scale}


def _overflowed(tm, tl, tmo, tlo):
    """{"loss": mask, param name: mask}: where the float32 run is non-finite
    and its float64 twin finite, float32's range was exceeded on the way
    (graph seed 1106478: a diverging SGD's product p2 @ p4.T, whose terms
    overflow to opposite infs, is NaN in PyTorch and -inf with BLAS's FMA)."""
    def mask(f32, f64):
        a, b = _arr(f32), _arr(f64)
        return None if a is None or b is None else ~np.isfinite(a) & np.isfinite(b)
    out = {"loss": mask(tl, tlo)}
    for (n, a), (_, b) in zip(tm.named_parameters(), tmo.named_parameters()):
        out[n] = mask(a.grad, b.grad)
    return out


class _CentringRoundingF(ExactTorchF):
    """torch.nn.functional for the moved forward of _intermediate_rounding:
    the normalisations that centre their input (layer_norm, group_norm,
    batch_norm in training) also move each centred value x - mean by
    eps * the largest |x| of its group before dividing by the group's std.
    That rounding happens inside the op, so moving its inputs or output
    cannot show it: a row of -1e9 + O(1) values (masked_fill before a
    layer_norm) normalises to O(1) values off by ~eps * 1e9 / std, with a
    common part exact arithmetic never has (graph seed 920133).

    Lucid composes group_norm and batch_norm of (x - mean) * rsqrt(var +
    eps): a mean off by its rounding leaves a centred group that does not sum
    to 0, and through var that residue reaches the input's gradient,
    amplified by rsqrt(var)^3 (graph soak seed 6511265: a mathematically zero
    gradient, 1e-4 in Lucid, 0 in PyTorch, whose CPU kernel accumulates in
    float64). Their moved forward adds the difference that rounding makes,
    value and gradient (_offset_centring)."""

    def __init__(self, signs):
        self._signs = signs  # shape -> a tensor of random +-1 (0 for the unmoved run)

    def _offset_centring(self, g, dims, eps):
        """(x - mean - d) * rsqrt(var + eps) minus the same with d = 0, for
        groups `g` normalised over `dims`; d: eps(dtype) * max|x| of each
        group, a constant of random sign."""
        mag = g.detach().abs().amax(dim=dims, keepdim=True)
        d = self._signs(mag.shape).to(g.dtype) * (torch.finfo(g.dtype).eps * mag)

        def normalised(shift):
            xc = g - g.mean(dim=dims, keepdim=True) - shift
            return xc * torch.rsqrt((xc * xc).mean(dim=dims, keepdim=True) + eps)
        return normalised(d) - normalised(torch.zeros_like(d))

    def _centring_move(self, x, groups, dims, eps):
        """eps(dtype) * max|x| / std over `dims` of x viewed as `groups`, in x's shape."""
        g = x.detach().reshape(groups)
        mag = g.abs().amax(dim=dims, keepdim=True)
        std = torch.sqrt(g.var(dim=dims, unbiased=False, keepdim=True) + eps)
        move = self._signs(g.shape).to(g.dtype) * (torch.finfo(g.dtype).eps * mag / std)
        return move.reshape(x.shape)

    @staticmethod
    def _per_channel(w, x):
        return None if w is None else w.reshape((1, -1) + (1,) * (x.ndim - 2))

    def layer_norm(self, x, normalized_shape, weight=None, bias=None, eps=1e-5):
        out = TF.layer_norm(x, normalized_shape, weight, bias, eps)
        k = len(normalized_shape)
        move = self._centring_move(x, x.shape, tuple(range(x.ndim - k, x.ndim)), eps)
        return out + (move if weight is None else move * weight)

    def group_norm(self, x, num_groups, weight=None, bias=None, eps=1e-5):
        out = TF.group_norm(x, num_groups, weight, bias, eps)
        move = self._centring_move(x, (x.shape[0], num_groups, -1), (2,), eps)
        move = move + self._offset_centring(x.reshape(x.shape[0], num_groups, -1), (2,), eps).reshape(x.shape)
        w = self._per_channel(weight, x)
        return out + (move if w is None else move * w)

    def batch_norm(self, x, running_mean, running_var, weight=None, bias=None, training=False,
                   momentum=0.1, eps=1e-5):
        out = TF.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
        if not training:
            return out  # centred on the running mean: no cancellation inside
        channels_first = x.movedim(1, 0)
        move = self._centring_move(channels_first, channels_first.shape, tuple(range(1, x.ndim)), eps)
        move = move + self._offset_centring(channels_first.reshape(x.shape[1], -1), (1,), eps).reshape(
            channels_first.shape)
        move = move.movedim(0, 1)
        w = self._per_channel(weight, x)
        return out + (move if w is None else move * w)


def _intermediate_rounding(inst, tm, tloss, call, tl, grads=False):
    """How far the loss moves when every value the forward computes is off
    by its own rounding: |loss - loss'| times _ERROR_FACTOR, where loss' is
    PyTorch's forward (on a copy of `tm`, no gradients) with each node's
    output moved by eps(dtype) * the largest magnitude among the node's
    inputs and output (three fixed random sign patterns, each also negated:
    the largest move counts, as one pattern can move values alike where a
    later op cancels them). That is the error a correctly rounded op
    may make where its result cancels (var of equal values, a - a): relative
    to what it was computed from, not to itself. A loss PyTorch gets exactly
    0 from a cancellation (seed 625612 of the views family: var of a
    broadcast, 1.3e-125 in Lucid) has no other scale; nor has a step
    function of a value that is mathematically on its step (graph seed
    916122: floor of a sum of softmax rows, 20 within rounding, floors to 19
    or 20). 0.0 where it cannot be measured.

    With grads=True: {param name: elementwise deviation of this call's
    gradient} the same way, from PyTorch's backward through each moved
    forward ({} where it cannot be measured). A gradient through a
    normalisation whose input cancels inside it (batch_norm of constant
    -1e9 channels, graph soak seed 5014943: PyTorch's scale-and-shift form
    leaves 1e-5 where the exact result is 0) has no other bound."""
    import types

    p = inst.program
    direction, signs_of = [1.0], [None]  # the current pattern's sign and generator

    def rnd(v, *ins):
        if not (isinstance(v, torch.Tensor) and v.is_floating_point()) or v.numel() == 0:
            return v
        mags = [float(a.detach().abs()[torch.isfinite(a.detach())].max()) for a in (v, *ins)
                if isinstance(a, torch.Tensor) and a.is_floating_point() and torch.isfinite(a.detach()).any()]
        if not mags:
            return v
        step = torch.finfo(v.dtype).eps * max(mags)
        move = torch.from_numpy(np.asarray(direction[0] * signs_of[0].choice([-step, step], size=tuple(v.shape))))
        if v.requires_grad:  # backward may need v itself
            return v + move.to(v.dtype)
        try:
            return v.add_(move.to(v.dtype))  # in place: views of v see it
        except RuntimeError:
            return v + move.to(v.dtype)  # an output that cannot be written (an expanded view)
    lines = [p.forward_source().splitlines()[0]]
    body = p.forward_source().splitlines()[1:]
    lines.append(body[0])  # the leaves
    for nd in p.nodes:
        lines.append("    " + nd.line())
        if not nd.stmt:
            lines += [f"    {o} = _rnd({o}, {', '.join(nd.ins)})" for o in nd.outs]
    lines.append(body[-1])

    def run(sign, pattern):
        direction[0] = sign
        signs_of[0] = np.random.default_rng(pattern)
        m = copy.deepcopy(tm)
        for q in m.parameters():
            q.grad = None
        ns = {**namespace("torch", m.dropout), "_rnd": rnd,
              "F": _CentringRoundingF(lambda shape: direction[0] * torch.from_numpy(
                  np.asarray(signs_of[0].choice([-1.0, 1.0], size=tuple(shape)))))}
        m.forward = types.MethodType(compile_source("\n".join(lines), ns, "forward"), m)
        x, ys = inst.torch_batch(call)
        m.dropout.masks = inst.dropout_masks(call_seed(p, call))
        with torch.set_grad_enabled(grads), _quiet():
            loss = tloss(m(x), *ys)
            if grads:
                loss.backward()
        return float(loss), {n: q.grad.detach().to(torch.float64).numpy() for n, q in m.named_parameters()
                             if q.grad is not None}

    patterns = [(seed, sign) for seed in (2, 3, 4) for sign in (1.0, -1.0)]  # each pattern, then its opposite
    try:
        if not grads:
            d = 0.0
            for pattern, sign in patterns:
                d = max(d, abs(run(sign, pattern)[0] - float(tl.detach())))
            return _ERROR_FACTOR * d if np.isfinite(d) else 0.0
        _, base = run(0.0, 0)
        devs = {}
        for pattern, sign in patterns:
            for n, g in run(sign, pattern)[1].items():
                if n in base:
                    devs[n] = np.maximum(devs.get(n, 0.0), np.abs(g - base[n]))
        return {n: _ERROR_FACTOR * np.where(np.isfinite(dv), dv, 0.0) for n, dv in devs.items()}
    except Exception:  # noqa: BLE001
        return {} if grads else 0.0


# How far Lucid's rounding may exceed PyTorch's measured float32 error: its
# reductions sum 16 lanes sequentially where PyTorch sums pairwise, which on
# sums of 10^3..10^4 terms is several times less accurate (seen: 8x on a
# gradient that is a cancellation residue times a count of 480).
_ERROR_FACTOR = 16


def _to_torch_state(sd):
    def conv(v):
        if isinstance(v, lucid.Tensor):
            return torch.from_numpy(_arr(v))
        if isinstance(v, np.ndarray):
            return torch.from_numpy(v.copy())
        return v
    return {"state": {k: {kk: conv(vv) for kk, vv in st.items()} for k, st in sd["state"].items()},
            "param_groups": [dict(g) for g in sd["param_groups"]]}


def _single_tensor(topt):
    """PyTorch's reference implementation for every group. Lucid has one
    update rule whatever `foreach`/`fused` say (flags that choose among
    PyTorch's implementations, which round differently: ASGD's foreach path
    computes eta in float32, the fused Adam kernel orders its arithmetic
    differently). The single-tensor path is PyTorch's default on the CPU."""
    for g in topt.param_groups:
        if "foreach" in g:
            g["foreach"] = False
        if "fused" in g:
            g["fused"] = None


def _keep_scalar_dtypes(topt, sd):
    """torch.optim's load_state_dict casts every state tensor but `step` to
    the parameter's dtype; a fresh torch run keeps its 0-d scalar state
    (NAdam's mu_product, ASGD's eta and mu) in the scalar dtype, as Lucid's
    state_dict reports it. Restore those dtypes."""
    params = [p for g in topt.param_groups for p in g["params"]]
    for k, st in sd["state"].items():
        tst = topt.state[params[int(k)]]
        for name, v in st.items():
            v = _arr(v) if isinstance(v, lucid.Tensor) else v
            if isinstance(v, np.ndarray) and v.ndim == 0 and name in tst and torch.is_tensor(tst[name]):
                tst[name] = tst[name].to(getattr(torch, v.dtype.name))


def _float64_twin_optimizer(p, tm, kw, sd, inv_scale=1.0):
    """The same PyTorch step in float64 from the same parameters, gradients
    (unscaled by a GradScaler's 1/scale) and state (None where it cannot be
    built; a step the scaler skips gives no slack): its distance from the float32
    step is PyTorch's own rounding on this step, which an ill-conditioned
    update (g + wd * w cancelling, then divided by sqrt(v) ~ eps) amplifies
    far beyond a few ulps of the parameter."""
    try:
        with _quiet():
            tm64 = copy.deepcopy(tm).to(torch.float64)
            for q64, q in zip(tm64.parameters(), tm.parameters()):
                q64.grad = None if q.grad is None else q.grad.detach().to(torch.float64) * inv_scale  # unscaled
            to64 = make_optimizer(p, tm64, lib="torch", kwargs=kw)
            to64.load_state_dict(_to_torch_state(sd))
            _single_tensor(to64)
        return tm64, to64
    except Exception:  # noqa: BLE001
        return None


def _twin_slack(twin64, tm, to):
    """Twice |float32 step - float64 step| per parameter name and per state
    label (empty without a twin)."""
    if twin64 is None:
        return {}
    tm64, to64 = twin64
    try:
        with _quiet():
            to64.step()
    except Exception:  # noqa: BLE001
        return {}

    def gap(a, b):
        if a is None or b is None or np.shape(a) != np.shape(b):
            return None
        d = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
        return 2.0 * np.where(np.isfinite(d), d, 0.0)

    t64 = dict(tm64.named_parameters())
    out = {n: gap(_arr(q), _arr(t64[n])) for n, q in tm.named_parameters()}
    s32, s64 = state_items(to), state_items(to64)
    out.update({k: gap(v, s64.get(k)) for k, v in s32.items()})
    return out


def _reciprocal(scale):
    """A GradScaler's 1/scale as IEEE (and PyTorch) has it: inf for a scale
    backed off to 0 (graph soak seed 3026562)."""
    return 1.0 / scale if scale else math.inf


def run_torch_optim(inst: Instance):
    """One eager step of the Lucid optimizer (with its GradScaler) vs
    torch.optim from the same parameters, gradients and state, every step."""
    p = inst.program
    led = Ledger("torch_optim")
    if p.train.optimizer == "LBFGS":
        raise Skip("LBFGS needs a closure (test_optim covers it)")
    ml = inst.lucid_model()
    loss_l = inst.lucid_loss()
    ol = make_optimizer(p, ml)
    sl = make_scheduler(p, ol)
    scaler = make_scaler(p)
    rtol = 1e-12 if p.dtype == "float64" else 2.0 ** -20
    for s in range(p.train.steps):
        where = f"step {s}"
        if s:
            apply_edits(p, s, ol, ml)
        ol.zero_grad(p.train.zero_mode(s))
        call = s * p.train.micro
        x, ys = inst.lucid_batch(call)
        lucid.manual_seed(call_seed(p, call))
        try:
            loss = loss_l(ml(x), *ys)
            (loss if scaler is None else scaler.scale(loss)).backward()
        except Exception as e:  # noqa: BLE001
            raise Skip(f"eager fails: {e}") from None
        # PyTorch from the same point
        tm = _torch_model_like(inst, ml)
        for (n, tp), (_, lp) in zip(tm.named_parameters(), ml.named_parameters()):
            if lp.grad is not None:
                g = _arr(lp.grad)
                if p.train.optimizer == "SparseAdam":
                    # Lucid's SparseAdam skips the entries whose gradient is zero
                    # once the scaler has unscaled it (an underflow drops one)
                    unscaled = g if scaler is None else g * np.float32(_reciprocal(scaler.get_scale()))
                    tp.grad = torch.from_numpy(np.where(unscaled != 0, g, 0).astype(g.dtype)).to_sparse()
                else:
                    tp.grad = torch.from_numpy(g)
        try:
            with _quiet():
                kw = {k: v for k, v in p.train.opt_kwargs.items() if k not in ("foreach", "fused")}
                to = make_optimizer(p, tm, lib="torch", kwargs=kw)
                sd = ol.state_dict()
                to.load_state_dict(_to_torch_state(sd))
                _keep_scalar_dtypes(to, sd)
                _single_tensor(to)
        except Exception as e:  # noqa: BLE001
            led.error(where + " (loading Lucid's state_dict into torch.optim)", e)
            return led
        tparams = [q for g in to.param_groups for q in g["params"]]
        tscaler = None
        if scaler is not None:
            tscaler = torch.amp.GradScaler("cpu", **p.train.scaler)
            tscaler.load_state_dict(scaler.state_dict())
            tscaler.scale(torch.zeros(()))  # creates its scale from the loaded one
        scale_before = 1.0 if tscaler is None else float(tscaler.get_scale())
        inv_scale = _reciprocal(scale_before)
        twin64 = _float64_twin_optimizer(p, tm, kw, sd, inv_scale) if p.dtype == "float32" else None
        # p - update rounds relative to the larger of the two (the update
        # may cancel most of p): the parameter before the step is the scale
        before = {n: _magnitude(lp) for n, lp in ml.named_parameters()}
        state_before = {k: _magnitude(v) for k, v in state_items(ol).items()}
        try:
            if scaler is not None:
                scaler.step(ol)
                scaler.update()
            else:
                ol.step()
        except Exception as e:  # noqa: BLE001
            led.error(where, e)
            return led
        try:
            with _quiet():
                if tscaler is not None:
                    tscaler.step(to)
                    tscaler.update()
                else:
                    to.step()
        except Exception as e:  # noqa: BLE001
            # e.g. RMSprop's momentum raised from 0 by an edit: PyTorch made no
            # momentum_buffer at the first step and fails; Lucid starts one.
            raise Skip(f"PyTorch cannot take this step: {e!r}") from None
        tp_ = dict(tm.named_parameters())
        skipped = tscaler is not None and float(tscaler.get_scale()) < scale_before  # backed off: no step
        slack = {} if skipped else _twin_slack(twin64, tm, to)
        for n, lp in ml.named_parameters():
            led.close(where, f"param {n}", lp, tp_[n], rtol, slack=slack.get(n), scale=before[n])
        ts = state_items(to)
        ls = state_items(ol)
        # a moment is a blend of its old value and the gradient (PyTorch lerps,
        # Lucid multiplies and adds): its rounding is relative to both
        gscale = {i: float(np.abs(_arr(q.grad.to_dense())).max()) if q.grad is not None and q.grad.numel() else 0.0
                  for i, q in enumerate(tparams)}
        for k in sorted(set(ts) | set(ls)):
            if k.startswith("group"):
                continue
            i = int(k[len("state["):k.index("]")])
            led.close(where, k, ls.get(k), ts.get(k), rtol, slack=slack.get(k),
                      scale=max(gscale.get(i, 0.0), state_before.get(k, 0.0)))
        if scaler is not None:
            led.close(where, "scale", np.array(scaler.get_scale()), np.array(tscaler.get_scale()), 0.0)
        if sl is not None:
            sl.step()
        if led.found:
            return led
    return led


RUNNERS = {
    "torch": run_torch,
    "torch_optim": run_torch_optim,
    "make_step": run_make_step,
    "fused_step": run_fused_step,
    "compile_optimizer": run_compile_optimizer,
    "accumulate": lambda inst: run_make_step(inst, accumulate_compiled_opt=True),
    "train_step": run_train_step,
}


def check(program, oracles=None):
    """Runs the oracles on `program`: {oracle: Ledger | "skip: why"}.
    Raises Invalid when the program itself is ill-formed."""
    inst = Instance(program)
    out = {}
    for name in oracles or ORACLES:
        try:
            with _quiet():
                out[name] = RUNNERS[name](inst)
        except Skip as e:
            out[name] = f"skip: {e}"
        except Invalid:
            raise
        except Exception as e:  # noqa: BLE001
            # a failure of the harness on one oracle is itself reported
            led = Ledger(name)
            led.found.append(Mismatch(name, "harness", "error", "".join(
                traceback.format_exception(type(e), e, e.__traceback__)[-3:]).strip()))
            out[name] = led
    return out
