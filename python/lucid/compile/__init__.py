"""Compiled training steps: the whole step traced once per signature and run
as one executable per call.

A trace records the path Python took on the first call with a given
signature (like ``torch.jit.trace``): data-dependent Python branches are
baked in, and reading a value inside the step (``.item()``, ``.numpy()``)
raises. ``loss_fn`` is part of the signature by identity, so passing a fresh
lambda on every call recompiles every time.

The module is also callable as PyTorch's ``torch.compile(model)``: see
:func:`compile`.
"""
import sys
import types

from ._optimizer import compile_optimizer
from ._step import fused_step, make_step

__all__ = ["compile_optimizer", "fused_step", "make_step"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """``torch.compile``'s signature: returns ``model`` (a module or a
    function) unchanged, so it runs eagerly and computes what it computes
    uncompiled. Used as a decorator with or without arguments likewise.
    Lucid compiles whole training steps instead: :func:`fused_step`,
    :func:`make_step` and :func:`compile_optimizer`."""
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise TypeError(f"compile: expected a module or a function, got {type(model).__name__}")
    return model


class _CallableModule(types.ModuleType):
    def __call__(self, model=None, **kwargs):
        return compile(model, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
