"""compile_optimizer: an optimizer whose step() runs as one executable over
every parameter of every group."""
import threading
import time

from .. import _C
from . import _bridge
from ._trace import outside_trace, tensor_meta, uninterruptible

SUPPORTED = ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
             "Rprop", "SparseAdam")


class _CompiledStepBase:
    """A drop-in for the optimizer it wraps: ``step``, ``zero_grad``,
    ``param_groups``, ``state``, ``state_dict`` and ``load_state_dict``. The
    state is the wrapped optimizer's engine state, updated in place, so
    checkpoints keep PyTorch's layout and move freely between eager and
    compiled runs."""

    def __init__(self, optimizer, cache_size=8):
        self.optimizer = optimizer
        self._rules = self._make_rules(optimizer)
        self._cache = _C.ExecutableCache(cache_size)
        self._entries = {}
        self._last_miss = None
        self._lock = threading.RLock()  # steps run one at a time (see _TracedStep)

    @staticmethod
    def _make_rules(optimizer):
        return _bridge.rules(optimizer)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def defaults(self):
        return self.optimizer.defaults

    @property
    def state(self):
        return self.optimizer.state

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none)

    def add_param_group(self, group):
        self.optimizer.add_param_group(group)

    def state_dict(self):
        return _uncompiled(self.optimizer, type(self.optimizer).state_dict)

    def load_state_dict(self, state_dict):
        return _uncompiled(self.optimizer, type(self.optimizer).load_state_dict, state_dict)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with _enable_grad():
                loss = closure()
        with self._lock:
            self._step()
        return loss

    def _step(self):
        rules = self._rules
        structure = rules.prepare()  # validates everything before anything changes
        slots = [(gi, i, p) for gi, i, p in _bridge.param_slots(self.optimizer) if p.grad is not None]
        if not slots:
            return
        grads_sig = tuple((gi, i, tensor_meta(p.grad)) for gi, i, p in slots)
        key = repr((grads_sig, structure))
        exe = self._cache.get(key)
        if exe is None or not exe.bindings_valid():
            self._last_miss = "first call" if not self._entries else "signature changed"
            exe = self._compile(slots)
            # tracing may create state: key by the signature later calls see
            key = repr((grads_sig, rules.prepare()))
            for evicted in self._cache.put(key, exe, self._compile_seconds):
                self._entries.pop(evicted, None)
            self._entries[key] = exe
        positions = [(gi, i) for gi, i, _ in slots]
        with uninterruptible():
            exe.run([p.grad for _, _, p in slots], rules.host_scalars(positions))
            rules.advance(positions)

    def _compile(self, slots):
        start = time.perf_counter()
        tracer = _C.GraphTracer()
        sym = [tracer.input(list(p.grad.shape), p.grad.dtype, str(p.grad.device)) for _, _, p in slots]
        tracer.enter()
        try:
            with _no_grad():
                for (gi, i, p), g in zip(slots, sym):
                    self._rules.emit(tracer, gi, i, p, g)
        finally:
            tracer.exit()
        exe = tracer.compile(str(slots[0][2].device))
        self._compile_seconds = time.perf_counter() - start
        return exe

    def cache_info(self):
        from ._step import CacheInfo

        return CacheInfo(self._cache.hits, self._cache.misses, len(self._cache), self._cache.compile_seconds,
                         self._last_miss)

    def __repr__(self):
        return f"{type(self).__name__}({self.optimizer!r})"


def _uncompiled(opt, method, *args):
    """Runs the optimizer's own (eager) method, bypassing the delegation to
    this wrapper: the state is shared, only the step differs."""
    compiled = opt.__dict__.pop("_compiled", None)
    try:
        return method(opt, *args)
    finally:
        opt._compiled = compiled


def _enable_grad():
    from ..autograd import enable_grad

    return enable_grad()


def _no_grad():
    from ..autograd import no_grad

    return no_grad()


def lbfgs_bb_rule(param, grad, prev_param, prev_grad, lr, first, tolerance_grad):
    """The closure-less step of a compiled LBFGS, in place, through ops.

    A per-element Barzilai-Borwein (BB1) quasi-Newton step: with
    ``s = x - x_prev`` and ``y = g - g_prev``, the inverse curvature of each
    element is estimated as ``h = s*s / (s*y)`` where ``s*y > 0`` (and 1
    elsewhere, or on the first step), and ``x <- x - lr * h * g``. A
    parameter whose gradient is already below ``tolerance_grad`` (max-norm)
    is left unchanged, like LBFGS's convergence test. ``lr``, ``first`` (1.0
    on the first step) and ``tolerance_grad`` are numbers or 0-d feeds.
    """
    s = param - prev_param
    y = grad - prev_grad
    sy = s * y
    curvature_ok = (sy * (1 - first)) > 0  # never on the first step
    h = _C.where(curvature_ok, (s * s) / _C.where(curvature_ok, sy, 1.0), 1.0)
    new = param - (grad * h) * lr
    converged = _C.amax(_C.abs(grad), None, False) <= tolerance_grad
    _C.assign_(prev_param, param)
    _C.assign_(prev_grad, grad)
    _C.assign_(param, _C.where(converged, param, new))


class _LBFGSRules:
    """The compiled LBFGS: its own state (previous parameter and gradient per
    parameter, and a step count), separate from the eager optimizer's."""

    def __init__(self, opt):
        self.opt = opt
        self.state = {}  # id(param) -> {"step", "prev", "prev_grad"}

    def prepare(self):
        for group in self.opt.param_groups:
            self.opt._validate(group)
        return tuple(id(s["prev"]) for s in self.state.values())

    def emit(self, tracer, gi, i, param, grad):
        st = self.state.get(id(param))
        if st is None:
            with outside_trace(tracer):  # state buffers are real tensors
                st = self.state[id(param)] = {
                    "step": 0,
                    "prev": _C.full(list(param.shape), 0.0, param.dtype, param.device),
                    "prev_grad": _C.full(list(param.shape), 0.0, param.dtype, param.device),
                }
        lr, first, tol = (tracer.feed([], _C.dtype.float64) for _ in range(3))
        with _no_grad():
            lbfgs_bb_rule(param, grad, st["prev"], st["prev_grad"], lr, first, tol)

    def host_scalars(self, slots):
        out = []
        for gi, i in slots:
            group = self.opt.param_groups[gi]
            st = self.state[id(group["params"][i])]
            out += [float(group["lr"]), 1.0 if st["step"] == 0 else 0.0, float(group["tolerance_grad"])]
        return out

    def advance(self, slots):
        for gi, i in slots:
            self.state[id(self.opt.param_groups[gi]["params"][i])]["step"] += 1


class _CompiledLBFGSBase(_CompiledStepBase):
    """LBFGS compiles to a different algorithm (lbfgs_bb_rule): the eager
    optimizer keeps its own state and methods; this wrapper's state is its
    own and is not part of the eager optimizer's state_dict."""

    _make_rules = staticmethod(_LBFGSRules)

    @property
    def state(self):
        return self._rules.state

    def state_dict(self):
        index = {id(p): k for k, (_, _, p) in enumerate(_bridge.param_slots(self.optimizer))}
        state = {index[pid]: {"step": s["step"], "prev": s["prev"].numpy().copy(),
                              "prev_grad": s["prev_grad"].numpy().copy()} for pid, s in self._rules.state.items()}
        return {"state": state, "param_groups": [{k: v for k, v in g.items() if k != "params"}
                                                 for g in self.optimizer.param_groups]}

    def load_state_dict(self, state_dict):
        params = [p for _, _, p in _bridge.param_slots(self.optimizer)]
        new = {}
        for k, s in state_dict["state"].items():
            p = params[int(k)]
            entry = {"step": int(s["step"])}
            for name in ("prev", "prev_grad"):
                arr = s[name]
                if tuple(arr.shape) != tuple(p.shape):
                    raise ValueError(f"compiled LBFGS state '{name}' of parameter {k} has shape "
                                     f"{tuple(arr.shape)}, expected {tuple(p.shape)}")
            for name in ("prev", "prev_grad"):
                entry[name] = _C.cast(_C.from_numpy_copy(s[name]), p.dtype)
            new[id(p)] = entry
        self._rules.state = new


_wrapper_classes = {}


def compile_optimizer(optimizer, *, cache_size=8):
    """Returns a drop-in optimizer whose ``step()`` is one executable.

    Compiling the same optimizer again returns the same wrapper; from then on
    ``optimizer.step()``, ``state_dict()`` and ``load_state_dict()`` act on
    the wrapper's (shared) state.

    >>> import lucid, lucid.optim
    >>> from lucid.compile import compile_optimizer
    >>> w = lucid.ones(3, requires_grad=True)
    >>> opt = compile_optimizer(lucid.optim.SGD([w], lr=0.5))
    >>> w.grad = lucid.ones(3)
    >>> opt.step()
    >>> w.tolist()
    [0.5, 0.5, 0.5]
    """
    name = type(optimizer).__name__
    existing = getattr(optimizer, "_compiled_wrapper", None)
    if existing is not None:
        return existing
    if name == "LBFGS":
        if not any(g["params"] for g in optimizer.param_groups):
            raise ValueError("compile_optimizer: the optimizer has no parameters")
        cls = _wrapper_classes.setdefault(name, type("_CompiledLBFGS", (_CompiledLBFGSBase,), {}))
        wrapper = cls(optimizer, cache_size)
        optimizer._compiled_wrapper = wrapper  # the eager optimizer keeps its own step and state
        return wrapper
    if name not in SUPPORTED:
        raise TypeError(f"compile_optimizer does not support {name}; supported: {', '.join(SUPPORTED + ('LBFGS',))}")
    if not any(g["params"] for g in optimizer.param_groups):
        raise ValueError("compile_optimizer: the optimizer has no parameters")
    cls = _wrapper_classes.get(name)
    if cls is None:
        cls = _wrapper_classes[name] = type(f"_Compiled{name}", (_CompiledStepBase,), {})
    wrapper = cls(optimizer, cache_size)
    optimizer._compiled = wrapper  # opt.step/state_dict/load_state_dict now go to the wrapper
    optimizer._compiled_wrapper = wrapper
    return wrapper
