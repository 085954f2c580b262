"""The 8- and 16-bit integer dtypes (uint8, int8, int16) against PyTorch:
promotion over every dtype pair and scalar kind, wrap-around arithmetic,
division, bit operations, reductions, casts both ways (negative, NaN and
infinite floats included), indexing, NumPy round trips and checkpoints."""
import io
import itertools
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from conftest import assert_fused_step_matches_eager

SMALL = ["uint8", "int8", "int16"]
ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def L(name):
    return getattr(lucid, name)


def T(name):
    return getattr(torch, name)


def rand_values(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.random(shape) < 0.5
    if name in ("uint8", "int8", "int16", "int32", "int64"):
        info = np.iinfo(name)
        return rng.integers(max(info.min, -30000), min(info.max, 30000) + 1, size=shape).astype(name)
    return (rng.standard_normal(shape) * 50).astype(np.float32)


def pair(name, shape, seed=0):
    v = rand_values(name, shape, seed)
    return torch.tensor(v).to(T(name)), lucid.tensor(v).to(L(name))


def same(lt, tt):
    assert str(lt.dtype).split(".")[1] == str(tt.dtype).split(".")[1], (lt.dtype, tt.dtype)
    assert tuple(lt.shape) == tuple(tt.shape)
    np.testing.assert_array_equal(lt.float().numpy() if lt.dtype == lucid.bfloat16 else lt.numpy(),
                                  tt.float().numpy() if tt.dtype == torch.bfloat16 else tt.numpy())


# ----------------------------------------------------------------- basics
def test_names_aliases_and_properties():
    assert lucid.byte is lucid.uint8 and lucid.char is lucid.int8 and lucid.short is lucid.int16
    for name in SMALL:
        d = L(name)
        assert d.itemsize == T(name).itemsize
        assert not d.is_floating_point
        assert d.is_signed == T(name).is_signed
        assert lucid.zeros(1, dtype=d).is_signed() == torch.zeros(1, dtype=T(name)).is_signed()
        assert (lucid.iinfo(d).min, lucid.iinfo(d).max) == (torch.iinfo(T(name)).min, torch.iinfo(T(name)).max)
        assert str(d) == f"lucid.{name}"
    x = lucid.tensor([1.7, -2.2, 300.0])
    assert x.byte().dtype is lucid.uint8 and x.char().dtype is lucid.int8 and x.short().dtype is lucid.int16
    assert x.to(lucid.uint8).type() == "lucid.ByteTensor"


@pytest.mark.parametrize("name", SMALL)
def test_creation_functions(name):
    same(lucid.zeros(2, 3, dtype=L(name)), torch.zeros(2, 3, dtype=T(name)))
    same(lucid.ones(4, dtype=L(name)), torch.ones(4, dtype=T(name)))
    same(lucid.full((2,), 7, dtype=L(name)), torch.full((2,), 7, dtype=T(name)))
    same(lucid.arange(0, 20, 3, dtype=L(name)), torch.arange(0, 20, 3, dtype=T(name)))
    same(lucid.tensor([[1, 2], [3, 4]], dtype=L(name)), torch.tensor([[1, 2], [3, 4]], dtype=T(name)))
    assert lucid.empty(3, dtype=L(name)).dtype is L(name)
    r = lucid.randint(0, 100, (50,), dtype=L(name))
    assert r.dtype is L(name) and 0 <= int(r.min()) and int(r.max()) < 100
    with pytest.raises(RuntimeError):
        torch.full((2,), 70000, dtype=T(name))
    with pytest.raises(RuntimeError):
        lucid.full((2,), 70000, dtype=L(name))


@pytest.mark.parametrize("name", SMALL)
def test_arange_wraps_and_python_values_are_range_checked(name):
    same(lucid.arange(250, 260, dtype=L(name)), torch.arange(250, 260, dtype=T(name)))
    same(lucid.arange(-3, 3, dtype=L(name)), torch.arange(-3, 3, dtype=T(name)))
    for bad in ([70000], [1.5, -70000.5], [float("nan")]):
        with pytest.raises(RuntimeError):
            torch.tensor(bad, dtype=T(name))
        with pytest.raises(RuntimeError, match="without overflow"):
            lucid.tensor(bad, dtype=L(name))
    wide = np.array([300, -1, 70000])  # an array is cast (wrapping), not checked
    same(lucid.tensor(wide, dtype=L(name)), torch.tensor(wide, dtype=T(name)))
    same(lucid.tensor([1.7, 2.2], dtype=L(name)), torch.tensor([1.7, 2.2], dtype=T(name)))


@pytest.mark.parametrize("name", SMALL)
def test_numpy_round_trip_shares_memory(name):
    a = rand_values(name, (3, 4))
    t = lucid.from_numpy(a)
    assert t.dtype is L(name)
    np.testing.assert_array_equal(t.numpy(), a)
    a[0, 0] = 5
    assert t[0, 0].item() == 5  # shared, as torch.from_numpy
    c = lucid.tensor(a)
    assert c.dtype is L(name) and c.numpy().dtype == a.dtype
    assert c.tolist() == torch.tensor(a).tolist()
    assert isinstance(c[1, 2].item(), int) and c[1, 2].item() == int(a[1, 2])
    assert repr(c).endswith(f"dtype=lucid.{name})")


def test_torch_interop_through_numpy():
    for name in SMALL:
        x = lucid.tensor(rand_values(name, (2, 3)))
        t = torch.as_tensor(np.asarray(x))
        assert t.dtype == T(name)
        same(x, t)
        same(lucid.as_tensor(t.numpy()), t)


def test_printing_matches_torch():
    v = np.array([[0, 255, 7], [128, 1, 30]], dtype=np.uint8)
    assert repr(lucid.tensor(v)).replace("lucid", "torch") == repr(torch.tensor(v))
    v = np.array([-128, 0, 127], dtype=np.int8)
    assert repr(lucid.tensor(v)).replace("lucid", "torch") == repr(torch.tensor(v))


# -------------------------------------------------------------- promotion
@pytest.mark.parametrize("a,b", [(a, b) for a, b in itertools.product(ALL, ALL) if a in SMALL or b in SMALL])
def test_binary_promotion_every_pair(a, b):
    ta, la = pair(a, (3, 4), 1)
    tb, lb = pair(b, (3, 4), 2)
    assert str(lucid.promote_types(L(a), L(b))).split(".")[1] == str(torch.promote_types(T(a), T(b))).split(".")[1]
    for op in ("add", "mul", "maximum", "eq", "lt"):
        tr, lr = getattr(torch, op)(ta, tb), getattr(lucid, op)(la, lb)
        if tr.dtype.is_floating_point:
            assert str(lr.dtype).split(".")[1] == str(tr.dtype).split(".")[1]
            np.testing.assert_allclose(lr.float().numpy(), tr.float().numpy(), rtol=1e-2)
        else:
            same(lr, tr)
    # a 0-d tensor on either side (PyTorch's category rule)
    same_dtype = str((la + lb[0, 0]).dtype).split(".")[1] == str((ta + tb[0, 0]).dtype).split(".")[1]
    assert same_dtype, (a, b)


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("scalar", [3, -1, 300, 2.5, True, -0.5])
def test_scalar_promotion_and_wrap(name, scalar):
    t, x = pair(name, (10,), 3)
    for fn in (lambda v, s: v + s, lambda v, s: s + v, lambda v, s: v * s, lambda v, s: v - s,
               lambda v, s: v > s):
        try:
            expect = fn(t, scalar)
        except RuntimeError:
            continue
        got = fn(x, scalar)
        if expect.dtype.is_floating_point:
            assert str(got.dtype).split(".")[1] == str(expect.dtype).split(".")[1]
            np.testing.assert_allclose(got.numpy(), expect.numpy(), rtol=1e-6)
        else:
            same(got, expect)


def test_wrap_around_arithmetic():
    a = lucid.tensor([200, 255, 0], dtype=lucid.uint8)
    assert (a + 100).tolist() == [44, 99, 100]
    assert (a - 1).tolist() == [199, 254, 255]
    assert (-a).tolist() == torch.neg(torch.tensor([200, 255, 0], dtype=torch.uint8)).tolist()
    b = lucid.tensor([-128, 127, 100], dtype=lucid.int8)
    tb = torch.tensor([-128, 127, 100], dtype=torch.int8)
    same(b.abs(), tb.abs())
    same(-b, -tb)
    same(b * 3, tb * 3)
    c = lucid.tensor([30000, -32768, 200], dtype=lucid.int16)
    tc = torch.tensor([30000, -32768, 200], dtype=torch.int16)
    same(c * c, tc * tc)
    same(c + c, tc + tc)


# ------------------------------------------------------ division, bit ops
@pytest.mark.parametrize("name", SMALL)
def test_division_and_remainder(name):
    ta, la = pair(name, (40,), 4)
    tb, lb = pair(name, (40,), 5)
    tb[tb == 0] = 3
    lb = lucid.tensor(tb.numpy())
    same(lucid.floor_divide(la, lb), torch.floor_divide(ta, tb))
    same(la // lb, ta // tb)
    same(la % lb, ta % tb)
    same(lucid.fmod(la, lb), torch.fmod(ta, tb))
    same(lucid.div(la, lb, rounding_mode="trunc"), torch.div(ta, tb, rounding_mode="trunc"))
    same(lucid.div(la, lb, rounding_mode="floor"), torch.div(ta, tb, rounding_mode="floor"))
    np.testing.assert_allclose((la / lb).numpy(), (ta / tb).numpy(), rtol=1e-6)
    assert (la / lb).dtype is lucid.float32
    if name != "uint8":
        m = torch.tensor([torch.iinfo(T(name)).min], dtype=T(name))
        neg1 = torch.tensor([-1], dtype=T(name))
        lm, ln1 = lucid.tensor(m.numpy()), lucid.tensor(neg1.numpy())
        same(lm // ln1, m // neg1)
        same(lm % ln1, m % neg1)


@pytest.mark.parametrize("name", SMALL)
def test_bitwise_and_shifts(name):
    ta, la = pair(name, (30,), 6)
    tb, lb = pair(name, (30,), 7)
    same(la & lb, ta & tb)
    same(la | lb, ta | tb)
    same(la ^ lb, ta ^ tb)
    same(~la, ~ta)
    shifts = np.arange(-2, 28).astype(name if name != "uint8" else "int64") % 20
    ts, ls = torch.tensor(shifts).to(T(name)), lucid.tensor(shifts).to(L(name))
    same(la << ls, ta << ts)
    same(la >> ls, ta >> ts)
    same(la << 3, ta << 3)
    same(la >> 2, ta >> 2)


@pytest.mark.parametrize("name", SMALL)
def test_pow_sign_clamp_minimum(name):
    ta, la = pair(name, (25,), 8)
    same(la ** 2, ta ** 2)
    e = torch.tensor(np.arange(25) % 5).to(T(name))
    same(la ** lucid.tensor(e.numpy()), ta ** e)
    same(lucid.sign(la), torch.sign(ta))
    same(lucid.clamp(la, 5, 100), torch.clamp(ta, 5, 100))
    same(lucid.clamp(la, max=50), torch.clamp(ta, max=50))
    np.testing.assert_allclose(lucid.clamp(la, 1.5).numpy(), torch.clamp(ta, 1.5).numpy())
    with pytest.raises(RuntimeError):
        torch.clamp(ta, -1, 70000)
    with pytest.raises(RuntimeError):
        lucid.clamp(la, -1, 70000)
    tb, lb = pair(name, (25,), 9)
    same(lucid.minimum(la, lb), torch.minimum(ta, tb))
    same(lucid.where(la > lb, la, lb), torch.where(ta > tb, ta, tb))


def test_float_only_ops():
    x = lucid.tensor([1, 4, 9], dtype=lucid.uint8)
    tx = torch.tensor([1, 4, 9], dtype=torch.uint8)
    for fn in ("sqrt", "exp", "sin"):
        got, want = getattr(lucid, fn)(x), getattr(torch, fn)(tx)
        assert got.dtype is lucid.float32 and want.dtype is torch.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError):
        tx.mean()
    with pytest.raises(RuntimeError):
        x.mean()
    with pytest.raises(RuntimeError):
        tx.var()
    with pytest.raises(RuntimeError):
        x.var()


# ------------------------------------------------------------ reductions
@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_reductions(name, dim):
    ta, la = pair(name, (6, 7), 10)
    kw = {} if dim is None else {"dim": dim}
    same(la.sum(**kw), ta.sum(**kw))
    same(la.prod(**kw), ta.prod(**kw))
    if dim is None:
        same(la.max(), ta.max())
        same(la.min(), ta.min())
        same(la.argmax(), ta.argmax())
        same(la.argmin(), ta.argmin())
    else:
        same(la.amax(dim), ta.amax(dim))
        same(la.amin(dim), ta.amin(dim))
        same(la.argmax(dim), ta.argmax(dim))
        same(lucid.cumsum(la, dim), torch.cumsum(ta, dim))
        v, i = la.max(dim)
        tv, ti = ta.max(dim)
        same(v, tv)
        same(i, ti)
    same(la.sum(dtype=lucid.int16) if dim is None else la.sum(dim, dtype=lucid.int16),
         ta.sum(dtype=torch.int16) if dim is None else ta.sum(dim, dtype=torch.int16))


@pytest.mark.parametrize("name", SMALL)
def test_sort_topk_unique(name):
    ta, la = pair(name, (5, 9), 11)
    v, i = lucid.sort(la, dim=1, stable=True)
    tv, ti = torch.sort(ta, dim=1, stable=True)
    same(v, tv)
    same(i, ti)
    same(lucid.topk(la, 3, dim=1)[0], torch.topk(ta, 3, dim=1)[0])
    same(lucid.argsort(la, dim=0, stable=True), torch.argsort(ta, dim=0, stable=True))


# --------------------------------------------------------------- casts
FLOATS = [-1.5, 300.7, float("nan"), float("inf"), -float("inf"), -200.0, 40000.0, -40000.7, 200.9, -129.5,
          0.0, -0.0, 255.0, 256.0, 2.0 ** 31 + 256, -1e10, 1e10, 127.9, -128.9]


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
def test_float_to_small_integer_casts(name, src):
    v = np.array(FLOATS * 3)
    t = torch.tensor(v, dtype=torch.float64).to(T(src))
    x = lucid.tensor(v, dtype=lucid.float64).to(L(src))
    same(x.to(L(name)), t.to(T(name)))


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("src", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_integer_casts_wrap(name, src):
    v = np.array([0, 1, 5, 127, 128, 200, 255, 256, 300, 32767, 32768, 70000, -1, -128, -129, -32769, 2 ** 40 + 3])
    t = torch.tensor(v).to(T(src))
    x = lucid.tensor(v).to(L(src))
    same(x.to(L(name)), t.to(T(name)))
    same(x.to(L(name)).to(lucid.float32), t.to(T(name)).to(torch.float32))
    same(x.to(L(name)).to(lucid.bool), t.to(T(name)).to(torch.bool))


def test_image_pipeline_float_over_255():
    img = np.random.default_rng(0).integers(0, 256, size=(2, 3, 8, 8)).astype(np.uint8)
    got = lucid.from_numpy(img).float() / 255
    want = torch.from_numpy(img).float() / 255
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    back = (got * 255).round().byte()
    np.testing.assert_array_equal(back.numpy(), img)


# ------------------------------------------------------------- indexing
@pytest.mark.parametrize("name", SMALL)
def test_indexing_with_small_integer_data(name):
    ta, la = pair(name, (6, 5), 12)
    idx = torch.tensor([[0, 2, 1, 4, 3]] * 2)
    lidx = lucid.tensor(idx.numpy())
    same(lucid.gather(la, 0, lidx), torch.gather(ta, 0, idx))
    src_t, src_l = pair(name, (2, 5), 13)
    same(lucid.scatter(la, 0, lidx, src_l), torch.scatter(ta, 0, idx, src_t))
    sel = torch.tensor([4, 0, 0, 2])
    same(lucid.index_select(la, 0, lucid.tensor(sel.numpy())), torch.index_select(ta, 0, sel))
    mask_t = ta > ta.flatten()[3]
    mask_l = lucid.tensor(mask_t.numpy())
    same(la[mask_l], ta[mask_t])
    same(la.masked_fill(mask_l, 9), ta.masked_fill(mask_t, 9))
    same(la[1:4, ::2], ta[1:4, ::2])
    same(la.t()[2], ta.t()[2])
    same(lucid.cat([la, la[:2]]), torch.cat([ta, ta[:2]]))
    same(lucid.stack([la, la], 1), torch.stack([ta, ta], 1))
    lc, tc = la.clone(), ta.clone()
    lc[mask_l] = 3
    tc[mask_t] = 3
    same(lc, tc)


def test_uint8_index_is_a_deprecated_mask():
    ta, la = pair("float32", (4, 3), 14)
    m = np.array([1, 0, 1, 1], dtype=np.uint8)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        want = ta[torch.from_numpy(m)]
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        got = la[lucid.from_numpy(m)]
    same(got, want)
    with pytest.raises(IndexError):
        ta[torch.tensor([0, 1], dtype=torch.int8)]
    with pytest.raises(IndexError):
        la[lucid.tensor([0, 1], dtype=lucid.int8)]


@pytest.mark.parametrize("name", SMALL)
def test_matmul_and_empty(name):
    ta, la = pair(name, (3, 4), 15)
    tb, lb = pair(name, (4, 2), 16)
    same(la @ lb, ta @ tb)
    e = lucid.zeros(0, 3, dtype=L(name))
    same(e.sum(0), torch.zeros(0, 3, dtype=T(name)).sum(0))
    same(e + 1, torch.zeros(0, 3, dtype=T(name)) + 1)


# ----------------------------------------------------------- checkpoints
def test_torch_checkpoint_with_small_integers_loads(tmp_path):
    state = {name: torch.tensor(rand_values(name, (3, 4), k)) for k, name in enumerate(SMALL)}
    state["view"] = state["uint8"][1:, ::2]
    path = tmp_path / "ckpt.pt"
    torch.save(state, path)
    loaded = lucid.load(path)
    for k, v in state.items():
        same(loaded[k], v)


def test_lucid_checkpoint_and_safetensors_round_trip(tmp_path):
    state = {name: lucid.tensor(rand_values(name, (2, 5), k)) for k, name in enumerate(SMALL)}
    buf = io.BytesIO()
    lucid.save(state, buf)
    buf.seek(0)
    back = lucid.load(buf)
    for k, v in state.items():
        assert back[k].dtype is v.dtype
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())
    path = tmp_path / "w.safetensors"
    lucid.save(state, str(path))
    back = lucid.serialization.load_safetensors(str(path))
    for k, v in state.items():
        assert back[k].dtype is v.dtype
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())
    # the file is the standard format: its header names U8/I8/I16
    import json
    raw = path.read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert {header[n]["dtype"] for n in SMALL} == {"U8", "I8", "I16"}
    try:
        from safetensors.torch import load_file
    except ImportError:
        return
    loaded = load_file(str(path))
    for k, v in state.items():
        same(v, loaded[k])


# ------------------------------------------------------------- compile
def test_fused_step_with_uint8_input_equals_eager():
    rng = np.random.default_rng(0)
    xs = rng.integers(0, 256, size=(8, 12)).astype(np.uint8)
    ys = rng.integers(0, 3, size=(8,))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(12, 3)

        def forward(self, x):
            return self.fc(x.float() / 255)

    lucid.manual_seed(0)
    batches = [(lucid.from_numpy(xs), lucid.tensor(ys))] * 3
    assert_fused_step_matches_eager(Net(), nn.CrossEntropyLoss(), lambda ps: lucid.optim.SGD(ps, lr=0.5), batches,
                                    loss_rtol=1e-6, rtol=1e-6, atol=1e-7)
