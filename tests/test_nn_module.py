"""nn.Module, Parameter and the containers against torch.nn: registration,
traversal, state_dict keys and loading, modes, dtype moves, repr."""
import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from conftest import assert_close
from test_nn_helpers import copy_weights, torch_state_as_numpy


def both(build):
    """The same architecture built with lucid.nn and torch.nn."""
    return build(nn), build(torch.nn)


# ------------------------------------------------------------------ Parameter
def test_parameter_is_a_tensor_leaf_that_requires_grad():
    t = lucid.randn(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, lucid.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert p._shares_storage(t)
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")
    (p * 2).sum().backward()
    assert_close(p.grad, torch.full((2, 3), 2.0))
    assert tuple(nn.Parameter().shape) == (0,)
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])


def test_parameter_from_non_leaf_drops_history():
    a = lucid.randn(3, requires_grad=True)
    p = nn.Parameter(a * 2)
    assert p.is_leaf and p.grad_fn is None


# --------------------------------------------------------------- registration
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.register_buffer("stat", lucid.zeros(4))
        self.register_buffer("scratch", lucid.ones(2), persistent=False)
        self.scale = nn.Parameter(lucid.ones(1))
        self.blocks = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return self.blocks(self.fc(x) * self.scale + self.stat)


class TNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 4)
        self.register_buffer("stat", torch.zeros(4))
        self.register_buffer("scratch", torch.ones(2), persistent=False)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.blocks = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(4, 2))

    def forward(self, x):
        return self.blocks(self.fc(x) * self.scale + self.stat)


def test_traversal_matches_torch():
    m, t = Net(), TNet()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in m.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in m.named_modules()] == [n for n, _ in t.named_modules()]
    assert list(m.state_dict().keys()) == list(t.state_dict().keys())
    assert len(list(m.parameters())) == 5 and len(list(m.buffers())) == 2
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert len(list(m.modules())) == 5 and len(list(m.children())) == 2
    assert [n for n, _ in m.named_parameters(prefix="model")] == ["model." + n for n, _ in t.named_parameters()]


def test_forward_and_gradients_through_custom_module():
    m, t = Net(), TNet()
    copy_weights(m, t)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    lo, to = m(lucid.tensor(x)), t(torch.tensor(x))
    assert_close(lo, to)
    lo.sum().backward()
    to.sum().backward()
    for (n, lp), (_, tp) in zip(m.named_parameters(), t.named_parameters()):
        assert_close(lp.grad, tp.grad, 1e-5, 1e-6, msg=n)


def test_shared_parameters_are_listed_once_but_saved_under_each_key():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, lin)
    tl = torch.nn.Linear(2, 2)
    t = torch.nn.Sequential(tl, tl)
    assert len(list(m.parameters())) == 2
    assert list(m.state_dict()) == list(t.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    m.load_state_dict(torch_state_as_numpy(t))
    assert_close(lin.weight, tl.weight.detach())


def test_setattr_rules():
    m = nn.Module()
    with pytest.raises(KeyError, match="already exists"):
        m.x = 1
        m.register_buffer("x", lucid.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="Parameter or None"):
        m.register_parameter("w", lucid.zeros(1))
    m.w = nn.Parameter(lucid.zeros(1))
    with pytest.raises(TypeError, match="as parameter 'w'"):
        m.w = lucid.zeros(1)
    m.w = None
    assert "w" in m._parameters and m.w is None
    m.register_buffer("b", lucid.zeros(1))
    with pytest.raises(TypeError, match="as buffer 'b'"):
        m.b = 3
    m.b = lucid.ones(1)
    assert "b" in m._buffers
    m.sub = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="child module 'sub'"):
        m.sub = 5
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        m.nope  # noqa: B018

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(lucid.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_add_module_and_get_submodule():
    m = nn.Module()
    m.add_module("enc", nn.Sequential(nn.Linear(2, 3)))
    assert m.get_submodule("enc.0") is m.enc[0]
    assert m.get_parameter("enc.0.bias") is m.enc[0].bias
    with pytest.raises(TypeError):
        m.add_module("x", 3)
    with pytest.raises(AttributeError):
        m.get_submodule("enc.7")


def test_forward_missing_raises():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


# ------------------------------------------------------------------- modes
def test_train_eval_recurse_and_apply():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2)))
    assert m.training and all(x.training for x in m.modules())
    assert m.eval() is m
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError):
        m.train("yes")
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "Dropout", "BatchNorm1d", "Sequential", "Sequential"]


def test_requires_grad_and_zero_grad():
    m = nn.Linear(3, 2)
    m(lucid.randn(4, 3)).sum().backward()
    assert m.weight.grad is not None
    grad_buffer = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is not None and float(m.weight.grad.abs().sum()) == 0.0
    assert m.weight.grad._same(grad_buffer)  # zeroed in place
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    assert m.requires_grad_(False) is m
    assert not any(p.requires_grad for p in m.parameters())


def test_to_dtype_keeps_parameter_identity():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    w = m[0].weight
    m(lucid.randn(4, 3)).sum().backward()
    m.to(lucid.float64)
    assert m[0].weight is w and w.dtype == lucid.float64 and isinstance(w, nn.Parameter)
    assert w.grad.dtype == lucid.float64
    assert m[1].running_mean.dtype == lucid.float64
    assert m[1].num_batches_tracked.dtype == lucid.int64  # integer buffers keep their dtype
    m.float()
    assert w.dtype == lucid.float32
    assert m.to("cpu") is m
    m.double()
    with pytest.raises(TypeError, match="floating point"):
        m.to(lucid.int32)
    out = m(lucid.randn(4, 3, dtype=lucid.float64))
    assert out.dtype == lucid.float64


def test_deepcopy_clones_tensors():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    c = copy.deepcopy(m)
    assert c[0].weight is not m[0].weight and isinstance(c[0].weight, nn.Parameter)
    assert not c[0].weight._shares_storage(m[0].weight)
    assert_close(c[0].weight, torch.tensor(m[0].weight.detach().numpy()))
    assert not c[1].running_mean._shares_storage(m[1].running_mean)


# ------------------------------------------------------------------ state_dict
def test_state_dict_is_detached_and_shares_storage():
    m = nn.Linear(2, 3)
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert not sd["weight"].requires_grad and sd["weight"]._shares_storage(m.weight)
    assert m.state_dict(keep_vars=True)["weight"] is m.weight
    assert list(m.state_dict(prefix="lin.").keys()) == ["lin.weight", "lin.bias"]


@pytest.mark.parametrize("build", [
    lambda n: n.Sequential(n.Conv2d(1, 4, 3, padding=1), n.BatchNorm2d(4), n.ReLU(), n.MaxPool2d(2), n.Flatten(),
                           n.Linear(4 * 4 * 4, 10)),
    lambda n: n.ModuleDict({"emb": n.Embedding(10, 4, padding_idx=0), "norm": n.LayerNorm(4),
                            "gn": n.GroupNorm(2, 4), "rms": n.RMSNorm(4), "c1": n.Conv1d(4, 4, 3, groups=2)}),
    lambda n: n.ModuleList([n.MultiheadAttention(8, 2), n.MultiheadAttention(8, 2, kdim=4, vdim=6, bias=False),
                            n.MultiheadAttention(8, 2, add_bias_kv=True)]),
    lambda n: n.TransformerEncoderLayer(8, 2, dim_feedforward=16),
    lambda n: n.TransformerEncoder(n.TransformerEncoderLayer(8, 2, dim_feedforward=16, norm_first=True), 2,
                                   norm=n.LayerNorm(8), enable_nested_tensor=False),
    lambda n: n.Sequential(n.BatchNorm1d(3, affine=False), n.BatchNorm1d(3, track_running_stats=False),
                           n.CrossEntropyLoss(weight=(lucid if n is nn else torch).ones(3))),
], ids=["cnn", "embed_norms", "mha", "encoder_layer", "encoder", "bn_variants"])
def test_state_dict_keys_and_shapes_match_torch(build):
    torch.manual_seed(0)
    lm, tm = both(build)
    l_sd, t_sd = lm.state_dict(), tm.state_dict()
    assert list(l_sd.keys()) == list(t_sd.keys())
    for k in t_sd:
        assert tuple(l_sd[k].shape) == tuple(t_sd[k].shape), k
        assert str(l_sd[k].dtype).split(".")[-1] == str(t_sd[k].dtype).split(".")[-1], k
    copy_weights(lm, tm)  # a PyTorch checkpoint (as NumPy) loads strictly
    for k, v in lm.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), t_sd[k].numpy(), err_msg=k)


def test_load_state_dict_reports_missing_and_unexpected_like_torch():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    t = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    sd = torch_state_as_numpy(t)
    del sd["1.bias"]
    sd["extra"] = np.zeros(1, np.float32)
    res = m.load_state_dict(sd, strict=False)
    t_res = t.load_state_dict({k: torch.tensor(v) for k, v in sd.items()}, strict=False)
    assert res.missing_keys == t_res.missing_keys == ["1.bias"]
    assert res.unexpected_keys == t_res.unexpected_keys == ["extra"]
    assert_close(m[0].weight, torch.tensor(sd["0.weight"]))
    ok = m.load_state_dict(m.state_dict())
    assert ok.missing_keys == [] and ok.unexpected_keys == [] and "All keys matched" in repr(ok)


def test_strict_load_failure_changes_nothing():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    good = {k: np.ones_like(v) for k, v in before.items()}
    bad = dict(good)
    del bad["1.bias"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "1.bias"'):
        m.load_state_dict(bad)
    bad = dict(good, extra=np.zeros(1))
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra"'):
        m.load_state_dict(bad)
    bad = dict(good)
    bad["0.weight"] = np.ones((3, 2), np.float32)
    for strict in (True, False):
        with pytest.raises(RuntimeError, match=r"size mismatch for 0.weight: copying a param with shape \[3, 2\] "
                                               r"from checkpoint, the shape in current model is \[2, 2\]"):
            m.load_state_dict(bad, strict=strict)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)
    with pytest.raises(TypeError):
        m.load_state_dict([1, 2])


def test_load_state_dict_copies_in_place_and_casts():
    m = nn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": np.eye(2, dtype=np.float64), "bias": lucid.zeros(2)})
    assert m.weight is w and w.dtype == lucid.float32 and w.requires_grad
    np.testing.assert_array_equal(w.detach().numpy(), np.eye(2))
    m.load_state_dict({"weight": lucid.ones(2, 2), "bias": lucid.ones(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight is not w and m.weight.requires_grad


def test_non_persistent_buffers_not_saved():
    m = Net()
    assert "scratch" not in m.state_dict() and "stat" in m.state_dict()


# ------------------------------------------------------------------ containers
def test_sequential_indexing():
    layers = [nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)]
    s = nn.Sequential(*layers)
    assert len(s) == 3 and s[0] is layers[0] and s[-1] is layers[2]
    sub = s[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == layers[1:]
    with pytest.raises(IndexError):
        s[3]  # noqa: B018
    s.append(nn.Sigmoid())
    assert len(s) == 4
    del s[1]
    assert [type(x).__name__ for x in s] == ["Linear", "Linear", "Sigmoid"]
    assert list(s._modules) == ["0", "1", "2"]
    s.insert(1, nn.Tanh())
    assert type(s[1]).__name__ == "Tanh"
    named = nn.Sequential(OrderedDict([("a", nn.Linear(2, 2)), ("b", nn.ReLU())]))
    assert list(named.state_dict()) == ["a.weight", "a.bias"]
    out = s(lucid.randn(4, 2))
    assert tuple(out.shape) == (4, 1)


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml.insert(0, nn.Identity())
    assert [type(m).__name__ for m in ml][:2] == ["Identity", "Linear"]
    assert isinstance(ml[1:3], nn.ModuleList)
    del ml[0]
    assert list(ml._modules) == [str(i) for i in range(5)]
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    assert md.pop("b").__class__.__name__ == "ReLU" and len(md) == 1
    pl = nn.ParameterList([nn.Parameter(lucid.ones(1)), lucid.zeros(2)])
    assert len(list(pl.parameters())) == 2 and isinstance(pl[1], nn.Parameter)
    pd = nn.ParameterDict({"p": nn.Parameter(lucid.ones(1))})
    assert list(dict(pd.named_parameters())) == ["p"]


# ------------------------------------------------------------------------ repr
@pytest.mark.parametrize("build", [
    lambda n: n.Sequential(n.Conv2d(1, 32, 3, padding=1), n.ReLU(), n.MaxPool2d(2), n.Conv2d(32, 64, 3, 2, bias=False,
                                                                                                groups=2),
                           n.Flatten(), n.Linear(3136, 128), n.Dropout(0.25), n.LeakyReLU(0.2), n.GELU("tanh"),
                           n.Softmax(dim=1), n.LogSoftmax(1), n.SiLU(), n.Tanh(), n.Sigmoid(), n.Identity()),
    lambda n: n.Sequential(n.BatchNorm2d(4), n.BatchNorm1d(3, momentum=None), n.LayerNorm(4), n.GroupNorm(2, 4),
                           n.RMSNorm([2, 3]), n.Embedding(10, 3, padding_idx=0), n.AvgPool2d(2),
                           n.AdaptiveAvgPool2d((1, 1)), n.Conv1d(2, 4, 3, padding="same"), n.Unflatten(1, (2, 5)),
                           n.ReLU(inplace=True)),
    lambda n: n.MultiheadAttention(8, 2),
    lambda n: n.TransformerEncoderLayer(8, 2, dim_feedforward=16),
    lambda n: n.ModuleList([n.Linear(2, 2), n.Linear(2, 2), n.Linear(2, 2), n.ReLU()]),
], ids=["layers", "norms", "mha", "encoder_layer", "module_list"])
def test_repr_matches_torch(build):
    lm, tm = both(build)
    assert repr(lm) == repr(tm)
