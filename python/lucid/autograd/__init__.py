"""Autograd: backward, grad, the grad-mode switches, custom Functions, the
functional higher-order derivatives (autograd.functional), gradcheck and
gradgradcheck, anomaly detection and the legacy Variable."""
import functools
import threading
import warnings
from collections.abc import Mapping

from .. import _C


def _as_tuple(x):
    """A tensor, or a sequence of them, as a tuple."""
    if x is None:
        return ()
    if isinstance(x, _C.Tensor):
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs, fn_name):
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{fn_name}()` must be a dict, not {type(inputs).__name__}. "
                        "Other Mapping types are not supported.")
    return _as_tuple(inputs)


def _root_grads(roots, grads):
    """The gradients given for `roots`, paired as PyTorch pairs them (zip:
    extra ones are ignored, missing ones are the engine's error)."""
    grads = (None,) * len(roots) if grads is None else _as_tuple(grads)
    for g in grads[:len(roots)]:
        if g is not None and not isinstance(g, _C.Tensor):
            raise TypeError("gradients can be either Tensors or None, but got " + type(g).__name__)
    return list(grads[:len(roots)])


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """create_graph: the backward pass records history, so the gradients it
    leaves can be differentiated again; retain_graph defaults to it."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...) is not supported")
    roots = _as_tuple(tensors)
    retain = create_graph if retain_graph is None else retain_graph
    _C.backward(list(roots), _root_grads(roots, grad_tensors), bool(retain), bool(create_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` w.r.t. `inputs`, without touching any .grad
    (create_graph: differentiable themselves, as backward's).
    materialize_grads: zeros instead of None for an input the outputs do not
    reach; is_grads_batched: the first dim of each grad_output is a batch,
    run one backward per entry (PyTorch vectorizes it)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs)
    ins = _inputs_tuple(inputs, "grad")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    grads = _root_grads(outs, grad_outputs)
    retain = create_graph if retain_graph is None else retain_graph
    _grad_calls.depth = getattr(_grad_calls, "depth", 0) + 1
    try:
        if is_grads_batched:
            result = _batched_grad(outs, ins, grads, retain, allow_unused, create_graph)
        else:
            result = tuple(_C.grad(list(outs), list(ins), grads, bool(retain), bool(allow_unused), bool(create_graph)))
    finally:
        _grad_calls.depth -= 1
    if materialize_grads:
        result = tuple(_C.full(list(i.shape), 0.0, i.dtype, i.device).requires_grad_(bool(create_graph))
                       if r is None else r for r, i in zip(result, ins))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


def _batched_grad(outs, ins, grads, retain, allow_unused, create_graph):
    """grad() once per entry of the grad_outputs' first dim, stacked."""
    sizes = {int(g.shape[0]) for g in grads if g is not None and g.dim() > 0}
    if len(sizes) != 1:
        raise RuntimeError("is_grads_batched=True needs every grad_output to have the same batch (first) dimension")
    n = sizes.pop()
    rows = [_C.grad(list(outs), list(ins), [None if g is None else g[b] for g in grads],
                    bool(retain) or b < n - 1, bool(allow_unused), bool(create_graph)) for b in range(n)]
    return tuple(None if any(r[k] is None for r in rows) else _C.stack([r[k] for r in rows], 0)
                 for k in range(len(ins)))


# grad() calls running on this thread: a checkpoint's backward, which
# accumulates into the .grad of what it recomputes, refuses to run inside one.
_grad_calls = threading.local()


def _in_grad_call():
    return getattr(_grad_calls, "depth", 0) > 0


# Inference mode: a thread-local depth, and the grad mode switches set inside
# it. PyTorch records nothing in inference mode whatever the grad mode says
# (enable_grad inside it makes is_grad_enabled() True but records nothing),
# so while it is on the engine's switch stays off and the grad mode lives here.
_inference = threading.local()


def is_inference_mode_enabled():
    return getattr(_inference, "depth", 0) > 0


def is_grad_enabled():
    """Whether the grad mode is on (inside inference mode: as set there, though nothing is recorded)."""
    return _inference.grad if is_inference_mode_enabled() else _C.is_grad_enabled()


def _set_grad_mode(enabled):
    if is_inference_mode_enabled():
        _inference.grad = enabled
        enabled = False
    _C.set_grad_enabled(enabled)


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
        self._prev = is_grad_enabled()
        _set_grad_mode(self.enabled)
        return self

    def __exit__(self, *exc):
        _set_grad_mode(self._prev)
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
        self._prev = is_grad_enabled()
        self.enabled = bool(mode)
        _set_grad_mode(self.enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set_grad_mode(self._prev)
        return False

    def _fresh(self):
        return set_grad_enabled(self.enabled)

    def __call__(self, fn):
        # As a decorator it only applies inside the function (PyTorch too).
        _set_grad_mode(self._prev)
        return super().__call__(fn)


class inference_mode(_GradModeContext):
    """torch.inference_mode: nothing is recorded inside (mode=True), whatever
    the grad mode switches say there; inference_mode(False) leaves inference
    mode and turns the grad mode on, as PyTorch's. Lucid has no separate kind
    of inference tensor: what is made inside is an ordinary tensor that does
    not require grad, so it may also be used in autograd later (where
    PyTorch would raise)."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self._prev = (getattr(_inference, "depth", 0), getattr(_inference, "grad", True), _C.is_grad_enabled())
        _inference.depth = self._prev[0] + 1 if self.mode else 0
        _inference.grad = not self.mode
        _C.set_grad_enabled(not self.mode)
        return self

    def __exit__(self, *exc):
        _inference.depth, _inference.grad, recording = self._prev
        _C.set_grad_enabled(recording)
        return False

    def _fresh(self):
        return inference_mode(self.mode)



from .function import Function, FunctionCtx, once_differentiable  # noqa: E402,F401
from . import graph  # noqa: E402,F401
from . import functional  # noqa: E402,F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: E402,F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from .variable import Variable  # noqa: E402,F401
from . import forward_ad, grad_mode, profiler, profiler_util  # noqa: E402,F401
from .grad_mode import set_multithreading_enabled  # noqa: E402,F401
