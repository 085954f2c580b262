"""Scatter-style writes of torch's namespace: scatter_reduce and index_reduce
(one core primitive, with PyTorch's gradients), put, and the *_scatter
functions that return a copy of input with one view of it replaced.

The *_scatter functions write src through the view of a copy, so autograd
routes the gradient exactly as for an in-place write to a view: src gets the
gradient of the region, input the rest."""
from . import _C

Tensor = _C.Tensor

__all__ = ["scatter_reduce", "index_reduce", "put", "diagonal_scatter", "select_scatter", "slice_scatter",
           "as_strided_scatter", "index_put_"]


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    return _C.scatter_reduce(input, dim, index, src, reduce, include_self)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    return _C.index_reduce(input, dim, index, source, reduce, include_self)


def put(input, index, source, accumulate=False):  # noqa: A002
    """input with the elements at flat positions `index` (as if input were
    1-D; negative positions count from the end) set to, or with accumulate
    added, source's elements in order."""
    from ._utils import torch_type_name as name

    if index.dtype != _C.dtype.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {name(index.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{name(input.dtype)} and source.dtype = {name(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    flat = _C.reshape(input, [input.numel()])
    out = _C.index_put(flat, [_C.reshape(index, [index.numel()])], _C.reshape(source, [source.numel()]),
                       bool(accumulate))
    return _C.reshape(out, list(input.shape))


def _scatter_into_view(input, src, view):  # noqa: A002
    out = _C.clone(input)
    region = view(out)
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(region.shape)}")
    region.copy_(src)
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    return _scatter_into_view(input, src, lambda t: _C.diagonal(t, offset, dim1, dim2))


def select_scatter(input, src, dim, index):  # noqa: A002
    return _scatter_into_view(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    where = [slice(None)] * input.ndim
    where[dim] = slice(start, end, step)
    return _scatter_into_view(input, src, lambda t: t[tuple(where)])


def as_strided_scatter(input, src, size, stride, storage_offset=None):  # noqa: A002
    return _scatter_into_view(input, src, lambda t: t.as_strided(size, stride, storage_offset))


def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    return input.index_put_(indices, values, accumulate)


def _attach_methods():
    from ._tensor import _inplace

    for fn in (scatter_reduce, index_reduce, put, diagonal_scatter, select_scatter, slice_scatter,
               as_strided_scatter):
        setattr(Tensor, fn.__name__, (lambda f: lambda self, *a, **k: f(self, *a, **k))(fn))
    for fn in (scatter_reduce, index_reduce, put):
        _inplace(fn.__name__ + "_", fn)


_attach_methods()
