"""lucid.accelerator: torch.accelerator's device-agnostic questions. The
accelerator is the first usable non-CPU device of the core's registry
(CUDA, then Metal); with neither, there is none."""
from . import _C

_ORDER = ("cuda", "metal")


def current_accelerator(check_available=False):
    """The accelerator's device type as a lucid.device, or None."""
    for kind in _ORDER:
        if _C.device_available(kind):
            return _C.device(kind)
    return None


def is_available():
    return current_accelerator() is not None


def device_count():
    # One device per registered backend type.
    return 1 if is_available() else 0


def _require(what):
    acc = current_accelerator()
    if acc is None:
        raise RuntimeError(f"lucid.accelerator.{what}: there is no accelerator (no CUDA or Metal device in this "
                           "build of lucid)")
    return acc


def current_device_index():
    _require("current_device_index()")
    return 0


current_device_idx = current_device_index


def set_device_index(device):
    _require("set_device_index()")
    index = device if isinstance(device, int) else _C.device(str(device)).index
    if index != 0:
        raise ValueError(f"lucid.accelerator.set_device_index: invalid device index {index} (one device)")


set_device_idx = set_device_index


def synchronize(device=None):
    """Waits for the accelerator's queued work. Lucid's eager ops and compiled
    steps return once their results are written, so there is nothing queued."""
    _require("synchronize()")
