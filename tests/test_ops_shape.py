"""Shape ops against PyTorch: reshape/view, flatten, squeeze, unsqueeze,
permute, transpose, .T, expand, broadcast_to, cat, stack, split, chunk,
tril/triu; forward, gradients and errors."""
import numpy as np
import pytest
import torch

import lucid
from conftest import check, gradcheck, rnd


def _raises_like_torch(fn, *arrays, match=None):
    t_args = [torch.from_numpy(np.array(a)) for a in arrays]
    l_args = [lucid.tensor(np.array(a)) for a in arrays]
    with pytest.raises(Exception) as t_err:
        fn(torch, *t_args)
    with pytest.raises(type(t_err.value), match=match):
        fn(lucid, *l_args)


@pytest.mark.parametrize("shape", [(6, 4), (24,), (2, 3, 4), (-1, 8), (3, -1, 2), (1, 24, 1), (4, 6)])
def test_reshape_view(shape):
    x = rnd(2, 3, 4, seed=1)
    check(lambda m, a: a.reshape(shape), x)
    check(lambda m, a: a.reshape(*shape), x)
    check(lambda m, a: a.view(shape), x)
    check(lambda m, a: m.reshape(a, shape), x)


def test_reshape_edge_cases():
    check(lambda m, a: a.reshape(()), rnd(1, 1, seed=2))
    check(lambda m, a: a.reshape(1, 1, 1), rnd(seed=2))
    check(lambda m, a: a.reshape(-1), rnd(seed=2))
    check(lambda m, a: a.reshape(0, 5), rnd(0, seed=2))
    check(lambda m, a: a.reshape(2, 0, 5), rnd(4, 0, 3, seed=2))
    check(lambda m, a: a.view_as(m.zeros(4, 3)), rnd(3, 4, seed=2))
    check(lambda m, a: a.reshape_as(m.zeros(12)), rnd(3, 4, seed=2))


def test_reshape_shares_storage():
    x = lucid.arange(6.0)
    v = x.view(2, 3)
    x.add_(1.0)
    np.testing.assert_array_equal(v.numpy(), np.arange(6.0).reshape(2, 3) + 1)


@pytest.mark.parametrize("args", [(), (1,), (0, 1), (1, 2), (-2, -1), (0, -1)])
def test_flatten(args):
    check(lambda m, a: a.flatten(*args), rnd(2, 3, 4, seed=3))
    check(lambda m, a: m.flatten(a, *args), rnd(2, 3, 4, seed=3))


def test_flatten_zero_dim():
    check(lambda m, a: a.flatten(), rnd(seed=3))


@pytest.mark.parametrize("dim", [None, 0, 1, 2, -1, (0, 2), (1, 3)])
def test_squeeze(dim):
    x = rnd(1, 3, 1, 1, seed=4)
    if dim is None:
        check(lambda m, a: a.squeeze(), x)
        check(lambda m, a: m.squeeze(a), x)
    else:
        check(lambda m, a: a.squeeze(dim), x)
        check(lambda m, a: m.squeeze(a, dim), x)


def test_squeeze_zero_dim_and_empty():
    check(lambda m, a: a.squeeze(), rnd(seed=5))
    check(lambda m, a: a.squeeze(0), rnd(seed=5))
    check(lambda m, a: a.squeeze(), rnd(0, 1, seed=5))


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -1, -4])
def test_unsqueeze(dim):
    check(lambda m, a: a.unsqueeze(dim), rnd(2, 3, 4, seed=6))
    check(lambda m, a: m.unsqueeze(a, dim), rnd(2, 3, 4, seed=6))


def test_unsqueeze_zero_dim():
    check(lambda m, a: a.unsqueeze(0), rnd(seed=6))
    check(lambda m, a: a.unsqueeze(-1), rnd(seed=6))


@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1), (-1, 0, 1), (1, 2, 0)])
def test_permute(perm):
    check(lambda m, a: a.permute(*perm), rnd(2, 3, 4, seed=7))
    check(lambda m, a: a.permute(perm), rnd(2, 3, 4, seed=7))
    check(lambda m, a: m.permute(a, perm), rnd(2, 3, 4, seed=7))


def test_permute_with_unit_dims():
    check(lambda m, a: a.permute(2, 0, 3, 1), rnd(1, 3, 1, 4, seed=8))
    check(lambda m, a: a.permute(1, 0), rnd(0, 3, seed=8))


@pytest.mark.parametrize("d0,d1", [(0, 1), (1, 2), (0, 2), (-1, -2), (1, 1)])
def test_transpose(d0, d1):
    check(lambda m, a: a.transpose(d0, d1), rnd(2, 3, 4, seed=9))
    check(lambda m, a: m.transpose(a, d0, d1), rnd(2, 3, 4, seed=9))
    check(lambda m, a: m.swapaxes(a, d0, d1), rnd(2, 3, 4, seed=9))


@pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")
def test_T_mT_t():
    check(lambda m, a: a.T, rnd(3, 4, seed=10))
    check(lambda m, a: a.T, rnd(4, seed=10))
    check(lambda m, a: a.T, rnd(seed=10))
    check(lambda m, a: a.mT, rnd(2, 3, 4, seed=10))
    check(lambda m, a: a.t(), rnd(3, 4, seed=10))
    check(lambda m, a: m.t(a), rnd(4, seed=10))
    check(lambda m, a: a.transpose(0, 0), rnd(seed=10))


def test_transpose_gradcheck():
    gradcheck(lambda a: a.transpose(0, 2) * 2.0, rnd(2, 3, 4, dtype="float64"))
    gradcheck(lambda a: a.permute(1, 2, 0).reshape(12, 2), rnd(2, 3, 4, dtype="float64"))


@pytest.mark.parametrize("src,target", [((3, 1), (3, 4)), ((1,), (2, 5)), ((), (2, 3)), ((2, 1, 3), (4, 2, 5, 3)),
                                        ((3,), (2, 3)), ((1, 1), (1, 1)), ((1, 3), (0, 3))])
def test_expand_broadcast_to(src, target):
    x = rnd(*src, seed=11)
    check(lambda m, a: a.expand(*target), x)
    check(lambda m, a: a.expand(target), x)
    check(lambda m, a: m.broadcast_to(a, target), x)
    check(lambda m, a: a.broadcast_to(target), x)


def test_expand_minus_one_and_expand_as():
    check(lambda m, a: a.expand(2, -1, 4), rnd(2, 3, 1, seed=12))
    check(lambda m, a: a.expand(5, -1, -1, 4), rnd(2, 3, 1, seed=12))
    check(lambda m, a, b: a.expand_as(b), rnd(3, 1, seed=12), rnd(2, 3, 4, seed=13))


def test_broadcast_gradcheck():
    gradcheck(lambda a: a.expand(2, 3, 4) * lucid.arange(4.0, dtype=lucid.float64), rnd(3, 1, dtype="float64"))


# -------------------------------------------------------------- cat / stack
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim):
    shapes = {0: [(2, 3), (1, 3), (4, 3)], 1: [(2, 1), (2, 3), (2, 2)], -1: [(2, 1), (2, 3), (2, 2)]}[dim]
    arrays = [rnd(*s, seed=i) for i, s in enumerate(shapes)]
    check(lambda m, a, b, c: m.cat([a, b, c], dim), *arrays)
    check(lambda m, a, b, c: m.cat((a, b, c), dim=dim), *arrays)
    check(lambda m, a, b, c: m.concat([a, b, c], dim), *arrays)


def test_cat_edge_cases():
    check(lambda m, a: m.cat([a], 0), rnd(2, 3, seed=1))
    check(lambda m, a, b: m.cat([a, b], 0), rnd(0, 3, seed=1), rnd(2, 3, seed=2))
    check(lambda m, a, b: m.cat([a, b], 1), rnd(2, 0, seed=1), rnd(2, 3, seed=2))
    check(lambda m, a, b: m.cat([a, b]), rnd(0, seed=1), rnd(2, 3, seed=2))  # legacy empty 1-D skipped
    # promotion across inputs
    check(lambda m, a, b: m.cat([a, b]), rnd(2, dtype="int64", seed=1), rnd(3, seed=2))
    check(lambda m, a, b: m.cat([a, b]), rnd(2, dtype="int32", seed=1), rnd(3, dtype="int64", seed=2), grad=False)
    check(lambda m, a, b: m.cat([a, b]), rnd(2, dtype="bool", seed=1), rnd(3, dtype="float64", seed=2))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(dim):
    arrays = [rnd(2, 3, seed=i) for i in range(3)]
    check(lambda m, a, b, c: m.stack([a, b, c], dim), *arrays)
    check(lambda m, a: m.stack([a], dim), arrays[0])


def test_stack_zero_dim():
    check(lambda m, a, b: m.stack([a, b]), rnd(seed=1), rnd(seed=2))


def test_cat_stack_gradcheck():
    gradcheck(lambda a, b: lucid.cat([a, b * 2.0], 1), rnd(2, 3, dtype="float64"), rnd(2, 2, dtype="float64", seed=1))
    gradcheck(lambda a, b: lucid.stack([a, b], 1), rnd(2, 3, dtype="float64"), rnd(2, 3, dtype="float64", seed=1))


# ------------------------------------------------------------ split / chunk
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, [2, 3], [5, 0], [1, 1, 3]])
@pytest.mark.parametrize("dim", [0, -1])
def test_split(size, dim):
    x = rnd(5, 5, seed=13)
    check(lambda m, a: m.split(a, size, dim), x)
    check(lambda m, a: a.split(size, dim), x)


@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 5, 6, 8])
def test_chunk(chunks):
    x = rnd(6, 5, seed=14)
    check(lambda m, a: m.chunk(a, chunks, 0), x)
    check(lambda m, a: a.chunk(chunks, 1), x)


def test_split_chunk_gradient_through_some_parts():
    # gradients of parts that are not used stay zero
    check(lambda m, a: a.split(2, 0)[1] * 3, rnd(5, 2, seed=15))
    check(lambda m, a: a.chunk(3, 1)[0].sum() + a.chunk(3, 1)[2].sum(), rnd(2, 7, seed=15))
    check(lambda m, a: m.unbind(a, 1), rnd(2, 3, seed=15))


def test_narrow():
    check(lambda m, a: a.narrow(1, 1, 2), rnd(3, 4, seed=16))
    check(lambda m, a: m.narrow(a, 0, -2, 2), rnd(3, 4, seed=16))


# ----------------------------------------------------------- tril / triu
@pytest.mark.parametrize("diagonal", [0, 1, -1, 3, -5])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 2), (2, 3, 4), (0, 3)])
def test_tril_triu(diagonal, shape):
    x = rnd(*shape, seed=17)
    check(lambda m, a: m.tril(a, diagonal), x)
    check(lambda m, a: a.triu(diagonal), x)
    check(lambda m, a: a.tril(diagonal=diagonal), rnd(*shape, dtype="int64", seed=18), grad=False)
    check(lambda m, a: a.triu(diagonal), rnd(*shape, dtype="bool", seed=18), grad=False)


def test_flip_roll_movedim_repeat():
    x = rnd(2, 3, 4, seed=19)
    check(lambda m, a: a.flip(0), x)
    check(lambda m, a: m.flip(a, (0, 2)), x)
    check(lambda m, a: a.roll(1, 2), x)
    check(lambda m, a: m.roll(a, (1, -1), (0, 1)), x)
    check(lambda m, a: m.roll(a, 5), x)
    check(lambda m, a: m.movedim(a, 0, -1), x)
    check(lambda m, a: a.repeat(2, 1, 3), x)
    check(lambda m, a: a.repeat(2, 2, 1, 1), x)
    check(lambda m, a: a.unflatten(2, (2, 2)), x)


@pytest.mark.parametrize("op", [lambda m, a: m.roll(a, 0, 1), lambda m, a: m.roll(a, 3, 1), lambda m, a: m.roll(a, 0),
                                lambda m, a: m.roll(a, 1, 1), lambda m, a: m.flip(a, []), lambda m, a: m.flip(a, [0]),
                                lambda m, a: m.flip(a, [1]), lambda m, a: m.flip(a, [0, -1])],
                         ids=["roll0", "roll_full", "roll_flat0", "roll1", "flip_none", "flip0", "flip1", "flip01"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_roll_and_flip_return_new_memory_laid_out_as_pytorch(op, layout):
    # roll is a new row-major tensor even for a zero shift (it returned its input, whose in-place
    # write then reached the parameter); flip keeps its input's memory order (flip of a transpose
    # is a transpose); both are new memory: a write to the result never reaches the input.
    def make(m):
        a = m.tensor(rnd(3, 4, seed=21))
        return a.movedim(0, 1) if layout == "transposed" else a
    x, t = make(lucid), make(torch)
    y, u = op(lucid, x), op(torch, t)
    assert y.stride() == u.stride()
    np.testing.assert_array_equal(y.numpy(), u.numpy())
    before = x.numpy().copy()
    y.mul_(2)
    np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize("shape,reps", [((3, 1), (1, 3)), ((1, 3), (3, 1)), ((3,), (3, 1)), ((2, 3), (1, 1)),
                                        ((2, 3), (2, 1, 1))])
def test_repeat_returns_new_contiguous_memory(shape, reps):
    # PyTorch's repeat copies: the result is contiguous and a write to it never reaches the input
    # (repeating along size-1 dims was an expanded view of the input, stride 0).
    x, t = lucid.tensor(rnd(*shape, seed=20)), torch.from_numpy(rnd(*shape, seed=20))
    y, u = x.repeat(*reps), t.repeat(*reps)
    assert y.is_contiguous() and y.stride() == u.stride()
    assert y.view(-1).shape == u.view(-1).shape
    before = x.numpy().copy()
    y.view(-1)[0] = 123.0
    np.testing.assert_array_equal(x.numpy(), before)


# ---------------------------------------------------------------- errors
def test_shape_errors():
    x = rnd(2, 3)
    _raises_like_torch(lambda m, a: a.reshape(4, 2), x, match=r"\[4, 2\].*6")
    _raises_like_torch(lambda m, a: a.view(-1, -1), x, match="only one dimension")
    _raises_like_torch(lambda m, a: a.reshape(2, 0, -1), rnd(4, 0, 3), match=r"\[2, 0, -1\]")
    _raises_like_torch(lambda m, a: a.flatten(1, 0), x, match="start_dim")
    _raises_like_torch(lambda m, a: a.squeeze(2), x, match="range")
    _raises_like_torch(lambda m, a: a.unsqueeze(3), x, match="range")
    _raises_like_torch(lambda m, a: a.permute(0, 0), x, match="duplicate")
    _raises_like_torch(lambda m, a: a.permute(0), x, match="dimensions|dims")
    _raises_like_torch(lambda m, a: a.transpose(0, 2), x, match="range")
    _raises_like_torch(lambda m, a: a.expand(4, 4), x, match=r"\[4, 4\].*\[2, 3\]")
    _raises_like_torch(lambda m, a: a.expand(3), x, match="number of sizes|2")
    _raises_like_torch(lambda m, a, b: m.cat([a, b]), x, rnd(2, 4), match=r"3.*4|\[2, 3\].*\[2, 4\]")
    _raises_like_torch(lambda m, a, b: m.cat([a, b]), x, rnd(2, 3, 1), match="dimensions|dims")
    _raises_like_torch(lambda m, a: m.cat([a, a], 2), x, match="range")
    _raises_like_torch(lambda m, a, b: m.stack([a, b]), x, rnd(3, 2), match=r"\[2, 3\].*\[3, 2\]")
    _raises_like_torch(lambda m, a: m.split(a, [1, 1], 1), x, match="sum exactly to 3")
    _raises_like_torch(lambda m, a: m.chunk(a, 0), x, match="greater than 0")
    _raises_like_torch(lambda m, a: m.tril(a), rnd(3), match="2 dimensions")
    _raises_like_torch(lambda m, a: a.narrow(1, 2, 2), x, match="exceeds")
    _raises_like_torch(lambda m, a: m.cat([a, a]), np.float32(1.0), match="zero-dimensional")
    with pytest.raises(RuntimeError):
        lucid.cat([])


@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 0, 1), (2, 1, 0), (0, 2, 1), (1, 2, 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool"])
def test_permute_large_tiled(perm, dtype):
    """Transposing copies go through 32x32 tiles: sizes not multiples of 32,
    with batch dims, every element width."""
    x = rnd(33, 70, 45, seed=9) if dtype in ("float32", "float64", "float16") else rnd(33, 70, 45, dtype=dtype, seed=9)
    check(lambda m, a: a.permute(*perm), x, dtypes=[dtype], grad=dtype == "float32")


@pytest.mark.parametrize("shape,perm", [
    ((6, 12, 3, 4, 32), (2, 0, 3, 1, 4)),  # innermost dim kept: contiguous runs
    ((5, 7, 3), (1, 0, 2)),  # runs of 3 elements
    ((6, 5, 2), (1, 0, 2)),  # runs of 2: moved as one wider element
    ((3, 9, 4, 2), (1, 0, 2, 3)),  # dims 2, 3 stay together: runs of 8
    ((4, 6, 33, 45), (0, 1, 3, 2)),  # batch of odd-sized transposes
    ((2, 3, 4, 5, 6), (4, 2, 0, 3, 1)),
    ((1, 40, 1, 17), (3, 2, 1, 0)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool"])
def test_permute_runs_and_transposes(shape, perm, dtype):
    """Each path of the permuting copy: runs kept whole, short runs moved as
    wider elements, tiled transposes with partial tiles."""
    x = rnd(*shape, seed=10) if dtype.startswith("float") else rnd(*shape, dtype=dtype, seed=10)
    check(lambda m, a: a.permute(*perm), x, dtypes=[dtype], grad=dtype == "float32")


def test_permute_same_at_any_thread_count():
    x = lucid.tensor(rnd(16, 128, 3, 4, 32, seed=11))
    n = lucid.get_num_threads()
    try:
        for perm in [(2, 0, 3, 1, 4), (0, 1, 2, 4, 3), (4, 3, 2, 1, 0)]:
            lucid.set_num_threads(1)
            one = x.permute(*perm).numpy()
            lucid.set_num_threads(2)
            np.testing.assert_array_equal(x.permute(*perm).numpy(), one)
            np.testing.assert_array_equal(one, x.numpy().transpose(perm))
    finally:
        lucid.set_num_threads(n)
