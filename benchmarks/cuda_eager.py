"""Eager training steps on the cuda device, Lucid beside PyTorch in one run.

    python -m benchmarks.cuda_eager [--workloads mlp_small,gpt_tiny] [--steps 50]

Each step is zero_grad, forward, loss, backward, optimizer step and a
read-back of the loss (a sync per step, as the suite measures). Both
frameworks build the model from the same source (workloads/torchlike.py)
and the same data; PyTorch runs its default (foreach) optimizer and, where
it has one, its fused optimizer. Prints median ms per step, the first step
and peak device memory, and each Lucid/PyTorch ratio.
"""
import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import workloads  # noqa: E402
from benchmarks.workloads import torchlike  # noqa: E402


def _to_device(lib, model, device):
    model.to(device)
    # the benchmark GPT keeps its mask and positions as plain attributes
    for m in model.modules():
        for name in ("mask", "positions"):
            t = getattr(m, name, None)
            if isinstance(t, lib.Tensor):
                setattr(m, name, t.to(device))
    return model


def measure(lib, w, data, steps, sync, max_memory, **opt_extra):
    lib.manual_seed(0)
    model = _to_device(lib, torchlike.build_model(lib, w), "cuda")
    loss_fn = torchlike.loss_fn(lib, w)
    opt = torchlike.make_optimizer(lib, w["optimizer"], model.parameters(), **opt_extra)
    x, y = lib.tensor(data["x"]).to("cuda"), lib.tensor(data["y"]).to("cuda")

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    sync()
    t0 = time.perf_counter()
    first_loss = step()
    first = time.perf_counter() - t0
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"median_ms": 1e3 * statistics.median(times), "first_ms": 1e3 * first, "loss0": first_loss,
            "peak_mib": max_memory() / 2**20}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="mlp_small,mlp_large,cnn_small,gpt_tiny")
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args(argv)
    import lucid
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device: {lucid.cuda.get_device_name()}; torch {torch.__version__}; lucid {lucid.__version__}")
    print(f"{'workload':<12}{'variant':<22}{'median ms':>10}{'first ms':>10}{'peak MiB':>10}{'loss0':>10}"
          f"{'lucid/this':>12}")
    for name in args.workloads.split(","):
        w = workloads.WORKLOADS[name]
        data = workloads.make_data(w)
        rows = []
        gc.collect()  # the previous workload's tensors leave the device before the peak is reset
        lucid.cuda.reset_peak_memory_stats()
        try:
            lu = measure(lucid, w, data, args.steps, lucid.cuda.synchronize, lucid.cuda.max_memory_allocated)
        except Exception as e:  # a workload lucid cannot run on cuda yet: say so, keep going
            print(f"{name:<12}{'lucid eager':<22} failed: {type(e).__name__}: {e}")
            continue
        rows.append(("lucid eager", lu))
        gc.collect()
        torch.cuda.reset_peak_memory_stats()
        rows.append(("torch eager", measure(torch, w, data, args.steps, torch.cuda.synchronize,
                                            torch.cuda.max_memory_allocated)))
        torch.cuda.reset_peak_memory_stats()
        rows.append(("torch eager fused opt", measure(torch, w, data, args.steps, torch.cuda.synchronize,
                                                      torch.cuda.max_memory_allocated, fused=True)))
        for label, r in rows:
            ratio = lu["median_ms"] / r["median_ms"]
            print(f"{name:<12}{label:<22}{r['median_ms']:>10.3f}{r['first_ms']:>10.1f}{r['peak_mib']:>10.1f}"
                  f"{r['loss0']:>10.4f}{ratio:>12.2f}x")


if __name__ == "__main__":
    main()
