"""Making modules without initialising them (torch.nn.utils.skip_init)."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """`module_cls(*args, **kwargs)` with its parameters and buffers left
    uninitialised (their initialisers skipped), for code that loads or sets
    them next. The class must take a `device` argument, as PyTorch requires."""
    from ..init import _skip_initialisation
    from ..modules.module import Module

    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    with _skip_initialisation():
        return module_cls(*args, **kwargs)
