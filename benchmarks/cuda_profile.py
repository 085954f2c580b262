"""Where a fused_step's time goes on the cuda device: the step's schedule run
as plain launches with a sync after each kernel (so the sum is above the
graph's replay time), the most expensive kernels listed.

    python -m benchmarks.cuda_profile [--workload gpt_tiny] [--steps 10] [--top 25] [--no-cudnn]
    python -m benchmarks.cuda_profile --fixed-cost   # a tiny step's host costs, split
"""
import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import workloads  # noqa: E402
from benchmarks.cuda import TINY, _setup  # noqa: E402


def _per_call_us(fn, calls):
    """Median over 5 rounds of the mean time of `calls` calls of fn, in us."""
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - t0) / calls)
    return 1e6 * statistics.median(rounds)


def fixed_cost(calls=2000):
    """The tiny step's cost split into what a call submits, the wait, and the
    loss read-back, beside the driver operations it is made of."""
    import lucid

    model, loss_fn, opt, x, y = _setup(lucid, TINY, workloads.make_data(TINY))
    step = lucid.compile.fused_step(model, loss_fn, opt)
    for _ in range(20):
        loss = step(x, y).item()
    (exe,) = step.executables()
    print(exe.describe())
    sync = lucid.cuda.synchronize
    loss = step(x, y)
    sync()
    small = lucid.zeros(4, device="cuda")
    rows = [
        ("step + loss.item()", lambda: step(x, y).item()),
        ("step, then synchronize()", lambda: (step(x, y), sync())),
        ("step submitted (sync every 50 calls)", None),
        ("synchronize() of an idle stream", sync),
        ("loss.item() of a ready loss", loss.item),
        ("a 16-byte device copy (clone) + sync", lambda: (small.clone(), sync())),
        ("an empty device tensor + sync", lambda: (lucid.empty(4, device="cuda"), sync())),
    ]
    counter = [0]

    def submit():
        step(x, y)
        counter[0] += 1
        if counter[0] % 50 == 0:
            sync()

    for label, fn in rows:
        print(f"{_per_call_us(fn or submit, calls):8.1f} us  {label}")

    # The host's share of a submitted call, from the profiler's events.
    parts = {"lucid::compiled_step": "the executable's run and the step's bookkeeping",
             "cuda::stage_call": "  feeds and copy tables staged (uploaded when changed)",
             "cuMemcpyHtoDAsync": "    of which the upload",
             "cuGraphLaunch": "  the graph launch"}
    totals = dict.fromkeys(parts, 0.0)
    with lucid.profiler.profile() as prof:
        t0 = time.perf_counter()
        for _ in range(calls):
            step(x, y)
        total_us = 1e6 * (time.perf_counter() - t0) / calls
        sync()
    for e in prof.events():
        if e.name in totals:
            totals[e.name] += e.cpu_time_total / calls
    print(f"{total_us:8.1f} us  a submitted call under the profiler, of which:")
    for name, label in parts.items():
        print(f"{totals[name]:8.1f} us  {label}")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="gpt_tiny")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--fixed-cost", action="store_true", help="split a tiny step's fixed cost")
    ap.add_argument("--no-cudnn", action="store_true", help="convolutions without cuDNN (im2col + cuBLAS)")
    args = ap.parse_args(argv)
    if args.fixed_cost:
        return fixed_cost()
    import lucid

    if args.no_cudnn:
        lucid.backends.cudnn.enabled = False
    w = workloads.WORKLOADS[args.workload]
    model, loss_fn, opt, x, y = _setup(lucid, w, workloads.make_data(w))
    step = lucid.compile.fused_step(model, loss_fn, opt)
    step(x, y).item()
    (exe,) = step.executables()
    print(exe.describe())
    exe.set_profiling(True)
    for _ in range(args.steps):
        step(x, y).item()
    prof, n = exe.profile(), exe.profiled_runs
    exe.set_profiling(False)  # (resets the counts)
    total = sum(s for _, s in prof) / n
    print(f"{args.workload}: {len(prof)} kernels, {1e3 * total:.3f} ms per step with a sync after each")
    by_kind = collections.Counter()
    for label, s in prof:
        by_kind[label.split(" ")[0]] += s / n
    print("by kind (ms):", ", ".join(f"{k} {1e3 * v:.3f}" for k, v in by_kind.most_common(12)))
    for label, s in sorted(prof, key=lambda e: -e[1])[:args.top]:
        print(f"{1e6 * s / n:9.1f} us  {label}")


if __name__ == "__main__":
    main()
