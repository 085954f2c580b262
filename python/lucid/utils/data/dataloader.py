"""DataLoader (PyTorch's torch.utils.data.DataLoader, loading in the calling process)."""
import contextlib
import copy
import itertools
import numbers

from ._collate import default_collate, default_convert
from ._random import as_generator, rng
from .dataset import IterableDataset, collated_batch_fn
from .sampler import BatchSampler, RandomSampler, SequentialSampler


class WorkerInfo:
    """What `get_worker_info()` returns while a worker loads: `id`,
    `num_workers`, `seed` and `dataset` (that worker's copy), read-only."""

    _FIELDS = ("id", "num_workers", "seed", "dataset")

    def __init__(self, **fields):
        for name in self._FIELDS:
            object.__setattr__(self, name, fields[name])

    def __setattr__(self, name, value):
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self):
        return f"WorkerInfo({', '.join(f'{n}={getattr(self, n)}' for n in self._FIELDS)})"


_current_worker = None


def get_worker_info():
    """The `WorkerInfo` of the worker loading now (inside a dataset's
    `__iter__`/`__getitem__`, a `collate_fn` or a `worker_init_fn` run for a
    DataLoader with `num_workers > 0`); None in the main program."""
    return _current_worker


@contextlib.contextmanager
def _as_worker(info):
    global _current_worker
    outer, _current_worker = _current_worker, info
    try:
        yield
    finally:
        _current_worker = outer


class DataLoader:
    """Iterates over `dataset` in batches, with PyTorch's arguments and rules.

    `shuffle=True` draws a new permutation every epoch, from `generator` (a
    `Generator` or an int seed) or, without one, from a seed taken from the
    global RNG (so `lucid.manual_seed` makes it reproducible).

    Loading happens in the calling process. `num_workers > 0` gives what
    PyTorch's worker processes give, in the same order: each worker has its
    own (shallow) copy of the dataset (what `worker_init_fn` and `get_worker_info()`
    see), batch i of a map-style dataset is loaded by worker i % num_workers,
    and each worker iterates its copy of an IterableDataset, the workers'
    batches taken in turn until every one is exhausted (so a stream that does
    not shard itself by `get_worker_info()` is seen num_workers times, as in
    PyTorch). Workers do not reseed the random generators.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"collate_fn must be callable, got {type(collate_fn).__name__}")
        generator = as_generator(generator)

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        elif not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")) and sampler is None \
                and batch_sampler is None:
            raise TypeError(f"DataLoader needs a map-style dataset (with __getitem__ and __len__) or an "
                            f"IterableDataset, got {type(dataset).__name__}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")
        elif isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")

        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self._persistent = None  # the workers kept across epochs with persistent_workers=True
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)  # TypeError if the stream has no length, as in PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __iter__(self):
        workers = self._start_workers() if self.num_workers > 0 else None
        if self._iterable:
            if workers is None:
                return self._iter_stream(self.dataset)
            return self._iter_worker_streams(workers)
        return self._iter_map(workers)

    def _start_workers(self):
        """The workers of one iteration (or of every one, with persistent_workers):
        each with its copy of the dataset, after `worker_init_fn` ran as it."""
        if self._persistent is not None:
            return self._persistent
        base_seed = int(rng(self.generator).integers(0, 2 ** 63))
        workers = []
        for worker_id in range(self.num_workers):
            info = WorkerInfo(id=worker_id, num_workers=self.num_workers, seed=base_seed + worker_id,
                              dataset=copy.copy(self.dataset))
            if self.worker_init_fn is not None:
                with _as_worker(info):
                    self.worker_init_fn(worker_id)
            workers.append(info)
        if self.persistent_workers:
            self._persistent = workers
        return workers

    def _fetcher(self, ds):
        """A sampler's item (an index, or a batch of indices) -> what the loader yields, read from `ds`."""
        if not self._auto_collation:
            return lambda i: self.collate_fn(ds[i])
        fast = collated_batch_fn(ds) if self.collate_fn is default_collate else None
        if fast is not None:
            return fast
        getitems = getattr(ds, "__getitems__", None)
        if callable(getitems):
            return lambda indices: self.collate_fn(getitems(indices))
        return lambda indices: self.collate_fn([ds[i] for i in indices])

    def _iter_map(self, workers):
        order = self.batch_sampler if self._auto_collation else self.sampler
        if workers is None:
            fetch = self._fetcher(self.dataset)
            for item in order:
                yield fetch(item)
            return
        fetchers = [self._fetcher(w.dataset) for w in workers]
        for i, item in enumerate(order):
            worker = i % len(workers)
            with _as_worker(workers[worker]):
                batch = fetchers[worker](item)
            yield batch

    def _iter_worker_streams(self, workers):
        # PyTorch hands batch requests to the live workers in turn and yields the
        # answers in request order: each round takes one batch from each live worker.
        streams = [self._iter_stream(w.dataset) for w in workers]
        live = list(range(len(workers)))
        while live:
            for worker in list(live):
                with _as_worker(workers[worker]):
                    batch = next(streams[worker], _EXHAUSTED)
                if batch is _EXHAUSTED:
                    live.remove(worker)
                else:
                    yield batch

    def _iter_stream(self, dataset):
        it = iter(dataset)
        if not self._auto_collation:
            for sample in it:
                yield self.collate_fn(sample)
            return
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)


_EXHAUSTED = object()
