"""Mixed precision on the CPU: a training step with the model's forward in
float32, under bfloat16 autocast and under float16 autocast, Lucid's
fused_step beside PyTorch's eager loop, in one run.

    python -m benchmarks.cpu_autocast [-w gpt_tiny,mlp_small] [--steps 20] [--threads N]

Median ms per step; the ratio column is each row against the same
framework's float32 step (below 1.0: mixed precision is faster).
"""
import argparse
import os
import statistics
import time

from . import workloads
from .run import machine_info, machine_line
from .workloads import torchlike

PRECISIONS = ("float32", "bfloat16", "float16")


def _median_ms(step, steps):
    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _step(lib, w, data, precision, fused):
    lib.manual_seed(0)
    model = torchlike.autocast(lib, torchlike.build_model(lib, w), precision)
    loss_fn = torchlike.loss_fn(lib, w)
    opt = torchlike.make_optimizer(lib, w["optimizer"], model.parameters())
    x, y = lib.tensor(data["x"]), lib.tensor(data["y"])
    if fused:
        from lucid.compile import fused_step

        step = fused_step(model, loss_fn, opt)
        return lambda: step(x, y).item()

    def eager():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return eager


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--workloads", default="gpt_tiny,mlp_small")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args(argv)

    import lucid
    import torch

    lucid.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(f"machine: {machine_line(machine_info(args.threads))}; {args.threads} threads")
    print(f"lucid {lucid.__version__}, torch {torch.__version__}; median ms of {args.steps} steps\n")
    print("| workload | variant | precision | ms | vs float32 |\n| --- | --- | --- | ---: | ---: |")
    for name in args.workloads.split(","):
        w = workloads.get(name)
        data = workloads.make_data(w)
        for label, lib, fused in (("lucid fused_step", lucid, True), ("torch eager", torch, False)):
            base = None
            for precision in PRECISIONS:
                ms = _median_ms(_step(lib, w, data, precision, fused), args.steps)
                base = base or ms
                print(f"| {name} | {label} | {precision} | {ms:.3f} | {ms / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
