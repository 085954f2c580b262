"""lucid.backends: the switches PyTorch programs set on torch.backends.

The CUDA and cuDNN switches (``backends.cuda.matmul.allow_tf32``,
``backends.cudnn.benchmark``...) are kept and read back as set; they change
nothing while there is no CUDA backend, as PyTorch's are inert on its CPU
build. ``backends.mps.is_available()`` says whether the Metal device can be
used (``"mps"`` is Lucid's ``"metal"``).
"""
from . import cuda, cudnn, mps  # noqa: F401

__all__ = ["cuda", "cudnn", "mps"]
