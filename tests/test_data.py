"""lucid.utils.data against torch.utils.data: batches, collation, samplers,
splits, shuffling reproducibility and argument errors."""
import collections

import numpy as np
import pytest
import torch
import torch.utils.data as TD

import lucid
import lucid.utils.data as LD
from conftest import assert_close, to_lucid


def _xy(n=11):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3, 2)).astype(np.float32), np.arange(n, dtype=np.int64) * 10


def _compare_batches(lucid_batches, torch_batches):
    lucid_batches, torch_batches = list(lucid_batches), list(torch_batches)
    assert len(lucid_batches) == len(torch_batches)
    for i, (lb, tb) in enumerate(zip(lucid_batches, torch_batches)):
        _compare_tree(lb, tb, f"batch {i}")


def _compare_tree(a, e, where):
    """A collated lucid structure equals torch's: same containers, keys,
    tensor shapes, dtypes and values."""
    if isinstance(e, torch.Tensor):
        assert_close(a, e, msg=f"{where}: ")
    elif isinstance(e, dict):
        assert type(a) is type(e) and list(a) == list(e), f"{where}: {type(a)} {list(a)} vs {type(e)} {list(e)}"
        for k in e:
            _compare_tree(a[k], e[k], f"{where}[{k!r}]")
    elif isinstance(e, (list, tuple)):
        assert type(a) is type(e) and len(a) == len(e), f"{where}: {type(a).__name__} vs {type(e).__name__}"
        for i, (x, y) in enumerate(zip(a, e)):
            _compare_tree(x, y, f"{where}[{i}]")
    else:
        assert a == e, f"{where}: {a!r} != {e!r}"


# ------------------------------------------------------------ batching
@pytest.mark.parametrize("batch_size", [1, 3, 4, 11, 20])
@pytest.mark.parametrize("drop_last", [False, True])
def test_tensor_dataset_batches_match_torch(batch_size, drop_last):
    x, y = _xy()
    ld = LD.DataLoader(LD.TensorDataset(lucid.tensor(x), lucid.tensor(y)), batch_size=batch_size,
                       drop_last=drop_last)
    td = TD.DataLoader(TD.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=batch_size,
                       drop_last=drop_last)
    assert len(ld) == len(td)
    _compare_batches(ld, td)


def test_tensor_dataset_gather_equals_stacking_samples():
    # The one-gather-per-tensor path gives what stacking each sample would.
    x, y = _xy(7)
    ds = LD.TensorDataset(lucid.tensor(x).to(lucid.bfloat16), lucid.tensor(y > 30))
    fast = list(LD.DataLoader(ds, batch_size=3, shuffle=True, generator=LD.Generator().manual_seed(1)))
    slow = list(LD.DataLoader(ds, batch_size=3, shuffle=True, generator=LD.Generator().manual_seed(1),
                              collate_fn=lambda b: LD.default_collate(b)))
    assert len(fast) == len(slow) == 3
    for f, s in zip(fast, slow):
        assert isinstance(f, list) and len(f) == 2
        for a, b in zip(f, s):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())


def test_subset_of_tensor_dataset_matches_torch():
    x, y = _xy()
    idx = [5, 0, 9, 3, 3, 7, 1]
    ld = LD.DataLoader(LD.Subset(LD.TensorDataset(lucid.tensor(x), lucid.tensor(y)), idx), batch_size=3)
    td = TD.DataLoader(TD.Subset(TD.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), idx), batch_size=3)
    _compare_batches(ld, td)


def test_subclass_with_own_getitem_is_used():
    class Doubled(LD.TensorDataset):
        def __getitem__(self, i):
            return tuple(t[i] * 2 for t in self.tensors)

    batch = next(iter(LD.DataLoader(Doubled(lucid.arange(4)), batch_size=4)))
    np.testing.assert_array_equal(batch[0].numpy(), [0, 2, 4, 6])


class _Samples:
    """A map-style dataset (no base class, like a user's) of mixed samples."""

    def __init__(self, make):
        self.make = make

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return self.make(i)


def _mixed(lib):
    def make(i):
        a = np.full((2, 3), i, dtype=np.float32)
        t = lib.tensor([i, i + 1]) if lib is lucid else torch.tensor([i, i + 1])
        return {"arr": a, "f": i / 3, "i": i, "b": i % 2 == 0, "name": f"s{i}", "t": t,
                "np_f32": np.float32(i) / 4, "np_i32": np.int32(i), "pair": (i, float(i)), "lst": [a, i]}
    return make


@pytest.mark.parametrize("batch_size", [2, 5])
def test_collate_dicts_tuples_lists_numbers_match_torch(batch_size):
    ld = LD.DataLoader(_Samples(_mixed(lucid)), batch_size=batch_size)
    td = TD.DataLoader(_Samples(_mixed(torch)), batch_size=batch_size)
    _compare_batches(ld, td)
    b = next(iter(ld))
    assert b["f"].dtype == lucid.float64 and b["i"].dtype == lucid.int64 and b["b"].dtype == lucid.bool
    assert b["np_f32"].dtype == lucid.float32 and b["np_i32"].dtype == lucid.int32
    assert isinstance(b["pair"], list)  # PyTorch turns a tuple sample into a list


def test_collate_namedtuple_and_ordered_dict():
    P = collections.namedtuple("P", "x y")
    samples = [collections.OrderedDict(p=P(np.array([i, i]), float(i)), z=i) for i in range(3)]
    tsamples = [collections.OrderedDict(p=P(np.array([i, i]), float(i)), z=i) for i in range(3)]
    out, ref = LD.default_collate(samples), TD.default_collate(tsamples)
    assert type(out) is collections.OrderedDict and type(out["p"]) is P
    _compare_tree(out, ref, "batch")


def test_collate_errors():
    with pytest.raises(RuntimeError, match="equal size"):
        LD.default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        LD.default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        LD.default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        LD.default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(ValueError, match="equal size"):
        LD.default_collate([lucid.zeros(2), lucid.zeros(3)])
    with pytest.raises(TypeError, match="expected a tensor at entry 1"):
        LD.default_collate([lucid.zeros(2), np.zeros(2)])


def test_batch_size_none_converts_like_torch():
    ld = LD.DataLoader(_Samples(_mixed(lucid)), batch_size=None)
    td = TD.DataLoader(_Samples(_mixed(torch)), batch_size=None)
    assert len(ld) == len(td) == 5
    _compare_batches(ld, td)


def test_batch_sampler_and_custom_sampler_match_torch():
    x, y = _xy()
    groups = [[3, 1], [0, 10, 4], [7]]
    ld = LD.DataLoader(LD.TensorDataset(lucid.tensor(x), lucid.tensor(y)), batch_sampler=groups)
    td = TD.DataLoader(TD.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_sampler=groups)
    assert len(ld) == 3
    _compare_batches(ld, td)
    order = [4, 2, 2, 9, 0]
    ld = LD.DataLoader(LD.TensorDataset(lucid.tensor(y)), sampler=order, batch_size=2, drop_last=True)
    td = TD.DataLoader(TD.TensorDataset(torch.from_numpy(y)), sampler=order, batch_size=2, drop_last=True)
    _compare_batches(ld, td)


class _Stream(LD.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.float32).reshape(self.n, 1))


class _TStream(TD.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.float32).reshape(self.n, 1))


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_matches_torch(drop_last):
    _compare_batches(LD.DataLoader(_Stream(7), batch_size=3, drop_last=drop_last),
                     TD.DataLoader(_TStream(7), batch_size=3, drop_last=drop_last))
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        LD.DataLoader(_Stream(3), shuffle=True)
    with pytest.raises(TypeError):
        len(LD.DataLoader(_Stream(3)))


def test_num_workers_loads_the_same_batches():
    x, y = _xy()
    ds = LD.TensorDataset(lucid.tensor(x), lucid.tensor(y))
    _compare_batches(LD.DataLoader(ds, batch_size=4, num_workers=2),
                     TD.DataLoader(TD.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4))


def _sharded_stream(base):
    """PyTorch's documented IterableDataset that splits its range between the
    loader's workers with get_worker_info(), on `base` (LD or TD)."""

    class Sharded(base.IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = base.get_worker_info()
            if info is None:
                return iter(range(self.start, self.end))
            per_worker = -(-(self.end - self.start) // info.num_workers)
            start = self.start + info.id * per_worker
            return iter(range(start, min(start + per_worker, self.end)))

    return Sharded


def _shard_in_worker_init(worker_id, base):
    info = base.get_worker_info()
    ds = info.dataset  # the worker's own copy
    per_worker = -(-(ds.end - ds.start) // info.num_workers)
    ds.start = ds.start + worker_id * per_worker
    ds.end = min(ds.start + per_worker, ds.end)


@pytest.mark.parametrize("num_workers", [2, 3])
@pytest.mark.parametrize("batch_size,drop_last", [(None, False), (1, False), (2, False), (2, True)])
def test_iterable_dataset_workers_interleave_as_torch(num_workers, batch_size, drop_last):
    # Each worker iterates its copy of the stream; the loader takes one batch from each live worker in turn.
    kw = dict(batch_size=batch_size, drop_last=drop_last, num_workers=num_workers)
    _compare_batches(LD.DataLoader(_sharded_stream(LD)(3, 14), **kw), TD.DataLoader(_sharded_stream(TD)(3, 14), **kw))
    # A stream that does not shard itself is seen once per worker, as in PyTorch.
    _compare_batches(LD.DataLoader(_Stream(5), **kw), TD.DataLoader(_TStream(5), **kw))


@pytest.mark.parametrize("persistent_workers", [False, True])
def test_worker_init_fn_edits_its_workers_copy_of_the_dataset(persistent_workers):
    def loader(base):
        ds = _sharded_stream(base)(2, 9)
        ds.__class__.__iter__ = lambda self: iter(range(self.start, self.end))  # sharded by worker_init_fn instead
        return base.DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=persistent_workers,
                               worker_init_fn=lambda i: _shard_in_worker_init(i, base)), ds

    (lucid_loader, lucid_ds), (torch_loader, _) = loader(LD), loader(TD)
    for epoch in range(2):
        _compare_batches(lucid_loader, torch_loader)
    assert (lucid_ds.start, lucid_ds.end) == (2, 9)  # the main program's dataset is untouched


def test_get_worker_info_in_map_style_loading():
    class WhoLoads(LD.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            info = LD.get_worker_info()
            return i, info.id, info.num_workers, info.dataset is self  # the worker reads its own copy

    batches = list(LD.DataLoader(WhoLoads(), batch_size=2, num_workers=3))
    # batch k is loaded by worker k % num_workers, as PyTorch dispatches it
    assert [b[1].tolist() for b in batches] == [[0, 0], [1, 1], [2, 2], [0]]
    assert all(b[2].tolist() == [3] * len(b[2]) and all(b[3]) for b in batches)
    assert LD.get_worker_info() is None
    info = None

    def grab(worker_id):
        nonlocal info
        info = LD.get_worker_info()

    list(LD.DataLoader(WhoLoads(), num_workers=1, worker_init_fn=grab))
    assert (info.id, info.num_workers) == (0, 1) and isinstance(info.seed, int)
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        info.id = 3


# ------------------------------------------------------------ shuffling
def _order(loader):
    return np.concatenate([b[0].numpy() for b in loader]).tolist()


def test_shuffle_reproducible_with_manual_seed():
    ds = LD.TensorDataset(lucid.arange(50))
    loader = LD.DataLoader(ds, batch_size=7, shuffle=True)
    lucid.manual_seed(123)
    a = _order(loader)
    lucid.manual_seed(123)
    b = _order(loader)
    lucid.manual_seed(124)
    c = _order(loader)
    assert a == b
    assert a != c
    assert sorted(a) == sorted(c) == list(range(50))
    assert a != list(range(50))


def test_shuffle_with_generator():
    ds = LD.TensorDataset(lucid.arange(40))
    g = LD.Generator().manual_seed(7)
    loader = LD.DataLoader(ds, batch_size=5, shuffle=True, generator=g)
    epoch1, epoch2 = _order(loader), _order(loader)
    assert epoch1 != epoch2  # the generator advances between epochs
    g.manual_seed(7)
    assert _order(loader) == epoch1
    assert _order(LD.DataLoader(ds, batch_size=5, shuffle=True, generator=7)) == epoch1
    assert _order(LD.DataLoader(ds, batch_size=5, shuffle=True, generator=8)) != epoch1
    # the global RNG does not affect an explicit generator
    lucid.manual_seed(0)
    g.manual_seed(7)
    assert _order(loader) == epoch1
    assert g.initial_seed() == 7


def test_generator_rejects_bad_seeds():
    with pytest.raises(TypeError, match="seed must be an int"):
        LD.Generator().manual_seed(1.5)
    with pytest.raises(TypeError, match="generator must be"):
        LD.DataLoader(LD.TensorDataset(lucid.arange(3)), shuffle=True, generator="seed")


def test_random_sampler_replacement_and_num_samples():
    g = LD.Generator().manual_seed(0)
    s = LD.RandomSampler(range(5), replacement=True, num_samples=12, generator=g)
    draws = list(s)
    assert len(s) == 12 and len(draws) == 12 and all(0 <= d < 5 for d in draws)
    s = LD.RandomSampler(range(4), num_samples=10, generator=g)
    draws = list(s)
    assert len(draws) == 10 and sorted(draws[:4]) == sorted(draws[4:8]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        LD.RandomSampler(range(4), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        LD.RandomSampler(range(4), replacement=1)


def test_random_sampler_draws_lazily():
    """num_samples far beyond memory (PyTorch draws as it goes): the first
    indices come at once and a DataLoader over it reports its length."""
    import itertools
    import tracemalloc

    tracemalloc.start()
    try:
        s = LD.RandomSampler(range(10), replacement=True, num_samples=10**10, generator=LD.Generator().manual_seed(0))
        first = list(itertools.islice(iter(s), 1000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(s) == 10**10 and len(first) == 1000 and set(first) <= set(range(10))
    assert peak < 50 * 2**20
    loader = LD.DataLoader(LD.TensorDataset(lucid.arange(10)), batch_size=4, sampler=s)
    assert len(loader) == 10**10 // 4
    assert tuple(next(iter(loader))[0].shape) == (4,)
    # chunked draws continue one stream: the same indices as drawing all at once
    a = list(LD.RandomSampler(range(7), True, 200_000, generator=LD.Generator().manual_seed(5)))
    b = LD.Generator().manual_seed(5)._rng.integers(0, 7, size=200_000).tolist()
    assert a == b
    many = LD.RandomSampler(range(3), num_samples=10**9, generator=LD.Generator().manual_seed(1))
    assert sorted(itertools.islice(iter(many), 3)) == [0, 1, 2]  # without replacement: whole permutations


def test_sequential_subset_random_and_weighted_samplers():
    assert list(LD.SequentialSampler(range(4))) == list(TD.SequentialSampler(range(4)))
    s = LD.SubsetRandomSampler([10, 20, 30], generator=LD.Generator().manual_seed(3))
    assert sorted(s) == [10, 20, 30] and len(s) == 3
    w = LD.WeightedRandomSampler([0.0, 1.0, 3.0], 50, generator=LD.Generator().manual_seed(3))
    draws = list(w)
    assert len(draws) == 50 and 0 not in draws and set(draws) == {1, 2}
    with pytest.raises(ValueError, match="weights must be finite, non-negative"):
        LD.WeightedRandomSampler([-1.0, 1.0], 2)


@pytest.mark.parametrize("n,bs,drop", [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (2, 5, True)])
def test_batch_sampler_matches_torch(n, bs, drop):
    lb = LD.BatchSampler(LD.SequentialSampler(range(n)), bs, drop)
    tb = TD.BatchSampler(TD.SequentialSampler(range(n)), bs, drop)
    assert list(lb) == list(tb) and len(lb) == len(tb)


# ------------------------------------------------------------ datasets
def test_random_split_lengths_match_torch():
    for lengths in ([3, 8], [0.3, 0.3, 0.4], [0.5, 0.5], [1.0]):
        ls = LD.random_split(range(11), lengths, generator=LD.Generator().manual_seed(0))
        ts = TD.random_split(range(11), lengths, generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in ls] == [len(s) for s in ts]
        flat = [s[i] for s in ls for i in range(len(s))]
        assert sorted(flat) == list(range(11))
    a = LD.random_split(range(20), [10, 10], generator=LD.Generator().manual_seed(5))
    b = LD.random_split(range(20), [10, 10], generator=LD.Generator().manual_seed(5))
    assert a[0].indices == b[0].indices and a[0].indices != list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        LD.random_split(range(5), [2, 2])


def test_concat_dataset_matches_torch():
    lc, tc = LD.ConcatDataset([range(3), range(10, 14)]), TD.ConcatDataset([range(3), range(10, 14)])
    assert len(lc) == len(tc) == 7
    assert [lc[i] for i in range(-7, 7)] == [tc[i] for i in range(-7, 7)]


def test_tensor_dataset_validation():
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        LD.TensorDataset(lucid.zeros(3), lucid.zeros(4))
    with pytest.raises(TypeError, match="expects lucid tensors"):
        LD.TensorDataset(np.zeros(3))
    ds = LD.TensorDataset(lucid.arange(4))
    with pytest.raises(IndexError, match="out of bounds"):
        list(LD.DataLoader(ds, sampler=[0, 9], batch_size=2))


# ------------------------------------------------------------ arguments
@pytest.mark.parametrize("kwargs,match", [
    (dict(batch_size=0), "batch_size should be a positive integer"),
    (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
    (dict(drop_last=1), "drop_last should be a boolean"),
])
def test_argument_errors_match_torch(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LD.DataLoader(LD.TensorDataset(lucid.arange(3)), **kwargs)
    with pytest.raises(ValueError):
        TD.DataLoader(TD.TensorDataset(torch.arange(3)), **kwargs)


# ------------------------------------------- ChainDataset, StackDataset, DistributedSampler
class _Ranges:
    """An IterableDataset of one range, for either library."""

    @staticmethod
    def make(module, start, stop):
        class Stream(module.IterableDataset):
            def __iter__(self):
                return iter(range(start, stop))

            def __len__(self):
                return stop - start

        return Stream()


def test_chain_dataset_matches_torch():
    for D in (TD, LD):
        chain = D.ChainDataset([_Ranges.make(D, 0, 3), _Ranges.make(D, 10, 12)])
        assert list(chain) == [0, 1, 2, 10, 11] and len(chain) == 5
        bad = D.ChainDataset([_Ranges.make(D, 0, 2), [5, 6]])
        with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
            list(bad)
        with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
            len(bad)
    batches = [b.tolist() for b in LD.DataLoader(LD.ChainDataset([_Ranges.make(LD, 0, 5)]), batch_size=2)]
    assert batches == [[0, 1], [2, 3], [4]]


def test_stack_dataset_matches_torch():
    x, y = _xy(6)
    for m, D in ((torch, TD), (lucid, LD)):
        xs, ys = D.TensorDataset(m.tensor(x)), D.TensorDataset(m.tensor(y))
        pair = D.StackDataset(xs, ys)
        named = D.StackDataset(image=xs, label=ys)
        assert len(pair) == len(named) == 6
        np.testing.assert_array_equal(pair[2][1][0].numpy(), y[2])
        assert sorted(named[2]) == ["image", "label"]
        batch = named.__getitems__([0, 3])
        assert len(batch) == 2 and int(batch[1]["label"][0]) == y[3]
        assert len(pair.__getitems__([1, 2, 5])) == 3
        for args, kwargs, msg in [((xs,), {"y": ys}, "but both types are given"), ((), {}, "At least one dataset"),
                                  ((xs, D.TensorDataset(m.tensor(y[:3]))), {}, "Size mismatch between datasets")]:
            with pytest.raises(ValueError, match=msg):
                D.StackDataset(*args, **kwargs)
    loader = LD.DataLoader(LD.StackDataset(LD.TensorDataset(lucid.tensor(x)), LD.TensorDataset(lucid.tensor(y))),
                           batch_size=4)
    first = next(iter(loader))
    assert tuple(first[0][0].shape) == (4, 3, 2) and first[1][0].tolist() == y[:4].tolist()


@pytest.mark.parametrize("n", [0, 1, 5, 10, 11])
@pytest.mark.parametrize("replicas,drop_last", [(1, False), (3, False), (3, True), (4, False), (4, True), (7, False)])
def test_distributed_sampler_without_shuffle_matches_torch(n, replicas, drop_last):
    for rank in range(replicas):
        want = TD.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        got = LD.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        if n == 0 and not drop_last:
            continue  # PyTorch divides by zero padding an empty dataset; nothing to compare
        assert list(got) == list(want) and len(got) == len(want)
        assert (got.num_samples, got.total_size) == (want.num_samples, want.total_size)


def test_distributed_sampler_shuffles_per_epoch_and_partitions_the_data():
    parts = []
    for rank in range(3):
        s = LD.DistributedSampler(range(10), num_replicas=3, rank=rank, seed=7)
        s.set_epoch(2)
        parts.append(list(s))
        s2 = LD.DistributedSampler(range(10), num_replicas=3, rank=rank, seed=7)
        s2.set_epoch(2)
        assert list(s2) == parts[-1]  # the same order on every replica for one (seed, epoch)
    flat = sorted(i for p in parts for i in p)
    assert len(flat) == 12 and set(flat) == set(range(10))  # 10 indices padded to 12
    s.set_epoch(3)
    assert list(s) != parts[-1]
    loader = LD.DataLoader(LD.TensorDataset(lucid.arange(10)), batch_size=2,
                           sampler=LD.DistributedSampler(range(10), 2, 1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1, 3], [5, 7], [9]]


def test_distributed_sampler_errors():
    for D in (TD, LD):
        with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
            D.DistributedSampler(range(4), num_replicas=3, rank=3)
        with pytest.raises(ValueError):  # no process group to ask for the world size
            D.DistributedSampler(range(4))
