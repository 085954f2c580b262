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
