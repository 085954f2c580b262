"""fused_step and compile_optimizer against the eager loop they replace."""
import numpy as np
import pytest

import lucid
from lucid import _C

optim = pytest.importorskip("lucid.optim")
from lucid.compile import compile_optimizer, fused_step  # noqa: E402

STEPS = 15

# (optimizer class name, kwargs) - flag combinations that change the traced math
CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.01, t0=5)),
    ("Rprop", dict(lr=0.01)),
    ("SparseAdam", dict(lr=0.01)),
    ("SparseAdam", dict(lr=0.01, maximize=True)),
]


class Net:
    """Two layers, a frozen parameter and one the loss never reaches."""

    def __init__(self, seed=0):
        lucid.manual_seed(seed)
        self.training = True
        self.w1 = (lucid.randn(6, 8) * 0.4).requires_grad_()
        self.b1 = (lucid.randn(8) * 0.1).requires_grad_()
        self.w2 = (lucid.randn(8, 3) * 0.4).requires_grad_()
        self.b2 = (lucid.randn(3) * 0.1).requires_grad_(False)   # frozen
        self.unused = (lucid.randn(4) * 0.1).requires_grad_()      # not reached

    def parameters(self):
        return [self.w1, self.b1, self.w2, self.b2, self.unused]

    def __call__(self, x):
        return lucid.tanh(x @ self.w1 + self.b1) @ self.w2 + self.b2


def mse(out, y):
    return ((out - y) ** 2).mean()


def make(name, kwargs, seed=0):
    net = Net(seed)
    cls = getattr(optim, name)
    lr = kwargs.get("lr", 0.01)
    groups = [{"params": [net.w1, net.b1, net.unused]}, {"params": [net.w2, net.b2], "lr": lr * 0.5}]
    return net, cls(groups, **kwargs)


def batches(n=STEPS):
    lucid.manual_seed(42)
    return [(lucid.randn(5, 6), lucid.randn(5, 3)) for _ in range(n)]


def snapshot(net):
    return [p.numpy().copy() if not p.requires_grad else p.detach().numpy().copy() for p in net.parameters()]


def eager_run(name, kwargs, data):
    net, opt = make(name, kwargs)
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = mse(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return net, opt, losses


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_fused_step_matches_eager(name, kwargs):
    data = batches()
    net_e, opt_e, losses_e = eager_run(name, kwargs, data)
    net, opt = make(name, kwargs)
    frozen0, unused0 = net.b2.numpy().copy(), net.unused.detach().numpy().copy()
    step = fused_step(net, mse, opt)
    losses = [step(x, y).item() for x, y in data]
    np.testing.assert_allclose(losses, losses_e, rtol=1e-5, atol=1e-6)
    for a, b in zip(snapshot(net), snapshot(net_e)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(net.b2.numpy(), frozen0)
    np.testing.assert_array_equal(net.unused.detach().numpy(), unused0)
    sd, sd_e = opt.state_dict(), opt_e.state_dict()
    assert sorted(sd["state"]) == sorted(sd_e["state"])
    for k in (2, 4):  # the unreached and the frozen parameter: no step taken
        if name == "Adagrad":  # creates its state at construction, like PyTorch
            assert float(sd["state"][k]["step"]) == 0
        else:
            assert k not in sd["state"]
    assert step.cache_info().misses == 1


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_compile_optimizer_matches_eager(name, kwargs):
    data = batches()
    net_e, _, losses_e = eager_run(name, kwargs, data)
    net, opt = make(name, kwargs)
    copt = compile_optimizer(opt)
    assert compile_optimizer(opt) is copt
    assert type(copt).__name__ == f"_Compiled{name}"
    losses = []
    for x, y in data:
        copt.zero_grad()
        loss = mse(net(x), y)
        loss.backward()
        copt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(losses, losses_e, rtol=1e-5, atol=1e-6)
    for a, b in zip(snapshot(net), snapshot(net_e)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_one_run_per_call_and_no_eager_dispatch():
    net, opt = make("Adam", dict(lr=0.01))
    step = fused_step(net, mse, opt)
    x, y = batches(1)[0]
    step(x, y)
    runs0, disp0 = _C.executable_run_count(), _C.eager_dispatch_count()
    for _ in range(4):
        step(x, y)
    assert _C.executable_run_count() - runs0 == 4
    assert _C.eager_dispatch_count() - disp0 == 0


def test_hyperparameter_edits_apply_at_next_call_and_bad_edits_change_nothing():
    data = batches(4)
    net_e, opt_e = make("SGD", dict(lr=0.1, momentum=0.9))
    net, opt = make("SGD", dict(lr=0.1, momentum=0.9))
    step = fused_step(net, mse, opt)
    for k, (x, y) in enumerate(data):
        if k == 2:
            for o in (opt, opt_e):
                o.param_groups[0]["lr"] = 0.01
        opt_e.zero_grad()
        mse(net_e(x), y).backward()
        opt_e.step()
        step(x, y)
    for a, b in zip(snapshot(net), snapshot(net_e)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert step.cache_info().misses == 1  # an lr change is a feed, not a recompile
    before = snapshot(net)
    state_before = {k: {n: np.array(v) for n, v in s.items()} for k, s in opt.state_dict()["state"].items()}
    opt.param_groups[1]["lr"] = -1.0
    with pytest.raises(lucid.InvalidArgument):
        step(*data[0])
    for a, b in zip(before, snapshot(net)):
        np.testing.assert_array_equal(a, b)
    for k, s in opt.state_dict()["state"].items():
        for n, v in s.items():
            np.testing.assert_array_equal(np.array(v), state_before[k][n])


def test_checkpoints_move_between_fused_and_eager():
    data = batches(10)
    net_a, opt_a = make("Adam", dict(lr=0.01))
    step = fused_step(net_a, mse, opt_a)
    for x, y in data[:5]:
        step(x, y)
    ckpt = opt_a.state_dict()
    net_b, opt_b = make("Adam", dict(lr=0.01))
    for p, q in zip(net_b.parameters(), net_a.parameters()):
        p.data = q.detach().clone()
    opt_b.load_state_dict(ckpt)
    for x, y in data[5:]:
        step(x, y)
        opt_b.zero_grad()
        mse(net_b(x), y).backward()
        opt_b.step()
    for a, b in zip(snapshot(net_a), snapshot(net_b)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bad_inputs_raise_and_change_nothing():
    net, opt = make("Adam", dict(lr=0.01))
    step = fused_step(net, mse, opt)
    x, y = batches(1)[0]
    step(x, y)
    before = snapshot(net)
    exe = step.executables()[0]
    for args, kind in [([lucid.randn(5, 7), y], ValueError), ([x.double(), y], TypeError), ([x], ValueError)]:
        with pytest.raises(kind):
            exe.run(args, [0.0] * exe.num_scalar_feeds)
    for a, b in zip(before, snapshot(net)):
        np.testing.assert_array_equal(a, b)


def test_optimizer_over_foreign_parameters_is_rejected():
    net, _ = make("SGD", dict(lr=0.1))
    other = lucid.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="not one of the model"):
        fused_step(net, mse, optim.SGD([other], lr=0.1))


def test_compile_optimizer_rejects_unsupported_and_empty():
    class NotAnOptimizer:
        param_groups = []

    with pytest.raises(TypeError, match="supported"):
        compile_optimizer(NotAnOptimizer())


def _lbfgs_bb_reference(x0, grad_fn, lr, steps, tolerance_grad=1e-7):
    """The compiled LBFGS step (per-element Barzilai-Borwein) in NumPy."""
    x = x0.astype(np.float64)
    prev_x = np.zeros_like(x)
    prev_g = np.zeros_like(x)
    for k in range(steps):
        g = grad_fn(x)
        s, y = x - prev_x, g - prev_g
        sy = s * y
        ok = (sy > 0) & (k > 0)
        h = np.where(ok, s * s / np.where(ok, sy, 1.0), 1.0)
        new = x - lr * h * g
        prev_x, prev_g = x, g
        x = x if np.abs(g).max() <= tolerance_grad else new
    return x


def test_compiled_lbfgs_matches_numpy_reference_and_keeps_eager_state_apart():
    rng = np.random.default_rng(0)
    scale = rng.uniform(0.5, 4.0, size=6)
    target = rng.normal(size=6)
    x0 = rng.normal(size=6).astype(np.float32)

    def grad_np(x):  # f(x) = 0.5 * sum(scale * (x - target)^2)
        return scale * (x - target)

    x = lucid.tensor(x0, requires_grad=True)
    eager = optim.LBFGS([x], lr=0.5)
    copt = compile_optimizer(eager)
    assert type(copt).__name__ == "_CompiledLBFGS"
    for _ in range(12):
        copt.zero_grad()
        loss = (lucid.tensor(scale.astype(np.float32)) * (x - lucid.tensor(target.astype(np.float32))) ** 2).sum() * 0.5
        loss.backward()
        copt.step()
    ref = _lbfgs_bb_reference(x0, grad_np, 0.5, 12)
    np.testing.assert_allclose(x.detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    # with exact per-element curvature, each step halves the distance (lr=0.5)
    assert np.abs(x.detach().numpy() - target).max() < np.abs(x0 - target).max() / 500
    assert len(eager.state) == 0 or all(len(v) == 0 for v in eager.state.values())
    assert set(copt.state_dict()["state"]) == {0}


# ------------------------------------------------------------- with lucid.nn
nn = pytest.importorskip("lucid.nn")
F = pytest.importorskip("lucid.nn.functional")


def _nn_model(seed):
    lucid.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))


def test_fused_step_with_batchnorm_dropout_and_scheduler_matches_eager():
    data = [(lucid.randn(8, 6), lucid.randint(0, 3, (8,))) for _ in range(10)]

    def run(fused):
        model = _nn_model(0)
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        step = fused_step(model, F.cross_entropy, opt) if fused else None
        lucid.manual_seed(7)  # the same dropout masks in both runs
        losses = []
        for x, y in data:
            if fused:
                loss = step(x, y)
            else:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
            sched.step()
            losses.append(loss.item())
        return model, losses, step

    m_e, l_e, _ = run(False)
    m_f, l_f, step = run(True)
    np.testing.assert_allclose(l_f, l_e, rtol=1e-5, atol=1e-6)
    sd_e, sd_f = m_e.state_dict(), m_f.state_dict()
    assert list(sd_e) == list(sd_f)
    for k in sd_e:  # parameters and BatchNorm running statistics
        np.testing.assert_allclose(sd_f[k].detach().numpy(), sd_e[k].detach().numpy(), rtol=1e-5, atol=1e-6)
    assert step.cache_info().misses == 1  # lr changes are feeds, dropout keys are feeds


def test_eval_mode_is_part_of_the_signature():
    model = _nn_model(1)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    step = fused_step(model, F.cross_entropy, opt)
    x, y = lucid.randn(8, 6), lucid.randint(0, 3, (8,))
    step(x, y)
    model.eval()
    step(x, y)
    info = step.cache_info()
    assert info.misses == 2 and "training" in info.last_miss


def test_docstring_examples_run():
    import doctest

    from lucid.compile import _function, _optimizer, _step

    for mod in (_step, _optimizer, _function):
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, mod.__name__


def test_eager_checkpoint_continues_in_a_fused_run():
    data = batches(10)
    net_a, opt_a = make("AdamW", dict(lr=0.01, weight_decay=0.1))
    for x, y in data[:5]:
        opt_a.zero_grad()
        mse(net_a(x), y).backward()
        opt_a.step()
    ckpt = opt_a.state_dict()
    net_b, opt_b = make("AdamW", dict(lr=0.01, weight_decay=0.1))
    for p, q in zip(net_b.parameters(), net_a.parameters()):
        p.data = q.detach().clone()
    opt_b.load_state_dict(ckpt)
    step = fused_step(net_b, mse, opt_b)
    for x, y in data[5:]:
        opt_a.zero_grad()
        mse(net_a(x), y).backward()
        opt_a.step()
        step(x, y)
    for a, b in zip(snapshot(net_a), snapshot(net_b)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert float(opt_b.state_dict()["state"][0]["step"]) == 10


def test_compiled_update_is_the_eager_fused_loop_bitwise():
    """On the CPU a compiled update is one engine_update node per parameter,
    whose kernel is the eager step's fused loop: results are bit-identical."""
    data = batches(6)
    net_e, _, _ = eager_run("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True), data)
    net, opt = make("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True))
    step = fused_step(net, mse, opt)
    for x, y in data:
        step(x, y)
    for a, b in zip(snapshot(net), snapshot(net_e)):
        np.testing.assert_array_equal(a, b)
    text = step.executables()[0].dump()
    assert text.count("engine_update(") == 3  # w1, b1, w2: the frozen and unreached parameters get none


SCHEDULERS = [
    ("StepLR", dict(step_size=3)),
    ("MultiStepLR", dict(milestones=[2, 4])),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.5 ** e)),
    ("LinearLR", dict(total_iters=4)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10)),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, cycle_momentum=False)),
    ("ReduceLROnPlateau", dict(patience=0)),
]


@pytest.mark.parametrize("kind,kwargs", CONFIGS[::2] + [("LBFGS", dict(lr=0.1))], ids=lambda v: str(v))
def test_compiled_optimizer_is_an_optimizer(kind, kwargs):
    # Issue 16: StepLR(compile_optimizer(opt)) raised "_CompiledSGD is not an Optimizer".
    w = lucid.ones(3, requires_grad=True)
    opt = compile_optimizer(getattr(optim, kind)([w], **kwargs))
    assert isinstance(opt, optim.Optimizer)
    assert opt.defaults is opt.optimizer.defaults and opt.param_groups is opt.optimizer.param_groups


@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_every_scheduler_drives_a_compiled_optimizer_as_the_eager_one(name, kwargs):
    runs = []
    for compiled in (False, True):
        w = lucid.tensor([1.0, -2.0, 3.0], requires_grad=True)
        opt = optim.SGD([w], lr=0.05, momentum=0.9)
        if compiled:
            opt = compile_optimizer(opt)
        sched = getattr(optim.lr_scheduler, name)(opt, **kwargs)
        lrs = []
        for _ in range(6):
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            opt.step()
            sched.step(loss.item()) if name == "ReduceLROnPlateau" else sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        runs.append((lrs, w.detach().numpy().copy()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=1e-6, atol=1e-7)
