"""Train a small CNN on scikit-learn's handwritten digits (1x8x8 images).

Two conv/ReLU/max-pool stages and a two-layer classifier, trained with SGD
and momentum under a cosine learning-rate schedule. The training step is
compiled by `lucid.compile.fused_step`; `--eager` runs the plain loop instead.

    python examples/train_cnn.py            # ~98% test accuracy
    python examples/train_cnn.py --eager
"""
import argparse
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
    x = (x / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)  # pixel values are 0..16
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=SPLIT_SEED, stratify=y)

    def to_tensors(x, y):
        return lucid.tensor(x).to(device), lucid.tensor(y.astype(np.int64)).to(device)

    return to_tensors(x_train, y_train), to_tensors(x_test, y_test)


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 4 x 4
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 64), nn.ReLU(),
        nn.Linear(64, 10),
    )


def accuracy(model, x, y):
    model.eval()
    with lucid.no_grad():
        correct = (model(x).argmax(1) == y).sum().item()
    model.train()
    return correct / y.shape[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.03)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eager", action="store_true", help="plain eager loop instead of fused_step")
    p.add_argument("--device", default="cpu", help='"cpu", or "metal" on macOS')
    args = p.parse_args(argv)

    lucid.manual_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = load_data(args.device)
    # drop_last: one batch shape, so one compiled executable.
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True, drop_last=True)

    model = make_model().to(args.device)
    loss_fn = F.cross_entropy
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    if args.eager:
        def step(x, y):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
    else:
        step = fused_step(model, loss_fn, opt)
    # The compiled step reads the learning rate from opt.param_groups on every
    # call, so a scheduler works with it as with the eager loop.
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)

    n_params = sum(p.numel() for p in model.parameters())
    mode = "eager" if args.eager else "fused_step"
    print(f"digits: {x_train.shape[0]} train / {x_test.shape[0]} test images, CNN with {n_params} parameters, "
          f"SGD momentum {args.momentum}, {mode}")
    start = time.perf_counter()
    epochs = tqdm(range(1, args.epochs + 1), desc="train", unit="epoch") if tqdm else range(1, args.epochs + 1)
    for epoch in epochs:
        total = 0.0
        for x, y in loader:
            total += step(x, y).item()
        sched.step()
        loss, acc = total / len(loader), accuracy(model, x_test, y_test)
        if tqdm:
            epochs.set_postfix(loss=f"{loss:.4f}", test_acc=f"{acc:.4f}")
        else:
            print(f"epoch {epoch:3d}/{args.epochs}  loss {loss:.4f}  test acc {acc:.4f}", flush=True)
    elapsed = time.perf_counter() - start

    acc = accuracy(model, x_test, y_test)
    print(f"trained {args.epochs} epochs in {elapsed:.1f} s")
    print(f"test accuracy: {acc:.4f}")
    return acc


if __name__ == "__main__":
    main()
