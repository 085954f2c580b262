"""Compiled training steps: the whole step traced once per signature and run
as one executable per call.

A trace records the path Python took on the first call with a given
signature (like ``torch.jit.trace``): data-dependent Python branches are
baked in, and reading a value inside the step (``.item()``, ``.numpy()``)
raises. ``loss_fn`` is part of the signature by identity, so passing a fresh
lambda on every call recompiles every time.
"""
from ._optimizer import compile_optimizer
from ._step import fused_step, make_step, train_step

__all__ = ["compile_optimizer", "fused_step", "make_step", "train_step"]
