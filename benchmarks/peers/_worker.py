"""Measures one (framework, variant, workload) in its own process, so thread
settings, allocator state and peak memory belong to that variant alone.

Usage (the runner does this): python -m benchmarks.peers._worker SPEC.json OUT.json
The result is always written to OUT.json, also when the variant cannot run.
"""
import gc
import importlib
import json
import os
import platform
import resource
import sys
import time
import traceback

_START = time.perf_counter()

# Top-level modules whose absence means "framework not installed".
_PACKAGES = {"lucid": {"lucid"}, "torch": {"torch"}, "jax": {"jax", "jaxlib", "optax"},
             "mlx": {"mlx"}}


def thread_env(threads):
    """Environment every framework's worker starts with: the same thread
    count wherever a library reads one."""
    env = {name: str(threads) for name in
           ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
            "NUMEXPR_NUM_THREADS", "LUCID_NUM_THREADS")}
    xla = os.environ.get("XLA_FLAGS", "")
    if threads == 1:
        xla += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    else:
        xla += f" --xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"
    env["XLA_FLAGS"] = xla.strip()
    env["JAX_PLATFORMS"] = "cpu"
    return env


def pin_cpus(threads):
    """Restricts the process to `threads` CPUs when fewer than all are asked
    for: thread pools that size themselves from the CPU count (XLA, MLX)
    then match the others."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if threads < len(cpus):
        cpus = cpus[:threads]
        os.sched_setaffinity(0, cpus)
    return cpus


def rss_mib(field):
    """VmHWM (peak) or VmRSS (current) of this process, in MiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    if field == "VmHWM":
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0
    return None


def reset_peak_rss():
    """Restarts VmHWM at the current RSS (Linux: clear_refs 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _classify_import_error(framework, exc):
    name = (getattr(exc, "name", None) or "").split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and name in _PACKAGES[framework]:
        return "missing"
    return "unavailable"


def measure(spec, result):
    from benchmarks import workloads
    from benchmarks.peers._common import Unavailable

    framework, variant, w = spec["framework"], spec["variant"], spec["workload"]
    threads = spec["threads"]
    result["cpus"] = pin_cpus(threads)

    phase = "import"
    try:
        adapter = importlib.import_module(f"benchmarks.peers.{framework}_peer")
        result["versions"] = adapter.setup(threads)
        result["base_rss_mib"] = rss_mib("VmRSS")

        phase = "build"
        data = workloads.make_data(w)
        runner = adapter.build(w, variant, data)
        # The numpy originals are not the framework's memory: drop them (a
        # framework that shares their storage keeps it alive) and restart the
        # peak from here, so the peak covers the model, its state, the
        # compile and the steps.
        del data
        gc.collect()
        result["peak_reset"] = reset_peak_rss()
        result["note"] = runner.note
        expected = workloads.param_count(w)
        result["n_params"] = runner.n_params
        result["param_shapes"] = runner.param_shapes
        if runner.n_params != expected:
            raise AssertionError(f"{framework} model has {runner.n_params} parameters, the workload "
                                 f"defines {expected}: the architectures differ")

        # The first call traces/compiles where the variant compiles; it is
        # timed on its own and kept out of the step statistics.
        phase = "first call"
        t0 = time.perf_counter()
        handle = runner.step()
        result["first_call_s"] = time.perf_counter() - t0
        result["loss_first"] = runner.loss_value(handle)
    except Unavailable as e:
        result.update(status="n/a", reason=f"not applicable: {e}")
        return
    except ImportError as e:
        status = _classify_import_error(framework, e) if phase == "import" else "unavailable"
        result.update(status=status, reason=f"{type(e).__name__}: {e}", phase=phase,
                      traceback=traceback.format_exc(limit=8))
        return
    except AssertionError as e:
        result.update(status="failed", reason=f"AssertionError: {e}", phase=phase)
        return
    except Exception as e:
        # Lucid's variants that raise before their first step completes are
        # features still being built; a peer raising is a failure.
        status = "unavailable" if framework == "lucid" else "failed"
        result.update(status=status, reason=f"{type(e).__name__}: {e}", phase=phase,
                      traceback=traceback.format_exc(limit=8))
        return

    steps = max(spec["steps"], w.get("min_steps", 0))
    warmup = max(spec["warmup"], w.get("min_steps", 0) // 10)
    # A variant too slow for its time budget stops early with what it has
    # (flagged in the report) rather than losing every figure to a timeout.
    deadline = _START + spec["budget_s"] if spec.get("budget_s") else None
    clock = time.perf_counter
    try:
        for _ in range(warmup):
            handle = runner.step()
            if deadline and clock() > deadline:
                break
        times = []
        gc.collect()
        gc.disable()  # a collection inside one step would be charged to that framework
        try:
            for _ in range(steps):
                t0 = clock()
                handle = runner.step()
                times.append(clock() - t0)
                if deadline and len(times) >= 3 and clock() > deadline:
                    result["cut_short"] = f"{len(times)} of {steps} steps (time budget)"
                    break
        finally:
            gc.enable()
        result["peak_rss_mib"] = rss_mib("VmHWM")
        result["loss_last"] = runner.loss_value(handle)
    except Exception as e:
        result.update(status="failed", reason=f"{type(e).__name__}: {e}", phase="timed steps",
                      traceback=traceback.format_exc(limit=8))
        return
    result.update(status="ok", times_s=times, steps=len(times), warmup=warmup)


def main(argv):
    spec_path, out_path = argv[1], argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    result = {"framework": spec["framework"], "variant": spec["variant"], "workload": spec["workload"]["name"],
              "threads": spec["threads"], "python": platform.python_version()}
    try:
        measure(spec, result)
    except BaseException as e:  # noqa: BLE001 - the runner must always get a result
        result.update(status="failed", reason=f"{type(e).__name__}: {e}", traceback=traceback.format_exc(limit=8))
    finally:
        with open(out_path, "w") as f:
            json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
