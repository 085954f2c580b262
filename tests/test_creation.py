"""Creation against PyTorch: lucid.tensor dtype inference, factories,
random numbers (reproducibility and distribution), NumPy interop."""
import numpy as np
import pytest
import torch

import lucid
from conftest import LUCID_TO_TORCH, assert_close, to_torch

DATA = [
    1, 2.5, True, -3, [1, 2, 3], [1.0, 2, 3], [True, False], [[1, 2], [3, 4]], [[1.5], [2.5]], [], [[]],
    [True, 1], [1, 2.0, True], (1, 2), [(1, 2), (3, 4)], 1e20, 2 ** 40,
]


@pytest.mark.parametrize("data", DATA, ids=[repr(d) for d in DATA])
def test_tensor_dtype_inference(data):
    assert_close(lucid.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("np_dtype", ["float16", "float32", "float64", "int32", "int64", "bool", "uint8", "int16",
                                      "int8"])
def test_tensor_from_numpy_arrays(np_dtype):
    a = (np.arange(6).reshape(2, 3) % 3).astype(np_dtype)
    t = torch.tensor(a)
    lt = lucid.tensor(a)
    assert_close(lt, t)
    # a copy: writes to the array do not show
    a.flat[0] = 1
    assert lt.numpy().flat[0] == 0


def test_tensor_numpy_scalars_and_0d():
    for v in [np.float32(1.5), np.float64(2.5), np.int32(3), np.int64(4), np.bool_(True), np.array(7.0),
              np.array(3, dtype=np.int32)]:
        assert_close(lucid.tensor(v), torch.tensor(v))
    assert_close(lucid.tensor([np.float32(1), np.float32(2)]), torch.tensor([np.float32(1), np.float32(2)]))


def test_tensor_dtype_device_requires_grad_args():
    t = lucid.tensor([1, 2], dtype=lucid.float64)
    assert t.dtype == lucid.float64
    t = lucid.tensor([1.5, 2.5], dtype=lucid.int32)
    assert_close(t, torch.tensor([1.5, 2.5], dtype=torch.int32))
    t = lucid.tensor([1.0], dtype=lucid.bfloat16)
    assert t.dtype == lucid.bfloat16
    t = lucid.tensor([1.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    t = lucid.tensor([1.0], device="cpu")
    assert t.device == lucid.device("cpu") and str(t.device) == "cpu"
    t = lucid.tensor([1, 2], dtype="float32")
    assert t.dtype == lucid.float32
    t = lucid.tensor([1, 2], dtype=float)
    assert t.dtype == lucid.float32


def test_tensor_from_tensors():
    a = lucid.tensor([1.0, 2.0], requires_grad=True)
    b = lucid.tensor(a)  # a copy without history (torch warns and does the same)
    assert not b.requires_grad and not b._shares_storage(a)
    assert_close(lucid.tensor([lucid.tensor(1.0), lucid.tensor(2.0)]), torch.tensor([1.0, 2.0]))


def test_tensor_errors():
    with pytest.raises((TypeError, ValueError)):
        lucid.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        lucid.tensor("abc")
    with pytest.raises(TypeError):
        lucid.tensor([1, None])


def test_default_dtype():
    assert lucid.get_default_dtype() == lucid.float32
    lucid.set_default_dtype(lucid.float64)
    try:
        assert lucid.tensor([1.5]).dtype == lucid.float64
        assert lucid.zeros(2).dtype == lucid.float64
        assert (lucid.tensor([1, 2]) / 2).dtype == lucid.float64
    finally:
        lucid.set_default_dtype(lucid.float32)
    with pytest.raises(TypeError):
        lucid.set_default_dtype(lucid.int64)


# ------------------------------------------------------------------ factories
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([4],), ((),), (0,), (1, 0, 2)])
def test_zeros_ones_empty(name, size):
    lt, tt = getattr(lucid, name)(*size), getattr(torch, name)(*size)
    assert tuple(lt.shape) == tuple(tt.shape) and LUCID_TO_TORCH[lt.dtype] == tt.dtype
    if name != "empty":
        assert_close(lt, tt)
    for dt in ["int64", "bool", "float64", "float16", "int32"]:
        lt = getattr(lucid, name)(*size, dtype=getattr(lucid, dt))
        tt = getattr(torch, name)(*size, dtype=getattr(torch, dt))
        assert LUCID_TO_TORCH[lt.dtype] == tt.dtype
        if name != "empty":
            assert_close(lt, tt)


@pytest.mark.parametrize("value", [1.5, 2, True, -0.0, float("inf")])
def test_full(value):
    assert_close(lucid.full((2, 3), value), torch.full((2, 3), value))
    assert_close(lucid.full([2], value, dtype=lucid.float64), torch.full([2], value, dtype=torch.float64))
    assert_close(lucid.full((), value), torch.full((), value))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"])
def test_like(name):
    src = lucid.ones(2, 3, dtype=lucid.float64)
    args = (src, 4.0) if name == "full_like" else (src,)
    out = getattr(lucid, name)(*args)
    assert tuple(out.shape) == (2, 3) and out.dtype == lucid.float64 and not out.requires_grad
    out = getattr(lucid, name)(*args, dtype=lucid.float32)
    assert out.dtype == lucid.float32
    if name in ("zeros_like", "ones_like", "full_like"):
        tsrc = torch.ones(2, 3, dtype=torch.float64)
        targs = (tsrc, 4.0) if name == "full_like" else (tsrc,)
        assert_close(getattr(lucid, name)(*args), getattr(torch, name)(*targs))
        ints = lucid.ones(3, dtype=lucid.int64)
        assert_close(getattr(lucid, name)(*((ints, 7) if name == "full_like" else (ints,))),
                     getattr(torch, name)(*((torch.ones(3, dtype=torch.int64), 7) if name == "full_like"
                                            else (torch.ones(3, dtype=torch.int64),))))
    assert getattr(lucid, name)(*args, requires_grad=True).requires_grad if name not in ("rand_like", "randn_like") \
        else True


ARANGE = [(5,), (2, 7), (0, 1, 0.1), (1, 2.5, 0.5), (10, 0, -3), (0.5,), (-2, 3), (0, 0), (1, 1.0001, 0.1),
          (0, 10, 3), (-1.5, 1.5, 0.75)]


@pytest.mark.parametrize("args", ARANGE, ids=[repr(a) for a in ARANGE])
def test_arange(args):
    assert_close(lucid.arange(*args), torch.arange(*args))
    assert_close(lucid.arange(*args, dtype=lucid.float64), torch.arange(*args, dtype=torch.float64))


def test_arange_errors():
    for m in (lucid, torch):
        with pytest.raises(RuntimeError):
            m.arange(0, 5, 0)
        with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
            m.arange(5, 0, 1)
        with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
            m.arange(1, 0.9999, 0.1)


@pytest.mark.parametrize("args", [(0, 1, 5), (-2, 3, 1), (1, 1, 3), (0, 1, 0), (3, -3, 7), (0, 1, 2), (0, 10, 11)])
def test_linspace(args):
    assert_close(lucid.linspace(*args), torch.linspace(*args))
    assert_close(lucid.linspace(*args, dtype=lucid.float64), torch.linspace(*args, dtype=torch.float64))


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (1, 1)])
def test_eye(args):
    assert_close(lucid.eye(*args), torch.eye(*args))
    assert_close(lucid.eye(*args, dtype=lucid.int64), torch.eye(*args, dtype=torch.int64))
    assert_close(lucid.eye(*args, dtype=lucid.bool), torch.eye(*args, dtype=torch.bool))


def test_factory_errors():
    for m in (lucid, torch):
        with pytest.raises(RuntimeError, match="negative"):
            m.zeros(2, -1)
        with pytest.raises(RuntimeError):
            m.eye(-1)
    with pytest.raises(TypeError):
        lucid.zeros(2.5)
    with pytest.raises(TypeError):
        torch.zeros(2.5)


# ------------------------------------------------------------------ random
@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_manual_seed_reproducibility(fn):
    lucid.manual_seed(123)
    a = getattr(lucid, fn)(4, 5)
    b = getattr(lucid, fn)(4, 5)
    lucid.manual_seed(123)
    c = getattr(lucid, fn)(4, 5)
    d = getattr(lucid, fn)(4, 5)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    np.testing.assert_array_equal(b.numpy(), d.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())
    lucid.manual_seed(124)
    assert not np.array_equal(getattr(lucid, fn)(4, 5).numpy(), a.numpy())
    assert lucid.initial_seed() == 124


def test_randint_reproducible():
    lucid.manual_seed(5)
    a = lucid.randint(0, 10, (100,))
    lucid.manual_seed(5)
    b = lucid.randint(0, 10, (100,))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_random_distributions():
    lucid.manual_seed(0)
    n = lucid.randn(200000).numpy().astype(np.float64)
    # mean within ~5 standard errors, std within 1%
    assert abs(n.mean()) < 5 / np.sqrt(n.size)
    assert abs(n.std() - 1) < 0.01
    assert abs(np.mean(np.abs(n) < 1) - 0.6827) < 0.01
    u = lucid.rand(200000).numpy().astype(np.float64)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / u.size)
    assert abs(u.var() - 1 / 12) < 0.002
    assert np.histogram(u, bins=10, range=(0, 1))[0].min() > 0.09 * u.size
    r = lucid.randint(-3, 4, (100000,)).numpy()
    assert r.dtype == np.int64 and r.min() == -3 and r.max() == 3
    assert np.all(np.abs(np.bincount(r + 3) / r.size - 1 / 7) < 0.01)
    assert lucid.randint(5, (3, 2)).shape == (3, 2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_random_dtypes(dtype):
    x = lucid.randn(100, dtype=getattr(lucid, dtype))
    assert x.dtype == getattr(lucid, dtype)
    assert np.isfinite(x.float().numpy()).all()
    u = lucid.rand(100, dtype=getattr(lucid, dtype)).float().numpy()
    assert u.min() >= 0 and u.max() <= 1


def test_random_requires_grad_and_inplace_inits():
    x = lucid.randn(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    y = lucid.empty(1000)
    with lucid.no_grad():
        y.uniform_(-2, 3)
    v = y.numpy()
    assert v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.2
    y.normal_(1.0, 0.5)
    v = y.numpy()
    assert abs(v.mean() - 1.0) < 0.1 and abs(v.std() - 0.5) < 0.1


# ---------------------------------------------------------------- NumPy interop
def test_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = lucid.from_numpy(a)
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    t.add_(1)
    assert a[0, 0] == 101
    assert t.dtype == lucid.float32 and tuple(t.shape) == (2, 3)
    for dt in ["float64", "int32", "int64", "bool", "float16"]:
        arr = np.zeros(3, dtype=dt)
        assert lucid.from_numpy(arr).dtype == getattr(lucid, dt)


def test_from_numpy_keeps_array_alive():
    t = lucid.from_numpy(np.arange(4.0))
    import gc

    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(4.0))


def test_from_numpy_errors():
    with pytest.raises(TypeError):
        lucid.from_numpy([1, 2])
    with pytest.raises(TypeError):
        lucid.from_numpy(np.zeros(2, dtype=np.complex64))


def test_numpy_shares_memory_and_checks_grad():
    t = lucid.zeros(3)
    a = t.numpy()
    a[1] = 5
    assert t[1].item() == 5
    t.fill_(2.0)
    assert a[0] == 2
    with pytest.raises(RuntimeError, match="requires grad"):
        lucid.ones(2, requires_grad=True).numpy()
    np.testing.assert_array_equal(lucid.ones(2, requires_grad=True).detach().numpy(), [1, 1])
    with pytest.raises(TypeError):
        lucid.ones(2, dtype=lucid.bfloat16).numpy()
    assert np.asarray(lucid.ones(2)).dtype == np.float32


def test_non_contiguous_numpy_input_is_copied():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    assert_close(lucid.from_numpy(a), torch.from_numpy(np.ascontiguousarray(a)))
    assert_close(lucid.tensor(a.T), torch.tensor(a.T))
    b = np.arange(4, dtype=">f4")
    assert_close(lucid.tensor(b), torch.tensor(b.astype("<f4")))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword_as_torch(name):
    import torch

    for kwargs in (dict(size=(2, 3)), dict(size=[4]), dict(size=())):
        assert tuple(getattr(lucid, name)(**kwargs).shape) == tuple(getattr(torch, name)(**kwargs).shape)
    assert getattr(lucid, name)(size=(2, 3), dtype=lucid.float64).dtype == lucid.float64
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        getattr(lucid, name)(2, size=(3,))


def test_rng_state_restores_the_draws_that_followed_it_as_torch():
    for lib in (torch, lucid):
        lib.manual_seed(7)
        lib.rand(3)
        state = lib.get_rng_state()
        first = [lib.randn(4, 5), lib.rand(2), lib.nn.functional.dropout(lib.ones(50), 0.5), lib.randint(0, 9, (6,))]
        lib.rand(11)  # the stream moves on ...
        lib.set_rng_state(state)  # ... and is put back
        again = [lib.randn(4, 5), lib.rand(2), lib.nn.functional.dropout(lib.ones(50), 0.5), lib.randint(0, 9, (6,))]
        for a, b in zip(first, again):
            assert np.array_equal(a.numpy(), b.numpy())
    lucid.manual_seed(2 ** 64 - 5)  # seeds past int64 survive the int64 state
    state = lucid.get_rng_state()
    x = lucid.rand(3)
    lucid.set_rng_state(state)
    assert np.array_equal(x.numpy(), lucid.rand(3).numpy())
    assert lucid.initial_seed() == 2 ** 64 - 5


def test_set_rng_state_rejects_other_states_and_changes_nothing():
    lucid.manual_seed(1)
    before = lucid.get_rng_state().tolist()
    with pytest.raises(ValueError, match="PyTorch generator state"):
        lucid.set_rng_state(lucid.tensor(torch.get_rng_state().numpy().astype(np.int64)))
    with pytest.raises(TypeError, match="expected a Tensor"):
        lucid.set_rng_state([1, 2])
    assert lucid.get_rng_state().tolist() == before


def test_random_module_and_fork_rng_as_torch():
    for lib in (torch, lucid):
        lib.random.manual_seed(5)
        assert lib.random.initial_seed() == 5
        a = lib.rand(3)
        with lib.random.fork_rng():
            lib.random.manual_seed(123)
            lib.rand(10)
        b = lib.rand(3)
        lib.random.manual_seed(5)
        assert np.array_equal(a.numpy(), lib.rand(3).numpy()) and np.array_equal(b.numpy(), lib.rand(3).numpy())
        with lib.random.fork_rng(enabled=False):
            lib.rand(2)  # not restored
        c = lib.rand(1)
        lib.random.manual_seed(5)
        lib.rand(3), lib.rand(3), lib.rand(2)
        assert np.array_equal(c.numpy(), lib.rand(1).numpy())
    assert lucid.random.get_rng_state is lucid.get_rng_state and isinstance(lucid.random.Generator(), lucid.Generator)


# Cases the semantics probe (python -m tests.fuzz.semantics) found differing
# from PyTorch; each source runs with T = torch and T = lucid.
CONSTRUCTION_CASES = [
    # the dtype of a list: every element's own type, promoted (promote_types)
    "result = T.tensor([1, T.tensor(2), np.float32(1.5)])",
    "result = T.tensor([[np.int64(3), 3], [False, np.float32(1.5)]])",
    "result = T.tensor([T.tensor(0.0, dtype=T.float16), T.tensor(4.0, dtype=T.float64)])",
    "result = T.tensor([T.tensor(108, dtype=T.int16), T.tensor(True)])",
    "result = T.tensor([T.tensor(0, dtype=T.uint8), T.tensor(True)])",
    "result = T.tensor([T.tensor(-188, dtype=T.int16), T.tensor(2.5, dtype=T.bfloat16)])",
    "result = T.tensor([T.tensor(1, dtype=T.int16), 5])",
    "result = T.tensor([np.uint8(1), np.int8(2)])",
    "result = T.tensor([np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)])",
    "result = T.tensor([T.tensor([1]), T.tensor([2])])",
    # tensors of several elements inside a list, Python ints beyond int64
    "result = T.tensor([T.tensor([-2, 34], dtype=T.int8), T.tensor([0, 223], dtype=T.uint8)])",
    "result = T.tensor([T.tensor(-0.5, dtype=T.float64), T.tensor([-2.0, -1.0], dtype=T.bfloat16)])",
    "result = T.tensor(2**63)",
    "result = T.tensor([1, 2**63])",
    "result = T.tensor(2**63, dtype=T.int8)",
    "result = T.tensor(2**63, dtype=T.float32)",
    # an explicit integer dtype: Python ints in range (an unsigned one wraps down to -max), floats in range
    "result = T.tensor([2.5, -2], dtype=T.uint8)",
    "result = T.tensor([-255, 255], dtype=T.uint8)",
    "result = T.tensor([-256], dtype=T.uint8)",
    "result = T.tensor([-0.5], dtype=T.uint8)",
    "result = T.tensor([127.9, -128.5], dtype=T.int8)",
    "result = T.tensor(['abc'])",
]


@pytest.mark.parametrize("src", CONSTRUCTION_CASES)
def test_construction_matches_torch(src):
    from tests.fuzz.semantics import check as difference_from_torch

    assert difference_from_torch(src) is None, difference_from_torch(src)


def test_tensor_of_any_sequence_like_torch():
    """PyTorch reads any sequence (a deque, a range, an array.array, a class
    with __len__ and __getitem__), nested too, as it reads a list; a set is
    refused (REINFORCE-style code passes a deque of returns)."""
    import array
    import collections

    class Pair:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            if i >= 2:
                raise IndexError(i)
            return float(i) + 0.5

    for make in (lambda m: m.tensor(collections.deque([1.0, 2.0])), lambda m: m.tensor(range(3)),
                 lambda m: m.tensor([collections.deque([1, 2]), (3, 4)]), lambda m: m.tensor(Pair()),
                 lambda m: m.tensor(array.array("f", [1, 2])), lambda m: m.tensor((range(2), [True, False]))):
        got, want = make(lucid), make(torch)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises((TypeError, RuntimeError)):
        torch.tensor({1, 2})
    with pytest.raises(TypeError):
        lucid.tensor({1, 2})


@pytest.mark.parametrize("data", [[1, 2], [1.0, 2], [True, 2], [True, False], [True, 1.5], [[1, 2], [3, 4]],
                                  [(1, 2.5)], [2**62], [1e300, -1e300], [0.1, 1e-50], [[]], [], [[1], [2.5]],
                                  [[[True]], [[0.5]]]],
                         ids=repr)
def test_tensor_of_python_numbers_like_torch(data):
    """Nested lists of Python numbers (converted by NumPy in one call): the
    dtype PyTorch infers (default float, int64 or bool by the kinds present),
    the shape and the values (a float beyond float32's range is inf)."""
    got, want = lucid.tensor(data), torch.tensor(data)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert list(got.shape) == list(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_linspace_is_torchs_to_the_bit(dtype):
    """PyTorch's kernel computes each value as one fused multiply-add in the
    dtype's arithmetic (integers: in double, from ends cast first)."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        a, b = rng.uniform(-100, 100, 2).round(int(rng.integers(0, 4)))
        n = int(rng.integers(0, 200))
        want = torch.linspace(float(a), float(b), n, dtype=getattr(torch, dtype)).numpy()
        got = lucid.linspace(float(a), float(b), n, dtype=getattr(lucid, dtype)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"linspace({a}, {b}, {n})")


@pytest.mark.parametrize("src,dst", [("int16", "int32"), ("int16", "int8"), ("float32", "int32"), ("float32", "float16"),
                                     ("float64", "uint8"), ("bool", "uint8"), ("uint8", "bool"), ("int16", "int64")])
@pytest.mark.parametrize("layout", ["contiguous", "sliced", "strided rows", "transposed", "0-d", "empty"])
def test_view_dtype_matches_torch(src, dst, layout):
    """view(dtype): the same memory read as another dtype, with PyTorch's
    shapes, strides, offsets, errors, and writes reaching the base."""
    base = np.arange(24).reshape(4, 6) % (2 if dst == "bool" else 7)  # (a bool byte other than 0/1 is undefined)
    make = {"contiguous": lambda t: t, "sliced": lambda t: t[:, 2:6], "strided rows": lambda t: t[::2],
            "transposed": lambda t: t.t(), "0-d": lambda t: t[1, 1], "empty": lambda t: t[:0]}[layout]
    outs = []
    for T in (torch, lucid):
        x = make(T.tensor(base).to(getattr(T, src)))
        try:
            y = x.view(getattr(T, dst))
        except RuntimeError as e:
            outs.append(("raised", str(e)))
            continue
        outs.append((tuple(y.shape), tuple(y.stride()), y.storage_offset(), y.requires_grad,
                     y.to(T.float64).numpy().tolist()))
    assert outs[1] == outs[0]
    x = lucid.zeros(2, 4)
    x.view(lucid.int32)[0, 0] = 1065353216  # the bits of 1.0
    assert x[0, 0].item() == 1.0
