"""torch.backends.mkldnn: Lucid does not use oneDNN (its CPU kernels and
OpenBLAS do the work): ``is_available()`` is False; ``enabled`` and
``deterministic`` are kept and change nothing."""
import contextlib
import sys

__all__ = ["is_available", "flags"]

enabled = True
deterministic = False


def is_available():
    return False


@contextlib.contextmanager
def flags(enabled=False, deterministic=False):  # noqa: F811 - PyTorch's parameter names
    """Sets the switches for the block and restores them."""
    module = sys.modules[__name__]
    saved = module.enabled, module.deterministic
    module.enabled, module.deterministic = enabled, deterministic
    try:
        yield
    finally:
        module.enabled, module.deterministic = saved
