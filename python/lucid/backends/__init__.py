"""lucid.backends: the switches PyTorch programs set on torch.backends.

``backends.cuda.matmul.allow_tf32`` lets the cuda device's float32 GEMMs
and convolutions use TF32; ``backends.cudnn.enabled`` says whether the cuda
device's convolutions may run on cuDNN (``backends.cudnn.is_available()``),
and the other cuDNN flags (``backends.cudnn.benchmark`` ...) are kept and read
back as set and change nothing.
``backends.mps.is_available()`` says whether the Metal device can be used
(``"mps"`` is Lucid's ``"metal"``).
``backends.cpu.get_cpu_capability()`` names the CPU's vector instructions;
``mkl``, ``mkldnn``, ``openmp`` and ``opt_einsum`` answer ``is_available()``
False: Lucid uses none of them.
"""
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
