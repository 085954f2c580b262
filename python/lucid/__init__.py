"""Lucid: a deep-learning engine whose whole training step compiles into one
executable. The Python API follows PyTorch's names and semantics."""
import os as _os
import sys as _sys


def _preload_blas():
    # The core links libscipy_openblas through an rpath into the sibling
    # scipy_openblas32 package; loading it first also covers editable and
    # relocated installs.
    if not _sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import scipy_openblas32

        libdir = scipy_openblas32.get_lib_dir()
        for name in _os.listdir(libdir):
            if name.startswith("lib") and ".so" in name:
                ctypes.CDLL(_os.path.join(libdir, name), mode=ctypes.RTLD_GLOBAL)
    except (ImportError, OSError):
        pass


_preload_blas()

from . import _C  # noqa: E402
from ._C import InvalidArgument, Tensor, device, dtype  # noqa: E402

bool = dtype.bool  # noqa: A001
uint8 = dtype.uint8
int8 = dtype.int8
int16 = dtype.int16
int32 = dtype.int32
int64 = dtype.int64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
half = float16
float = float32  # noqa: A001
double = float64
int = int32  # noqa: A001
long = int64
byte = uint8
char = int8
short = int16

from . import _tensor  # noqa: E402,F401  (adds the Tensor methods)
from ._memory_format import (  # noqa: E402
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from ._creation import (  # noqa: E402
    arange,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from ._functions import *  # noqa: E402,F401,F403
from ._functions import __all__ as _function_names  # noqa: E402
from .autograd import (enable_grad, no_grad, set_grad_enabled, is_grad_enabled, inference_mode,  # noqa: E402
                       is_inference_mode_enabled)

get_default_dtype = _C.get_default_dtype
set_default_dtype = _C.set_default_dtype
get_default_device = _C.get_default_device
set_default_device = _C.set_default_device
promote_types = _C.promote_types
manual_seed = _C.manual_seed
initial_seed = _C.initial_seed
set_num_threads = _C.set_num_threads
get_num_threads = _C.get_num_threads


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.dtype.is_floating_point


__version__ = "0.1.0"
from .serialization import load, save  # noqa: E402
from . import utils  # noqa: E402,F401
from .utils.data._random import Generator  # noqa: E402
from ._sampling import multinomial, randperm  # noqa: E402
from ._composite import *  # noqa: E402,F401,F403  (more of torch's functions, composed of ops)
from ._settings import *  # noqa: E402,F401,F403
from ._foreach import *  # noqa: E402,F401,F403  (torch._foreach_*)
from ._scatter_ops import *  # noqa: E402,F401,F403  (scatter_reduce, index_reduce, put, *_scatter)
from ._namespace_more import *  # noqa: E402,F401,F403  (windows, trapezoid, gcd, *_copy, asarray...)
from . import _tensor_surface  # noqa: E402  (more Tensor methods)
globals().update(_tensor_surface.TENSOR_TYPES)  # lucid.FloatTensor, lucid.LongTensor, ...
from ._legacy_names import *  # noqa: E402,F401,F403  (pi, e, inf, nan, newaxis, is_complex, set_default_tensor_type)
# The namespaces `import torch` also brings in.
from . import nn  # noqa: E402,F401
from ._nn_namespace import *  # noqa: E402,F401,F403  (torch.conv2d, torch.dropout, torch.batch_norm...)
from . import optim, amp, compile, cuda, backends, accelerator, distributed, onnx, jit, linalg, special, random  # noqa: E402,F401
from . import profiler, compiler, _dynamo, _inductor, hub, multiprocessing, overrides, types  # noqa: E402,F401
# (torch.compiler, torch._dynamo.config and the other modules `import torch` brings)
# torch's top-level linear algebra (torch.det, torch.svd's old form, ...) and its Tensor methods
globals().update(linalg.TOP_LEVEL)
for _name, _fn in linalg.TOP_LEVEL.items():
    setattr(Tensor, _name, (lambda f: lambda self, *a, **k: f(self, *a, **k))(_fn))
from . import distributions, func, testing  # noqa: E402,F401
from .amp import autocast, GradScaler  # noqa: E402  (torch.autocast, torch.GradScaler)
from ._runtime_flags import *  # noqa: E402,F401,F403  (autocast/anomaly/warning switches, error types)
vmap = func.vmap
from ._out import accept_out as _accept_out  # noqa: E402
_accept_out(globals())  # PyTorch's out= on the functions that have it
# find_package(Lucid) prefix for native apps linking the C++ core (like torch.utils.cmake_prefix_path).
cmake_prefix_path = __import__("os").path.join(__import__("os").path.dirname(__file__), "share", "cmake")
