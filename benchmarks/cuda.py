"""Training steps on the cuda device, Lucid beside its peers in one run.

    python -m benchmarks --device cuda [--workloads mlp_small,gpt_tiny] [--steps 50] [--variants ...]
                                       [--precision bfloat16]   (the forward under cuda autocast)
    python -m benchmarks.cuda ...   (the same)

Each step is a whole training step (forward, loss, backward, optimizer
update) followed by a read-back of the loss, a sync per step as the suite
measures. Variants, all in one process on one GPU:

- lucid eager: zero_grad, forward, backward, opt.step();
- lucid fused_step: `lucid.compile.fused_step` (the step captured into one
  CUDA graph, replayed per call);
- torch eager: the same loop (PyTorch's default foreach optimizer), and with
  its fused optimizer;
- torch.compile: `torch.compile(step, mode="reduce-overhead")` of the whole
  step function;
- torch graph: the whole step captured by hand into one
  `torch.cuda.CUDAGraph` (capturable optimizer, static inputs), replayed;
- jax jit: `jax.jit` of value_and_grad + optax (benchmarks/peers/jax_peer.py),
  where JAX with a GPU and optax are installed.

Prints median ms per step, the first call (trace/compile/capture included),
peak device memory where the framework reports it, loss0, and Lucid
fused_step's time divided by each row's. Every framework builds its model
from the same source (workloads/torchlike.py, jax_peer.py) and the same data.
"""
import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import workloads  # noqa: E402
from benchmarks.workloads import torchlike  # noqa: E402

# The fixed cost of a step: a one-layer 16->16 MLP on a batch of 4 (what a
# call costs beyond its kernels: launch, feeds, the loss read-back).
TINY = {"kind": "train", "model": "mlp", "sizes": [16, 16], "batch": 4, "optimizer": {"name": "SGD", "lr": 1e-2},
        "what": "Linear 16->16, batch 4, cross-entropy, SGD"}

# The GPT-2-small-like workload (cuda only: too large for the CPU suite).
GPT_SMALL = {"kind": "train", "model": "gpt", "vocab": 8192, "ctx": 512, "layers": 12, "d_model": 768, "heads": 12,
             "mlp_ratio": 4, "batch": 8, "optimizer": workloads.ADAMW,
             "what": "GPT-2-small-like: vocab 8192, context 512, 12 layers, d_model 768, batch 8, AdamW"}
EXTRA = {"tiny": TINY, "gpt_small": GPT_SMALL}

VARIANTS = ["lucid eager", "lucid fused_step", "torch eager", "torch eager fused opt", "torch.compile",
            "torch graph", "jax jit"]


def _to_device(lib, model, device):
    model.to(device)
    # the benchmark GPT keeps its mask and positions as plain attributes
    for m in model.modules():
        for name in ("mask", "positions"):
            t = getattr(m, name, None)
            if isinstance(t, lib.Tensor):
                setattr(m, name, t.to(device))
    return model


def _setup(lib, w, data, precision="float32", **opt_extra):
    lib.manual_seed(0)
    model = _to_device(lib, torchlike.autocast(lib, torchlike.build_model(lib, w), precision, "cuda"), "cuda")
    loss_fn = torchlike.loss_fn(lib, w)
    opt = torchlike.make_optimizer(lib, w["optimizer"], model.parameters(), **opt_extra)
    x, y = lib.tensor(data["x"]).to("cuda"), lib.tensor(data["y"]).to("cuda")
    return model, loss_fn, opt, x, y


def _time(step, sync, steps):
    """step() runs one step and returns its loss as a float (the sync)."""
    sync()
    t0 = time.perf_counter()
    loss0 = step()
    first = time.perf_counter() - t0
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"median_ms": 1e3 * statistics.median(times), "first_ms": 1e3 * first, "loss0": loss0}


def lucid_variant(w, data, steps, fused, precision):
    import lucid

    model, loss_fn, opt, x, y = _setup(lucid, w, data, precision)
    if fused:
        compiled = lucid.compile.fused_step(model, loss_fn, opt)

        def step():
            return compiled(x, y).item()
    else:
        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()

    r = _time(step, lucid.cuda.synchronize, steps)
    if fused:
        r["note"] = compiled.executables()[0].describe().split("; ")[-1]
    return r


def torch_variant(w, data, steps, variant, precision):
    import torch

    fused = variant == "torch eager fused opt"
    capturable = variant == "torch graph" and w["optimizer"]["name"] in ("Adam", "AdamW")
    extra = {"fused": True} if fused else ({"capturable": True} if capturable else {})
    model, loss_fn, opt, x, y = _setup(torch, w, data, precision, **extra)

    def body():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if variant in ("torch eager", "torch eager fused opt"):
        return _time(lambda: body().item(), torch.cuda.synchronize, steps)
    if variant == "torch.compile":
        compiled = torch.compile(body, mode="reduce-overhead")

        def call():
            torch.compiler.cudagraph_mark_step_begin()  # each call a new step: earlier outputs may be overwritten
            return compiled().item()

        return _time(call, torch.cuda.synchronize, steps)
    # torch graph: warm up on a side stream, then capture the whole step (the
    # recipe of PyTorch's CUDA graphs notes, "whole network capture").
    t0 = time.perf_counter()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(x), y)
        static_loss.backward()
        opt.step()
    capture_s = time.perf_counter() - t0

    def replay():
        graph.replay()
        return static_loss.item()

    r = _time(replay, torch.cuda.synchronize, steps)
    r["first_ms"] += 1e3 * capture_s
    r["note"] = "3 warm-up steps before capture"
    return r


def jax_variant(w, data, steps, precision):
    if precision != "float32":
        raise NotImplementedError("the JAX peer runs float32 only")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp
    import optax

    if jax.default_backend() != "gpu":
        raise RuntimeError(f"JAX has no GPU backend here ({jax.default_backend()})")
    # strict float32 as the other variants: JAX's default float32 dot on a GPU
    # with tensor cores rounds its operands to TF32
    jax.config.update("jax_default_matmul_precision", "highest")
    from benchmarks.peers import jax_peer

    jax_peer.jax, jax_peer.jnp, jax_peer.optax = jax, jnp, optax
    runner = jax_peer.build(w, "jit", data)
    r = _time(lambda: runner.loss_value(runner.step()), lambda: None, steps)
    r["note"] = f"jax {jax.__version__}"
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks --device cuda")
    ap.add_argument("--device", default="cuda", choices=["cuda"])
    ap.add_argument("--workloads", default="tiny,mlp_small,mlp_large,cnn_small,gpt_tiny",
                    help="suite workloads, `tiny` (the fixed cost of a step) and `gpt_small`")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--precision", choices=("float32", "bfloat16", "float16"), default="float32",
                    help="each model's forward under cuda autocast to this dtype (the loss in float32)")
    args = ap.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"unknown variant {v!r}; known: {', '.join(VARIANTS)}")
    import lucid
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    precision = "float32" if args.precision == "float32" else f"{args.precision} autocast, float32"
    print(f"device: {lucid.cuda.get_device_name()}; torch {torch.__version__}; lucid {lucid.__version__}; "
          f"{precision} (no TF32); median of {args.steps} steps after 5 warm-ups, a loss read-back each step")
    print(f"{'workload':<12}{'variant':<24}{'median ms':>10}{'first ms':>10}{'peak MiB':>10}{'loss0':>10}"
          f"{'fused/this':>12}  note")
    for name in args.workloads.split(","):
        w = EXTRA.get(name) or workloads.WORKLOADS[name]
        data = workloads.make_data(w)
        rows = []
        for v in variants:
            gc.collect()  # the previous variant's tensors leave the device before the peak is reset
            lucid.cuda.reset_peak_memory_stats()
            torch.cuda.reset_peak_memory_stats()
            try:
                if v.startswith("lucid"):
                    r = lucid_variant(w, data, args.steps, v == "lucid fused_step", args.precision)
                    r["peak_mib"] = lucid.cuda.max_memory_allocated() / 2**20
                elif v.startswith("torch"):
                    r = torch_variant(w, data, args.steps, v, args.precision)
                    r["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
                else:
                    r = jax_variant(w, data, args.steps, args.precision)
            except Exception as e:  # a variant that cannot run here: say so, keep going
                r = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}"}
            rows.append((v, r))
            if v == "torch.compile":
                torch._dynamo.reset()
        fused = dict(rows).get("lucid fused_step", {}).get("median_ms")
        for v, r in rows:
            if "error" in r:
                print(f"{name:<12}{v:<24} failed: {r['error']}", flush=True)
                continue
            ratio = f"{fused / r['median_ms']:>11.2f}x" if fused else f"{'':>12}"
            peak = f"{r['peak_mib']:>10.1f}" if "peak_mib" in r else f"{'-':>10}"
            print(f"{name:<12}{v:<24}{r['median_ms']:>10.3f}{r['first_ms']:>10.1f}{peak}{r['loss0']:>10.4f}{ratio}"
                  f"  {r.get('note', '')}", flush=True)


if __name__ == "__main__":
    main()
