"""Random training loops compiled with train_step against the same loop run
eagerly in Lucid and in PyTorch, step for step: each seed draws the model's
sizes, the optimizer and its options, clipping (by norm of a random type, by
value, or none), accumulation over 1-3 micro-batches, a GradScaler and an LR
scheduler. The model takes two inputs and the targets and computes its own
loss, as GPT trainers write it. Float64 throughout, so the comparison with
PyTorch is tight."""
import math

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from lucid.amp import GradScaler, autocast
from lucid.compile import train_step
from lucid.nn.utils import clip_grad_norm_, clip_grad_value_

torch = pytest.importorskip("torch")

STEPS = 5
OPTIMIZERS = [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)), ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adamax", dict(lr=0.02)), ("NAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01)), ("Adadelta", dict(lr=1.0)), ("Rprop", dict(lr=0.01)), ("ASGD", dict(lr=0.05)),
]


class Net(nn.Module):
    """``loss, out = net(x, context, y)``."""

    def __init__(self, d_in, d_ctx, hidden, d_out, classify):
        super().__init__()
        self.inp = nn.Linear(d_in, hidden).to(lucid.float64)
        self.ctx = nn.Linear(d_ctx, hidden, bias=False).to(lucid.float64)
        self.out = nn.Linear(hidden, d_out).to(lucid.float64)
        self.classify = classify

    def forward(self, x, c, y):
        out = self.out(lucid.tanh(self.inp(x) + self.ctx(c)))
        loss = F.cross_entropy(out, y) if self.classify else F.mse_loss(out, y)
        return loss, out


class TorchNet(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        arr = lambda p: torch.tensor(p.detach().numpy().copy())  # noqa: E731
        self.inp_w, self.inp_b = torch.nn.Parameter(arr(net.inp.weight)), torch.nn.Parameter(arr(net.inp.bias))
        self.ctx_w = torch.nn.Parameter(arr(net.ctx.weight))
        self.out_w, self.out_b = torch.nn.Parameter(arr(net.out.weight)), torch.nn.Parameter(arr(net.out.bias))
        self.classify = net.classify

    def forward(self, x, c, y):
        h = torch.tanh(x @ self.inp_w.T + self.inp_b + c @ self.ctx_w.T)
        out = h @ self.out_w.T + self.out_b
        loss = torch.nn.functional.cross_entropy(out, y) if self.classify else torch.nn.functional.mse_loss(out, y)
        return loss, out


def draw(seed):
    rng = np.random.default_rng(seed)
    cfg = dict(
        sizes=[int(v) for v in rng.integers(1, 7, size=4)],
        classify=bool(rng.integers(2)),
        batch=int(rng.integers(1, 5)),
        optimizer=OPTIMIZERS[seed % len(OPTIMIZERS)],
        clip=[None, "norm", "value"][int(rng.integers(3))],
        norm_type=[2.0, 1.0, float("inf"), 3.0][int(rng.integers(4))],
        max_value=float(rng.choice([1e-3, 0.05, 10.0])),
        accumulate=int(rng.integers(1, 4)),
        scaler=bool(rng.integers(2)),
        scheduler=[None, "StepLR", "CosineAnnealingLR"][int(rng.integers(3))],
        rng=rng,
    )
    if cfg["classify"]:
        cfg["sizes"][3] = max(cfg["sizes"][3], 2)
    return cfg


def batches(cfg):
    d_in, d_ctx, _, d_out = cfg["sizes"]
    rng, k, b = cfg["rng"], cfg["accumulate"], cfg["batch"]
    out = []
    for _ in range(STEPS):
        x, c = rng.standard_normal((k, b, d_in)), rng.standard_normal((k, b, d_ctx))
        y = rng.integers(0, d_out, (k, b)) if cfg["classify"] else rng.standard_normal((k, b, d_out))
        out.append((x, c, y))
    return out


def make_scheduler(module, cfg, opt):
    if cfg["scheduler"] == "StepLR":
        return module.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    if cfg["scheduler"] == "CosineAnnealingLR":
        return module.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    return None


def eager_lucid_step(cfg, net, opt, scaler, batch):
    k = cfg["accumulate"]
    opt.zero_grad()
    losses = []
    for m in range(k):
        loss, _ = net(*(lucid.tensor(a[m]) for a in batch))
        root = loss / k if k > 1 else loss
        (scaler.scale(root) if scaler else root).backward()
        losses.append(loss.item())
    if scaler:
        scaler.unscale_(opt)
    params = [p for g in opt.param_groups for p in g["params"]]
    norm = None
    if cfg["clip"] == "norm":
        norm = clip_grad_norm_(params, cfg["max_value"], cfg["norm_type"]).item()
    elif cfg["clip"] == "value":
        clip_grad_value_(params, cfg["max_value"])
    if scaler:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    return float(np.mean(losses)), norm


def torch_step(cfg, net, opt, scaler, batch):
    k = cfg["accumulate"]
    opt.zero_grad()
    losses = []
    for m in range(k):
        loss, _ = net(*(torch.tensor(a[m]) for a in batch))
        root = loss / k if k > 1 else loss
        (scaler.scale(root) if scaler else root).backward()
        losses.append(loss.item())
    if scaler:
        scaler.unscale_(opt)
    params = [p for g in opt.param_groups for p in g["params"]]
    norm = None
    if cfg["clip"] == "norm":
        norm = torch.nn.utils.clip_grad_norm_(params, cfg["max_value"], cfg["norm_type"]).item()
    elif cfg["clip"] == "value":
        torch.nn.utils.clip_grad_value_(params, cfg["max_value"])
    if scaler:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    return float(np.mean(losses)), norm


@pytest.mark.parametrize("seed", range(28))
def test_a_random_compiled_loop_equals_its_eager_loops_in_lucid_and_torch(seed):
    cfg = draw(seed)
    name, kwargs = cfg["optimizer"]
    lucid.manual_seed(seed)
    d_in, d_ctx, hidden, d_out = cfg["sizes"]
    compiled = Net(d_in, d_ctx, hidden, d_out, cfg["classify"])
    eager = Net(d_in, d_ctx, hidden, d_out, cfg["classify"])
    eager.load_state_dict(compiled.state_dict())
    tnet = TorchNet(compiled)
    # two groups, as AdamW trainers split decay and no-decay parameters
    groups = lambda ps: [{"params": [p for p in ps if p.ndim >= 2]},  # noqa: E731
                         {"params": [p for p in ps if p.ndim < 2], "lr": kwargs["lr"] * 0.5}]
    opt_c = getattr(optim, name)(groups(list(compiled.parameters())), **kwargs)
    opt_e = getattr(optim, name)(groups(list(eager.parameters())), **kwargs)
    opt_t = getattr(torch.optim, name)(groups(list(tnet.parameters())), **kwargs)
    sc_c = sc_e = sc_t = None
    if cfg["scaler"]:
        sc_c, sc_e = GradScaler(init_scale=2.0**8, growth_interval=2), GradScaler(init_scale=2.0**8, growth_interval=2)
        sc_t = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
    sched = [make_scheduler(optim, cfg, opt_c), make_scheduler(optim, cfg, opt_e), make_scheduler(torch.optim, cfg,
                                                                                                   opt_t)]
    clip = dict(clip_grad_norm=cfg["max_value"], norm_type=cfg["norm_type"]) if cfg["clip"] == "norm" else (
        dict(clip_grad_value=cfg["max_value"]) if cfg["clip"] == "value" else {})
    step = train_step(lambda x, c, y: compiled(x, c, y)[0], opt_c, sc_c, accumulate=cfg["accumulate"], **clip)

    for s, batch in enumerate(batches(cfg)):
        loss_e, norm_e = eager_lucid_step(cfg, eager, opt_e, sc_e, batch)
        loss_t, norm_t = torch_step(cfg, tnet, opt_t, sc_t, batch)
        args = [lucid.tensor(a) if cfg["accumulate"] > 1 else lucid.tensor(a[0]) for a in batch]
        got = step(*args)
        loss_c, norm_c = (got[0].item(), got[1].item()) if cfg["clip"] == "norm" else (got.item(), None)
        for sch in sched:
            if sch is not None:
                sch.step()
        where = f"seed {seed} step {s} {cfg['optimizer']} clip={cfg['clip']} k={cfg['accumulate']} " \
                f"scaler={cfg['scaler']} sched={cfg['scheduler']}"
        np.testing.assert_allclose(loss_c, loss_e, rtol=1e-12, err_msg=where)
        np.testing.assert_allclose(loss_c, loss_t, rtol=1e-9, err_msg=where)
        if norm_c is not None:
            np.testing.assert_allclose(norm_c, norm_e, rtol=1e-12, err_msg=where)
            np.testing.assert_allclose(norm_c, norm_t, rtol=1e-9, err_msg=where)
        for pc, pe, pt in zip(compiled.parameters(), eager.parameters(), tnet.parameters()):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-12, atol=1e-14,
                                       err_msg=where)
            np.testing.assert_allclose(pc.detach().numpy(), pt.detach().numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=where)
        assert [g["lr"] for g in opt_c.param_groups] == [g["lr"] for g in opt_e.param_groups]
        if sc_c:
            assert sc_c.get_scale() == sc_e.get_scale() == sc_t.get_scale()
    assert step.cache_info().misses == 1  # the schedule and the scale are feeds
    sd_c, sd_e = opt_c.state_dict(), opt_e.state_dict()
    assert sorted(sd_c["state"]) == sorted(sd_e["state"])
    for i in sd_e["state"]:
        for key, v in sd_e["state"][i].items():
            np.testing.assert_allclose(np.asarray(sd_c["state"][i][key].numpy() if hasattr(sd_c["state"][i][key], "numpy")
                                                  else sd_c["state"][i][key], dtype=np.float64),
                                       np.asarray(v.numpy() if hasattr(v, "numpy") else v, dtype=np.float64),
                                       rtol=1e-12, atol=1e-14, err_msg=f"state {i} {key}")


def test_the_budget_covers_every_optimizer_and_option():
    cfgs = [draw(s) for s in range(28)]
    assert {c["optimizer"][0] for c in cfgs} == {n for n, _ in OPTIMIZERS}
    for key, values in (("clip", {None, "norm", "value"}), ("accumulate", {1, 2, 3}), ("scaler", {True, False}),
                        ("scheduler", {None, "StepLR", "CosineAnnealingLR"})):
        assert {c[key] for c in cfgs} == values, key
    assert {c["norm_type"] for c in cfgs if c["clip"] == "norm"} >= {1.0, 2.0, float("inf")}


# -------------------------------------------------------- the GPT-style loop
class TinyGPT(nn.Module):
    """``logits, loss = model(idx, targets)``: embeddings, one causal
    self-attention block with an MLP, weight-tied head, as nanoGPT."""

    def __init__(self, vocab=13, block=6, d=16, heads=2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.heads, self.d = heads, d

    def forward(self, idx, targets):
        b, t = idx.shape
        x = self.tok(idx) + self.pos(lucid.arange(t))
        q, k, v = self.qkv(self.ln1(x)).split(self.d, dim=2)
        shape = (b, t, self.heads, self.d // self.heads)
        q, k, v = (a.reshape(*shape).transpose(1, 2) for a in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, self.d))
        x = x + self.fc2(F.gelu(self.fc(self.ln2(x))))
        logits = self.head(self.lnf(x))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


def nanogpt_lr(it, warmup=2, decay_iters=8, lr=3e-3, min_lr=3e-4):
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    ratio = min(1.0, (it - warmup) / (decay_iters - warmup))
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def test_the_gpt_loop_is_one_executable_per_call_and_equals_its_eager_loop():
    """Several inputs, own loss, AdamW decay/no-decay groups, clipping at 1.0,
    accumulation over 2 micro-batches, a hand-written cosine schedule, bf16
    autocast: one train_step call per optimizer step, compiled once."""
    k, steps = 2, 8

    def model_and_opt():
        lucid.manual_seed(4)
        m = TinyGPT()
        decay = [p for p in m.parameters() if p.ndim >= 2]
        no_decay = [p for p in m.parameters() if p.ndim < 2]
        opt = optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=3e-3, betas=(0.9, 0.95))
        return m, opt

    eager, opt_e = model_and_opt()
    compiled, opt_c = model_and_opt()
    step = train_step(lambda idx, y: compiled(idx, y)[1], opt_c, clip_grad_norm=1.0, accumulate=k)
    lucid.manual_seed(7)
    data = [(lucid.randint(0, 13, (k, 3, 6)), lucid.randint(0, 13, (k, 3, 6))) for _ in range(steps)]
    precision = autocast("cpu", dtype=lucid.bfloat16)
    for it, (idx, y) in enumerate(data):
        for opt in (opt_e, opt_c):
            for g in opt.param_groups:
                g["lr"] = nanogpt_lr(it)
        opt_e.zero_grad()
        losses = []
        for m in range(k):
            with precision:
                _, loss = eager(idx[m], y[m])
            (loss / k).backward()
            losses.append(loss.item())
        norm_e = clip_grad_norm_([p for g in opt_e.param_groups for p in g["params"]], 1.0).item()
        opt_e.step()
        with precision:
            loss_c, norm_c = step(idx, y)
        np.testing.assert_allclose(loss_c.item(), np.mean(losses), rtol=1e-5, err_msg=f"step {it}")
        np.testing.assert_allclose(norm_c.item(), norm_e, rtol=1e-4, err_msg=f"step {it}")
    for pc, pe in zip(compiled.parameters(), eager.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-4, atol=1e-5)
    info = step.cache_info()
    assert (info.misses, info.hits) == (1, steps - 1)  # lr and data change; the executable does not
