"""Train a small character-level GPT on a bundle of public-domain poems.

A decoder-only transformer: token and position embeddings, pre-norm blocks of
causal self-attention (`F.scaled_dot_product_attention(is_causal=True)`) and
a GELU MLP, a final LayerNorm and an output head tied to the token embedding.
It learns next-character prediction with cross-entropy and AdamW under a
cosine learning-rate schedule; the training step is compiled by
`lucid.compile.fused_step` (`--eager` runs the plain loop instead). After each
epoch it reports the train and validation loss; at the end, the validation
perplexity and a sampled continuation of `--prompt`.

    python examples/char_gpt.py                 # about a minute on 2 cores
    python examples/char_gpt.py --epochs 12     # better-looking samples; val loss levels off
"""
import argparse
import math
import os
import time

import numpy as np

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from lucid.amp import GradScaler, autocast
from lucid.compile import fused_step
from lucid.utils.data import DataLoader, Dataset, RandomSampler

try:
    from tqdm import tqdm
except ImportError:  # tqdm comes with the "examples" extra; without it, one line per epoch
    tqdm = None

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "poems.txt")


class CharWindows(Dataset):
    """Every window of `block_size` characters; the target is the window
    shifted by one."""

    def __init__(self, ids, block_size):
        self.ids, self.block_size = ids, block_size

    def __len__(self):
        return self.ids.shape[0] - self.block_size

    def __getitem__(self, i):
        return self.ids[i:i + self.block_size], self.ids[i + 1:i + 1 + self.block_size]


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        # [B, T, 3C] -> three [B, heads, T, head_dim]
        q, k, v = (t.reshape(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.dropout(self.proj(y.transpose(1, 2).reshape(B, T, C)))


class Block(nn.Module):
    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model),
                                 nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, n_heads, n_layers, dropout):
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(d_model, n_heads, dropout) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        nn.init.normal_(self.tok.weight, std=0.02)  # it is also the output head
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(lucid.arange(T, device=idx.device)))
        x = self.ln_f(self.blocks(x))
        return F.linear(x, self.tok.weight)  # head tied to the token embedding


def next_char_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def evaluate(model, ids, block_size, batch_size=128):
    """Mean next-character loss over the non-overlapping windows of `ids`."""
    n = (ids.shape[0] - 1) // block_size
    x = ids[:n * block_size].reshape(n, block_size)
    y = ids[1:n * block_size + 1].reshape(n, block_size)
    model.eval()
    total = 0.0
    with lucid.no_grad():
        for i in range(0, n, batch_size):
            xb, yb = x[i:i + batch_size], y[i:i + batch_size]
            total += next_char_loss(model(xb), yb).item() * xb.shape[0]
    model.train()
    return total / n


def sample(model, prompt_ids, length, temperature, rng, device):
    """Continues `prompt_ids` one character at a time; temperature 0 is greedy."""
    ids = list(prompt_ids)
    model.eval()
    with lucid.no_grad():
        for _ in range(length):
            context = lucid.tensor([ids[-model.block_size:]], dtype=lucid.int64).to(device)
            logits = model(context)[0, -1].float().numpy().astype(np.float64)
            if temperature <= 0:
                ids.append(int(logits.argmax()))
            else:
                p = np.exp((logits - logits.max()) / temperature)
                ids.append(int(rng.choice(len(p), p=p / p.sum())))
    model.train()
    return ids


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--steps-per-epoch", type=int, default=200)
    p.add_argument("--steps", type=int, help="stop after this many steps in all (default: epochs x steps-per-epoch)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64, help="context length in characters")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eager", action="store_true", help="plain eager loop instead of fused_step")
    p.add_argument("--amp", action="store_true",
                   help="mixed precision: matmuls in float16 under autocast, with a GradScaler")
    p.add_argument("--device", default="cpu", help='"cpu", or "metal" on macOS')
    p.add_argument("--data", default=DATA, help="a UTF-8 text file")
    p.add_argument("--prompt", default="The ")
    p.add_argument("--sample-len", type=int, default=300)
    p.add_argument("--temperature", type=float, default=0.8, help="0 samples greedily")
    args = p.parse_args(argv)

    lucid.manual_seed(args.seed)
    with open(args.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = lucid.tensor(np.array([stoi[c] for c in text], dtype=np.int64)).to(args.device)
    split = int(0.9 * len(text))  # the last tenth of the text (its final poems) is held out for validation
    train_ids, val_ids = ids[:split], ids[split:]

    total_steps = args.epochs * args.steps_per_epoch
    if args.steps is not None:
        total_steps = min(total_steps, args.steps)
    train_set = CharWindows(train_ids, args.block_size)
    # Each epoch draws steps_per_epoch batches of windows at random offsets.
    sampler = RandomSampler(train_set, num_samples=args.steps_per_epoch * args.batch_size)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    model = GPT(len(chars), args.block_size, args.d_model, args.heads, args.layers, args.dropout).to(args.device)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    # fused_step reads the learning rate from opt.param_groups on every call.
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(total_steps, 1), eta_min=args.lr / 10)
    # Mixed precision: autocast runs the matmuls in float16 and the loss in
    # float32; the scaler keeps small float16 gradients from flushing to zero
    # and skips any step whose gradients overflow.
    scaler = GradScaler(enabled=args.amp)
    precision = autocast("cpu", dtype=lucid.float16, enabled=args.amp)
    if args.eager:
        def step(x, y):
            opt.zero_grad()
            with precision:
                loss = next_char_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss
    else:
        fused = fused_step(model, next_char_loss, opt, grad_scaler=scaler if args.amp else None)

        def step(x, y):
            with precision:  # the autocast state is part of the compiled signature
                return fused(x, y)

    n_params = sum(p.numel() for p in model.parameters())
    mode = ("eager" if args.eager else "fused_step") + (", autocast float16 + GradScaler" if args.amp else "")
    print(f"{os.path.basename(args.data)}: {len(text)} characters, vocabulary {len(chars)}, "
          f"{split} train / {len(text) - split} val")
    print(f"GPT: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, context {args.block_size}, "
          f"{n_params} parameters; AdamW, {mode}, {total_steps} steps")

    bar = tqdm(total=total_steps, desc="train", unit="step") if tqdm else None

    def log(line):
        if bar is not None:
            bar.write(line)  # above the bar, which keeps its place
        else:
            print(line, flush=True)

    start, done, epoch = time.perf_counter(), 0, 0
    val_loss = float("nan")
    while done < total_steps:
        epoch += 1
        total, n = 0.0, 0
        for x, y in loader:
            total += step(x, y).item()
            sched.step()
            n += 1
            done += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{total / n:.3f}")
            if done == total_steps:
                break
        val_loss = evaluate(model, val_ids, args.block_size)
        log(f"epoch {epoch}: train loss {total / n:.4f}  val loss {val_loss:.4f}  "
            f"({time.perf_counter() - start:.1f} s)")
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - start
    print(f"trained {done} steps in {elapsed:.1f} s ({1000 * elapsed / max(done, 1):.0f} ms/step, "
          f"evaluation included)")

    rng = np.random.default_rng(args.seed)
    prompt = [stoi[c] for c in args.prompt if c in stoi] or [0]  # characters the text lacks are dropped
    out = sample(model, prompt, args.sample_len, args.temperature, rng, args.device)
    print(f"--- sample (temperature {args.temperature}) ---")
    print("".join(chars[i] for i in out))
    print("---")
    print(f"final val loss: {val_loss:.4f} (perplexity {math.exp(val_loss):.2f})")
    return val_loss


if __name__ == "__main__":
    main()
