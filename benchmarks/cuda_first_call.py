"""The first call of a fused_step on the cuda device (trace, compile,
kernel compilation, capture), each workload in a fresh process, with an
empty kernel cache (cold: what a new machine or a new Lucid version pays)
and then with the cache that run filled (warm: every later process).

    python -m benchmarks.cuda_first_call [-w mlp_small,cnn_small,gpt_tiny,gpt_small]

"first call" is the fused step's first call alone; "from first use" also
counts from the process's first CUDA operation (building the model on the
device), during which the kernels most programs need start compiling;
"NVRTC" is how many modules the process compiled and their compile times
summed (they compile side by side).
"""
import re
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import workloads  # noqa: E402
from benchmarks.cuda import EXTRA, _setup  # noqa: E402


def _child(name):
    import lucid

    w = EXTRA.get(name) or workloads.WORKLOADS[name]
    data = workloads.make_data(w)
    t_use = time.perf_counter()
    model, loss_fn, opt, x, y = _setup(lucid, w, data)
    step = lucid.compile.fused_step(model, loss_fn, opt)
    t0 = time.perf_counter()
    step(x, y).item()
    t1 = time.perf_counter()
    print(json.dumps({"first_ms": 1e3 * (t1 - t0), "from_use_ms": 1e3 * (t1 - t_use)}))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("-w", "--workloads", default="mlp_small,cnn_small,gpt_tiny,gpt_small")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(args.child)
    print(f"{'workload':<12}{'cache':<7}{'first call ms':>15}{'from first use ms':>19}{'NVRTC':>20}")
    for name in args.workloads.split(","):
        with tempfile.TemporaryDirectory() as cache:
            for state in ("cold", "warm"):
                env = dict(os.environ, LUCID_CUDA_CACHE=cache, LUCID_CUDA_COMPILE_LOG="1")
                run = subprocess.run([sys.executable, "-m", "benchmarks.cuda_first_call", "--child", name], env=env,
                                     capture_output=True, text=True, timeout=300)
                if run.returncode:
                    print(f"{name:<12}{state:<7} failed:\n{run.stderr[-2000:]}")
                    break
                r = json.loads(run.stdout.strip().splitlines()[-1])
                compiles = [float(t) for t in re.findall(r"^lucid cuda: compiled .* in ([0-9.]+) s$", run.stderr, re.M)]
                nvrtc = f"{len(compiles)} in {sum(compiles):.1f} s"
                print(f"{name:<12}{state:<7}{r['first_ms']:>15.0f}{r['from_use_ms']:>19.0f}{nvrtc:>20}", flush=True)


if __name__ == "__main__":
    main()
