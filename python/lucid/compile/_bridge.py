"""How a compiled step reaches an optimizer's engines: the few calls the
traced update and the per-call feeds need. The compiled steps and
compile_optimizer both go through here, so each fact has one definition."""
from .. import _C


def engines(opt):
    """The optimizer's engine optimizers (one per param group), or TypeError
    when its update has no engine rule to compile."""
    found = getattr(opt, "_engines", None)
    if not found or not getattr(opt, "_uses_engine", False):
        raise TypeError(f"{type(opt).__name__} has no engine update rule to compile")
    return found


def param_slots(opt):
    """(group index, index in group, param) for every parameter."""
    for gi, group in enumerate(opt.param_groups):
        for i, p in enumerate(group["params"]):
            yield gi, i, p


def hypers(opt):
    """Reads and validates every group's hyper-parameters (and gradients): a
    bad edit raises lucid.InvalidArgument before anything runs."""
    out = []
    for gi, (engine, group) in enumerate(zip(opt._engines, opt.param_groups)):
        if len(group["params"]) != engine.num_params():
            raise RuntimeError(f"param_groups[{gi}]['params'] changed after the group was added; "
                               "use add_param_group to optimize more parameters")
        h = _C.optim.Hyper(group)
        engine.check(h)
        out.append(h)
    return out


def signature(opt, hs):
    """What the traced update depends on: the flags each group's rule
    branches on, and the identity of the state buffers it captured."""
    return tuple((e.structure(h), e.state_key()) for e, h in zip(opt._engines, hs))


def emit_update(tracer, opt, hs, gi, i, param, grad):
    """Records the update of parameter i of group gi into the trace, reading
    one scalar feed per host scalar of its rule."""
    engine = opt._engines[gi]
    engine.init_state(i, hs[gi])  # concrete buffers, created outside the trace
    n = len(engine.host_scalar_names())
    feeds = [tracer.feed([], _C.dtype.float64) for _ in range(n)]
    engine.update_with_ops(i, param, grad, feeds, hs[gi])


def host_scalars(opt, hs, slots):
    """The scalar feeds of one call, in trace order."""
    out = []
    for gi, i in slots:
        out.extend(opt._engines[gi].host_scalars(i, hs[gi]))
    return out


def advance(opt, hs, slots):
    for gi, i in slots:
        opt._engines[gi].advance(i, hs[gi])
