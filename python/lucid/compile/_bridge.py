"""How a compiled step reaches an optimizer's engine: the few calls the
traced update and the per-call feeds need. Keeping them here means the
compiled steps and compile_optimizer use one definition of each."""
from .. import _C


def check_supported(opt):
    engines = getattr(opt, "_engines", None)
    if engines is None:
        raise TypeError(f"{type(opt).__name__} has no engine update rule to compile")
    return engines


def param_slots(opt):
    """(group index, param index in group, param) for every parameter."""
    for gi, group in enumerate(opt.param_groups):
        for i, p in enumerate(group["params"]):
            yield gi, i, p


def structural_signature(opt):
    """The choices that change the math of the update (amsgrad, nesterov,
    momentum == 0, ...), per group."""
    return tuple(engine.structure(group) for engine, group in zip(opt._engines, opt.param_groups))


def emit_update(tracer, opt, gi, i, param, grad):
    """Records param i of group gi's update into the trace; returns the
    number of scalar feeds it reads."""
    engine = opt._engines[gi]
    group = opt.param_groups[gi]
    tracer.exit()  # state buffers are real tensors, made outside the trace
    try:
        engine.ensure_state(i, param)
    finally:
        tracer.enter()
    n = len(engine.host_scalars(i, group))
    feeds = [tracer.feed([], _C.dtype.float64) for _ in range(n)]
    engine.update_with_ops(i, param, grad, feeds)
    return n


def host_scalars(opt, slots):
    """The scalar feeds for one call, in trace order. Validates every group
    first, so a bad edit raises before anything runs."""
    for engine, group in zip(opt._engines, opt.param_groups):
        engine.validate(group)
    out = []
    for gi, i in slots:
        out.extend(opt._engines[gi].host_scalars(i, opt.param_groups[gi]))
    return out


def advance(opt, slots):
    for gi, i in slots:
        opt._engines[gi].advance(i)
