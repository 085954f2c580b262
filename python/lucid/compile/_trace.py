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


# Devices with a compiled-graph backend. The cuda device runs eagerly only,
# for now: graph::compile would refuse it too, but only after the trace,
# which has created optimizer state by then.
_COMPILED_DEVICES = ("cpu", "metal")


def check_compiled_devices(tensors, what):
    """NotImplementedError, before anything is traced or run, when a tensor
    lives on a device compiled steps do not support yet."""
    for t in tensors:
        if t is not None and t.device.type not in _COMPILED_DEVICES:
            raise NotImplementedError(
                f"{what} on the {t.device.type} device is not implemented yet: run the step eagerly "
                f"(zero_grad, forward, backward, optimizer.step) on {t.device.type}")


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
