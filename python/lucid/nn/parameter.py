"""nn.Parameter: a tensor that a Module registers as a learnable parameter."""
from .. import _C


class Parameter(_C.Tensor):
    """A leaf tensor sharing `data`'s storage, with requires_grad set (True
    by default). Assigning one to a Module attribute registers it."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C.full([0], 0.0, _C.get_default_dtype(), None)
        elif not isinstance(data, _C.Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        super().__init__(data)  # aliases data's storage, without its history
        self.requires_grad_(bool(requires_grad))

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(_C.clone(self.detach()), self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        # The tensor's own pickle, rebuilt as a Parameter (PyTorch's pickles keep the class).
        rebuild, args = _C.Tensor.__reduce_ex__(self, protocol)
        return _rebuild_parameter, (rebuild, args, self.requires_grad)


def _rebuild_parameter(rebuild, args, requires_grad):
    return Parameter(rebuild(*args), requires_grad)


class Buffer(_C.Tensor):
    """torch.nn.Buffer: assigning one to a Module attribute registers it as
    a buffer, kept in the state_dict unless persistent=False. It aliases
    `data`'s storage."""

    def __init__(self, data=None, *, persistent=True):
        if data is None:
            data = _C.full([0], 0.0, _C.get_default_dtype(), None)
        elif not isinstance(data, _C.Tensor):
            raise TypeError(f"Buffer data must be a Tensor, got {type(data).__name__}")
        super().__init__(data)
        self.requires_grad_(data.requires_grad)
        self.persistent = bool(persistent)


def _uninitialized_use(what):
    raise RuntimeError(f"Can't access the {what} of an uninitialized parameter or buffer. This error usually happens "
                       "in `load_state_dict` when trying to load an uninitialized parameter into an initialized one. "
                       "Call `forward` to initialize the parameters before accessing their attributes.")


class UninitializedTensorMixin:
    """What the two uninitialized kinds share: no shape until materialize()."""

    shape = property(lambda self: _uninitialized_use("shape"))

    def size(self, *args):
        _uninitialized_use("shape")

    def numel(self):
        _uninitialized_use("shape")

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(_C.full([0], 0.0, dtype or _C.get_default_dtype(), device), requires_grad)

    def materialize(self, shape, device=None, dtype=None):
        self._set_data(_C.full(list(shape), 0.0, dtype or self.dtype, device or self.device))
        self.__class__ = self.cls_to_become


class UninitializedBuffer(UninitializedTensorMixin, _C.Tensor):
    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        super().__init__(_C.full([0], 0.0, dtype or _C.get_default_dtype(), device))
        self.persistent = persistent

    def materialize(self, shape, device=None, dtype=None):
        """The real buffer (a new tensor: the module's entry is replaced by it)."""
        return _C.full(list(shape), 0.0, dtype or self.dtype, device or self.device)


def is_lazy(param):
    """Whether ``param`` is an uninitialized parameter or buffer (of a lazy module)."""
    return isinstance(param, UninitializedTensorMixin)


def is_parameter(x):
    return isinstance(x, Parameter)
