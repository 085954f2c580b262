"""The frameworks and variants measured side by side.

Each framework lives in its own module (imported only inside a worker
subprocess) exposing `setup(threads)` and `build(workload, variant, data)`.
The tables here say which variant applies to which kind of workload, so the
runner can list, filter and report without importing any framework.
"""

FRAMEWORKS = ["lucid", "torch", "jax", "mlx"]

# (framework, variant) -> {kind: description}; a kind missing from the dict
# means the variant has no meaning there (e.g. fused_step without a model).
VARIANTS = {
    ("lucid", "eager"): {
        "train": "eager loop: zero_grad, forward, backward, opt.step()",
        "optim": "opt.step()",
        "bandwidth": "eager b + s*c (allocates the result)",
    },
    ("lucid", "compile_optimizer"): {
        "train": "eager forward/backward + compile_optimizer(opt).step()",
        "optim": "compile_optimizer(opt).step()",
    },
    ("lucid", "make_step"): {
        "train": "make_step (forward+loss+backward compiled) + eager opt.step()",
    },
    ("lucid", "fused_step"): {
        "train": "fused_step: forward, loss, backward and update in one executable",
    },
    ("lucid", "compiled"): {
        "bandwidth": "a.copy_(b + s*c) traced and compiled (one fused in-place pass)",
    },
    ("torch", "eager"): {
        "train": "eager loop, default optimizer flags (on CPU that resolves to the per-tensor loop)",
        "optim": "opt.step(), default flags",
        "bandwidth": "torch.add(b, c, alpha=s, out=a)",
    },
    ("torch", "foreach"): {
        "train": "eager loop, optimizer foreach=True",
        "optim": "opt.step(), foreach=True",
    },
    ("torch", "fused"): {
        "train": "eager loop, optimizer fused=True",
        "optim": "opt.step(), fused=True",
    },
    ("torch", "compile"): {
        "train": "torch.compile of the whole train step (zero_grad, forward, backward, step)",
        "optim": "torch.compile of opt.step()",
        "bandwidth": "torch.compile of a.copy_(b + s*c)",
    },
    ("jax", "jit"): {
        "train": "jax.jit of value_and_grad + optax update, params and state donated",
        "optim": "jax.jit of the optax update, params and state donated",
        "bandwidth": "jax.jit of b + s*c, a donated",
    },
    ("mlx", "compile"): {
        "train": "mx.compile of the train step with mlx.optimizers, mx.eval in the timed region",
        "optim": "mx.compile of optimizer.update, mx.eval in the timed region",
        "bandwidth": "mx.compile of b + s*c, mx.eval in the timed region",
    },
}

# The Lucid variant each workload's ratios are taken against.
REFERENCE = {"train": ("lucid", "fused_step"), "optim": ("lucid", "compile_optimizer"),
             "bandwidth": ("lucid", "compiled")}

# What to install when a framework is missing.
INSTALL_HINT = {
    "lucid": "pip install .",
    "torch": "pip install .[bench]",
    "jax": "pip install .[bench] (jax, jaxlib and optax wheels exist for Linux x86-64/aarch64 and macOS arm64)",
    "mlx": "pip install .[bench] (mlx[cpu] on Linux, mlx on macOS arm64)",
}


def variant_ids():
    return [f"{f}:{v}" for f, v in VARIANTS]


def applicable(kind):
    return [(f, v) for (f, v), kinds in VARIANTS.items() if kind in kinds]


def describe(framework, variant, kind):
    return VARIANTS.get((framework, variant), {}).get(kind, "")
