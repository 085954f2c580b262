"""lucid.optim's Optimizer contract against torch.optim: rejected inputs,
atomic failures, skipped parameters, state views, schedulers, SparseAdam,
LBFGS, and the hooks a compiled wrapper uses."""
import copy
import re

import numpy as np
import pytest

import lucid
import lucid.optim as lo
from lucid import _C

torch = pytest.importorskip("torch")

from test_optim import (  # noqa: E402
    assert_params_close,
    assert_state_dicts_match,
    make_data,
    make_pair,
    set_grads,
    to_numpy_sd,
)


def lparam(shape=(2, 3), seed=0, dtype=np.float32):
    return lucid.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype), requires_grad=True)


def tparam(shape=(2, 3), seed=0, dtype=np.float32):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype), requires_grad=True)


def snapshot(opt, params):
    return [p.detach().numpy().copy() for p in params], copy.deepcopy(opt.state_dict())


def assert_unchanged(opt, params, snap):
    values, sd = snap
    for p, v in zip(params, values):
        np.testing.assert_array_equal(p.detach().numpy(), v)
    now = opt.state_dict()
    assert now["param_groups"] == sd["param_groups"]
    assert sorted(now["state"]) == sorted(sd["state"])
    for k, s in sd["state"].items():
        assert list(now["state"][k]) == list(s)
        for name, v in s.items():
            np.testing.assert_array_equal(now["state"][k][name], v)


# ------------------------------------------------------------- rejected input
ERRORS = [
    ("SGD", {"lr": -1.0}),
    ("Adam", {"lr": float("nan")}),
    ("SGD", {"momentum": -1.0}),
    ("SGD", {"weight_decay": -0.5}),
    ("SGD", {"nesterov": True}),
    ("SGD", {"nesterov": True, "momentum": 0.9, "dampening": 0.1}),
    ("Adam", {"lr": -1e-2}),
    ("Adam", {"eps": -1.0}),
    ("Adam", {"betas": (1.0, 0.0)}),
    ("Adam", {"betas": (0.0, 1.0)}),
    ("Adam", {"betas": (-0.1, 0.9)}),
    ("Adam", {"weight_decay": -1}),
    ("AdamW", {"lr": -0.1}),
    ("AdamW", {"betas": (0.9, 1.5)}),
    ("RMSprop", {"lr": -1.0}),
    ("RMSprop", {"eps": -1.0}),
    ("RMSprop", {"momentum": -0.5}),
    ("RMSprop", {"weight_decay": -1.0}),
    ("RMSprop", {"alpha": -0.1}),
    ("Adagrad", {"lr": -1.0}),
    ("Adagrad", {"lr_decay": -0.5}),
    ("Adagrad", {"weight_decay": -1.0}),
    ("Adagrad", {"initial_accumulator_value": -1.0}),
    ("Adagrad", {"eps": -1.0}),
    ("Adadelta", {"lr": -1.0}),
    ("Adadelta", {"rho": 1.1}),
    ("Adadelta", {"rho": -0.1}),
    ("Adadelta", {"eps": -1.0}),
    ("Adadelta", {"weight_decay": -1.0}),
    ("Adamax", {"lr": -1.0}),
    ("Adamax", {"eps": -1.0}),
    ("Adamax", {"betas": (1.0, 0.0)}),
    ("Adamax", {"weight_decay": -1.0}),
    ("NAdam", {"lr": -1.0}),
    ("NAdam", {"betas": (1.0, 0.0)}),
    ("NAdam", {"momentum_decay": -0.2}),
    ("NAdam", {"weight_decay": -0.1}),
    ("RAdam", {"lr": -1.0}),
    ("RAdam", {"betas": (1.0, 0.0)}),
    ("RAdam", {"eps": -1e-8}),
    ("RAdam", {"weight_decay": -1}),
    ("ASGD", {"lr": -1.0}),
    ("ASGD", {"weight_decay": -0.5}),
    ("Rprop", {"lr": -1.0}),
    ("Rprop", {"etas": (1.0, 0.5)}),
    ("Rprop", {"etas": (0.0, 1.2)}),
    ("SparseAdam", {"lr": 0.0}),
    ("SparseAdam", {"eps": 0.0}),
    ("SparseAdam", {"betas": (1.0, 0.0)}),
    ("LBFGS", {"lr": -1.0}),
]


def _torch_message(name, kwargs):
    with pytest.raises(ValueError) as info:
        getattr(torch.optim, name)([tparam()], **kwargs)
    return str(info.value)


@pytest.mark.parametrize("name,kwargs", ERRORS, ids=[f"{n}-{k}" for n, k in ERRORS])
def test_rejected_like_torch(name, kwargs):
    msg = _torch_message(name, kwargs)
    with pytest.raises(lucid.InvalidArgument, match=re.escape(msg)):
        getattr(lo, name)([lparam()], **kwargs)
    # the same value in a group added later, or in the only group
    if name == "LBFGS":  # one group only
        return
    opt = getattr(lo, name)([lparam(seed=1)])
    p = lparam(seed=2)
    with pytest.raises(ValueError, match=re.escape(msg)):
        opt.add_param_group({"params": [p], **kwargs})
    assert len(opt.param_groups) == 1


def test_rejected_params_like_torch():
    p = lparam()
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors"):
        lo.SGD(p)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        lo.Adam([])
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        lo.SGD([{"params": [p]}, {"params": [p]}])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        lo.SGD([p * 2])
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        lo.SGD([p, 3.0])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        lo.Adam([p], lr=lucid.tensor([0.1, 0.1]))
    with pytest.raises(ValueError, match="Some param names are missing"):
        lo.SGD([("a", p), lparam(seed=3)])
    with pytest.raises(ValueError, match="all optimizer param groups should be with/without names"):
        lo.SGD([{"params": [("a", p)]}, {"params": [lparam(seed=3)]}])
    with pytest.raises(TypeError, match="ordered collections"):
        lo.SGD([p]).add_param_group({"params": {lparam(seed=3)}})
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        lo.Adam([p], fused=True, foreach=True)
    with pytest.raises(NotImplementedError, match="differentiable"):
        lo.SGD([p], differentiable=True)
    with pytest.raises(TypeError, match="floating-point"):
        lo.SGD([lucid.tensor([1, 2])])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        lo.SGD([p, p])
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        lo.LBFGS([{"params": [p]}, {"params": [lparam(seed=3)]}])


# ------------------------------------------------------------ atomic failures
def test_add_param_group_failure_changes_nothing():
    a, b = lparam(seed=0), lparam(seed=1)
    opt = lo.Adam([a], lr=0.1)
    group = {"params": [b], "lr": -1.0}
    with pytest.raises(lucid.InvalidArgument, match="Invalid learning rate: -1.0"):
        opt.add_param_group(group)
    assert group == {"params": [b], "lr": -1.0}  # the caller's dict is untouched
    assert len(opt.param_groups) == 1 and len(opt._engines) == 1
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a, b]})
    assert len(opt.param_groups) == 1
    opt.add_param_group({"params": [b], "betas": (0.5, 0.6)})
    assert opt.param_groups[1]["betas"] == (0.5, 0.6) and opt.param_groups[1]["lr"] == 0.1


@pytest.mark.parametrize("edit", [
    ("lr", -1.0, "Invalid learning rate: -1.0"),
    ("betas", (0.9, 1.0), "Invalid beta parameter at index 1: 1.0"),
    ("eps", -1e-8, "Invalid epsilon value: -1e-08"),
    ("betas", (0.9,), "must be a pair"),
    ("lr", "fast", None),
])
def test_edited_group_is_checked_and_nothing_changes(edit):
    key, value, msg = edit
    ps = [lparam(seed=i) for i in range(3)]
    opt = lo.Adam([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.01}], lr=0.1)
    for p in ps:
        p.grad = lucid.ones(2, 3)
    opt.step()
    snap = snapshot(opt, ps)
    opt.param_groups[1][key] = value
    if msg is None:
        with pytest.raises(TypeError, match="'lr' must be a number"):
            opt.step()
    else:
        with pytest.raises(ValueError, match=re.escape(msg)):
            opt.step()
    opt.param_groups[1][key] = snap[1]["param_groups"][1][key]
    assert_unchanged(opt, ps, snap)
    opt.step()
    assert opt.state_dict()["state"][0]["step"] == 2


def test_load_state_dict_validates_before_changing_anything():
    ps = [lparam(seed=i) for i in range(2)]
    opt = lo.Adam(ps, lr=0.1, amsgrad=True)
    for p in ps:
        p.grad = lucid.ones(2, 3)
    opt.step()
    good = copy.deepcopy(opt.state_dict())
    opt.step()
    snap = snapshot(opt, ps)

    def bad(mutate):
        sd = copy.deepcopy(good)
        mutate(sd)
        return sd

    cases = [
        (bad(lambda sd: sd["param_groups"].append(dict(sd["param_groups"][0]))), ValueError,
         "different number of parameter groups"),
        (bad(lambda sd: sd["param_groups"][0]["params"].pop()), ValueError,
         "doesn't match the size of optimizer's group"),
        (bad(lambda sd: sd["state"][1].__setitem__("exp_avg", np.zeros((3, 2), np.float32))), ValueError,
         "'exp_avg' has shape [3, 2] but the parameter has shape [2, 3]"),
        (bad(lambda sd: sd["state"][1].pop("exp_avg_sq")), ValueError, "missing entry 'exp_avg_sq'"),
        (bad(lambda sd: sd["state"][1].pop("step")), ValueError, "missing entry 'step'"),
        (bad(lambda sd: sd["state"][1].__setitem__("momentum_buffer", np.zeros((2, 3), np.float32))), ValueError,
         "unexpected entry 'momentum_buffer'"),
        (bad(lambda sd: sd["state"][1].__setitem__("exp_avg", np.zeros((2, 3), np.int32))), TypeError,
         "must be floating point"),
        (bad(lambda sd: sd["state"][0].__setitem__("step", np.float32(-1))), ValueError, "non-negative"),
        (bad(lambda sd: sd["param_groups"][0].__setitem__("lr", -0.5)), ValueError, "Invalid learning rate: -0.5"),
        (bad(lambda sd: sd["state"].__setitem__(7, {})), ValueError, "no parameter group lists"),
    ]
    for sd, exc, msg in cases:
        with pytest.raises(exc, match=re.escape(msg)):
            opt.load_state_dict(sd)
        assert_unchanged(opt, ps, snap)
    opt.load_state_dict(good)
    assert opt.state_dict()["state"][0]["step"] == 1


def test_load_state_dict_keeps_buffer_storage():
    """Loading copies into the live buffers (a compiled step holds them)."""
    p = lparam()
    opt = lo.Adam([p])
    p.grad = lucid.ones(2, 3)
    opt.step()
    before = opt.state[p]["exp_avg"]
    sd = copy.deepcopy(opt.state_dict())
    sd["state"][0]["exp_avg"] = np.full((2, 3), 7.0, np.float32)
    opt.load_state_dict(sd)
    after = opt.state[p]["exp_avg"]
    assert before._shares_storage(after)
    np.testing.assert_array_equal(before.numpy(), np.full((2, 3), 7.0, np.float32))


# ------------------------------------------------------------ skipped params
def test_param_without_grad_gets_no_state_and_no_step():
    a, b = lparam(seed=0), lparam(seed=1)
    opt = lo.NAdam([a, b])
    a.grad = lucid.ones(2, 3)
    for _ in range(3):
        opt.step()
    assert b not in opt.state and opt.state[b] == {}
    assert a in opt.state and len(opt.state) == 1
    assert list(opt.state_dict()["state"]) == [0]
    b.grad = lucid.ones(2, 3)
    opt.step()
    sd = opt.state_dict()["state"]
    assert float(sd[0]["step"]) == 4 and float(sd[1]["step"]) == 1


def test_state_view_shows_live_buffers():
    p = lparam()
    opt = lo.RMSprop([p], momentum=0.9, centered=True)
    p.grad = lucid.ones(2, 3)
    opt.step()
    s = opt.state[p]
    assert list(s) == ["step", "square_avg", "momentum_buffer", "grad_avg"]
    assert s["step"].dtype == lucid.float32 and s["step"].ndim == 0 and s["step"].item() == 1
    opt.step()
    assert s["square_avg"]._shares_storage(opt.state[p]["square_avg"])
    np.testing.assert_array_equal(s["square_avg"].numpy(), opt.state[p]["square_avg"].numpy())
    sd = opt.state_dict()["state"][0]
    assert sd["step"].shape == () and sd["step"].dtype == np.float32


def test_zero_grad():
    p = lparam()
    opt = lo.SGD([p])
    p.grad = lucid.ones(2, 3)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros((2, 3), np.float32))
    opt.zero_grad()
    assert p.grad is None


def test_adagrad_state_exists_from_construction_like_torch():
    init, _ = make_data(np.float64)
    lp = [lucid.tensor(x, requires_grad=True) for x in init]
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    lopt = lo.Adagrad([{"params": lp[:2]}, {"params": lp[2:], "initial_accumulator_value": 9.0}],
                      initial_accumulator_value=0.5)
    topt = torch.optim.Adagrad([{"params": tp[:2]}, {"params": tp[2:], "initial_accumulator_value": 9.0}],
                               initial_accumulator_value=0.5)
    assert_state_dicts_match(lopt.state_dict(), topt.state_dict(), "float64")
    q, tq = lparam((4,), dtype=np.float64), tparam((4,), dtype=np.float64)
    lopt.add_param_group({"params": [q]})
    topt.add_param_group({"params": [tq]})
    assert_state_dicts_match(lopt.state_dict(), topt.state_dict(), "float64")  # added later: lazily
    q.grad, tq.grad = lucid.ones(4, dtype=lucid.float64), torch.ones(4, dtype=torch.float64)
    lopt.step()
    topt.step()
    assert_state_dicts_match(lopt.state_dict(), topt.state_dict(), "float64")


def test_momentum_switched_on_mid_run_matches_torch():
    init, grads = make_data(np.float64)
    lp, tp, lopt, topt = make_pair("SGD", {"lr": 0.1}, init)
    for k in range(5):
        if k == 2:
            for opt in (lopt, topt):
                opt.param_groups[0]["momentum"] = 0.9
        set_grads(lp, grads, k, lucid)
        set_grads(tp, grads, k, torch)
        lopt.step()
        topt.step()
        assert_params_close(lp, tp, "float64", f"step {k}")
    assert_state_dicts_match(lopt.state_dict(), topt.state_dict(), "float64")


def test_tensor_lr_matches_torch():
    init, grads = make_data(np.float32)
    lp = [lucid.tensor(x, requires_grad=True) for x in init]
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    lopt = lo.Adam(lp, lr=lucid.tensor(0.01))
    topt = torch.optim.Adam(tp, lr=torch.tensor(0.01))
    for k in range(4):
        set_grads(lp, grads, k, lucid)
        set_grads(tp, grads, k, torch)
        lopt.step()
        topt.step()
    assert_params_close(lp, tp, "float32")


def test_closure_is_evaluated_with_grad_enabled():
    p = lparam()
    opt = lo.Adam([p], lr=0.1)
    seen = []

    def closure():
        seen.append(lucid.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with lucid.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and isinstance(loss, lucid.Tensor)


# ------------------------------------------------------------------ schedulers
SCHEDULES = [
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "StepLR", {"step_size": 2, "gamma": 0.5}),
    ("Adam", {"lr": 0.01}, "CosineAnnealingLR", {"T_max": 5}),
    ("Adam", {"lr": 0.01}, "OneCycleLR", {"max_lr": 0.05, "total_steps": 8}),  # cycles betas[0]
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "OneCycleLR", {"max_lr": 0.5, "total_steps": 8}),  # cycles momentum
    ("RMSprop", {"lr": 0.01}, "ExponentialLR", {"gamma": 0.8}),
    ("Adagrad", {"lr": 0.1}, "LinearLR", {"start_factor": 0.2, "total_iters": 4}),
]


@pytest.mark.parametrize("sched", SCHEDULES, ids=[f"{s[0]}-{s[2]}" for s in SCHEDULES])
def test_schedulers_drive_lucid_optimizers_like_torch(sched):
    name, cfg, sname, skw = sched
    init, grads = make_data(np.float64)
    lp, tp, lopt, topt = make_pair(name, cfg, init)
    ls = getattr(lo.lr_scheduler, sname)(lopt, **skw)
    ts = getattr(torch.optim.lr_scheduler, sname)(topt, **skw)
    for k in range(7):
        set_grads(lp, grads, k, lucid)
        set_grads(tp, grads, k, torch)
        lopt.step()
        topt.step()
        ls.step()
        ts.step()
        assert ls.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        assert_params_close(lp, tp, "float64", f"step {k}")


def test_reduce_lr_on_plateau_with_lucid_optimizer():
    p, tp = lparam(dtype=np.float64), tparam(dtype=np.float64)
    lopt, topt = lo.SGD([p], lr=0.1), torch.optim.SGD([tp], lr=0.1)
    ls = lo.lr_scheduler.ReduceLROnPlateau(lopt, patience=1)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, patience=1)
    for metric in [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85]:
        ls.step(metric)
        ts.step(metric)
        assert lopt.param_groups[0]["lr"] == pytest.approx(topt.param_groups[0]["lr"])


# ------------------------------------------------------------------ SparseAdam
@pytest.mark.parametrize("cfg", [{}, {"lr": 0.01, "betas": (0.8, 0.9)}, {"maximize": True, "eps": 1e-6}])
def test_sparse_adam_matches_torch_on_sparse_gradients(cfg):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal((6, 3)), rng.standard_normal(4)]
    lp = [lucid.tensor(x, requires_grad=True) for x in init]
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    lopt = lo.SparseAdam([{"params": lp[:1]}, {"params": lp[1:], "lr": 0.02}], **cfg)
    topt = torch.optim.SparseAdam([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.02}], **cfg)
    for k in range(6):
        grads = []
        for x in init:
            g = rng.standard_normal(x.shape)
            g[rng.random(x.shape[0]) < 0.5] = 0  # untouched rows (embedding-like)
            grads.append(g)
        if k == 3:
            grads[1][:] = 0  # an empty sparse gradient: skipped, but the step counts
        for j, g in enumerate(grads):
            lp[j].grad = lucid.tensor(g)
            tp[j].grad = torch.tensor(g).to_sparse()
        lopt.step()
        topt.step()
        assert_params_close(lp, tp, "float64", f"step {k}")
    assert_state_dicts_match(lopt.state_dict(), topt.state_dict(), "float64")
    # round trip through a checkpoint
    lp2 = [lucid.tensor(p.detach().numpy(), requires_grad=True) for p in lp]
    lopt2 = lo.SparseAdam([{"params": lp2[:1]}, {"params": lp2[1:]}], **cfg)
    lopt2.load_state_dict(to_numpy_sd(topt.state_dict()))
    assert_state_dicts_match(lopt2.state_dict(), topt.state_dict(), "float64")


# ------------------------------------------------------------------ LBFGS
def rosenbrock(params):
    x, y = params
    head, tail = x[:-1], x[1:]
    return (100 * (tail - head * head) ** 2 + (1 - head) ** 2).sum() + ((y - 0.5) ** 2).sum() * 3


LBFGS_CONFIGS = [
    {},
    {"lr": 0.5},
    {"history_size": 3, "max_iter": 10},
    {"tolerance_grad": 1e-6},
    {"line_search_fn": "strong_wolfe"},
    {"line_search_fn": "strong_wolfe", "history_size": 2, "max_iter": 7},
]


@pytest.mark.parametrize("cfg", LBFGS_CONFIGS, ids=[str(c) for c in LBFGS_CONFIGS])
def test_lbfgs_matches_torch(cfg):
    init = [np.array([-1.2, 1.0, -0.5, 0.8]), np.array([2.0, -1.0, 0.0])]
    lp = [lucid.tensor(x, requires_grad=True) for x in init]
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    lopt, topt = lo.LBFGS(lp, **cfg), torch.optim.LBFGS(tp, **cfg)

    def closure(opt, params):
        def run():
            opt.zero_grad()
            loss = rosenbrock(params)
            loss.backward()
            return loss
        return run

    for k in range(3):
        ll = lopt.step(closure(lopt, lp))
        tl = topt.step(closure(topt, tp))
        assert float(ll) == pytest.approx(float(tl.detach()), rel=1e-9, abs=1e-12)
        for a, b in zip(lp, tp):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7, atol=1e-9)
    ls, ts = lopt.state[lp[0]], topt.state[tp[0]]
    assert set(ls) == set(ts)
    for key in ("func_evals", "n_iter"):
        assert ls[key] == ts[key]
    np.testing.assert_allclose(ls["d"].numpy(), ts["d"].numpy(), rtol=1e-6, atol=1e-9)
    assert len(ls["old_dirs"]) == len(ts["old_dirs"])


def test_lbfgs_checkpoint_round_trip():
    init = [np.array([-1.2, 1.0, -0.5, 0.8]), np.array([2.0, -1.0, 0.0])]
    ps = [lucid.tensor(x, requires_grad=True) for x in init]
    opt = lo.LBFGS(ps, max_iter=4, line_search_fn="strong_wolfe")

    def closure_for(opt, params):
        def run():
            opt.zero_grad()
            loss = rosenbrock(params)
            loss.backward()
            return loss
        return run

    opt.step(closure_for(opt, ps))
    sd = copy.deepcopy(opt.state_dict())
    ps2 = [lucid.tensor(p.detach().numpy(), requires_grad=True) for p in ps]
    opt2 = lo.LBFGS(ps2, max_iter=4, line_search_fn="strong_wolfe")
    opt2.load_state_dict(sd)
    for _ in range(2):
        opt.step(closure_for(opt, ps))
        opt2.step(closure_for(opt2, ps2))
    for a, b in zip(ps, ps2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_lbfgs_requires_closure_and_known_line_search():
    p = lparam()
    with pytest.raises(ValueError, match="requires a closure"):
        lo.LBFGS([p]).step(None)
    opt = lo.LBFGS([p], line_search_fn="armijo")
    calls = []
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: calls.append(1))
    assert calls == [] and len(opt.state) == 0


# ----------------------------------------------------------- compiled hooks
class _FakeCompiled:
    def __init__(self):
        self.calls = []

    def step(self, closure=None):
        self.calls.append("step")
        return "compiled"

    def state_dict(self):
        self.calls.append("state_dict")
        return {"compiled": True}

    def load_state_dict(self, sd):
        self.calls.append("load_state_dict")


@pytest.mark.parametrize("name", ["Adam", "SparseAdam", "LBFGS"])
def test_compiled_wrapper_takes_over(name):
    p = lparam()
    opt = getattr(lo, name)([p])
    fake = _FakeCompiled()
    opt._compiled = fake
    assert opt.step(lambda: 0.0) == "compiled"
    assert opt.state_dict() == {"compiled": True}
    opt.load_state_dict({})
    assert fake.calls == ["step", "state_dict", "load_state_dict"]
    opt._compiled = None
    assert "state" in opt.state_dict()


def test_subclass_step_is_wrapped():
    class Halving(lo.SGD):
        def step(self, closure=None):
            self.param_groups[0]["lr"] *= 0.5
            return super().step(closure)

    assert getattr(Halving.step, "_lucid_step", False)
    p = lparam()
    opt = Halving([p], lr=1.0)
    p.grad = lucid.ones(2, 3)
    before = p.detach().numpy().copy()
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), before - 0.5)
    assert isinstance(opt, lo.Optimizer)
    assert "Parameter Group 0" in repr(opt)


def test_parameter_replaced_under_its_state_is_an_error():
    a, b = lparam(seed=0), lparam(seed=1)
    opt = lo.Adam([a, b])
    a.grad, b.grad = lucid.ones(2, 3), lucid.ones(2, 3)
    opt.step()
    b.data = lucid.zeros(4, dtype=lucid.float64)
    b.grad = lucid.ones(4, dtype=lucid.float64)
    before = a.detach().numpy().copy()
    with pytest.raises(ValueError, match="parameter 1 is now shape=\\[4\\], dtype=float64"):
        opt.step()
    np.testing.assert_array_equal(a.detach().numpy(), before)
    assert float(opt.state[a]["step"]) == 1


# Cases the semantics probe (python -m tests.fuzz.semantics --family optim)
# found differing from PyTorch; each runs with T = torch and T = lucid
# after the probe's prelude (pic, sparse, state_of).
def _quadratic_steps(opt_line, steps, dtype="float64", tail="result = (p, state_of(opt, [p]), pic(opt.state_dict()))"):
    return "\n".join([
        f"p = T.tensor([1.0, -2.0, 0.5], dtype=T.{dtype}, requires_grad=True)",
        opt_line,
        "def one(k):",
        "    opt.zero_grad()",
        f"    (p * p * T.tensor([1.0, 3.0, 0.5], dtype=T.{dtype}) + p * (k - 1.5)).sum().backward()",
        "    opt.step()",
        *steps,
        tail,
    ])


OPTIM_PROBE_CASES = {
    # the -inf norm is the smallest magnitude (it took the largest)
    "clip_grad_norm_minus_inf": (
        "a = T.tensor([0.0, 2.0], requires_grad=True)\nb = T.tensor([3.0, -1.0], requires_grad=True)\n"
        "(a * T.tensor([0.0, 2.0]) + b * 0).sum().backward()\n(b * T.tensor([3.0, -1.0])).sum().backward()\n"
        "n1 = T.nn.utils.clip_grad_norm_([a, b], 100.0, norm_type=-inf)\n"
        "n2 = T.nn.utils.clip_grad_norm_([b], 0.5, norm_type='-inf')\nresult = (n1, n2, a.grad, b.grad)"),
    # a scheduler fills a Tensor lr in place; initial_lr is a copy
    "tensor_lr_filled_in_place": _quadratic_steps(
        "lr = T.tensor(0.1)\nopt = T.optim.SGD([p], lr=lr)\n"
        "sched = T.optim.lr_scheduler.ChainedScheduler([T.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2),"
        " T.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)])",
        ["for k in range(3):\n    one(k)\n    sched.step()"], "float32",
        "result = (opt.param_groups[0]['lr'] is lr, lr, pic(opt.param_groups[0]['initial_lr']), "
        "pic(sched.get_last_lr()), p)"),
    # a param group added after a schedule of base_lrs was built: torch's strict zip
    "scheduler_after_add_param_group": (
        "p = T.tensor([1.0], requires_grad=True)\nq = T.tensor([2.0], requires_grad=True)\n"
        "opt = T.optim.SGD([p], lr=0.1)\nsched = T.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.9 ** e)\n"
        "opt.add_param_group({'params': [q]})\nsched.step()\nresult = 'stepped'"),
    # load_state_dict casts the scalar state to a float64 parameter's dtype, and the math follows
    "nadam_mu_product_after_load": _quadratic_steps(
        "opt = T.optim.NAdam([p], lr=0.1, momentum_decay=0.1)",
        ["one(0)\none(1)", "opt.load_state_dict(opt.state_dict())", "for k in range(2, 6):\n    one(k)"]),
    "asgd_eta_mu_after_load": _quadratic_steps(
        "opt = T.optim.ASGD([p], lr=0.1, lambd=0.1, t0=1)",
        ["one(0)\none(1)", "opt.load_state_dict(opt.state_dict())", "for k in range(2, 6):\n    one(k)"]),
    # SparseAdam's step is a Python int in the live state too
    "sparse_adam_live_step": (
        "p = T.tensor([1.0, 0.0, -2.0], dtype=T.float64, requires_grad=True)\nopt = T.optim.SparseAdam([p], lr=0.1)\n"
        "for k in range(2):\n    opt.zero_grad()\n    (p * T.tensor([1.0, 0.0, 2.0], dtype=T.float64)).sum().backward()\n"
        "    sparse([p])\n    opt.step()\nresult = (p, state_of(opt, [p]))"),
    # GradScaler: unscale_ before scale(), a step without any gradient
    "scaler_unscale_before_scale": (
        "p = T.tensor([1.0], requires_grad=True)\nopt = T.optim.SGD([p], lr=0.1)\n"
        "scaler = T.amp.GradScaler('cpu')\nscaler.unscale_(opt)\nresult = 'unscaled'"),
    "scaler_step_without_gradients": (
        "p = T.tensor([1.0], requires_grad=True)\nopt = T.optim.SGD([p], lr=0.1)\n"
        "scaler = T.amp.GradScaler('cpu')\nscaler.scale(T.tensor(1.0))\nscaler.step(opt)\nresult = 'stepped'"),
    "scaler_update_without_checks": (
        "p = T.tensor([1.0], requires_grad=True)\nopt = T.optim.SGD([p], lr=0.1)\n"
        "scaler = T.amp.GradScaler('cpu')\nscaler.scale(T.tensor(1.0))\nscaler.update()\nresult = 'updated'"),
    # Tensor betas stay Tensors in param_groups and the checkpoint
    "tensor_betas_kept": _quadratic_steps(
        "opt = T.optim.Adam([p], lr=0.1, betas=(T.tensor(0.5), T.tensor(0.75)))", ["one(0)\none(1)"],
        tail="result = (p, pic(opt.param_groups[0]['betas']), pic(opt.state_dict()['param_groups']))"),
    # LBFGS keeps the type of a Python lr in state['t']
    "lbfgs_int_lr": (
        "p = T.tensor([1.0, -2.0], dtype=T.float64, requires_grad=True)\nopt = T.optim.LBFGS([p], lr=1, max_iter=3)\n"
        "def closure():\n    opt.zero_grad()\n    loss = (p * p * T.tensor([1.0, 3.0], dtype=T.float64)).sum()\n"
        "    loss.backward()\n    return loss\nopt.step(closure)\nresult = (p, type(opt.state[p]['t']).__name__)"),
}


@pytest.mark.parametrize("src", list(OPTIM_PROBE_CASES.values()), ids=list(OPTIM_PROBE_CASES))
def test_optim_probe_findings_match_torch(src):
    from tests.fuzz.semantics import check
    from tests.fuzz.semantics_optim import PRELUDE

    src = PRELUDE + src
    d = check(src, "optim")
    assert d is None, f"{d}\n--- case ---\n{src}"


def test_optim_probe_findings_raise_where_torch_raises():
    """The error cases above must be errors on both sides, not agreeing successes."""
    from tests.fuzz.semantics import run_source
    from tests.fuzz.semantics_optim import PRELUDE

    for key, kind in [("scheduler_after_add_param_group", "ValueError"),
                      ("scaler_unscale_before_scale", "AssertionError"),
                      ("scaler_step_without_gradients", "AssertionError"),
                      ("scaler_update_without_checks", "AssertionError")]:
        got, _ = run_source(PRELUDE + OPTIM_PROBE_CASES[key], lucid)
        assert type(getattr(got, "exc", None)).__name__ == kind, (key, got)
