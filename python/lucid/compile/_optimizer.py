"""compile_optimizer: an optimizer whose step() runs as one executable over
every parameter of every group."""
import time

from .. import _C
from . import _bridge
from ._trace import tensor_meta

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
        rules = self._rules
        structure = rules.prepare()  # validates everything before anything changes
        slots = [(gi, i, p) for gi, i, p in _bridge.param_slots(self.optimizer) if p.grad is not None]
        if not slots:
            return loss
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
        exe.run([p.grad for _, _, p in slots], rules.host_scalars(positions))
        rules.advance(positions)
        return loss

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


class _LBFGSEngines:
    """The compiled LBFGS's own engines (kind "lbfgs_bb", one per group: the
    per-element Barzilai-Borwein step of csrc/lucid/optim/kinds_misc.cpp)
    over the eager optimizer's param groups, whose state stays apart."""

    _uses_engine = True

    def __init__(self, opt):
        self.param_groups = opt.param_groups
        self._engines = [_C.optim.EngineOptimizer("lbfgs_bb", g["params"], g, opt.defaults)
                         for g in opt.param_groups]


class _CompiledLBFGSBase(_CompiledStepBase):
    """LBFGS compiles to a different algorithm (a per-element
    Barzilai-Borwein step): the eager optimizer keeps its own state and
    methods; this wrapper's state is its own and is not part of the eager
    optimizer's state_dict."""

    @staticmethod
    def _make_rules(optimizer):
        return _bridge.rules(_LBFGSEngines(optimizer))

    @property
    def state(self):
        from ..optim.optimizer import _EngineState

        return _EngineState(self._rules.opt)

    def state_dict(self):
        from ..optim.optimizer import _export

        state, k = {}, 0
        for engine in self._rules.opt._engines:
            for j in range(engine.num_params()):
                if engine.has_state(j):
                    state[k] = {name: _export(v) for name, v in engine.state_entries(j)}
                k += 1
        return {"state": state, "param_groups": [{key: v for key, v in g.items() if key != "params"}
                                                 for g in self.optimizer.param_groups]}

    def load_state_dict(self, state_dict):
        from ..optim.optimizer import _to_lucid

        engines = self._rules.opt._engines
        where = [(e, j) for e in engines for j in range(e.num_params())]
        saved = state_dict["state"]
        converted = []
        for k, (engine, j) in enumerate(where):
            entries = [(str(n), _to_lucid(v, n)) for n, v in saved.get(k, {}).items()]
            engine.check_state(j, entries)  # everything is checked before anything changes
            converted.append(entries)
        for (engine, j), entries in zip(where, converted):
            engine.set_state(j, entries)


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
