"""Lucid's matmul in float32 and bfloat16 on the GEMMs of a training step,
one call at a time (eager), median ms and the bfloat16 GFLOP/s.

    python -m benchmarks.matmul_dtypes [--threads 1] [--reps 15]

The shapes: a linear layer's forward `x @ W^T` ([2048, 128] x [512, 128]^T),
its input gradient `dY @ W` and weight gradient `dY^T @ X`, and the batched
products of a 64-head attention with head size 32 over 128 positions.
"""
import argparse
import statistics
import time

import numpy as np

from .run import machine_info, machine_line

CASES = {
    "linear x @ W^T [2048,128]x[128,512]": ((2048, 128), (512, 128), lambda a, b: a @ b.T, 128),
    "linear dY @ W [2048,512]x[512,128]": ((2048, 512), (512, 128), lambda a, b: a @ b, 512),
    "linear dY^T @ X [512,2048]x[2048,128]": ((2048, 512), (2048, 128), lambda a, b: a.T @ b, 2048),
    "attention Q K^T 64x[128,32]x[32,128]": ((64, 128, 32), (64, 128, 32), lambda a, b: a @ b.transpose(-1, -2), 32),
    "attention P V 64x[128,128]x[128,32]": ((64, 128, 128), (64, 128, 32), lambda a, b: a @ b, 128),
    "attention P^T dO 64x[128,128]x[128,32]": ((64, 128, 128), (64, 128, 32), lambda a, b: a.transpose(-1, -2) @ b, 128),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args(argv)

    import lucid

    lucid.set_num_threads(args.threads)
    print(f"machine: {machine_line(machine_info(args.threads))}; {args.threads} threads")
    print("| GEMM | float32 ms | bfloat16 ms | bf16 / f32 | bf16 GFLOP/s |\n| --- | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    for name, (sa, sb, fn, k) in CASES.items():
        a32 = lucid.tensor(rng.standard_normal(sa).astype(np.float32))
        b32 = lucid.tensor(rng.standard_normal(sb).astype(np.float32))
        ms = []
        for dtype in (lucid.float32, lucid.bfloat16):
            a, b = a32.to(dtype), b32.to(dtype)
            for _ in range(3):
                fn(a, b)
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                fn(a, b)
                times.append(time.perf_counter() - t0)
            ms.append(statistics.median(times) * 1e3)
        flops = 2 * fn(a32, b32).numel() * k
        print(f"| {name} | {ms[0]:.3f} | {ms[1]:.3f} | {ms[1] / ms[0]:.2f} | {flops / ms[1] / 1e6:.0f} |")


if __name__ == "__main__":
    main()
