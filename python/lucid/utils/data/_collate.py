"""default_collate / default_convert with PyTorch's semantics: tensors are
stacked (one C++ stack), NumPy arrays stacked by NumPy then made one tensor,
Python floats become float64, ints int64, bools bool, NumPy scalars keep
their dtype; mappings, namedtuples and sequences are collated field by field
(a tuple sample becomes a list, as in PyTorch); strings pass through."""
import collections.abc
import copy

import numpy as np

from ... import _C
from ..._creation import tensor as _tensor

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_text_array(arr):
    # object, bytes, str and void arrays have no tensor form
    return arr.dtype.kind in "OSUV"


def _stack_numpy(batch):
    shapes = [b.shape for b in batch]
    for i, s in enumerate(shapes):
        if s != shapes[0]:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shapes[0])} at entry 0 "
                               f"and {list(s)} at entry {i}")
    return _tensor(np.stack(batch))


def default_collate(batch):
    """Merges a list of samples into a batch (see the module docstring)."""
    if not isinstance(batch, collections.abc.Sequence) or isinstance(batch, (str, bytes)):
        raise TypeError(f"default_collate expects a list of samples, got {type(batch).__name__}")
    if len(batch) == 0:
        raise ValueError("default_collate got an empty batch")
    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        for i, b in enumerate(batch):
            if not isinstance(b, _C.Tensor):
                raise TypeError(f"default_collate: expected a tensor at entry {i} like entry 0, "
                                f"got {type(b).__name__}")
        return _C.stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _is_text_array(elem):
            raise TypeError(_ERR.format(elem.dtype))
        return _stack_numpy(batch)
    if isinstance(elem, (np.bool_, np.number)):
        return _tensor(np.asarray(batch))
    if isinstance(elem, float):
        return _tensor(np.asarray(batch, dtype=np.float64))
    if isinstance(elem, int):  # bool too: a list of bools stays bool
        return _tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(collated)
                return clone
            return type(elem)(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                clone[:] = transposed
                return clone
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError(_ERR.format(type(elem)))


def default_convert(data):
    """The collate of `batch_size=None`: NumPy arrays and scalars become
    tensors, containers are converted inside, anything else is left as is."""
    if isinstance(data, _C.Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _is_text_array(data) else _tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return _tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update(converted)
                return clone
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                clone[:] = [default_convert(d) for d in data]
                return clone
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
