"""lucid.backends: the switches PyTorch programs set on torch.backends.

``backends.cuda.matmul.allow_tf32`` lets the cuda device's float32 GEMMs
(convolutions included) use TF32; the cuDNN flags (``backends.cudnn.benchmark``
...) are kept and read back as set and change nothing (Lucid uses no cuDNN).
``backends.mps.is_available()`` says whether the Metal device can be used
(``"mps"`` is Lucid's ``"metal"``).
"""
from . import cuda, cudnn, mps  # noqa: F401

__all__ = ["cuda", "cudnn", "mps"]
