"""lucid.optim's element-wise optimizers against torch.optim: trajectories,
state_dict layout and values, checkpoints moving both ways, and the engine's
two instantiations of each update rule (fused loop vs ops) agreeing bitwise.

Every run uses two param groups (the second with its own lr) and three
parameters, one of which has no gradient on some steps (it must be skipped:
no state, no step), so group handling and skipping are exercised everywhere.
"""
import numpy as np
import pytest

import lucid
import lucid.optim as lo
from lucid import _C

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), (2, 3)]
STEPS = 8


def _no_grad(step, j):
    """Parameter 1 misses steps 1 and 4; parameter 2 misses step 0 (its state
    starts late)."""
    return (j == 1 and step in (1, 4)) or (j == 2 and step == 0)


# (optimizer name, constructor kwargs, group-2 lr): configurations after
# torch's own optimizer tests (common_optimizers.py), capturable ones aside.
CONFIGS = {
    "SGD": [
        {"lr": 0.1},
        {"lr": 0.1, "momentum": 0.9},
        {"lr": 0.1, "momentum": 0.9, "dampening": 0.5},
        {"lr": 0.1, "momentum": 0.9, "nesterov": True},
        {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1},
        {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1, "maximize": True},
        {"lr": 0.1, "weight_decay": 0.1, "maximize": True},
    ],
    "Adam": [
        {},
        {"lr": 0.01},
        {"weight_decay": 0.1},
        {"weight_decay": 0.1, "maximize": True},
        {"weight_decay": 0.1, "amsgrad": True},
        {"amsgrad": True, "maximize": True},
        {"weight_decay": 0.1, "decoupled_weight_decay": True},
        {"betas": (0.5, 0.9), "eps": 1e-6},
    ],
    "AdamW": [
        {},
        {"weight_decay": 0.1, "amsgrad": True},
        {"maximize": True},
        {"weight_decay": 0},
    ],
    "RMSprop": [
        {},
        {"weight_decay": 0.1},
        {"centered": True},
        {"momentum": 0.9},
        {"centered": True, "momentum": 0.9, "weight_decay": 0.1, "maximize": True},
        {"alpha": 0.9, "eps": 1e-4},
    ],
    "Adagrad": [
        {},
        {"weight_decay": 0.1},
        {"weight_decay": 0.1, "maximize": True},
        {"lr": 0.1},
        {"initial_accumulator_value": 0.1, "weight_decay": 0.1},
        {"lr": 0.1, "lr_decay": 0.5, "weight_decay": 0.1},
    ],
    "Adadelta": [
        {},
        {"lr": 0.01},
        {"weight_decay": 0.1},
        {"maximize": True},
        {"weight_decay": 0.1, "maximize": True},
        {"rho": 0.95, "weight_decay": 0.9},
    ],
    "Adamax": [
        {},
        {"lr": 0.1},
        {"weight_decay": 0.1},
        {"maximize": True},
        {"weight_decay": 0.1, "maximize": True},
    ],
    "NAdam": [
        {},
        {"lr": 1e-3},
        {"momentum_decay": 6e-3},
        {"weight_decay": 0.1, "momentum_decay": 6e-3},
        {"weight_decay": 0.1, "momentum_decay": 6e-3, "decoupled_weight_decay": True},
        {"weight_decay": 0.1, "maximize": True},
    ],
    "RAdam": [
        {},
        {"lr": 2e-3},
        {"eps": 1e-6},
        {"weight_decay": 0.1},
        {"weight_decay": 0.1, "decoupled_weight_decay": True},
        {"weight_decay": 0.1, "maximize": True},
        {"betas": (0.9, 0.9)},  # the rectified branch from step 3 on
    ],
    "ASGD": [
        {},
        {"lambd": 0.1},
        {"lr": 0.02},
        {"t0": 2},  # averaging starts (mu < 1) within the run
        {"maximize": True},
        {"weight_decay": 0.1},
        {"weight_decay": 0.1, "maximize": True, "t0": 1},
    ],
    "Rprop": [
        {},
        {"lr": 0.1},
        {"etas": (0.3, 1.5), "step_sizes": (1e-3, 0.05)},
        {"maximize": True},
    ],
}
SECOND_LR = {"Adadelta": 0.5, "SGD": 0.05, "Rprop": 0.02}

CASES = [(name, cfg) for name, cfgs in CONFIGS.items() for cfg in cfgs]


def case_id(case):
    name, cfg = case
    return name + ("-" + ",".join(f"{k}={v}" for k, v in cfg.items()) if cfg else "-default")


NP_DTYPES = {"float32": np.float32, "float64": np.float64}
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-9, atol=1e-10)}


def make_data(dtype, steps=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]
    return init, grads


def groups(params, name, lr2=None):
    lr2 = SECOND_LR.get(name, 0.003) if lr2 is None else lr2
    return [{"params": params[:2]}, {"params": params[2:], "lr": lr2}]


def make_pair(name, cfg, init):
    lp = [lucid.tensor(x, requires_grad=True) for x in init]
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    lopt = getattr(lo, name)(groups(lp, name), **cfg)
    topt = getattr(torch.optim, name)(groups(tp, name), **cfg)
    return lp, tp, lopt, topt


def set_grads(params, grads, step, lib):
    for j, p in enumerate(params):
        if _no_grad(step, j):
            p.grad = None
        else:
            p.grad = lib.tensor(grads[step][j])


def to_numpy_sd(sd):
    """A torch state_dict with every tensor as a NumPy array."""
    def conv(v):
        if isinstance(v, torch.Tensor):
            return v.detach().numpy().copy()
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    return {
        "state": {k: {n: conv(v) for n, v in s.items()} for k, s in sd["state"].items()},
        "param_groups": [dict(g) for g in sd["param_groups"]],
    }


def to_torch_sd(sd):
    def conv(v):
        if isinstance(v, np.ndarray):
            return torch.from_numpy(np.array(v))
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    return {
        "state": {k: {n: conv(v) for n, v in s.items()} for k, s in sd["state"].items()},
        "param_groups": [dict(g) for g in sd["param_groups"]],
    }


def assert_params_close(lp, tp, dtype, msg=""):
    for j, (a, b) in enumerate(zip(lp, tp)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL[dtype], err_msg=f"{msg} param {j}")


def assert_state_dicts_match(lsd, tsd, dtype):
    tsd = to_numpy_sd(tsd)
    assert lsd["param_groups"] == tsd["param_groups"]
    assert sorted(lsd["state"]) == sorted(tsd["state"])
    for k, tstate in tsd["state"].items():
        lstate = lsd["state"][k]
        assert list(lstate) == list(tstate), f"state keys of param {k}"
        for name, tv in tstate.items():
            lv = lstate[name]
            if name == "step" and not isinstance(tv, np.ndarray):  # SparseAdam: an int
                assert lv == tv
                continue
            assert isinstance(lv, np.ndarray), (name, type(lv))
            assert lv.shape == tv.shape and lv.dtype == tv.dtype, (name, lv.shape, lv.dtype, tv.shape, tv.dtype)
            np.testing.assert_allclose(lv, tv, **TOL[dtype], err_msg=f"state {k}/{name}")


# --------------------------------------------------------------- trajectories
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trajectory_and_state_dict(case, dtype):
    name, cfg = case
    init, grads = make_data(NP_DTYPES[dtype])
    lp, tp, lopt, topt = make_pair(name, cfg, init)
    for k in range(STEPS):
        set_grads(lp, grads, k, lucid)
        set_grads(tp, grads, k, torch)
        lopt.step()
        topt.step()
        assert_params_close(lp, tp, dtype, f"step {k}")
    assert_state_dicts_match(lopt.state_dict(), topt.state_dict(), dtype)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_checkpoints_move_both_ways(case):
    """torch -> lucid and lucid -> torch after 3 steps, then 4 more steps on
    each side in lockstep with the original."""
    name, cfg = case
    dtype = "float64"
    init, grads = make_data(np.float64)
    lp, tp, lopt, topt = make_pair(name, cfg, init)
    for k in range(3):
        set_grads(lp, grads, k, lucid)
        set_grads(tp, grads, k, torch)
        lopt.step()
        topt.step()
    # torch's checkpoint into a fresh lucid optimizer (built with other
    # hyper-parameters: the checkpoint's groups win, as in torch)
    lp2 = [lucid.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tp]
    lopt2 = getattr(lo, name)(groups(lp2, name, lr2=0.123), **cfg)
    lopt2.load_state_dict(to_numpy_sd(topt.state_dict()))
    # lucid's checkpoint into a fresh torch optimizer
    tp2 = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in lp]
    topt2 = getattr(torch.optim, name)(groups(tp2, name, lr2=0.123), **cfg)
    topt2.load_state_dict(to_torch_sd(lopt.state_dict()))
    for k in range(3, 7):
        for params, lib in ((lp, lucid), (tp, torch), (lp2, lucid), (tp2, torch)):
            set_grads(params, grads, k, lib)
        for opt in (lopt, topt, lopt2, topt2):
            opt.step()
        assert_params_close(lp2, tp, dtype, f"torch->lucid step {k}")
        assert_params_close(lp, tp2, dtype, f"lucid->torch step {k}")
    # a loaded state beside a loaded one: torch's load_state_dict casts the
    # scalar state (NAdam's mu_product, ASGD's eta and mu) to the parameter's dtype
    assert_state_dicts_match(lopt2.state_dict(), topt2.state_dict(), dtype)
    assert_state_dicts_match(lopt.state_dict(), topt.state_dict(), dtype)


# ------------------------------------------------------- fused loop vs ops
def ops_step(opt):
    """One step through the engine's ops path (what a compiled step emits):
    host scalars as one-element tensors, the rule on whole tensors, then the
    host-side bookkeeping."""
    for engine, group in zip(opt._engines, opt.param_groups):
        h = _C.optim.Hyper(group)
        engine.check(h)
        for j, p in enumerate(group["params"]):
            if p.grad is None:
                continue
            engine.init_state(j, h)
            compute = lucid.float32 if p.dtype in (lucid.float16, lucid.bfloat16) else p.dtype
            scalars = [_C.full([], v, compute, p.device) for v in engine.host_scalars(j, h)]
            assert len(scalars) == len(engine.host_scalar_names())
            engine.update_with_ops(j, p, p.grad, scalars, h)
            engine.advance(j, h)


def _bits(t):
    t = t.detach()
    if t.dtype == lucid.bfloat16:
        t = t.float()  # exact
    return t.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_ops_path_equals_fused_loop(case, dtype):
    name, cfg = case
    ldt = getattr(lucid, dtype)
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    a = [lucid.tensor(x, dtype=ldt, requires_grad=True) for x in init]
    b = [lucid.tensor(x, dtype=ldt, requires_grad=True) for x in init]
    oa = getattr(lo, name)(groups(a, name), **cfg)
    ob = getattr(lo, name)(groups(b, name), **cfg)
    for k in range(STEPS):
        for params in (a, b):
            for j, p in enumerate(params):
                p.grad = None if _no_grad(k, j) else lucid.tensor(grads[k][j], dtype=ldt)
        oa.step()
        ops_step(ob)
        for j, (x, y) in enumerate(zip(a, b)):
            np.testing.assert_array_equal(_bits(x), _bits(y), err_msg=f"step {k} param {j}")
    for x, y in zip(a, b):
        sa, sb = oa.state[x], ob.state[y]
        assert list(sa) == list(sb)
        for key in sa:
            np.testing.assert_array_equal(_bits(sa[key]), _bits(sb[key]), err_msg=key)
