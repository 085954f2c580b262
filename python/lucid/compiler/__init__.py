"""torch.compiler: the public face of the compiler for training code.
``is_compiling()`` is True while Lucid traces a compiled step or forward
(where PyTorch's Dynamo traces); ``disable``, ``allow_in_graph`` and
``assume_constant_result`` return the function (Lucid's trace has no graph
breaks: the function's ops are traced with the rest and give the same
values); ``reset`` has no global cache to clear."""
import contextlib

from .. import _dynamo
from . import config  # noqa: F401
from ..compile import compile  # noqa: F401

__all__ = ["compile", "config", "assume_constant_result", "reset", "allow_in_graph", "list_backends", "disable",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "cudagraph_mark_step_begin", "set_stance"]

disable = _dynamo.disable
allow_in_graph = _dynamo.allow_in_graph
assume_constant_result = _dynamo.assume_constant_result
reset = _dynamo.reset
list_backends = _dynamo.list_backends
is_compiling = _dynamo.is_compiling
is_dynamo_compiling = _dynamo.is_compiling


def is_exporting():
    return False


def cudagraph_mark_step_begin():
    """PyTorch marks where CUDA-graph trees may reuse memory; Lucid's CUDA
    steps keep their own buffers."""


class set_stance(contextlib.ContextDecorator):
    """Accepted as a call, a context manager or a decorator; it changes nothing in Lucid."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        self.stance = stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
