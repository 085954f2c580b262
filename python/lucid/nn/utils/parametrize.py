"""Parametrizations (torch.nn.utils.parametrize): a module's tensor
replaced by a function of other tensors. The module's class becomes a
subclass whose property computes the tensor from
`module.parametrizations[name].original` (`original0`, `original1`, ... when
the first parametrization's right_inverse returns several), so state_dict
keys are PyTorch's."""
import contextlib

from ...autograd import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

_cache = None  # {(id(module), name): tensor} inside cached()


@contextlib.contextmanager
def cached():
    """Each parametrized tensor is computed once inside the context."""
    global _cache
    outer = _cache
    _cache = {} if outer is None else outer
    try:
        yield
    finally:
        _cache = outer


class ParametrizationList(ModuleList):
    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = not isinstance(new, (tuple, list))
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            with no_grad():
                original.copy_(new) if new is not original else None
            self.register_parameter("original", original if isinstance(original, Parameter)
                                    else Parameter(original, requires_grad=original.requires_grad))
        else:
            for i, t in enumerate(new):
                self.register_parameter(f"original{i}", Parameter(t.detach().clone(),
                                                                  requires_grad=original.requires_grad))

    def right_inverse(self, value):
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                elif not self.unsafe:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self):
        first, *rest = list(self)
        x = first(self.original) if self.is_tensor else first(*(getattr(self, f"original{i}")
                                                                 for i in range(self.ntensors)))
        for module in rest:
            x = module(x)
        return x


def _inject_class(module):
    cls = module.__class__
    param_cls = type(f"Parametrized{cls.__name__}", (cls,), {})
    module.__class__ = param_cls


def _inject_property(module, name):
    def getter(self):
        key = (id(self), name)
        if _cache is not None and key in _cache:
            return _cache[key]
        value = self.parametrizations[name]()
        if _cache is not None:
            _cache[key] = value
        return value

    def setter(self, value):
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(getter, setter))


def is_parametrized(module, tensor_name=None):
    params = module.__dict__.get("_modules", {}).get("parametrizations")
    if params is None or not isinstance(params, ModuleDict):
        return False
    return len(params) > 0 if tensor_name is None else tensor_name in params


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        if tensor_name in module._parameters:
            del module._parameters[tensor_name]
        else:
            del module._buffers[tensor_name]
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
        return module
    raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
                     f"'{tensor_name}'")


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name)
        if plist.is_tensor:
            original = plist.original
            with no_grad():
                original.copy_(value)
        else:
            original = Parameter(value.detach(), requires_grad=value.requires_grad)
    else:
        if not plist.is_tensor:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        original = plist.original
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    module.register_parameter(tensor_name, original if isinstance(original, Parameter) else Parameter(original))
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


__all__ = ["cached", "is_parametrized", "register_parametrization", "remove_parametrizations",
           "type_before_parametrizations", "ParametrizationList"]
