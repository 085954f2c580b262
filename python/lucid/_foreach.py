"""torch._foreach_*: an op over lists of tensors, as PyTorch's CPU fallback
runs them (one op per tensor, so the numbers are the per-tensor op's). The
second operand is a tensor list, a number, a list of numbers, or (where
PyTorch allows) one tensor; in-place forms return None."""
from . import _C

_UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc"]
_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_max", "clamp_min", "pow"]
_NO_INPLACE = {"sign"}  # torch has _foreach_sign only out of place


def _check_list(tensors):
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return tensors


def _per_tensor(tensors, operand, what="tensor"):
    """operand, one per tensor: a list matched in length, else repeated."""
    if isinstance(operand, (list, tuple)):
        if len(operand) != len(tensors):
            if operand and all(isinstance(o, _C.Tensor) for o in operand):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and "
                                   f"{len(operand)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(operand)
    return [operand] * len(tensors)


def _unary(name):
    def out_of_place(self):
        return [getattr(t, name)() for t in _check_list(self)]

    def in_place(self):
        for t in _check_list(self):
            getattr(t, name + "_")()

    return out_of_place, in_place


def _binary(name):
    def call(t, o, alpha, inplace):
        method = getattr(t, name + "_" if inplace else name)
        return method(o) if alpha is None else method(o, alpha=alpha)

    def out_of_place(self, other, *, alpha=None):
        return [call(t, o, alpha, False) for t, o in zip(_check_list(self), _per_tensor(self, other))]

    def in_place(self, other, *, alpha=None):
        for t, o in zip(_check_list(self), _per_tensor(self, other)):
            call(t, o, alpha, True)

    return out_of_place, in_place


def _pointwise(name):
    """addcmul/addcdiv: value a number, a list of numbers, or a tensor of them."""
    def values(self, value):
        if isinstance(value, _C.Tensor):
            value = value.tolist() if value.ndim else [value.item()] * len(self)
        return _per_tensor(self, value)

    def out_of_place(self, tensor1, tensor2, value=1):
        self = _check_list(self)
        return [getattr(t, name)(a, b, value=v)
                for t, a, b, v in zip(self, _per_tensor(self, tensor1), _per_tensor(self, tensor2), values(self, value))]

    def in_place(self, tensor1, tensor2, value=1):
        self = _check_list(self)
        for t, a, b, v in zip(self, _per_tensor(self, tensor1), _per_tensor(self, tensor2), values(self, value)):
            getattr(t, name + "_")(a, b, value=v)

    return out_of_place, in_place


def _foreach_lerp(self, tensors1, weight):
    self = _check_list(self)
    return [t.lerp(e, w) for t, e, w in zip(self, _per_tensor(self, tensors1), _per_tensor(self, weight))]


def _foreach_lerp_(self, tensors1, weight):
    self = _check_list(self)
    for t, e, w in zip(self, _per_tensor(self, tensors1), _per_tensor(self, weight)):
        t.lerp_(e, w)


def _foreach_norm(self, ord=2, dtype=None):  # noqa: A002
    from . import linalg
    return [linalg.vector_norm(t, ord, dtype=dtype) for t in _check_list(self)]


def _foreach_max(self):
    return [t.max() for t in _check_list(self)]


def _foreach_copy_(self, src, non_blocking=False):
    for t, s in zip(_check_list(self), _per_tensor(self, src)):
        t.copy_(s, non_blocking=non_blocking)


def _foreach_zero_(self):
    for t in _check_list(self):
        t.zero_()


def _install():
    made = {}
    for name in _UNARY:
        made[f"_foreach_{name}"], made[f"_foreach_{name}_"] = _unary(name)
    for name in _BINARY:
        made[f"_foreach_{name}"], made[f"_foreach_{name}_"] = _binary(name)
    for name in ("addcmul", "addcdiv"):
        made[f"_foreach_{name}"], made[f"_foreach_{name}_"] = _pointwise(name)
    for name in _NO_INPLACE:
        del made[f"_foreach_{name}_"]
    for name, fn in made.items():
        fn.__name__ = fn.__qualname__ = name
    return made


_made = _install()
_list_pow = _made.pop("_foreach_pow")
globals().update(_made)


def _foreach_pow(self, exponent):
    """A number raised to each tensor of a list, or a list raised elementwise."""
    if isinstance(self, (int, float)):
        from . import _functions
        return [_functions.pow(self, e) for e in _check_list(exponent)]
    return _list_pow(self, exponent)


__all__ = sorted(n for n in globals() if n.startswith("_foreach_"))
