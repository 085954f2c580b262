"""Distribution sampling and densities: Lucid vs PyTorch on this machine,
same parameters, same thread count.

    python -m benchmarks.sampling [--reps 20] [--threads N] [--n 1000000]

Workloads (float32, n draws or values): the Gamma, Poisson and Binomial
samplers (Lucid's RandomParametric primitive vs torch._standard_gamma,
torch.poisson, torch.binomial), a reparameterised Gamma draw with its
backward (the implicit gradient), Dirichlet rsample + backward over 1000
rows of 64 events (n ignored), and log_prob of Normal, Gamma and
MultivariateNormal (16-dim, n / 16 vectors). The table reports the median
time per call and the ratio torch time / Lucid time (above 1: Lucid is
faster). Draws differ between the two (different generators); the work is
the same.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import lucid
from benchmarks.ops import _median_ms


def _workloads(n):
    """name -> (make(m) -> a zero-argument call for module m)."""
    rng = np.random.default_rng(0)
    conc = (rng.random(n) * 5 + 0.1).astype(np.float32)
    rate = (rng.random(n) * 30).astype(np.float32)
    count = np.floor(rng.random(n) * 100).astype(np.float32)
    prob = rng.random(n).astype(np.float32)
    x = (rng.random(n) * 3 + 0.1).astype(np.float32)
    dirichlet = (rng.random((1000, 64)) * 3 + 0.1).astype(np.float32)
    cov = np.eye(16, dtype=np.float32) * 2 + 0.1
    vectors = rng.standard_normal((max(1, n // 16), 16)).astype(np.float32)

    def t(m, a, grad=False):
        out = m.tensor(a)
        return out.requires_grad_() if grad else out

    def rsample_backward(m, dist, shape=()):
        def call():
            dist().rsample(shape).sum().backward()
        return call

    return {
        "gamma draws": lambda m: (lambda c=t(m, conc): m._standard_gamma(c)),
        "poisson draws": lambda m: (lambda r=t(m, rate): m.poisson(r)),
        "binomial draws": lambda m: (lambda c=t(m, count), p=t(m, prob): m.binomial(c, p)),
        "Gamma rsample+backward": lambda m: rsample_backward(
            m, lambda c=t(m, conc, True): m.distributions.Gamma(c, 1.0)),
        "Dirichlet rsample+backward 1000x64": lambda m: rsample_backward(
            m, lambda c=t(m, dirichlet, True): m.distributions.Dirichlet(c)),
        "Normal log_prob": lambda m: (lambda v=t(m, x), d=m.distributions.Normal(t(m, conc), t(m, x)): d.log_prob(v)),
        "Gamma log_prob": lambda m: (lambda v=t(m, x), d=m.distributions.Gamma(t(m, conc), t(m, x)): d.log_prob(v)),
        "MultivariateNormal log_prob 16-d": lambda m: (
            lambda v=t(m, vectors), d=m.distributions.MultivariateNormal(t(m, np.zeros(16, np.float32)), t(m, cov)):
            d.log_prob(v)),
    }


def run(reps=20, warmup=3, threads=None, n=1_000_000):
    threads = threads or lucid.get_num_threads()
    lucid.set_num_threads(threads)
    torch.set_num_threads(threads)
    rows = []
    for name, make in _workloads(n).items():
        l_ms, t_ms = _median_ms(make(lucid), make(torch), reps, warmup)
        rows.append((name, l_ms, t_ms, t_ms / l_ms))
    return threads, rows


def table(threads, rows, n):
    out = [f"Lucid {lucid.__version__} vs PyTorch {torch.__version__}, {threads} thread(s), float32, n = {n}, "
           "median of timed calls.", "",
           "| workload | lucid ms | torch ms | torch/lucid |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {name} | {l_ms:.2f} | {t_ms:.2f} | {ratio:.2f} |" for name, l_ms, t_ms, ratio in rows]
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--n", type=int, default=1_000_000)
    a = p.parse_args(argv)
    threads, rows = run(a.reps, a.warmup, a.threads, a.n)
    print(table(threads, rows, a.n))


if __name__ == "__main__":
    main()
