"""What recording costs: an eager training step of a small MLP timed with
the profiler off and on, Lucid's (lucid.profiler) beside PyTorch's
(torch.profiler, CPU activity), on this CPU.

    python -m benchmarks.eager_profiler [--steps 200] [--width 64] [--threads 1]

Off, Lucid's recorder costs one atomic load per op; on, one event per
primitive and backward node. Reported: median ms per step and the on/off
ratio per library.
"""
import argparse
import platform
import statistics
import time


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _time_steps(lib, profile_factory, width, steps):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(width, width), lib.nn.ReLU(), lib.nn.Linear(width, width),
                              lib.nn.ReLU(), lib.nn.Linear(width, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x, y = lib.randn(32, width), lib.randint(0, 10, (32,))

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(10):
        step()
    times = []
    with profile_factory():
        for _ in range(steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    import contextlib

    import lucid

    rows = []
    lucid.set_num_threads(args.threads)
    rows.append(("lucid", _time_steps(lucid, contextlib.nullcontext, args.width, args.steps),
                 _time_steps(lucid, lucid.profiler.profile, args.width, args.steps)))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(args.threads)
        on = lambda: torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])  # noqa: E731
        rows.append(("torch", _time_steps(torch, contextlib.nullcontext, args.width, args.steps),
                     _time_steps(torch, on, args.width, args.steps)))
    print(f"CPU: {_cpu_name()}, {args.threads} thread(s); MLP width {args.width}, batch 32, {args.steps} steps")
    print(f"{'library':8} {'off ms/step':>12} {'on ms/step':>12} {'on/off':>8}")
    for name, off, on in rows:
        print(f"{name:8} {off:12.3f} {on:12.3f} {on / off:8.2f}")


if __name__ == "__main__":
    main()
