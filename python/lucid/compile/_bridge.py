"""How a compiled step reaches an optimizer's update rule: the few calls the
traced update and the per-call feeds need. The compiled steps and
compile_optimizer both go through here, so each fact has one definition.

Two kinds of rules exist: engine optimizers (C++, one per param group; the
element-wise optimizers) and Python-level rules written with ops
(SparseAdam), which expose the ``_compiled_*`` hooks."""
from .. import _C
from ..autograd import no_grad
from ._trace import outside_trace


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

    def without_state(self):
        """The slots that have no state yet (a trace creates it)."""
        return [(gi, i) for gi, e in enumerate(self.opt._engines) for i in range(e.num_params()) if not e.has_state(i)]

    def drop_state(self, slots):
        for gi, i in slots:
            self.opt._engines[gi].set_state(i, [])  # empty: no state


class _PythonRules:
    """Optimizers whose rule is written with ops in Python (SparseAdam)."""

    def __init__(self, opt):
        self.opt = opt

    def prepare(self):
        opt = self.opt
        for group in opt.param_groups:
            opt._validate(group)
        return (tuple(opt._compiled_structure(g) for g in opt.param_groups), opt._compiled_state_key())

    def emit(self, tracer, gi, i, param, grad):
        opt = self.opt
        with outside_trace(tracer):  # state buffers are real tensors
            opt._compiled_init_state(gi, i, param)
        feeds = [tracer.feed([], _C.dtype.float64) for _ in opt._compiled_host_scalars(gi, i)]
        with no_grad():
            opt._compiled_update(gi, i, param, grad, feeds)

    def host_scalars(self, slots):
        out = []
        for gi, i in slots:
            out.extend(self.opt._compiled_host_scalars(gi, i))
        return out

    def advance(self, slots):
        for gi, i in slots:
            self.opt._compiled_advance(gi, i)

    def without_state(self):
        return [p for g in self.opt.param_groups for p in g["params"] if p not in self.opt.state]

    def drop_state(self, params):
        for p in params:
            self.opt.state.pop(p, None)


def rules(opt):
    """The compiled-update adapter of `opt`; TypeError when its update cannot
    be compiled."""
    if getattr(opt, "_uses_engine", False) and getattr(opt, "_engines", None):
        return _EngineRules(opt)
    if hasattr(opt, "_compiled_update"):
        return _PythonRules(opt)
    raise TypeError(f"{type(opt).__name__} has no update rule that can be compiled")


def param_slots(opt):
    """(group index, index in group, param) for every parameter."""
    for gi, group in enumerate(opt.param_groups):
        for i, p in enumerate(group["params"]):
            yield gi, i, p
