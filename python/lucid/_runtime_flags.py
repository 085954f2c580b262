"""torch's process-wide switches and their queries, as Lucid has them:
autocast's state (one state for every device type, so the per-device
getters and setters read and write the same one), anomaly detection (not
available: it can be queried and switched off), warn-always, flush-denormal,
and the error types torch exposes at top level."""
from . import _C

__all__ = [
    "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "set_warn_always", "is_warn_always_enabled", "set_flush_denormal",
    "OutOfMemoryError", "AcceleratorError",
]


# ------------------------------------------------------------------ autocast
def is_autocast_enabled(device_type=None):
    return bool(_C.autocast_state()[0])


def _split_device_arg(args, what):
    # torch accepts both f(value) (the old CUDA-only form) and f(device_type, value).
    if len(args) == 1:
        return args[0]
    if len(args) == 2 and isinstance(args[0], str):
        return args[1]
    raise TypeError(f"{what}() takes (value) or (device_type, value)")


def set_autocast_enabled(*args):
    enabled = _split_device_arg(args, "set_autocast_enabled")
    _C.set_autocast_state(bool(enabled), _C.autocast_state()[1])


def get_autocast_dtype(device_type=None):
    return _C.autocast_state()[1]


def set_autocast_dtype(device_type, dtype):
    _C.set_autocast_state(_C.autocast_state()[0], dtype)


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    set_autocast_dtype("cuda", dtype)


# Lucid keeps no cache of autocast's casts (each cast is an op of the graph),
# so the cache switch is recorded for the queries only.
_autocast_cache_enabled = True
_autocast_nesting = 0


def is_autocast_cache_enabled():
    return _autocast_cache_enabled


def set_autocast_cache_enabled(enabled):
    global _autocast_cache_enabled
    _autocast_cache_enabled = bool(enabled)


def clear_autocast_cache():
    pass


def autocast_increment_nesting():
    global _autocast_nesting
    _autocast_nesting += 1
    return _autocast_nesting


def autocast_decrement_nesting():
    global _autocast_nesting
    _autocast_nesting = max(0, _autocast_nesting - 1)
    return _autocast_nesting


# ----------------------------------------------------------- anomaly, warnings
# Anomaly detection: while on (with check_nan), backward raises PyTorch's
# error at the first node returning a NaN gradient (the engine's check); the
# error names the node but Lucid records no forward traceback for it.
is_anomaly_enabled = _C.is_anomaly_enabled
is_anomaly_check_nan_enabled = _C.is_anomaly_check_nan_enabled


def set_anomaly_enabled(enabled, check_nan=True):
    _C.set_anomaly_enabled(bool(enabled), bool(check_nan))


_warn_always = False


def set_warn_always(b):
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled():
    return _warn_always


def set_flush_denormal(mode):
    """Lucid does not change the CPU's floating-point mode: False, as torch
    returns where flushing is not supported."""
    return False


# -------------------------------------------------------------------- errors
# Raised when a device cannot allocate (torch.OutOfMemoryError): a
# RuntimeError, as PyTorch's, and a MemoryError.
OutOfMemoryError = _C.OutOfMemoryError


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator's runtime (torch.AcceleratorError)."""
