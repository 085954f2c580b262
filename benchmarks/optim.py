"""Eager optimizer steps: Lucid's engine optimizers vs PyTorch's CPU
implementations (for-loop, foreach, fused), and as a fraction of the
machine's memory bandwidth.

    python -m benchmarks.optim [--reps 20] [--threads N]

Workloads: adam_only_10M and sgd_only_10M, 10 float32 tensors of 1M
parameters with given gradients; one optimizer step each. The roofline is
the bandwidth of a = b + s*c over 64M float32 (STREAM triad: 12 bytes per
element), measured in the same run. An Adam step moves 28 bytes per
parameter (reads param, grad, exp_avg, exp_avg_sq; writes param, exp_avg,
exp_avg_sq), an SGD-momentum step 20 (reads param, grad, buffer; writes
param, buffer).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import lucid
import lucid.optim

N_TENSORS = 10
TENSOR_NUMEL = 1_000_000
TRIAD_NUMEL = 64 * 1024 * 1024
BYTES = {"adam": 28, "sgd": 20}


def _best_time(fn, reps, warmup=3):
    """Best of `reps` timings: on a shared machine the minimum is the most
    reproducible estimate of what the code itself costs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def triad_bandwidth(reps, numel=TRIAD_NUMEL):
    """GB/s of a = b + s*c over `numel` float32 (torch.add with out=: one pass)."""
    import torch

    b = torch.rand(numel)
    c = torch.rand(numel)
    a = torch.zeros(numel)
    t = _best_time(lambda: torch.add(b, c, alpha=3.0, out=a), reps)
    return 12 * numel / t / 1e9


def _data(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(TENSOR_NUMEL, dtype=np.float32) for _ in range(N_TENSORS)]
    grads = [rng.standard_normal(TENSOR_NUMEL, dtype=np.float32) for _ in range(N_TENSORS)]
    return params, grads


def lucid_step(kind, params, grads, reps):
    ps = []
    for p, g in zip(params, grads):
        t = lucid.tensor(p.copy(), requires_grad=True)
        t.grad = lucid.tensor(g)
        ps.append(t)
    opt = lucid.optim.Adam(ps, lr=1e-3) if kind == "adam" else lucid.optim.SGD(ps, lr=1e-3, momentum=0.9)
    return _best_time(opt.step, reps)


def torch_step(kind, params, grads, reps, impl):
    import torch

    ps = []
    for p, g in zip(params, grads):
        t = torch.tensor(p, requires_grad=True)
        t.grad = torch.tensor(g)
        ps.append(t)
    flags = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}[impl]
    if kind == "adam":
        opt = torch.optim.Adam(ps, lr=1e-3, **flags)
    else:
        opt = torch.optim.SGD(ps, lr=1e-3, momentum=0.9, **flags)
    return _best_time(opt.step, reps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="threads for both libraries (default: Lucid's)")
    args = parser.parse_args(argv)

    import torch

    threads = args.threads or lucid.get_num_threads()
    lucid.set_num_threads(threads)
    torch.set_num_threads(threads)
    bw = triad_bandwidth(args.reps)
    # The optimizer workloads touch 120-160 MB, which large last-level caches
    # partly hold; a triad of the same footprint shows that ceiling.
    bw_small = triad_bandwidth(args.reps, N_TENSORS * TENSOR_NUMEL)
    print(f"threads: {threads}; triad bandwidth (a = b + s*c, float32): {bw:.1f} GB/s over 64M elements "
          f"(the roofline), {bw_small:.1f} GB/s over 10M")
    params, grads = _data()
    n = N_TENSORS * TENSOR_NUMEL
    print(f"{'workload':<14} {'implementation':<16} {'ms/step':>9} {'GB/s':>7} {'% triad':>8} {'vs lucid':>9}")
    for kind in ("adam", "sgd"):
        name = f"{kind}_only_10M"
        rows = [("lucid", lucid_step(kind, params, grads, args.reps))]
        for impl in ("loop", "foreach", "fused"):
            rows.append((f"torch {impl}", torch_step(kind, params, grads, args.reps, impl)))
        base = rows[0][1]
        for label, t in rows:
            gbs = BYTES[kind] * n / t / 1e9
            print(f"{name:<14} {label:<16} {t * 1e3:9.2f} {gbs:7.1f} {100 * gbs / bw:7.1f}% {t / base:8.2f}x")


if __name__ == "__main__":
    main()
