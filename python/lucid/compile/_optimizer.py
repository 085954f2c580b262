"""compile_optimizer: an optimizer whose step() runs as one executable over
every parameter of every group."""
from .. import _C
from ..autograd import enable_grad
from ..optim.optimizer import Optimizer, _EngineState, _export, _to_lucid
from ._step import CacheInfo


class _CompiledOptimizer(Optimizer):
    """An Optimizer (``isinstance(opt, lucid.optim.Optimizer)``, and of the
    wrapped class) that shares the wrapped optimizer's ``param_groups``,
    ``defaults`` and state, so checkpoints keep PyTorch's layout and move
    freely between eager and compiled runs, and LR schedulers drive either.
    Its ``step()`` is one ``lucid._C.CompiledStep`` call: the update, the step
    counts and the signature check in C++."""

    param_groups = property(lambda self: self._optimizer.param_groups,
                            lambda self, v: setattr(self._optimizer, "param_groups", v))
    defaults = property(lambda self: self._optimizer.defaults,
                        lambda self, v: setattr(self._optimizer, "defaults", v))
    state = property(lambda self: self._optimizer.state, lambda self, v: setattr(self._optimizer, "state", v))
    optimizer = property(lambda self: self._optimizer, doc="The wrapped (eager) optimizer.")
    _engines = property(lambda self: self._optimizer._engines)
    _uses_engine = property(lambda self: self._optimizer._uses_engine)

    def __init__(self, optimizer, cache_size=8):  # noqa: D107 - not Optimizer.__init__: the state is shared
        self._optimizer = optimizer
        self._compiled_step = _C.CompiledStep(_C.StepMode.optimizer_update, None, None, self._rules_owner(optimizer), None,
                                     cache_size)

    @staticmethod
    def _rules_owner(optimizer):
        return optimizer

    def __getattr__(self, name):  # anything else the wrapped optimizer has (LBFGS's settings...)
        if name == "_optimizer":
            raise AttributeError(name)
        return getattr(self._optimizer, name)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._compiled_step()
        return loss

    def cache_info(self):
        return CacheInfo(*self._compiled_step._cache_counters())

    @property
    def cache_size(self):
        return self._compiled_step.cache_size

    @cache_size.setter
    def cache_size(self, n):
        self._compiled_step.cache_size = n

    def executables(self):
        return self._compiled_step.executables()

    def __repr__(self):
        return f"{type(self).__name__}({self._optimizer!r})"


class _LBFGSEngines:
    """The compiled LBFGS's own engines (kind "lbfgs_bb", one per group: the
    per-element Barzilai-Borwein step of csrc/lucid/optim/kinds_misc.cpp)
    over the eager optimizer's param groups, whose state stays apart."""

    _uses_engine = True

    def __init__(self, opt):
        self._opt = opt
        self._engines = [_C.optim.EngineOptimizer("lbfgs_bb", g["params"], g, opt.defaults)
                         for g in opt.param_groups]

    @property
    def param_groups(self):
        return self._opt.param_groups


class _CompiledLBFGS(_CompiledOptimizer):
    """LBFGS compiles to a different algorithm (a per-element
    Barzilai-Borwein step): the eager optimizer keeps its own state and
    methods; this wrapper's state is its own and is not part of the eager
    optimizer's state_dict."""

    state = property(lambda self: _EngineState(self._lbfgs))
    _engines = property(lambda self: self._lbfgs._engines)
    _uses_engine = property(lambda self: True)

    def _rules_owner(self, optimizer):
        self._lbfgs = _LBFGSEngines(optimizer)
        return self._lbfgs

    def state_dict(self):
        state, k = {}, 0
        for engine in self._lbfgs._engines:
            for j in range(engine.num_params()):
                if engine.has_state(j):
                    state[k] = {name: _export(v) for name, v in engine.state_entries(j)}
                k += 1
        return {"state": state, "param_groups": [{key: v for key, v in g.items() if key != "params"}
                                                 for g in self.param_groups]}

    def load_state_dict(self, state_dict):
        where = [(e, j) for e in self._lbfgs._engines for j in range(e.num_params())]
        saved = state_dict["state"]
        converted = []
        for k, (engine, j) in enumerate(where):
            entries = [(str(n), _to_lucid(v, n)) for n, v in saved.get(k, {}).items()]
            engine.check_state(j, entries)  # everything is checked before anything changes
            converted.append(entries)
        for (engine, j), entries in zip(where, converted):
            engine.set_state(j, entries)


_wrapper_classes = {}


def _wrapper_class(optimizer):
    cls = type(optimizer)
    base = _CompiledLBFGS if cls.__name__ == "LBFGS" else _CompiledOptimizer
    if cls not in _wrapper_classes:
        _wrapper_classes[cls] = type(f"_Compiled{cls.__name__}", (base, cls), {"__module__": __name__})
    return _wrapper_classes[cls]


def compile_optimizer(optimizer, *, cache_size=8):
    """Returns a drop-in optimizer whose ``step()`` is one executable.

    The result is an Optimizer of the same class (schedulers and
    ``isinstance`` checks accept it) that shares ``param_groups`` and state
    with ``optimizer``. Compiling the same optimizer again returns the same
    wrapper; from then on ``optimizer.step()``, ``state_dict()`` and
    ``load_state_dict()`` act through the wrapper too. LBFGS compiles to a
    closure-less per-element Barzilai-Borwein step with its own state.

    >>> import lucid, lucid.optim
    >>> from lucid.compile import compile_optimizer
    >>> w = lucid.ones(3, requires_grad=True)
    >>> opt = compile_optimizer(lucid.optim.SGD([w], lr=0.5))
    >>> w.grad = lucid.ones(3)
    >>> opt.step()
    >>> w.tolist()
    [0.5, 0.5, 0.5]
    """
    existing = getattr(optimizer, "_compiled_wrapper", None)
    if existing is not None:
        return existing
    if not isinstance(optimizer, Optimizer) or not (getattr(optimizer, "_uses_engine", False)
                                                     or type(optimizer).__name__ == "LBFGS"):
        raise TypeError(f"compile_optimizer does not support {type(optimizer).__name__}; supported: the optimizers "
                        "of lucid.optim (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, "
                        "Rprop, SparseAdam, LBFGS)")
    if not any(g["params"] for g in optimizer.param_groups):
        raise ValueError("compile_optimizer: the optimizer has no parameters")
    wrapper = _wrapper_class(optimizer)(optimizer, cache_size)
    if not isinstance(wrapper, _CompiledLBFGS):
        optimizer._compiled = wrapper  # opt.step/state_dict/load_state_dict now go through the wrapper
    optimizer._compiled_wrapper = wrapper
    return wrapper
