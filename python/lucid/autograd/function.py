"""lucid.autograd.Function: an op whose forward and backward are Python
functions of tensors (PyTorch's custom autograd functions).

`apply` runs `forward` without recording history, then wires the outputs to
one node whose backward calls the Function's `backward` with the outputs'
gradients; it returns one gradient per forward argument. The backward runs
under the engine's grad mode, so with create_graph=True its ops are recorded
too; inside a compiled step both are traced like any other Python code of
the step (they must not read tensor values there).
"""
import functools

from .. import _C
from . import no_grad


class FunctionCtx:
    """The `ctx` of forward/setup_context and backward."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._to_save_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self._materialize = bool(value)

    @property
    def saved_tensors(self):
        saved = getattr(self, "_saved", None)
        if saved is None:
            if getattr(self, "_released", False):
                raise RuntimeError("Trying to backward through the graph a second time (or directly access saved "
                                   "tensors after they have already been freed). Saved intermediate values of the "
                                   "graph are freed when you call .backward() or autograd.grad(). Specify "
                                   "retain_graph=True if you need to backward through the graph a second time or "
                                   "if you need to access saved tensors after calling backward.")
            return tuple(getattr(self, "_to_save", ()))
        for i, (t, version, _) in enumerate(saved):
            if t is not None and t._version != version:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.dtype}{list(t.shape)}] is at version {t._version}; expected version "
                    f"{version} instead (saved tensor {i} of {type(self).__name__}).")
        return tuple(t if output_nr is None else _C._saved_output(t, output_nr) for t, _, output_nr in saved)

    saved_variables = saved_tensors


def _contains(tensors, t):
    return any(x is t for x in tensors)


@functools.lru_cache(maxsize=None)
def _context_class(cls):
    """The ctx type of a Function, `<Name>Backward` (made once per Function)."""
    return type(cls.__name__ + "Backward", (FunctionCtx,), {})


class Function:
    """Subclass with static `forward(ctx, *args)` (or `forward(*args)` plus
    `setup_context(ctx, inputs, output)`) and `backward(ctx, *grads)`; call
    it through `apply`."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Function instances are not called: use the class's apply (MyFunction.apply(x))")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = _context_class(cls)()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        separate = cls.setup_context is not Function.setup_context
        with no_grad():
            output = cls.forward(*args, **kwargs) if separate else cls.forward(ctx, *args, **kwargs)
        if separate:
            cls.setup_context(ctx, args, output)
        if not (_C.is_grad_enabled() and any(ctx.needs_input_grad)):
            return output
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        where = [i for i, o in enumerate(outputs) if isinstance(o, _C.Tensor)]
        tensors = [outputs[i] for i in where]
        dirty = getattr(ctx, "_dirty", ())
        frozen = getattr(ctx, "_non_differentiable", ())
        backward = cls.backward if cls.backward is not Function.backward else cls.vjp
        name = cls.__name__ + "Backward"

        def run_backward(*grads):
            return backward(ctx, *grads)

        def release():
            ctx._saved = None
            ctx._released = True

        wired = _C._function_node(
            name, run_backward, release, [a if isinstance(a, _C.Tensor) else None for a in args], tensors,
            [not _contains(frozen, t) for t in tensors], [_contains(dirty, t) for t in tensors],
            getattr(ctx, "_materialize", True))
        # Saved outputs are kept without their history (the node would keep
        # itself alive through them), with their place among the node's
        # outputs to get it back in a backward that records history; saved
        # inputs keep theirs.
        output_nr = {id(t): k for k, t in enumerate(tensors) if not _contains(args, t)}
        ctx._saved = [(None, 0, None) if t is None else
                      (t.detach(), t._version, output_nr[id(t)]) if id(t) in output_nr else (t, t._version, None)
                      for t in getattr(ctx, "_to_save", ())]
        outputs = list(outputs)
        for i, t in zip(where, wired):
            outputs[i] = t
        return outputs[0] if single else tuple(outputs)


def once_differentiable(fn):
    """The backward's own ops are not recorded (a create_graph backward
    through it gives gradients without history)."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)

    return wrapper


class RemovableHandle:
    """What register_hook returns: remove() unregisters the hook."""

    def __init__(self, tensor, hook_id):
        self._tensor, self.id = tensor, hook_id

    def remove(self):
        if self._tensor is not None:
            _C._remove_hook(self._tensor, self.id)
            self._tensor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
