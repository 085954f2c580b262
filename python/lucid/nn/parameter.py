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


def is_parameter(x):
    return isinstance(x, Parameter)
