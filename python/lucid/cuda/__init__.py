"""The ``cuda`` device, as ``torch.cuda`` presents it.

Lucid uses one CUDA device (``cuda`` / ``cuda:0``). The backend needs no CUDA
toolkit: the NVIDIA driver, NVRTC (kernels are compiled from source on first
use, cached under ``~/.cache/lucid/cuda``) and cuBLAS are loaded at run time;
``pip install 'lucid[cuda]'`` installs NVIDIA's NVRTC and cuBLAS wheels.
Operations queue work on one stream and return; reading values (``.item()``,
``.cpu()``, ``.tolist()``, printing) and :func:`synchronize` wait for it.
"""
import importlib.util as _importlib_util
import os as _os

from .. import _C

_cuda = _C._cuda


def _wheel_library_dirs():
    # NVIDIA's wheels put their libraries in nvidia/cu13/lib (CUDA 13) or
    # nvidia/<component>/lib (earlier layouts).
    spec = _importlib_util.find_spec("nvidia")
    dirs = []
    for root in (spec.submodule_search_locations or []) if spec else []:
        for name in sorted(_os.listdir(root)):
            lib = _os.path.join(root, name, "lib")
            if _os.path.isdir(lib):
                dirs.append(lib)
    return dirs


_cuda.set_library_dirs(_wheel_library_dirs())


def is_available():
    """Whether the NVIDIA driver loads and sees a device."""
    return _cuda.availability()[0]


def unavailable_reason():
    """Why :func:`is_available` is False ("" when it is True)."""
    return _cuda.availability()[1]


def device_count():
    return _cuda.device_count()


def current_device():
    return 0


def get_device_name(device=None):
    return _cuda.device_name()


def synchronize(device=None):
    """Waits for all queued work on the device; raises errors kernels reported."""
    _cuda.synchronize()


def manual_seed(seed):
    """Random draws on every device come from one Philox generator (the same
    numbers as on the CPU for the same seed): this is ``lucid.manual_seed``."""
    _C.manual_seed(int(seed))


manual_seed_all = manual_seed


def memory_allocated(device=None):
    """Bytes held by tensors on the device."""
    return _cuda.memory_allocated()


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated` since start or the last :func:`reset_peak_memory_stats`."""
    return _cuda.max_memory_allocated()


def reset_peak_memory_stats(device=None):
    _cuda.reset_peak_memory_stats()


def memory_reserved(device=None):
    """Bytes the caching allocator holds (in use or cached for reuse)."""
    return _cuda.memory_reserved()


def empty_cache():
    """Returns memory cached for reuse to the driver."""
    _cuda.empty_cache()


def compile_kernel_modules(arch="sm_90"):
    """Compiles every fixed kernel module with NVRTC for ``arch`` (no device
    needed); returns ``[(module, log)]`` for those that fail."""
    return _cuda.compile_kernel_modules(arch)
