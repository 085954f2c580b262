"""Parity tests: lucid.optim.lr_scheduler against torch.optim.lr_scheduler.

Every scenario runs the same schedule on a torch optimizer (torch scheduler)
and on a plain-Python optimizer stand-in (lucid scheduler) and compares the
param groups, ``get_last_lr()`` and ``state_dict()`` after every step.
"""

import copy
import importlib.util
import math
import pickle
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
T = torch.optim.lr_scheduler

_PATH = Path(__file__).resolve().parents[1] / "python" / "lucid" / "optim" / "lr_scheduler.py"
_spec = importlib.util.spec_from_file_location("lucid_optim_lr_scheduler", _PATH)
L = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(L)

REL = 1e-12

pytestmark = pytest.mark.filterwarnings("ignore:Detected call of:UserWarning")


# --------------------------------------------------------------------------
# helpers


class FakeOptimizer:
    """Minimal optimizer interface the schedulers consume."""

    def __init__(self, param_groups, defaults):
        self.param_groups = [dict(g) for g in param_groups]
        self.defaults = dict(defaults)
        self.steps = 0

    def step(self):
        self.steps += 1


_OPTIMIZERS = {
    "sgd": (torch.optim.SGD, {"momentum": 0.9}),
    "sgd_nomom": (torch.optim.SGD, {}),
    "adam": (torch.optim.Adam, {"betas": (0.9, 0.999)}),
    "adagrad": (torch.optim.Adagrad, {}),
}


def torch_optimizer(kind="sgd", lrs=(0.1, 0.02)):
    cls, kwargs = _OPTIMIZERS[kind]
    groups = [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in lrs]
    return cls(groups, lr=lrs[0], **kwargs)


def fake_like(opt):
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    return FakeOptimizer(copy.deepcopy(groups), opt.defaults)


def optimizer_pair(kind="sgd", lrs=(0.1, 0.02)):
    t = torch_optimizer(kind, lrs)
    return t, fake_like(t)


def assert_close(mine, ref, path="value"):
    if isinstance(ref, bool) or ref is None or isinstance(ref, str):
        assert mine == ref, f"{path}: {mine!r} != {ref!r}"
    elif isinstance(ref, (int, float)):
        assert type(mine) is type(ref), f"{path}: {type(mine)} is not {type(ref)}"
        if math.isinf(ref) or math.isnan(ref):
            assert mine == ref or (math.isnan(ref) and math.isnan(mine)), path
        else:
            assert math.isclose(mine, ref, rel_tol=REL, abs_tol=1e-300), (
                f"{path}: {mine!r} != {ref!r}"
            )
    elif isinstance(ref, dict):
        assert set(mine) == set(ref), f"{path}: keys {sorted(mine)} != {sorted(ref)}"
        for k in ref:
            assert_close(mine[k], ref[k], f"{path}[{k!r}]")
    elif isinstance(ref, (list, tuple)):
        assert len(mine) == len(ref), f"{path}: length {len(mine)} != {len(ref)}"
        for i, (a, b) in enumerate(zip(mine, ref)):
            assert_close(a, b, f"{path}[{i}]")
    else:
        assert mine == ref, f"{path}: {mine!r} != {ref!r}"


def snapshot(opt, scheduler):
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    return {"groups": groups, "last_lr": list(scheduler.get_last_lr())}


def assert_same_state(mine, ref, where):
    assert_close(snapshot(*mine), snapshot(*ref), where)


class Runner:
    """Build one scenario on both sides and step both in lockstep."""

    def __init__(self, build, kind="sgd", lrs=(0.1, 0.02)):
        self.build = build
        self.t_opt, self.f_opt = optimizer_pair(kind, lrs)
        self.t = build(T, self.t_opt)
        self.f = build(L, self.f_opt)
        self.check("init")

    def check(self, where):
        assert_same_state((self.f_opt, self.f), (self.t_opt, self.t), where)

    def step(self, *args):
        self.t_opt.step()
        self.f_opt.step()
        self.t.step(*args)
        self.f.step(*args)


def run_steps(runner, steps, metrics=None):
    for i in range(steps):
        args = () if metrics is None else (metrics[i],)
        runner.step(*args)
        runner.check(f"step {i + 1}")


# --------------------------------------------------------------------------
# scenarios: (id, optimizer kind, builder(module, optimizer), steps)


class Scale:
    """Picklable callable object (its __dict__ is saved in state_dicts)."""

    def __init__(self, factor):
        self.factor = factor

    def __call__(self, epoch):
        return self.factor**epoch


SCENARIOS = [
    ("lambda", "sgd", lambda m, o: m.LambdaLR(o, lambda e: 0.95**e), 40),
    ("lambda_list", "sgd", lambda m, o: m.LambdaLR(o, [lambda e: e // 3 + 1, Scale(0.9)]), 40),
    ("multiplicative", "sgd", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95), 40),
    (
        "multiplicative_list",
        "sgd",
        lambda m, o: m.MultiplicativeLR(o, (lambda e: 1.0 - 0.01 * e, Scale(0.99))),
        40,
    ),
    ("step", "sgd", lambda m, o: m.StepLR(o, step_size=3), 40),
    ("step_gamma", "sgd", lambda m, o: m.StepLR(o, step_size=4, gamma=0.5), 40),
    ("multistep", "sgd", lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9]), 30),
    ("multistep_unsorted", "sgd", lambda m, o: m.MultiStepLR(o, [12, 3, 7], gamma=0.3), 30),
    ("constant", "sgd", lambda m, o: m.ConstantLR(o), 30),
    ("constant_custom", "sgd", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=7), 30),
    ("linear", "sgd", lambda m, o: m.LinearLR(o), 30),
    (
        "linear_decay",
        "sgd",
        lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.05, total_iters=20),
        40,
    ),
    (
        "linear_partial",
        "sgd",
        lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=9),
        30,
    ),
    ("exponential", "sgd", lambda m, o: m.ExponentialLR(o, gamma=0.9), 50),
    ("polynomial", "sgd", lambda m, o: m.PolynomialLR(o), 30),
    ("polynomial_pow2", "sgd", lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0), 40),
    ("polynomial_sqrt", "sgd", lambda m, o: m.PolynomialLR(o, total_iters=15, power=0.5), 40),
    ("cosine", "sgd", lambda m, o: m.CosineAnnealingLR(o, T_max=10), 60),
    ("cosine_eta_min", "sgd", lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=1e-3), 60),
    ("warm_restarts", "sgd", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5), 50),
    (
        "warm_restarts_mult",
        "sgd",
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=1e-4),
        60,
    ),
    ("cyclic_triangular", "sgd", lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=5), 50),
    (
        "cyclic_triangular2",
        "sgd",
        lambda m, o: m.CyclicLR(
            o, [0.01, 0.001], [0.1, 0.05], step_size_up=4, step_size_down=7,
            mode="triangular2", base_momentum=[0.8, 0.7], max_momentum=(0.95, 0.9),
        ),
        60,
    ),
    (
        "cyclic_exp_range",
        "sgd",
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.97),
        50,
    ),
    (
        "cyclic_scale_fn_cycle",
        "sgd",
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=4, scale_fn=lambda x: 0.8**x),
        50,
    ),
    (
        "cyclic_scale_fn_iterations",
        "sgd",
        lambda m, o: m.CyclicLR(
            o, 0.01, 0.1, step_size_up=4, scale_fn=Scale(0.99), scale_mode="iterations"
        ),
        50,
    ),
    ("cyclic_adam_betas", "adam", lambda m, o: m.CyclicLR(o, 1e-4, 1e-2, step_size_up=6), 50),
    (
        "cyclic_no_momentum",
        "adagrad",
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=5, cycle_momentum=False),
        40,
    ),
    ("onecycle_cos", "sgd", lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=40), 40),
    (
        "onecycle_linear",
        "sgd",
        lambda m, o: m.OneCycleLR(
            o, max_lr=[0.1, 0.05], total_steps=45, anneal_strategy="linear", pct_start=0.25
        ),
        45,
    ),
    (
        "onecycle_three_phase",
        "sgd",
        lambda m, o: m.OneCycleLR(
            o, max_lr=0.2, epochs=5, steps_per_epoch=8, three_phase=True,
            div_factor=10.0, final_div_factor=100.0,
        ),
        40,
    ),
    (
        "onecycle_adam_betas",
        "adam",
        lambda m, o: m.OneCycleLR(
            o, max_lr=1e-2, total_steps=50, base_momentum=[0.8, 0.85], max_momentum=0.95
        ),
        50,
    ),
    (
        "onecycle_three_phase_linear_adam",
        "adam",
        lambda m, o: m.OneCycleLR(
            o, 1e-2, total_steps=33, three_phase=True, anneal_strategy="linear"
        ),
        33,
    ),
    (
        "onecycle_no_momentum",
        "adagrad",
        lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=30, cycle_momentum=False),
        30,
    ),
    (
        "chained",
        "sgd",
        lambda m, o: m.ChainedScheduler(
            [m.ConstantLR(o, factor=0.1, total_iters=4), m.ExponentialLR(o, gamma=0.9)]
        ),
        40,
    ),
    (
        "chained_explicit_optimizer",
        "sgd",
        lambda m, o: m.ChainedScheduler(
            [m.MultiStepLR(o, [5, 12]), m.LinearLR(o, 0.5, 1.0, 6), m.StepLR(o, 7, 0.5)],
            optimizer=o,
        ),
        40,
    ),
    (
        "sequential_warmup_cosine",
        "sgd",
        lambda m, o: m.SequentialLR(
            o, [m.LinearLR(o, 0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=20)], [5]
        ),
        40,
    ),
    (
        "sequential_three",
        "sgd",
        lambda m, o: m.SequentialLR(
            o,
            [m.ConstantLR(o, 0.2, 3), m.ExponentialLR(o, 0.8), m.StepLR(o, 4, 0.5)],
            milestones=[4, 15],
        ),
        40,
    ),
    (
        "sequential_lambda_polynomial",
        "sgd",
        lambda m, o: m.SequentialLR(
            o, [m.LambdaLR(o, lambda e: (e + 1) / 6), m.PolynomialLR(o, 20, 2.0)], [6]
        ),
        40,
    ),
    (
        "sequential_nested_chained",
        "sgd",
        lambda m, o: m.SequentialLR(
            o,
            [
                m.ChainedScheduler([m.LinearLR(o, 0.2, total_iters=4), m.StepLR(o, 3, 0.5)]),
                m.ExponentialLR(o, 0.95),
            ],
            [10],
        ),
        40,
    ),
]

PLATEAU_METRICS = (
    [10.0, 9.0, 8.5, 8.4999, 8.6, 8.7, 8.5, 8.8, 8.9, 9.0, 7.0, 7.1, 7.2, 7.3]
    + [7.4, 7.5, 6.0, 6.0, 6.0, 6.0, 6.0, 5.9999, 6.1, 6.2, 6.3, 6.4, 6.5, 6.6]
    + [6.7, 6.8, 6.9, 7.0, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9]
)
PLATEAU_METRICS_MAX = [-x for x in PLATEAU_METRICS]

PLATEAU_SCENARIOS = [
    ("plateau_default", lambda m, o: m.ReduceLROnPlateau(o, patience=2), PLATEAU_METRICS),
    (
        "plateau_min_abs_cooldown",
        lambda m, o: m.ReduceLROnPlateau(
            o, factor=0.5, patience=1, threshold=0.05, threshold_mode="abs", cooldown=2
        ),
        PLATEAU_METRICS,
    ),
    (
        "plateau_max_rel",
        lambda m, o: m.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=1),
        PLATEAU_METRICS_MAX,
    ),
    (
        "plateau_max_abs_min_lr_list",
        lambda m, o: m.ReduceLROnPlateau(
            o, "max", 0.5, 0, threshold=0.01, threshold_mode="abs", min_lr=[0.02, 1e-3]
        ),
        PLATEAU_METRICS_MAX,
    ),
    (
        "plateau_min_lr_scalar_eps",
        lambda m, o: m.ReduceLROnPlateau(o, factor=0.5, patience=0, min_lr=0.01, eps=0.004),
        PLATEAU_METRICS,
    ),
]


def _ids(cases):
    return [c[0] for c in cases]


# --------------------------------------------------------------------------
# lr sequences


@pytest.mark.parametrize("name,kind,build,steps", SCENARIOS, ids=_ids(SCENARIOS))
def test_sequence_matches_torch(name, kind, build, steps):
    runner = Runner(build, kind)
    run_steps(runner, steps)
    assert_close(runner.f.state_dict(), runner.t.state_dict(), "state_dict")


@pytest.mark.parametrize("name,build,metrics", PLATEAU_SCENARIOS, ids=_ids(PLATEAU_SCENARIOS))
def test_plateau_matches_torch(name, build, metrics):
    runner = Runner(build)
    run_steps(runner, len(metrics), metrics)
    assert_close(runner.f.state_dict(), runner.t.state_dict(), "state_dict")
    # The schedule must actually have reduced something.
    assert runner.f_opt.param_groups[0]["lr"] < 0.1


def test_plateau_accepts_tensor_like_metrics():
    runner = Runner(lambda m, o: m.ReduceLROnPlateau(o, patience=0))
    for v in [1.0, 2.0, 3.0, 0.5]:
        runner.t.step(torch.tensor(v))
        runner.f.step(torch.tensor(v))
        runner.check(f"metric {v}")


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_cyclic_momentum_is_actually_cycled(kind):
    runner = Runner(lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3), kind)
    key = "betas" if kind == "adam" else "momentum"
    seen = set()
    for i in range(12):
        runner.step()
        runner.check(f"step {i + 1}")
        value = runner.f_opt.param_groups[0][key]
        seen.add(value[0] if kind == "adam" else value)
    assert len(seen) > 3
    if kind == "adam":
        assert runner.f_opt.param_groups[0]["betas"][1] == 0.999


def test_onecycle_rejects_stepping_past_total_steps():
    runner = Runner(lambda m, o: m.OneCycleLR(o, 0.1, total_steps=10))
    run_steps(runner, 10)
    with pytest.raises(ValueError):
        runner.t.step()
    with pytest.raises(ValueError):
        runner.f.step()


# --------------------------------------------------------------------------
# explicit epochs (closed forms, fractional warm-restart epochs)

EPOCHS = [0, 1, 2, 5, 3, 3, 10, 11, 27, 8, 40, 0, 17, 16, 33, 34, 35, 4]

CLOSED_FORM = [
    ("step", lambda m, o: m.StepLR(o, 3, 0.5)),
    ("multistep", lambda m, o: m.MultiStepLR(o, [2, 5, 5, 9])),
    ("constant", lambda m, o: m.ConstantLR(o, 0.5, 6)),
    ("linear", lambda m, o: m.LinearLR(o, 0.2, 0.9, 12)),
    ("exponential", lambda m, o: m.ExponentialLR(o, 0.93)),
    ("polynomial", lambda m, o: m.PolynomialLR(o, 20, 1.5)),
    ("cosine", lambda m, o: m.CosineAnnealingLR(o, 12, 1e-3)),
    ("lambda", lambda m, o: m.LambdaLR(o, lambda e: 1 / (e + 1))),
    ("multiplicative", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.97)),
]


@pytest.mark.parametrize("name,build", CLOSED_FORM, ids=_ids(CLOSED_FORM))
def test_step_with_epoch_matches_torch(name, build):
    runner = Runner(build)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, epoch in enumerate(EPOCHS):
            runner.step(epoch)
            runner.check(f"epoch {epoch} (#{i})")
            runner.step()
            runner.check(f"after epoch {epoch} (#{i})")


def test_closed_form_methods_exist_where_torch_has_them():
    for name in T.__all__:
        assert hasattr(getattr(L, name), "_get_closed_form_lr") == hasattr(
            getattr(T, name), "_get_closed_form_lr"
        ), name


def test_step_with_epoch_warns():
    _, opt = optimizer_pair()
    s = L.StepLR(opt, 3)
    with pytest.warns(UserWarning):
        s.step(4)
    p = L.ReduceLROnPlateau(fake_like(torch_optimizer()))
    with pytest.warns(UserWarning):
        p.step(1.0, 3)


def test_get_lr_outside_step_warns():
    _, opt = optimizer_pair()
    s = L.ExponentialLR(opt, 0.9)
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()


@pytest.mark.parametrize("t_mult", [1, 2, 3])
def test_warm_restarts_fractional_epochs(t_mult):
    runner = Runner(lambda m, o: m.CosineAnnealingWarmRestarts(o, 4, t_mult, 1e-3))
    epochs = [i / 7 for i in range(0, 200, 3)] + [2.5, 0.25, 13.9, 4.0, 1e-3, 47.3, 12]
    for i, epoch in enumerate(epochs):
        runner.step(epoch)
        runner.check(f"epoch {epoch}")
        assert_close(runner.f.state_dict(), runner.t.state_dict(), f"epoch {epoch}")
        if i % 5 == 0:
            runner.step()
            runner.check(f"after epoch {epoch}")


# --------------------------------------------------------------------------
# resuming with last_epoch != -1

RESUMABLE = [
    ("lambda", lambda m, o, le: m.LambdaLR(o, lambda e: 0.9**e, last_epoch=le)),
    ("multiplicative", lambda m, o, le: m.MultiplicativeLR(o, lambda e: 0.9, last_epoch=le)),
    ("step", lambda m, o, le: m.StepLR(o, 3, 0.5, last_epoch=le)),
    ("multistep", lambda m, o, le: m.MultiStepLR(o, [4, 9, 15], last_epoch=le)),
    ("constant", lambda m, o, le: m.ConstantLR(o, 0.25, 10, last_epoch=le)),
    ("linear", lambda m, o, le: m.LinearLR(o, 0.2, 1.0, 12, last_epoch=le)),
    ("exponential", lambda m, o, le: m.ExponentialLR(o, 0.9, last_epoch=le)),
    ("polynomial", lambda m, o, le: m.PolynomialLR(o, 15, 2.0, last_epoch=le)),
    ("cosine", lambda m, o, le: m.CosineAnnealingLR(o, 10, 1e-3, last_epoch=le)),
    ("warm_restarts", lambda m, o, le: m.CosineAnnealingWarmRestarts(o, 4, 2, last_epoch=le)),
    ("cyclic", lambda m, o, le: m.CyclicLR(o, 0.01, 0.1, 4, last_epoch=le)),
    ("cyclic_adam", lambda m, o, le: m.CyclicLR(o, 1e-3, 1e-2, 3, last_epoch=le)),
    ("onecycle", lambda m, o, le: m.OneCycleLR(o, 0.1, total_steps=40, last_epoch=le)),
]


@pytest.mark.parametrize("name,build", RESUMABLE, ids=_ids(RESUMABLE))
def test_resume_with_last_epoch(name, build):
    kind = "adam" if name.endswith("adam") else "sgd"
    runner = Runner(lambda m, o: build(m, o, -1), kind)
    run_steps(runner, 7)
    # Re-create the schedulers on the same optimizers, resuming at epoch 7.
    runner.t = build(T, runner.t_opt, 7)
    runner.f = build(L, runner.f_opt, 7)
    runner.check("resumed")
    run_steps(runner, 25)


def test_resume_without_initial_lr_raises_key_error():
    t_opt, f_opt = optimizer_pair()
    with pytest.raises(KeyError):
        T.StepLR(t_opt, 3, last_epoch=4)
    with pytest.raises(KeyError):
        L.StepLR(f_opt, 3, last_epoch=4)


def test_initial_lr_is_recorded_and_not_overwritten():
    _, opt = optimizer_pair(lrs=(0.1, 0.02))
    L.StepLR(opt, 3)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.02]
    opt.param_groups[0]["lr"] = 0.5
    s = L.ExponentialLR(opt, 0.5)
    assert s.base_lrs == [0.1, 0.02]


# --------------------------------------------------------------------------
# state_dict round trips


def _restore(build, kind, original_opt, state_dict, metrics=None):
    """Fresh optimizer + scheduler, optimizer state copied, scheduler state loaded."""
    _, opt = optimizer_pair(kind)
    scheduler = build(L, opt)
    for group, saved in zip(opt.param_groups, original_opt.param_groups):
        group.clear()
        group.update(copy.deepcopy(saved))
    scheduler.load_state_dict(state_dict)
    return opt, scheduler


ROUND_TRIP = [(n, k, b, s, None) for n, k, b, s in SCENARIOS] + [
    (n, "sgd", b, len(ms), ms) for n, b, ms in PLATEAU_SCENARIOS
]


@pytest.mark.parametrize("name,kind,build,steps,metrics", ROUND_TRIP, ids=_ids(ROUND_TRIP))
def test_state_dict_round_trip(name, kind, build, steps, metrics):
    split = steps // 3
    _, opt = optimizer_pair(kind)
    scheduler = build(L, opt)
    for i in range(split):
        scheduler.step(*(() if metrics is None else (metrics[i],)))

    state = scheduler.state_dict()
    assert "optimizer" not in state
    before = pickle.dumps(state)
    restored_state = pickle.loads(before)
    opt2, scheduler2 = _restore(build, kind, opt, restored_state)
    assert pickle.dumps(restored_state) == pickle.dumps(pickle.loads(before)), (
        "load_state_dict must not modify its argument"
    )

    for i in range(split, steps):
        args = () if metrics is None else (metrics[i],)
        scheduler.step(*args)
        scheduler2.step(*args)
        assert_same_state((opt2, scheduler2), (opt, scheduler), f"step {i + 1}")


def test_state_dict_layout_matches_torch():
    for name, kind, build, steps in SCENARIOS:
        runner = Runner(build, kind)
        run_steps(runner, 5)
        f_state, t_state = runner.f.state_dict(), runner.t.state_dict()
        assert list(f_state) == list(t_state), name
        assert_close(f_state, t_state, f"{name}.state_dict")


def test_lambda_state_dict_saves_callable_objects_only():
    _, opt = optimizer_pair()
    scale = Scale(0.9)
    s = L.LambdaLR(opt, [lambda e: 1.0, scale])
    state = s.state_dict()
    assert state["lr_lambdas"] == [None, {"factor": 0.9}]
    state["lr_lambdas"][1] = {"factor": 0.5}
    s.load_state_dict(state)
    assert scale.factor == 0.5
    assert "lr_lambdas" in state


def test_cyclic_state_dict_custom_scale_fn():
    _, opt = optimizer_pair()
    scale = Scale(0.9)
    s = L.CyclicLR(opt, 0.01, 0.1, scale_fn=scale)
    state = s.state_dict()
    assert state["_scale_fn_custom"] == {"factor": 0.9}
    assert "_scale_fn_ref" not in L.CyclicLR(opt, 0.01, 0.1).state_dict()
    state["_scale_fn_custom"] = {"factor": 0.7}
    s.load_state_dict(state)
    assert scale.factor == 0.7
    s2 = L.CyclicLR(opt, 0.01, 0.1, scale_fn=lambda x: 1.0)
    assert s2.state_dict()["_scale_fn_custom"] is None


# --------------------------------------------------------------------------
# errors

ERRORS = [
    ("not_optimizer_step", lambda m, mk: m.StepLR(object(), 3)),
    ("not_optimizer_cosine", lambda m, mk: m.CosineAnnealingLR(object(), 3)),
    ("not_optimizer_lambda", lambda m, mk: m.LambdaLR(object(), lambda e: 1.0)),
    ("not_optimizer_cyclic", lambda m, mk: m.CyclicLR(object(), 0.1, 1.0)),
    ("not_optimizer_onecycle", lambda m, mk: m.OneCycleLR(object(), 0.1, 10)),
    ("not_optimizer_plateau", lambda m, mk: m.ReduceLROnPlateau(object())),
    ("base_get_lr", lambda m, mk: m.LRScheduler(mk())),
    ("lambda_count", lambda m, mk: m.LambdaLR(mk(), [lambda e: 1.0])),
    ("multiplicative_count", lambda m, mk: m.MultiplicativeLR(mk(), [lambda e: 1.0] * 3)),
    ("multiplicative_not_callable", lambda m, mk: m.MultiplicativeLR(mk(), 0.5)),
    ("multiplicative_list_not_callable", lambda m, mk: m.MultiplicativeLR(mk(), [abs, 2])),
    ("constant_factor_high", lambda m, mk: m.ConstantLR(mk(), factor=1.5)),
    ("constant_factor_negative", lambda m, mk: m.ConstantLR(mk(), factor=-0.1)),
    ("linear_start_zero", lambda m, mk: m.LinearLR(mk(), start_factor=0)),
    ("linear_start_high", lambda m, mk: m.LinearLR(mk(), start_factor=1.2)),
    ("linear_end_negative", lambda m, mk: m.LinearLR(mk(), end_factor=-0.5)),
    ("linear_end_high", lambda m, mk: m.LinearLR(mk(), end_factor=1.5)),
    ("warm_T0_zero", lambda m, mk: m.CosineAnnealingWarmRestarts(mk(), 0)),
    ("warm_T0_float", lambda m, mk: m.CosineAnnealingWarmRestarts(mk(), 2.5)),
    ("warm_Tmult_zero", lambda m, mk: m.CosineAnnealingWarmRestarts(mk(), 2, 0)),
    ("warm_Tmult_float", lambda m, mk: m.CosineAnnealingWarmRestarts(mk(), 2, 1.5)),
    ("warm_eta_min_str", lambda m, mk: m.CosineAnnealingWarmRestarts(mk(), 2, eta_min="0")),
    ("warm_negative_epoch", lambda m, mk: m.CosineAnnealingWarmRestarts(mk(), 2).step(-1)),
    ("cyclic_bad_mode", lambda m, mk: m.CyclicLR(mk(), 0.01, 0.1, mode="square")),
    ("cyclic_no_momentum", lambda m, mk: m.CyclicLR(mk("adagrad"), 0.01, 0.1)),
    ("cyclic_base_lr_len", lambda m, mk: m.CyclicLR(mk(), [0.01], 0.1)),
    ("cyclic_max_lr_len", lambda m, mk: m.CyclicLR(mk(), 0.01, [0.1, 0.2, 0.3])),
    ("cyclic_momentum_len", lambda m, mk: m.CyclicLR(mk(), 0.01, 0.1, base_momentum=[0.8])),
    ("onecycle_no_steps", lambda m, mk: m.OneCycleLR(mk(), 0.1)),
    ("onecycle_epochs_only", lambda m, mk: m.OneCycleLR(mk(), 0.1, epochs=3)),
    ("onecycle_total_zero", lambda m, mk: m.OneCycleLR(mk(), 0.1, total_steps=0)),
    ("onecycle_total_float", lambda m, mk: m.OneCycleLR(mk(), 0.1, total_steps=10.0)),
    ("onecycle_epochs_zero", lambda m, mk: m.OneCycleLR(mk(), 0.1, None, 0, 3)),
    ("onecycle_epochs_float", lambda m, mk: m.OneCycleLR(mk(), 0.1, None, 2.0, 3)),
    ("onecycle_spe_negative", lambda m, mk: m.OneCycleLR(mk(), 0.1, None, 2, -1)),
    ("onecycle_pct_high", lambda m, mk: m.OneCycleLR(mk(), 0.1, 10, pct_start=1.5)),
    ("onecycle_pct_int", lambda m, mk: m.OneCycleLR(mk(), 0.1, 10, pct_start=1)),
    ("onecycle_anneal", lambda m, mk: m.OneCycleLR(mk(), 0.1, 10, anneal_strategy="exp")),
    ("onecycle_max_lr_len", lambda m, mk: m.OneCycleLR(mk(), [0.1], 10)),
    ("onecycle_no_momentum", lambda m, mk: m.OneCycleLR(mk("adagrad"), 0.1, 10)),
    ("onecycle_momentum_len", lambda m, mk: m.OneCycleLR(mk(), 0.1, 10, max_momentum=[0.9])),
    ("plateau_factor", lambda m, mk: m.ReduceLROnPlateau(mk(), factor=1.0)),
    ("plateau_mode", lambda m, mk: m.ReduceLROnPlateau(mk(), mode="avg")),
    ("plateau_threshold_mode", lambda m, mk: m.ReduceLROnPlateau(mk(), threshold_mode="pct")),
    ("plateau_min_lr_len", lambda m, mk: m.ReduceLROnPlateau(mk(), min_lr=[0.1, 0.2, 0.3])),
    ("chained_empty", lambda m, mk: m.ChainedScheduler([])),
    ("chained_no_optimizer_attr", lambda m, mk: m.ChainedScheduler([m.StepLR(mk(), 2), 3])),
    (
        "chained_plateau",
        lambda m, mk: (lambda o: m.ChainedScheduler([m.ReduceLROnPlateau(o)], o))(mk()),
    ),
    (
        "chained_other_optimizer",
        lambda m, mk: m.ChainedScheduler([m.StepLR(mk(), 2), m.StepLR(mk(), 3)]),
    ),
    ("sequential_empty", lambda m, mk: m.SequentialLR(mk(), [], [])),
    (
        "sequential_milestones",
        lambda m, mk: (lambda o: m.SequentialLR(o, [m.StepLR(o, 2), m.StepLR(o, 3)], [])
        )(mk()),
    ),
    (
        "sequential_other_optimizer",
        lambda m, mk: (lambda o: m.SequentialLR(o, [m.StepLR(mk(), 2)], []))(mk()),
    ),
    (
        "sequential_plateau",
        lambda m, mk: (lambda o: m.SequentialLR(o, [m.ReduceLROnPlateau(o)], []))(mk()),
    ),
    (
        "sequential_no_optimizer_attr",
        lambda m, mk: (lambda o: m.SequentialLR(o, [m.StepLR(o, 2), "x"], [3]))(mk()),
    ),
]


def _make_torch(kind="sgd"):
    return torch_optimizer(kind)


def _make_fake(kind="sgd"):
    return fake_like(torch_optimizer(kind))


@pytest.mark.parametrize("name,build", ERRORS, ids=_ids(ERRORS))
def test_errors_match_torch(name, build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as t_err:
            build(T, _make_torch)
        with pytest.raises(Exception) as f_err:
            build(L, _make_fake)
    assert type(f_err.value) is type(t_err.value), (f_err.value, t_err.value)


def test_plateau_added_param_group():
    t_opt, f_opt = optimizer_pair()
    t = T.ReduceLROnPlateau(t_opt, patience=0, min_lr=[0.0, 0.0])
    f = L.ReduceLROnPlateau(f_opt, patience=0, min_lr=[0.0, 0.0])
    t_opt.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1))], "lr": 0.3})
    f_opt.param_groups.append({"lr": 0.3})
    for s in (t, f):
        s.step(1.0)
    with pytest.raises(RuntimeError):
        t.step(2.0)
    with pytest.raises(RuntimeError):
        f.step(2.0)

    # A scalar min_lr adapts to the new group count.
    t_opt, f_opt = optimizer_pair()
    runner_t = T.ReduceLROnPlateau(t_opt, patience=0, min_lr=0.001)
    runner_f = L.ReduceLROnPlateau(f_opt, patience=0, min_lr=0.001)
    t_opt.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1))], "lr": 0.3})
    f_opt.param_groups.append({"lr": 0.3})
    for metric in [1.0, 2.0, 3.0]:
        runner_t.step(metric)
        runner_f.step(metric)
        assert_close(runner_f.get_last_lr(), runner_t.get_last_lr())
    assert runner_f.min_lrs == [0.001] * 3


def test_standalone_optimizer_check():
    class NotAnOptimizer:
        param_groups = ({"lr": 0.1},)

    with pytest.raises(TypeError, match="NotAnOptimizer is not an Optimizer"):
        L.StepLR(NotAnOptimizer(), 2)


def test_public_names():
    assert set(T.__all__) <= set(L.__all__)
    assert issubclass(L._LRScheduler, L.LRScheduler)
    assert L._LRScheduler.__name__ == "_LRScheduler"
    for name in T.__all__:
        assert issubclass(getattr(L, name), L.LRScheduler), name


def test_optimizer_type_check_inside_package(tmp_path, monkeypatch):
    """Inside a package providing ``optimizer.Optimizer``, only its instances pass."""
    pkg = tmp_path / "lrs_pkg_under_test"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "optimizer.py").write_text(
        "class Optimizer:\n"
        "    def __init__(self, groups):\n"
        "        self.param_groups = groups\n"
        "        self.defaults = {}\n"
        "    def step(self):\n"
        "        pass\n"
    )
    (pkg / "lr_scheduler.py").write_text(_PATH.read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("lrs_pkg_under_test.lr_scheduler")
    optimizer_cls = importlib.import_module("lrs_pkg_under_test.optimizer").Optimizer
    try:
        s = module.StepLR(optimizer_cls([{"lr": 0.1}]), 2)
        s.step()
        s.step()
        assert s.get_last_lr() == [pytest.approx(0.01)]
        with pytest.raises(TypeError, match="FakeOptimizer is not an Optimizer"):
            module.StepLR(FakeOptimizer([{"lr": 0.1}], {}), 2)
    finally:
        for name in [n for n in sys.modules if n.startswith("lrs_pkg_under_test")]:
            del sys.modules[name]
