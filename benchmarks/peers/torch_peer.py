"""PyTorch's variants: eager with the default optimizer, foreach=True,
fused=True, and torch.compile of the whole train step."""
from ..workloads import torchlike
from ._common import Runner, Unavailable, named_shapes, optim_loop, train_loop

torch = None

_OPT_FLAGS = {"eager": {}, "foreach": {"foreach": True}, "fused": {"fused": True}, "compile": {}}


def setup(threads):
    global torch
    import torch as _torch

    torch = _torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    return {"torch": torch.__version__}


def build(w, variant, data):
    if variant not in _OPT_FLAGS:
        raise Unavailable(variant)
    kind = w["kind"]
    if kind == "train":
        return _train(w, variant, data)
    if kind == "optim":
        return _optim(w, variant, data)
    if kind == "bandwidth":
        return _bandwidth(w, variant, data)
    raise Unavailable(kind)


def _resolved_impl(opt, flags):
    """Which optimizer implementation the flags select (the CPU default is
    the per-tensor loop, not foreach)."""
    if flags:
        return next(iter(flags))
    try:
        from torch.optim.optimizer import _default_to_fused_or_foreach

        params = [p for g in opt.param_groups for p in g["params"]]
        fused, foreach = _default_to_fused_or_foreach(params, False, False)
        return "fused" if fused else "foreach" if foreach else "per-tensor loop"
    except Exception:  # private helper; only used for the note
        return "default"


def _compile(fn):
    # Compilation happens on the first call, which the worker times apart.
    return torch.compile(fn)


def _train(w, variant, data):
    model = torchlike.build_model(torch, w)
    loss_fn = torchlike.loss_fn(torch, w)
    flags = _OPT_FLAGS[variant]
    opt = torchlike.make_optimizer(torch, w["optimizer"], model.parameters(), **flags)
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    step = train_loop(model, loss_fn, opt, x, y)
    if variant == "compile":
        compiled = _compile(step)

        def step():
            return compiled()
    note = f"optimizer: {_resolved_impl(opt, flags)}"
    return Runner(step, torchlike.count_params(model), loss_value=lambda t: t.item(), note=note,
                  param_shapes=named_shapes(model))


def _optim(w, variant, data):
    params = []
    for p_np, g_np in zip(data["params"], data["grads"]):
        p = torch.from_numpy(p_np.copy()).requires_grad_(True)
        p.grad = torch.from_numpy(g_np.copy())
        params.append(p)
    flags = _OPT_FLAGS[variant]
    opt = torchlike.make_optimizer(torch, w["optimizer"], params, **flags)
    step = optim_loop(opt)
    if variant == "compile":
        step = _compile(step)
    return Runner(step, sum(p.numel() for p in params), note=f"optimizer: {_resolved_impl(opt, flags)}")


def _bandwidth(w, variant, data):
    s = w["scalar"]
    a = torch.zeros(w["numel"])
    b, c = torch.from_numpy(data["b"]), torch.from_numpy(data["c"])
    if variant == "eager":
        def step():
            torch.add(b, c, alpha=s, out=a)
    elif variant == "compile":
        def triad():
            a.copy_(b + c * s)

        step = _compile(triad)
    else:
        raise Unavailable(variant)
    return Runner(step, 0)
