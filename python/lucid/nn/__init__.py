"""lucid.nn: modules, parameters, initialisers and functional layers with
PyTorch's names, arguments, defaults and state_dict keys."""
from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from . import attention, common_types, grad  # noqa: F401
