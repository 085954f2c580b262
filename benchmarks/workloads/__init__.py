"""The benchmark workloads (defined in benchmarks/README.md) as plain data.

A workload is a JSON-able dict, so the runner can hand it to a worker
subprocess unchanged. Every framework builds its model from the same dict,
feeds it the same synthetic numpy data and is checked against the same
analytic parameter count, so a mismatch in architecture fails loudly instead
of skewing a ratio.
"""
import copy
import math

import numpy as np

SEED = 0

ADAM = {"name": "Adam", "lr": 1e-3}
ADAMW = {"name": "AdamW", "lr": 1e-3, "weight_decay": 0.01}
SGD_M = {"name": "SGD", "lr": 1e-2, "momentum": 0.9}

# kind "train": a full training step; "optim": optimizer.step() over given
# grads; "bandwidth": the a = b + s*c triad.
WORKLOADS = {
    "mlp_small": {
        "kind": "train", "model": "mlp", "sizes": [784, 256, 256, 10], "batch": 64, "optimizer": ADAM,
        "what": "MLP 784-256-256-10, ReLU, batch 64, cross-entropy, Adam(lr=1e-3)",
    },
    "mlp_large": {
        "kind": "train", "model": "mlp", "sizes": [1024, 4096, 4096, 1024, 10], "batch": 256, "optimizer": ADAMW,
        "what": "MLP 1024-4096-4096-1024-10, ReLU, batch 256, cross-entropy, AdamW(weight_decay=0.01)",
    },
    "gpt_tiny": {
        "kind": "train", "model": "gpt", "vocab": 256, "ctx": 128, "layers": 4, "d_model": 128, "heads": 4,
        "mlp_ratio": 4, "batch": 16, "optimizer": ADAMW,
        "what": "decoder-only transformer, vocab 256, context 128, 4 layers, d_model 128, 4 heads, "
                "GELU MLP 4x, pre-LayerNorm, batch 16, next-token cross-entropy, AdamW",
    },
    "cnn_small": {
        "kind": "train", "model": "cnn", "batch": 64, "optimizer": SGD_M,
        "what": "conv 1->32 3x3, ReLU, maxpool 2, conv 32->64 3x3, ReLU, maxpool 2, linear 3136->128, "
                "ReLU, linear 128->10; input 64x1x28x28; SGD(momentum=0.9)",
    },
    # conv_real: conv stacks on real shapes, no padding (PyTorch's MNIST and
    # super-resolution examples, a VGG-like stack at 224 pixels).
    "conv_real_mnist": {
        "kind": "train", "model": "convnet", "input": [1, 28, 28], "batch": 64, "optimizer": SGD_M,
        "loss": "cross_entropy",
        "layers": [["conv", 1, 64, 5], ["relu"], ["maxpool", 2], ["conv", 64, 128, 5], ["relu"], ["maxpool", 2],
                   ["flatten"], ["linear", 128 * 4 * 4, 10]],
        "what": "conv 1->64 5x5, ReLU, maxpool 2, conv 64->128 5x5, ReLU, maxpool 2, linear 2048->10; "
                "input 64x1x28x28, no padding; SGD(momentum=0.9)",
    },
    "conv_real_sr": {
        "kind": "train", "model": "convnet", "input": [1, 96, 96], "batch": 16, "optimizer": SGD_M, "loss": "mse",
        "layers": [["conv", 1, 64, 5], ["relu"], ["conv", 64, 64, 3], ["relu"], ["conv", 64, 32, 3], ["relu"],
                   ["conv", 32, 9, 3]],
        "what": "super-resolution net: conv 1->64 5x5, 64->64 3x3, 64->32 3x3, 32->9 3x3 (ReLU between); "
                "input 16x1x96x96, no padding, MSE against a 16x9x86x86 target; SGD(momentum=0.9)",
    },
    "conv_real_224": {
        "kind": "train", "model": "convnet", "input": [3, 224, 224], "batch": 1, "optimizer": SGD_M,
        "loss": "cross_entropy",
        "layers": [["conv", 3, 64, 3], ["relu"], ["maxpool", 2], ["conv", 64, 128, 3], ["relu"], ["maxpool", 2],
                   ["conv", 128, 256, 3], ["relu"], ["maxpool", 2], ["conv", 256, 256, 3], ["relu"], ["maxpool", 2],
                   ["flatten"], ["linear", 256 * 12 * 12, 10]],
        "what": "VGG-like: conv 3->64, 64->128, 128->256, 256->256 (3x3, each + ReLU + maxpool 2), "
                "linear 36864->10; input 1x3x224x224, no padding; SGD(momentum=0.9)",
    },
    "adam_only_10M": {
        "kind": "optim", "tensors": 10, "numel": 1_000_000, "optimizer": ADAM, "bytes_per_param": 28,
        "resident_bytes_per_param": 16,
        "what": "one Adam step over 10 x 1M params with given grads (28 bytes/param)",
    },
    "sgd_only_10M": {
        "kind": "optim", "tensors": 10, "numel": 1_000_000, "optimizer": SGD_M, "bytes_per_param": 20,
        "resident_bytes_per_param": 12,
        "what": "one SGD(momentum=0.9) step over 10 x 1M params with given grads (20 bytes/param)",
    },
    "bandwidth": {
        "kind": "bandwidth", "numel": 64 * 1024 * 1024, "scalar": 3.0, "bytes_per_elem": 12,
        "resident_bytes_per_param": 12,
        "what": "a = b + s*c over 64M float32 (12 bytes/element): the memory roofline",
    },
}
for _name, _w in WORKLOADS.items():
    _w["name"] = _name

ORDER = list(WORKLOADS)
# Names that stand for several workloads on the command line.
GROUPS = {"conv_real": [n for n in ORDER if n.startswith("conv_real_")]}


def get(name):
    return copy.deepcopy(WORKLOADS[name])


# -- scaling run --------------------------------------------------------------

def fixed_cost():
    """The smallest training step: what a step costs beyond its arithmetic."""
    return {"name": "fixed_8x4_b1", "kind": "train", "model": "mlp", "sizes": [8, 4], "batch": 1,
            "optimizer": ADAM, "min_steps": 300,
            "what": "Linear 8->4, batch 1, cross-entropy, Adam"}


def mlp_width(width, depth=2, batch=64):
    return {"name": f"mlp_w{width}_d{depth}", "kind": "train", "model": "mlp",
            "sizes": [256] + [width] * depth + [10], "batch": batch, "optimizer": ADAM,
            "what": f"MLP 256-{'-'.join([str(width)] * depth)}-10, batch {batch}, Adam"}


def optim_size(opt, numel, tensors=10):
    # (optimizer, bytes moved per param, bytes resident per param)
    base = {"adam": (ADAM, 28, 16), "sgd": (SGD_M, 20, 12)}[opt]
    total = numel * tensors
    label = f"{total // 1_000_000}M" if total >= 1_000_000 else f"{total // 1000}K"
    return {"name": f"{opt}_only_{label}", "kind": "optim", "tensors": tensors, "numel": numel,
            "optimizer": base[0], "bytes_per_param": base[1], "resident_bytes_per_param": base[2],
            "what": f"one {base[0]['name']} step over {tensors} x {numel} params"}


# -- analytic sizes -----------------------------------------------------------

def param_count(w):
    """What every framework's model must hold; each worker asserts it."""
    if w["kind"] == "optim":
        return w["tensors"] * w["numel"]
    if w["kind"] == "bandwidth":
        return 0
    if w["model"] == "mlp":
        s = w["sizes"]
        return sum(i * o + o for i, o in zip(s[:-1], s[1:]))
    if w["model"] == "cnn":
        return (1 * 32 * 9 + 32) + (32 * 64 * 9 + 64) + (64 * 7 * 7 * 128 + 128) + (128 * 10 + 10)
    if w["model"] == "convnet":
        total = 0
        for layer in w["layers"]:
            if layer[0] == "conv":
                _, cin, cout, k = layer
                total += cin * cout * k * k + cout
            elif layer[0] == "linear":
                total += layer[1] * layer[2] + layer[2]
        return total
    if w["model"] == "gpt":
        d, v, t, h = w["d_model"], w["vocab"], w["ctx"], w["mlp_ratio"] * w["d_model"]
        block = 2 * (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (d * h + h) + (h * d + d)
        return v * d + t * d + w["layers"] * block + 2 * d + d * v
    raise ValueError(f"unknown model {w['model']!r}")


def convnet_output_shape(w):
    """(channels, height, width) or (features,) a convnet's layers produce
    from its input (no padding: a k x k conv removes k-1 pixels)."""
    shape = list(w["input"])
    for layer in w["layers"]:
        if layer[0] == "conv":
            c, h, wd = shape
            shape = [layer[2], h - layer[3] + 1, wd - layer[3] + 1]
        elif layer[0] == "maxpool":
            c, h, wd = shape
            shape = [c, h // layer[1], wd // layer[1]]
        elif layer[0] == "flatten":
            shape = [math.prod(shape)]
        elif layer[0] == "linear":
            if shape != [layer[1]]:
                raise ValueError(f"{w['name']}: linear expects {layer[1]} features, gets {shape}")
            shape = [layer[2]]
    return shape


def working_set(w):
    """Bytes an optimizer-only step or the triad keeps touching, to tell
    a cache-resident run from a memory-bound one."""
    n = w["numel"] if w["kind"] == "bandwidth" else w["tensors"] * w["numel"]
    return n * w["resident_bytes_per_param"]


def flops_per_step(w):
    """Rough matmul FLOPs of a training step (3x the forward), for the
    scaling report's achieved GFLOP/s."""
    if w.get("kind") != "train" or w["model"] != "mlp":
        return None
    s = w["sizes"]
    return 3 * 2 * w["batch"] * sum(i * o for i, o in zip(s[:-1], s[1:]))


# -- synthetic data -----------------------------------------------------------

def make_data(w):
    """float32 inputs and int64 targets from a fixed seed; identical for every
    framework (each converts the same numpy arrays)."""
    rng = np.random.default_rng(SEED)
    kind = w["kind"]
    if kind == "train":
        if w["model"] == "mlp":
            x = rng.standard_normal((w["batch"], w["sizes"][0]), dtype=np.float32)
            y = rng.integers(0, w["sizes"][-1], size=(w["batch"],), dtype=np.int64)
        elif w["model"] == "cnn":
            x = rng.standard_normal((w["batch"], 1, 28, 28), dtype=np.float32)
            y = rng.integers(0, 10, size=(w["batch"],), dtype=np.int64)
        elif w["model"] == "convnet":
            x = rng.standard_normal((w["batch"], *w["input"]), dtype=np.float32)
            out = convnet_output_shape(w)
            if w["loss"] == "mse":
                y = rng.standard_normal((w["batch"], *out), dtype=np.float32)
            else:
                y = rng.integers(0, out[0], size=(w["batch"],), dtype=np.int64)
        elif w["model"] == "gpt":
            tokens = rng.integers(0, w["vocab"], size=(w["batch"], w["ctx"] + 1), dtype=np.int64)
            x, y = tokens[:, :-1].copy(), tokens[:, 1:].copy()
        else:
            raise ValueError(f"unknown model {w['model']!r}")
        return {"x": x, "y": y}
    if kind == "optim":
        shape = (w["tensors"], w["numel"])
        return {"params": rng.standard_normal(shape, dtype=np.float32),
                "grads": rng.standard_normal(shape, dtype=np.float32) * np.float32(1e-2)}
    if kind == "bandwidth":
        n = w["numel"]
        return {"b": rng.standard_normal(n, dtype=np.float32), "c": rng.standard_normal(n, dtype=np.float32)}
    raise ValueError(f"unknown kind {kind!r}")
