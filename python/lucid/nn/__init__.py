"""lucid.nn: modules, parameters, initialisers and functional layers with
PyTorch's names, arguments, defaults and state_dict keys."""
from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from . import attention, grad  # noqa: F401
from .modules import NLLLoss as NLLLoss2d  # noqa: F401  (PyTorch's deprecated alias)
from .modules import Module as _Module


class Container(_Module):
    """The deprecated nn.Container: a Module holding the modules given as keywords."""

    def __init__(self, **kwargs):
        import warnings

        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
