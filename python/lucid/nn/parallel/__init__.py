"""lucid.nn.parallel: DataParallel and DistributedDataParallel, as PyTorch's
behave where there is one device.

``DataParallel`` replicates a module over several CUDA devices; with none (or
one) it runs the module itself, as PyTorch's does without CUDA, and its
state_dict keys carry the ``module.`` prefix like PyTorch's.
``DistributedDataParallel`` needs a process group, which Lucid does not have:
constructing one raises.
"""
from ..modules.module import Module
from ...distributed import _unsupported

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        # No CUDA devices to spread over (Lucid has at most one device per type).
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    def __init__(self, module, *args, **kwargs):
        super().__init__()
        raise _unsupported("DistributedDataParallel")


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return module(*inputs, **(module_kwargs or {}))
