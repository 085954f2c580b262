"""Samplers: which indices a DataLoader fetches, in what order and groups
(PyTorch's torch.utils.data.sampler)."""
import itertools
import math
import numbers

import numpy as np

from ... import _C
from ._random import as_generator, rng


# Indices drawn per chunk by a sampler that draws with replacement.
_CHUNK = 1 << 16


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")
    return int(value)


class Sampler:
    """Base class: subclasses implement `__iter__` (and `__len__` if known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (each epoch a new one), or `num_samples` draws with
    replacement. Without a generator each epoch seeds from the global RNG."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = as_generator(generator)
        if num_samples is not None:
            _positive_int("num_samples", num_samples)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def __iter__(self):
        n = len(self.data_source)
        if n == 0:
            return iter(())
        # The stream is chosen now (one seed per epoch); the indices are drawn
        # as they are consumed, a chunk at a time, so num_samples may be huge.
        return self._draw(rng(self.generator), n, self.num_samples)

    def _draw(self, g, n, count):
        if self.replacement:
            while count > 0:
                k = min(count, _CHUNK)
                yield from g.integers(0, n, size=k).tolist()
                count -= k
            return
        full, rest = divmod(count, n)
        for _ in range(full):
            yield from g.permutation(n).tolist()
        if rest:
            yield from g.permutation(n)[:rest].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = as_generator(generator)

    def __iter__(self):
        perm = rng(self.generator).permutation(len(self.indices))
        return (self.indices[i] for i in perm.tolist())

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probability proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        num_samples = _positive_int("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        if isinstance(weights, _C.Tensor):
            weights = weights.detach().cpu().numpy() if weights.dtype != _C.dtype.bfloat16 else \
                _C.cast(weights.detach(), _C.dtype.float32).cpu().numpy()
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError("cannot draw more samples than there are non-zero weights without replacement")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = as_generator(generator)

    def __iter__(self):
        p = self.weights / self.weights.sum()
        return iter(rng(self.generator).choice(len(p), self.num_samples, replace=self.replacement, p=p).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of `batch_size`."""

    def __init__(self, sampler, batch_size, drop_last):
        self.batch_size = _positive_int("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class DistributedSampler(Sampler):
    """The indices of one replica's share of `dataset` (PyTorch's
    DistributedSampler): each epoch's order (shuffled with seed + epoch, or
    sequential) is padded by repeating its start (or cut, with drop_last) to a
    multiple of num_replicas, and replica `rank` takes every num_replicas-th
    index from position rank. Lucid runs one process: num_replicas and rank
    must be given (there is no process group to ask). Shuffled orders come
    from Lucid's generator, so they differ from PyTorch's for one seed."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed

            # No process group: these raise DistributedUnavailableError, a
            # ValueError as PyTorch's uninitialised-group error.
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # Every replica gets the same count: the remainder is dropped.
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            from ._random import Generator

            indices = rng(Generator().manual_seed(self.seed + self.epoch)).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose order the next iteration uses (shuffle: seed + epoch)."""
        self.epoch = epoch
