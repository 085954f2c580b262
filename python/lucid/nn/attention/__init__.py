"""torch.nn.attention: choosing the kernel behind scaled_dot_product_attention.
Lucid has one implementation per device (the math form, composed of ops),
so a choice of backend is accepted, checked, and has no effect, as on a
PyTorch build that has only the math kernel."""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    chosen = list(backends) if isinstance(backends, (list, tuple, set)) else [backends]
    for backend in chosen:
        if not isinstance(backend, SDPBackend):
            raise AssertionError("Backend must be an instance of SDPBackend")
    yield
