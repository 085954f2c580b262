"""lucid.backends.cudnn: torch.backends.cudnn's flags (``cudnn.benchmark =
True`` and friends). cuDNN is never available in Lucid: its convolutions are
the engine's own on every device, so the flags are kept and have no effect."""
import sys as _sys
import types as _types


def is_available():
    return False


def version():
    return None


class _CudnnModule(_types.ModuleType):
    # A module subclass so `import lucid.backends.cudnn as cudnn; cudnn.benchmark = True` stores the flag.
    enabled = True
    benchmark = False
    deterministic = False
    allow_tf32 = True
    benchmark_limit = 10


_sys.modules[__name__].__class__ = _CudnnModule
