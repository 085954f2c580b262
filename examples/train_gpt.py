"""A nanoGPT-style trainer whose whole step is one compiled executable.

The loop real GPT trainers write: the model computes its own loss
(`logits, loss = model(X, Y)`), AdamW with decay and no-decay groups, a
hand-written cosine schedule with warmup, gradient accumulation over
`--accum` micro-batches, clipping of the global gradient norm at `--clip`,
and bf16 autocast (`--bf16`). `lucid.compile.train_step` compiles the step
function once and each call runs forward, backward, accumulation, clipping
and the AdamW update as one executable. `--mode eager` runs the same loop
step by step in Lucid, `--mode torch` in PyTorch (for the speed comparison;
needs torch). The model and data are examples/char_gpt.py's.

    python examples/train_gpt.py                     # compiled
    python examples/train_gpt.py --mode eager        # the same loop, eagerly
    python examples/train_gpt.py --mode torch        # the same loop in PyTorch
"""
import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import char_gpt  # noqa: E402

import lucid  # noqa: E402
import lucid.nn.functional as F  # noqa: E402
import lucid.optim as optim  # noqa: E402
from lucid.amp import autocast  # noqa: E402
from lucid.compile import train_step  # noqa: E402
from lucid.nn.utils import clip_grad_norm_  # noqa: E402


class GPT(char_gpt.GPT):
    """``logits, loss = model(idx, targets)``, as nanoGPT's model."""

    def forward(self, idx, targets):
        logits = super().forward(idx)
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def get_lr(it, args):
    """nanoGPT's schedule: linear warmup, then cosine decay to min_lr."""
    if it < args.warmup:
        return args.lr * (it + 1) / (args.warmup + 1)
    ratio = min(1.0, (it - args.warmup) / max(1, args.steps - args.warmup))
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (args.lr - args.min_lr)


def get_batch(data, args, rng):
    """`accum` micro-batches of random windows: X, Y of [accum, batch, block]."""
    starts = rng.integers(0, len(data) - args.block_size - 1, size=(args.accum, args.batch_size))
    x = np.stack([[data[s:s + args.block_size] for s in row] for row in starts])
    y = np.stack([[data[s + 1:s + 1 + args.block_size] for s in row] for row in starts])
    return x, y


def lucid_trainer(args, vocab):
    lucid.manual_seed(args.seed)
    model = GPT(vocab, args.block_size, args.d_model, args.heads, args.layers, args.dropout)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                       {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    precision = autocast("cpu", dtype=lucid.bfloat16, enabled=args.bf16)

    if args.mode == "compiled":
        def fn(X, Y):
            _, loss = model(X, Y)
            return loss

        compiled = train_step(fn, opt, clip_grad_norm=args.clip, accumulate=args.accum)

        def step(x, y):
            with precision:  # the autocast state is part of the compiled signature
                loss, _norm = compiled(lucid.tensor(x), lucid.tensor(y))
            return loss.item()
        return step, opt.param_groups

    def step(x, y):
        opt.zero_grad()
        total = 0.0
        for m in range(args.accum):
            with precision:
                _, loss = model(lucid.tensor(x[m]), lucid.tensor(y[m]))
            (loss / args.accum).backward()
            total += loss.item()
        clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        return total / args.accum
    return step, opt.param_groups


def torch_trainer(args, vocab):
    import torch
    import torch.nn as tnn

    torch.manual_seed(args.seed)

    class Block(tnn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.ln1, self.ln2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
            self.qkv, self.proj = tnn.Linear(d, 3 * d), tnn.Linear(d, d)
            self.mlp = tnn.Sequential(tnn.Linear(d, 4 * d), tnn.GELU(), tnn.Linear(4 * d, d), tnn.Dropout(args.dropout))
            self.drop, self.h = tnn.Dropout(args.dropout), h

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = (t.reshape(B, T, self.h, C // self.h).transpose(1, 2)
                       for t in self.qkv(self.ln1(x)).split(C, dim=2))
            y = tnn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.drop(self.proj(y.transpose(1, 2).reshape(B, T, C)))
            return x + self.mlp(self.ln2(x))

    class TorchGPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = tnn.Embedding(vocab, args.d_model), tnn.Embedding(args.block_size, args.d_model)
            self.drop = tnn.Dropout(args.dropout)
            self.blocks = tnn.Sequential(*[Block(args.d_model, args.heads) for _ in range(args.layers)])
            self.ln_f = tnn.LayerNorm(args.d_model)
            tnn.init.normal_(self.tok.weight, std=0.02)  # as char_gpt.GPT: it is also the output head
            tnn.init.normal_(self.pos.weight, std=0.02)

        def forward(self, idx, targets):
            x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1])))
            logits = tnn.functional.linear(self.ln_f(self.blocks(x)), self.tok.weight)
            return logits, tnn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    model = TorchGPT()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for m in range(args.accum):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
                _, loss = model(torch.from_numpy(x[m]), torch.from_numpy(y[m]))
            (loss / args.accum).backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        return total / args.accum
    return step, opt.param_groups


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["compiled", "eager", "torch"], default="compiled")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per micro-batch")
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=2e-4)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=char_gpt.DATA)
    args = p.parse_args(argv)

    with open(args.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    step, groups = (torch_trainer if args.mode == "torch" else lucid_trainer)(args, len(chars))
    rng = np.random.default_rng(args.seed)

    print(f"{args.mode}: {args.layers} layers, d_model {args.d_model}, {args.accum} x {args.batch_size} sequences "
          f"of {args.block_size} per step, clip {args.clip}, {'bf16 autocast' if args.bf16 else 'float32'}")
    times, loss = [], float("nan")
    for it in range(args.steps):
        for g in groups:
            g["lr"] = get_lr(it, args)
        x, y = get_batch(data, args, rng)
        start = time.perf_counter()
        loss = step(x, y)
        times.append(time.perf_counter() - start)
        if it % 10 == 0 or it == args.steps - 1:
            print(f"step {it:4d}  loss {loss:.4f}  lr {groups[0]['lr']:.2e}", flush=True)
    steady = times[1:] or times  # the first step compiles
    print(f"median step {1000 * float(np.median(steady)):.1f} ms (first step {1000 * times[0]:.0f} ms)")
    print(f"final loss: {loss:.4f}")
    return loss


if __name__ == "__main__":
    main()
