"""Compiled steps create optimizer state as PyTorch does: at the first step
taken, from that step's hyper-parameters. A step the GradScaler skips (its
gradients overflow) creates none, whether it is the call that traces or a
later call that retraces; a checkpoint taken before the first step taken
holds none. Compiled Lucid is checked against eager Lucid bit for bit, and
both against PyTorch."""
import numpy as np
import pytest

import lucid
import lucid.nn as lnn
import lucid.optim as lo
from lucid.amp import GradScaler
from lucid.compile import compile_optimizer, fused_step, train_step

torch = pytest.importorskip("torch")

# Every optimizer with state (SGD only with momentum), with initial state
# that depends on a hyper-parameter where the kind has one (Rprop's
# step_size = lr, ASGD's eta = lr, Adagrad's sum = the constructor's
# initial_accumulator_value).
KINDS = [
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.2)),
    ("Adadelta", dict(lr=1.0)),
    ("ASGD", dict(lr=0.01, t0=1)),
    ("Rprop", dict(lr=0.01)),
    ("SparseAdam", dict(lr=0.01)),
]
KIND_IDS = [f"{n}-{i}" for i, (n, _) in enumerate(KINDS)]

HUGE = 1e36  # a target this large overflows the scaled gradients: the GradScaler skips the step

# Steps as (batch rows, skipped, lr set before the step or None). A 3-row
# batch also reaches the parameter `extra`, so its first such call retraces.
SCHEDULES = {
    "first_skipped": [(2, True, None), (2, False, None), (3, False, None), (2, False, None)],
    "first_two_skipped": [(2, True, None), (2, True, None), (2, False, None), (3, False, None)],
    "retrace_skipped": [(2, False, None), (3, True, None), (2, False, None), (3, False, None)],
    "both_traces_skipped": [(3, True, None), (2, True, None), (3, False, None), (2, False, None)],
    # the lr of the traced (skipped) call is not the lr of the first step taken
    "lr_changes": [(2, True, 0.02), (2, False, 0.005), (3, True, 0.001), (3, False, 0.003), (2, False, None)],
}

MISSES = {"first_skipped": 3, "first_two_skipped": 2, "retrace_skipped": 3, "both_traces_skipped": 2, "lr_changes": 3}


def make_model(lib, nn):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.w = nn.Parameter(lib.tensor(rng.standard_normal((3, 4)).astype(np.float32)))
            self.b = nn.Parameter(lib.tensor(rng.standard_normal(4).astype(np.float32)))
            self.extra = nn.Parameter(lib.tensor(rng.standard_normal(4).astype(np.float32)))

        def forward(self, x):
            out = x @ self.w + self.b
            if x.shape[0] == 3:  # a Python branch: the trace of a 3-row batch uses `extra`
                out = out * self.extra
            return out

    return Model()


def loss_fn(out, y):
    return (out * y).sum()


def make_optimizer(module, model, name, kwargs):
    """Two groups; `extra` is added with add_param_group (so Adagrad creates
    its state lazily, from the constructor's initial_accumulator_value, not
    the group's)."""
    opt = getattr(module, name)([{"params": [model.w]}, {"params": [model.b], "lr": kwargs["lr"] * 0.5}], **kwargs)
    extra = {"params": [model.extra]}
    if name == "Adagrad":
        extra["initial_accumulator_value"] = 0.7
    opt.add_param_group(extra)
    return opt


def batch(step, rows, skipped):
    rng = np.random.default_rng(100 + step)
    x = rng.standard_normal((rows, 3)).astype(np.float32)
    y = np.full((rows, 4), HUGE, np.float32) if skipped else rng.standard_normal((rows, 4)).astype(np.float32)
    return x, y


def scaler_args():
    return dict(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)


def as_array(v):
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    return np.asarray(v)


def state_of(opt):
    return {k: {n: as_array(v) for n, v in s.items()} for k, s in opt.state_dict()["state"].items()}


def assert_same_state(got, want, what):
    """Compiled vs eager Lucid: the same entries, in the same order, the same bits."""
    assert list(got) == list(want), f"{what}: parameters with state {list(got)} vs {list(want)}"
    for k in want:
        assert list(got[k]) == list(want[k]), f"{what}: state[{k}] keys {list(got[k])} vs {list(want[k])}"
        for n in want[k]:
            assert got[k][n].dtype == want[k][n].dtype, f"{what}: state[{k}][{n}] dtype"
            np.testing.assert_array_equal(got[k][n], want[k][n], err_msg=f"{what}: state[{k}][{n}]")


def assert_state_like_torch(got, want, what):
    """Lucid vs PyTorch: the same layout, values to float32 rounding."""
    assert sorted(got) == sorted(want), f"{what}: parameters with state {sorted(got)} vs torch {sorted(want)}"
    for k in want:
        assert list(got[k]) == list(want[k]), f"{what}: state[{k}] keys {list(got[k])} vs torch {list(want[k])}"
        for n in want[k]:
            g, w = got[k][n], want[k][n]
            assert g.shape == w.shape, f"{what}: state[{k}][{n}] shape {g.shape} vs torch {w.shape}"
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{what}: state[{k}][{n}] vs torch")


def torch_step(model, opt, scaler, x, y, name, set_to_none=True):
    opt.zero_grad(set_to_none)
    loss = loss_fn(model(torch.tensor(x)), torch.tensor(y))
    scaler.scale(loss).backward()
    if name == "SparseAdam":  # PyTorch's SparseAdam takes sparse gradients only
        for p in model.parameters():
            if p.grad is not None:
                p.grad = p.grad.to_sparse()
    scaler.step(opt)
    scaler.update()


def lucid_step(model, opt, scaler, x, y, set_to_none=True):
    opt.zero_grad(set_to_none)
    loss = loss_fn(model(lucid.tensor(x)), lucid.tensor(y))
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss


def compiled_runner(front, model, opt, scaler):
    """One compiled training step per call: (x, y) -> loss."""
    if front == "fused_step":
        step = fused_step(model, loss_fn, opt, grad_scaler=scaler)
        return lambda x, y: step(lucid.tensor(x), lucid.tensor(y)), step
    if front == "train_step":
        step = train_step(lambda x, y: loss_fn(model(x), y), opt, grad_scaler=scaler, model=model)
        return lambda x, y: step(lucid.tensor(x), lucid.tensor(y)), step
    assert front == "compile_optimizer"
    copt = compile_optimizer(opt)
    # zero_grad(set_to_none=False): a parameter a batch does not reach keeps a zero gradient
    return lambda x, y: lucid_step(model, copt, scaler, x, y, set_to_none=False), copt


def set_lr(opt, lr):
    for i, g in enumerate(opt.param_groups):
        g["lr"] = lr * (0.5 if i == 1 else 1.0)


def run_three(name, kwargs, front, schedule):
    """Runs the schedule compiled, eager and in PyTorch, comparing after each step."""
    model_c, model_e, model_t = make_model(lucid, lnn), make_model(lucid, lnn), make_model(torch, torch.nn)
    opt_c = make_optimizer(lo, model_c, name, kwargs)
    opt_e = make_optimizer(lo, model_e, name, kwargs)
    opt_t = make_optimizer(torch.optim, model_t, name, kwargs)
    sc_c, sc_e = GradScaler(**scaler_args()), GradScaler(**scaler_args())
    sc_t = torch.amp.GradScaler("cpu", **scaler_args())
    run, step = compiled_runner(front, model_c, opt_c, sc_c)
    set_to_none = front != "compile_optimizer"
    for s, (rows, skipped, lr) in enumerate(schedule):
        if lr is not None:
            for opt in (opt_c, opt_e, opt_t):
                set_lr(opt, lr)
        x, y = batch(s, rows, skipped)
        got = run(x, y)
        want = lucid_step(model_e, opt_e, sc_e, x, y, set_to_none)
        torch_step(model_t, opt_t, sc_t, x, y, name, set_to_none)
        what = f"{name} {front} step {s}"
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy(), err_msg=f"{what}: loss")
        assert sc_c.get_scale() == sc_e.get_scale() == sc_t.get_scale(), what
        for (n, a), b, t in zip(model_e.named_parameters(), model_c.parameters(), model_t.parameters()):
            np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy(), err_msg=f"{what}: {n}")
            np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{what}: {n} vs torch")
        sd_c, sd_e, sd_t = state_of(opt_c), state_of(opt_e), state_of(opt_t)
        assert_same_state(sd_c, sd_e, what)
        assert_state_like_torch(sd_e, sd_t, what)
    return step


@pytest.mark.parametrize("schedule", list(SCHEDULES))
@pytest.mark.parametrize("name,kwargs", KINDS, ids=KIND_IDS)
def test_fused_step_creates_state_at_the_first_step_taken(name, kwargs, schedule):
    step = run_three(name, kwargs, "fused_step", SCHEDULES[schedule])
    # Creating the state retraces nothing: a trace per new batch shape, and
    # one more for a 2-row batch after the first 3-row trace (which bound
    # buffers for `extra`, part of every trace's signature).
    assert step.cache_info().misses == MISSES[schedule]


@pytest.mark.parametrize("front", ["train_step", "compile_optimizer"])
@pytest.mark.parametrize("schedule", ["first_two_skipped", "retrace_skipped", "lr_changes"])
@pytest.mark.parametrize("name,kwargs", KINDS, ids=KIND_IDS)
def test_other_compiled_steps_create_state_at_the_first_step_taken(name, kwargs, schedule, front):
    run_three(name, kwargs, front, SCHEDULES[schedule])


@pytest.mark.parametrize("name,kwargs", [k for k in KINDS if k[0] in ("Adam", "SGD", "Rprop", "ASGD", "NAdam",
                                                                      "Adagrad")],
                         ids=[i for i, k in zip(KIND_IDS, KINDS) if k[0] in ("Adam", "SGD", "Rprop", "ASGD", "NAdam",
                                                                                "Adagrad")])
def test_checkpoints_before_the_first_step_taken(name, kwargs):
    """A checkpoint taken after skipped steps holds no state for the
    parameters no step has reached; it moves between compiled and eager
    optimizers, and loading it (or an empty state) costs no retrace."""
    model_c, model_e = make_model(lucid, lnn), make_model(lucid, lnn)
    opt_c, opt_e = make_optimizer(lo, model_c, name, kwargs), make_optimizer(lo, model_e, name, kwargs)
    sc_c, sc_e = GradScaler(**scaler_args()), GradScaler(**scaler_args())
    step = fused_step(model_c, loss_fn, opt_c, grad_scaler=sc_c)
    x, y = batch(0, 2, True)
    step(lucid.tensor(x), lucid.tensor(y))
    lucid_step(model_e, opt_e, sc_e, x, y)
    sd = opt_c.state_dict()
    # Adagrad's constructor made w's and b's state; `extra` has none
    assert sorted(sd["state"]) == ([0, 1] if name == "Adagrad" else [])
    assert_same_state(state_of(opt_c), state_of(opt_e), "after the skipped step")
    # the compiled checkpoint loads into a fresh eager optimizer, and the
    # eager one into the compiled optimizer, without a retrace
    model_f = make_model(lucid, lnn)
    opt_f = make_optimizer(lo, model_f, name, kwargs)
    opt_f.load_state_dict(sd)
    opt_c.load_state_dict(opt_e.state_dict())
    sc_f = GradScaler(**scaler_args())
    sc_f.load_state_dict(sc_e.state_dict())
    set_lr(opt_c, kwargs["lr"] * 0.3)  # the first step taken starts from this lr
    set_lr(opt_e, kwargs["lr"] * 0.3)
    set_lr(opt_f, kwargs["lr"] * 0.3)
    for s in (1, 2):
        x, y = batch(s, 2, False)
        got = step(lucid.tensor(x), lucid.tensor(y))
        want = lucid_step(model_e, opt_e, sc_e, x, y)
        lucid_step(model_f, opt_f, sc_f, x, y)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        assert_same_state(state_of(opt_c), state_of(opt_e), f"step {s}")
        assert_same_state(state_of(opt_f), state_of(opt_e), f"step {s}, the fresh eager optimizer")
        for a, b in zip(model_e.parameters(), model_c.parameters()):
            np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())
    assert step.cache_info().misses == 1
    # an eager checkpoint with state moves into the compiled run and back
    opt_c.load_state_dict(opt_e.state_dict())
    x, y = batch(3, 2, False)
    step(lucid.tensor(x), lucid.tensor(y))
    lucid_step(model_e, opt_e, sc_e, x, y)
    assert_same_state(state_of(opt_c), state_of(opt_e), "after loading the eager state")
    assert step.cache_info().misses == 1


def test_a_failed_call_that_traced_leaves_no_state_and_the_next_one_creates_it():
    """A run that fails after its trace reserved the buffers: no state; the
    next call, with another lr, creates Rprop's step_size from its own lr."""
    model_c, model_e = make_model(lucid, lnn), make_model(lucid, lnn)
    opt_c = make_optimizer(lo, model_c, "Rprop", dict(lr=0.01))
    opt_e = make_optimizer(lo, model_e, "Rprop", dict(lr=0.01))

    def bad_loss(out, y):
        return lucid.nn.functional.cross_entropy(out, y)

    step = fused_step(model_c, bad_loss, opt_c)
    x = lucid.tensor(batch(0, 2, False)[0])
    with pytest.raises(IndexError):
        step(x, lucid.tensor([0, 7]))  # a target out of range fails inside the run
    assert opt_c.state_dict()["state"] == {} and len(opt_c.state) == 0
    set_lr(opt_c, 0.004)
    set_lr(opt_e, 0.004)
    y = lucid.tensor([0, 3])
    step(x, y)
    opt_e.zero_grad()
    bad_loss(model_e(x), y).backward()
    opt_e.step()
    assert_same_state(state_of(opt_c), state_of(opt_e), "after the first step taken")


@pytest.mark.parametrize("name,kwargs,raised", [
    ("SGD", dict(lr=0.1), dict(momentum=0.9)),
    ("RMSprop", dict(lr=0.01), dict(momentum=0.5)),
    ("RMSprop", dict(lr=0.01), dict(centered=True)),
], ids=["SGD-momentum", "RMSprop-momentum", "RMSprop-centered"])
def test_a_buffer_a_raised_flag_needs_is_created_at_the_first_step_taken(name, kwargs, raised):
    """Raising momentum (or centered) mid-run retraces, and the buffer the
    new flags need is created by the first step taken, not by the skipped
    call that retraced. PyTorch's RMSprop cannot take the edit (its state
    lacks the buffer: a KeyError), so RMSprop is compared with eager Lucid
    only; SGD with PyTorch too."""
    with_torch = name == "SGD"
    model_c, model_e = make_model(lucid, lnn), make_model(lucid, lnn)
    opt_c, opt_e = make_optimizer(lo, model_c, name, kwargs), make_optimizer(lo, model_e, name, kwargs)
    sc_c, sc_e = GradScaler(**scaler_args()), GradScaler(**scaler_args())
    if with_torch:
        model_t = make_model(torch, torch.nn)
        opt_t = make_optimizer(torch.optim, model_t, name, kwargs)
        sc_t = torch.amp.GradScaler("cpu", **scaler_args())
    step = fused_step(model_c, loss_fn, opt_c, grad_scaler=sc_c)
    for s, skipped in enumerate([False, True, True, False, False]):
        if s == 1:
            for opt in (opt_c, opt_e) + ((opt_t,) if with_torch else ()):
                for g in opt.param_groups:
                    g.update(raised)
        x, y = batch(s, 2, skipped)
        got = step(lucid.tensor(x), lucid.tensor(y))
        want = lucid_step(model_e, opt_e, sc_e, x, y)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        for a, b in zip(model_e.parameters(), model_c.parameters()):
            np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())
        assert_same_state(state_of(opt_c), state_of(opt_e), f"step {s}")
        if with_torch:
            torch_step(model_t, opt_t, sc_t, x, y, name)
            assert_state_like_torch(state_of(opt_e), state_of(opt_t), f"step {s}")
    assert step.cache_info().misses == 2


@pytest.mark.parametrize("name,kwargs", KINDS, ids=KIND_IDS)
def test_accumulating_fused_step_creates_state_at_the_first_step_taken(name, kwargs):
    """accumulate=2: the micro-batches' gradients are summed, the sum
    overflows on the first call, and the state starts at the second."""
    k = 2
    model_c, model_e, model_t = make_model(lucid, lnn), make_model(lucid, lnn), make_model(torch, torch.nn)
    opt_c = make_optimizer(lo, model_c, name, kwargs)
    opt_e = make_optimizer(lo, model_e, name, kwargs)
    opt_t = make_optimizer(torch.optim, model_t, name, kwargs)
    sc_c, sc_e = GradScaler(**scaler_args()), GradScaler(**scaler_args())
    sc_t = torch.amp.GradScaler("cpu", **scaler_args())
    step = fused_step(model_c, loss_fn, opt_c, grad_scaler=sc_c, accumulate=k)
    for s, skipped in enumerate([True, False, False]):
        micro = [batch(10 * s + m, 2, skipped and m == 1) for m in range(k)]
        step(lucid.tensor(np.stack([x for x, _ in micro])), lucid.tensor(np.stack([y for _, y in micro])))
        for lib, model, opt, sc in ((lucid, model_e, opt_e, sc_e), (torch, model_t, opt_t, sc_t)):
            opt.zero_grad()
            for x, y in micro:
                sc.scale(loss_fn(model(lib.tensor(x)), lib.tensor(y)) / k).backward()
            if lib is torch and name == "SparseAdam":
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad = p.grad.to_sparse()
            sc.step(opt)
            sc.update()
        what = f"{name} accumulate step {s}"
        assert sc_c.get_scale() == sc_e.get_scale() == sc_t.get_scale(), what
        for a, b, t in zip(model_e.parameters(), model_c.parameters(), model_t.parameters()):
            np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy(), err_msg=what)
            np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=what)
        assert_same_state(state_of(opt_c), state_of(opt_e), what)
        assert_state_like_torch(state_of(opt_e), state_of(opt_t), what)
