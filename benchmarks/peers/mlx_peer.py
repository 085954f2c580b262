"""MLX: mx.compile of the train step with mlx.optimizers; mx.eval of the
loss, parameters and optimizer state inside the timed region.

The models mirror benchmarks/workloads/torchlike.py; convolutions take NHWC
(MLX's layout), the same arithmetic on transposed data. MLX's Adam and
AdamW are built with bias_correction=True to match PyTorch's update rule.
"""
import math
from functools import partial

from ._common import Runner, Unavailable

mx = mnn = mopt = None


def setup(threads):
    global mx, mnn, mopt
    import mlx.core as _mx
    import mlx.nn as _mnn
    import mlx.optimizers as _mopt

    mx, mnn, mopt = _mx, _mnn, _mopt
    mx.set_default_device(mx.cpu)
    mx.random.seed(0)
    return {"mlx": getattr(mx, "__version__", "?")}


def build(w, variant, data):
    if variant != "compile":
        raise Unavailable(variant)
    kind = w["kind"]
    if kind == "train":
        return _train(w, data)
    if kind == "optim":
        return _optim(w, data)
    if kind == "bandwidth":
        return _bandwidth(w, data)
    raise Unavailable(kind)


def _optimizer(spec):
    if spec["name"] == "Adam":
        return mopt.Adam(learning_rate=spec["lr"], betas=[0.9, 0.999], eps=1e-8, bias_correction=True)
    if spec["name"] == "AdamW":
        return mopt.AdamW(learning_rate=spec["lr"], betas=[0.9, 0.999], eps=1e-8,
                          weight_decay=spec["weight_decay"], bias_correction=True)
    if spec["name"] == "SGD":
        return mopt.SGD(learning_rate=spec["lr"], momentum=spec.get("momentum", 0.0))
    raise Unavailable(f"optimizer {spec['name']}")


def _model(w):
    if w["model"] == "mlp":
        sizes = w["sizes"]
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(mnn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(mnn.ReLU())
        return mnn.Sequential(*layers)
    if w["model"] == "cnn":
        return mnn.Sequential(
            mnn.Conv2d(1, 32, 3, padding=1), mnn.ReLU(), mnn.MaxPool2d(2),
            mnn.Conv2d(32, 64, 3, padding=1), mnn.ReLU(), mnn.MaxPool2d(2),
            _Flatten(),
            mnn.Linear(64 * 7 * 7, 128), mnn.ReLU(),
            mnn.Linear(128, 10),
        )
    if w["model"] == "convnet":  # NHWC: MLX's layout
        make = {"conv": lambda cin, cout, k: mnn.Conv2d(cin, cout, k), "relu": mnn.ReLU,
                "maxpool": lambda k: mnn.MaxPool2d(k), "flatten": _Flatten,
                "linear": lambda i, o: mnn.Linear(i, o)}
        return mnn.Sequential(*[make[layer[0]](*layer[1:]) for layer in w["layers"]])
    if w["model"] == "gpt":
        return _gpt(w)
    raise Unavailable(f"model {w['model']}")


def _Flatten():
    class Flatten(mnn.Module):
        def __call__(self, x):
            return x.reshape(x.shape[0], -1)

    return Flatten()


def _gpt(w):
    d, heads, ctx, vocab = w["d_model"], w["heads"], w["ctx"], w["vocab"]
    scale = 1.0 / math.sqrt(d // heads)
    mask = mx.triu(mx.full((ctx, ctx), -math.inf, dtype=mx.float32), k=1)

    class Block(mnn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = mnn.LayerNorm(d)
            self.qkv = mnn.Linear(d, 3 * d)
            self.proj = mnn.Linear(d, d)
            self.ln2 = mnn.LayerNorm(d)
            self.fc1 = mnn.Linear(d, w["mlp_ratio"] * d)
            self.fc2 = mnn.Linear(w["mlp_ratio"] * d, d)

        def __call__(self, x):
            b, t, _ = x.shape
            qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, heads, d // heads).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = mx.softmax(q @ k.swapaxes(-2, -1) * scale + mask[:t, :t], axis=-1)
            x = x + self.proj((att @ v).transpose(0, 2, 1, 3).reshape(b, t, d))
            return x + self.fc2(mnn.gelu(self.fc1(self.ln2(x))))

    class GPT(mnn.Module):
        def __init__(self):
            super().__init__()
            self.tok = mnn.Embedding(vocab, d)
            self.pos = mnn.Embedding(ctx, d)
            self.blocks = [Block() for _ in range(w["layers"])]
            self.ln_f = mnn.LayerNorm(d)
            self.head = mnn.Linear(d, vocab, bias=False)

        def __call__(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(mx.arange(t))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))

    return GPT()


def _blas_note():
    """Which BLAS the installed MLX CPU build carries (the Linux wheel bundles
    one; its speed decides every matmul-bound workload)."""
    import glob
    import os

    import mlx

    libs = []
    for base in mlx.__path__:
        libs += [os.path.basename(p) for p in glob.glob(os.path.join(os.path.dirname(base), "mlx_cpu.libs", "*"))]
    if any(n.startswith("libopenblas") for n in libs):
        return "BLAS: bundled OpenBLAS"
    if any(n.startswith("libblas") for n in libs):
        return "BLAS: bundled reference BLAS"
    return ""


def _count(tree):
    from mlx.utils import tree_flatten

    return sum(int(v.size) for _, v in tree_flatten(tree))


def _train(w, data):
    model = _model(w)
    mx.eval(model.parameters())
    opt = _optimizer(w["optimizer"])
    x_np = data["x"]
    mse = w.get("loss") == "mse"
    y_np = data["y"] if mse else data["y"].astype("int32")
    if w["model"] in ("cnn", "convnet"):
        x_np = x_np.transpose(0, 2, 3, 1).copy()  # NCHW -> NHWC
        if mse:
            y_np = y_np.transpose(0, 2, 3, 1).copy()
    elif w["model"] == "gpt":
        x_np = x_np.astype("int32")
    x, y = mx.array(x_np), mx.array(y_np)

    def loss_fn(model, x, y):
        out = model(x)
        if mse:
            return mnn.losses.mse_loss(out, y, reduction="mean")
        return mnn.losses.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="mean")

    loss_and_grad = mnn.value_and_grad(model, loss_fn)
    # Optimizer state is created lazily on the first update; initialise it
    # now so mx.compile captures it as state.
    opt.init(model.trainable_parameters())
    state = [model.state, opt.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def train_step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    def step():
        loss = train_step(x, y)
        mx.eval(loss, state)
        return loss

    return Runner(step, _count(model.parameters()), loss_value=lambda t: t.item(), note=_blas_note())


def _optim(w, data):
    holder = mnn.Module()
    holder.params = [mx.array(p) for p in data["params"]]
    grads = {"params": [mx.array(g) for g in data["grads"]]}
    opt = _optimizer(w["optimizer"])
    opt.init(holder.trainable_parameters())
    state = [holder.state, opt.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def update(grads):
        opt.update(holder, grads)

    def step():
        update(grads)
        mx.eval(state)

    return Runner(step, _count(holder.parameters()))


def _bandwidth(w, data):
    s = w["scalar"]
    b, c = mx.array(data["b"]), mx.array(data["c"])
    mx.eval(b, c)
    triad = mx.compile(lambda b, c: b + s * c)

    def step():
        a = triad(b, c)
        mx.eval(a)
        return a

    return Runner(step, 0)
