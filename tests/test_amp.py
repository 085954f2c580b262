"""lucid.amp: GradScaler and autocast against torch.amp, eager and inside
fused_step."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from lucid.amp import GradScaler, autocast
from lucid.compile import fused_step


# ---------------------------------------------------------------- GradScaler
def test_scale_sequence_matches_torch_with_planted_overflows():
    overflow = {3, 4, 11, 12, 13}
    ours = GradScaler(init_scale=2.0**10, growth_interval=3)
    theirs = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=3)
    w_l = lucid.ones(4, requires_grad=True)
    w_t = torch.ones(4, requires_grad=True)
    o_l = optim.SGD([w_l], lr=0.1)
    o_t = torch.optim.SGD([w_t], lr=0.1)
    for k in range(20):
        bad = float("inf") if k in overflow else 1.0
        for w, o, s, mod in ((w_l, o_l, ours, lucid), (w_t, o_t, theirs, torch)):
            o.zero_grad()
            loss = (w * mod.tensor([bad, 1.0, 2.0, 3.0])).sum()
            s.scale(loss).backward()
            s.step(o)
            s.update()
        assert ours.get_scale() == theirs.get_scale(), k
        np.testing.assert_allclose(w_l.detach().numpy(), w_t.detach().numpy(), rtol=1e-6)
    assert ours.state_dict() == {k: (v if not isinstance(v, torch.Tensor) else v.item())
                                 for k, v in theirs.state_dict().items()}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "fused_step"])
@pytest.mark.parametrize("init_scale,backoff,grads", [
    (3.0, 7.888609052210118e-31, [float("inf"), float("inf"), 1.0, 1.0]),  # the scale backs off to 0
    (0.5, 0.5, [3e38, 1.0, 1.0]),  # a finite scaled gradient (2.25e38) unscales to inf
])
def test_overflow_is_judged_on_the_scaled_gradients_as_torch(init_scale, backoff, grads, compiled):
    """PyTorch flags inf/NaN in the scaled gradients, before unscaling: a
    scale backed off to 0 (1/scale = inf) or below 1 turns finite gradients
    into inf/NaN that the optimizer then applies (fuzz seed 3026562, where
    Lucid's eager scaler divided by 0 and raised)."""
    kw = dict(init_scale=init_scale, backoff_factor=backoff, growth_interval=2)

    def loss_fn(out, factor):
        return (out * factor).sum()

    runs = {}
    for m, tnn, toptim in ((lucid, nn, optim), (torch, torch.nn, torch.optim)):
        class Scale(tnn.Module):
            def __init__(self):
                super().__init__()
                self.w = tnn.Parameter(m.tensor([1.0, 2.0]))

            def forward(self, x):
                return x * self.w

        model = Scale()
        opt = toptim.SGD(model.parameters(), lr=0.1)
        scaler = GradScaler(**kw) if m is lucid else torch.amp.GradScaler("cpu", **kw)
        step = fused_step(model, loss_fn, opt, grad_scaler=scaler) if m is lucid and compiled else None
        history = []
        for g in grads:
            factor, x = m.tensor([g, 1.0]), m.tensor([1.5, 1.0])
            if step is not None:
                step(x, factor)
            else:
                opt.zero_grad()
                scaler.scale(loss_fn(model(x), factor)).backward()
                scaler.step(opt)
                scaler.update()
            history.append((scaler.get_scale(), model.w.detach().numpy().copy()))
        runs[m.__name__] = history
    for (scale, w), (t_scale, t_w) in zip(runs["lucid"], runs["torch"]):
        assert scale == t_scale
        np.testing.assert_array_equal(w, t_w)


def test_unscale_twice_and_disabled_scaler():
    w = lucid.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    s = GradScaler()
    s.scale(w.sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    off = GradScaler(enabled=False)
    loss = w.sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}


def test_state_dict_round_trip():
    a = GradScaler(init_scale=128.0, growth_interval=5)
    w = lucid.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        a.scale(w.sum()).backward()
        a.step(opt)
        a.update()
    b = GradScaler()
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict()


def _amp_run(fused, n=8, overflow_at=2):
    lucid.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    scaler = GradScaler(init_scale=2.0**20, growth_interval=3)
    lucid.manual_seed(1)
    data = [(lucid.randn(8, 6), lucid.randint(0, 3, (8,))) for _ in range(n)]
    data[overflow_at] = (data[overflow_at][0] * float("inf"), data[overflow_at][1])
    step = fused_step(model, F.cross_entropy, opt, grad_scaler=scaler) if fused else None
    scales, snaps = [], []
    for x, y in data:
        if fused:
            step(x, y)
        else:
            opt.zero_grad()
            scaler.scale(F.cross_entropy(model(x), y)).backward()
            scaler.step(opt)
            scaler.update()
        scales.append(scaler.get_scale())
        snaps.append([p.detach().numpy().copy() for p in model.parameters()])
    return opt, scales, snaps, step


def test_fused_step_with_scaler_equals_eager_loop_and_skips_overflow_steps():
    opt_e, scales_e, snaps_e, _ = _amp_run(False)
    opt_f, scales_f, snaps_f, step = _amp_run(True)
    assert scales_f == scales_e
    for a, b in zip(snaps_f, snaps_e):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-7)
    # the overflow step (index 2) left every parameter bitwise unchanged
    for u, v in zip(snaps_f[1], snaps_f[2]):
        np.testing.assert_array_equal(u, v)
    sd_e, sd_f = opt_e.state_dict()["state"], opt_f.state_dict()["state"]
    assert float(sd_f[0]["step"]) == float(sd_e[0]["step"]) == 7
    for k in sd_e:
        for name in sd_e[k]:
            np.testing.assert_allclose(np.asarray(sd_f[k][name]), np.asarray(sd_e[k][name]), rtol=1e-6, atol=1e-8)
    assert step.cache_info().misses == 1  # the scale is a feed


# ------------------------------------------------------------------ autocast
def _pair(shape, seed):
    a = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    return lucid.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_op_dtypes_match_torch(dtype):
    ld, td = getattr(lucid, dtype), getattr(torch, dtype)
    x_l, x_t = _pair((4, 8), 0)
    w_l, w_t = _pair((5, 8), 1)
    b_l, b_t = _pair((5,), 2)
    img_l, img_t = _pair((2, 3, 6, 6), 3)
    k_l, k_t = _pair((4, 3, 3, 3), 4)
    t_l, t_t = _pair((4, 5), 5)
    cases = [
        ("matmul", lambda: x_l @ w_l.T, lambda: x_t @ w_t.T),
        ("linear", lambda: F.linear(x_l, w_l, b_l), lambda: torch.nn.functional.linear(x_t, w_t, b_t)),
        ("conv2d", lambda: F.conv2d(img_l, k_l), lambda: torch.nn.functional.conv2d(img_t, k_t)),
        ("mse", lambda: F.mse_loss(F.linear(x_l, w_l), t_l),
         lambda: torch.nn.functional.mse_loss(torch.nn.functional.linear(x_t, w_t), t_t)),
        ("add", lambda: x_l + x_l, lambda: x_t + x_t),
    ]
    with autocast("cpu", dtype=ld), torch.autocast("cpu", dtype=td):
        for name, fl, ft in cases:
            ol, ot = fl(), ft()
            assert str(ol.dtype).split(".")[1] == str(ot.dtype).split(".")[1], name
            tol = 2e-2 if dtype == "bfloat16" else 2e-3
            np.testing.assert_allclose(ol.float().detach().numpy(), ot.float().detach().numpy(), rtol=tol,
                                       atol=tol * 4, err_msg=name)


def test_autocast_nests_and_restores():
    x, _ = _pair((2, 3), 0)
    assert not lucid.amp.is_autocast_enabled()
    with autocast("cpu", dtype=lucid.bfloat16):
        assert (x @ x.T).dtype == lucid.bfloat16
        with autocast("cpu", enabled=False):
            assert (x @ x.T).dtype == lucid.float32
        with autocast("cpu", dtype=lucid.float16):
            assert (x @ x.T).dtype == lucid.float16
        assert (x @ x.T).dtype == lucid.bfloat16
    assert (x @ x.T).dtype == lucid.float32
    with pytest.raises(ValueError):
        autocast("cpu", dtype=lucid.float64)


def test_autocast_state_is_part_of_the_compiled_signature():
    lucid.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = fused_step(model, F.mse_loss, opt)
    x, y = lucid.randn(3, 4), lucid.randn(3, 2)
    step(x, y)
    with autocast("cpu", dtype=lucid.bfloat16):
        loss = step(x, y)
    assert loss.dtype == lucid.float32  # mse_loss runs in float32 under autocast
    info = step.cache_info()
    assert info.misses == 2 and "autocast" in info.last_miss


# --------------------------------------------------------- half precision ops
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "mul", "exp", "tanh", "sum", "matmul", "softmax"])
def test_half_precision_ops_within_torch_tolerances(dtype, op):
    a_l, a_t = _pair((16, 16), 7)
    b_l, b_t = _pair((16, 16), 8)
    ld, td = getattr(lucid, dtype), getattr(torch, dtype)
    a_l, b_l, a_t, b_t = a_l.to(ld), b_l.to(ld), a_t.to(td), b_t.to(td)
    fns = {
        "add": (lambda a, b: a + b, lambda a, b: a + b),
        "mul": (lambda a, b: a * b, lambda a, b: a * b),
        "exp": (lambda a, b: a.exp(), lambda a, b: a.exp()),
        "tanh": (lambda a, b: a.tanh(), lambda a, b: a.tanh()),
        "sum": (lambda a, b: a.sum(1), lambda a, b: a.sum(1)),
        "matmul": (lambda a, b: a @ b, lambda a, b: a @ b),
        "softmax": (lambda a, b: a.softmax(-1), lambda a, b: a.softmax(-1)),
    }
    fl, ft = fns[op]
    ol, ot = fl(a_l, b_l), ft(a_t, b_t)
    assert ol.dtype == ld
    # PyTorch's own half tolerances (torch.testing defaults)
    rtol, atol = (1e-3, 1e-5) if dtype == "float16" else (1.6e-2, 1e-5)
    if op in ("sum", "matmul"):
        atol = 0.05 if dtype == "float16" else 0.25  # accumulation order differs
    np.testing.assert_allclose(ol.float().numpy(), ot.float().numpy(), rtol=rtol, atol=atol)
