"""lucid.cuda: torch.cuda's questions, answered from the engine's device
registry.

A program that never touches a GPU still asks them (``is_available()``,
``manual_seed_all``, ``device_count()``...). The answers come from which
backends the core registered: this build has a CUDA backend only if the core
registered a ``cuda`` allocator. Without one, the queries answer as PyTorch's
CPU build does (no devices, nothing allocated, seeding does nothing), and the
calls that need a GPU raise ``CudaUnavailableError``.
"""
import contextlib
import functools

from .. import _C

__all__ = [
    "CudaUnavailableError", "current_device", "device", "device_count", "empty_cache", "get_device_capability",
    "get_device_name", "get_device_properties", "get_rng_state", "get_rng_state_all", "init", "initial_seed",
    "is_available", "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
    "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats", "reset_peak_memory_stats",
    "seed", "seed_all", "set_device", "set_rng_state", "set_rng_state_all", "stream", "synchronize", "Event",
    "Stream",
]


class CudaUnavailableError(RuntimeError, AssertionError):
    """A call that needs a CUDA device, made where there is none. It is also
    an AssertionError, the kind PyTorch's CPU build raises for these calls."""


def is_available():
    """Whether a CUDA device can be used: the core has a CUDA backend."""
    return _C.device_available("cuda")


def device_count():
    # The core registers one allocator per device type, so one device at most.
    return 1 if is_available() else 0


def is_initialized():
    return is_available()


def _unavailable(what):
    return CudaUnavailableError(f"{what} needs a CUDA device, but this build of lucid has no CUDA backend "
                                "(lucid.cuda.is_available() is False)")


def _needs_device(fn):
    """Raises CudaUnavailableError when there is no CUDA device; otherwise the
    CUDA backend answers, through the function's body."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not is_available():
            raise _unavailable(f"lucid.cuda.{fn.__name__}()")
        return fn(*args, **kwargs)

    return wrapper


def _backend_query(name):
    # A CUDA backend registered in the core, but this module has no binding
    # for the query yet: say so rather than guess.
    raise NotImplementedError(f"lucid.cuda.{name}() is not bound to the CUDA backend yet")


def is_bf16_supported(including_emulation=True):
    if not is_available():
        return False
    _backend_query("is_bf16_supported")


@_needs_device
def init():
    pass


@_needs_device
def synchronize(device=None):
    # Kernels of a CUDA backend run in stream order on one stream; nothing to wait for yet.
    _backend_query("synchronize")


@_needs_device
def current_device():
    return 0


@_needs_device
def set_device(device):
    index = device if isinstance(device, int) else _C.device(str(device)).index
    if index != 0:
        raise ValueError(f"lucid.cuda.set_device: invalid device index {index} (one device)")


@_needs_device
def get_device_name(device=None):
    _backend_query("get_device_name")


@_needs_device
def get_device_capability(device=None):
    _backend_query("get_device_capability")


@_needs_device
def get_device_properties(device=None):
    _backend_query("get_device_properties")


class device:
    """Context manager selecting the current CUDA device (there is at most one)."""

    def __init__(self, device):
        self.idx = device if isinstance(device, int) or device is None else _C.device(str(device)).index

    def __enter__(self):
        if self.idx is not None and self.idx >= 0:
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        return False


class Stream:
    def __init__(self, *args, **kwargs):
        raise _unavailable("lucid.cuda.Stream")


class Event:
    def __init__(self, *args, **kwargs):
        raise _unavailable("lucid.cuda.Event")


@contextlib.contextmanager
def stream(stream):
    if stream is not None:
        raise _unavailable("lucid.cuda.stream")
    yield


# ------------------------------------------------------------------ seeding
# Lucid draws every device's random numbers from one generator (a counter-
# based stream keyed by the global seed). Without a CUDA device there is no
# CUDA generator to seed, and these do nothing, as in PyTorch's CPU build.
def manual_seed(seed):
    if is_available():
        _C.manual_seed(int(seed))


def manual_seed_all(seed):
    manual_seed(seed)


def seed():
    if is_available():
        _backend_query("seed")


def seed_all():
    seed()


@_needs_device
def initial_seed():
    return _C.initial_seed()


@_needs_device
def get_rng_state(device="cuda"):
    _backend_query("get_rng_state")


def get_rng_state_all():
    """One state per CUDA device: none without one (PyTorch's CPU build
    answers [] too, so checkpoints that store it unconditionally work)."""
    return [get_rng_state(i) for i in range(device_count())]


@_needs_device
def set_rng_state(new_state, device="cuda"):
    _backend_query("set_rng_state")


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# ------------------------------------------------------------------- memory
# Without a device nothing is allocated: zeros, as PyTorch's CPU build answers.
def _memory(name):
    def query(device=None):
        if is_available():
            _backend_query(name)
        return 0

    query.__name__ = name
    return query


memory_allocated = _memory("memory_allocated")
max_memory_allocated = _memory("max_memory_allocated")
memory_reserved = _memory("memory_reserved")
max_memory_reserved = _memory("max_memory_reserved")
memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def memory_stats(device=None):
    if is_available():
        _backend_query("memory_stats")
    return {}


def empty_cache():
    if is_available():
        _backend_query("empty_cache")


def reset_peak_memory_stats(device=None):
    if is_available():
        _backend_query("reset_peak_memory_stats")


reset_max_memory_allocated = reset_peak_memory_stats

from . import amp  # noqa: E402,F401
from .._tensor_surface import CUDA_TENSOR_TYPES as _TYPES  # noqa: E402

globals().update(_TYPES)  # lucid.cuda.FloatTensor, ... (constructing one needs a CUDA device)
