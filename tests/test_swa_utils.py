"""lucid.optim.swa_utils and lucid._foreach_* against PyTorch."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as lnn
from lucid.optim import swa_utils


def _pair(seed=0):
    """The same small BN network in both libraries."""
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    m = lnn.Sequential(lnn.Linear(4, 6), lnn.BatchNorm1d(6), lnn.ReLU(), lnn.Linear(6, 3))
    m.load_state_dict({k: lucid.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return t, m


def _state(module):
    return {k: np.asarray(v.detach().cpu().numpy()) for k, v in module.state_dict().items()}


def _assert_same_state(t, m):
    ts, ms = _state(t), _state(m)
    assert ts.keys() == ms.keys()
    for k in ts:
        np.testing.assert_allclose(ms[k], ts[k], rtol=1e-6, atol=1e-7, err_msg=k)


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg_fn", "ema_buffers", "swa_avg_fn"])
def test_averaged_model_follows_torch(kind):
    t, m = _pair()
    kwargs = {
        "swa": ({}, {}),
        "ema_multi": ({"multi_avg_fn": torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)},
                      {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.9)}),
        "ema_avg_fn": ({"avg_fn": torch.optim.swa_utils.get_ema_avg_fn(0.8)}, {"avg_fn": swa_utils.get_ema_avg_fn(0.8)}),
        "ema_buffers": ({"multi_avg_fn": torch.optim.swa_utils.get_ema_multi_avg_fn(0.7), "use_buffers": True},
                        {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.7), "use_buffers": True}),
        "swa_avg_fn": ({"avg_fn": torch.optim.swa_utils.get_swa_avg_fn()}, {"avg_fn": swa_utils.get_swa_avg_fn()}),
    }[kind]
    ta, ma = torch.optim.swa_utils.AveragedModel(t, **kwargs[0]), swa_utils.AveragedModel(m, **kwargs[1])
    topt, mopt = torch.optim.SGD(t.parameters(), lr=0.1), lucid.optim.SGD(m.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.standard_normal((8, 4)).astype(np.float32)
        for model, opt, lib in ((t, topt, torch), (m, mopt, lucid)):
            opt.zero_grad()
            model(lib.tensor(x)).square().mean().backward()
            opt.step()
        ta.update_parameters(t)
        ma.update_parameters(m)
    _assert_same_state(ta, ma)
    assert int(ma.n_averaged) == 4 and ma.n_averaged.dtype == lucid.int64
    x = rng.standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(ma(lucid.tensor(x)).detach().numpy(), ta(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_update_bn_recomputes_running_statistics():
    t, m = _pair(1)
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((6, 4)).astype(np.float32) for _ in range(3)]
    t.eval()
    m.eval()
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], t)
    swa_utils.update_bn([(lucid.tensor(b), 0) for b in batches], m)
    _assert_same_state(t, m)
    assert not m.training and m[1].momentum == t[1].momentum == 0.1


@pytest.mark.parametrize("strategy, anneal_epochs", [("cos", 3), ("linear", 2), ("cos", 0)])
def test_swalr_schedule(strategy, anneal_epochs):
    lrs = []
    for lib, optim in ((torch, torch.optim), (lucid, lucid.optim)):
        params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
        opt = optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=1.0)
        sched = optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs,
                                      anneal_strategy=strategy)
        seen = []
        for _ in range(5):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr())
        state = sched.state_dict()
        assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
        sched2 = optim.swa_utils.SWALR(opt, swa_lr=0.2)
        sched2.load_state_dict(state)
        assert sched2.anneal_func(0.5) == sched.anneal_func(0.5)
        lrs.append(seen)
    np.testing.assert_allclose(lrs[1], lrs[0], rtol=1e-12)


def test_swa_errors_as_torch():
    p = lucid.zeros(2, requires_grad=True)
    opt = lucid.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(opt, 0.05, anneal_strategy="step")
    assert "swa_lr" not in opt.param_groups[0]  # nothing changed by the failed call
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        swa_utils.SWALR(opt, [0.1, 0.2])
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(lnn.Linear(2, 2), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


_UNARY = ["abs", "ceil", "cos", "erf", "exp", "expm1", "floor", "frac", "neg", "round", "sigmoid", "sign", "sin",
          "sqrt", "tanh", "trunc", "log1p", "reciprocal", "rsqrt"]


def _lists(lib, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.uniform(0.2, 2.0, s).astype(np.float32)) for s in [(3,), (2, 4), ()]]


@pytest.mark.parametrize("name", _UNARY)
def test_foreach_unary(name):
    for inplace in (False, True):
        fn = f"_foreach_{name}" + ("_" if inplace and name != "sign" else "")
        got = []
        for lib in (torch, lucid):
            xs = _lists(lib)
            out = getattr(lib, fn)(xs)
            got.append([t.numpy() for t in (xs if out is None else out)])
        for g, w in zip(*got):
            np.testing.assert_allclose(g, w, rtol=1e-6)


_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_max", "clamp_min", "pow"]
# (op, kind of second operand) as torch has them: one tensor for the four
# arithmetic ops, alpha for add/sub.
_BINARY_CASES = ([(n, o) for n in _BINARY for o in ("list", "scalar", "scalars")]
                 + [(n, "tensor") for n in ("add", "sub", "mul", "div")] + [(n, "alpha") for n in ("add", "sub")])


@pytest.mark.parametrize("name, other", _BINARY_CASES)
def test_foreach_binary(name, other):
    for inplace in (False, True):
        got = []
        for lib in (torch, lucid):
            xs, ys = _lists(lib), _lists(lib, 1)
            operand, kw = {"list": (ys, {}), "scalar": (1.5, {}), "scalars": ([0.5, 2.0, 3.0], {}),
                           "tensor": (lib.tensor(0.75), {}), "alpha": (ys, {"alpha": -0.5})}[other]
            out = getattr(lib, f"_foreach_{name}" + ("_" if inplace else ""))(xs, operand, **kw)
            got.append([t.numpy() for t in (xs if out is None else out)])
        for g, w in zip(*got):
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_foreach_pointwise_lerp_norm_copy():
    got = []
    for lib in (torch, lucid):
        xs, ys, zs = _lists(lib), _lists(lib, 1), _lists(lib, 2)
        res = [lib._foreach_addcmul(xs, ys, zs), lib._foreach_addcdiv(xs, ys, zs, 0.5),
               lib._foreach_addcmul(xs, ys, zs, [1.0, -1.0, 2.0]), lib._foreach_addcdiv(xs, ys, zs, lib.tensor([1., 2., 3.])),
               lib._foreach_lerp(xs, ys, 0.25), lib._foreach_lerp(xs, ys, [0.1, 0.5, 0.9]),
               lib._foreach_norm(xs), lib._foreach_norm(xs, 1), lib._foreach_max(xs), lib._foreach_pow(2.0, xs)]
        lib._foreach_addcmul_(xs, ys, zs, 3.0)
        lib._foreach_lerp_(ys, zs, 0.5)
        lib._foreach_copy_(zs, xs)
        res += [xs, ys, zs]
        ws = _lists(lib, 3)
        lib._foreach_zero_(ws)
        res.append(ws)
        got.append([[t.numpy() for t in r] for r in res])
    for g, w in zip(*got):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_foreach_errors_as_torch():
    xs = _lists(lucid)
    for lib, ys in ((torch, _lists(torch)), (lucid, xs)):
        with pytest.raises(RuntimeError, match="Tensor lists must have the same number of tensors, got 3 and 1"):
            lib._foreach_add(ys, ys[:1])
        with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor"):
            lib._foreach_mul([], 2.0)
        with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
            lib._foreach_mul(ys, [1.0])
