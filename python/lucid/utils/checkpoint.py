"""Activation checkpointing (torch.utils.checkpoint): a checkpointed
function's forward keeps none of its intermediate results; backward runs it
again, with the random stream and autocast state of the first run, and
differentiates that.

Both of PyTorch's variants give PyTorch's gradients for ``loss.backward()``;
they are built the same way here (the function's recomputation is
differentiated inside the checkpoint's backward, as PyTorch's reentrant
variant does). With ``use_reentrant=False`` the parameters inside get their
gradients even when no input requires grad, as PyTorch's non-reentrant
variant gives them. ``autograd.grad`` through a checkpoint raises, as with
PyTorch's reentrant variant (its non-reentrant variant supports it). Inside
a compiled step the function simply runs: the executable plans its own
memory.
"""
import contextlib
import warnings

from .. import _C
from .._creation import zeros
from ..autograd import Function, _in_grad_call, backward as _backward, enable_grad
from .._settings import get_rng_state, set_rng_state
from ..random import fork_rng

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, run, preserve_rng_state, anchor, *args):
        ctx.run = run
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.autocast = _C.autocast_state()
        ctx.tensor_at = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        ctx.others = list(args)
        for i in ctx.tensor_at:
            ctx.others[i] = None
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_at))
        return run(*args)

    @staticmethod
    def backward(ctx, *grads):
        if _in_grad_call():
            raise RuntimeError("Checkpointing is not compatible with .grad(): the recomputed function's gradients "
                               "are accumulated into .grad; use .backward() (lucid.utils.checkpoint)")
        args = list(ctx.others)
        inputs = []
        for i, t in zip(ctx.tensor_at, ctx.saved_tensors):
            args[i] = t.detach().requires_grad_(t.requires_grad)
            inputs.append(args[i])
        with fork_rng(enabled=ctx.rng_state is not None), enable_grad(), _autocast(ctx.autocast):
            if ctx.rng_state is not None:
                set_rng_state(ctx.rng_state)
            outputs = ctx.run(*args)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        roots, root_grads = [], []
        for out, g in zip(outputs, grads):
            if isinstance(out, _C.Tensor) and out.requires_grad and g is not None:
                roots.append(out)
                root_grads.append(g)
        if roots:
            _backward(roots, root_grads)
        input_grads = [t.grad if t.requires_grad else None for t in inputs]
        full = [None] * (3 + len(args))
        for i, g in zip(ctx.tensor_at, input_grads):
            full[3 + i] = g
        return tuple(full)


@contextlib.contextmanager
def _autocast(state):
    previous = _C.autocast_state()
    _C.set_autocast_state(*state)
    try:
        yield
    finally:
        _C.set_autocast_state(*previous)


def _use_reentrant(use_reentrant, name):
    if use_reentrant is None:
        warnings.warn(f"lucid.utils.checkpoint.{name}: the use_reentrant parameter should be passed explicitly "
                      "(as PyTorch asks); use_reentrant=False is recommended. Defaulting to True.", stacklevel=3)
        return True
    return use_reentrant


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, its intermediate results recomputed
    during backward instead of kept (see the module's notes)."""
    use_reentrant = _use_reentrant(use_reentrant, "checkpoint")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if _C._is_tracing() or not _C.is_grad_enabled():
        return function(*args, **kwargs)
    if not use_reentrant:
        forward_context, recompute_context = context_fn()

        def run(*a):
            with recompute_context if _C.is_grad_enabled() else forward_context:
                return function(*a, **kwargs)
        # A tensor that requires grad, so the node exists (and the function's
        # parameters get their gradients) whatever the inputs require.
        anchor = zeros((), requires_grad=True)
    else:
        if not any(isinstance(a, _C.Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        run, anchor = function, None
    return _Checkpoint.apply(run, preserve, anchor, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """Runs ``functions`` (a list or an nn.Sequential) in ``segments``
    pieces, every piece but the last checkpointed."""
    use_reentrant = _use_reentrant(use_reentrant, "checkpoint_sequential")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run_function(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,  # noqa: A001
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
