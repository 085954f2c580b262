"""Recurrent layers: Lucid vs PyTorch on this machine, same inputs, same
thread count (default 1).

    python -m benchmarks.recurrent [--reps 20] [--threads 1]

Per workload, the median time of one training step of an embedding ->
recurrent layer -> linear head language model (forward, cross-entropy,
backward, Adam): PyTorch eager, Lucid eager and Lucid's fused_step. Also the
layer's forward alone, eager. Workloads: the shapes of examples/char_rnn.py
(2-layer LSTM, 192 hidden, 64 steps, batch 32), a word-level LM
(2-layer LSTM, 200 hidden, 35 steps, batch 20), small GRU and RNN layers.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import torch

import lucid
from lucid.compile import fused_step

WORKLOADS = {
    # name: (cell, vocab, embed, hidden, layers, steps, batch)
    "char_rnn LSTM 2x192 T64 B32": ("LSTM", 75, 32, 192, 2, 64, 32),
    "word LM LSTM 2x200 T35 B20": ("LSTM", 2000, 200, 200, 2, 35, 20),
    "GRU 1x128 T32 B32": ("GRU", 75, 32, 128, 1, 32, 32),
    "RNN 1x128 T32 B32": ("RNN", 75, 32, 128, 1, 32, 32),
}


def _model(lib, cell, vocab, embed, hidden, layers):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, embed)
            self.rnn = getattr(nn, cell)(embed, hidden, num_layers=layers, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, idx):
            return self.head(self.rnn(self.embed(idx))[0])

    return LM()


def _loss(lib):
    def loss_fn(logits, y):
        return lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    return loss_fn


def _median_ms(fn, reps):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def run(reps, threads):
    torch.set_num_threads(threads)
    lucid.set_num_threads(threads)
    rows = []
    for name, (cell, vocab, embed, hidden, layers, steps, batch) in WORKLOADS.items():
        rng = np.random.default_rng(0)
        x = rng.integers(0, vocab, (batch, steps))
        y = rng.integers(0, vocab, (batch, steps))
        tm = _model(torch, cell, vocab, embed, hidden, layers)
        lm = _model(lucid, cell, vocab, embed, hidden, layers)
        lm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
        fm = copy.deepcopy(lm)
        tx, ty, lx, ly = torch.tensor(x), torch.tensor(y), lucid.tensor(x), lucid.tensor(y)
        t_opt = torch.optim.Adam(tm.parameters(), lr=1e-3)
        l_opt = lucid.optim.Adam(lm.parameters(), lr=1e-3)
        f_step = fused_step(fm, _loss(lucid), lucid.optim.Adam(fm.parameters(), lr=1e-3))

        def torch_step():
            t_opt.zero_grad()
            _loss(torch)(tm(tx), ty).backward()
            t_opt.step()

        def lucid_step():
            l_opt.zero_grad()
            _loss(lucid)(lm(lx), ly).backward()
            l_opt.step()

        t_emb = tm.embed(tx).detach()
        l_emb = lucid.tensor(t_emb.numpy())

        def torch_forward():
            with torch.no_grad():
                tm.rnn(t_emb)

        def lucid_forward():
            with lucid.no_grad():
                lm.rnn(l_emb)

        row = {
            "workload": name,
            "torch eager step": _median_ms(torch_step, reps),
            "lucid eager step": _median_ms(lucid_step, reps),
            "lucid fused_step": _median_ms(lambda: f_step(lx, ly).item(), reps),
            "torch forward": _median_ms(torch_forward, reps),
            "lucid forward": _median_ms(lucid_forward, reps),
        }
        rows.append(row)
        print(" | ".join(f"{v:.2f}" if isinstance(v, float) else v for v in row.values()), flush=True)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    cols = ["workload", "torch eager step", "lucid eager step", "lucid fused_step", "torch forward", "lucid forward"]
    print(f"median ms, {args.threads} thread(s); ratio = torch / lucid (above 1: Lucid is faster)")
    print(" | ".join(cols))
    rows = run(args.reps, args.threads)
    print()
    for r in rows:
        print(f"{r['workload']}: eager step x{r['torch eager step'] / r['lucid eager step']:.2f}, fused_step "
              f"x{r['torch eager step'] / r['lucid fused_step']:.2f}, forward x{r['torch forward'] / r['lucid forward']:.2f}")


if __name__ == "__main__":
    main()
