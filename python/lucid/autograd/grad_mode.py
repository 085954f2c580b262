"""torch.autograd.grad_mode: the switches of gradient recording."""
import contextlib

from . import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled"]


class set_multithreading_enabled(contextlib.ContextDecorator):
    """PyTorch's switch for running backward on device threads. Lucid's
    backward runs on the calling thread either way: accepted, changes nothing."""

    def __init__(self, mode):
        self.mode = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def clone(self):
        return type(self)(self.mode)
