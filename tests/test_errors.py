"""Error behaviour across the tensor surface: every core error is a
RuntimeError (what PyTorch raises for failed ops) and also its precise
Python kind; messages name the offending shapes, dtypes or devices; a failed
call leaves its operands untouched."""
import numpy as np
import pytest
import torch

import lucid


def test_error_hierarchy():
    assert issubclass(lucid.InvalidArgument, ValueError) and issubclass(lucid.InvalidArgument, RuntimeError)
    assert issubclass(lucid._C.TypeError, TypeError) and issubclass(lucid._C.TypeError, RuntimeError)
    assert issubclass(lucid._C.IndexError, IndexError) and issubclass(lucid._C.IndexError, RuntimeError)


# (lucid call, torch call, expected lucid kind, a regex the message must match)
CASES = [
    ("broadcast", lambda m: m.ones(2, 3) + m.ones(4), lucid.InvalidArgument, r"\[2, 3\].*\[4\]"),
    ("matmul shapes", lambda m: m.ones(2, 3) @ m.ones(4, 5), lucid.InvalidArgument, r"2x3 and 4x5"),
    ("matmul dtypes", lambda m: m.ones(2, 3) @ m.ones(3, 2, dtype=m.float64), lucid._C.TypeError,
     r"float32.*float64"),
    ("bad dim", lambda m: m.ones(2, 3).sum(2), lucid._C.IndexError, r"\[-2, 1\].*2"),
    ("bad reshape", lambda m: m.ones(2, 3).reshape(4, 2), lucid.InvalidArgument, r"\[4, 2\].*6"),
    ("cat shapes", lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), lucid.InvalidArgument, r"3|4"),
    ("index out of range", lambda m: m.ones(2, 3)[2], IndexError, r"index 2 .* size 2"),
    ("gather index", lambda m: m.ones(2, 3).gather(1, m.tensor([[3]])), IndexError, r"3 .* size 3"),
    ("where cond dtype", lambda m: m.where(m.ones(2), m.ones(2), m.ones(2)), lucid._C.TypeError, r"bool"),
    ("requires_grad int", lambda m: m.ones(2, dtype=m.int64).requires_grad_(), RuntimeError, r"floating point"),
    ("item of many", lambda m: m.ones(3).item(), RuntimeError, r"3 elements"),
    ("leaf in-place", lambda m: m.ones(2, requires_grad=True).add_(1), RuntimeError, r"leaf Variable"),
    ("numpy of grad", lambda m: m.ones(2, requires_grad=True).numpy(), RuntimeError, r"requires grad"),
    ("backward non-scalar", lambda m: (m.ones(2, requires_grad=True) * 2).backward(), RuntimeError, r"scalar"),
    # these returned a value where PyTorch raises (a differential probe of the torch namespace found them)
    ("rrelu bounds", lambda m: m.nn.functional.rrelu(m.ones(2), 0.5, 0.1), RuntimeError, r"Lower bound"),
    ("tensordot negative dims", lambda m: m.tensordot(m.ones(2), m.ones(2), -1), RuntimeError, r"dims >= 0"),
    ("triu_indices negative", lambda m: m.triu_indices(3, -1), RuntimeError, r"col must be non-negative"),
    ("tril_indices float", lambda m: m.tril_indices(0.5, 3), TypeError, r"'row' .*must be int"),
    ("cov 3-d", lambda m: m.cov(m.ones(2, 2, 2)), RuntimeError, r"two or fewer dimensions"),
    ("chain_matmul 3-d", lambda m: m.chain_matmul(m.ones(3, 4, 3)), RuntimeError, r"dimension is 3, expected 2"),
    ("one_hot negative", lambda m: m.nn.functional.one_hot(m.tensor([-1, 1])), RuntimeError, r"non-negative"),
    ("median 0-d dim", lambda m: m.median(m.tensor(1.0), 1), IndexError, r"\[-1, 0\]"),
    ("cummax dim", lambda m: m.cummax(m.ones(3), 2), IndexError, r"\[-1, 0\], but got 2"),
    ("logcumsumexp dim", lambda m: m.logcumsumexp(m.ones(4), 5), IndexError, r"but got 5"),
    ("vsplit 1-d", lambda m: m.vsplit(m.ones(4), 2), RuntimeError, r"vsplit requires .* at least 2"),
    ("dsplit 2-d", lambda m: m.dsplit(m.ones(4, 4), 2), RuntimeError, r"dsplit requires .* at least 3"),
    ("masked_select float mask", lambda m: m.masked_select(m.ones(2), m.ones(2)), RuntimeError, r"BoolTensor"),
    ("hsplit uneven", lambda m: m.hsplit(m.ones(2, 4), 3), RuntimeError, r"not divisible by the split_size 3"),
    ("trapezoid x length", lambda m: m.trapezoid(m.ones(3), m.ones(2)), RuntimeError, r"one `x` value"),
    ("celu alpha 0", lambda m: m.nn.functional.celu(m.ones(2), 0.0), RuntimeError, r"alpha cannot be 0"),
    ("channel_shuffle 2-d", lambda m: m.nn.functional.channel_shuffle(m.ones(2, 3), 3), RuntimeError, r"> 2 dims"),
    ("margin_ranking_loss dims", lambda m: m.nn.functional.margin_ranking_loss(m.tensor(1.0), m.ones(4, 1),
                                                                               m.ones(4, 3)), RuntimeError,
     r"same dimension"),
    ("cartesian_prod 0-d", lambda m: m.cartesian_prod(m.ones(2), m.tensor(1.0)), RuntimeError, r"1D vector"),
    ("cross ranks", lambda m: m.linalg.cross(m.ones(2, 3), m.ones(3)), RuntimeError, r"same number of dimensions"),
    ("searchsorted dims", lambda m: m.searchsorted(m.ones(3, 3, 3), m.ones(4)), RuntimeError, r"\[3, 3, 3\].*\[4\]"),
]


@pytest.mark.parametrize("name,fn,kind,match", CASES, ids=[c[0] for c in CASES])
def test_error_kinds_match_torch(name, fn, kind, match):
    with pytest.raises(Exception) as t_err:
        fn(torch)
    with pytest.raises(kind, match=match) as l_err:
        fn(lucid)
    # code catching torch's exception type catches lucid's too
    assert isinstance(l_err.value, type(t_err.value)), (type(l_err.value), type(t_err.value))


def test_unavailable_device():
    assert lucid._C.device_available("cpu")
    if lucid._C.device_available("cuda"):
        pytest.skip("a CUDA backend is present")
    with pytest.raises(RuntimeError, match="cuda"):
        lucid.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="invalid device"):
        lucid.ones(2, device="tpu")
    with pytest.raises(RuntimeError, match="cuda"):
        lucid.ones(2).to("cuda")


@pytest.mark.skipif(not lucid._C.device_available("metal"), reason="needs a second device (Metal)")
def test_device_mismatch():
    a, b = lucid.ones(2), lucid.ones(2, device="metal")
    with pytest.raises(RuntimeError, match="same device.*cpu.*metal|metal.*cpu"):
        a + b


def test_failed_calls_change_nothing():
    x = lucid.tensor([[1.0, 2.0], [3.0, 4.0]])
    snapshot = x.numpy().copy()
    attempts = [
        lambda: x.add_(lucid.ones(3)),
        lambda: x.mul_(lucid.ones(2, 2, 2)),
        lambda: x.copy_(lucid.ones(3, 2)),
        lambda: x.__setitem__((slice(None), 0), lucid.ones(5)),
        lambda: x.__setitem__(lucid.tensor([0, 7]), 1.0),
        lambda: x.scatter_add_(0, lucid.tensor([[0, 9]]), lucid.ones(1, 2)),
        lambda: x.index_add_(0, lucid.tensor([5]), lucid.ones(1, 2)),
        lambda: x.masked_fill_(lucid.tensor([1, 0]), 0.0),
        lambda: x.clamp_(),
    ]
    for attempt in attempts:
        with pytest.raises((RuntimeError, TypeError, IndexError, ValueError)):
            attempt()
        np.testing.assert_array_equal(x.numpy(), snapshot)
    assert x._version == 0


def test_messages_name_the_problem():
    with pytest.raises(RuntimeError) as e:
        lucid.ones(2, 3).expand(4, 4)
    assert "[4, 4]" in str(e.value) and "[2, 3]" in str(e.value)
    with pytest.raises(RuntimeError) as e:
        lucid.stack([lucid.ones(2), lucid.ones(3)])
    assert "[2]" in str(e.value) and "[3]" in str(e.value)
    with pytest.raises(RuntimeError) as e:
        lucid.ones(2, 3).permute(0, 0)
    assert "duplicate" in str(e.value)
    with pytest.raises(RuntimeError) as e:
        lucid.ones(3).index_select(0, lucid.tensor([1.0]))
    assert "float32" in str(e.value)
