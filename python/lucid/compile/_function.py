"""lucid.compile(module_or_function): a forward graph (inference, evaluation)
compiled per signature and run as one executable per call, falling back to
the eager call, with the reason stated, for what cannot be compiled."""
import functools
import warnings

from .. import _C


class _NotCompilable(Exception):
    """Raised under the trace for what a forward graph cannot hold."""


class CompiledFunction:
    """The compiled form of a module or function: call it as the original.

    Each new signature (argument shapes, dtypes and devices; for a module its
    parameters and ``training`` flag; the autocast state) is traced once, like
    ``torch.jit.trace``: data-dependent Python branches are baked in. Calls the
    compiled graph cannot reproduce run eagerly, and ``fallback_reasons``
    says why (also warned once per reason): non-tensor arguments, results that
    are not tensors or tuples/lists of tensors, results that need autograd
    history (grad mode on and a parameter or input requiring grad), reading a
    value inside the function (``.item()``), or an op without a compiled form.
    """

    def __init__(self, fn, cache_size=8):
        if not callable(fn):
            raise TypeError(f"lucid.compile needs a module or a function, got {type(fn).__name__}")
        from ..nn import Module

        self._fn = fn
        self._name = type(fn).__name__ if isinstance(fn, Module) else getattr(fn, "__name__", repr(fn))
        self._structure = {}
        self.fallback_reasons = {}  # signature -> why it runs eagerly
        structure = self._structure

        def forward(args):
            out = fn(*args)
            if isinstance(out, _C.Tensor):
                outs, kind = [out], None
            elif isinstance(out, (tuple, list)) and all(isinstance(t, _C.Tensor) for t in out):
                outs, kind = list(out), type(out)
            else:
                raise _NotCompilable(f"it returned {type(out).__name__}, not a tensor or a tuple/list of tensors")
            if _C.is_grad_enabled() and any(t.requires_grad for t in outs):
                raise _NotCompilable("autograd is recording (grad mode is on and a parameter or input requires "
                                     "grad): a compiled forward returns results without history; use "
                                     "lucid.no_grad() or requires_grad_(False) to compile it")
            structure["kind"] = kind
            return outs

        self._step = _C.CompiledStep(_C.StepMode.forward, forward, fn if isinstance(fn, Module) else None, None,
                                     None, cache_size, single_result=False)
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        if kwargs:
            return self._eager("keyword arguments", args, kwargs)
        if not args or not all(isinstance(a, _C.Tensor) for a in args):
            return self._eager("arguments that are not all tensors", args, kwargs)
        key = (tuple((tuple(a.shape), a.dtype, str(a.device)) for a in args), _C.is_grad_enabled(),
               getattr(self._fn, "training", None), _C.autocast_state())
        reason = self.fallback_reasons.get(key)
        if reason is not None:
            return self._fn(*args)
        misses = self._step._cache_counters()[1]
        try:
            outs = self._step(*args)
        except _NotCompilable as e:
            return self._eager(str(e), args, kwargs, key)
        except Exception as e:  # noqa: BLE001 - a failed trace or compile runs eagerly (a run's error is raised)
            if self._step._cache_counters()[1] == misses:
                raise
            return self._eager(f"tracing or compiling failed: {type(e).__name__}: {e}", args, kwargs, key)
        kind = self._structure["kind"]
        return outs[0] if kind is None else kind(outs)

    def __getattr__(self, name):
        # The wrapped module's attributes (train(), eval(), parameters(),
        # config...), as torch.compile's OptimizedModule forwards them.
        if name == "_fn":
            raise AttributeError(name)
        return getattr(self._fn, name)

    def _eager(self, reason, args, kwargs, key=None):
        if key is not None:
            self.fallback_reasons[key] = reason
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"lucid.compile: running {self._name} eagerly: {reason}", stacklevel=3)
        return self._fn(*args, **kwargs)

    _warned = set()

    def cache_info(self):
        from ._step import CacheInfo

        return CacheInfo(*self._step._cache_counters())

    def executables(self):
        return self._step.executables()


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False, cache_size=8):
    """Compiles a module's or function's forward into one executable per
    signature (see :class:`CompiledFunction`), as torch.compile: without a
    model it returns a decorator; ``disable=True`` returns the model as is.
    ``fullgraph``, ``dynamic``, ``backend``, ``mode`` and ``options`` tune
    PyTorch's compiler stack and are accepted without effect (Lucid's trace
    is always one graph per signature; a new shape traces again).

    >>> import lucid, lucid.nn as nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    >>> fast = lucid.compile(model)
    >>> with lucid.no_grad():
    ...     out = fast(lucid.ones(3, 4))
    >>> out.shape
    lucid.Size([3, 2])
    """
    if model is None:
        return lambda fn: compile(fn, disable=disable, cache_size=cache_size)
    if disable:
        return model
    return CompiledFunction(model, cache_size)
