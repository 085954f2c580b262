"""Indexing against PyTorch: __getitem__ (ints, slices, None, ..., bool
masks, integer tensors) and __setitem__, index_select, gather, scatter,
scatter_add, masked_fill, one_hot; forward, gradients and errors."""
import random

import numpy as np
import pytest
import torch

import lucid
from conftest import assert_close, check, gradcheck, rnd, to_torch


def _raises_like_torch(fn, *arrays, match=None):
    t_args = [torch.from_numpy(np.array(a)) for a in arrays]
    l_args = [lucid.tensor(np.array(a)) for a in arrays]
    with pytest.raises(Exception) as t_err:
        fn(torch, *t_args)
    with pytest.raises(type(t_err.value), match=match):
        fn(lucid, *l_args)


def _idx(m, values):
    return m.tensor(values) if m is torch else lucid.tensor(values)


BASIC_KEYS = [
    1, -1, slice(None), slice(1, 3), slice(None, None, 2), slice(-3, None), slice(5, 1), slice(1, 100),
    (0, 1), (1, slice(None), 2), (slice(None), -1), (None,), (None, 0), (Ellipsis, 1), (0, Ellipsis),
    (Ellipsis,), (slice(None), None, slice(1, 2)), (1, 2, 3), (Ellipsis, None), (slice(None, None, 3), 0, None),
    (), (None, Ellipsis, None),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=[repr(k) for k in BASIC_KEYS])
def test_getitem_basic(key):
    check(lambda m, a: a[key], rnd(3, 4, 5, seed=1))


def test_getitem_basic_random_keys_match_torch():
    """Random keys of ints, slices (any bounds, steps), None and one
    Ellipsis on random shapes, contiguous or transposed: the same values,
    shape, strides and storage offset as PyTorch (non-empty results: an
    empty one's strides are PyTorch's own choice), the same error kind, and
    a view of the indexed tensor's memory."""
    rng = random.Random(5)

    def item():
        c = rng.random()
        if c < 0.3:
            return rng.randint(-5, 5)
        if c < 0.75:
            return slice(rng.choice([None, -7, -2, 0, 1, 3, 9]), rng.choice([None, -7, -1, 0, 2, 4, 9]),
                         rng.choice([None, 1, 2, 3]))
        return None if c < 0.9 else Ellipsis

    compared = 0
    for _ in range(3000):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 4))]
        arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        t, x = torch.tensor(arr), lucid.tensor(arr)
        if len(shape) >= 2 and rng.random() < 0.3:
            t, x = t.transpose(0, 1), x.transpose(0, 1)
        key = tuple(item() for _ in range(rng.randint(1, 4))) if rng.random() < 0.8 else item()
        if isinstance(key, tuple) and key.count(Ellipsis) > 1:
            continue  # PyTorch accepts several and skips dims for each; NumPy and Lucid raise
        try:
            expected = t[key]
        except IndexError:
            with pytest.raises(IndexError):
                x[key]
            continue
        got = x[key]
        assert list(got.shape) == list(expected.shape), key
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        if expected.numel():
            assert got.stride() == expected.stride() and got.storage_offset() == expected.storage_offset(), key
            assert got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
            compared += 1
    assert compared > 800  # most keys select something


def test_getitem_zero_dim_and_empty():
    check(lambda m, a: a[None], rnd(seed=2))
    check(lambda m, a: a[...], rnd(seed=2))
    check(lambda m, a: a[()], rnd(seed=2))
    check(lambda m, a: a[1:1], rnd(4, seed=2))
    check(lambda m, a: a[:, 0], rnd(0, 3, seed=2))


ADV_KEYS = [
    lambda m: _idx(m, [0, 2, -1]),
    lambda m: _idx(m, [[0, 1], [2, 2]]),
    lambda m: (slice(None), _idx(m, [3, 0, 3])),
    lambda m: (_idx(m, [0, 2]), _idx(m, [1, 3])),
    lambda m: (_idx(m, [[0], [2]]), _idx(m, [1, 3])),
    lambda m: (_idx(m, [0, 2]), slice(None), _idx(m, [1, 4])),
    lambda m: (1, _idx(m, [0, 2])),
    lambda m: (Ellipsis, _idx(m, [4, 0])),
    lambda m: (_idx(m, [2, 1]), slice(1, 3)),
    lambda m: (slice(None), _idx(m, [1, 2]), _idx(m, [0, 4])),
    lambda m: [0, 2],
    lambda m: (None, _idx(m, [1])),
    lambda m: _idx(m, 1),
]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence:UserWarning")
@pytest.mark.parametrize("k", range(len(ADV_KEYS)))
def test_getitem_advanced(k):
    check(lambda m, a: a[ADV_KEYS[k](m)], rnd(3, 4, 5, seed=3))


def test_getitem_bool_masks():
    x = rnd(3, 4, seed=4)
    check(lambda m, a: a[a > 0], x)
    check(lambda m, a: a[_idx(m, [True, False, True])], x)
    check(lambda m, a: a[:, _idx(m, [True, False, True, True])], x)
    check(lambda m, a: a[_idx(m, np.zeros((3, 4), bool))], x)
    check(lambda m, a: a[True], x)
    check(lambda m, a: a[False], x)
    check(lambda m, a: a[None, True], x)
    check(lambda m, a: a[0, False], x)
    check(lambda m, a: a[_idx(m, True)], x)


def test_getitem_duplicate_index_gradients_accumulate():
    check(lambda m, a: a[_idx(m, [0, 0, 1, 0])], rnd(3, 2, seed=5))
    check(lambda m, a: a[:, _idx(m, [[1, 1], [1, 0]])], rnd(2, 3, seed=5))


def test_getitem_int32_index_and_numpy_index():
    check(lambda m, a: a[_idx(m, np.array([2, 0], dtype=np.int32))], rnd(3, 2, seed=6))
    check(lambda m, a: a[np.array([2, 0])], rnd(3, 2, seed=6))


def test_getitem_gradcheck():
    idx = lucid.tensor([2, 0, 2])
    gradcheck(lambda a: a[1:, idx] * 2.0, rnd(3, 4, dtype="float64"))
    gradcheck(lambda a: a[..., None, ::2], rnd(3, 4, dtype="float64"))


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence:UserWarning")
def test_getitem_errors():
    x = rnd(3, 4)
    _raises_like_torch(lambda m, a: a[3], x, match="out of bounds")
    _raises_like_torch(lambda m, a: a[:, -5], x, match="out of bounds")
    _raises_like_torch(lambda m, a: a[0, 0, 0], x, match="too many indices")
    _raises_like_torch(lambda m, a: a[_idx(m, [0, 5])], x, match="out of bounds")
    _raises_like_torch(lambda m, a: a[_idx(m, [0.5])], x, match="long, int")
    _raises_like_torch(lambda m, a: a["a"], x)
    with pytest.raises(ValueError):
        lucid.ones(3)[::-1]  # negative steps are not supported (torch raises ValueError too)
    with pytest.raises(ValueError):
        torch.ones(3)[::-1]
    with pytest.raises(IndexError, match="single ellipsis"):  # NumPy's rule; torch is lenient here
        lucid.ones(3)[..., ...]


# -------------------------------------------------------------- setitem
SET_CASES = [
    (1, 5.0), (slice(1, 3), 2.0), ((slice(None), 2), -1.0), ((0, slice(1, None, 2)), 7.0), ((Ellipsis, 0), 3.0),
    ((None, 1), 4.0), (-1, 0.5),
]


@pytest.mark.parametrize("key,value", SET_CASES, ids=[repr(k) for k, _ in SET_CASES])
def test_setitem_basic_scalar(key, value):
    def fn(m, a):
        b = a.clone()
        b[key] = value
        return b

    check(fn, rnd(3, 4, seed=7))


def test_setitem_tensor_values_broadcast_and_gradient():
    def fn(m, a, v):
        b = a * 1.0
        b[1:, :2] = v
        return b

    check(fn, rnd(3, 4, seed=8), rnd(2, 2, seed=9))
    check(fn, rnd(3, 4, seed=8), rnd(2, seed=9))
    check(fn, rnd(3, 4, seed=8), rnd(seed=9))


def test_setitem_mask_and_index_tensors():
    def mask(m, a, v):
        b = a.clone()
        b[a > 0] = v
        return b

    check(mask, rnd(3, 4, seed=10), rnd(seed=11))

    def rows(m, a, v):
        b = a.clone()
        b[_idx(m, [2, 0])] = v
        return b

    check(rows, rnd(3, 4, seed=12), rnd(2, 4, seed=13))
    check(rows, rnd(3, 4, seed=12), rnd(4, seed=13))

    def points(m, a):
        b = a.clone()
        b[_idx(m, [0, 2]), _idx(m, [1, 3])] = 9.0
        return b

    check(points, rnd(3, 4, seed=14))

    def mask_rows(m, a):
        b = a.clone()
        b[_idx(m, [True, False, True])] = 0.0
        return b

    check(mask_rows, rnd(3, 4, seed=14))


MIXED_SET_KEYS = [
    lambda m: (slice(None), _idx(m, [3, 0])),
    lambda m: (0, _idx(m, [1, 2])),
    lambda m: (_idx(m, [2, 0]), slice(1, 3)),
    lambda m: (_idx(m, [0, 2]), slice(None), _idx(m, [1, 4])),
    lambda m: (Ellipsis, _idx(m, [4, 0, 1])),
    lambda m: (slice(None), _idx(m, [True, False, True, False])),
    lambda m: (1, slice(None), _idx(m, [[0], [3]])),
    lambda m: (None, _idx(m, [1]), 2),
]


@pytest.mark.parametrize("k", range(len(MIXED_SET_KEYS)))
def test_setitem_advanced_mixed_with_basic(k):
    def fn(m, a, v):
        b = a * 1.0
        key = MIXED_SET_KEYS[k](m)
        b[key] = v * 1.0 if v.shape == b[key].shape else v.sum() * 1.0
        return b

    check(fn, rnd(3, 4, 5, seed=30), rnd(seed=31))

    def tensor_value(m, a):
        b = a.clone()
        key = MIXED_SET_KEYS[k](m)
        b[key] = m.arange(float(b[key].numel())).reshape(b[key].shape)
        return b

    check(tensor_value, rnd(3, 4, 5, seed=30))


def test_setitem_dtype_cast_and_int_tensor():
    x = lucid.zeros(2, 3, dtype=lucid.int64)
    x[0, 1] = 7.9  # truncated toward zero, like torch
    t = torch.zeros(2, 3, dtype=torch.int64)
    t[0, 1] = 7.9
    assert_close(x, t)
    x[1] = lucid.tensor([1.5, 2.5, -3.5])
    t[1] = torch.tensor([1.5, 2.5, -3.5])
    assert_close(x, t)


def test_setitem_bumps_version_and_shares_views():
    x = lucid.zeros(4)
    v = x.view(2, 2)
    x[1] = 3.0
    assert x._version == 1
    np.testing.assert_array_equal(v.numpy(), [[0, 3], [0, 0]])


def test_setitem_errors():
    x = lucid.zeros(3, 4)
    before = x.numpy().copy()
    with pytest.raises(RuntimeError, match=r"\[3\].*\[2, 4\]|\[2, 4\].*\[3\]|shape"):
        x[:2] = lucid.ones(3)
    with pytest.raises(IndexError):
        x[5] = 1.0
    leaf = lucid.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf[0] = 1.0
    np.testing.assert_array_equal(x.numpy(), before)


# ------------------------------------------------------ index ops
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dim):
    x = rnd(4, 5, seed=15)
    idx = np.array([3, 0, 3, 1])
    check(lambda m, a: m.index_select(a, dim, _idx(m, idx)), x)
    check(lambda m, a: a.index_select(dim, _idx(m, idx.astype(np.int32))), x)
    check(lambda m, a: a.index_select(dim, _idx(m, np.zeros(0, np.int64))), x)


def test_index_select_zero_dim():
    check(lambda m, a: a.index_select(0, _idx(m, [0])), rnd(seed=15))
    check(lambda m, a: a.index_select(-1, _idx(m, 0)), rnd(seed=15))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim):
    x = rnd(3, 4, seed=16)
    rng = np.random.default_rng(0)
    size = x.shape[dim]
    idx = rng.integers(0, size, size=(2, 3) if dim == 0 else (3, 2))
    check(lambda m, a: m.gather(a, dim, _idx(m, idx)), x)
    check(lambda m, a: a.gather(dim, _idx(m, idx)), x)
    check(lambda m, a: a.gather(dim, _idx(m, idx.astype(np.int32))), x)
    check(lambda m, a: a.gather(dim, _idx(m, idx)), x.astype(np.float64))
    check(lambda m, a: a.gather(dim, _idx(m, idx)), x > 0, grad=False)


def test_gather_gradcheck_and_repeats():
    idx = lucid.tensor([[0, 0, 2], [1, 1, 1]])
    gradcheck(lambda a: lucid.gather(a, 1, idx), rnd(2, 3, dtype="float64"))
    check(lambda m, a: a.gather(1, _idx(m, [[0, 0, 2], [1, 1, 1]])), rnd(2, 3, seed=17))


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_add(dim):
    x, src = rnd(3, 4, seed=18), rnd(3, 4, seed=19)
    idx = np.array([[0, 1, 2, 0], [2, 2, 0, 1], [1, 0, 0, 2]]) if dim == 0 else np.array(
        [[0, 1, 3, 0], [2, 2, 0, 1], [1, 3, 3, 2]])
    check(lambda m, a, s: m.scatter_add(a, dim, _idx(m, idx), s), x, src)
    check(lambda m, a, s: a.scatter_add(dim, _idx(m, idx), s), x, src)
    # src larger than index: only the indexed part is read (torch's own
    # backward fails on this case, so the gradient is checked numerically)
    small = idx[:2, :3]
    check(lambda m, a, s: a.scatter_add(dim, _idx(m, small), s), x, src, grad=False)
    gradcheck(lambda a, s: a.scatter_add(dim, lucid.tensor(small), s), x.astype(np.float64), src.astype(np.float64))


def test_scatter():
    x, src = rnd(3, 4, seed=20), rnd(2, 4, seed=21)
    idx = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])  # unique per column: deterministic
    check(lambda m, a, s: m.scatter(a, 0, _idx(m, idx), s), x, src)
    check(lambda m, a: a.scatter(0, _idx(m, idx), 5.0), x)
    check(lambda m, a: a.scatter(1, _idx(m, [[3], [0], [1]]), -1.0), x)


def test_scatter_inplace_variants():
    def fn(m, a, s):
        b = a.clone()
        b.scatter_add_(1, _idx(m, [[0, 0], [1, 2], [3, 3]]), s)
        return b

    check(fn, rnd(3, 4, seed=22), rnd(3, 2, seed=23))


@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (3, 1), ()])
def test_masked_fill(mask_shape):
    x = rnd(3, 4, seed=24)
    mask = rnd(*mask_shape, dtype="bool", seed=25)
    check(lambda m, a, k: m.masked_fill(a, k, -1.5), x, mask)
    check(lambda m, a, k: a.masked_fill(k, float("-inf")), x, mask)
    check(lambda m, a, k, v: a.masked_fill(k, v), x, mask, rnd(seed=26))
    check(lambda m, a, k: a.masked_fill(k, 2), rnd(3, 4, dtype="int64", seed=27), mask, grad=False)


def test_one_hot():
    idx = np.array([[0, 2], [1, 4]])
    t = torch.nn.functional.one_hot(torch.from_numpy(idx))
    assert_close(lucid.one_hot(lucid.tensor(idx)), t)
    t = torch.nn.functional.one_hot(torch.from_numpy(idx), 6)
    assert_close(lucid.one_hot(lucid.tensor(idx), 6), t)
    assert_close(lucid.one_hot(lucid.tensor(3), 4), torch.nn.functional.one_hot(torch.tensor(3), 4))
    with pytest.raises(RuntimeError):
        lucid.one_hot(lucid.tensor([1.0]))
    with pytest.raises(RuntimeError):
        lucid.one_hot(lucid.tensor([5]), 3)
    with pytest.raises(RuntimeError):
        lucid.one_hot(lucid.tensor([-1]), 3)
    # inferred num_classes: a negative class was an all-zero row
    with pytest.raises(RuntimeError, match="non-negative"):
        lucid.one_hot(lucid.tensor([-1, 2]))


def test_index_op_errors():
    x = rnd(3, 4)
    _raises_like_torch(lambda m, a: a.index_select(1, _idx(m, [4])), x)
    _raises_like_torch(lambda m, a: a.index_select(1, _idx(m, [0.0])), x, match="int")
    _raises_like_torch(lambda m, a: a.index_select(2, _idx(m, [0])), x, match="range")
    _raises_like_torch(lambda m, a: a.gather(1, _idx(m, [[5]])), x, match="out of bounds")
    _raises_like_torch(lambda m, a: a.gather(1, _idx(m, [0])), x, match="dimensions")
    _raises_like_torch(lambda m, a: a.gather(1, _idx(m, [[0.0]])), x, match="int")
    _raises_like_torch(lambda m, a: a.scatter_add(0, _idx(m, [[7]]), a), x, match="out of bounds")
    _raises_like_torch(lambda m, a: a.masked_fill(_idx(m, [1, 0, 1, 1]), 0.0), x, match="bool")
    _raises_like_torch(lambda m, a: a.masked_fill(_idx(m, [True, False]), 0.0), x)
    _raises_like_torch(lambda m, a: a.masked_fill(_idx(m, [True] * 4), _idx(m, [1.0, 2.0])), x, match="0-dim")


def test_failed_scatter_changes_nothing():
    x = lucid.zeros(3)
    with pytest.raises(RuntimeError):
        x.scatter_add_(0, lucid.tensor([0, 9]), lucid.ones(2))
    np.testing.assert_array_equal(x.numpy(), np.zeros(3))
    assert x._version == 0


def test_multithreaded_sizes():
    x = rnd(500, 300, seed=40)
    idx = np.random.default_rng(1).integers(0, 500, size=200)
    check(lambda m, a: a.index_select(0, _idx(m, idx)), x)  # backward: index_add with repeats
    check(lambda m, a: a[_idx(m, idx)] * 2, x)
    check(lambda m, a: a.index_select(1, _idx(m, idx % 300)), x)
    check(lambda m, a: a.gather(1, _idx(m, np.tile(idx % 300, (500, 1)))), x)


def _random_key(r, shape):
    """A random index: slices (any bounds and steps), ints, None, one
    Ellipsis, long index lists (1-D or 2-D, in range) and bool masks (right
    or wrong length) over a tensor of `shape`."""
    items, dim, used_ellipsis = [], 0, False
    while dim < len(shape) and len(items) <= len(shape):
        k, size = r.random(), shape[dim]
        if k < 0.25:
            items.append(slice(r.choice([None, r.randint(-size - 1, size + 1)]),
                               r.choice([None, r.randint(-size - 1, size + 1)]), r.choice([None, 1, 2, 3])))
            dim += 1
        elif k < 0.4 and size > 0:
            items.append(r.randint(-size, size - 1))
            dim += 1
        elif k < 0.5:
            items.append(None)
        elif k < 0.6 and not used_ellipsis:
            items.append(Ellipsis)
            used_ellipsis, dim = True, len(shape) - r.randint(0, len(shape) - dim)
        elif k < 0.75 and size > 0:
            idx = [r.randint(-size, size - 1) for _ in range(r.randint(0, 4))]
            items.append(("long", idx if r.random() < 0.8 else [idx[:1] * 2, idx[:1] * 2] if idx else [[0, 0]] * 2))
            dim += 1
        elif k < 0.85:
            items.append(("bool", [r.random() < 0.5 for _ in range(size + (r.random() < 0.1))]))
            dim += 1
        else:
            break
    return items


def _key(lib, items):
    return tuple(lib.tensor(v, dtype=lib.long if kind == "long" else lib.bool) if isinstance(it, tuple) else it
                 for it in items for kind, v in [it if isinstance(it, tuple) else (None, None)])


@pytest.mark.parametrize("seed", range(4))
def test_random_indexing_matches_torch(seed):
    """getitem and setitem with random mixes of basic and advanced indices
    (empty shapes included): the same result or the same error kind."""
    r = random.Random(seed)
    for i in range(600):
        shape = tuple(r.choice([0, 1, 2, 3, 4]) for _ in range(r.randint(0, 4)))
        a = np.random.default_rng(i).standard_normal(shape).astype(np.float32)
        items = _random_key(r, shape)
        setting = r.random() < 0.4
        outcome = []
        for lib in (torch, lucid):
            x = lib.tensor(a)
            try:
                if setting:
                    x[_key(lib, items)] = 7.5
                    outcome.append(x.numpy().copy())
                else:
                    outcome.append(x[_key(lib, items)].numpy().copy())
            except IndexError as e:
                outcome.append(IndexError)
        want, got = outcome
        if want is IndexError or got is IndexError:
            assert want is got, (shape, items, setting)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{shape} {items} {'set' if setting else 'get'}")


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(accumulate):
    """Integer index tensors (repeated, negative, broadcast), a bool mask over
    several dims, a scalar value; values and gradients. (A bool mask was taken
    for 0/1 integer indices before.)"""
    cases = [lambda m, y: ((m.tensor([0, 2, 0, -1]), m.tensor([1, 3, 1, 0])), m.tensor([1., 2., 3., 4.])),
             lambda m, y: ((m.tensor([1, 1]),), m.ones(2, 4)),
             lambda m, y: ((y > 5,), m.tensor(1.5)),
             lambda m, y: ((m.tensor([[0], [2]]), m.tensor([1, 2])), m.tensor([[1.], [2.]]))]
    for case in cases:
        got = []
        for m in (torch, lucid):
            x = m.arange(12.0).reshape(3, 4).requires_grad_()
            y = x * 1
            indices, values = case(m, y)
            out = y.index_put(indices, values, accumulate=accumulate)
            (out * out).sum().backward()
            z = m.zeros(3, 4)
            z.index_put_(indices, values, accumulate=accumulate)
            got.append((out.detach().numpy(), x.grad.numpy(), z.numpy()))
        for w, g in zip(*got):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(IndexError, match="out of bounds for dimension 0"):
        lucid.zeros(3).index_put((lucid.tensor([5]),), lucid.tensor(1.0), accumulate=accumulate)


def test_duplicate_writes_keep_the_last_as_torch_cpu():
    """Without accumulation, several positions naming one element leave the
    last one's value (PyTorch's CPU order; the GPU kernels resolve the
    collision the same way rather than by a race)."""
    idx = [[0, 1, 2, 0], [2, 1, 0, 0], [0, 1, 0, 0]]
    got = []
    for m in (torch, lucid):
        x = m.zeros(3, 4)
        src = m.arange(12.).reshape(3, 4)
        y = m.zeros(6)
        y[m.tensor([1, 3, 1, 1])] = m.tensor([1., 2., 3., 4.])
        got.append([x.scatter(0, m.tensor(idx), src).numpy(), x.scatter(1, m.tensor(idx), src).numpy(), y.numpy()])
    for g, w in zip(*got):
        np.testing.assert_array_equal(g, w)
    # Many collisions: the last write, as NumPy's assignment (PyTorch's CPU
    # kernel splits large index_put across threads, and which write survives
    # varies between its versions).
    big = lucid.zeros(5)
    big.index_put_((lucid.arange(4000) % 5,), lucid.arange(4000.))
    want = np.zeros(5, np.float32)
    want[np.arange(4000) % 5] = np.arange(4000.)
    np.testing.assert_array_equal(big.numpy(), want)


# Cases the semantics probe (python -m tests.fuzz.semantics) found differing
# from PyTorch; each source runs with T = torch and T = lucid.
INDEXING_CASES = [
    # advanced-index writes take a value of the tensor's own dtype only...
    "x = T.tensor([[2.5, 1.5], [2.0, 1.0]])\nx[[1]] = T.tensor([-70], dtype=T.int16)\nresult = x",
    "x = T.tensor([5, 448], dtype=T.int32)\nx[..., T.tensor([[1, 0], [0, 1]])] = T.tensor([-2.0])\nresult = x",
    "x = T.tensor([4, 6], dtype=T.int64)\nx[T.tensor([0])] = T.tensor(1, dtype=T.int32)\nresult = x",
    # ... except one value under one bool mask (PyTorch's masked_fill_), and basic indexing (a copy_)
    "x = T.zeros(3)\nx[x == 0] = T.tensor(1)\nresult = x",
    "x = T.zeros(2, 3)\nx[:, T.tensor([True, False, True])] = T.tensor([7], dtype=T.float64)\nresult = x",
    "x = T.zeros(2, 3)\nx[T.tensor([True, False])] = T.tensor([1, 2, 3])\nresult = x",
    "x = T.zeros(3)\nx[1:] = T.tensor([5, 6])\nresult = x",
    # a Python number must fit the dtype (PyTorch's overflow check)
    "x = T.zeros(3, dtype=T.int8)\nx[0] = 300\nresult = x",
    "x = T.zeros(3, dtype=T.int8)\nx[[0, 0]] = -129\nresult = x",
    "x = T.zeros(3, dtype=T.int16)\nx[T.tensor([], dtype=T.int64)] = float('nan')\nresult = x",
    "x = T.zeros(3, dtype=T.int8)\nx[0] = 2.5\nresult = x",
    "x = T.zeros(3, dtype=T.uint8)\nx[0] = -3\nresult = x",
    "x = T.zeros(3, dtype=T.uint8)\nx[0] = -0.5\nresult = x",
    "x = T.zeros(3, dtype=T.float16)\nx[0] = 70000\nresult = x",
    "x = T.zeros(3, dtype=T.float32)\nx[0] = 1e39\nresult = x",
    "result = T.zeros(2, dtype=T.uint8).fill_(-256)",
    # index_put_
    "x = T.tensor([[23, 4], [-3, -14]], dtype=T.int32)\n"
    "x.index_put_((T.tensor([0, -1]),), T.tensor([2.0], dtype=T.float16), accumulate=True)\nresult = x",
    "x = T.zeros((3, 4, 0), dtype=T.float64)\nr = x.index_put_((T.tensor([1, -2]),), T.tensor([2.0], dtype=T.float64), "
    "accumulate=True)\nresult = (x, r is x)",
    # an empty slice starts where PyTorch's does
    "x = T.tensor([2, 0], dtype=T.uint8)\ny = x[3:]\nresult = (y, y.stride(), y.storage_offset(), y.is_contiguous())",
    "x = T.zeros(3, 4)\ny = x[1:1, 2:]\nresult = (y.shape, y.storage_offset(), y.is_contiguous())",
]


@pytest.mark.parametrize("src", INDEXING_CASES)
def test_indexing_semantics_match_torch(src):
    from tests.fuzz.semantics import check as difference_from_torch

    assert difference_from_torch(src) is None, difference_from_torch(src)


def test_index_fill_keeps_the_input_dtype_like_torch():
    """index_fill(_) writes the value in the input's dtype (2.7 into int64
    is 2, 9 into bool is True), in place too; a number the dtype cannot
    hold raises."""
    for dtype, value in [("int64", 2.7), ("int32", -3.9), ("bool", 9), ("uint8", 7), ("float32", -1.5), ("float64", 3)]:
        got = lucid.zeros(2, 3, dtype=getattr(lucid, dtype)).index_fill(1, lucid.tensor([0, 2]), value)
        want = torch.zeros(2, 3, dtype=getattr(torch, dtype)).index_fill(1, torch.tensor([0, 2]), value)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        x = lucid.zeros(3, dtype=getattr(lucid, dtype))
        assert x.index_fill_(0, lucid.tensor([1]), value) is x
        np.testing.assert_array_equal(x.numpy(), torch.zeros(3, dtype=getattr(torch, dtype)).index_fill_(
            0, torch.tensor([1]), value).numpy())
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(3, dtype=torch.uint8).index_fill_(0, torch.tensor([0]), 300)
    with pytest.raises(RuntimeError, match="overflow"):
        lucid.zeros(3, dtype=lucid.uint8).index_fill_(0, lucid.tensor([0]), 300)


def test_setitem_with_scalar_tensor_indices_casts_like_torch():
    """A 0-d integer tensor in a key indexes as an int does (a view whose
    write casts the value), and one bool mask beside basic items takes a
    one-element value of another dtype; an index tensor with a value of
    another dtype still raises PyTorch's error."""
    cases = [
        (lambda m: m.zeros(1, 3, 1, 2, dtype=m.float16), lambda m: m.tensor(-1),
         lambda m: m.tensor([943, 6], dtype=m.int32)),
        (lambda m: m.tensor([-2, -6, 2, -2], dtype=m.int32), lambda m: (m.tensor(0), Ellipsis),
         lambda m: m.tensor([[-3.0]], dtype=m.float64)),
        (lambda m: m.zeros(2, 3, dtype=m.float64), lambda m: (-1, m.tensor(-3)),
         lambda m: m.tensor(91, dtype=m.uint8)),
        (lambda m: m.zeros(2, 1, 2, dtype=m.bfloat16), lambda m: (m.tensor([False, True]), -1, 1, None),
         lambda m: m.tensor([[5.0]])),
    ]
    for make, key, value in cases:
        got, want = make(lucid), make(torch)
        got[key(lucid)] = value(lucid)
        want[key(torch)] = value(torch)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    x = lucid.zeros(3)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x[lucid.tensor([0, 1])] = lucid.tensor([1.5, 2.5], dtype=lucid.float64)


@pytest.mark.parametrize("index", [[1, 3, 1, 1], [2, 2, 0, 0], [3, 0, 1, 2]])
def test_index_copy_with_repeated_indices_keeps_the_last_slice(index):
    """PyTorch's CPU result: a repeated index takes the last of its source
    slices (the repeats used to be summed)."""
    x = np.zeros((2, 4), np.float32)
    src = np.arange(8, dtype=np.float32).reshape(2, 4)
    want = torch.index_copy(torch.tensor(x), 1, torch.tensor(index), torch.tensor(src))
    got = lucid.index_copy(lucid.tensor(x), 1, lucid.tensor(index), lucid.tensor(src))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    inplace = lucid.tensor(x)
    inplace.index_copy_(1, lucid.tensor(index), lucid.tensor(src))
    np.testing.assert_array_equal(inplace.numpy(), want.numpy())


@pytest.mark.parametrize("case", ["empty mask", "out-of-range index over an empty row"])
def test_index_put_of_nothing_gives_the_values_a_zero_gradient(case):
    """PyTorch keeps the values in the graph when the write selects nothing:
    their .grad is zeros, not None."""
    grads = []
    for T in (torch, lucid):
        if case == "empty mask":
            x = T.zeros(3, 4, dtype=T.float64, requires_grad=True)
            key = T.tensor([False, False, False])
        else:
            x = T.zeros(3, 0, dtype=T.float64, requires_grad=True)
            key = T.tensor([5])
        v = T.tensor([-0.5], dtype=T.float64, requires_grad=True)
        y = x * 1
        y[key] = v * 2
        y.sum().backward()
        grads.append(v.grad)
    assert grads[1] is not None
    np.testing.assert_array_equal(grads[1].numpy(), grads[0].numpy())
