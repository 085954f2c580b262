"""Compiled training steps (the whole step traced once per signature and run
as one executable per call) and compiled forwards (``lucid.compile(model)``).

A trace records the path Python took on the first call with a given
signature (like ``torch.jit.trace``): data-dependent Python branches are
baked in, and reading a value inside the step (``.item()``, ``.numpy()``)
raises. ``loss_fn`` is part of the signature by identity, so passing a fresh
lambda on every call recompiles every time.
"""
import sys as _sys
import types as _types

from ._function import CompiledFunction, compile
from ._optimizer import compile_optimizer
from ._step import fused_step, make_step, train_step

__all__ = ["CompiledFunction", "compile", "compile_optimizer", "fused_step", "make_step", "train_step"]


class _CallableModule(_types.ModuleType):
    """``lucid.compile(model)`` compiles a forward, as torch.compile does;
    ``lucid.compile.fused_step`` etc. stay importable from the same name."""

    def __call__(self, model=None, **kwargs):
        return compile(model, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
