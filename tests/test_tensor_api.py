"""The Tensor object against PyTorch: metadata, conversions, Python
protocols and repr."""
import copy
import operator

import numpy as np
import pytest
import torch

import lucid
from conftest import LUCID_TO_TORCH, assert_close, check, rnd, to_lucid, to_torch

REPR_CASES = [
    [1.0, 2.0], [[1, 2]], [2.7183, 7.3891, 20.0855], [1e-5, 1.0], [1e10, 1.0], [0.0, 0.0], [float("nan"), 1.0, -float("inf")],
    [True, False], list(range(30)), [[-1.5, 1e3]], 3.5, 7, -0.0, [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
    [0.1, 0.25, 123.456], [1e-3, 2e-3], [[1, -20], [300, 4]], [100000000.0, 1.0],
]


@pytest.mark.parametrize("data", REPR_CASES, ids=[str(i) for i in range(len(REPR_CASES))])
def test_repr_matches_torch(data):
    assert repr(lucid.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "lucid.")
    assert str(lucid.tensor(data)) == str(torch.tensor(data)).replace("torch.", "lucid.")


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "bfloat16", "bool", "int64"])
def test_repr_dtype_suffix(dtype):
    data = [[1.5, -2.0, 0.0], [3.25, 4.0, 5.0]] if dtype not in ("int32", "bool", "int64") else [[1, 0], [2, 3]]
    lt = lucid.tensor(data, dtype=getattr(lucid, dtype))
    tt = torch.tensor(data, dtype=getattr(torch, dtype))
    assert repr(lt) == repr(tt).replace("torch.", "lucid.")


def test_repr_large_and_random():
    rng = np.random.default_rng(0)
    for arr in [np.arange(2000.0, dtype=np.float32), rng.standard_normal((50, 50)).astype(np.float32),
                rng.standard_normal((4, 5, 6)).astype(np.float32), np.arange(3000).reshape(3, 1000),
                (rng.standard_normal(40) * 1e5).astype(np.float32)]:
        assert repr(lucid.tensor(arr)) == repr(torch.tensor(arr))


def test_repr_empty_and_grad_suffixes():
    for shape in [(0,), (2, 0), (0, 3, 1)]:
        assert repr(lucid.zeros(*shape)) == repr(torch.zeros(*shape))
        assert repr(lucid.zeros(*shape, dtype=lucid.int64)) == repr(torch.zeros(*shape, dtype=torch.int64)).replace(
            "torch.", "lucid.")
    assert repr(lucid.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(lucid.tensor([1.0, 2.0], requires_grad=True)) == repr(torch.tensor([1.0, 2.0], requires_grad=True))
    r = repr(lucid.tensor([1.0, 2.0], requires_grad=True) * 2)
    assert r.startswith("tensor([2., 4.], grad_fn=<") and r.endswith(">)")
    assert repr(lucid.tensor(1.5, dtype=lucid.float64, requires_grad=True)) == repr(
        torch.tensor(1.5, dtype=torch.float64, requires_grad=True)).replace("torch.", "lucid.")


def test_format_of_scalars():
    assert f"{lucid.tensor(3.14159):.2f}" == f"{torch.tensor(3.14159):.2f}" == "3.14"
    assert f"{lucid.tensor(7)}" == "7"


# -------------------------------------------------------------- metadata
def test_shape_size_ndim_numel():
    lt, tt = lucid.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert lt.shape == tt.shape == (2, 3, 4)
    assert isinstance(lt.shape, tuple)
    assert lt.size() == tt.size() and lt.size(1) == tt.size(1) == 3 and lt.size(-1) == 4
    assert lt.ndim == lt.dim() == 3
    assert lt.numel() == tt.numel() == 24 and lucid.numel(lt) == 24
    assert len(lt) == 2
    assert lucid.zeros(()).shape == () and lucid.zeros(()).numel() == 1
    with pytest.raises(IndexError):
        lt.size(3)
    with pytest.raises(TypeError):
        len(lucid.tensor(1.0))


def test_dtype_device_properties():
    x = lucid.ones(2, dtype=lucid.float64)
    assert x.dtype == lucid.float64 and x.dtype is lucid.double
    assert str(x.dtype) == "lucid.float64"
    assert x.device == lucid.device("cpu") and x.device.type == "cpu" and x.device == "cpu"
    assert x.is_floating_point() and not lucid.ones(2, dtype=lucid.int32).is_floating_point()
    assert x.element_size() == 8 and lucid.ones(1, dtype=lucid.bfloat16).element_size() == 2
    assert lucid.float32.itemsize == 4 and lucid.float32.is_floating_point
    assert lucid.is_tensor(x) and not lucid.is_tensor(np.zeros(2))
    assert lucid.is_floating_point(x)


@pytest.mark.parametrize("src", ["float32", "float64", "int64", "int32", "bool", "float16", "bfloat16"])
@pytest.mark.parametrize("dst", ["float32", "float64", "int64", "int32", "bool", "float16", "bfloat16"])
def test_to_dtype(src, dst):
    data = np.array([0.0, -1.7, 2.5, 3.0, 250.75, -0.0], dtype=np.float32)
    lt = lucid.tensor(data).to(getattr(lucid, src))
    tt = torch.tensor(data).to(getattr(torch, src))
    assert_close(lt.to(getattr(lucid, dst)), tt.to(getattr(torch, dst)), rtol=0, atol=0)
    assert_close(lt.to(dtype=getattr(lucid, dst)), tt.to(dtype=getattr(torch, dst)), rtol=0, atol=0)


def test_to_variants():
    x = lucid.ones(3)
    assert x.to(lucid.float32) is x  # no copy when nothing changes (torch too)
    assert x.to("cpu") is x
    assert x.to(x) is x
    assert x.to(lucid.ones(1, dtype=lucid.float64)).dtype == lucid.float64
    assert x.to("cpu", lucid.int32).dtype == lucid.int32
    assert x.to(float).dtype == lucid.float32 and x.to(int).dtype == lucid.int64 and x.to(bool).dtype == lucid.bool
    y = x.to(lucid.float32, copy=True)
    assert y is not x and not y._shares_storage(x)
    assert x.float().dtype == lucid.float32 and x.double().dtype == lucid.float64 and x.half().dtype == lucid.float16
    assert x.long().dtype == lucid.int64 and x.int().dtype == lucid.int32 and x.bool().dtype == lucid.bool
    assert x.bfloat16().dtype == lucid.bfloat16 and x.cpu() is x
    assert x.type_as(lucid.ones(1, dtype=lucid.int32)).dtype == lucid.int32


def test_cast_gradient():
    check(lambda m, a: a.to(m.float64) * 2, rnd(3, seed=1))
    check(lambda m, a: a.double().float().half().float(), rnd(3, seed=1), grad_rtol=1e-3)


def test_clone_detach_contiguous():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert not c._shares_storage(x) and c.requires_grad and c.grad_fn is not None
    (c * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 3])
    d = x.detach()
    assert d._shares_storage(x) and not d.requires_grad
    y = lucid.ones(2, 3).T
    assert not y.is_contiguous() and y.stride() == torch.ones(2, 3).T.stride()
    c = y.contiguous()
    assert c.is_contiguous() and not c._shares_storage(y) and c.contiguous() is c
    z = lucid.clone(y)
    assert_close(z, torch.ones(2, 3).T)
    assert lucid.Tensor(y)._shares_storage(y)


def test_deepcopy_and_pickle():
    import pickle

    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    x.grad = lucid.tensor([0.5, 0.5])
    y = copy.deepcopy(x)
    assert not y._shares_storage(x) and y.requires_grad and y.is_leaf
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.5])
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]
    with pytest.raises(RuntimeError, match="leaves"):
        copy.deepcopy(x * 2)
    for dt in ["float32", "float64", "int64", "int32", "bool", "float16", "bfloat16"]:
        t = lucid.tensor([[1.5, -2.0]]).to(getattr(lucid, dt))
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype == t.dtype and u.shape == t.shape
        np.testing.assert_array_equal(u.float().numpy(), t.float().numpy())
    assert pickle.loads(pickle.dumps(x)).requires_grad
    assert pickle.loads(pickle.dumps(x)).device == x.device  # the device travels with the pickle


def test_a_pickled_module_keeps_its_parameters_parameters():
    import pickle

    m = lucid.nn.Linear(2, 3)
    m.bias.requires_grad_(False)
    u = pickle.loads(pickle.dumps(m))
    assert type(u.weight) is lucid.nn.Parameter and type(u.bias) is lucid.nn.Parameter  # as PyTorch's pickles
    assert u.weight.requires_grad and not u.bias.requires_grad
    assert [n for n, _ in u.named_parameters()] == ["weight", "bias"]
    np.testing.assert_array_equal(u.weight.detach().numpy(), m.weight.detach().numpy())
    assert not u.weight._shares_storage(m.weight)


# ------------------------------------------------------------- conversions
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "float16", "bfloat16"])
def test_item_tolist(dtype):
    data = [[1.5, 0.0], [-2.25, 3.0]] if dtype not in ("int64", "int32", "bool") else [[1, 0], [-2, 3]]
    lt = lucid.tensor(data).to(getattr(lucid, dtype))
    tt = torch.tensor(data).to(getattr(torch, dtype))
    assert lt.tolist() == tt.tolist()
    assert type(lt.tolist()[0][0]) is type(tt.tolist()[0][0])
    assert lt[1, 0].item() == tt[1, 0].item() and type(lt[1, 0].item()) is type(tt[1, 0].item())
    assert lucid.tensor(5).tolist() == 5


def test_item_errors():
    for m in (lucid, torch):
        with pytest.raises(RuntimeError, match="2 elements"):
            m.ones(2).item()
    assert lucid.ones(1, 1).item() == 1.0


def test_python_number_protocols():
    for m in (lucid, torch):
        t = m.tensor(2.7)
        assert float(t) == pytest.approx(2.7) and int(t) == 2
        assert bool(m.tensor([1])) is True and bool(m.tensor(0.0)) is False
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(m.ones(2))
        assert operator.index(m.tensor(3)) == 3
        assert [10, 20, 30, 40][m.tensor(2)] == 30
        with pytest.raises(TypeError):
            operator.index(m.tensor(3.0))
    assert hash(lucid.ones(1)) != hash(lucid.ones(1))  # identity hash: tensors work as dict keys


def test_iteration_and_unbind():
    x = rnd(3, 2, seed=1)
    rows = list(lucid.tensor(x))
    assert len(rows) == 3
    for r, e in zip(rows, torch.tensor(x)):
        assert_close(r, e)
    with pytest.raises(TypeError):
        iter(lucid.tensor(1.0))


def test_array_protocol():
    x = lucid.tensor([[1.0, 2.0]])
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.shape == (1, 2)
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.float32(2.0) * x is not None and isinstance(np.float32(2.0) * x, lucid.Tensor)
    assert isinstance(np.float64(1.0) + x, lucid.Tensor)


def test_new_factories():
    x = lucid.ones(2, dtype=lucid.float64)
    t = torch.ones(2, dtype=torch.float64)
    assert_close(x.new_zeros(3, 1), t.new_zeros(3, 1))
    assert_close(x.new_ones((2,)), t.new_ones((2,)))
    assert_close(x.new_full((2, 2), 7), t.new_full((2, 2), 7))
    assert_close(x.new_tensor([1, 2]), t.new_tensor([1, 2]))
    assert x.new_empty(4).shape == (4,) and x.new_empty(4).dtype == lucid.float64


def test_conftest_round_trips():
    for dt in ["float32", "float64", "int64", "int32", "bool", "float16", "bfloat16"]:
        t = torch.tensor([[1.5, -2.0], [0.0, 3.0]]).to(getattr(torch, dt))
        assert_close(to_lucid(t), t, rtol=0, atol=0)
        assert torch.equal(to_torch(to_lucid(t)), t)


def test_assert_close_detects_mismatches():
    """The oracle comparison itself fails on wrong shape, dtype or values."""
    with pytest.raises(AssertionError, match="shape"):
        assert_close(lucid.ones(2, 1), torch.ones(2))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(lucid.ones(2, dtype=lucid.float64), torch.ones(2))
    with pytest.raises(AssertionError):
        assert_close(lucid.tensor([1.0, 2.0]), torch.tensor([1.0, 2.001]))
    with pytest.raises(AssertionError):
        assert_close(lucid.tensor([1, 2]), torch.tensor([1, 3]))
    with pytest.raises(AssertionError, match="grad"):
        check(lambda m, a: a * 2 if m is torch else a * 2 + (a * 0.01 - (a * 0.01).detach()), rnd(3))


SURFACE = """add sub mul div floor_divide remainder pow neg abs exp log log1p expm1 sqrt rsqrt sin cos tanh sigmoid
relu erf clamp clamp_ where maximum minimum eq ne lt le gt ge logical_and logical_or logical_xor logical_not
isfinite isnan isinf sum mean var std max min argmax argmin prod logsumexp all any norm matmul reshape view flatten
squeeze unsqueeze permute transpose expand broadcast_to cat stack split chunk index_select gather scatter
scatter_add masked_fill tril triu softmax log_softmax add_ mul_ zero_ fill_ copy_ zeros ones full empty arange
linspace eye randn rand randint zeros_like ones_like full_like empty_like rand_like randn_like manual_seed
from_numpy tensor no_grad enable_grad set_grad_enabled is_grad_enabled numpy item tolist size numel dim to clone
detach detach_ contiguous requires_grad_ retain_grad backward float double half bfloat16 long int bool
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ __rfloordiv__ __mod__
__rmod__ __pow__ __rpow__ __matmul__ __neg__ __abs__ __invert__ __and__ __or__ __xor__ __eq__ __ne__ __lt__
__le__ __gt__ __ge__ __getitem__ __setitem__ __iadd__ __isub__ __imul__ __itruediv__ __len__ __iter__
__bool__ __float__ __int__ __index__ __repr__""".split()


@pytest.mark.parametrize("name", SURFACE)
def test_surface_exists_with_torch_names(name):
    """Wherever torch has the name (as a function or a Tensor method), lucid has it too."""
    assert hasattr(torch, name) or hasattr(torch.Tensor, name), name
    if hasattr(torch, name):
        assert hasattr(lucid, name), f"lucid.{name} is missing"
    if hasattr(torch.Tensor, name):
        assert hasattr(lucid.Tensor, name), f"lucid.Tensor.{name} is missing"
    for attr in ("T", "mT", "shape", "ndim", "dtype", "device", "grad", "grad_fn", "is_leaf", "requires_grad"):
        assert hasattr(lucid.ones(2, 2), attr)


@pytest.mark.parametrize("name", ["gelu", "silu", "softplus", "relu", "softmax", "log_softmax", "one_hot"])
def test_nn_functional_names(name):
    lf = pytest.importorskip("lucid.nn.functional")
    assert hasattr(lf, name)


def test_copy_from_a_number_and_nan_to_num_with_none():
    for m in (torch, lucid):
        x = m.zeros(3)
        x.copy_(2.5)
        assert x.tolist() == [2.5, 2.5, 2.5]
        y = m.zeros(2, dtype=m.int64)
        y.copy_(True)
        assert y.tolist() == [1, 1]
        z = m.tensor([float("nan"), 1.0, float("inf")])
        assert z.nan_to_num(None).tolist()[:2] == [0.0, 1.0]


def test_shape_is_a_size_as_torch():
    """shape/size() are lucid.Size (torch.Size): a tuple whose slices, sums
    and products keep the type, with numel(), PyTorch's repr shape and
    pickling; the constructor takes any iterable of integers."""
    import pickle
    for m in (torch, lucid):
        s = m.randn(2, 3).shape
        assert isinstance(s, m.Size) and isinstance(s, tuple) and s == (2, 3) and hash(s) == hash((2, 3))
        assert type(m.randn(2, 3).size()) is m.Size and m.randn(2, 3).size(-1) == 3
        for derived in (s[1:], s + (4,), (4,) + s, s * 2, 2 * s, pickle.loads(pickle.dumps(s)), m.Size(m.tensor([2, 3]))):
            assert type(derived) is m.Size, derived
        assert type(s[0]) is int and s.numel() == 6 and m.Size().numel() == 1
        assert repr(s).split(".", 1)[1] == "Size([2, 3])"
        with pytest.raises(TypeError, match="item 0 is 'float'"):
            m.Size([2.5])
        with pytest.raises(TypeError):
            s + [4]


def test_legacy_tensor_constructor_as_torch():
    """lucid.Tensor(...) as torch.Tensor(...): sizes (the values are
    uninitialised in PyTorch, so only shape and dtype are compared), data
    in the default dtype, a Size, nothing; nn.Parameter(torch.Tensor(o, i))
    is the custom-layer idiom it serves."""
    for args in [(2, 3), (0,), (4,)]:
        t, l = torch.Tensor(*args), lucid.Tensor(*args)
        assert tuple(l.shape) == tuple(t.shape) and l.dtype == lucid.float32
    for data in ([1, 2], (2, 3), [[1.5, 2], [3, 4]], np.arange(3)):
        np.testing.assert_array_equal(lucid.Tensor(data).numpy(), torch.Tensor(data).numpy())
        assert lucid.Tensor(data).dtype == lucid.float32
    assert lucid.Tensor(lucid.Size([2, 3])).shape == (2, 3) and lucid.Tensor().shape == (0,)
    p = lucid.nn.Parameter(lucid.Tensor(3, 4))
    assert isinstance(p, lucid.nn.Parameter) and p.requires_grad and p.shape == (3, 4)
    with pytest.raises(TypeError, match="expected sizes"):
        lucid.Tensor(2, "a")
    previous = lucid.get_default_dtype()
    lucid.set_default_dtype(lucid.float64)
    try:
        assert lucid.Tensor(2).dtype == lucid.float64 and lucid.FloatTensor(2).dtype == lucid.float32
    finally:
        lucid.set_default_dtype(previous)


def test_cauchy_and_geometric_fills():
    lucid.manual_seed(0)
    c = lucid.empty(200_000, dtype=lucid.float64).cauchy_(median=1.0, sigma=2.0).numpy()
    # Quartiles of Cauchy(1, 2) are 1 -+ 2.
    np.testing.assert_allclose(np.percentile(c, [25, 50, 75]), [-1.0, 1.0, 3.0], atol=0.05)
    g = lucid.empty(200_000, dtype=lucid.int64).geometric_(0.25).numpy()
    assert g.min() == 1 and np.all(g == np.round(g))
    np.testing.assert_allclose([g.mean(), g.var()], [4.0, 0.75 / 0.25 ** 2], rtol=0.03)
    for m in (torch, lucid):
        with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0, but found sigma=0"):
            m.empty(2).cauchy_(0, 0)
        with pytest.raises(RuntimeError, match="Cauchy distribution is a continuous probability distribution. "
                                               "dtype must be a floating point but you specified long int"):
            m.empty(2, dtype=m.int64).cauchy_()
        for p in (0, 1, 1.5):
            with pytest.raises(RuntimeError, match=f"geometric_ expects p to be in \\(0, 1\\), but got p={p}"):
                m.empty(2).geometric_(p)
