"""The ``cuda`` device, as ``torch.cuda`` presents it.

Lucid uses one CUDA device (``cuda`` / ``cuda:0``). The backend needs no CUDA
toolkit: the NVIDIA driver, NVRTC (kernels are compiled from source on first
use, cached under ``~/.cache/lucid/cuda``), cuBLAS and cuDNN are loaded at run
time; ``pip install 'lucid-engine[cuda]'`` installs NVIDIA's NVRTC, cuBLAS and
cuDNN wheels.
Operations queue work on one stream and return; reading values (``.item()``,
``.cpu()``, ``.tolist()``, printing) and :func:`synchronize` wait for it.

Without a usable device (no driver, no GPU) the queries a CPU program still
makes answer as PyTorch's CPU build does (no devices, nothing allocated,
seeding does nothing), and the calls that need a GPU raise
``CudaUnavailableError``.
"""
import contextlib
import functools
import importlib.util as _importlib_util
import os as _os

from .. import _C

_cuda = _C._cuda


def _wheel_library_dirs():
    # NVIDIA's wheels put their libraries in nvidia/cu13/lib (CUDA 13) or
    # nvidia/<component>/lib (earlier layouts, and cuDNN's nvidia/cudnn/lib).
    spec = _importlib_util.find_spec("nvidia")
    dirs = []
    for root in (spec.submodule_search_locations or []) if spec else []:
        for name in sorted(_os.listdir(root)):
            lib = _os.path.join(root, name, "lib")
            if _os.path.isdir(lib):
                dirs.append(lib)
    return dirs


_cuda.set_library_dirs(_wheel_library_dirs())

__all__ = [
    "CudaUnavailableError", "current_device", "device", "device_count", "empty_cache", "get_device_capability",
    "get_device_name", "get_device_properties", "get_rng_state", "get_rng_state_all", "init", "initial_seed",
    "is_available", "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
    "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats", "reset_peak_memory_stats",
    "seed", "seed_all", "set_device", "set_rng_state", "set_rng_state_all", "stream", "synchronize", "Event",
    "Stream", "unavailable_reason", "compile_kernel_modules",
]


class CudaUnavailableError(RuntimeError, AssertionError):
    """A call that needs a CUDA device, made where there is none. It is also
    an AssertionError, the kind PyTorch's CPU build raises for these calls."""


def is_available():
    """Whether the NVIDIA driver loads and sees a device."""
    return _cuda.availability()[0]


def unavailable_reason():
    """Why :func:`is_available` is False ("" when it is True)."""
    return _cuda.availability()[1]


def device_count():
    return _cuda.device_count() if is_available() else 0


def is_initialized():
    return is_available()


def _unavailable(what):
    return CudaUnavailableError(f"CUDA is not available: {what} needs a CUDA device ({unavailable_reason()})")


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
    return is_available()  # bfloat16 tensors work on every device the backend runs on


@_needs_device
def init():
    pass


@_needs_device
def synchronize(device=None):
    """Waits for all queued work on the device; raises errors kernels reported."""
    _cuda.synchronize()


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
    return _cuda.device_name()


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
# Lucid draws every device's random numbers from one Philox generator (the
# same numbers on cuda as on the CPU for a seed): seeding cuda is
# lucid.manual_seed. Without a CUDA device these do nothing, as in PyTorch's
# CPU build.
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
def memory_allocated(device=None):
    """Bytes held by tensors on the device."""
    return _cuda.memory_allocated() if is_available() else 0


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated` since start or the last :func:`reset_peak_memory_stats`."""
    return _cuda.max_memory_allocated() if is_available() else 0


def memory_reserved(device=None):
    """Bytes the caching allocator holds (in use or cached for reuse)."""
    return _cuda.memory_reserved() if is_available() else 0


def max_memory_reserved(device=None):
    if is_available():
        _backend_query("max_memory_reserved")
    return 0


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def memory_stats(device=None):
    if is_available():
        _backend_query("memory_stats")
    return {}


def empty_cache():
    """Returns memory cached for reuse to the driver."""
    if is_available():
        _cuda.empty_cache()


def reset_peak_memory_stats(device=None):
    if is_available():
        _cuda.reset_peak_memory_stats()


reset_max_memory_allocated = reset_peak_memory_stats


def compile_kernel_modules(arch="sm_90"):
    """Compiles every fixed kernel module with NVRTC for ``arch`` (no device
    needed); returns ``[(module, log)]`` for those that fail."""
    return _cuda.compile_kernel_modules(arch)

from . import amp  # noqa: E402,F401
from .._tensor_surface import CUDA_TENSOR_TYPES as _TYPES  # noqa: E402

globals().update(_TYPES)  # lucid.cuda.FloatTensor, ... (constructing one needs a CUDA device)
