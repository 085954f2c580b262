"""Where a fused_step's time goes on the cuda device: the step's schedule run
as plain launches with a sync after each kernel (so the sum is above the
graph's replay time), the most expensive kernels listed.

    python -m benchmarks.cuda_profile [--workload gpt_tiny] [--steps 10] [--top 25]
"""
import argparse
import collections
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import workloads  # noqa: E402
from benchmarks.cuda import _setup  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="gpt_tiny")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    import lucid

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
