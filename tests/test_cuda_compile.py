"""Compiled steps on the cuda device: the traced step runs as the cuda
executable (one kernel per node, the whole step captured into one CUDA
graph and replayed), checked against the same loop run eagerly on cuda (and
against the CPU where the eager cuda path has no counterpart). Skipped
without a GPU.
"""
import os
import sys

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from lucid.compile import compile_optimizer, fused_step, make_step

HAS_CUDA = lucid.cuda.is_available()
pytestmark = pytest.mark.skipif(not HAS_CUDA, reason=f"no CUDA device ({lucid.cuda.unavailable_reason()})")


def _workloads():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from benchmarks import workloads
    from benchmarks.workloads import torchlike

    return workloads, torchlike


def _to_device(model, device):
    model.to(device)
    for m in model.modules():  # the benchmark GPT keeps its mask and positions as plain attributes
        for name in ("mask", "positions"):
            if isinstance(getattr(m, name, None), lucid.Tensor):
                setattr(m, name, getattr(m, name).to(device))
    return model


def _params(model):  # copies: on the CPU, numpy() shares the parameter's memory
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def _close(a, e, rtol, atol, what):
    assert len(a) == len(e)
    for k, (x, y) in enumerate(zip(a, e)):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=f"{what} {k}")


def _captured(step):
    (exe,) = step.executables()
    return exe.describe()


@pytest.mark.parametrize("name", ["mlp_small", "cnn_small", "gpt_tiny"])
def test_fused_step_matches_eager(name):
    workloads, torchlike = _workloads()
    w = dict(workloads.WORKLOADS[name])
    if name == "gpt_tiny":
        w.update(ctx=32, batch=4)
    if name == "cnn_small":
        w.update(batch=8)
    data = workloads.make_data(w)
    runs = {}
    for compiled in (False, True):
        lucid.manual_seed(0)
        model = _to_device(torchlike.build_model(lucid, w), "cuda")
        loss_fn = torchlike.loss_fn(lucid, w)
        opt = torchlike.make_optimizer(lucid, w["optimizer"], model.parameters())
        x, y = lucid.tensor(data["x"], device="cuda"), lucid.tensor(data["y"], device="cuda")
        step = fused_step(model, loss_fn, opt) if compiled else None
        losses = []
        for _ in range(4):
            if compiled:
                loss = step(x, y)
            else:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
            assert loss.device.type == "cuda"
            losses.append(loss.item())
        runs[compiled] = (losses, _params(model))
        if compiled:
            assert "CUDA graph captured (1 capture)" in _captured(step), _captured(step)
            assert step.cache_info().misses == 1
    np.testing.assert_allclose(runs[True][0], runs[False][0], rtol=1e-5, atol=1e-6)
    _close(runs[True][1], runs[False][1], 1e-4, 1e-5, "parameter")


def _mlp(device):
    lucid.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4)).to(device)


def _data(seed=0, n=16):
    r = np.random.default_rng(seed)
    return r.standard_normal((n, 8)).astype(np.float32), r.standard_normal((n, 4)).astype(np.float32)


OPTIMIZERS = [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)), ("SGD", dict(lr=0.05, weight_decay=0.01)),
              ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
              ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)), ("Adagrad", dict(lr=0.1))]


@pytest.mark.parametrize("opt_name,kw", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_optimizers_match_eager(opt_name, kw):
    xs, ys = _data()
    out = {}
    for compiled in (False, True):
        model = _mlp("cuda")
        opt = getattr(lucid.optim, opt_name)(model.parameters(), **kw)
        step = fused_step(model, F.mse_loss, opt) if compiled else None
        losses = []
        for k in range(5):
            x, y = lucid.tensor(xs * (1 + k / 10), device="cuda"), lucid.tensor(ys, device="cuda")
            if compiled:
                losses.append(step(x, y).item())
            else:
                opt.zero_grad()
                loss = F.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        out[compiled] = (losses, _params(model),
                         [s.detach().cpu().numpy() for st in opt.state.values() for s in st.values()
                          if isinstance(s, lucid.Tensor) and s.numel() > 1])
    np.testing.assert_allclose(out[True][0], out[False][0], rtol=1e-5, atol=1e-7)
    _close(out[True][1], out[False][1], 1e-5, 1e-6, "parameter")
    _close(out[True][2], out[False][2], 1e-5, 1e-7, "state")


def test_lr_scheduler_changes_lr_without_recapture():
    xs, ys = _data()
    out = {}
    for compiled in (False, True):
        model = _mlp("cuda")
        opt = lucid.optim.Adam(model.parameters(), lr=0.05)
        sched = lucid.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        step = fused_step(model, F.mse_loss, opt) if compiled else None
        x, y = lucid.tensor(xs, device="cuda"), lucid.tensor(ys, device="cuda")
        snapshots = []
        for k in range(4):
            if compiled:
                step(x, y)
            else:
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                opt.step()
            sched.step()
            if k == 2:
                opt.param_groups[0]["lr"] = 0.3  # a hand edit as well
            snapshots.append(_params(model))
        out[compiled] = snapshots
        if compiled:
            assert step.cache_info().misses == 1
            assert "(1 capture)" in _captured(step)
    for k in range(4):
        _close(out[True][k], out[False][k], 1e-5, 1e-6, f"step {k} parameter")


def test_grad_scaler_with_an_overflowing_step():
    # The eager GradScaler on the CPU is the reference (the CPU suite checks
    # it against PyTorch); the second batch's NaN target makes every gradient NaN.
    xs, ys = _data()
    bad = ys.copy()
    bad[0, 0] = np.nan
    batches = [ys, bad, ys, ys]
    out = {}
    for device, compiled in (("cpu", False), ("cuda", True)):
        model = _mlp(device)
        opt = lucid.optim.Adam(model.parameters(), lr=0.01)
        scaler = lucid.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
        step = fused_step(model, F.mse_loss, opt, scaler) if compiled else None
        scales, params = [], []
        for b in batches:
            x, y = lucid.tensor(xs, device=device), lucid.tensor(b, device=device)
            if compiled:
                step(x, y)
            else:
                opt.zero_grad()
                scaler.scale(F.mse_loss(model(x), y)).backward()
                scaler.step(opt)
                scaler.update()
            scales.append(scaler.get_scale())
            params.append(_params(model))
        out[device] = (scales, params, opt.state_dict()["state"][0]["step"])
        if compiled:
            assert "(1 capture)" in _captured(step)
    assert out["cuda"][0] == out["cpu"][0] == [2.0**10, 2.0**9, 2.0**9, 2.0**10]
    for k in range(len(batches)):
        _close(out["cuda"][1][k], out["cpu"][1][k], 1e-5, 1e-6, f"step {k} parameter")
    _close(out["cuda"][1][1], out["cuda"][1][0], 0, 0, "overflow step parameter")  # unchanged, bit for bit
    assert float(out["cuda"][2]) == float(out["cpu"][2]) == 3


def test_make_step_and_compile_optimizer_match_eager():
    xs, ys = _data()
    out = {}
    for compiled in (False, True):
        model = _mlp("cuda")
        opt = lucid.optim.AdamW(model.parameters(), lr=0.01)
        copt = compile_optimizer(opt) if compiled else opt
        grads_step = make_step(model, F.mse_loss) if compiled else None
        grads = []
        for k in range(3):
            x, y = lucid.tensor(xs * (k + 1), device="cuda"), lucid.tensor(ys, device="cuda")
            copt.zero_grad()
            if compiled:
                grads_step(x, y)
            else:
                F.mse_loss(model(x), y).backward()
            grads.append([p.grad.detach().cpu().numpy() for p in model.parameters()])
            copt.step()
        out[compiled] = (grads, _params(model))
    for k in range(3):
        _close(out[True][0][k], out[False][0][k], 1e-5, 1e-6, f"step {k} gradient")
    _close(out[True][1], out[False][1], 1e-5, 1e-6, "parameter")


@pytest.mark.parametrize("api", ["make_step", "fused_step"])
def test_dropout_in_a_compiled_step_draws_on_the_device_the_cpu_numbers(api):
    # The step's random key is a host feed; its draws are made on the step's
    # device (they were declared on the host, and the mask then met a cuda
    # tensor). Same seed, same Philox stream: the same losses as on the CPU.
    xs, ys = _data()
    losses = {}
    for device in ("cpu", "cuda"):
        lucid.manual_seed(0)
        model = nn.Sequential(nn.Linear(xs.shape[1], 16), nn.Dropout(0.5), nn.Linear(16, ys.shape[1])).to(device)
        opt = lucid.optim.SGD(model.parameters(), lr=0.05)
        step = make_step(model, F.mse_loss) if api == "make_step" else fused_step(model, F.mse_loss, opt)
        x, y = lucid.tensor(xs, device=device), lucid.tensor(ys, device=device)
        lucid.manual_seed(1)
        losses[device] = [float(step(x, y)) for _ in range(3)]
    assert len(set(losses["cuda"])) == 3  # a fresh mask per call
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-5)


def test_graphs_off_runs_the_same_schedule(monkeypatch):
    xs, ys = _data()
    out = {}
    for graphs in ("0", "1"):
        monkeypatch.setenv("LUCID_CUDA_GRAPHS", graphs)
        model = _mlp("cuda")
        opt = lucid.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        step = fused_step(model, F.mse_loss, opt)
        x, y = lucid.tensor(xs, device="cuda"), lucid.tensor(ys, device="cuda")
        losses = [step(x, y).item() for _ in range(3)]
        out[graphs] = (losses, _params(model))
        assert ("CUDA graphs off" in _captured(step)) == (graphs == "0")
    assert out["0"][0] == out["1"][0]
    _close(out["0"][1], out["1"][1], 0, 0, "parameter")


def test_new_arguments_are_read_on_every_call():
    # New argument tensors each call are copied into the graph's slots.
    xs, ys = _data()
    model = _mlp("cuda")
    ref = _mlp("cuda")
    opt = lucid.optim.SGD(model.parameters(), lr=0.1)
    ropt = lucid.optim.SGD(ref.parameters(), lr=0.1)
    step = fused_step(model, F.mse_loss, opt)
    for k in range(3):
        x = lucid.tensor(xs + k, device="cuda")
        y = lucid.tensor(ys - k, device="cuda")
        a = step(x, y).item()
        ropt.zero_grad()
        loss = F.mse_loss(ref(x), y)
        loss.backward()
        ropt.step()
        np.testing.assert_allclose(a, loss.item(), rtol=1e-6)
    _close(_params(model), _params(ref), 1e-6, 1e-7, "parameter")


def test_a_host_fallback_primitive_runs_without_a_graph():
    # cumsum (the Scan primitive) runs on the host: a step holding it cannot
    # be captured, and runs its schedule as plain launches, still equal to eager.
    xs, ys = _data()

    def loss_fn(out, target):
        return F.mse_loss(lucid.cumsum(out, 1), target)

    out = {}
    for compiled in (False, True):
        model = _mlp("cuda")
        opt = lucid.optim.Adam(model.parameters(), lr=0.01)
        step = fused_step(model, loss_fn, opt) if compiled else None
        x, y = lucid.tensor(xs, device="cuda"), lucid.tensor(ys, device="cuda")
        losses = []
        for _ in range(3):
            if compiled:
                losses.append(step(x, y).item())
            else:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        out[compiled] = (losses, _params(model))
        if compiled:
            assert "not captured" in _captured(step), _captured(step)
    np.testing.assert_allclose(out[True][0], out[False][0], rtol=1e-5, atol=1e-7)
    _close(out[True][1], out[False][1], 1e-5, 1e-6, "parameter")
