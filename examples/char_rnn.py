"""Train a character-level recurrent language model (LSTM or GRU) on a bundle
of public-domain poems.

An embedding, a stack of `nn.LSTM` (or `nn.GRU`) layers with dropout between
them, and a linear head predict the next character of random windows of the
text. The training step -- the recurrent layers unrolled over the window,
cross-entropy, backward and the Adam update -- is compiled by
`lucid.compile.fused_step` (`--eager` runs the plain loop instead). After each
epoch it reports the train and validation loss; at the end, the validation
perplexity and a continuation of `--prompt` sampled one character at a time,
carrying the hidden state from step to step.

    python examples/char_rnn.py                  # LSTM, about a minute on 2 cores
    python examples/char_rnn.py --cell gru
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


class CharRNN(nn.Module):
    def __init__(self, vocab_size, cell, d_embed, hidden, layers, dropout):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_embed)
        rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
        self.rnn = rnn(d_embed, hidden, num_layers=layers, dropout=dropout if layers > 1 else 0.0,
                       batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, idx, state=None):
        out, state = self.rnn(self.embed(idx), state)
        return self.head(self.drop(out)), state


def next_char_loss(output, targets):
    logits, _ = output  # (logits, final state): the state is not part of the loss
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
    """Reads the prompt, then generates one character per step from the
    carried hidden state; temperature 0 is greedy."""
    ids = list(prompt_ids)
    model.eval()
    with lucid.no_grad():
        logits, state = model(lucid.tensor([ids], dtype=lucid.int64).to(device))
        for _ in range(length):
            last = logits[0, -1].float().numpy().astype(np.float64)
            if temperature <= 0:
                ids.append(int(last.argmax()))
            else:
                p = np.exp((last - last.max()) / temperature)
                ids.append(int(rng.choice(len(p), p=p / p.sum())))
            logits, state = model(lucid.tensor([[ids[-1]]], dtype=lucid.int64).to(device), state)
    model.train()
    return ids


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--steps-per-epoch", type=int, default=100)
    p.add_argument("--steps", type=int, help="stop after this many steps in all (default: epochs x steps-per-epoch)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--block-size", type=int, default=48, help="characters per training window")
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=4e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eager", action="store_true", help="plain eager loop instead of fused_step")
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

    model = CharRNN(len(chars), args.cell, args.embed, args.hidden, args.layers, args.dropout).to(args.device)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    # fused_step reads the learning rate from opt.param_groups on every call.
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(total_steps, 1), eta_min=args.lr / 10)
    if args.eager:
        def step(x, y):
            opt.zero_grad()
            loss = next_char_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
    else:
        # One executable per window length: the time loop is unrolled in the trace.
        step = fused_step(model, next_char_loss, opt)

    n_params = sum(p.numel() for p in model.parameters())
    mode = "eager" if args.eager else "fused_step"
    print(f"{os.path.basename(args.data)}: {len(text)} characters, vocabulary {len(chars)}, "
          f"{split} train / {len(text) - split} val")
    print(f"{args.cell.upper()}: {args.layers} layers, hidden {args.hidden}, window {args.block_size}, "
          f"{n_params} parameters; Adam, {mode}, {total_steps} steps")

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
