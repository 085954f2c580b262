"""JAX: jax.jit of value_and_grad + optax update with donated buffers.

The models mirror benchmarks/workloads/torchlike.py layer for layer (same
shapes, PyTorch's default uniform init bounds, exact-erf GELU, LayerNorm eps
1e-5); the worker checks the parameter count against the workload's.
"""
import math

from ._common import Runner, Unavailable

jax = jnp = optax = None


def setup(threads):
    # Thread count comes from the environment and CPU affinity the worker set
    # before this import (XLA reads them once, at start-up).
    global jax, jnp, optax
    import jax as _jax
    import jax.numpy as _jnp
    import optax as _optax

    jax, jnp, optax = _jax, _jnp, _optax
    jax.config.update("jax_platforms", "cpu")
    return {"jax": jax.__version__, "jaxlib": _jaxlib_version(), "optax": optax.__version__}


def _jaxlib_version():
    try:
        import jaxlib

        return jaxlib.__version__
    except Exception:
        return "?"


def build(w, variant, data):
    if variant != "jit":
        raise Unavailable(variant)
    kind = w["kind"]
    if kind == "train":
        return _train(w, data)
    if kind == "optim":
        return _optim(w, data)
    if kind == "bandwidth":
        return _bandwidth(w, data)
    raise Unavailable(kind)


def _tx(spec):
    if spec["name"] == "Adam":
        return optax.adam(spec["lr"], b1=0.9, b2=0.999, eps=1e-8)
    if spec["name"] == "AdamW":
        return optax.adamw(spec["lr"], b1=0.9, b2=0.999, eps=1e-8, weight_decay=spec["weight_decay"])
    if spec["name"] == "SGD":
        return optax.sgd(spec["lr"], momentum=spec.get("momentum") or None)
    raise Unavailable(f"optimizer {spec['name']}")


# -- models -------------------------------------------------------------------

class _Init:
    def __init__(self, seed=0):
        self.key = jax.random.PRNGKey(seed)

    def uniform(self, shape, bound):
        self.key, sub = jax.random.split(self.key)
        return jax.random.uniform(sub, shape, jnp.float32, -bound, bound)

    def linear(self, fan_in, fan_out, bias=True):
        bound = 1.0 / math.sqrt(fan_in)
        p = {"w": self.uniform((fan_in, fan_out), bound)}
        if bias:
            p["b"] = self.uniform((fan_out,), bound)
        return p

    def normal(self, shape):
        self.key, sub = jax.random.split(self.key)
        return jax.random.normal(sub, shape, jnp.float32)


def _linear(p, x):
    y = x @ p["w"]
    return y + p["b"] if "b" in p else y


def _layer_norm(p, x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["g"] + p["b"]


def _cross_entropy(logits, y):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, y[:, None], axis=-1).mean()


def _mlp(w):
    init = _Init()
    sizes = w["sizes"]
    params = [init.linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]

    def forward(params, x):
        for i, p in enumerate(params):
            x = _linear(p, x)
            if i < len(params) - 1:
                x = jax.nn.relu(x)
        return x

    return params, forward


def _cnn(w):
    init = _Init()

    def conv(cin, cout):
        bound = 1.0 / math.sqrt(cin * 9)
        return {"w": init.uniform((cout, cin, 3, 3), bound), "b": init.uniform((cout,), bound)}

    params = {"c1": conv(1, 32), "c2": conv(32, 64), "f1": init.linear(64 * 7 * 7, 128), "f2": init.linear(128, 10)}

    def conv_relu_pool(p, x):
        x = jax.lax.conv_general_dilated(x, p["w"], (1, 1), ((1, 1), (1, 1)),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        x = jax.nn.relu(x + p["b"][None, :, None, None])
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def forward(params, x):
        x = conv_relu_pool(params["c2"], conv_relu_pool(params["c1"], x))
        x = jax.nn.relu(_linear(params["f1"], x.reshape(x.shape[0], -1)))
        return _linear(params["f2"], x)

    return params, forward


def _convnet(w):
    init = _Init()
    params = []
    for layer in w["layers"]:
        if layer[0] == "conv":
            _, cin, cout, k = layer
            bound = 1.0 / math.sqrt(cin * k * k)
            params.append({"w": init.uniform((cout, cin, k, k), bound), "b": init.uniform((cout,), bound)})
        elif layer[0] == "linear":
            params.append(init.linear(layer[1], layer[2]))
        else:
            params.append({})

    def forward(params, x):
        for layer, p in zip(w["layers"], params):
            if layer[0] == "conv":
                x = jax.lax.conv_general_dilated(x, p["w"], (1, 1), "VALID",
                                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
                x = x + p["b"][None, :, None, None]
            elif layer[0] == "relu":
                x = jax.nn.relu(x)
            elif layer[0] == "maxpool":
                k = layer[1]
                x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, k, k), (1, 1, k, k), "VALID")
            elif layer[0] == "flatten":
                x = x.reshape(x.shape[0], -1)
            else:
                x = _linear(p, x)
        return x

    return params, forward


def _gpt(w):
    init = _Init()
    d, heads, ctx, vocab = w["d_model"], w["heads"], w["ctx"], w["vocab"]
    hidden = w["mlp_ratio"] * d

    def ln():
        return {"g": jnp.ones((d,), jnp.float32), "b": jnp.zeros((d,), jnp.float32)}

    params = {
        "tok": init.normal((vocab, d)), "pos": init.normal((ctx, d)),
        "blocks": [{"ln1": ln(), "qkv": init.linear(d, 3 * d), "proj": init.linear(d, d),
                    "ln2": ln(), "fc1": init.linear(d, hidden), "fc2": init.linear(hidden, d)}
                   for _ in range(w["layers"])],
        "ln_f": ln(), "head": init.linear(d, vocab, bias=False),
    }
    mask = jnp.triu(jnp.full((ctx, ctx), -jnp.inf, jnp.float32), k=1)
    scale = 1.0 / math.sqrt(d // heads)

    def forward(params, idx):
        b, t = idx.shape
        x = params["tok"][idx] + params["pos"][:t]
        for blk in params["blocks"]:
            qkv = _linear(blk["qkv"], _layer_norm(blk["ln1"], x)).reshape(b, t, 3, heads, d // heads)
            q, k, v = qkv.transpose(2, 0, 3, 1, 4)
            att = jax.nn.softmax(q @ k.swapaxes(-2, -1) * scale + mask[:t, :t], axis=-1)
            y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
            x = x + _linear(blk["proj"], y)
            h = jax.nn.gelu(_linear(blk["fc1"], _layer_norm(blk["ln2"], x)), approximate=False)
            x = x + _linear(blk["fc2"], h)
        return _linear(params["head"], _layer_norm(params["ln_f"], x))

    return params, forward


# -- variants -----------------------------------------------------------------

def _count(tree):
    return sum(int(a.size) for a in jax.tree_util.tree_leaves(tree))


def _train(w, data):
    params, forward = {"mlp": _mlp, "cnn": _cnn, "gpt": _gpt, "convnet": _convnet}[w["model"]](w)
    tx = _tx(w["optimizer"])
    x = jnp.asarray(data["x"] if w["model"] != "gpt" else data["x"].astype("int32"))
    mse = w.get("loss") == "mse"
    y = jnp.asarray(data["y"] if mse else data["y"].astype("int32"))

    def loss_fn(params, x, y):
        out = forward(params, x)
        if mse:
            return ((out - y) ** 2).mean()
        return _cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))

    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    jitted = jax.jit(train_step, donate_argnums=(0, 1))
    n = _count(params)
    state = {"params": params, "opt": tx.init(params)}

    def step():
        state["params"], state["opt"], loss = jitted(state["params"], state["opt"], x, y)
        jax.block_until_ready((state["params"], state["opt"], loss))
        return loss

    return Runner(step, n, loss_value=lambda t: t.item())


def _optim(w, data):
    tx = _tx(w["optimizer"])
    params = [jnp.asarray(p) for p in data["params"]]
    grads = [jnp.asarray(g) for g in data["grads"]]

    def update(params, opt_state, grads):
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    jitted = jax.jit(update, donate_argnums=(0, 1))
    n = _count(params)
    state = {"params": params, "opt": tx.init(params)}

    def step():
        state["params"], state["opt"] = jitted(state["params"], state["opt"], grads)
        jax.block_until_ready((state["params"], state["opt"]))

    return Runner(step, n)


def _bandwidth(w, data):
    s = w["scalar"]
    b, c = jnp.asarray(data["b"]), jnp.asarray(data["c"])
    # `a` is donated so the result reuses its buffer, as the in-place triads do.
    jitted = jax.jit(lambda a, b, c: b + s * c, donate_argnums=0, keep_unused=True)
    state = {"a": jnp.zeros(w["numel"], jnp.float32)}

    def step():
        state["a"] = jitted(state["a"], b, c)
        state["a"].block_until_ready()

    return Runner(step, 0)
