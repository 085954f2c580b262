"""Train an MLP on scikit-learn's handwritten digits (8x8 images, 10 classes).

The whole training step (forward, loss, backward, Adam update) is compiled
once by `lucid.compile.fused_step` and then runs as one executable per batch;
`--eager` trains with the plain loop instead, for comparison. The trained
weights are saved with `lucid.save`, loaded into a fresh model and checked.

    python examples/train_mlp.py            # ~97% test accuracy in seconds
    python examples/train_mlp.py --eager    # the same run, eager loop
"""
import argparse
import os
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from lucid.compile import fused_step
from lucid.utils.data import DataLoader, TensorDataset

try:
    from tqdm import tqdm
except ImportError:  # tqdm comes with the "examples" extra; without it, one line per epoch
    tqdm = None

SPLIT_SEED = 0  # the test set stays the same whatever --seed says


def load_data(device):
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=SPLIT_SEED, stratify=y)
    # Standardise with the training set's statistics; border pixels that are
    # always 0 have no spread, so they are only centred.
    mean, std = x_train.mean(0), x_train.std(0)
    std[std == 0] = 1.0

    def to_tensors(x, y):
        x = lucid.tensor(((x - mean) / std).astype(np.float32)).to(device)
        return x, lucid.tensor(y.astype(np.int64)).to(device)

    return to_tensors(x_train, y_train), to_tensors(x_test, y_test)


def make_model(hidden):
    return nn.Sequential(
        nn.Linear(64, hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, 10),
    )


def accuracy(model, x, y):
    model.eval()
    with lucid.no_grad():
        correct = (model(x).argmax(1) == y).sum().item()
    model.train()
    return correct / y.shape[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eager", action="store_true", help="plain eager loop instead of fused_step")
    p.add_argument("--device", default="cpu", help='"cpu", or "metal" on macOS')
    p.add_argument("--checkpoint", help="where to save the weights (default: a temporary file)")
    args = p.parse_args(argv)

    lucid.manual_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = load_data(args.device)
    # drop_last keeps every batch the same shape: a compiled step is built per
    # input shape, so a short last batch would compile a second executable.
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True, drop_last=True)

    model = make_model(args.hidden).to(args.device)
    loss_fn = F.cross_entropy
    opt = optim.Adam(model.parameters(), lr=args.lr)
    if args.eager:
        def step(x, y):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
    else:
        step = fused_step(model, loss_fn, opt)

    mode = "eager" if args.eager else "fused_step"
    print(f"digits: {x_train.shape[0]} train / {x_test.shape[0]} test images, MLP 64-{args.hidden}-{args.hidden}-10, "
          f"Adam, {mode}")
    start = time.perf_counter()
    epochs = tqdm(range(1, args.epochs + 1), desc="train", unit="epoch") if tqdm else range(1, args.epochs + 1)
    for epoch in epochs:
        total = 0.0
        for x, y in loader:
            total += step(x, y).item()
        loss, acc = total / len(loader), accuracy(model, x_test, y_test)
        if tqdm:
            epochs.set_postfix(loss=f"{loss:.4f}", test_acc=f"{acc:.4f}")
        else:
            print(f"epoch {epoch:3d}/{args.epochs}  loss {loss:.4f}  test acc {acc:.4f}", flush=True)
    elapsed = time.perf_counter() - start

    acc = accuracy(model, x_test, y_test)
    print(f"trained {args.epochs} epochs in {elapsed:.1f} s")
    print(f"test accuracy: {acc:.4f}")

    # Round trip through a checkpoint: a fresh model with the saved weights
    # must score exactly the same.
    with tempfile.TemporaryDirectory() as tmp:
        path = args.checkpoint or os.path.join(tmp, "mlp_digits.lucid")
        lucid.save(model.state_dict(), path)
        restored = make_model(args.hidden).to(args.device)
        restored.load_state_dict(lucid.load(path))
        restored_acc = accuracy(restored, x_test, y_test)
    if restored_acc != acc:
        raise SystemExit(f"reloaded model scores {restored_acc:.4f}, expected {acc:.4f}")
    print(f"saved and reloaded {path if args.checkpoint else 'the checkpoint'}: test accuracy {restored_acc:.4f}")
    return acc


if __name__ == "__main__":
    main()
