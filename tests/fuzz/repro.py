"""A program and one oracle printed as a plain, runnable pytest function.

The text imports only lucid, torch and NumPy (not this package): it is what
goes into tests/test_fuzz_regressions.py, and what the soak prints for each
shrunk mismatch. The model is a factory over the library (``L``, ``F``,
``nn``), so the same text builds the Lucid model and its PyTorch twin.
"""
from __future__ import annotations

import sys
import textwrap

import numpy as np

from .program import LOSSES, Program
from .runtime import Instance, call_seed, dropout_nodes

HEADER = '''\
import numpy as np
import pytest

import lucid
import lucid.nn as lnn
import lucid.nn.functional as LF
import lucid.optim as loptim
from lucid.amp import GradScaler
from lucid.compile import compile_optimizer, fused_step, make_step, train_step
from lucid.nn.utils import clip_grad_norm_, clip_grad_value_

torch = pytest.importorskip("torch")
inf, nan = np.inf, np.nan


class ExactTorchF:
    """torch.nn.functional, hardsigmoid computed exactly (PyTorch's float64
    backward multiplies by float32(1/6); Lucid's by 1/6)."""

    def __getattr__(self, name):
        import torch.nn.functional as TF
        return getattr(TF, name)

    @staticmethod
    def hardsigmoid(x, inplace=False):
        return torch.where((x > -3) & (x < 3), (x + 3) / 6, torch.clamp(x.detach() + 3, 0, 6) / 6)


def same(got, want, what):
    """Compiled and eager Lucid on the CPU: the same bits."""
    g = None if got is None else np.asarray(got.detach().numpy() if hasattr(got, "detach") else got)
    w = None if want is None else np.asarray(want.detach().numpy() if hasattr(want, "detach") else want)
    assert (g is None) == (w is None), f"{what}: {g} vs {w}"
    if g is not None:
        np.testing.assert_array_equal(g, w, err_msg=what)


def close(got, want, rtol, what):
    """Lucid vs PyTorch: |got - want| <= rtol * max|want| (norm-wise)."""
    assert (got is None) == (want is None), f"{what}: {got} vs {want}"
    if got is None:
        return
    g, w = (np.asarray(t.detach().numpy() if hasattr(t, "detach") else t, dtype=np.float64) for t in (got, want))
    scale = np.abs(w[np.isfinite(w)]).max() if np.isfinite(w).any() else 0.0
    np.testing.assert_allclose(g, w, rtol=0, atol=rtol * scale, err_msg=what)
'''


def fmt_array(a):
    a = np.asarray(a)
    if a.ndim == 0:
        body = repr(a.item()) if a.dtype.kind != "f" else np.format_float_positional(a, unique=True, trim="-")
        if a.dtype.kind == "f" and not np.isfinite(a):
            body = "inf" if a > 0 else ("-inf" if a < 0 else "nan")
    else:
        body = np.array2string(a, separator=", ", floatmode="unique", threshold=sys.maxsize, max_line_width=100,
                               formatter={"bool": lambda v: "True" if v else "False"})
        body = body.replace("\n", "\n" + " " * 12)
    dt = "bool_" if a.dtype == np.bool_ else a.dtype.name
    return f"np.array({body}, dtype=np.{dt})"


def _model_factory(inst: Instance, name, extras=()):
    p = inst.program
    lines = [f"def make_model_{name}(L, F, nn, drop):",
             "    class Model(nn.Module):",
             "        def __init__(self):",
             "            super().__init__()"]
    for lf in p.leaves:
        v = fmt_array(inst.leaf_values[lf.name])
        if lf.kind == "param":
            lines.append(f"            self.{lf.name} = nn.Parameter(L.tensor({v}))")
        elif lf.kind == "frozen":
            lines.append(f"            self.{lf.name} = nn.Parameter(L.tensor({v}), requires_grad=False)")
        else:
            lines.append(f"            self.register_buffer({lf.name!r}, L.tensor({v}), persistent=False)")
    if not p.leaves:
        lines.append("            pass")
    lines.append("")
    lines.append(textwrap.indent(p.forward_source(extras=extras), "        "))
    lines.append("    return Model()")
    return "\n".join(lines)


def _loss(p: Program, name):
    kind = LOSSES[p.loss]
    args = "out" + ("" if kind.target is None else ", y")
    return (f"def loss_fn_{name}(L, F):\n    def loss_fn({args}):\n"
            f"        return {kind.expr.format(**p.loss_attrs)}\n    return loss_fn")


def _batches(inst: Instance, calls):
    rows = []
    for c in range(calls):
        x, ys = inst.batches[c]
        rows.append("        (" + ", ".join(fmt_array(a) for a in (x,) + tuple(ys)) + ",),")
    return "    batches = [\n" + "\n".join(rows) + "\n    ]"


def _groups_expr(p: Program, model, t1=None):
    from .oracles import _groups

    class _Named:
        def __init__(self, n):
            self.n = n

        def __repr__(self):
            return f"{model}.{self.n}"
    groups = _groups(p, {lf.name: _Named(lf.name) for lf in p.params()})
    if p.train.optimizer == "LBFGS" and len(groups) > 1:
        groups = [{"params": groups[0]["params"] + groups[1]["params"]}]
    return repr(groups)


def _opt_ctor(p, model, lib, name=None, kwargs=None):
    name = name or p.train.optimizer
    kwargs = p.train.opt_kwargs if kwargs is None else kwargs
    kw = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"{lib}.{name}({_groups_expr(p, model)}{', ' + kw if kw else ''})"


def _edit_lines(p: Program, opts, models, indent):
    out = []
    for s in sorted(p.train.edits):
        body = []
        for e in p.train.edits[s]:
            for o, m in zip(opts, models):
                if e.kind == "hyper":
                    body.append(f"g = {o}.param_groups[min({e.group}, len({o}.param_groups) - 1)]")
                    body.append(f"if {e.key!r} in g:\n    g[{e.key!r}] = {e.value!r}")
                elif e.kind == "scale_lr":
                    body.append(f"for g in {o}.param_groups:\n    g['lr'] = g['lr'] * {e.value!r}")
                elif e.kind == "param_data":
                    body.append(f"{m}.{e.key}.data.mul_({e.value!r})")
                elif e.kind == "param_rebind":
                    body.append(f"{m}.{e.key}.data = {m}.{e.key}.data * {e.value!r}")
        if body:
            out.append(f"if s == {s}:")
            out.append(textwrap.indent("\n".join(body), "    "))
    return textwrap.indent("\n".join(out), indent) if out else None


def _sched(p, opt, lib):
    if p.train.scheduler is None:
        return None
    name, kw = p.train.scheduler
    kw = dict(kw)
    cycle = _cycle_momentum(name, _defaults(p))
    if cycle is not None:
        kw["cycle_momentum"] = cycle
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    return f"{lib}.lr_scheduler.{name}({opt}, {args})"


def _cycle_momentum(name, defaults):
    """False where OneCycleLR/CyclicLR cannot cycle the optimizer's momentum."""
    if name not in ("OneCycleLR", "CyclicLR"):
        return None
    if "momentum" not in defaults and "betas" not in defaults:
        return False
    if name == "CyclicLR" and "momentum" not in defaults:
        return False
    if "momentum" in defaults and not defaults.get("momentum"):
        return False
    return None


def _defaults(p):
    import inspect

    import lucid.optim as loptim
    sig = inspect.signature(getattr(loptim, p.train.optimizer).__init__)
    d = {k: v.default for k, v in sig.parameters.items() if v.default is not inspect.Parameter.empty}
    d.update(p.train.opt_kwargs)
    return d


def _seed_line(p, inst, indent, call_expr="call"):
    if not inst.drops:
        return None
    return f"{indent}lucid.manual_seed(SEEDS[{call_expr}])"


def render(program: Program, oracle: str, name: str, note: str = "") -> str:
    """The test function (with its model factory) for `oracle` on `program`."""
    inst = Instance(program)
    p = program
    body = {
        "make_step": _body_make_step, "accumulate": _body_make_step, "fused_step": _body_fused,
        "compile_optimizer": _body_compile_optimizer, "torch": _body_torch, "torch_optim": _body_torch_optim,
        "train_step": _body_train_step,
    }[oracle](inst, oracle)
    seeds = ""
    if inst.drops:
        seeds = f"    SEEDS = {[call_seed(p, c) for c in range(p.calls())]!r}\n"
    doc = f'    """{note}"""\n' if note else ""
    extras = p.step_model_extras() if oracle == "train_step" else ()
    return "\n\n\n".join([
        _model_factory(inst, name, extras),
        _loss(p, name),
        f"def test_{name}():\n{doc}"
        f"    make_model, make_loss = make_model_{name}, loss_fn_{name}\n"
        f"{_batches(inst, p.calls())}\n{seeds}{body}",
    ]) + "\n"


def standalone(program, oracle, name, note=""):
    return HEADER + "\n\n" + render(program, oracle, name, note) + f"\n\nif __name__ == \"__main__\":\n    test_{name}()\n"


# ------------------------------------------------------------------ bodies
def _body_make_step(inst, oracle):
    from .oracles import _eager_update_kwargs, _eager_update_name

    p = inst.program
    name, kw = _eager_update_name(p), _eager_update_kwargs(p)
    wrap = "compile_optimizer(" if oracle == "accumulate" else ""
    lines = [
        "    eager = make_model(lucid, LF, lnn, LF.dropout)",
        "    compiled = make_model(lucid, LF, lnn, LF.dropout)",
        "    loss_fn = make_loss(lucid, LF)",
        "    step = make_step(compiled, make_loss(lucid, LF))",
        f"    opt_e = {_opt_ctor(p, 'eager', 'loptim', name, kw)}",
        f"    opt_c = {wrap}{_opt_ctor(p, 'compiled', 'loptim', name, kw)}{')' if wrap else ''}",
        "    call = 0",
        f"    for s, set_to_none in enumerate({[p.train.zero_mode(s) for s in range(p.train.steps)]!r}):",
    ]
    ed = _edit_lines(p, ["opt_e", "opt_c"], ["eager", "compiled"], "        ")
    if ed:
        lines.append(ed)
    lines += [
        "        eager.zero_grad(set_to_none)",
        "        compiled.zero_grad(set_to_none)",
        f"        for _ in range({p.train.micro}):",
        "            x, *ys = [lucid.tensor(a) for a in batches[call]]",
    ]
    sl = _seed_line(p, inst, "            ")
    if sl:
        lines.append(sl)
    lines.append("            want = loss_fn(eager(x), *ys)")
    lines.append("            want.backward()")
    if sl:
        lines.append(sl)
    lines += [
        "            got = step(x, *ys)",
        "            same(got, want, f'loss, call {call}')",
        "            for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):",
        "                same(b.grad, a.grad, f'grad {n}, call {call}')",
        "            call += 1",
        "        opt_e.step()",
        "        opt_c.step()",
        "        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):",
        "            same(b, a, f'{n} after step {s}')",
    ]
    return "\n".join(lines)


def _state_check(indent):
    return "\n".join([
        f"{indent}se, sc = opt_e.state_dict()['state'], opt_c.state_dict()['state']",
        f"{indent}assert se.keys() == sc.keys()",
        f"{indent}for i in se:",
        f"{indent}    assert se[i].keys() == sc[i].keys()",
        f"{indent}    for k in se[i]:",
        f"{indent}        same(sc[i][k], se[i][k], f'state[{{i}}][{{k}}] after step {{s}}')",
    ])


def _body_fused(inst, oracle):
    p = inst.program
    sc = p.train.scaler
    lines = [
        "    eager = make_model(lucid, LF, lnn, LF.dropout)",
        "    compiled = make_model(lucid, LF, lnn, LF.dropout)",
        "    loss_fn = make_loss(lucid, LF)",
        f"    opt_e = {_opt_ctor(p, 'eager', 'loptim')}",
        f"    opt_c = {_opt_ctor(p, 'compiled', 'loptim')}",
    ]
    if sc:
        kw = ", ".join(f"{k}={v!r}" for k, v in sc.items())
        lines += [f"    scaler_e, scaler_c = GradScaler({kw}), GradScaler({kw})",
                  "    step = fused_step(compiled, make_loss(lucid, LF), opt_c, grad_scaler=scaler_c)"]
    else:
        lines.append("    step = fused_step(compiled, make_loss(lucid, LF), opt_c)")
    sched_e, sched_c = _sched(p, "opt_e", "loptim"), _sched(p, "opt_c", "loptim")
    if sched_e:
        lines.append(f"    sched_e, sched_c = {sched_e}, {sched_c}")
    lines.append(f"    for s, set_to_none in enumerate({[p.train.zero_mode(s) for s in range(p.train.steps)]!r}):")
    ed = _edit_lines(p, ["opt_e", "opt_c"], ["eager", "compiled"], "        ")
    if ed:
        lines.append(ed)
    lines.append(f"        x, *ys = [lucid.tensor(a) for a in batches[s * {p.train.micro}]]")
    sl = _seed_line(p, inst, "        ", f"s * {p.train.micro}")
    lines.append("        opt_e.zero_grad(set_to_none)")
    if sl:
        lines.append(sl)
    lines.append("        want = loss_fn(eager(x), *ys)")
    if sc:
        lines += ["        scaler_e.scale(want).backward()", "        scaler_e.step(opt_e)", "        scaler_e.update()"]
    else:
        lines += ["        want.backward()", "        opt_e.step()"]
    if sl:
        lines.append(sl)
    lines += [
        "        got = step(x, *ys)",
        "        same(got, want, f'loss, step {s}')",
        "        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):",
        "            same(b, a, f'{n} after step {s}')",
        _state_check("        "),
    ]
    if sc:
        lines.append("        assert scaler_c.get_scale() == scaler_e.get_scale()")
    if sched_e:
        lines += ["        sched_e.step()", "        sched_c.step()"]
    return "\n".join(lines)


def _body_compile_optimizer(inst, oracle):
    p = inst.program
    if p.train.optimizer == "LBFGS":
        return _body_lbfgs(inst)
    sc = p.train.scaler
    lines = [
        "    eager = make_model(lucid, LF, lnn, LF.dropout)",
        "    compiled = make_model(lucid, LF, lnn, LF.dropout)",
        "    loss_fn = make_loss(lucid, LF)",
        f"    opt_e = {_opt_ctor(p, 'eager', 'loptim')}",
        f"    opt_c = compile_optimizer({_opt_ctor(p, 'compiled', 'loptim')})",
    ]
    if sc:
        kw = ", ".join(f"{k}={v!r}" for k, v in sc.items())
        lines.append(f"    scaler_e, scaler_c = GradScaler({kw}), GradScaler({kw})")
    sched_e, sched_c = _sched(p, "opt_e", "loptim"), _sched(p, "opt_c.optimizer", "loptim")
    if sched_e:
        lines.append(f"    sched_e, sched_c = {sched_e}, {sched_c}")
    lines.append(f"    for s, set_to_none in enumerate({[p.train.zero_mode(s) for s in range(p.train.steps)]!r}):")
    ed = _edit_lines(p, ["opt_e", "opt_c"], ["eager", "compiled"], "        ")
    if ed:
        lines.append(ed)
    lines += ["        opt_e.zero_grad(set_to_none)", "        opt_c.zero_grad(set_to_none)",
              f"        for call in range(s * {p.train.micro}, (s + 1) * {p.train.micro}):",
              "            x, *ys = [lucid.tensor(a) for a in batches[call]]"]
    for m, scl in (("eager", "scaler_e"), ("compiled", "scaler_c")):
        sl = _seed_line(p, inst, "            ")
        if sl:
            lines.append(sl)
        lines.append(f"            {scl}.scale(loss_fn({m}(x), *ys)).backward()" if sc else
                     f"            loss_fn({m}(x), *ys).backward()")
    if sc:
        lines += ["        scaler_e.step(opt_e)", "        scaler_e.update()",
                  "        scaler_c.step(opt_c)", "        scaler_c.update()"]
    else:
        lines += ["        opt_e.step()", "        opt_c.step()"]
    lines += [
        "        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):",
        "            same(b, a, f'{n} after step {s}')",
        _state_check("        "),
    ]
    if sched_e:
        lines += ["        sched_e.step()", "        sched_c.step()"]
    return "\n".join(lines)


def _body_lbfgs(inst):
    raise NotImplementedError("LBFGS reproductions are written by hand")


def _torch_tol(inst):
    from .oracles import Tolerance
    return Tolerance.rtol(inst)


def _body_torch(inst, oracle):
    from .oracles import _eager_update_kwargs, _eager_update_name

    p = inst.program
    name, kw = _eager_update_name(p), _eager_update_kwargs(p)
    drop = "masks.pop(0)"
    lines = [
        "    import torch.nn as tnn",
        "    TF = ExactTorchF()",
        "    model = make_model(lucid, LF, lnn, LF.dropout)",
        "    loss_fn, tloss_fn = make_loss(lucid, LF), make_loss(torch, TF)",
        f"    opt = {_opt_ctor(p, 'model', 'loptim', name, kw)}",
        "    masks = []",
        "    call = 0",
        f"    for s, set_to_none in enumerate({[p.train.zero_mode(s) for s in range(p.train.steps)]!r}):",
    ]
    ed = _edit_lines(p, ["opt"], ["model"], "        ")
    if ed:
        lines.append(ed)
    lines += [
        "        model.zero_grad(set_to_none)",
        f"        twin = make_model(torch, TF, tnn, lambda a, p: a * {drop})",
        "        with torch.no_grad():",
        "            for a, b in zip(twin.parameters(), model.parameters()):",
        "                a.copy_(torch.from_numpy(b.detach().numpy()))",
        f"        for _ in range({p.train.micro}):",
        "            x, *ys = [lucid.tensor(a) for a in batches[call]]",
        "            tx, *tys = [torch.from_numpy(a) for a in batches[call]]",
    ]
    if inst.drops:
        drops = [(inst.shapes[n], inst.dtypes[n], q) for n, q in dropout_nodes(p)]
        lines += [
            "            lucid.manual_seed(SEEDS[call])  # the masks Lucid's dropouts draw, for the twin",
            f"            masks[:] = [torch.from_numpy(LF.dropout(lucid.ones(list(shape), dtype=getattr(lucid, dt)), q)"
            f".numpy()) for shape, dt, q in {drops!r}]",
            "            lucid.manual_seed(SEEDS[call])",
        ]
    lines += [
        "            got = loss_fn(model(x), *ys)",
        "            got.backward()",
        "            want = tloss_fn(twin(tx), *tys)",
        "            want.backward()",
        "            for q in twin.parameters():  # each its own .grad (PyTorch may share one between leaves)",
        "                q.grad = None if q.grad is None else q.grad.clone()",
        f"            close(got, want, {_torch_tol(inst)!r}, f'loss, call {{call}}')",
        "            for (n, a), b in zip(model.named_parameters(), twin.parameters()):",
        f"                close(a.grad, b.grad, {_torch_tol(inst)!r}, f'grad {{n}}, call {{call}}')",
        "            call += 1",
        "        opt.step()",
    ]
    return "\n".join(lines)


def _single_tensor_kwargs(p):
    return {k: v for k, v in p.train.opt_kwargs.items() if k not in ("foreach", "fused")}


def _body_torch_optim(inst, oracle):
    p = inst.program
    sc = p.train.scaler
    rtol = 1e-12 if p.dtype == "float64" else 2.0 ** -20
    lines = [
        "    import torch.nn as tnn",
        "    import torch.nn.functional as TF",
        "    model = make_model(lucid, LF, lnn, LF.dropout)",
        "    loss_fn = make_loss(lucid, LF)",
        f"    opt = {_opt_ctor(p, 'model', 'loptim')}",
    ]
    if sc:
        kw = ", ".join(f"{k}={v!r}" for k, v in sc.items())
        lines.append(f"    scaler = GradScaler({kw})")
    sched = _sched(p, "opt", "loptim")
    if sched:
        lines.append(f"    sched = {sched}")
    lines.append(f"    for s, set_to_none in enumerate({[p.train.zero_mode(s) for s in range(p.train.steps)]!r}):")
    ed = _edit_lines(p, ["opt"], ["model"], "        ")
    if ed:
        lines.append(ed)
    lines += ["        opt.zero_grad(set_to_none)",
              f"        x, *ys = [lucid.tensor(a) for a in batches[s * {p.train.micro}]]"]
    sl = _seed_line(p, inst, "        ", f"s * {p.train.micro}")
    if sl:
        lines.append(sl)
    lines.append("        loss = loss_fn(model(x), *ys)")
    lines.append("        scaler.scale(loss).backward()" if sc else "        loss.backward()")
    grad = "torch.from_numpy(b.grad.numpy().copy())"
    if p.train.optimizer == "SparseAdam":  # the entries that unscale to non-zero
        kept = ("b.grad.numpy() * np.float32(1 / scaler.get_scale() if scaler.get_scale() else np.inf)" if sc
                else "b.grad.numpy()")
        grad = f"torch.from_numpy(np.where({kept} != 0, b.grad.numpy(), 0).astype(b.grad.numpy().dtype)).to_sparse()"
    lines += [
        "        # PyTorch takes the same parameters, gradients and state",
        "        twin = make_model(torch, TF, tnn, None)",
        "        with torch.no_grad():",
        "            for a, b in zip(twin.parameters(), model.parameters()):",
        "                a.copy_(torch.from_numpy(b.detach().numpy()))",
        f"                a.grad = None if b.grad is None else {grad}",
        f"        topt = {_opt_ctor(p, 'twin', 'torch.optim', kwargs=_single_tensor_kwargs(p))}",
        "        sd = opt.state_dict()",
        "        topt.load_state_dict({'param_groups': sd['param_groups'], 'state': {i: {k: torch.from_numpy(np.array(v)) "
        "for k, v in st.items()} for i, st in sd['state'].items()}})",
        "        tparams = [q for g in topt.param_groups for q in g['params']]",
        "        for i, st in sd['state'].items():  # 0-d state keeps its dtype, as in a fresh PyTorch run",
        "            for k, v in st.items():",
        "                if np.ndim(v) == 0:",
        "                    topt.state[tparams[int(i)]][k] = torch.tensor(np.array(v))",
        "        for g in topt.param_groups:  # PyTorch's single-tensor implementation (its CPU default)",
        "            g['foreach'] = False",
        "            if 'fused' in g:",
        "                g['fused'] = None",
    ]
    if sc:
        kw = ", ".join(f"{k}={v!r}" for k, v in sc.items())
        lines += [f"        tscaler = torch.amp.GradScaler('cpu', {kw})",
                  "        tscaler.load_state_dict(scaler.state_dict())",
                  "        tscaler.scale(torch.zeros(()))  # creates its scale from the loaded one",
                  "        scaler.step(opt)", "        scaler.update()", "        tscaler.step(topt)", "        tscaler.update()",
                  "        assert scaler.get_scale() == tscaler.get_scale()"]
    else:
        lines += ["        opt.step()", "        topt.step()"]
    lines += [
        "        for (n, a), b in zip(model.named_parameters(), twin.parameters()):",
        f"            close(a, b, {rtol!r}, f'{{n}} after step {{s}}')",
        "        for i, st in opt.state_dict()['state'].items():",
        "            for k, v in st.items():",
        f"                close(lucid.tensor(np.array(v)), topt.state[tparams[int(i)]][k], {rtol!r}, f'state[{{i}}][{{k}}]')",
    ]
    if sched:
        lines.append("        sched.step()")
    return "\n".join(lines)


def _body_train_step(inst, oracle):
    """The eager loop of tests/fuzz/oracles.py eager_train_step, written out."""
    p = inst.program
    spec, sc, k = p.train.step, p.train.scaler, p.train.micro
    rows = []
    for c in range(p.calls()):
        d = inst.step_inputs(c)
        rows.append("        [" + ", ".join(fmt_array(d[n]) for n in spec.inputs) + "],")
    lines = ["    inputs = [  # " + ", ".join(spec.inputs) + " of each call", *rows, "    ]",
             "    eager = make_model(lucid, LF, lnn, LF.dropout)",
             "    compiled = make_model(lucid, LF, lnn, LF.dropout)",
             "    loss_fn = make_loss(lucid, LF)", ""]
    if spec.api == "fused_step":
        lines.append("    fn_e = lambda x, *ys: loss_fn(eager(x), *ys)  # noqa: E731")
    else:
        lines += ["    def make_fn(model):",
                  textwrap.indent(p.step_source(), "        "),
                  "        return step_fn", "",
                  "    fn_e, fn_c = make_fn(eager), make_fn(compiled)"]
    lines += [f"    opt_e = {_opt_ctor(p, 'eager', 'loptim')}",
              f"    opt_c = {_opt_ctor(p, 'compiled', 'loptim')}"]
    if sc:
        kw = ", ".join(f"{key}={v!r}" for key, v in sc.items())
        lines.append(f"    scaler_e, scaler_c = GradScaler({kw}), GradScaler({kw})")
    else:
        lines.append("    scaler_e = scaler_c = None")
    from .oracles import _clip_kwargs
    kw = ", ".join(f"{key}={v!r}" for key, v in {**_clip_kwargs(spec), "accumulate": k}.items())
    if spec.api == "fused_step":
        lines.append(f"    step = fused_step(compiled, make_loss(lucid, LF), opt_c, scaler_c, {kw})")
    else:
        lines.append(f"    step = train_step(fn_c, opt_c, scaler_c, {kw})")
    sched_e, sched_c = _sched(p, "opt_e", "loptim"), _sched(p, "opt_c", "loptim")
    if sched_e:
        lines.append(f"    sched_e, sched_c = {sched_e}, {sched_c}")
    lines.append(f"    for s in range({p.train.steps}):")
    ed = _edit_lines(p, ["opt_e", "opt_c"], ["eager", "compiled"], "        ")
    if ed:
        lines.append(ed)
    sl = _seed_line(p, inst, "        ", f"s * {k}")
    lines += [f"        micro = [[lucid.tensor(a) for a in inputs[s * {k} + m]] for m in range({k})]",
              "        opt_e.zero_grad(True)"]
    if sl:
        lines.append(sl)
    lines += ["        losses, extras = [], []",
              "        for args in micro:",
              "            out = fn_e(*args)",
              "            loss, rest = (out[0], out[1:]) if isinstance(out, (tuple, list)) else (out, ())",
              f"            root = loss / {k}" if k > 1 else "            root = loss",
              "            (scaler_e.scale(root) if scaler_e else root).backward()",
              "            losses.append(loss.detach())",
              "            extras.append([t.detach().clone() for t in rest])"]
    if k > 1:
        lines += ["        want = lucid.stack(losses, 0).mean()",
                  "        extras = [lucid.stack([e[j] for e in extras], 0) for j in range(len(extras[0]))]"]
    else:
        lines += ["        want, extras = losses[0], extras[0]"]
    if sc:
        lines.append("        scaler_e.unscale_(opt_e)")
    params = "[q for g in opt_e.param_groups for q in g['params']]"
    if spec.clip == "norm":
        lines.append(f"        norm_e = clip_grad_norm_({params}, {spec.max_norm!r}, {spec.norm_type!r})")
    elif spec.clip == "value":
        lines.append(f"        clip_grad_value_({params}, {spec.max_norm!r})")
    lines += ["        scaler_e.step(opt_e)", "        scaler_e.update()"] if sc else ["        opt_e.step()"]
    if sl:
        lines.append(sl)
    if k > 1:
        lines.append(f"        got = step(*[lucid.tensor(np.stack([inputs[s * {k} + m][i] for m in range({k})])) "
                     f"for i in range({len(spec.inputs)})])")
    else:
        lines.append("        got = step(*[lucid.tensor(a) for a in inputs[s]])")
    if spec.clip == "norm":
        lines += ["        got, norm_c = got", "        same(norm_c, norm_e, f'norm, step {s}')"]
    if p.step_extras():
        lines += [f"        assert isinstance(got, {'list' if spec.as_list else 'tuple'})",
                  "        got, *extras_c = got",
                  "        assert len(extras_c) == len(extras)",
                  "        for j, (a, b) in enumerate(zip(extras_c, extras)):",
                  "            same(a, b, f'extra {j}, step {s}')"]
    lines += ["        same(got, want, f'loss, step {s}')",
              "        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):",
              "            same(b, a, f'{n} after step {s}')",
              _state_check("        ")]
    if sc:
        lines.append("        assert scaler_c.get_scale() == scaler_e.get_scale()")
    if sched_e:
        lines += ["        sched_e.step()", "        sched_c.step()"]
    return "\n".join(lines)
