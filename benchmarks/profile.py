"""Where a fused step's time goes: per-kernel totals of Lucid's compiled
training step on one workload.

    python -m benchmarks.profile gpt_tiny [--steps 20] [--top 30] [--threads N] [--precision bfloat16]

Each schedule entry of the executable (a kernel call or a fused elementwise
group) is timed on every step; the report lists the most expensive entries
and the totals per kind of primitive.
"""
import argparse
import collections
import os
import time

from . import workloads
from .workloads import torchlike


def _kind(label):
    return label.split(" ")[0].split("(")[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=[n for n in workloads.ORDER if workloads.get(n)["kind"] == "train"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--precision", choices=("float32", "bfloat16", "float16"), default="float32",
                    help="the forward under CPU autocast to this dtype")
    args = ap.parse_args(argv)

    import lucid
    from lucid.compile import fused_step

    lucid.set_num_threads(args.threads)
    lucid.manual_seed(0)
    w = workloads.get(args.workload)
    data = workloads.make_data(w)
    model = torchlike.autocast(lucid, torchlike.build_model(lucid, w), args.precision)
    opt = torchlike.make_optimizer(lucid, w["optimizer"], model.parameters())
    step = fused_step(model, torchlike.loss_fn(lucid, w), opt)
    x, y = lucid.tensor(data["x"]), lucid.tensor(data["y"])
    for _ in range(3):
        step(x, y)
    (exe,) = step.executables()
    exe.set_profiling(True)
    start = time.perf_counter()
    for _ in range(args.steps):
        step(x, y)
    wall = (time.perf_counter() - start) / args.steps
    entries = [(label, s / exe.profiled_runs) for label, s in exe.profile()]
    exe.set_profiling(False)

    total = sum(s for _, s in entries)
    print(f"{args.workload}: {exe.describe()}")
    print(f"{wall * 1e3:.3f} ms per call, {total * 1e3:.3f} ms in the schedule, {args.threads} threads\n")
    by_kind = collections.defaultdict(lambda: [0.0, 0])
    for label, s in entries:
        by_kind[_kind(label)][0] += s
        by_kind[_kind(label)][1] += 1
    print("| kind | ms | share | entries |\n| --- | ---: | ---: | ---: |")
    for k, (s, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        print(f"| {k} | {s * 1e3:.3f} | {s / total:.1%} | {n} |")
    print("\n| top entries | ms | share |\n| --- | ---: | ---: |")
    for label, s in sorted(entries, key=lambda e: -e[1])[:args.top]:
        short = label if len(label) <= 140 else label[:137] + "..."
        print(f"| {short} | {s * 1e3:.3f} | {s / total:.1%} |")


if __name__ == "__main__":
    main()
