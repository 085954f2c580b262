"""torch.overrides: the ``__torch_function__`` protocol helpers that library
code calls at the top of its functions (``if has_torch_function(args):
return handle_torch_function(f, args, *args)``).

An object is overloaded when its type defines ``__torch_function__``;
``handle_torch_function`` calls those methods in PyTorch's order (a subclass
before its base, else left to right) and returns the first result that is
not NotImplemented. Lucid's own ops do not dispatch through
``__torch_function__``: Lucid tensors are never overloaded, so these helpers
matter only for tensor-like objects of other libraries."""
import warnings

from ._C import Tensor

__all__ = ["handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property", "resolve_name",
           "wrap_torch_function"]


def _is_overloaded(obj):
    method = getattr(type(obj), "__torch_function__", None)
    return method is not None and method is not getattr(Tensor, "__torch_function__", None)


def _get_overloaded_args(relevant_args):
    """The overloaded arguments, one per type, subclasses before their bases."""
    overloaded_types, overloaded = set(), []
    for arg in relevant_args:
        arg_type = type(arg)
        if arg_type in overloaded_types or not _is_overloaded(arg):
            continue
        overloaded_types.add(arg_type)
        index = len(overloaded)
        for i, earlier in enumerate(overloaded):
            if issubclass(arg_type, type(earlier)):
                index = i
                break
        overloaded.insert(index, arg)
    return overloaded


def has_torch_function(relevant_args):
    """Whether any of ``relevant_args`` implements ``__torch_function__``."""
    return any(_is_overloaded(a) for a in relevant_args)


def has_torch_function_unary(arg):
    return _is_overloaded(arg)


def has_torch_function_variadic(*args):
    return any(_is_overloaded(a) for a in args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Calls the overloaded arguments' ``__torch_function__(public_api, types,
    args, kwargs)``; the first result that is not NotImplemented is returned,
    else TypeError."""
    overloaded_args = _get_overloaded_args(relevant_args)
    types = tuple(map(type, overloaded_args))
    for arg in overloaded_args:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and will be an error in "
                          "future, please define it as a classmethod.", DeprecationWarning, stacklevel=2)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    func_name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(f"no implementation found for '{func_name}' on types that implement __torch_function__: "
                    f"{[type(arg) for arg in overloaded_args]}")


def is_tensor_like(inp):
    """A Lucid tensor, or anything whose type has ``__torch_function__``."""
    return type(inp) is Tensor or isinstance(inp, Tensor) or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func):
    return getattr(func, "__objclass__", None) is Tensor or getattr(func, "__name__", None) in Tensor.__dict__


def resolve_name(f):
    """``f``'s dotted name (``"torch.add"``) where it has one, else None."""
    module = getattr(f, "__module__", None)
    name = getattr(f, "__qualname__", getattr(f, "__name__", None))
    return f"{module}.{name}" if module and name else None


def wrap_torch_function(dispatcher):
    """Decorates ``func`` so that calls whose ``dispatcher(*args, **kwargs)``
    arguments are overloaded go through ``handle_torch_function``."""
    import functools

    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner
