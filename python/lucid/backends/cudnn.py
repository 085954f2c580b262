"""lucid.backends.cudnn: torch.backends.cudnn. The cuda device's convolutions
run on cuDNN 9 when it is installed (``pip install 'lucid-engine[cuda]'``
brings NVIDIA's ``nvidia-cudnn-cu13``) and ``enabled`` is True, and on the
engine's own im2col + GEMM otherwise.

cuDNN's algorithms are chosen by its heuristics (no timing runs) among the
deterministic ones, and float32 stays float32 unless
``lucid.backends.cuda.matmul.allow_tf32`` is set, the cuda device's one TF32
switch: so ``benchmark``, ``deterministic``, ``allow_tf32`` and
``benchmark_limit`` are kept and read back and change nothing."""
import sys as _sys
import types as _types

from .. import _C


def is_available():
    """Whether cuDNN can run the cuda device's convolutions: a CUDA device and
    cuDNN 9 (``libcudnn.so.9``). The first call loads cuDNN, which starts the
    device."""
    return _C._cuda.cudnn_availability()[0]


def unavailable_reason():
    """Why :func:`is_available` is False ("" when it is True)."""
    return _C._cuda.cudnn_availability()[1]


def version():
    """cuDNN's version as an int (``91200`` for 9.12.0), None when it is not available."""
    return _C._cuda.cudnn_version() or None


def is_acceptable(tensor):
    """Whether cuDNN may run a convolution of ``tensor`` (as PyTorch's)."""
    return (_C._cuda.cudnn_enabled() and tensor.device.type == "cuda"
            and tensor.dtype.is_floating_point and is_available())


class _CudnnModule(_types.ModuleType):
    # A module subclass so `import lucid.backends.cudnn as cudnn; cudnn.benchmark = True` stores the flag.
    benchmark = False
    deterministic = False
    allow_tf32 = True
    benchmark_limit = 10

    @property
    def enabled(self):
        """Whether the cuda device's convolutions may use cuDNN."""
        return _C._cuda.cudnn_enabled()

    @enabled.setter
    def enabled(self, on):
        _C._cuda.set_cudnn_enabled(bool(on))


_sys.modules[__name__].__class__ = _CudnnModule
