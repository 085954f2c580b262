"""Models for the frameworks with PyTorch's API (Lucid and PyTorch), written
once: the same source builds both, so their architectures cannot drift.

`lib` is the top-level module (`lucid` or `torch`); its `nn` and
`nn.functional` are looked up from it.
"""
import importlib
import math


def _nn(lib):
    return importlib.import_module(lib.__name__ + ".nn"), importlib.import_module(lib.__name__ + ".nn.functional")


def build_model(lib, w):
    nn, F = _nn(lib)
    if w["model"] == "mlp":
        layers = []
        sizes = w["sizes"]
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)
    if w["model"] == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )
    if w["model"] == "convnet":
        make = {"conv": lambda cin, cout, k: nn.Conv2d(cin, cout, k), "relu": nn.ReLU,
                "maxpool": lambda k: nn.MaxPool2d(k), "flatten": nn.Flatten,
                "linear": lambda i, o: nn.Linear(i, o)}
        return nn.Sequential(*[make[layer[0]](*layer[1:]) for layer in w["layers"]])
    if w["model"] == "gpt":
        return _gpt(lib, nn, F, w)
    raise ValueError(f"unknown model {w['model']!r}")


def _gpt(lib, nn, F, w):
    d, heads, ctx = w["d_model"], w["heads"], w["ctx"]

    class Attention(nn.Module):
        # Attention spelled out (not scaled_dot_product_attention), so every
        # framework runs the same arithmetic.
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            # Additive causal mask: 0 on and below the diagonal, -inf above.
            self.mask = lib.triu(lib.full((ctx, ctx), float("-inf")), diagonal=1)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(x).reshape(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4).unbind(0)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // heads)) + self.mask[:t, :t]
            att = att.softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = Attention()
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, w["mlp_ratio"] * d), nn.GELU(), nn.Linear(w["mlp_ratio"] * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(w["vocab"], d)
            self.pos = nn.Embedding(ctx, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(w["layers"])])
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, w["vocab"], bias=False)
            self.positions = lib.arange(ctx)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(self.positions[:t])
            return self.head(self.ln_f(self.blocks(x)))

    return GPT()


def autocast(lib, model, precision, device="cpu"):
    """model with its forward under lib.autocast(device, dtype=precision) and
    its output back in float32 (the loss in float32, as a user writes it);
    model itself for "float32"."""
    if precision == "float32":
        return model
    inner, dtype = model, getattr(lib, precision)

    class Autocast(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, inputs):
            with lib.autocast(device, dtype=dtype):
                return self.inner(inputs).float()

    return Autocast()


def loss_fn(lib, w):
    """The loss as `loss_fn(model_output, target)`, the form fused_step takes."""
    _, F = _nn(lib)
    if w["model"] == "gpt":
        vocab = w["vocab"]

        def next_token_loss(logits, targets):
            return F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))

        return next_token_loss
    if w.get("loss") == "mse":
        return F.mse_loss
    return F.cross_entropy


def make_optimizer(lib, spec, params, **extra):
    optim = importlib.import_module(lib.__name__ + ".optim")
    kwargs = {k: v for k, v in spec.items() if k != "name"}
    kwargs.update(extra)
    return getattr(optim, spec["name"])(params, **kwargs)


def count_params(model):
    return sum(p.numel() for p in model.parameters())
