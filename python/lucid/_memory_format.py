"""torch.memory_format: how a new tensor lays its dims out in memory.

preserve_format (the default of clone, .to and the *_like factories) keeps
the input's memory order; contiguous_format is row-major; channels_last
(channels_last_3d) stores a 4-D (5-D) tensor's channel dim innermost.
"""
from . import _C


class memory_format:  # noqa: N801  (torch's name)
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_CHANNELS_LAST_ORDER = {channels_last: (4, [0, 2, 3, 1]), channels_last_3d: (5, [0, 2, 3, 4, 1])}


def _check(fmt, what):
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{what}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")


def _order(t, fmt, what):
    """The dims of t's result in memory order, outermost first, for `fmt`;
    None for preserve_format (the input's own order)."""
    _check(fmt, what)
    if fmt is None or fmt is preserve_format:
        return None
    if fmt is contiguous_format:
        return list(range(t.ndim))
    ndim, order = _CHANNELS_LAST_ORDER[fmt]
    if t.ndim != ndim:
        name = "channels_last" if fmt is channels_last else "channels_last_3d"
        raise RuntimeError(f"required rank {ndim} tensor to use {name} format")
    return order


def make_in_format(t, fmt, make, what):
    """make(t) -> a fresh row-major tensor; the result laid out as `fmt` says
    (for preserve_format: t's memory order, t's strides where t is dense)."""
    order = _order(t, fmt, what)
    if order is None:
        return _C.preserve_layout(t, make)
    return _C.in_memory_order(t, order, make)


def is_in_format(t, fmt):
    """Tensor.is_contiguous(memory_format=fmt)."""
    _check(fmt, "is_contiguous")
    if fmt in _CHANNELS_LAST_ORDER and t.ndim != _CHANNELS_LAST_ORDER[fmt][0]:
        return False
    order = _order(t, fmt, "is_contiguous") or list(range(t.ndim))
    shape, strides = t.shape, t.stride()
    if 0 in shape:  # no element to lay out
        return True
    expected = 1
    for d in reversed(order):
        if shape[d] == 1:
            continue
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def suggested_layout(out, like):
    """out laid out as PyTorch's normalisation and pixel-shuffle kernels lay
    out their results (suggest_memory_format of the input `like`):
    channels-last where `like` is a 4-D (5-D) tensor stored so (and not also
    row-major), row-major otherwise: a permuted input's result is not
    permuted, and `.view()` applies to it as in PyTorch."""
    for fmt, (ndim, _) in _CHANNELS_LAST_ORDER.items():
        if like.ndim == ndim and is_in_format(like, fmt) and not is_in_format(like, contiguous_format):
            return out if is_in_format(out, fmt) else make_in_format(out, fmt, _C.contiguous_copy, "contiguous")
    return _C.contiguous(out)
