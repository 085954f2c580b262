"""How a compiled step reaches an optimizer's update rule: the few calls the
traced update and the per-call feeds need. The compiled steps and
compile_optimizer both go through here, so each fact has one definition:
the rules are the engine optimizers' (C++, one per param group)."""
from .. import _C


class _EngineRules:
    """The element-wise optimizers: state and rules in the C++ engines."""

    def __init__(self, opt):
        self.opt = opt
        self.hypers = None

    def prepare(self):
        """Reads and validates every group's hyper-parameters (and
        gradients): a bad edit raises lucid.InvalidArgument before anything
        runs. Returns the signature part the traced update depends on."""
        opt, hs = self.opt, []
        for gi, (engine, group) in enumerate(zip(opt._engines, opt.param_groups)):
            if len(group["params"]) != engine.num_params():
                raise RuntimeError(f"param_groups[{gi}]['params'] changed after the group was added; "
                                   "use add_param_group to optimize more parameters")
            h = _C.optim.Hyper(group)
            engine.check(h)
            hs.append(h)
        self.hypers = hs
        # the flags each group's rule branches on, and the identity of the
        # state buffers a trace captures
        return tuple(e.structure(h) for e, h in zip(opt._engines, hs))

    def emit(self, tracer, gi, i, param, grad):
        engine, h = self.opt._engines[gi], self.hypers[gi]
        engine.init_state(i, h)  # concrete buffers, created outside the trace
        feeds = [tracer.feed([], _C.dtype.float64) for _ in engine.host_scalar_names()]
        engine.update_with_ops(i, param, grad, feeds, h)

    def host_scalars(self, slots):
        out = []
        for gi, i in slots:
            out.extend(self.opt._engines[gi].host_scalars(i, self.hypers[gi]))
        return out

    def advance(self, slots):
        for gi, i in slots:
            self.opt._engines[gi].advance(i, self.hypers[gi])


def rules(opt):
    """The compiled-update adapter of `opt`; TypeError when its update cannot
    be compiled."""
    if getattr(opt, "_uses_engine", False) and getattr(opt, "_engines", None):
        return _EngineRules(opt)
    raise TypeError(f"{type(opt).__name__} has no update rule that can be compiled")


def param_slots(opt):
    """(group index, index in group, param) for every parameter."""
    for gi, group in enumerate(opt.param_groups):
        for i, p in enumerate(group["params"]):
            yield gi, i, p
