"""Memory formats as in PyTorch: clone, .to, the *_like factories and
Tensor.contiguous keep (preserve_format) or set (contiguous_format,
channels_last) the memory order of their result; basic indexing keeps the
strides PyTorch gives; the values, gradients and compiled steps do not
depend on the layout. PyTorch is the oracle."""
import random

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.optim  # noqa: F401
from lucid.compile import fused_step

torch = pytest.importorskip("torch")


def _random_layout(rng):
    """The same random strided tensor in both libraries: a permutation of a
    row-major block, sliced with steps, sometimes expanded."""
    nd = rng.randint(0, 4)
    shape = [rng.choice([1, 1, 2, 3, 4]) for _ in range(nd)]
    perm = list(range(nd))
    rng.shuffle(perm)
    base = np.arange(float(np.prod(shape, dtype=np.int64)), dtype=np.float32).reshape(shape)
    xt, xl = torch.tensor(base).permute(perm), lucid.tensor(base).permute(*perm)
    for d in range(nd):
        if rng.random() < 0.3 and xt.shape[d] > 1:
            key = (slice(None),) * d + (slice(None, None, rng.choice([1, 2])),)
            xt, xl = xt[key], xl[key]
    if nd and rng.random() < 0.2:
        d = rng.randrange(nd)
        if xt.shape[d] == 1:
            size = list(xt.shape)
            size[d] = 3
            xt, xl = xt.expand(size), xl.expand(*size)
    return xt, xl


MAKERS = {
    "clone": lambda m, x: x.clone(),
    "clone_contiguous": lambda m, x: x.clone(memory_format=m.contiguous_format),
    "to_float64": lambda m, x: x.to(m.float64),
    "double": lambda m, x: x.double(),
    "to_copy": lambda m, x: x.to(m.float32, copy=True),
    "zeros_like": lambda m, x: m.zeros_like(x),
    "ones_like": lambda m, x: m.ones_like(x),
    "empty_like": lambda m, x: m.empty_like(x),
    "full_like": lambda m, x: m.full_like(x, 2.5),
    "zeros_like_contiguous": lambda m, x: m.zeros_like(x, memory_format=m.contiguous_format),
    "rand_like": lambda m, x: m.rand_like(x),
    "contiguous": lambda m, x: x.contiguous(),
}
VALUES_KEPT = {"clone", "clone_contiguous", "to_float64", "double", "to_copy", "contiguous"}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_results_have_pytorchs_strides_on_random_layouts(name):
    rng = random.Random(name)
    make = MAKERS[name]
    for _ in range(300):
        xt, xl = _random_layout(rng)
        assert xl.stride() == xt.stride(), "the inputs' layouts differ"
        yt, yl = make(torch, xt), make(lucid, xl)
        assert yl.shape == tuple(yt.shape)
        assert yl.stride() == yt.stride(), (name, tuple(xt.shape), xt.stride())
        if name in VALUES_KEPT:
            np.testing.assert_array_equal(yl.numpy(), yt.numpy())


def _layout_of(rng, shape):
    """The same random values in both libraries with the given shape, laid
    out as a permutation of a row-major block, some dims taken with a step."""
    nd = len(shape)
    perm = list(range(nd))
    rng.shuffle(perm)
    steps = [rng.choice([1, 1, 2]) for _ in range(nd)]
    stored = [shape[p] * steps[i] for i, p in enumerate(perm)]  # the block, in memory order
    base = np.random.default_rng(rng.randrange(1 << 30)).standard_normal(stored).astype(np.float32)
    inverse = [perm.index(d) for d in range(nd)]
    key = tuple(slice(None, None, steps[i]) for i in inverse)
    return torch.tensor(base).permute(inverse)[key], lucid.tensor(base).permute(*inverse)[key]


def _partner_shape(rng, shape):
    """A shape that broadcasts against `shape` (dims dropped in front or set to 1)."""
    drop = rng.randint(0, len(shape))
    return [1 if rng.random() < 0.3 else n for n in shape[drop:]]


ELEMENTWISE = {
    "add_scalar": (1, lambda m, a: a + 0.5),
    "mul": (2, lambda m, a, b: a * b),
    "sub_reversed": (2, lambda m, a, b: b - a),
    "exp": (1, lambda m, a: a.exp()),
    "gt": (2, lambda m, a, b: a > b),
    "where": (3, lambda m, a, b, c: m.where(a > 0, b, c)),
    "to_float64": (1, lambda m, a: a.double()),
    "clamp": (1, lambda m, a: a.clamp(-0.5, 0.5)),
    "maximum": (2, lambda m, a, b: m.maximum(a, b)),
    "gelu": (1, lambda m, a: m.nn.functional.gelu(a)),
}
# One kernel in PyTorch, several in Lucid (clamp with number bounds is
# selects against scalars): the stride of a size-1 dim, which addresses
# nothing, can differ (PyTorch's own rule for it depends on whether a kernel
# takes a scalar operand).
COMPOSED = {"clamp"}


def _addressed_strides(t):
    return tuple(s if n != 1 else None for n, s in zip(t.shape, t.stride()))


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_results_follow_their_operands_memory_order(name):
    """PyTorch lays an elementwise result out in its operands' order (the
    first operand that tells two dims apart decides): strides, contiguity and
    whether a view of the result exists agree, for every operand order."""
    arity, fn = ELEMENTWISE[name]
    rng = random.Random(name)
    checked_views = 0
    for _ in range(200):
        shape = [rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(0, 4))]
        operands = [_layout_of(rng, shape)] + [_layout_of(rng, _partner_shape(rng, shape)) for _ in range(arity - 1)]
        rng.shuffle(operands)
        yt = fn(torch, *[t for t, _ in operands])
        yl = fn(lucid, *[lt for _, lt in operands])
        assert yl.shape == tuple(yt.shape)
        layouts = [(tuple(t.shape), t.stride()) for t, _ in operands]
        if name in COMPOSED:
            assert _addressed_strides(yl) == _addressed_strides(yt), layouts
        else:
            assert yl.stride() == yt.stride(), layouts
        assert yl.is_contiguous() == yt.is_contiguous()
        np.testing.assert_allclose(yl.numpy(), yt.numpy(), rtol=1e-6, atol=1e-6)
        if yt.ndim >= 2:  # a view merging the last two dims exists in both or in neither
            merged = list(yt.shape[:-2]) + [-1]
            try:
                yt.view(merged)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    yl.view(merged)
            else:
                np.testing.assert_allclose(yl.view(merged).numpy(), yt.view(merged).numpy(), rtol=1e-6, atol=1e-6)
                checked_views += 1
    assert checked_views > 0


def test_elementwise_layouts_are_the_same_traced_and_eager():
    """Inside a compiled function the results have the strides they have
    eagerly, so the program takes the same branch and the same views."""
    def fn(p, q):
        r = p.transpose(0, 1) * 2.0 + q.transpose(0, 1)
        flat = r.transpose(0, 1).view(-1) if not r.is_contiguous() else r.reshape(-1) * 0.0
        return flat.exp() + r.sum()

    pa = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    qa = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    want = fn(torch.tensor(pa), torch.tensor(qa))
    compiled = lucid.compile(fn)
    for _ in range(2):
        got = compiled(lucid.tensor(pa), lucid.tensor(qa))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fn(lucid.tensor(pa), lucid.tensor(qa)).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_gradients_through_permuted_elementwise_results():
    at = torch.randn(3, 4, 5, requires_grad=True)
    al = lucid.tensor(at.detach().numpy(), requires_grad=True)
    outs = []
    for m, a in ((torch, at), (lucid, al)):
        x = a.permute(2, 0, 1)
        y = (x * x.exp() + m.ones(4)).permute(1, 2, 0).reshape(3, -1)
        (y * m.arange(20.0)).sum().backward()
        outs.append(a.grad)
    assert outs[1].is_contiguous()
    np.testing.assert_allclose(outs[1].numpy(), outs[0].numpy(), rtol=1e-5, atol=1e-5)


# Ops on a permuted input ([5, 3, 4] with strides (1, 20, 5)): PyTorch keeps
# that order for elementwise results and sorts, and returns row-major memory
# for reductions, selections, tril/masked_fill and the ops it computes into
# a fresh buffer. Results and strides agree.
ON_PERMUTED = {
    "sum0_keep": lambda m,x: x.sum(0, keepdim=True),
    "sum1_keep": lambda m,x: x.sum(1, keepdim=True),
    "sum2": lambda m,x: x.sum(2),
    "mean1": lambda m,x: x.mean(1),
    "amax0": lambda m,x: x.amax(0),
    "softmax0": lambda m,x: m.softmax(x, 0),
    "softmax2": lambda m,x: m.softmax(x, 2),
    "log_softmax1": lambda m,x: m.log_softmax(x, 1),
    "cumsum1": lambda m,x: m.cumsum(x, 1),
    "cat0": lambda m,x: m.cat([x, x], 0),
    "cat2": lambda m,x: m.cat([x, x], 2),
    "stack": lambda m,x: m.stack([x, x]),
    "clone": lambda m,x: x.clone(),
    "neg_": lambda m,x: x.clone().neg_(),
    "pow2": lambda m,x: x ** 2,
    "pow3": lambda m,x: x ** 3,
    "relu": lambda m,x: m.relu(x),
    "sigmoid": lambda m,x: m.sigmoid(x),
    "tanh": lambda m,x: m.tanh(x),
    "dropout_eval": lambda m,x: m.nn.functional.dropout(x, 0.5, training=False),
    "leaky": lambda m,x: m.nn.functional.leaky_relu(x, 0.1),
    "silu": lambda m,x: m.nn.functional.silu(x),
    "softplus": lambda m,x: m.nn.functional.softplus(x),
    "layer_norm": lambda m,x: m.nn.functional.layer_norm(x, [4]),
    "abs": lambda m,x: x.abs(),
    "sign": lambda m,x: x.sign(),
    "round": lambda m,x: x.round(),
    "lerp": lambda m,x: m.lerp(x, x*2, 0.3),
    "addcmul": lambda m,x: m.addcmul(x, x, x, value=0.5),
    "masked_fill": lambda m,x: x.masked_fill(x > 0, 0.),
    "where_scalar": lambda m,x: m.where(x > 0, 1.0, 0.0),
    "nan_to_num": lambda m,x: m.nan_to_num(x),
    "float_to_half": lambda m,x: x.half(),
    "to_int": lambda m,x: x.int(),
    "zeros_like": lambda m,x: m.zeros_like(x),
    "expm1": lambda m,x: m.expm1(x),
    "erf": lambda m,x: m.erf(x),
    "hardtanh": lambda m,x: m.nn.functional.hardtanh(x),
    "elu": lambda m,x: m.nn.functional.elu(x),
    "mul_tensor": lambda m,x: x * m.ones(5,1,1),
    "div_scalar": lambda m,x: x / 3,
    "floor_div": lambda m,x: x // 2,
    "remainder": lambda m,x: x % 2,
    "logical_not": lambda m,x: m.logical_not(x > 0),
    "isnan": lambda m,x: m.isnan(x),
    "flip": lambda m,x: m.flip(x, [0]),
    "roll": lambda m,x: m.roll(x, 1, 0),
    "tril": lambda m,x: m.tril(x),
    "matmul": lambda m,x: x @ m.ones(4, 2),
    "index_sel": lambda m,x: x[[0,1]],
    "mask_sel_shape": lambda m,x: x[:, 1:],
    "max_dim": lambda m,x: x.max(1)[0],
    "argmax": lambda m,x: x.argmax(1),
    "sort": lambda m,x: x.sort(1)[0],
    "topk": lambda m,x: x.topk(2, 1)[0],
    "var": lambda m,x: x.var(1),
    "norm": lambda m,x: m.linalg.vector_norm(x, dim=1),
    "gelu_tanh": lambda m,x: m.nn.functional.gelu(x, approximate="tanh"),
    "clamp_t": lambda m,x: x.clamp(min=m.zeros(1)),
    "square": lambda m,x: m.square(x),
    "rsqrt": lambda m,x: m.rsqrt(x.abs()+1),
    "mse": lambda m,x: m.nn.functional.mse_loss(x, x*0, reduction="none"),
    "bce_logits": lambda m,x: m.nn.functional.binary_cross_entropy_with_logits(x, (x>0).float(), reduction="none"),
    "smooth_l1": lambda m,x: m.nn.functional.smooth_l1_loss(x, x*0, reduction="none"),
    "pad": lambda m,x: m.nn.functional.pad(x, (1,1)),
    "repeat": lambda m,x: x.repeat(1,1,2),
    "expand_clone": lambda m,x: x[:, :1].expand(5,3,4).clone(),
    "type_as": lambda m,x: x.type_as(m.zeros(1, dtype=m.float64)),
    "sort1i": lambda m,x: x.sort(1)[1],
    "sort0": lambda m,x: x.sort(0)[0],
    "argsort": lambda m,x: x.argsort(1),
    "msort": lambda m,x: m.msort(x),
    "triu": lambda m,x: x.triu(),
    "cummax": lambda m,x: x.cummax(1)[0],
    "cumprod": lambda m,x: x.cumprod(1),
    "gather": lambda m,x: m.gather(x, 1, m.zeros(5,3,4,dtype=m.long)),
    "scatter": lambda m,x: x.scatter(1, m.zeros(5,3,4,dtype=m.long), 1.),
    "index_fill": lambda m,x: x.index_fill(1, m.tensor([0]), 2.),
    "masked_scatter": lambda m,x: x.masked_scatter(x>0, m.zeros(60)),
    "logcumsumexp": lambda m,x: x.logcumsumexp(1),
    "diff": lambda m,x: m.diff(x, dim=1),
    "kth": lambda m,x: x.kthvalue(2,1)[0],
    "median": lambda m,x: x.median(1)[0],
    "mul_": lambda m,x: x.clone().mul_(2),
    "detach": lambda m,x: x.detach(),
    "contig": lambda m,x: x.contiguous(),
    "reshape": lambda m,x: x.reshape(5,12),
    "flatten": lambda m,x: x.flatten(1),
    "T_mT": lambda m,x: x.mT,
    "unbind": lambda m,x: x.unbind(1)[0],
    "chunk": lambda m,x: x.chunk(2, 2)[0],
    "new_zeros": lambda m,x: x.new_zeros(2,3),
    "index_add": lambda m,x: x.index_add(0, m.tensor([0]), x[:1]),
    "clamp_min": lambda m,x: x.clamp_min(0),
    "fmod": lambda m,x: m.fmod(x, 1.5),
    "atan2": lambda m,x: m.atan2(x, x+1),
    "hypot": lambda m,x: m.hypot(x, x),
    "logaddexp": lambda m,x: m.logaddexp(x, x),
    "xlogy": lambda m,x: m.xlogy(x, x.abs()),
    "sinc": lambda m,x: m.sinc(x),
    "log_sigmoid": lambda m,x: m.nn.functional.logsigmoid(x),
    "mish": lambda m,x: m.nn.functional.mish(x),
    "hardswish": lambda m,x: m.nn.functional.hardswish(x),
    "relu6": lambda m,x: m.nn.functional.relu6(x),
    "softsign": lambda m,x: m.nn.functional.softsign(x),
    "threshold": lambda m,x: m.nn.functional.threshold(x, 0.1, 20.),
    "celu": lambda m,x: m.nn.functional.celu(x),
    "selu": lambda m,x: m.nn.functional.selu(x),
    "normalize": lambda m,x: m.nn.functional.normalize(x, dim=1),
    "cosine_sim": lambda m,x: m.nn.functional.cosine_similarity(x, x, dim=1),
    "glu": lambda m,x: m.nn.functional.glu(x, 2),
    "prelu": lambda m,x: m.nn.functional.prelu(x, m.tensor([0.2])),
    "dropout_train0": lambda m,x: m.nn.functional.dropout(x, 0.0, training=True),
    "sgn": lambda m,x: m.sgn(x),
    "frac": lambda m,x: m.frac(x),
    "trunc": lambda m,x: m.trunc(x),
    "ceil": lambda m,x: m.ceil(x),
    "exp2": lambda m,x: m.exp2(x),
    "log2": lambda m,x: m.log2(x.abs()+1),
    "bitwise_not": lambda m,x: ~(x>0),
    "eq": lambda m,x: x == 0,
    "isclose": lambda m,x: m.isclose(x, x),
    "copysign": lambda m,x: m.copysign(x, -x),
    "heaviside": lambda m,x: m.heaviside(x, x),
    "float_power": lambda m,x: m.float_power(x, 2),
    "true_divide": lambda m,x: m.true_divide(x, 2),
    "rsub": lambda m,x: 1 - x,
    "addcdiv": lambda m,x: m.addcdiv(x, x, x+10, value=0.5),
    "sqrt_abs": lambda m,x: x.abs().sqrt(),
    "bool_to_float": lambda m,x: (x>0).float(),
    # normalisations and shuffles write a new row-major result for a permuted input
    "group_norm": lambda m,x: m.nn.functional.group_norm(x, 3, m.ones(3), m.zeros(3)),
    "group_norm_1": lambda m,x: m.nn.functional.group_norm(x, 1),
    "batch_norm_train": lambda m,x: m.nn.functional.batch_norm(x, None, None, m.ones(3), m.zeros(3), training=True),
    "batch_norm_eval": lambda m,x: m.nn.functional.batch_norm(x, m.zeros(3), m.ones(3), training=False),
    "instance_norm": lambda m,x: m.nn.functional.instance_norm(x),
    "rms_norm": lambda m,x: m.nn.functional.rms_norm(x, [4]),
    "pixel_shuffle": lambda m,x: m.nn.functional.pixel_shuffle(x, 1),
    "one_hot": lambda m,x: m.nn.functional.one_hot((x > 0).long(), 2),
    "diag_embed": lambda m,x: m.diag_embed(x),
}

# On a channels-last input PyTorch's normalisations keep channels-last
# (instance_norm excepted); Lucid's do too.
ON_CHANNELS_LAST = {
    "group_norm": lambda m,x: m.nn.functional.group_norm(x, 3),
    "group_norm_1": lambda m,x: m.nn.functional.group_norm(x, 1, m.ones(3), m.zeros(3)),
    "batch_norm_train": lambda m,x: m.nn.functional.batch_norm(x, None, None, training=True),
    "batch_norm_eval": lambda m,x: m.nn.functional.batch_norm(x, m.zeros(3), m.ones(3), training=False),
    "instance_norm": lambda m,x: m.nn.functional.instance_norm(x),
    "rms_norm": lambda m,x: m.nn.functional.rms_norm(x, [6]),
    "layer_norm": lambda m,x: m.nn.functional.layer_norm(x, [6]),
    "pixel_shuffle": lambda m,x: m.nn.functional.pixel_shuffle(x, 1),
    "softmax": lambda m,x: m.nn.functional.softmax(x, 1),
}


@pytest.mark.parametrize("name", sorted(ON_CHANNELS_LAST))
def test_normalisations_of_a_channels_last_input_have_pytorchs_strides(name):
    a = np.random.default_rng(0).standard_normal((2, 4, 6, 3)).astype(np.float32)  # stored N, H, W, C
    fn = ON_CHANNELS_LAST[name]
    want = fn(torch, torch.tensor(a).permute(0, 3, 1, 2))
    got = fn(lucid, lucid.tensor(a).permute(0, 3, 1, 2))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ON_PERMUTED))
def test_results_of_ops_on_a_permuted_input_have_pytorchs_strides(name):
    a = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    fn = ON_PERMUTED[name]
    want = fn(torch, torch.tensor(a).permute(2, 0, 1))
    got = fn(lucid, lucid.tensor(a).permute(2, 0, 1))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.detach().double().numpy(), want.detach().double().numpy(), rtol=1e-5, atol=1e-5)


def test_basic_indexing_keeps_pytorchs_strides():
    rng = random.Random(7)
    keys = [
        lambda x: x[:],
        lambda x: x[:1],
        lambda x: x[..., ::3],
        lambda x: x[::2, None],
        lambda x: x[1:2, ..., :1],
        lambda x: x[0],
        lambda x: x[None, 0, ::2],
        lambda x: x[..., 0, None],
        lambda x: x[:, None, -1],
    ]
    for _ in range(300):
        xt, xl = _random_layout(rng)
        if xt.ndim == 0:
            continue
        for key in keys:
            try:
                expected = key(xt).stride()
            except IndexError:
                with pytest.raises(IndexError):
                    key(xl)
                continue
            assert key(xl).stride() == expected, (tuple(xt.shape), xt.stride())


def test_clone_of_a_transposed_tensor_is_new_memory_in_the_same_order():
    for m in (torch, lucid):
        x = m.arange(12.0).reshape(3, 4)
        c = x.t().clone()
        assert c.stride() == (1, 4)
        assert c._base is None and not c.is_contiguous()
        c.t().view(-1)  # row-major after the transpose back: a view exists
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            c.view(-1)
        c[0, 0] = 100.0  # new memory: the input is untouched
        assert x[0, 0].item() == 0.0


def test_gradients_flow_through_layout_preserving_copies():
    w = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    grads = []
    for m in (torch, lucid):
        x = m.tensor(w, requires_grad=True)
        y = x.t().clone() * m.arange(1.0, 4.0)
        z = y.double().to(m.float32)
        (z.t().reshape(-1) * m.arange(12.0)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_inplace_write_to_a_saved_layout_preserving_result_is_detected():
    for m in (torch, lucid):
        x = m.ones(3, 4, requires_grad=True)
        y = x.t().exp().clone()
        z = y.sigmoid()  # saves its output
        z.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


def test_channels_last():
    for m in (torch, lucid):
        x = m.arange(48.0).reshape(2, 3, 2, 4)
        y = x.contiguous(memory_format=m.channels_last)
        assert y.stride() == (24, 1, 12, 3)
        assert y.is_contiguous(memory_format=m.channels_last) and not y.is_contiguous()
        assert (y == x).all().item()
        assert y.clone().stride() == (24, 1, 12, 3)
        assert y.contiguous().stride() == (24, 8, 4, 1)
        assert y.contiguous(memory_format=m.channels_last) is y
        assert not m.ones(2, 3).is_contiguous(memory_format=m.channels_last)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            m.ones(2, 3).contiguous(memory_format=m.channels_last)
        v = m.arange(96.0).reshape(2, 3, 2, 2, 4).contiguous(memory_format=m.channels_last_3d)
        assert v.stride() == (48, 1, 24, 12, 3)
        conv = m.nn.Conv2d(3, 4, 3).to(memory_format=m.channels_last)
        assert conv.weight.stride() == (27, 1, 9, 3) and conv.bias.stride() == (1,)
    assert repr(lucid.channels_last) == "torch.channels_last"
    with pytest.raises(TypeError, match="memory_format"):
        lucid.ones(2).clone(memory_format="channels_last")


def test_channels_last_model_trains_as_the_row_major_one():
    def run(fmt):
        lucid.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
        if fmt is not None:
            model = model.to(memory_format=fmt)
        opt = lucid.optim.SGD(model.parameters(), lr=0.1)
        x = lucid.randn(2, 3, 6, 6)
        if fmt is not None:
            x = x.contiguous(memory_format=fmt)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().contiguous().numpy() for p in model.parameters()]

    rows, channels_last = run(None), run(lucid.channels_last)
    np.testing.assert_allclose(channels_last[0], rows[0], rtol=1e-6)
    for a, b in zip(channels_last[1], rows[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class _TransposedCopies(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(lucid.randn(4, 3))

    def forward(self, x):
        wt = self.w.t().clone()       # column-major copy
        h = x @ wt                    # (n, 4)
        g = h.t().double().float()    # layout-preserving casts
        return g.t().reshape(-1, 2).sum(1)


def test_compiled_step_equals_eager_with_layout_preserving_copies():
    def make():
        lucid.manual_seed(1)
        model = _TransposedCopies()
        return model, lucid.optim.Adam(model.parameters(), lr=0.01)

    x = lucid.randn(5, 3)
    target = lucid.randn(10)

    def loss_fn(out, y):
        return ((out - y) ** 2).mean()

    model_e, opt_e = make()
    model_c, opt_c = make()
    step = fused_step(model_c, loss_fn, opt_c)
    for _ in range(3):
        opt_e.zero_grad()
        loss_e = loss_fn(model_e(x), target)
        loss_e.backward()
        opt_e.step()
        loss_c = step(x, target)
        assert loss_c.item() == loss_e.item()
    np.testing.assert_array_equal(model_c.w.detach().numpy(), model_e.w.detach().numpy())


_RNG = np.random.default_rng(0)
_ARRAYS = {k: _RNG.standard_normal(s).astype(np.float32) for k, s in dict(
    x4=(3, 4, 6, 6), x3=(3, 5, 8), m=(5, 7), m2=(7, 6), b1=(3, 5, 7), b2=(3, 7, 4), w=(6, 4, 3, 3), wl=(9, 8),
    q=(2, 3, 5, 8)).items()}


def _t(m, k):
    return m.tensor(_ARRAYS[k])


# Ops whose result PyTorch lays out row-major (batch > 1, where an
# implementation through a permuted GEMM result would not be).
OP_RESULTS = {
    "linear": lambda m, F: F.linear(_t(m, "x3"), _t(m, "wl")),
    "matmul_of_transposes": lambda m, F: _t(m, "m2").t() @ _t(m, "m").t(),
    "bmm": lambda m, F: m.bmm(_t(m, "b1"), _t(m, "b2")),
    "conv2d": lambda m, F: F.conv2d(_t(m, "x4"), _t(m, "w"), padding=1),
    "conv2d_no_bias_groups": lambda m, F: F.conv2d(_t(m, "x4"), _t(m, "w")[:, :2], dilation=2, groups=2),
    "conv2d_bias": lambda m, F: F.conv2d(_t(m, "x4"), _t(m, "w"), m.ones(6)),
    "conv1d": lambda m, F: F.conv1d(_t(m, "x3"), _t(m, "w")[:, :, 0, :2].contiguous()[:, :1].expand(6, 5, 2)),
    "conv_transpose2d": lambda m, F: F.conv_transpose2d(_t(m, "x4"), _t(m, "w").transpose(0, 1).contiguous()),
    "max_pool2d": lambda m, F: F.max_pool2d(_t(m, "x4"), 2),
    "adaptive_avg_pool2d": lambda m, F: F.adaptive_avg_pool2d(_t(m, "x4"), 2),
    "interpolate": lambda m, F: F.interpolate(_t(m, "x4"), scale_factor=2, mode="bilinear"),
    "unfold": lambda m, F: F.unfold(_t(m, "x4"), 3),
    "softmax_dim0": lambda m, F: F.softmax(_t(m, "x3"), 0),
    "group_norm": lambda m, F: F.group_norm(_t(m, "x4"), 2),
    "sdpa": lambda m, F: F.scaled_dot_product_attention(_t(m, "q"), _t(m, "q"), _t(m, "q")),
    "advanced_index_dim1": lambda m, F: _t(m, "x3")[:, [0, 2]],
    "sort_dim1": lambda m, F: m.sort(_t(m, "x3"), 1)[0],
    "cat_dim1": lambda m, F: m.cat([_t(m, "x3"), _t(m, "x3")], 1),
}


@pytest.mark.parametrize("name", sorted(OP_RESULTS))
def test_op_results_have_pytorchs_strides(name):
    want = OP_RESULTS[name](torch, torch.nn.functional)
    got = OP_RESULTS[name](lucid, lucid.nn.functional)
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    got.view(-1)  # as PyTorch's, a view of the whole result exists


# Strided (non-dense) and broadcast inputs: results are dense in the input's
# memory order (TensorIterator, empty_like), as PyTorch's.
STRIDED_VIEWS = {
    "step_last": lambda x: x[:, :, ::2],
    "step_mid": lambda x: x[:, ::2],
    "slice_last": lambda x: x[..., 1:5],
    "permuted_slice": lambda x: x.permute(2, 0, 1)[1:],
    "expand": lambda x: x[:, :1].expand(4, 6, 8),
    "transposed_step": lambda x: x.transpose(0, 2)[::2],
    "select": lambda x: x[:, 2],
    "as_strided": lambda x: x.as_strided((3, 4), (2, 5)),
}
ON_STRIDED = {
    "add": lambda m, x: x + 1, "mul": lambda m, x: x * x, "exp": lambda m, x: x.exp(), "gt": lambda m, x: x > 0,
    "where": lambda m, x: m.where(x > 0, x, 0.), "clone": lambda m, x: x.clone(), "double": lambda m, x: x.double(),
    "sum": lambda m, x: x.sum(-1), "softmax": lambda m, x: x.softmax(-1), "cumsum": lambda m, x: x.cumsum(0),
    "sort": lambda m, x: x.sort(-1)[0], "argsort": lambda m, x: x.argsort(0), "zeros_like": lambda m, x: m.zeros_like(x),
    "add_broadcast": lambda m, x: x + m.ones(x.shape[-1]), "mul_": lambda m, x: x.clone().mul_(2),
    "max": lambda m, x: x.max(-1)[0], "flip": lambda m, x: x.flip(0), "masked_fill": lambda m, x: x.masked_fill(x > 0, 0.),
    "half": lambda m, x: x.half(), "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, x.shape[-1:]),
    "roll": lambda m, x: x.roll(1, 0),
}


@pytest.mark.parametrize("view", sorted(STRIDED_VIEWS))
def test_results_of_ops_on_strided_inputs_have_pytorchs_strides(view):
    a = np.random.default_rng(0).standard_normal((4, 6, 8)).astype(np.float32)
    for name, fn in ON_STRIDED.items():
        want = fn(torch, STRIDED_VIEWS[view](torch.tensor(a)))
        got = fn(lucid, STRIDED_VIEWS[view](lucid.tensor(a)))
        assert got.stride() == want.stride(), name
        np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=1e-3, atol=1e-3, err_msg=name)
