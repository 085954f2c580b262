"""Datasets (PyTorch's torch.utils.data.dataset): map-style `Dataset`,
`IterableDataset`, `TensorDataset`, `Subset`, `ConcatDataset`, `random_split`.

With the default collate, the DataLoader fetches a batch of a TensorDataset
(or a Subset of one) as one gather per tensor (`collated_batch_fn`), exactly
what stacking the samples would give.
"""
import bisect
import math
import numbers
import warnings

import numpy as np

from ... import _C
from ._random import as_generator, randperm


class Dataset:
    """Map-style dataset: subclasses implement `__getitem__` and `__len__`."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Stream-style dataset: subclasses implement `__iter__`."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        raise TypeError("IterableDatasets cannot be concatenated")


class TensorDataset(Dataset):
    """Sample i is `tuple(t[i] for t in tensors)`."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, _C.Tensor):
                raise TypeError(f"TensorDataset expects lucid tensors, got {type(t).__name__} at position {i}")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset tensors need a first dimension; tensor {i} is 0-d")
        sizes = [t.shape[0] for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]

    def _collated_batch(self, indices):
        n = len(self)
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {n}")
        host = _C.from_numpy(np.where(idx < 0, idx + n, idx))
        on = {}  # the index on each tensor's device (a dataset may live on the GPU)

        def index_on(device):
            if device not in on:
                on[device] = host if device.type == "cpu" else _C.to_device(host, device)
            return on[device]
        # default_collate turns the tuple of a sample into a list of batches
        return [_C.index_select(t, 0, index_on(t.device)) for t in self.tensors]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self):
        return len(self.indices)


def collated_batch_fn(ds):
    """A function indices -> default_collate([ds[i] for i in indices]) that
    gathers in one op per tensor, or None when `ds` has none. Subclasses that
    override how a sample is fetched do not inherit it."""
    if isinstance(ds, TensorDataset) and type(ds).__getitem__ is TensorDataset.__getitem__:
        return ds._collated_batch
    if isinstance(ds, Subset) and type(ds).__getitem__ is Subset.__getitem__ \
            and type(ds).__getitems__ is Subset.__getitems__:
        inner = collated_batch_fn(ds.dataset)
        if inner is not None:
            return lambda indices: inner([ds.indices[i] for i in indices])
    return None


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[d - 1] if d > 0 else 0
        return self.datasets[d][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets, one after the other (chained on the fly)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class StackDataset(Dataset):
    """Datasets of one length side by side: sample i is the tuple (positional
    datasets) or dict (keyword datasets) of their samples i."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    @staticmethod
    def _samples(dataset, indices):
        """dataset's samples at `indices`, in one __getitems__ call where it has one."""
        if callable(getattr(dataset, "__getitems__", None)):
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
            return items
        return [dataset[i] for i in indices]

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            columns = {k: self._samples(d, indices) for k, d in self.datasets.items()}
            return [{k: columns[k][i] for k in columns} for i in range(len(indices))]
        columns = [self._samples(d, indices) for d in self.datasets]
        return [tuple(c[i] for c in columns) for i in range(len(indices))]

    def __len__(self):
        return self._length


def random_split(dataset, lengths, generator=None):
    """Splits `dataset` into non-overlapping random Subsets of the given
    lengths, or fractions summing to 1 (the remainder goes round-robin to the
    first splits, as in PyTorch)."""
    generator = as_generator(generator)
    lengths = list(lengths)
    n = len(dataset)
    if lengths and all(isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral) for x in lengths) \
            and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.")
        lengths = counts
    for x in lengths:
        if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 0:
            raise ValueError(f"lengths must be non-negative ints or fractions summing to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = randperm(n, generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out
