"""lucid.backends.mps: whether the Apple GPU can be used. PyTorch calls it
"mps"; in Lucid it is the ``metal`` device (``lucid.device("mps")`` is accepted
and means the same)."""
from .. import _C


def is_available():
    """Whether the Metal device is usable (macOS with the Metal backend built)."""
    return _C.device_available("metal")


def is_built():
    """Whether this build of lucid has the Metal backend. The core registers the
    backend only where it runs, so this is the same question as is_available()."""
    return _C.device_available("metal")
