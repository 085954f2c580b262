"""Lucid's variants: eager, eager + compile_optimizer, make_step + eager
optimizer, fused_step (and the bandwidth triad, eager and compiled)."""
from ..workloads import torchlike
from ._common import Runner, Unavailable, named_shapes, optim_loop, train_loop

lucid = None


def setup(threads):
    global lucid
    import lucid as _lucid

    lucid = _lucid
    lucid.set_num_threads(threads)
    lucid.manual_seed(0)
    return {"lucid": lucid.__version__}


def build(w, variant, data):
    kind = w["kind"]
    if kind == "train":
        return _train(w, variant, data)
    if kind == "optim":
        return _optim(w, variant, data)
    if kind == "bandwidth":
        return _bandwidth(w, variant, data)
    raise Unavailable(kind)


def _train(w, variant, data):
    model = torchlike.build_model(lucid, w)
    loss_fn = torchlike.loss_fn(lucid, w)
    opt = torchlike.make_optimizer(lucid, w["optimizer"], model.parameters())
    x, y = lucid.tensor(data["x"]), lucid.tensor(data["y"])
    n = torchlike.count_params(model)
    if variant == "eager":
        step = train_loop(model, loss_fn, opt, x, y)
    elif variant == "compile_optimizer":
        from lucid.compile import compile_optimizer

        step = train_loop(model, loss_fn, compile_optimizer(opt), x, y)
    elif variant == "make_step":
        from lucid.compile import make_step

        fwd_bwd = make_step(model, loss_fn)

        def step():
            opt.zero_grad()
            loss = fwd_bwd(x, y)
            opt.step()
            return loss
    elif variant == "fused_step":
        from lucid.compile import fused_step

        fused = fused_step(model, loss_fn, opt)

        def step():
            return fused(x, y)
    else:
        raise Unavailable(variant)
    return Runner(step, n, loss_value=lambda t: t.item(), param_shapes=named_shapes(model))


def _optim(w, variant, data):
    params = []
    for p_np, g_np in zip(data["params"], data["grads"]):
        p = lucid.tensor(p_np)
        p.requires_grad_(True)
        p.grad = lucid.tensor(g_np)
        params.append(p)
    opt = torchlike.make_optimizer(lucid, w["optimizer"], params)
    if variant == "compile_optimizer":
        from lucid.compile import compile_optimizer

        opt = compile_optimizer(opt)
    elif variant != "eager":
        raise Unavailable(variant)
    return Runner(optim_loop(opt), sum(p.numel() for p in params))


def _bandwidth(w, variant, data):
    s = w["scalar"]
    a = lucid.zeros(w["numel"])
    b, c = lucid.tensor(data["b"]), lucid.tensor(data["c"])
    if variant == "eager":
        def step():
            return lucid.add(b, c, alpha=s)
    elif variant == "compiled":
        # No public entry point compiles a bare expression yet, so this drives
        # the same tracer and CPU executable that fused_step uses.
        from lucid import _C
        from lucid.compile._trace import tracing

        tracer = _C.GraphTracer()
        with tracing(tracer):
            a.copy_(b + c * s)
        exe = tracer.compile("cpu")

        def step():
            exe.run([], [])
    else:
        raise Unavailable(variant)
    return Runner(step, 0)
