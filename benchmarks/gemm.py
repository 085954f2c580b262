"""Single-precision GEMM libraries compared on the shapes of a training step.

    python -m benchmarks.gemm [--libs openblas,mkl,blis] [--threads 1,2] [--reps 50]

For each (M, N, K) of a linear layer (input [M, K], weight [N, K]) it times
the three GEMMs a training step runs, with the transposes Lucid passes
(forward `x @ W^T`, input gradient `dY @ W`, weight gradient `dY^T @ x`),
each library called directly through its CBLAS interface (ctypes). With
2 threads the work is split as Lucid's pool splits it (halves of the larger
of M and N, one sequential GEMM per thread), so every library is measured in
the configuration Lucid would run it in. Times are CPU time of the
threads doing the work (`time.thread_time`; with 2 threads the larger of
the two shares), so a busy machine slows the run but not the figures.
Libraries not installed are reported as missing:
  openblas  the scipy-openblas32 wheel (Lucid's default on Linux)
  mkl       the mkl wheel (libmkl_rt.so.2, sequential layer)
  blis      a system libblis.so.4 (Debian/Ubuntu: apt-get install libblis4)
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import platform
import statistics
import sys
import threading
import time

import numpy as np

SHAPES = [(64, 256, 784), (64, 10, 256), (128, 128, 32), (2048, 512, 128), (2048, 128, 512),
          (256, 4096, 4096), (256, 1024, 4096)]
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def cpu_name() -> str:
    """Vendor and model of this CPU (the line every result carries)."""
    try:
        with open("/proc/cpuinfo") as f:
            info = dict(line.split(":", 1) for line in f if ":" in line)
        vendor = info.get("vendor_id\t", "").strip()
        model = info.get("model name\t", "").strip()
        flags = info.get("flags\t\t", "").split()
        isa = "AVX-512" if "avx512f" in flags else "AVX2/FMA" if "avx2" in flags and "fma" in flags else "SSE"
        return f"{vendor} {model} ({os.cpu_count()} CPUs, {isa})"
    except OSError:
        return platform.processor() or platform.machine()


class Blas:
    def __init__(self, name, lib, sgemm, set_threads=None):
        self.name, self.lib, self.sgemm = name, lib, sgemm
        if set_threads:
            set_threads(1)
        self.sgemm.restype = None
        self.sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                    ctypes.c_int, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]


def load(name: str):
    """The library, or a string saying why it is missing."""
    try:
        if name == "openblas":
            import scipy_openblas32 as s
            lib = ctypes.CDLL(os.path.join(s.get_lib_dir(), f"lib{s.get_library()}.so"))
            return Blas(name, lib, lib.scipy_cblas_sgemm, lib.scipy_openblas_set_num_threads)
        if name == "mkl":
            paths = glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so.2"))
            if not paths:
                return "the mkl wheel is not installed (pip install mkl)"
            lib = ctypes.CDLL(paths[0])
            lib.MKL_Set_Threading_Layer(1)  # sequential
            return Blas(name, lib, lib.cblas_sgemm)
        if name == "blis":
            lib = ctypes.CDLL("libblis.so.4")
            return Blas(name, lib, lib.cblas_sgemm, lib.bli_thread_set_num_threads)
    except (ImportError, OSError, AttributeError) as e:
        return f"not available ({e})"
    return f"unknown library {name!r}"


def step_gemms(m, n, k, rng):
    """The forward and the two gradient GEMMs of a linear layer: (label, ta, tb, M, N, K, A, B)."""
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    dy = rng.standard_normal((m, n), dtype=np.float32)
    return [("fwd x@W^T", False, True, m, n, k, x, w),
            ("dx dY@W", False, False, m, k, n, dy, w),
            ("dW dY^T@x", True, False, n, k, m, dy, x)]


def call(blas, ta, tb, m, n, k, a, b, c, rows=None):
    """C = op(A) op(B), optionally rows [lo, hi) of C only, or columns with `cols`."""
    lda = a.shape[1]
    ldb = b.shape[1]
    blas.sgemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k, 1.0, a.ctypes.data, lda,
               b.ctypes.data, ldb, 0.0, c.ctypes.data, n)


def split_call(blas, ta, tb, m, n, k, a, b, c, part, parts):
    """One thread's share, split as matmul_kernel.cpp splits: rows when M >= N (or N < 64), else columns."""
    item = 4
    if m >= n or n < 64:
        lo, hi = m * part // parts, m * (part + 1) // parts
        a_off = lo * item if ta else lo * a.shape[1] * item
        blas.sgemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, hi - lo, n, k, 1.0,
                   a.ctypes.data + a_off, a.shape[1], b.ctypes.data, b.shape[1], 0.0,
                   c.ctypes.data + lo * n * item, n)
    else:
        lo, hi = n * part // parts, n * (part + 1) // parts
        b_off = lo * b.shape[1] * item if tb else lo * item
        blas.sgemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, hi - lo, k, 1.0,
                   a.ctypes.data, a.shape[1], b.ctypes.data + b_off, b.shape[1], 0.0, c.ctypes.data + lo * item, n)


def time_gemm(blas, ta, tb, m, n, k, a, b, threads, reps):
    c = np.empty((m, n), np.float32)
    flops = 2.0 * m * n * k
    reps = max(3, min(reps, int(2e10 / flops)))  # about a second or two per case at most
    if threads == 1:
        times = []
        for _ in range(reps + 2):
            t = time.thread_time()
            call(blas, ta, tb, m, n, k, a, b, c)
            times.append(time.thread_time() - t)
    else:
        barrier = threading.Barrier(threads)
        per_thread = [[0.0] * (reps + 2) for _ in range(threads)]

        def worker(part):
            for i in range(reps + 2):
                barrier.wait()
                t = time.thread_time()
                split_call(blas, ta, tb, m, n, k, a, b, c, part, threads)
                per_thread[part][i] = time.thread_time() - t
                barrier.wait()

        helpers = [threading.Thread(target=worker, args=(p,)) for p in range(1, threads)]
        for h in helpers:
            h.start()
        worker(0)
        for h in helpers:
            h.join()
        times = [max(ts) for ts in zip(*per_thread)]
    med = statistics.median(times[2:])
    return med, flops / med * 1e-9


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--libs", default="openblas,mkl,blis")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--shapes", default=None, help="MxNxK,... (default: the training-step shapes)")
    args = ap.parse_args(argv)
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    libs = []
    for name in args.libs.split(","):
        lib = load(name)
        if isinstance(lib, str):
            print(f"{name}: {lib}")
        else:
            libs.append(lib)
    rng = np.random.default_rng(0)
    print(f"CPU: {cpu_name()}")
    print("median CPU ms per GEMM (GFLOP/s); with 2 threads the slower share of Lucid's split\n")
    names = [b.name for b in libs]
    print("| threads | layer MxNxK | GEMM | " + " | ".join(names) + " |")
    print("| ---: | --- | --- |" + " ---: |" * len(names))
    for threads in [int(t) for t in args.threads.split(",")]:
        for m, n, k in shapes:
            for label, ta, tb, gm, gn, gk, a, b in step_gemms(m, n, k, rng):
                cells = []
                for blas in libs:
                    ms, gf = time_gemm(blas, ta, tb, gm, gn, gk, a, b, threads, args.reps)
                    cells.append(f"{ms * 1e3:.3f} ({gf:.0f})")
                print(f"| {threads} | {m}x{n}x{k} | {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
