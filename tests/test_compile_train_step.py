"""Compiled steps for real training loops (train_step, fused_step's clipping
and accumulation, compile_optimizer as an Optimizer) against the eager loops
they replace, step for step."""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from lucid.amp import GradScaler
from lucid.compile import compile_optimizer, fused_step, train_step
from lucid.nn.utils import clip_grad_norm_, clip_grad_value_

STEPS = 6


class TwoInputLM(nn.Module):
    """A model with several inputs that computes its own loss, as GPT
    trainers write them: ``logits, loss = model(tokens, context, targets)``."""

    def __init__(self, seed=0):
        super().__init__()
        lucid.manual_seed(seed)
        self.embed = nn.Embedding(11, 8)
        self.ctx = nn.Linear(3, 8)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 11)

    def forward(self, tokens, context, targets):
        h = self.norm(self.embed(tokens) + self.ctx(context).unsqueeze(1))
        logits = self.head(lucid.tanh(h))
        loss = F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1))
        return logits, loss


def adamw_groups(model, lr=1e-2):
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    return optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=lr)


def lm_batches(n=STEPS, lead=()):
    lucid.manual_seed(123)
    return [(lucid.randint(0, 11, (*lead, 4, 5)), lucid.randn(*lead, 4, 3), lucid.randint(0, 11, (*lead, 4, 5)))
            for _ in range(n)]


def params_of(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def assert_same_params(a, b, exact=False):
    for x, y in zip(params_of(a), params_of(b)):
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def group_params(opt):
    return [p for g in opt.param_groups for p in g["params"]]


# ------------------------------------------------------------------ train_step
def test_train_step_with_several_inputs_own_loss_and_logits_matches_eager():
    data = lm_batches()
    eager, compiled = TwoInputLM(), TwoInputLM()
    opt_e, opt_c = adamw_groups(eager), adamw_groups(compiled)

    def fn(tokens, context, targets):
        logits, loss = compiled(tokens, context, targets)
        return loss, logits

    step = train_step(fn, opt_c)
    for tokens, context, targets in data:
        opt_e.zero_grad()
        logits_e, loss_e = eager(tokens, context, targets)
        loss_e.backward()
        opt_e.step()
        loss, logits = step(tokens, context, targets)
        assert not logits.requires_grad and logits.grad_fn is None
        np.testing.assert_allclose(loss.item(), loss_e.item(), rtol=1e-6)
        np.testing.assert_allclose(logits.numpy(), logits_e.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_same_params(compiled, eager, exact=True)  # the same kernels in the same order
    assert step.cache_info().misses == 1


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_inside_the_executable_matches_clip_grad_norm_(norm_type):
    data = lm_batches()
    eager, compiled = TwoInputLM(1), TwoInputLM(1)
    opt_e, opt_c = adamw_groups(eager), adamw_groups(compiled)
    step = train_step(lambda *b: compiled(*b)[1], opt_c, clip_grad_norm=0.05, norm_type=norm_type)
    for batch in data:
        opt_e.zero_grad()
        loss_e = eager(*batch)[1]
        loss_e.backward()
        norm_e = clip_grad_norm_(group_params(opt_e), 0.05, norm_type)  # the optimizer's order, as compiled
        opt_e.step()
        loss, norm = step(*batch)
        np.testing.assert_allclose(loss.item(), loss_e.item(), rtol=1e-6)
        np.testing.assert_allclose(norm.item(), norm_e.item(), rtol=1e-6)
        assert norm.item() > 0.05  # the clipping did act
    assert_same_params(compiled, eager)


def test_clip_grad_value_and_fused_step_clipping():
    lucid.manual_seed(0)
    data = [(lucid.randn(8, 6), lucid.randint(0, 3, (8,))) for _ in range(STEPS)]

    def model_and_opt():
        lucid.manual_seed(5)
        m = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
        return m, optim.SGD(m.parameters(), lr=0.5, momentum=0.9)

    eager, opt_e = model_and_opt()
    compiled, opt_c = model_and_opt()
    step = fused_step(compiled, F.cross_entropy, opt_c, clip_grad_value=0.01)
    for x, y in data:
        opt_e.zero_grad()
        loss_e = F.cross_entropy(eager(x), y)
        loss_e.backward()
        clip_grad_value_(eager.parameters(), 0.01)
        opt_e.step()
        np.testing.assert_allclose(step(x, y).item(), loss_e.item(), rtol=1e-6)
    assert_same_params(compiled, eager, exact=True)

    # fused_step with clip_grad_norm returns (loss, norm)
    eager, opt_e = model_and_opt()
    compiled, opt_c = model_and_opt()
    step = fused_step(compiled, F.cross_entropy, opt_c, clip_grad_norm=0.1)
    for x, y in data:
        opt_e.zero_grad()
        F.cross_entropy(eager(x), y).backward()
        norm_e = clip_grad_norm_(eager.parameters(), 0.1)
        opt_e.step()
        loss, norm = step(x, y)
        np.testing.assert_allclose(norm.item(), norm_e.item(), rtol=1e-6)
    assert_same_params(compiled, eager)


def test_gradient_accumulation_matches_the_eager_micro_batch_loop():
    k = 3
    data = lm_batches(4, lead=(k,))
    eager, compiled = TwoInputLM(2), TwoInputLM(2)
    opt_e, opt_c = adamw_groups(eager), adamw_groups(compiled)

    def fn(tokens, context, targets):
        logits, loss = compiled(tokens, context, targets)
        return loss, logits

    step = train_step(fn, opt_c, accumulate=k, clip_grad_norm=1.0)
    for tokens, context, targets in data:
        opt_e.zero_grad()
        losses, logits_e = [], []
        for m in range(k):
            logits, loss = eager(tokens[m], context[m], targets[m])
            (loss / k).backward()
            losses.append(loss.detach())
            logits_e.append(logits.detach())
        norm_e = clip_grad_norm_(group_params(opt_e), 1.0)
        opt_e.step()
        (loss, logits), norm = step(tokens, context, targets)
        np.testing.assert_allclose(loss.item(), lucid.stack(losses).mean().item(), rtol=1e-6)
        assert tuple(logits.shape) == (k, 4, 5, 11)
        np.testing.assert_allclose(logits.numpy(), lucid.stack(logits_e).numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(norm.item(), norm_e.item(), rtol=1e-6)
    assert_same_params(compiled, eager)
    with pytest.raises(lucid.InvalidArgument, match="micro-batches along its first dimension"):
        step(*lm_batches(1)[0])


def test_accumulated_extras_hold_each_micro_batch_s_value_of_a_buffer():
    """With accumulate=k the extras are stacked per micro-batch. An extra
    that views a buffer the next micro-batch updates in place (BatchNorm's
    running_var) must hold the value fn returned, not the last one (graph
    soak seeds 5023413, 5025299: every row read the final running_var)."""
    def run(compiled):
        lucid.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
        opt = optim.SGD(model.parameters(), lr=0.1)

        def fn(x, y):
            loss = F.mse_loss(model(x), y)
            return loss, model[1].running_var.reshape(2, 2), model[1].running_mean

        lucid.manual_seed(1)
        xs, ys = lucid.randn(2, 5, 3), lucid.randn(2, 5, 4)
        if compiled:
            _, var, mean = train_step(fn, opt, accumulate=2)(xs, ys)
            return var.numpy(), mean.numpy(), params_of(model)
        opt.zero_grad()
        extras = []
        for m in range(2):
            loss, var, mean = fn(xs[m], ys[m])
            (loss / 2).backward()
            extras.append((var.detach().clone(), mean.detach().clone()))
        opt.step()
        return (lucid.stack([e[0] for e in extras]).numpy(), lucid.stack([e[1] for e in extras]).numpy(),
                params_of(model))

    got, want = run(True), run(False)
    assert not np.array_equal(want[0][0], want[0][1])  # the buffer did change between the micro-batches
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)
    for a, b in zip(got[2], want[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class TinyRNN(nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        lucid.manual_seed(seed)
        self.embed = nn.Embedding(7, 6)
        self.cell = nn.Linear(12, 6)
        self.out = nn.Linear(6, 7)

    def forward(self, tokens, hidden):
        outs = []
        for t in range(tokens.shape[1]):
            hidden = lucid.tanh(self.cell(lucid.cat([self.embed(tokens[:, t]), hidden], 1)))
            outs.append(self.out(hidden))
        return lucid.stack(outs, 1), hidden


def test_rnn_hidden_state_carried_between_calls_matches_repackage_hidden():
    lucid.manual_seed(9)
    data = [(lucid.randint(0, 7, (2, 5)), lucid.randint(0, 7, (2, 5))) for _ in range(STEPS)]
    eager, compiled = TinyRNN(), TinyRNN()
    opt_e, opt_c = optim.SGD(eager.parameters(), lr=0.5), optim.SGD(compiled.parameters(), lr=0.5)

    def fn(x, y, hidden):
        out, hidden = compiled(x, hidden)
        return F.cross_entropy(out.reshape(-1, 7), y.reshape(-1)), hidden

    step = train_step(fn, opt_c, clip_grad_norm=0.25)
    h_e = h_c = lucid.zeros(2, 6)
    for x, y in data:
        h_e = h_e.detach()  # repackage_hidden
        opt_e.zero_grad()
        out, h_e = eager(x, h_e)
        loss_e = F.cross_entropy(out.reshape(-1, 7), y.reshape(-1))
        loss_e.backward()
        clip_grad_norm_(eager.parameters(), 0.25)
        opt_e.step()
        (loss, h_c), _ = step(x, y, h_c)
        np.testing.assert_allclose(loss.item(), loss_e.item(), rtol=1e-6)
        np.testing.assert_allclose(h_c.numpy(), h_e.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_same_params(compiled, eager)
    assert step.cache_info().misses == 1


def test_grad_scaler_clips_after_unscaling_and_skips_overflow_steps():
    data = lm_batches()
    eager, compiled = TwoInputLM(3), TwoInputLM(3)
    opt_e, opt_c = adamw_groups(eager), adamw_groups(compiled)
    sc_e, sc_c = GradScaler(init_scale=2.0**10, growth_interval=2), GradScaler(init_scale=2.0**10, growth_interval=2)
    step = train_step(lambda *b: compiled(*b)[1], opt_c, sc_c, clip_grad_norm=1.0)
    sched_e = optim.lr_scheduler.CosineAnnealingLR(opt_e, T_max=STEPS)
    sched_c = optim.lr_scheduler.CosineAnnealingLR(opt_c, T_max=STEPS)
    for k, batch in enumerate(data):
        if k == 3:  # an overflow: the update is skipped and the scale backs off
            batch = (batch[0], batch[1] * float("inf"), batch[2])
        opt_e.zero_grad()
        loss_e = eager(*batch)[1]
        sc_e.scale(loss_e).backward()
        sc_e.unscale_(opt_e)
        norm_e = clip_grad_norm_(group_params(opt_e), 1.0)
        sc_e.step(opt_e)
        sc_e.update()
        sched_e.step()
        loss, norm = step(*batch)
        sched_c.step()
        assert sc_c.get_scale() == sc_e.get_scale()
        if k != 3:
            np.testing.assert_allclose(norm.item(), norm_e.item(), rtol=1e-5)
    assert sc_c.state_dict() == sc_e.state_dict()
    assert_same_params(compiled, eager)
    sd_c, sd_e = opt_c.state_dict(), opt_e.state_dict()
    assert [float(s["step"]) for s in sd_c["state"].values()] == [float(s["step"]) for s in sd_e["state"].values()]
    assert step.cache_info().misses == 1


def test_train_step_rejects_what_it_cannot_compile():
    model = TwoInputLM()
    opt = adamw_groups(model)
    with pytest.raises(TypeError, match="callable"):
        train_step(None, opt)
    with pytest.raises(TypeError, match="no update rule"):
        train_step(lambda x: x.sum(), optim.LBFGS(model.parameters()))
    with pytest.raises(ValueError, match="accumulate"):
        train_step(lambda x: x.sum(), opt, accumulate=0)
    step = train_step(lambda *b: "not a loss", opt)
    with pytest.raises(RuntimeError, match="scalar tensor"):
        step(*lm_batches(1)[0])
    assert len(opt.state) == 0  # the failed trace created no optimizer state


# --------------------------------------------------- the hardening items
def test_a_failed_first_call_leaves_no_optimizer_state():
    model = nn.Linear(4, 3)
    opt = optim.Adam(model.parameters())
    step = fused_step(model, F.cross_entropy, opt)
    x = lucid.randn(2, 4)
    with pytest.raises(IndexError):
        step(x, lucid.tensor([0, 5]))  # a target out of range fails inside the run
    assert opt.state_dict()["state"] == {}
    step(x, lucid.tensor([0, 1]))
    assert float(opt.state_dict()["state"][0]["step"]) == 1


def test_an_extra_argument_is_named_in_the_error():
    model = nn.Linear(4, 3)
    step = fused_step(model, F.cross_entropy, optim.Adam(model.parameters()))
    x, y = lucid.randn(2, 4), lucid.tensor([0, 1])
    step(x, y)
    with pytest.raises(lucid.InvalidArgument, match="called with 3 arguments .* earlier calls had 2"):
        step(x, y, y)


def test_a_parameter_appended_to_a_group_is_optimized_as_in_torch():
    torch = pytest.importorskip("torch")
    w0 = np.arange(3, dtype=np.float32)
    w1 = np.ones(2, dtype=np.float32)
    lw0, lw1 = lucid.tensor(w0, requires_grad=True), lucid.tensor(w1, requires_grad=True)
    tw0, tw1 = torch.tensor(w0, requires_grad=True), torch.tensor(w1, requires_grad=True)
    lopt, topt = optim.Adam([lw0], lr=0.1), torch.optim.Adam([tw0], lr=0.1)
    for o, a, g in ((lopt, lw0, lucid.ones(3)), (topt, tw0, torch.ones(3))):
        a.grad = g
        o.step()
    lopt.param_groups[0]["params"].append(lw1)
    topt.param_groups[0]["params"].append(tw1)
    lsd, tsd = lopt.state_dict(), topt.state_dict()
    assert lsd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"] == [0, 1]
    assert sorted(lsd["state"]) == sorted(tsd["state"]) == [0]
    lw1.grad, tw1.grad = lucid.ones(2), torch.ones(2)
    lopt.step()
    topt.step()
    np.testing.assert_allclose(lw1.detach().numpy(), tw1.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(lw0.detach().numpy(), tw0.detach().numpy(), rtol=1e-6)


def test_cache_misses_are_reported_in_the_user_s_terms():
    model = nn.Linear(4, 3)
    opt = optim.Adam(model.parameters())
    step = fused_step(model, F.cross_entropy, opt)
    step(lucid.randn(2, 4), lucid.tensor([0, 1]))
    assert step.cache_info().last_miss == "first call"
    opt.param_groups[0]["amsgrad"] = True
    step(lucid.randn(2, 4), lucid.tensor([0, 1]))
    assert step.cache_info().last_miss == "param_groups[0] amsgrad: False -> True"
    step(lucid.randn(5, 4), lucid.tensor([0, 1, 2, 0, 1]))
    assert step.cache_info().last_miss == "input 0 shape [2, 4] -> [5, 4]; input 1 shape [2] -> [5]"
    model.eval()
    step(lucid.randn(5, 4), lucid.tensor([0, 1, 2, 0, 1]))
    assert step.cache_info().last_miss == "model.training: True -> False"
    assert "0x" not in " ".join(step.cached_signatures())


# ------------------------------------------- compile_optimizer is an Optimizer
SCHEDULERS = [
    ("LambdaLR", dict(lr_lambda=lambda e: 0.9 ** e)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9)),
    ("StepLR", dict(step_size=3)),
    ("MultiStepLR", dict(milestones=[2, 4])),
    ("ConstantLR", dict(factor=0.5, total_iters=2)),
    ("LinearLR", dict(total_iters=3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("PolynomialLR", dict(total_iters=4)),
    ("CosineAnnealingLR", dict(T_max=4)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, cycle_momentum=False)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10, cycle_momentum=False)),
    ("ReduceLROnPlateau", dict(patience=0)),
]
KINDS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop",
         "SparseAdam", "LBFGS"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_compiled_optimizer_is_an_optimizer_a_scheduler_drives(kind):
    p = lucid.randn(3, requires_grad=True)
    opt = getattr(optim, kind)([p], lr=0.05)
    copt = compile_optimizer(opt)
    assert isinstance(copt, optim.Optimizer) and isinstance(copt, type(opt))
    sched = optim.lr_scheduler.StepLR(copt, step_size=2, gamma=0.5)
    for _ in range(4):
        p.grad = lucid.ones(3)
        copt.step()
        sched.step()
    assert copt.param_groups[0]["lr"] == opt.param_groups[0]["lr"] == pytest.approx(0.0125)


@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[n for n, _ in SCHEDULERS])
def test_every_scheduler_drives_a_compiled_optimizer_as_the_eager_one(name, kwargs):
    def run(compiled):
        p = lucid.tensor([1.0, -2.0, 3.0], requires_grad=True)
        opt = optim.SGD([p], lr=0.1, momentum=0.9)
        if compiled:
            opt = compile_optimizer(opt)
        sched = getattr(optim.lr_scheduler, name)(opt, **kwargs)
        lrs = []
        for k in range(6):
            p.grad = lucid.tensor([0.5, 0.1, -0.3]) * (k + 1)
            opt.step()
            sched.step(1.0) if name == "ReduceLROnPlateau" else sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        return lrs, p.detach().numpy()

    lrs_e, p_e = run(False)
    lrs_c, p_c = run(True)
    assert lrs_c == lrs_e
    np.testing.assert_array_equal(p_c, p_e)


@pytest.mark.parametrize("copy_by", ["deepcopy", "pickle"])
def test_a_copied_model_s_parameter_changes_are_seen_by_its_compiled_step(copy_by):
    # make_step reuses the parameters it read while the module registries are
    # unchanged: a copy's registries must report changes as the original's do.
    import copy
    import pickle

    from lucid.compile import make_step

    original = nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1))
    model = copy.deepcopy(original) if copy_by == "deepcopy" else pickle.loads(pickle.dumps(original))
    loss_fn = lambda out, y: ((out - y) ** 2).mean()  # noqa: E731
    x, y = lucid.randn(4, 3), lucid.randn(4, 1)
    step = make_step(model, loss_fn)
    step(x, y)
    model[2].weight = nn.Parameter(lucid.randn(1, 2))  # no other module is made in between
    model.zero_grad()
    step(x, y)
    want = nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1))
    want.load_state_dict(model.state_dict())
    loss_fn(want(x), y).backward()
    for p, q in zip(model.parameters(), want.parameters()):
        assert p.grad is not None
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
