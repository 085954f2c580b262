"""Autograd: backward, grad, the grad-mode switches, custom Functions, the
functional higher-order derivatives (autograd.functional), gradcheck and
gradgradcheck, anomaly detection and the legacy Variable."""
import functools
import threading

from .. import _C


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, _C.Tensor):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """create_graph: the backward pass records history, so the gradients it
    leaves can be differentiated again; retain_graph defaults to it."""
    roots = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(roots)
    retain = create_graph if retain_graph is None else retain_graph
    _C.backward(roots, grads, bool(retain), bool(create_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """Gradients of `outputs` w.r.t. `inputs`, without touching any .grad
    (create_graph: differentiable themselves, as backward's)."""
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outs)
    retain = create_graph if retain_graph is None else retain_graph
    _grad_calls.depth = getattr(_grad_calls, "depth", 0) + 1
    try:
        return tuple(_C.grad(outs, ins, grads, bool(retain), allow_unused, bool(create_graph)))
    finally:
        _grad_calls.depth -= 1


# grad() calls running on this thread: a checkpoint's backward, which
# accumulates into the .grad of what it recomputes, refuses to run inside one.
_grad_calls = threading.local()


def _in_grad_call():
    return getattr(_grad_calls, "depth", 0) > 0


class _GradModeContext:
    """A context manager that is also a decorator, with or without
    parentheses (``@no_grad()`` and ``@no_grad``)."""

    enabled = True

    def __new__(cls, *args, **kwargs):
        if cls is not set_grad_enabled and len(args) == 1 and not kwargs and callable(args[0]) \
                and not isinstance(args[0], bool):
            return cls()(args[0])  # used bare, as a decorator
        return super().__new__(cls)

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self.enabled)
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def _fresh(self):
        """A new context with the same settings (each call of a decorated
        function enters its own)."""
        return type(self)()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Disables gradient recording (a context manager or decorator)."""

    enabled = False


class enable_grad(_GradModeContext):
    """Enables gradient recording (a context manager or decorator)."""

    enabled = True


class set_grad_enabled(_GradModeContext):
    """Sets gradient recording on or off; takes effect when called, like
    PyTorch, and restores the previous mode when used as a context manager."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self.enabled = bool(mode)
        _C.set_grad_enabled(self.enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def _fresh(self):
        return set_grad_enabled(self.enabled)

    def __call__(self, fn):
        # As a decorator it only applies inside the function (PyTorch too).
        _C.set_grad_enabled(self._prev)
        return super().__call__(fn)


_inference = threading.local()


def is_inference_mode_enabled():
    return getattr(_inference, "depth", 0) > 0


class inference_mode(_GradModeContext):
    """torch.inference_mode: no gradient recording inside (mode=True), like
    no_grad. Lucid has no separate kind of inference tensor: what is made
    inside is an ordinary tensor that does not require grad, so it may also
    be used in autograd later (where PyTorch would raise)."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self.enabled = not self.mode if self.mode else _C.is_grad_enabled()

    def __enter__(self):
        self._prev_depth = getattr(_inference, "depth", 0)
        _inference.depth = self._prev_depth + 1 if self.mode else 0
        if not self.mode:
            self.enabled = _C.is_grad_enabled()
        return super().__enter__()

    def __exit__(self, *exc):
        _inference.depth = self._prev_depth
        return super().__exit__(*exc)

    def _fresh(self):
        return inference_mode(self.mode)


is_grad_enabled = _C.is_grad_enabled

from .function import Function, FunctionCtx, once_differentiable  # noqa: E402,F401
from . import graph  # noqa: E402,F401
from . import functional  # noqa: E402,F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: E402,F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from .variable import Variable  # noqa: E402,F401
from . import forward_ad, grad_mode, profiler, profiler_util  # noqa: E402,F401
from .grad_mode import set_multithreading_enabled  # noqa: E402,F401
