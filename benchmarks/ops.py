"""Eager op throughput: Lucid vs PyTorch on this machine, same inputs, same
thread count.

    python -m benchmarks.ops [--reps 30] [--threads N] [--only add,matmul_1024]

Workloads (float32): elementwise add, mul, exp and gelu over 4M elements;
sum over the rows and over the columns of a 2048x2048 matrix; square
matmuls of 256, 1024 and 2048; softmax over the last dim of 4096x1024. Plus the shapes of a small GPT's
training step (gpt_tiny): head-split permutes, column sums of activations
(bias gradients), softmax over attention rows, GELU of the MLP.
Each op runs out of place (allocating its result, as user code does) after
warm-up; the table reports the median time per call and the ratio torch
time / Lucid time (above 1: Lucid is faster), plus Lucid's effective memory
bandwidth (elementwise, reductions, softmax: bytes read + written) or
GFLOP/s (matmul), and how far Lucid's result is from PyTorch's (max absolute
difference over max magnitude).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import lucid
import lucid.nn.functional as LF

ELEMENTWISE_N = 4 * 1024 * 1024


def _workloads():
    """name -> (make inputs as NumPy arrays, lucid fn, torch fn, work, unit)."""
    rng = np.random.default_rng(0)

    def arrays(*shapes):
        return lambda: [rng.standard_normal(s, dtype=np.float32) for s in shapes]

    n = ELEMENTWISE_N
    mb = 1e-9  # bytes -> GB
    w = {
        "add 4M": (arrays((n,), (n,)), lambda a, b: a + b, lambda a, b: a + b, 12 * n * mb, "GB/s"),
        "mul 4M": (arrays((n,), (n,)), lambda a, b: a * b, lambda a, b: a * b, 12 * n * mb, "GB/s"),
        "exp 4M": (arrays((n,)), lucid.exp, torch.exp, 8 * n * mb, "GB/s"),
        "gelu 4M": (arrays((n,)), LF.gelu, torch.nn.functional.gelu, 8 * n * mb, "GB/s"),
        "sum rows 2048x2048": (arrays((2048, 2048)), lambda a: a.sum(1), lambda a: a.sum(1), 4 * 2048 * 2049 * mb,
                               "GB/s"),
        "sum cols 2048x2048": (arrays((2048, 2048)), lambda a: a.sum(0), lambda a: a.sum(0), 4 * 2048 * 2049 * mb,
                               "GB/s"),
        "softmax 4096x1024": (arrays((4096, 1024)), lambda a: lucid.softmax(a, -1), lambda a: torch.softmax(a, -1),
                              8 * 4096 * 1024 * mb, "GB/s"),
    }
    # gpt_tiny shapes. Permutes are materialised on the torch side too.
    perms = {
        "permute qkv 16x128x3x4x32": ((16, 128, 3, 4, 32), (2, 0, 3, 1, 4)),
        "permute heads 16x128x4x32": ((16, 128, 4, 32), (0, 2, 1, 3)),
        "permute kT 16x4x32x128": ((16, 4, 32, 128), (0, 1, 3, 2)),
    }
    for name, (shape, perm) in perms.items():
        w[name] = (arrays(shape), lambda a, p=perm: a.permute(*p), lambda a, p=perm: a.permute(*p).contiguous(),
                   8 * int(np.prod(shape)) * mb, "GB/s")
    for name, shape, dims in (("sum cols 16x128x128", (16, 128, 128), (0, 1)),
                              ("sum cols 16x128x512", (16, 128, 512), (0, 1)),
                              ("sum rows 16x128x128", (16, 128, 128), (2,))):
        w[name] = (arrays(shape), lambda a, d=dims: a.sum(d, keepdim=True), lambda a, d=dims: a.sum(d, keepdim=True),
                   4 * int(np.prod(shape)) * mb, "GB/s")
    w["softmax 16x4x128x128"] = (arrays((16, 4, 128, 128)), lambda a: lucid.softmax(a, -1),
                                 lambda a: torch.softmax(a, -1), 8 * 16 * 4 * 128 * 128 * mb, "GB/s")
    causal = np.triu(np.full((128, 128), -np.inf, np.float32), 1)  # attention rows: half the entries masked
    w["softmax causal 16x4x128x128"] = (lambda: [rng.standard_normal((16, 4, 128, 128), dtype=np.float32) + causal],
                                        lambda a: lucid.softmax(a, -1), lambda a: torch.softmax(a, -1),
                                        8 * 16 * 4 * 128 * 128 * mb, "GB/s")
    w["log_softmax 2048x256"] = (arrays((2048, 256)), lambda a: lucid.log_softmax(a, -1),
                                 lambda a: torch.log_softmax(a, -1), 8 * 2048 * 256 * mb, "GB/s")
    w["gelu 16x128x512"] = (arrays((16, 128, 512)), LF.gelu, torch.nn.functional.gelu, 8 * 16 * 128 * 512 * mb,
                            "GB/s")
    for s in (256, 1024, 2048):
        w[f"matmul {s}"] = (arrays((s, s), (s, s)), lambda a, b: a @ b, lambda a, b: a @ b, 2 * s ** 3 * 1e-9,
                            "GFLOP/s")
    return w


def _median_ms(l_call, t_call, reps, warmup):
    """Median ms per call of each, timed alternately so that both see the
    same machine load."""
    for _ in range(warmup):
        l_call()
        t_call()
    l_times, t_times = [], []
    for _ in range(reps):
        for call, times in ((l_call, l_times), (t_call, t_times)):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
    return statistics.median(l_times) * 1e3, statistics.median(t_times) * 1e3


def run(reps=30, warmup=5, threads=None, only=None):
    threads = threads or lucid.get_num_threads()
    lucid.set_num_threads(threads)
    torch.set_num_threads(threads)
    rows = []
    for name, (make, lfn, tfn, work, unit) in _workloads().items():
        if only and not any(o in name.replace(" ", "_") or o == name for o in only):
            continue
        inputs = make()
        l_args = [lucid.tensor(a) for a in inputs]
        t_args = [torch.from_numpy(a.copy()) for a in inputs]
        with lucid.no_grad(), torch.no_grad():
            # how far apart the two answers are, reported next to the times
            ref = tfn(*t_args).numpy().astype(np.float64)
            diff = float(np.max(np.abs(lfn(*l_args).numpy() - ref)) / max(1.0, float(np.max(np.abs(ref)))))
            l_ms, t_ms = _median_ms(lambda: lfn(*l_args), lambda: tfn(*t_args), reps, warmup)
        rows.append((name, l_ms, t_ms, t_ms / l_ms, work / (l_ms * 1e-3), unit, diff))
    return threads, rows


def table(threads, rows):
    out = [f"Lucid {lucid.__version__} vs PyTorch {torch.__version__}, {threads} thread(s), float32, median of "
           f"timed calls.", "",
           "| op | lucid ms | torch ms | torch/lucid | lucid throughput | max rel. diff |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, l_ms, t_ms, ratio, rate, unit, diff in rows:
        out.append(f"| {name} | {l_ms:.3f} | {t_ms:.3f} | {ratio:.2f} | {rate:.1f} {unit} | {diff:.1e} |")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--only", default=None, help="comma-separated workload names (spaces as _), e.g. add_4M,matmul")
    a = p.parse_args(argv)
    threads, rows = run(a.reps, a.warmup, a.threads, a.only.split(",") if a.only else None)
    print(table(threads, rows))


if __name__ == "__main__":
    main()
