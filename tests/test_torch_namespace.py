"""torch's top-level names that Lucid mirrors: the neural-network functions
with their top-level signatures (torch.conv2d, torch.batch_norm,
torch.dropout(input, p, train), int reductions...), window functions and
more of the namespace; forward and gradients against PyTorch."""
import numpy as np
import pytest
import torch

import lucid
from conftest import assert_close


def _pair(arr, requires_grad=False):
    arr = np.asarray(arr)
    return lucid.tensor(arr, requires_grad=requires_grad), torch.tensor(arr, requires_grad=requires_grad)


def _same(name, arrays, *args, grad=True, tol=1e-10, **kwargs):
    """lucid.<name> and torch.<name> on the same float64 arrays (and other args): outputs and gradients."""
    # an array given as (array, False) takes no gradient (targets, weights PyTorch does not differentiate)
    arrays = [a if isinstance(a, tuple) else (a, True) for a in arrays]
    pairs = [_pair(a, grad and wants and a.dtype.kind == "f") for a, wants in arrays]
    out_l = getattr(lucid, name)(*[p[0] for p in pairs], *args, **kwargs)
    out_t = getattr(torch, name)(*[p[1] for p in pairs], *args, **kwargs)
    first_l = out_l[0] if isinstance(out_l, tuple) else out_l
    first_t = out_t[0] if isinstance(out_t, tuple) else out_t
    assert_close(out_l, out_t, rtol=tol, atol=tol)
    if grad and first_t.requires_grad:
        g = np.random.default_rng(0).standard_normal(tuple(first_t.shape))
        first_t.backward(torch.from_numpy(g))
        first_l.backward(lucid.tensor(g))
        for (pl, pt) in pairs:
            if pt.requires_grad:
                assert_close(pl.grad, pt.grad, rtol=tol, atol=tol)


R = np.random.default_rng(1)


def r(*shape):
    return R.standard_normal(shape)


NN_CASES = [
    ("conv1d", [r(2, 4, 9), r(6, 2, 3), r(6)], (2, 1, 1, 2), {}),
    ("conv2d", [r(2, 3, 7, 6), r(4, 3, 3, 2)], (), dict(padding=1, stride=(2, 1))),
    ("conv_transpose1d", [r(2, 4, 5), r(4, 3, 3)], (None, 2, 1, 1), {}),
    ("conv_transpose2d", [r(1, 2, 4, 4), r(2, 3, 3, 3), r(3)], (2, 1), {}),
    ("layer_norm", [r(3, 4, 5)], ((4, 5),), {}),
    ("group_norm", [r(3, 4, 5), ], (2,), {}),
    ("rms_norm", [r(3, 4, 5)], ((4, 5),), dict(eps=1e-6)),
    ("max_pool1d", [r(2, 3, 9)], (3,), {}),
    ("max_pool1d", [r(2, 3, 9)], (3, 2, 1, 1, True), {}),
    ("max_pool2d", [r(2, 3, 6, 7)], ((2, 3),), {}),
    ("max_pool1d_with_indices", [r(2, 3, 9)], (2,), {}),
    ("avg_pool1d", [r(2, 3, 9)], (3, 2, 1, False, False), {}),
    ("adaptive_avg_pool1d", [r(2, 3, 9)], (4,), {}),
    ("adaptive_max_pool1d", [r(2, 3, 9)], (4,), {}),
    ("bilinear", [r(4, 3), r(4, 5), r(2, 3, 5), r(2)], (), {}),
    ("celu", [r(3, 4)], (0.7,), dict()),
    ("selu", [r(3, 4)], (), {}),
    ("threshold", [r(3, 4)], (0.1, -2.0), {}),
    ("prelu", [r(2, 3, 4), np.array([0.1, 0.2, 0.3])], (), {}),
    ("rrelu", [r(3, 4)], (), {}),
    ("hardshrink", [r(3, 4)], (0.3,), {}),
    ("pixel_shuffle", [r(2, 8, 3, 3)], (2,), {}),
    ("pixel_unshuffle", [r(2, 2, 4, 6)], (2,), {}),
    ("channel_shuffle", [r(2, 6, 3, 3)], (3,), {}),
    ("native_channel_shuffle", [(r(2, 6, 3), False)], (2,), {}),
    ("cosine_similarity", [r(4, 5), r(4, 5)], (1,), {}),
    ("pairwise_distance", [r(4, 5), r(4, 5)], (3.0, 1e-6, True), {}),
    ("pdist", [r(5, 3)], (1.5,), {}),
    ("constant_pad_nd", [r(2, 3)], ((1, 2, 0, 1), 0.5), {}),
    ("dropout", [r(3, 4)], (0.5, False), {}),
    ("alpha_dropout", [r(3, 4)], (0.5, False), {}),
    ("feature_dropout", [r(2, 3, 4)], (0.5, False), {}),
    ("feature_alpha_dropout", [r(2, 3, 4)], (0.5, False), {}),
    ("kl_div", [r(3, 4), (r(3, 4), False)], (2,), dict(log_target=True)),
    ("binary_cross_entropy_with_logits", [r(3, 4), (R.random((3, 4)), False), (R.random((3, 4)), False),
                                          (R.random(4), False)], (0,), {}),
    ("cosine_embedding_loss", [r(4, 5), r(4, 5), (np.array([1.0, -1, 1, -1]), False)], (0.1, 2), {}),
    ("hinge_embedding_loss", [r(4, 5), (np.sign(r(4, 5)), False)], (0.5, 1), {}),
    ("margin_ranking_loss", [r(6), r(6), (np.sign(r(6)), False)], (0.2, 0), {}),
    ("triplet_margin_loss", [r(4, 5), r(4, 5), r(4, 5)], (1.0, 2.0, 1e-6, True, 1), {}),
    ("poisson_nll_loss", [r(3, 4), (R.random((3, 4)) * 3, False)], (True, True, 1e-8, 2), {}),
    ("poisson_nll_loss", [R.random((3, 4)) + 0.1, (R.random((3, 4)) * 3, False)], (False, False, 1e-8, 1), {}),
]


@pytest.mark.parametrize("name,arrays,args,kwargs", NN_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(NN_CASES)])
def test_nn_functions_at_top_level(name, arrays, args, kwargs):
    # celu: Lucid's expm1-based form and PyTorch's differ by ~1e-9 relative in float64
    _same(name, arrays, *args, tol=1e-7 if name == "celu" else 1e-10, **kwargs)


def test_layer_norm_and_rms_norm_with_affine_parameters():
    x, w, b = r(3, 4, 5), r(4, 5), r(4, 5)
    for lib_args in ("layer_norm", "rms_norm"):
        lx, tx = _pair(x, True)
        lw, tw = _pair(w, True)
        lb, tb = _pair(b, True)
        if lib_args == "layer_norm":
            out_l, out_t = lucid.layer_norm(lx, (4, 5), lw, lb, 1e-5, True), torch.layer_norm(tx, (4, 5), tw, tb, 1e-5,
                                                                                               True)
        else:
            out_l, out_t = lucid.rms_norm(lx, [4, 5], lw, 1e-6), torch.rms_norm(tx, [4, 5], tw, 1e-6)
        assert_close(out_l, out_t, rtol=1e-10, atol=1e-10)
        out_l.sum().backward()
        out_t.sum().backward()
        assert_close(lx.grad, tx.grad, rtol=1e-9, atol=1e-9)
        assert_close(lw.grad, tw.grad, rtol=1e-9, atol=1e-9)


def test_embedding_and_norms_with_top_level_signatures():
    w = r(10, 3)
    idx = np.array([[1, 2, 9], [0, 2, 2]])
    _same("embedding", [w, idx])
    _same("embedding", [w, idx], 2)  # padding_idx: no gradient into row 2
    x, rm, rv = r(4, 3, 5), R.random(3), R.random(3) + 0.5
    for training in (True, False):
        lx, tx = _pair(x, True)
        lw, tw = _pair(r(3), True)
        lb, tb = _pair(r(3), True)
        lrm, trm = _pair(rm.copy())
        lrv, trv = _pair(rv.copy())
        out_l = lucid.batch_norm(lx, lw, lb, lrm, lrv, training, 0.2, 1e-5, False)
        out_t = torch.batch_norm(tx, tw, tb, trm, trv, training, 0.2, 1e-5, False)
        assert_close(out_l, out_t)
        assert_close(lrm, trm)
        assert_close(lrv, trv)
        out_t.sum().backward()
        out_l.sum().backward()
        for a, b in ((lx, tx), (lw, tw), (lb, tb)):
            assert_close(a.grad, b.grad, rtol=1e-9, atol=1e-9)
    lx, tx = _pair(x, True)
    lrm, trm = _pair(rm.copy())
    lrv, trv = _pair(rv.copy())
    out_l = lucid.instance_norm(lx, None, None, lrm, lrv, True, 0.1, 1e-5, False)
    out_t = torch.instance_norm(tx, None, None, trm, trv, True, 0.1, 1e-5, False)
    assert_close(out_l, out_t)
    assert_close(lrm, trm)


def test_in_place_top_level_activations_and_dropout():
    for name, args in [("celu_", (0.5,)), ("selu_", ()), ("threshold_", (0.0, 3.0)), ("rrelu_", ()),
                       ("dropout_", (0.3, False)), ("alpha_dropout_", (0.3, False)),
                       ("feature_alpha_dropout_", (0.3, False)), ("feature_dropout_", (0.3, False))]:
        x = r(2, 3, 4)
        lx, tx = _pair(x)
        assert getattr(lucid, name)(lx, *args) is lx
        getattr(torch, name)(tx, *args)
        assert_close(lx, tx, msg=name)


def test_dropout_training_statistics_and_errors():
    lucid.manual_seed(0)
    y = lucid.dropout(lucid.ones(20000), 0.25, True)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.02
    assert np.all(np.isclose(y.numpy(), 0.0) | np.isclose(y.numpy(), 1 / 0.75))
    z = lucid.feature_dropout(lucid.ones(64, 32, 5), 0.5, True)
    per_channel = z.numpy().std(axis=2)
    assert np.all(per_channel == 0)  # whole channels kept or dropped
    with pytest.raises(ValueError):
        lucid.kl_div(lucid.zeros(2), lucid.zeros(2), 3)


# ------------------------------------------------------------------ windows
@pytest.mark.parametrize("name,extra", [("hann_window", ()), ("hamming_window", ()), ("hamming_window", (0.5, 0.4)),
                                        ("blackman_window", ()), ("bartlett_window", ()), ("kaiser_window", ()),
                                        ("kaiser_window", (5.0,))])
def test_windows(name, extra):
    for length in (0, 1, 2, 5, 16):
        for periodic in (True, False):
            for dtype in ("float32", "float64"):
                out_l = getattr(lucid, name)(length, periodic, *extra, dtype=getattr(lucid, dtype))
                out_t = getattr(torch, name)(length, periodic, *extra, dtype=getattr(torch, dtype))
                assert_close(out_l, out_t, rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-6 if dtype ==
                             "float32" else 1e-12)
    assert_close(getattr(lucid, name)(7), getattr(torch, name)(7), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError):
        getattr(lucid, name)(-1)
    with pytest.raises(RuntimeError):
        getattr(lucid, name)(4, dtype=lucid.int64)


# ----------------------------------------------------- integration, pointwise
def test_trapezoid_family():
    y = r(3, 5)
    x = np.sort(r(5))
    xs = np.sort(r(3, 5), axis=1)
    for fn in ("trapezoid", "trapz", "cumulative_trapezoid"):
        _same(fn, [y])
        _same(fn, [y, (x, False)])
        _same(fn, [y, (xs, False)], dim=1)
        _same(fn, [y], dx=0.5, dim=0)
        _same(fn, [(np.arange(6).reshape(2, 3), False)], grad=False)
    _same("trapezoid", [np.zeros((2, 0))])


def test_i0_ldexp_frexp():
    x = np.concatenate([r(20) * 5, [0.0, 29.9, 30.0, 30.5, -45.0, 100.0, 700.0, -0.001]])
    _same("i0", [x], tol=1e-13)
    _same("i0", [(np.arange(-3, 4), False)], grad=False, tol=1e-6)
    _same("ldexp", [r(3, 4), (np.array([1, -2, 3, 0]), False)], grad=False)
    # PyTorch's gradient with an integer exponent is grad * 2**exponent taken in integers (0 for a
    # negative exponent); Lucid's is the true one. Compared where the two agree:
    _same("ldexp", [r(3, 4), (np.array([1, 2, 3, 0]), False)])
    _same("ldexp", [(np.arange(4), False), (np.array([1, -2, 3, 0]), False)], grad=False)
    v = np.array([0.0, -0.0, 1.0, -3.0, 0.1, 1024.0, 1e300, 3e-300, np.inf, -np.inf, np.nan, 0.75, 2.0 ** 52 + 1])
    for dtype in ("float64", "float32"):
        m_l, e_l = lucid.frexp(lucid.tensor(v.astype(dtype)))
        m_t, e_t = torch.frexp(torch.tensor(v.astype(dtype)))
        assert_close(m_l, m_t)
        assert_close(e_l, e_t)
    with pytest.raises(RuntimeError):
        lucid.frexp(lucid.tensor([1, 2]))
    lx, tx = _pair(r(4))
    lx.i0_()
    tx.i0_()
    assert_close(lx, tx, rtol=1e-13)


def test_gcd_lcm():
    rng = np.random.default_rng(5)
    for dtype in ("int64", "int32"):
        a = rng.integers(-60, 60, size=(4, 5)).astype(dtype)
        b = rng.integers(-60, 60, size=(5,)).astype(dtype)
        a[0, :2] = 0
        b[0] = 0
        _same("gcd", [a, b], grad=False)
        _same("lcm", [a, b], grad=False)
    big = np.array([2 ** 62, 806515533049393, 12586269025], dtype=np.int64)
    _same("gcd", [big, np.array([2 ** 40, 498454011879264, 7778742049])], grad=False)
    lx, tx = _pair(np.array([12, 18]))
    assert lx.gcd_(lucid.tensor([8, 27])) is lx
    tx.gcd_(torch.tensor([8, 27]))
    assert_close(lx, tx)
    assert_close(lucid.tensor([4, 6]).lcm(lucid.tensor([6, 4])), torch.tensor([4, 6]).lcm(torch.tensor([6, 4])))
    with pytest.raises(RuntimeError):
        lucid.gcd(lucid.tensor([1.0]), lucid.tensor([2.0]))


# ------------------------------------------------------------ namespace odds
def test_range_fill_xlogy_and_unsafe_splits():
    with pytest.warns(UserWarning, match="deprecated"):
        out_l = lucid.range(0, 1, 0.3)
    with pytest.warns(UserWarning):
        out_t = torch.range(0, 1, 0.3)
    assert_close(out_l, out_t)
    with pytest.warns(UserWarning):
        assert_close(lucid.range(1, 4, dtype=lucid.int64), torch.range(1, 4, dtype=torch.int64))
        assert_close(lucid.range(5, 1, -2), torch.range(5, 1, -2))
    x = r(3, 4)
    lx, tx = _pair(x, True)
    out_l, out_t = lucid.fill(lx, 2.5), torch.fill(tx, 2.5)
    assert_close(out_l, out_t)
    out_l.sum().backward()
    out_t.sum().backward()
    assert_close(lx.grad, tx.grad)
    lx, tx = _pair(x)
    assert lucid.fill_(lx, 1.0) is lx
    torch.fill_(tx, 1.0)
    assert_close(lx, tx)
    lx, tx = _pair(np.abs(x))
    lucid.xlogy_(lx, lucid.tensor(3.0))
    torch.xlogy_(tx, torch.tensor(3.0))
    assert_close(lx, tx)
    y = r(7, 2)
    for name, args in [("unsafe_chunk", (3,)), ("unsafe_split", (2,)), ("unsafe_split_with_sizes", ([3, 4],))]:
        assert_close(getattr(lucid, name)(lucid.tensor(y), *args), getattr(torch, name)(torch.tensor(y), *args))
        assert_close(getattr(lucid.tensor(y), name)(*args), getattr(torch.tensor(y), name)(*args))


COPIES = [("view_copy", ((3, 8),)), ("permute_copy", ((2, 0, 1),)), ("transpose_copy", (0, 2)),
          ("squeeze_copy", ()), ("unsqueeze_copy", (1,)), ("expand_copy", ((5, 2, 3, 4),)),
          ("diagonal_copy", (0, 1, 2)), ("select_copy", (1, -1)), ("slice_copy", (2, 1, 4, 2)),
          ("narrow_copy", (0, 0, 1)), ("unbind_copy", (1,)), ("split_copy", (2, 2)),
          ("split_with_sizes_copy", ([1, 3], 2)), ("detach_copy", ()), ("alias_copy", ()),
          ("as_strided_copy", ((2, 2), (1, 2), 1)), ("unfold_copy", (2, 2, 1))]


@pytest.mark.parametrize("name,args", COPIES, ids=[c[0] for c in COPIES])
def test_copy_variants(name, args):
    x = r(2, 3, 4)
    lx, tx = _pair(x, name != "detach_copy")
    out_l, out_t = getattr(lucid, name)(lx, *args), getattr(torch, name)(tx, *args)
    assert_close(out_l, out_t)
    first_l = out_l[0] if isinstance(out_l, tuple) else out_l
    np.testing.assert_array_equal(lx.detach().numpy(), x)  # a copy: the input is unchanged
    if name != "detach_copy":
        first_t = out_t[0] if isinstance(out_t, tuple) else out_t
        first_t.sum().backward()
        first_l.sum().backward()
        assert_close(lx.grad, tx.grad)
    if name == "view_copy":
        m = r(2, 3)
        assert_close(lucid.t_copy(lucid.tensor(m)), torch.t_copy(torch.tensor(m)))


def test_creation_helpers():
    a = np.arange(6.0).reshape(2, 3)
    t = lucid.asarray(a)
    a[0, 0] = 100.0
    assert t[0, 0].item() == 100.0  # shares the NumPy array's memory, as torch.asarray
    assert_close(lucid.asarray([1, 2, 3]), torch.asarray([1, 2, 3]))
    assert_close(lucid.asarray([1, 2], dtype=lucid.float64), torch.asarray([1, 2], dtype=torch.float64))
    src = lucid.ones(3)
    assert lucid.asarray(src) is src
    c = lucid.asarray(src, copy=True)
    c.add_(1)
    assert src.sum().item() == 3.0
    assert lucid.asarray(src, requires_grad=True).requires_grad
    e = lucid.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == torch.empty_strided((2, 3), (1, 2)).stride()
    assert tuple(lucid.empty_strided((0, 3), (3, 1)).shape) == (0, 3)
    buf = bytearray(np.arange(5, dtype=np.int32).tobytes())
    fb = lucid.frombuffer(buf, dtype=lucid.int32, count=3, offset=4)
    assert_close(fb, torch.frombuffer(bytearray(buf), dtype=torch.int32, count=3, offset=4))
    fb[0] = 7  # shares the buffer's memory
    assert np.frombuffer(buf, dtype=np.int32)[1] == 7


def test_predicates_and_identities():
    x, tx = lucid.tensor([1.5, -2.0]), torch.tensor([1.5, -2.0])
    for name in ("is_nonzero", "is_signed", "is_inference", "is_conj", "is_neg", "get_device"):
        args = (x[:1],) if name == "is_nonzero" else (x,)
        targs = (tx[:1],) if name == "is_nonzero" else (tx,)
        assert getattr(lucid, name)(*args) == getattr(torch, name)(*targs), name
    assert lucid.is_same_size(x, lucid.zeros(2)) and not lucid.is_same_size(x, lucid.zeros(3))
    assert not lucid.is_signed(lucid.tensor([True]))
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg", "real"):
        assert_close(getattr(lucid, name)(x), getattr(torch, name)(tx))
    assert lucid.conj_physical_(x) is x
    assert_close(x.real, tx.real)
    assert lucid.typename(x) == "lucid.FloatTensor" and lucid.typename(3) == torch.typename(3)
    assert lucid.typename(lucid.nn.Linear) == "lucid.nn.modules.linear.Linear" or "Linear" in lucid.typename(
        lucid.nn.Linear)
    assert lucid.is_storage(x.untyped_storage()) and not lucid.is_storage(x)
    assert lucid.set_flush_denormal(False) is False
    assert not x.is_xpu and not x.is_ipu and not x.is_mtia
    x.record_stream(None)
    assert lucid.ones(2, 3, 4).permute(2, 0, 1).dim_order() == torch.ones(2, 3, 4).permute(2, 0, 1).dim_order()
    assert lucid.ones(2, 1, 4).dim_order() == torch.ones(2, 1, 4).dim_order()


def test_tensor_new():
    x = lucid.ones(2, 3, dtype=lucid.float64)
    n = x.new(4, 5)
    assert tuple(n.shape) == (4, 5) and n.dtype == lucid.float64
    assert tuple(x.new(x.size()).shape) == (2, 3)
    assert_close(x.new([1, 2]), torch.ones(1, dtype=torch.float64).new([1, 2]))
    assert_close(x.new((2, 3)), torch.ones(1, dtype=torch.float64).new((2, 3)))  # a tuple that is not a Size is data
    assert tuple(x.new().shape) == (0,)
    assert x.new(x).shape == x.shape
    s = x.new_empty_strided((2, 2), (1, 2))
    assert s.stride() == (1, 2) and s.dtype == lucid.float64


def test_runtime_switches():
    assert lucid.is_autocast_enabled() is False and lucid.is_autocast_cpu_enabled() is False
    with lucid.autocast("cpu", dtype=lucid.bfloat16):
        assert lucid.is_autocast_enabled("cpu") and lucid.get_autocast_dtype("cpu") == lucid.bfloat16
    lucid.set_autocast_enabled("cpu", True)
    try:
        assert lucid.is_autocast_cpu_enabled()
        lucid.set_autocast_cpu_dtype(lucid.float16)
        assert lucid.get_autocast_cpu_dtype() == lucid.float16
    finally:
        lucid.set_autocast_enabled(False)
        lucid.set_autocast_dtype("cpu", lucid.bfloat16)
    assert not lucid.is_autocast_enabled()
    assert lucid.is_autocast_cache_enabled()
    lucid.clear_autocast_cache()
    assert lucid.autocast_increment_nesting() == 1 and lucid.autocast_decrement_nesting() == 0
    assert lucid.is_anomaly_enabled() is False and lucid.is_anomaly_check_nan_enabled() is True  # PyTorch's
    lucid.set_anomaly_enabled(True, False)
    assert lucid.is_anomaly_enabled() and not lucid.is_anomaly_check_nan_enabled()
    lucid.set_anomaly_enabled(False)
    lucid.set_warn_always(True)
    assert lucid.is_warn_always_enabled()
    lucid.set_warn_always(False)
    assert issubclass(lucid.OutOfMemoryError, RuntimeError) and issubclass(lucid.AcceleratorError, RuntimeError)
    assert lucid.GradScaler is lucid.amp.GradScaler and lucid.vmap is lucid.func.vmap
    assert_close(lucid.vmap(lambda v: v * 2)(lucid.ones(3, 2)), torch.vmap(lambda v: v * 2)(torch.ones(3, 2)))


# ----------------------------------------------------------------------- nn
def test_nn_buffer_registers_on_assignment():
    for lib in (lucid, torch):
        m = lib.nn.Module()
        m.kept = lib.nn.Buffer(lib.ones(2))
        m.dropped = lib.nn.Buffer(lib.zeros(3), persistent=False)
        m.plain = lib.ones(1)
        assert sorted(m.state_dict()) == ["kept"]
        assert sorted(dict(m.named_buffers())) == ["dropped", "kept"]
    with pytest.raises(TypeError, match="cannot assign 'Buffer' as parameter 'weight'"):
        lucid.nn.Linear(2, 2).weight = lucid.nn.Buffer(lucid.zeros(2, 2))  # as torch: a parameter stays one
    with pytest.raises(TypeError):
        lucid.nn.Buffer([1, 2])


def test_sdpa_kernel_accepts_any_backend():
    from lucid.nn.attention import SDPBackend, sdpa_kernel

    assert list(SDPBackend.__members__) == list(torch.nn.attention.SDPBackend.__members__)
    q = lucid.tensor(r(2, 3, 4))
    expected = lucid.nn.functional.scaled_dot_product_attention(q, q, q)
    for backends in (SDPBackend.FLASH_ATTENTION, [SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION]):
        with sdpa_kernel(backends):
            assert_close(lucid.nn.functional.scaled_dot_product_attention(q, q, q),
                         torch.tensor(expected.numpy()))
    with pytest.raises(AssertionError):
        with sdpa_kernel("math"):
            pass


def test_nll_loss_2d_alias_and_container():
    x, y = r(2, 3, 4, 4), np.random.default_rng(0).integers(0, 3, size=(2, 4, 4))
    assert_close(lucid.nn.NLLLoss2d()(lucid.tensor(x), lucid.tensor(y)),
                 torch.nn.NLLLoss2d()(torch.tensor(x), torch.tensor(y)))
    with pytest.warns(FutureWarning):
        c = lucid.nn.Container(a=lucid.nn.Linear(2, 3), b=lucid.nn.ReLU())
    assert [n for n, _ in c.named_children()] == ["a", "b"]


@pytest.mark.parametrize("dims", [1, 2])
def test_nn_grad_conv_input_and_weight(dims):
    rng = np.random.default_rng(dims)
    shape = (2, 4) + (7,) * dims
    x, w = rng.standard_normal(shape), rng.standard_normal((6, 2) + (3,) * dims)
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    out = getattr(torch.nn.functional, f"conv{dims}d")(torch.tensor(x), torch.tensor(w), **kw)
    g = rng.standard_normal(tuple(out.shape))
    for which in ("input", "weight"):
        name = f"conv{dims}d_{which}"
        lw, tw = _pair(w if which == "input" else x, True)
        lg, tg = _pair(g, True)
        size = x.shape if which == "input" else w.shape
        res_l = getattr(lucid.nn.grad, name)(size, lw, lg, **kw) if which == "input" else \
            getattr(lucid.nn.grad, name)(lw, size, lg, **kw)
        res_t = getattr(torch.nn.grad, name)(size, tw, tg, **kw) if which == "input" else \
            getattr(torch.nn.grad, name)(tw, size, tg, **kw)
        assert_close(res_l, res_t, rtol=1e-10, atol=1e-10)
        res_t.square().sum().backward()  # differentiable in its arguments
        res_l.square().sum().backward()
        assert_close(lw.grad, tw.grad, rtol=1e-9, atol=1e-9)
        assert_close(lg.grad, tg.grad, rtol=1e-9, atol=1e-9)


LAZY = [("LazyLinear", (3,), {}, (2, 5)), ("LazyLinear", (3,), dict(bias=False), (2, 4, 6)),
        ("LazyConv1d", (4, 3), dict(groups=2, padding=1), (2, 6, 7)), ("LazyConv2d", (3, 2), {}, (2, 4, 5, 5)),
        ("LazyConvTranspose1d", (4, 3), dict(stride=2), (2, 4, 5)),
        ("LazyConvTranspose2d", (4, 3), dict(groups=2), (1, 4, 3, 3)),
        ("LazyBatchNorm1d", (), {}, (3, 4)), ("LazyBatchNorm2d", (), dict(momentum=0.3), (3, 4, 2, 2)),
        ("LazyInstanceNorm1d", (), {}, (2, 3, 5)), ("LazyInstanceNorm1d", (), dict(affine=False), (2, 3, 5)),
        ("LazyInstanceNorm2d", (), dict(affine=True, track_running_stats=True), (2, 3, 4, 4))]


@pytest.mark.parametrize("name,args,kwargs,input_shape", LAZY, ids=[c[0] + str(i) for i, c in enumerate(LAZY)])
def test_lazy_modules_materialize_as_torch(name, args, kwargs, input_shape):
    lazy = getattr(lucid.nn, name)(*args, **kwargs)
    lazy_t = getattr(torch.nn, name)(*args, **kwargs)
    assert list(lazy.state_dict()) == list(lazy_t.state_dict())
    assert lazy.has_uninitialized_params()
    params = list(lazy.parameters())
    if params:
        assert isinstance(params[0], lucid.nn.UninitializedParameter)
        with pytest.raises(RuntimeError, match="uninitialized parameter"):
            params[0].shape
        opt = lucid.optim.SGD(lazy.parameters(), lr=0.5)  # built before the first forward, as torch allows
    x = r(*input_shape).astype(np.float32)
    out = lazy(lucid.tensor(x))
    out_t = lazy_t(torch.tensor(x))
    assert type(lazy).__name__ == type(lazy_t).__name__  # LazyLinear -> Linear ...
    assert repr(lazy) == repr(lazy_t)
    assert [tuple(p.shape) for p in lazy.parameters()] == [tuple(p.shape) for p in lazy_t.parameters()]
    assert [(n, tuple(b.shape)) for n, b in lazy.named_buffers()] == \
        [(n, tuple(b.shape)) for n, b in lazy_t.named_buffers()]
    # The same computation as torch's module once the values agree.
    lazy_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in lazy.state_dict().items()})
    lazy.train(), lazy_t.train()
    assert_close(lazy(lucid.tensor(x)), lazy_t(torch.tensor(x)), rtol=1e-5, atol=1e-5)
    if params:
        assert params[0] is lazy._parameters[next(iter(lazy._parameters))]  # the very object the optimizer holds
        before = [p.detach().numpy().copy() for p in lazy.parameters()]
        lazy.zero_grad()
        lazy(lucid.tensor(x)).sum().backward()
        grads = [p.grad.numpy().copy() for p in lazy.parameters()]
        opt.step()
        for b, g, p in zip(before, grads, lazy.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), b - 0.5 * g, rtol=1e-6, atol=1e-6)
    assert out.shape == out_t.shape


def test_sync_batch_norm_on_one_process():
    x = r(4, 3, 5).astype(np.float32)
    lm, tm = lucid.nn.SyncBatchNorm(3, momentum=0.2), torch.nn.SyncBatchNorm(3, momentum=0.2)
    for step in range(2):
        lx, tx = _pair(x + step, True)
        out_l, out_t = lm(lx), tm(tx)
        assert_close(out_l, out_t, rtol=1e-5, atol=1e-5)
        out_l.square().sum().backward()
        out_t.square().sum().backward()
        assert_close(lx.grad, tx.grad, rtol=1e-4, atol=1e-4)
    assert_close(lm.running_var, tm.running_var, rtol=1e-6, atol=1e-6)
    lm.eval(), tm.eval()
    assert_close(lm(lucid.tensor(x)), tm(torch.tensor(x)), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        lm(lucid.ones(4))
    net = lucid.nn.Sequential(lucid.nn.Conv2d(2, 3, 1), lucid.nn.BatchNorm2d(3))
    bn = net[1]
    converted = lucid.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert isinstance(converted[1], lucid.nn.SyncBatchNorm) and converted[1].weight is bn.weight
    assert converted[1].running_mean is bn.running_mean


def test_python_elementwise_methods_and_resize():
    for dtype in ("float32", "int64"):
        a, b, c = np.array([1, 2, 3], dtype=dtype), np.array([4, 5, 6], dtype=dtype), np.array(2, dtype=dtype)
        la, ta = _pair(a)
        assert la.apply_(lambda v: v * 3 - 1) is la
        ta.apply_(lambda v: v * 3 - 1)
        assert_close(la, ta)
        la.map_(lucid.tensor(b), lambda x, y: x * y)
        ta.map_(torch.tensor(b), lambda x, y: x * y)
        assert_close(la, ta)
        la.map2_(lucid.tensor(b), lucid.tensor(c), lambda x, y, z: x - y * z)
        ta.map2_(torch.tensor(b), torch.tensor(c), lambda x, y, z: x - y * z)
        assert_close(la, ta)
    with pytest.raises(RuntimeError, match="requires grad"):
        lucid.ones(2, requires_grad=True).apply_(lambda v: v)
    lz, tz = _pair(np.arange(6.0).reshape(2, 3))
    assert lz.resize_(3, 3) is lz
    tz.resize_(3, 3)
    assert tuple(lz.shape) == (3, 3)
    assert_close(lz.reshape(-1)[:6], tz.reshape(-1)[:6])  # kept elements; the rest are uninitialised
    lz.resize_as_(lucid.ones(2, 2))
    tz.resize_as_(torch.ones(2, 2))
    assert_close(lz, tz)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        lucid.ones(2, requires_grad=True).resize_(3)


def test_histogram():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 25)).astype(np.float32)
    x[0, :3] = x[1, 0]  # ties onto an edge
    w = rng.random((4, 25)).astype(np.float32)
    cases = [((7,), {}), ((5,), dict(range=(-1.0, 1.0))), ((4,), dict(density=True)),
             ((np.array([-2.0, -0.5, 0.0, 0.3, 2.0], dtype=np.float32),), dict(weight=w)),
             ((3,), dict(weight=w, density=True, range=(0.0, 3.0)))]
    for args, kwargs in cases:
        l_args = tuple(lucid.tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        t_args = tuple(torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        l_kw = {k: lucid.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        t_kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        out_l, out_t = lucid.histogram(lucid.tensor(x), *l_args, **l_kw), torch.histogram(torch.tensor(x), *t_args,
                                                                                          **t_kw)
        assert_close(out_l.hist, out_t.hist, rtol=1e-5, atol=1e-6)
        assert_close(out_l.bin_edges, out_t.bin_edges, rtol=1e-6, atol=1e-6)
    assert_close(lucid.tensor([2.0, 2.0]).histogram(3).hist, torch.tensor([2.0, 2.0]).histogram(3).hist)
    with pytest.raises(NotImplementedError):
        lucid.histogram(lucid.tensor([1, 2]), 3)


def test_diagonal_matrices_keep_nan_and_inf_on_the_diagonal():
    # diag / diag_embed / diagflat multiplied by an identity: NaN * 0 filled the row with NaN
    v = np.array([1.0, np.nan, np.inf, -2.0])
    for name, args in [("diag", ()), ("diag", (1,)), ("diag", (-2,)), ("diag_embed", ()), ("diagflat", (1,))]:
        got = getattr(lucid, name)(lucid.tensor(v), *args).numpy()
        want = getattr(torch, name)(torch.tensor(v), *args).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_cov_of_one_variable_and_diff_edges_match_torch():
    rows = np.array([[1.0, 2.0, 4.0, 7.0]])
    assert lucid.cov(lucid.tensor(rows)).shape == torch.cov(torch.tensor(rows)).shape == ()
    assert float(lucid.corrcoef(lucid.tensor(rows))) == float(torch.corrcoef(torch.tensor(rows)))
    for n in (2, 5):  # an order past the length leaves an empty dim
        assert lucid.ones(1, 1).diff(n).shape == torch.ones(1, 1).diff(n).shape
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        lucid.ones(4).diff(-1)


def test_gammainc_result_dtype_follows_promotion():
    """A 0-d operand does not widen a dimensioned one (float16 stays float16)."""
    for a_dtype, x_dtype, x_shape in (("float16", "float32", ()), ("float32", "float64", ()),
                                      ("float32", "float64", (2,))):
        a = np.ones(2)
        x = np.full(x_shape, 1.5)
        want = torch.special.gammainc(torch.tensor(a, dtype=getattr(torch, a_dtype)),
                                      torch.tensor(x, dtype=getattr(torch, x_dtype)))
        got = lucid.special.gammainc(lucid.tensor(a, dtype=getattr(lucid, a_dtype)),
                                     lucid.tensor(x, dtype=getattr(lucid, x_dtype)))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-3)
