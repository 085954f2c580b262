"""Tracing helpers shared by the compiled entry points."""
import contextlib

from .. import _C


@contextlib.contextmanager
def tracing(tracer):
    """Makes `tracer` current, with gradient recording on (backward is traced
    as the eager tape run under the tracer)."""
    prev_grad = _C.is_grad_enabled()
    tracer.enter()
    _C.set_grad_enabled(True)
    try:
        yield tracer
    finally:
        _C.set_grad_enabled(prev_grad)
        tracer.exit()


@contextlib.contextmanager
def outside_trace(tracer):
    """Suspends `tracer` for a block: what it creates (optimizer state) is
    concrete, not recorded."""
    tracer.exit()
    try:
        yield
    finally:
        tracer.enter()


def tensor_meta(t):
    return (tuple(t.shape), str(t.dtype), str(t.device))


def as_tensor_args(args):
    from .._creation import tensor

    out = []
    for a in args:
        out.append(a if isinstance(a, _C.Tensor) else tensor(a))
    return out


def describe_change(old, new):
    """Names the parts of a signature that differ (for cache-miss reports)."""
    if old is None:
        return "first call"
    changed = [name for name in new if old.get(name) != new[name]]
    if not changed:
        return "captured buffers were rebound (e.g. a parameter's .data was replaced)"
    return "; ".join(f"{name} changed: {old.get(name)!r} -> {new[name]!r}" for name in changed)
