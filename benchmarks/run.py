"""Lucid's benchmark suite: the workloads defined in benchmarks/README.md,
Lucid's variants side by side with PyTorch, JAX and MLX, in one run.

    python -m benchmarks                      # everything, results in ./lucid-benchmarks/<date-time>/
    python -m benchmarks -w conv_real --out /tmp/conv   # a group of workloads, into a folder of your choice
    python -m benchmarks --workloads mlp_small,gpt_tiny --variants 'lucid:*,torch:eager'
    python -m benchmarks --scaling            # fixed cost, width/depth growth, optimizer vs bandwidth
    python -m benchmarks --list

Every (framework, variant, workload) runs in its own subprocess with the same
thread count; a framework that is not installed, a Lucid feature that cannot
run yet or a peer that fails is reported in the table with the reason.
"""
import argparse
import datetime
import fnmatch
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import peers, workloads  # noqa: E402
from benchmarks.peers._worker import thread_env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
# Reports go to a new folder under this one (in the current directory) unless
# --out names another; the suite never writes a file that git tracks.
DEFAULT_OUT_PARENT = "lucid-benchmarks"
REPORT_FILES = ("results.md", "results.json", "ratios.png", "scaling.md", "scaling.json", "scaling.png")
# What --update-readme copies into the repository: the README's tables and its charts.
README_CHARTS = HERE / "results"

# Framework -> modules whose presence the runner checks before spawning.
_PROBE = {"lucid": ["lucid"], "torch": ["torch"], "jax": ["jax", "jaxlib", "optax"], "mlx": ["mlx"]}

SCALING_TRAIN_VARIANTS = ["lucid:eager", "lucid:fused_step", "torch:eager", "jax:jit", "mlx:compile"]
SCALING_OPTIM_VARIANTS = ["lucid:eager", "lucid:compile_optimizer", "torch:foreach", "torch:fused", "jax:jit",
                          "mlx:compile"]


# -- machine ------------------------------------------------------------------

def machine_info(threads):
    info = {"cpu": platform.processor() or platform.machine(), "logical_cpus": os.cpu_count(),
            "physical_cores": None, "memory_gib": None, "os": platform.platform(),
            "python": platform.python_version(), "threads": threads}
    try:
        text = Path("/proc/cpuinfo").read_text()
        names = re.findall(r"^(?:model name|Model|Hardware)\s*:\s*(.+)$", text, re.M)
        if names:
            info["cpu"] = names[0].strip()
        # Vendor, family and model too: a hypervisor may report only "AMD EPYC".
        ident = {k: re.search(rf"^{k}\s*:\s*(.+)$", text, re.M) for k in ("vendor_id", "cpu family", "model")}
        if all(ident.values()):
            vendor, family, model = (m.group(1).strip() for m in ident.values())
            info["cpu"] += f" ({vendor}, family {family} model {model})"
        cores, phys = set(), None
        for line in text.splitlines():
            if line.startswith("physical id"):
                phys = line.split(":")[1].strip()
            elif line.startswith("core id"):
                cores.add((phys, line.split(":")[1].strip()))
        info["physical_cores"] = len(cores) or None
        flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
        if flags:
            have = set(flags.group(1).split())
            info["simd"] = " ".join(f for f in ("avx2", "fma", "avx512f", "amx_tile") if f in have) or "none of avx2/fma/avx512"
    except OSError:
        if sys.platform == "darwin":
            try:
                info["cpu"] = subprocess.check_output(["sysctl", "-n", "machdep.cpu.brand_string"], text=True).strip()
                info["physical_cores"] = int(subprocess.check_output(["sysctl", "-n", "hw.physicalcpu"], text=True))
                info["memory_gib"] = int(subprocess.check_output(["sysctl", "-n", "hw.memsize"], text=True)) / 2**30
            except (OSError, subprocess.CalledProcessError, ValueError):
                pass
    info["caches"] = _caches()
    try:
        m = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
        if m:
            info["memory_gib"] = int(m.group(1)) / 2**20
    except OSError:
        pass
    if hasattr(os, "getloadavg"):
        info["loadavg_start"] = os.getloadavg()
    info["blas_env"] = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_") and "THREADS" not in k}
    try:
        commit = subprocess.check_output(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], text=True,
                                         stderr=subprocess.DEVNULL).strip()
        dirty = subprocess.call(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--", "csrc", "python"],
                                stderr=subprocess.DEVNULL) != 0
        info["commit"] = commit + (" (+ local changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        info["commit"] = None
    info["date"] = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return info


def _caches():
    """{level: bytes} of cpu0's data/unified caches (Linux sysfs)."""
    out = {}
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (d / "type").read_text().strip() == "Instruction":
                continue
            size = (d / "size").read_text().strip()
            mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1], 1)
            out[f"L{(d / 'level').read_text().strip()}"] = int(size.rstrip("KMG")) * mult
        except (OSError, ValueError):
            continue
    return out


def _size(nbytes):
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= div:
            return f"{nbytes / div:.0f} {unit}"
    return f"{nbytes} B"


def machine_line(info):
    parts = [info["cpu"]]
    cores = f"{info['logical_cpus']} logical CPUs"
    if info.get("physical_cores"):
        cores += f" / {info['physical_cores']} cores"
    parts.append(cores)
    if info.get("simd"):
        parts.append(info["simd"])
    if info.get("caches"):
        parts.append(" ".join(f"{k} {_size(v)}" for k, v in info["caches"].items()))
    if info.get("memory_gib"):
        parts.append(f"{info['memory_gib']:.0f} GiB RAM")
    parts.append(info["os"])
    parts.append(f"Python {info['python']}")
    return ", ".join(parts)


def probe_frameworks():
    """Which frameworks import at all (find_spec only: nothing is loaded here)."""
    import importlib.util

    found = {}
    for fw, mods in _PROBE.items():
        missing = []
        for mod in mods:
            try:
                spec = importlib.util.find_spec(mod)
            except (ImportError, ValueError):
                spec = None
            if spec is None:
                missing.append(mod)
        found[fw] = None if not missing else f"not installed: no module {', '.join(repr(m) for m in missing)}"
    return found


# -- planning -----------------------------------------------------------------

def parse_list(values):
    out = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def select_variants(kind, patterns, frameworks):
    chosen = []
    for fw, var in peers.applicable(kind):
        if frameworks and fw not in frameworks:
            continue
        if patterns and not any(fnmatch.fnmatch(f"{fw}:{var}", p) for p in patterns):
            continue
        chosen.append((fw, var))
    return chosen


# -- running ------------------------------------------------------------------

class Runner:
    def __init__(self, args):
        self.args = args
        self.missing = probe_frameworks()
        self.done = 0
        self.total = 0

    def env(self, scratch):
        env = dict(os.environ)
        env.update(thread_env(self.args.threads))
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        # Cold caches, so compile time is what a fresh process pays (MLX
        # keeps its compiled CPU kernels under TMPDIR).
        tmp = Path(scratch) / "tmp"
        tmp.mkdir()
        env["TMPDIR"] = str(tmp)
        env["TORCHINDUCTOR_CACHE_DIR"] = str(Path(scratch) / "inductor")
        env["TRITON_CACHE_DIR"] = str(Path(scratch) / "triton")
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def run(self, w, fw, var):
        self.done += 1
        label = f"[{self.done}/{self.total}] {w['name']:<16} {fw}:{var:<18}"
        base = {"framework": fw, "variant": var, "workload": w["name"], "threads": self.args.threads}
        if self.missing.get(fw):
            res = dict(base, status="missing", reason=f"{self.missing[fw]} ({peers.INSTALL_HINT[fw]})")
            self._log(label, res)
            return res
        spec = {"framework": fw, "variant": var, "workload": w, "threads": self.args.threads,
                "steps": self.args.steps, "warmup": self.args.warmup,
                "budget_s": 0.8 * self.args.timeout}
        with tempfile.TemporaryDirectory(prefix="lucid-bench-") as scratch:
            spec_path, out_path, log_path = (Path(scratch) / n for n in ("spec.json", "out.json", "log.txt"))
            spec_path.write_text(json.dumps(spec))
            cmd = [sys.executable, "-m", "benchmarks.peers._worker", str(spec_path), str(out_path)]
            busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.args.busy)]
            start = time.perf_counter()
            with open(log_path, "w") as log:
                # A new session, so a timeout can end the worker and whatever
                # it started (torch.compile's compile workers) together.
                proc = subprocess.Popen(cmd, env=self.env(scratch), stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
                try:
                    rc = proc.wait(timeout=self.args.timeout)
                except subprocess.TimeoutExpired:
                    rc = None
                finally:
                    # Also on success: nothing the worker left behind may run
                    # on into the next measurement (and Ctrl-C ends it too).
                    _kill_group(proc)
                    for b in busy:
                        b.kill()
                        b.wait()
            wall = time.perf_counter() - start
            log_tail = log_path.read_text(errors="replace")[-3000:]
            if rc is None:
                res = dict(base, status="timeout", reason=f"no result after {self.args.timeout:.0f} s "
                           f"(--timeout); the first call had not finished or steps were too slow")
            elif out_path.exists():
                res = json.loads(out_path.read_text())
            else:
                sig = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
                res = dict(base, status="crashed", reason=f"worker died ({sig}) without a result")
        res["wall_s"] = wall
        if res.get("status") != "ok":
            res["log_tail"] = log_tail
        else:
            res.update(summarize(res["times_s"]))
        self._log(label, res)
        return res

    def _log(self, label, res):
        if res.get("status") == "ok":
            msg = f"ok  median {res['median_ms']:.3f} ms  (first call {res.get('first_call_s', 0):.2f} s)"
            if res.get("cut_short"):
                msg += f"  [{res['cut_short']}]"
        else:
            msg = f"{res.get('status')}: {first_line(res.get('reason', ''))[:140]}"
        print(f"{label} {msg}", file=sys.stderr, flush=True)


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        if proc.poll() is None:
            proc.kill()
    proc.wait()


def summarize(times_s):
    t = sorted(x * 1e3 for x in times_s)
    return {"median_ms": _quantile(t, 0.5), "min_ms": t[0], "p90_ms": _quantile(t, 0.9), "mean_ms": sum(t) / len(t)}


def _quantile(sorted_vals, q):
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = (len(sorted_vals) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def first_line(text):
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


# -- analysis -----------------------------------------------------------------

def add_ratios(results, wl_by_name):
    """ratio = variant median / the Lucid reference median of its workload
    (above 1: Lucid's reference is faster)."""
    for name, w in wl_by_name.items():
        ref_fw, ref_var = peers.REFERENCE[w["kind"]]
        ref = next((r for r in results if r["workload"] == name and r["framework"] == ref_fw
                    and r["variant"] == ref_var), None)
        for r in results:
            if r["workload"] != name:
                continue
            if ref is not None and ref.get("status") == "ok" and r.get("status") == "ok":
                r["ratio"] = r["median_ms"] / ref["median_ms"]
            r["reference"] = f"{ref_fw}:{ref_var}"


def architecture_check(results):
    """Lucid and PyTorch build each model from one source; their parameter
    names and shapes must agree exactly. Returns the disagreements."""
    problems = []
    by_wl = {}
    for r in results:
        if r.get("param_shapes") and r["framework"] in ("lucid", "torch"):
            by_wl.setdefault(r["workload"], {}).setdefault(r["framework"], r["param_shapes"])
    for name, fws in by_wl.items():
        if len(fws) == 2 and [tuple(map(str, x)) for x in fws["lucid"]] != [tuple(map(str, x)) for x in fws["torch"]]:
            problems.append(f"{name}: Lucid's parameters {fws['lucid']} differ from PyTorch's {fws['torch']}")
    return problems


def bandwidth_figures(results, wl_by_name):
    """GB/s of every triad and optimizer-only run, and the roofline (the best
    triad measured in this run)."""
    rows, roofline = [], None
    for r in results:
        w = wl_by_name.get(r["workload"])
        if w is None or r.get("status") != "ok" or w["kind"] not in ("bandwidth", "optim"):
            continue
        nbytes = (w["numel"] * w["bytes_per_elem"] if w["kind"] == "bandwidth"
                  else w["tensors"] * w["numel"] * w["bytes_per_param"])
        r["gbps"] = nbytes / (r["median_ms"] * 1e-3) / 1e9
        r["gbps_best"] = nbytes / (r["min_ms"] * 1e-3) / 1e9
        if w["kind"] == "bandwidth" and (roofline is None or r["gbps"] > roofline[0]):
            roofline = (r["gbps"], f"{r['framework']}:{r['variant']}")
        rows.append(r)
    if roofline:
        for r in rows:
            r["roofline_fraction"] = r["gbps"] / roofline[0]
    return rows, roofline


# -- output -------------------------------------------------------------------

def fmt(v, digits=3):
    if v is None:
        return "–"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.{digits}f}"
    return str(v)


def header(info, args, title):
    load = info.get("loadavg_start")
    lines = [
        f"# {title}", "",
        f"- Machine: {machine_line(info)}",
        f"- Threads per framework: {args.threads} (LUCID/OMP/OPENBLAS/MKL_NUM_THREADS, torch.set_num_threads, "
        f"lucid.set_num_threads, XLA_FLAGS; each variant in its own process)",
        f"- Date: {info['date']}; Lucid commit: {info.get('commit') or 'unknown'}",
        f"- Steps: {args.warmup} warm-up, {args.steps} timed; float32; seed {workloads.SEED}; "
        f"compile time is the first call (trace + compile + one step), kept out of the statistics",
    ]
    if args.busy:
        lines.append(f"- **Busy machine: {args.busy} other process(es) spinning `while True: pass` beside every "
                     f"variant** (unpinned; the scheduler shares the cores)")
    if load:
        lines.append(f"- Load average at start: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}"
                     + (" (a busy machine: figures are noisy)" if load[0] > 0.5 * (info['logical_cpus'] or 1) else ""))
    if info.get("blas_env"):
        lines.append(f"- BLAS environment: {info['blas_env']}")
    if args.steps < 30:
        lines.append(f"- **Smoke run: {args.steps} timed steps (< 30); not figures to quote.**")
    return lines


def versions_lines(results, missing):
    seen = {}
    for r in results:
        if r.get("versions"):
            seen.setdefault(r["framework"], r["versions"])
    lines = ["## Frameworks", ""]
    for fw in peers.FRAMEWORKS:
        if fw in seen:
            lines.append(f"- {fw}: " + ", ".join(f"{k} {v}" for k, v in seen[fw].items()))
        elif missing.get(fw):
            lines.append(f"- {fw}: **missing** — {missing[fw]} (install: `{peers.INSTALL_HINT[fw]}`)")
        else:
            lines.append(f"- {fw}: not run")
    return lines


def results_table(results, wl_by_name, notes):
    lines = ["| workload | variant | median ms | min ms | p90 ms | p90 / median | ratio | compile / first call s "
             "| peak RSS MiB | over import MiB | status |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name in wl_by_name:
        rows = [r for r in results if r["workload"] == name]
        for r in rows:
            vid = f"{r['framework']}:{r['variant']}"
            ref = vid == r.get("reference")
            status = r.get("status", "?")
            if status != "ok":
                notes.append(f"{name} {vid}: {status}: {r.get('reason', '')}")
                status = f"{status} [{len(notes)}]"
            else:
                loss = r.get("loss_last")
                bad_loss = "loss not finite" if loss is not None and not math.isfinite(loss) else None
                detail = [d for d in (r.get("note"), r.get("cut_short"), bad_loss) if d]
                status = f"ok ({'; '.join(detail)})" if detail else "ok"
            over = None
            if r.get("peak_rss_mib") is not None and r.get("base_rss_mib") is not None:
                over = r["peak_rss_mib"] - r["base_rss_mib"]
            ratio = r.get("ratio")
            spread = r["p90_ms"] / r["median_ms"] if r.get("p90_ms") and r.get("median_ms") else None
            lines.append(
                f"| {name} | {'**' + vid + '**' if ref else vid} | {fmt(r.get('median_ms'))} | {fmt(r.get('min_ms'))} "
                f"| {fmt(r.get('p90_ms'))} | {fmt(spread, 2)} | {'1 (ref)' if ref and ratio else fmt(ratio, 2)} "
                f"| {fmt(r.get('first_call_s'), 2)} | {fmt(r.get('peak_rss_mib'), 0)} | {fmt(over, 0)} | {status} |")
    return lines


def bandwidth_table(rows, roofline, wl_by_name, caches):
    if not rows:
        return ["No triad or optimizer-only run succeeded, so there is no bandwidth figure."]
    lines = []
    if roofline:
        lines.append(f"Roofline: **{roofline[0]:.1f} GB/s**, the fastest a = b + s*c triad measured in this "
                     f"run ({roofline[1]}, median).")
    else:
        lines.append("No triad ran, so the optimizer-only runs have no roofline to compare to.")
    llc_name, llc = (list(caches.items())[-1] if caches else (None, None))
    if llc:
        lines.append(f"The last-level cache is {_size(llc)} ({llc_name}): a working set below that can run "
                     "from cache and beat the DRAM roofline.")
    lines += ["", "| workload | variant | working set | bytes moved / step | median ms | GB/s (median) "
                  "| GB/s (best) | of roofline |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        w = wl_by_name[r["workload"]]
        nbytes = (w["numel"] * w["bytes_per_elem"] if w["kind"] == "bandwidth"
                  else w["tensors"] * w["numel"] * w["bytes_per_param"])
        ws = workloads.working_set(w)
        where = "" if not llc else (" (fits in " + llc_name + ")" if ws < llc else "")
        frac = r.get("roofline_fraction")
        lines.append(f"| {r['workload']} | {r['framework']}:{r['variant']} | {_size(ws)}{where} "
                     f"| {nbytes / 1e6:,.0f} MB | {fmt(r['median_ms'])} | {fmt(r['gbps'], 1)} "
                     f"| {fmt(r['gbps_best'], 1)} | {'–' if frac is None else f'{frac * 100:.0f}%'} |")
    return lines


def workloads_lines(wl_by_name):
    lines = ["## Workloads", "", "| id | what | parameters |", "| --- | --- | ---: |"]
    for name, w in wl_by_name.items():
        n = workloads.param_count(w)
        lines.append(f"| {name} | {w['what']} | {n:,} |" if n else f"| {name} | {w['what']} | – |")
    return lines


def variants_lines(results, wl_by_name):
    lines = ["## Variants", ""]
    seen = []
    for r in results:
        key = (r["framework"], r["variant"])
        if key not in seen:
            seen.append(key)
    for fw, var in seen:
        kinds = peers.VARIANTS.get((fw, var), {})
        desc = "; ".join(f"{k}: {d}" for k, d in kinds.items())
        lines.append(f"- `{fw}:{var}` — {desc}")
    refs = ", ".join(f"{k}: `{f}:{v}`" for k, (f, v) in peers.REFERENCE.items())
    lines += ["", f"Ratios are variant median / Lucid reference median of the same workload ({refs}); "
                  "above 1 means the Lucid reference is faster."]
    return lines


def _framework_colors(plt, series):
    """One hue per framework, one shade per variant, so frameworks read as groups."""
    maps = {"lucid": "Blues", "torch": "Oranges", "jax": "Greens", "mlx": "Purples"}
    colors = {}
    for fw, cmap_name in maps.items():
        mine = [v for v in series if v.split(":")[0] == fw]
        cmap = plt.get_cmap(cmap_name)
        for i, vid in enumerate(mine):
            colors[vid] = cmap(0.45 + 0.45 * (i / max(1, len(mine) - 1)) if len(mine) > 1 else 0.7)
    for vid in series:
        colors.setdefault(vid, "grey")
    return colors


def chart_ratios(results, wl_by_name, info, args, path):
    """Grouped bars of the ratios, log scale. Returns a line for the report."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"No chart: matplotlib is missing ({e}); `pip install .[bench]` brings it."
    names = [n for n in wl_by_name if any(r.get("ratio") for r in results if r["workload"] == n)]
    if not names:
        return "No chart: no workload has a Lucid reference result to take ratios against."
    series = []
    for r in results:
        vid = f"{r['framework']}:{r['variant']}"
        if r.get("ratio") and vid != r.get("reference") and vid not in series:
            series.append(vid)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(names) + 2), 5))
    width = 0.8 / max(1, len(series))
    colors = _framework_colors(plt, series)
    for i, vid in enumerate(series):
        xs, ys = [], []
        for j, n in enumerate(names):
            r = next((r for r in results if r["workload"] == n and f"{r['framework']}:{r['variant']}" == vid), None)
            if r is not None and r.get("ratio") and vid != r.get("reference"):
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(r["ratio"])
        ax.bar(xs, ys, width, label=vid, color=colors[vid])
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_ylabel("time / Lucid reference time (log; >1: Lucid faster)")
    ax.set_title(f"{info['cpu']}, {args.threads} threads, median of {args.steps} steps", fontsize=10)
    refs = ", ".join(f"{v} ({k})" for k, (_, v) in peers.REFERENCE.items())
    fig.text(0.01, 0.01, f"reference = 1: Lucid {refs}", fontsize=7, color="dimgrey")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def write_report(results, wl_by_name, info, args, out_dir, missing):
    add_ratios(results, wl_by_name)
    bw_rows, roofline = bandwidth_figures(results, wl_by_name)
    notes = []
    lines = header(info, args, "Lucid benchmarks")
    for problem in architecture_check(results):
        lines.append(f"- **Architecture mismatch** — {problem}")
    lines += ["", "## Results (ms per step)", ""]
    lines += results_table(results, wl_by_name, notes)
    chart_path = out_dir / "ratios.png"
    chart_msg = chart_ratios(results, wl_by_name, info, args, chart_path)
    lines += [""]
    if chart_msg:
        lines.append(chart_msg)
        print(chart_msg, file=sys.stderr)
    else:
        lines.append("![ratios](ratios.png)")
    lines += ["", "## Optimizer-only updates and memory bandwidth", ""]
    lines += bandwidth_table(bw_rows, roofline, wl_by_name, info.get("caches"))
    if notes:
        lines += ["", "## Not measured", ""]
        lines += [f"{i}. {n}" for i, n in enumerate(notes, 1)]
    lines += [""] + versions_lines(results, missing) + [""] + workloads_lines(wl_by_name)
    lines += [""] + variants_lines(results, wl_by_name) + [""]
    (out_dir / "results.md").write_text("\n".join(lines))
    (out_dir / "results.json").write_text(json.dumps(
        {"machine": info, "args": vars(args), "results": results}, indent=1, default=str))


# -- scaling ------------------------------------------------------------------

def scaling_plan(args):
    train_pats = args.variant_patterns or SCALING_TRAIN_VARIANTS
    optim_pats = args.variant_patterns or SCALING_OPTIM_VARIANTS
    sections = []
    fixed = workloads.fixed_cost()
    sections.append(("fixed", [fixed], select_variants("train", args.variant_patterns or ["*"], args.frameworks)))
    widths = [workloads.mlp_width(wd) for wd in args.widths]
    sections.append(("width", widths, select_variants("train", train_pats, args.frameworks)))
    depths = [workloads.mlp_width(args.depth_width, depth=d) for d in args.depths]
    for w in depths:
        w["name"] = f"mlp_d{len(w['sizes']) - 2}_w{args.depth_width}"
    sections.append(("depth", depths, select_variants("train", train_pats, args.frameworks)))
    opts = [workloads.optim_size(o, n) for o in ("adam", "sgd") for n in args.optim_sizes]
    sections.append(("optim", opts, select_variants("optim", optim_pats, args.frameworks)))
    bw = workloads.get("bandwidth")
    sections.append(("bandwidth", [bw], select_variants("bandwidth", ["*"], args.frameworks)))
    return sections


def write_scaling(sections, results, info, args, out_dir, missing):
    by_name = {w["name"]: w for _, ws, _ in sections for w in ws}
    bw_rows, roofline = bandwidth_figures(results, by_name)
    get = {(r["workload"], r["framework"], r["variant"]): r for r in results}
    notes = []
    lines = header(info, args, "Lucid scaling run")

    def cell(r):
        if r is None:
            return "–"
        if r.get("status") != "ok":
            notes.append(f"{r['workload']} {r['framework']}:{r['variant']}: {r.get('status')}: {r.get('reason', '')}")
            return f"{r.get('status')} [{len(notes)}]"
        return fmt(r["median_ms"])

    sec = {name: (ws, vs) for name, ws, vs in sections}
    ws, vs = sec["fixed"]
    w = ws[0]
    lines += ["", "## Fixed cost of a step", "", f"{w['what']}: what a step costs beyond its arithmetic "
              f"(median, min and p90 over {max(args.steps, w['min_steps'])} steps).", "",
              "| variant | median µs | min µs | p90 µs | first call s |", "| --- | ---: | ---: | ---: | ---: |"]
    for fw, var in vs:
        r = get.get((w["name"], fw, var))
        if r and r.get("status") == "ok":
            lines.append(f"| {fw}:{var} | {r['median_ms'] * 1e3:.1f} | {r['min_ms'] * 1e3:.1f} | "
                         f"{r['p90_ms'] * 1e3:.1f} | {fmt(r.get('first_call_s'), 2)} |")
        else:
            lines.append(f"| {fw}:{var} | {cell(r)} | | | |")

    for key, title, xlabel in (("width", "Step time against width", "width"),
                               ("depth", "Step time against depth", "hidden layers")):
        ws, vs = sec[key]
        lines += ["", f"## {title}", "",
                  ("MLP 256-W-W-10, batch 64, Adam; ms per step (median), GFLOP/s of the matmuls in brackets."
                   if key == "width" else
                   f"MLP 256-({args.depth_width} x D)-10, batch 64, Adam; ms per step (median)."), "",
                  "| " + xlabel + " | " + " | ".join(f"{f}:{v}" for f, v in vs) + " |",
                  "| ---: |" + " ---: |" * len(vs)]
        for w in ws:
            x = w["sizes"][1] if key == "width" else len(w["sizes"]) - 2
            cells = []
            for fw, var in vs:
                r = get.get((w["name"], fw, var))
                c = cell(r)
                flops = workloads.flops_per_step(w)
                if r is not None and r.get("status") == "ok" and flops and key == "width":
                    c += f" ({flops / (r['median_ms'] * 1e-3) / 1e9:.1f})"
                cells.append(c)
            lines.append(f"| {x} | " + " | ".join(cells) + " |")

    ws, vs = sec["optim"]
    lines += ["", "## Optimizer-only steps against memory bandwidth", ""]
    if roofline:
        lines.append(f"Roofline: {roofline[0]:.1f} GB/s (a = b + s*c over 64M float32, {roofline[1]}). "
                     "Each cell: ms per step, and in brackets the bytes the update must move "
                     "(Adam 28, SGD with momentum 20 per parameter) per second as a fraction of it; "
                     "small sizes fit in cache and can pass 100%.")
    else:
        lines.append("No triad ran, so there is no roofline; cells show ms per step.")
    llc = list(info["caches"].values())[-1] if info.get("caches") else None
    lines += ["", "| workload | params | working set | " + " | ".join(f"{f}:{v}" for f, v in vs) + " |",
              "| --- | ---: | ---: |" + " ---: |" * len(vs)]
    for w in ws:
        cells = []
        for fw, var in vs:
            r = get.get((w["name"], fw, var))
            c = cell(r)
            if r is not None and r.get("roofline_fraction") is not None:
                c += f" ({r['roofline_fraction'] * 100:.0f}%)"
            cells.append(c)
        ws_bytes = workloads.working_set(w)
        ws_cell = _size(ws_bytes) + (" (in LLC)" if llc and ws_bytes < llc else "")
        lines.append(f"| {w['name']} | {w['tensors'] * w['numel']:,} | {ws_cell} | " + " | ".join(cells) + " |")
    lines += ["", "Triad runs:", ""] + bandwidth_table([r for r in bw_rows if by_name[r["workload"]]["kind"] ==
                                                        "bandwidth"], roofline, by_name,
                                                       info.get("caches"))
    chart_msg = chart_scaling(sections, get, roofline, info, args, out_dir / "scaling.png")
    lines += ["", chart_msg or "![scaling](scaling.png)"]
    if chart_msg:
        print(chart_msg, file=sys.stderr)
    if notes:
        lines += ["", "## Not measured", ""] + [f"{i}. {n}" for i, n in enumerate(notes, 1)]
    lines += [""] + versions_lines(results, missing) + [""]
    (out_dir / "scaling.md").write_text("\n".join(lines))
    (out_dir / "scaling.json").write_text(json.dumps(
        {"machine": info, "args": vars(args), "results": results}, indent=1, default=str))


def chart_scaling(sections, get, roofline, info, args, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"No chart: matplotlib is missing ({e}); `pip install .[bench]` brings it."
    sec = {name: (ws, vs) for name, ws, vs in sections}
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.8))
    ws, vs = sec["fixed"]
    labels, vals = [], []
    for fw, var in vs:
        r = get.get((ws[0]["name"], fw, var))
        if r and r.get("status") == "ok":
            labels.append(f"{fw}:{var}")
            vals.append(r["median_ms"] * 1e3)
    axes[0].barh(labels, vals, color="tab:blue")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("µs per step (median)")
    axes[0].set_title("fixed cost: Linear 8->4, batch 1")
    for ax, key, xlabel in ((axes[1], "width", "width"), (axes[2], "depth", "hidden layers")):
        ws, vs = sec[key]
        for fw, var in vs:
            xs, ys = [], []
            for w in ws:
                r = get.get((w["name"], fw, var))
                if r and r.get("status") == "ok":
                    xs.append(w["sizes"][1] if key == "width" else len(w["sizes"]) - 2)
                    ys.append(r["median_ms"])
            if xs:
                ax.plot(xs, ys, marker="o", label=f"{fw}:{var}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("ms per step (median)")
        ax.set_title(f"MLP step time against {xlabel}")
        ax.legend(fontsize=7)
    ws, vs = sec["optim"]
    ax = axes[3]
    for opt in ("adam", "sgd"):
        for fw, var in vs:
            xs, ys = [], []
            for w in ws:
                if not w["name"].startswith(opt):
                    continue
                r = get.get((w["name"], fw, var))
                if r and r.get("roofline_fraction") is not None:
                    xs.append(w["tensors"] * w["numel"])
                    ys.append(r["roofline_fraction"] * 100)
            if xs:
                ax.plot(xs, ys, marker="o" if opt == "adam" else "s", linestyle="-" if opt == "adam" else "--",
                        label=f"{opt} {fw}:{var}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axhline(100, color="black", linewidth=1)
    ax.set_xlabel("parameters")
    ax.set_ylabel("% of triad bandwidth")
    ax.set_title("optimizer-only step vs " + (f"{roofline[0]:.1f} GB/s" if roofline else "bandwidth (none measured)"))
    ax.legend(fontsize=6, ncol=2)
    fig.suptitle(f"{info['cpu']}, {args.threads} threads", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# -- README -------------------------------------------------------------------

def update_readme(out_dir):
    """Copies the latest reports into benchmarks/README.md between markers,
    and their charts into benchmarks/results/ (what the READMEs show). The
    one writer of tracked files, and only when asked (--update-readme)."""
    import shutil

    readme = HERE / "README.md"
    text = readme.read_text()
    rel = os.path.relpath(README_CHARTS, HERE)
    for key, name, chart in (("results", "results.md", "ratios.png"), ("scaling", "scaling.md", "scaling.png")):
        src = out_dir / name
        start, end = f"<!-- {key}:start -->", f"<!-- {key}:end -->"
        if not src.exists() or start not in text or end not in text:
            continue
        if (out_dir / chart).exists() and out_dir.resolve() != README_CHARTS.resolve():
            README_CHARTS.mkdir(exist_ok=True)
            shutil.copyfile(out_dir / chart, README_CHARTS / chart)
        body = src.read_text()
        # The README describes the workloads and variants itself.
        parts = re.split(r"(?m)^(?=## )", body)
        body = "".join(p for p in parts if not p.startswith(("## Workloads", "## Variants")))
        # Two levels down, under the README's own section headings; images relative to it.
        body = re.sub(r"^(#+) ", lambda m: "##" + m.group(1) + " ", body, flags=re.M)
        body = re.sub(r"!\[([^\]]*)\]\(([^)/]+\.png)\)", lambda m: f"![{m.group(1)}]({rel}/{m.group(2)})", body)
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{start}\n{body.strip()}\n{end}{tail}"
    readme.write_text(text)
    print(f"updated {readme}", file=sys.stderr)


# -- main ---------------------------------------------------------------------

def _usable_cpus():
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def build_parser():
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--workloads", action="append",
                   help=f"comma-separated workload ids or groups (default: all; defined in benchmarks/README.md): "
                        f"{', '.join(workloads.ORDER)}; groups: "
                        + ", ".join(f"{g} = {'+'.join(ws)}" for g, ws in workloads.GROUPS.items()))
    p.add_argument("-f", "--frameworks", action="append",
                   help=f"comma-separated frameworks (default: all): {', '.join(peers.FRAMEWORKS)}")
    p.add_argument("-v", "--variants", action="append",
                   help="comma-separated framework:variant ids or globs, e.g. 'lucid:*,torch:eager' "
                        "(see --list)")
    p.add_argument("--steps", type=int, default=30, help="timed steps per variant (default 30)")
    p.add_argument("--warmup", type=int, default=5, help="warm-up steps after the first call (default 5)")
    p.add_argument("--threads", type=int, default=_usable_cpus(),
                   help="threads for every framework (default: every CPU this process may use)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds a variant may take in all, first call included (default 900; "
                        "torch.compile on a small CPU box is slow)")
    p.add_argument("--busy", type=int, default=0,
                   help="run N busy-loop processes beside every variant: a machine shared with other work")
    p.add_argument("--out", default=None,
                   help=f"output folder (default: a new ./{DEFAULT_OUT_PARENT}/<date-time>/); a file git tracks "
                        "there is never overwritten")
    p.add_argument("--scaling", action="store_true",
                   help="the scaling run instead: fixed cost of a step, width and depth sweeps, "
                        "optimizer-only steps against the measured bandwidth")
    p.add_argument("--widths", default="64,128,256,512,1024,2048,4096", help="scaling: MLP widths")
    p.add_argument("--depths", default="1,2,4,8,16", help="scaling: MLP hidden-layer counts")
    p.add_argument("--depth-width", type=int, default=256, help="scaling: width of the depth sweep")
    p.add_argument("--optim-sizes", default="1000,10000,100000,1000000,3000000",
                   help="scaling: elements per tensor (10 tensors) of the optimizer-only sweep")
    p.add_argument("--update-readme", action="store_true",
                   help="afterwards copy the reports into benchmarks/README.md and their charts into "
                        "benchmarks/results/ (tracked files, rewritten only with this flag)")
    p.add_argument("--readme-only", action="store_true",
                   help="only copy the reports of --out into benchmarks/README.md and benchmarks/results/")
    p.add_argument("--list", action="store_true", help="list workloads and variants, then exit")
    return p


def tracked_in(out_dir):
    """The report files in out_dir that git tracks (none outside a repository)."""
    try:
        proc = subprocess.run(["git", "-C", str(out_dir), "ls-files", "--", *REPORT_FILES],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return proc.stdout.split() if proc.returncode == 0 else []


def resolve_out(args):
    if args.out:
        return Path(args.out).resolve()
    if args.readme_only:
        raise SystemExit("--readme-only needs --out: the folder whose reports to copy")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return (Path.cwd() / DEFAULT_OUT_PARENT / stamp).resolve()


def report_missing(missing):
    """Says up front what will not be measured and why."""
    for fw, why in missing.items():
        if why:
            print(f"{fw}: {why} ({peers.INSTALL_HINT[fw]}); its variants are reported as not run", file=sys.stderr)
    try:
        import importlib.util

        has_mpl = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        has_mpl = False
    if not has_mpl:
        print("matplotlib is not installed: no charts (pip install matplotlib, or the bench extra)", file=sys.stderr)


def expand_workloads(names):
    out = []
    for n in names:
        for m in workloads.GROUPS.get(n, [n]):
            if m not in workloads.WORKLOADS:
                raise SystemExit(f"unknown workload {m!r}; known: {', '.join(workloads.ORDER)}; "
                                 f"groups: {', '.join(workloads.GROUPS)}")
            if m not in out:
                out.append(m)
    return out


def list_all():
    print("workloads:")
    for name in workloads.ORDER:
        w = workloads.WORKLOADS[name]
        print(f"  {name:<15} [{w['kind']}] {w['what']}")
    print("variants (framework:variant -> kinds of workload it applies to):")
    for (fw, var), kinds in peers.VARIANTS.items():
        print(f"  {fw + ':' + var:<26} {', '.join(kinds)}")
    print("installed:")
    for fw, why in probe_frameworks().items():
        print(f"  {fw:<6} {'yes' if not why else why}")


def _note_load(info):
    if hasattr(os, "getloadavg"):
        info["loadavg_end"] = os.getloadavg()


def _exit_on_term(signum, frame):
    # Workers run in sessions of their own; turning SIGTERM into SystemExit
    # lets the current one be ended with the runner.
    raise SystemExit(128 + signum)


def main(argv=None):
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_term)
    if args.list:
        list_all()
        return 0
    out_dir = resolve_out(args)
    if args.readme_only:
        update_readme(out_dir)
        return 0
    args.frameworks = parse_list(args.frameworks)
    args.variant_patterns = parse_list(args.variants)
    for fw in args.frameworks:
        if fw not in peers.FRAMEWORKS:
            raise SystemExit(f"unknown framework {fw!r}; known: {', '.join(peers.FRAMEWORKS)}")
    for pat in args.variant_patterns:
        if not fnmatch.filter(peers.variant_ids(), pat):
            raise SystemExit(f"--variants {pat!r} matches no variant; known: {', '.join(peers.variant_ids())}")
    if args.steps < 1 or args.threads < 1:
        raise SystemExit("--steps and --threads must be at least 1")
    out_dir.mkdir(parents=True, exist_ok=True)
    tracked = tracked_in(out_dir)
    if tracked:
        raise SystemExit(f"{out_dir} holds files git tracks ({', '.join(tracked)}); the suite does not overwrite "
                         "them: name another folder with --out (--update-readme refreshes the README's copies)")
    info = machine_info(args.threads)
    runner = Runner(args)
    print(f"{machine_line(info)}; {args.threads} threads; reports go to {out_dir}", file=sys.stderr)
    report_missing(runner.missing)

    if args.scaling:
        args.widths = [int(x) for x in args.widths.split(",")]
        args.depths = [int(x) for x in args.depths.split(",")]
        args.optim_sizes = [int(x) for x in args.optim_sizes.split(",")]
        sections = scaling_plan(args)
        runner.total = sum(len(ws) * len(vs) for _, ws, vs in sections)
        results = [runner.run(w, fw, var) for _, ws, vs in sections for w in ws for fw, var in vs]
        _note_load(info)
        write_scaling(sections, results, info, args, out_dir, runner.missing)
        print(f"wrote {out_dir / 'scaling.md'}", file=sys.stderr)
    else:
        names = expand_workloads(parse_list(args.workloads)) or workloads.ORDER
        wl_by_name = {n: workloads.get(n) for n in names}
        plan = [(w, fw, var) for w in wl_by_name.values()
                for fw, var in select_variants(w["kind"], args.variant_patterns, args.frameworks)]
        if not plan:
            raise SystemExit("nothing to run: the filters exclude every variant")
        runner.total = len(plan)
        results = [runner.run(w, fw, var) for w, fw, var in plan]
        _note_load(info)
        write_report(results, wl_by_name, info, args, out_dir, runner.missing)
        print(f"wrote {out_dir / 'results.md'}", file=sys.stderr)
    if args.update_readme:
        update_readme(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
