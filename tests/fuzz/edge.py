"""The ``edge`` family of the semantics probe: Lucid's public callables with
edge arguments.

The callables are enumerated, not listed: the functions of the top-level
namespace, Tensor methods, ``nn.functional``, ``linalg``, ``special`` and
``fft`` (where Lucid has them), and ``nn`` module constructors, each one
that PyTorch has under the same name. They are called with edge arguments:
0-d, empty and many-dimensional tensors, non-contiguous, flipped and
expanded (overlapping) ones, every dtype, NaN/inf and the integer limits,
negative and out-of-range dims, negative and overflowing sizes, None and
wrong Python types, out-of-range indices for the indexing ops, in-place ops
on leaves that require grad and on expanded tensors.

A case that mutates its input records whether a failed call left the input
as it was (``lost`` in its result), besides the outcome and the input after
the call, which are compared with PyTorch's. Results of random or
uninitialised ops are compared by shape and dtype only.
"""
from __future__ import annotations

import functools
import inspect

import torch

import lucid

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]

# Tensors with something unusual about them (shape, layout, dtype, values or autograd state).
TENSORS = [
    "T.tensor(1.5)", "T.tensor(-3)", "T.tensor(True)", "T.tensor(nan)",
    "T.zeros(0)", "T.zeros(2, 0)", "T.zeros(0, 3, dtype=T.int64)", "T.zeros(0, dtype=T.bool)",
    "T.ones([1] * 30)",
    "T.arange(12.).reshape(3, 4).t()", "T.arange(24.).reshape(2, 3, 4)[:, ::2, 1:]", "T.arange(6.).flip(0)",
    "T.tensor([1., 2., 3.]).expand(4, 3)", "T.tensor(2.).expand(2, 2)",
    "T.tensor([nan, inf, -inf, 0.0, -0.0, 1.0])",
    *[f"T.tensor([[1, 0, 2], [3, 4, 5]], dtype=T.{dt})" for dt in DTYPES],
    "T.tensor([-2**63, 2**63 - 1, 0])", "T.tensor([-2**31, 2**31 - 1], dtype=T.int32)",
    "T.tensor([1., 2., 3.], requires_grad=True)", "T.linspace(-2, 2, 24).reshape(2, 3, 4)",
    "(T.arange(16.).reshape(4, 4) / 7)", "(T.eye(3, dtype=T.float64) * 2)", "T.ones(2, 3, 4, 5)",
    "T.arange(1., 7.).reshape(2, 3)", "T.arange(6).reshape(2, 3)",
]

# Non-tensor arguments: dims and sizes (negative, out of range, overflowing), edge numbers, wrong types.
OTHERS = [
    "0", "1", "-1", "2", "3", "5", "-5", "2**62", "-2**62", "2**31", "2**63", "0.5", "-1.5", "nan", "inf",
    "True", "None", "'x'", "'mean'", "[]", "()", "(2, 3)", "(-1,)", "(-2, 3)", "(2**62, 4)", "(2**31, 2**31)",
    "[0, 1]", "[0, 0]", "(1, -7)", "[T.ones(2), T.ones(3)]", "[T.ones(2, 3), T.zeros(0)]", "T.float32", "T.int64",
    "T.bool", "T.tensor([0, 5])", "T.tensor([-1])", "T.ones(3)", "T.ones(4, 1)", "T.tensor(2)", "[1] * 70",
]

KWARGS = [
    "dim=-1", "dim=7", "dim=(0, 0)", "dim=None", "keepdim=True", "dtype=T.int64", "dtype=T.bool",
    "dtype=T.float16", "out=T.zeros(1).expand(3)", "out=T.zeros(2, dtype=T.int64)", "out=T.zeros(0)",
    "inplace=True", "p=-1.0", "reduction='bogus'", "device='cpu'", "requires_grad=True",
]

INDICES = [
    "T.tensor([0, 5])", "T.tensor([-1, 0])", "T.tensor([-4])", "T.tensor([[9]])", "T.tensor([2**40])",
    "T.tensor([-2**63])", "T.tensor([0.0])", "T.tensor([True, False])", "T.zeros(0, dtype=T.int64)",
    "T.tensor(1)", "T.tensor([[0, 1], [2, 3]])", "T.tensor([0, 1], dtype=T.int32)",
    "T.tensor([1, 0], dtype=T.int16)", "T.tensor([0, 1], dtype=T.uint8)", "T.tensor([[0, 2, 1]])",
    "T.tensor([1, 1, 1])",
]

# Templates over an input {x}, a dim {d} and an index tensor {i}.
INDEX_CALLS = [
    "T.gather({x}, {d}, {i})", "T.index_select({x}, {d}, {i})", "T.nn.functional.embedding({i}, {x})",
    "T.take({x}, {i})", "T.nn.functional.one_hot({i}, {n})", "T.take_along_dim({x}, {i}, {d})",
    "{x}[{i}]", "T.scatter({x}, {d}, {i}, 1.0)", "T.scatter_add({x}, {d}, {i}, {x})",
    "T.index_add({x}, {d}, {i}, {x})", "T.index_fill({x}, {d}, {i}, -1)", "T.index_copy({x}, {d}, {i}, {x})",
    "T.scatter_reduce({x}, {d}, {i}, {x}, 'amax')", "T.nn.functional.embedding_bag({i}, {x})",
    "T.index_put({x}, ({i},), T.tensor(7.))", "T.nn.functional.one_hot({i})", "T.bincount({i})",
]
INDEX_INPLACE = [
    "x.scatter_({d}, {i}, 1.0)", "x.scatter_add_({d}, {i}, x.clone())", "x.index_add_({d}, {i}, x.clone())",
    "x.index_fill_({d}, {i}, -1)", "x.index_copy_({d}, {i}, x.clone())", "x.put_({i}, T.tensor([7.]))",
    "x.index_put_(({i},), T.tensor(7.))", "x.__setitem__({i}, 7)", "x.masked_fill_({i}, 7)",
    "x.scatter_reduce_({d}, {i}, x.clone(), 'sum')", "x.index_reduce_({d}, {i}, x.clone(), 'prod')",
    "x.masked_scatter_({i}, T.ones(9))",
]

# Outputs whose values are random or uninitialised: compared by shape and dtype.
NONDETERMINISTIC = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "empty",
                    "empty_like", "empty_strided", "new_empty", "new_empty_strided", "bernoulli", "multinomial",
                    "normal", "poisson", "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d",
                    "dropout2d", "dropout3d", "rrelu", "gumbel_softmax", "exponential_", "geometric_",
                    "cauchy_", "log_normal_", "uniform_", "normal_", "random_", "bernoulli_", "rrelu_",
                    "fractional_max_pool2d", "fractional_max_pool3d", "native_dropout", "unique",
                    "resize_", "set_", "data_ptr", "untyped_storage", "storage")

# Callables left out: they change the process's state (seeds, defaults,
# threads, flags), read or write files, take callables, or describe the build.
_SKIP_WORDS = ("seed", "rng", "save", "load", "compile", "deterministic", "thread", "default", "print", "grad_enabled",
               "anomaly", "warn", "cuda", "mps", "xpu", "file", "hook", "share_memory", "pin_memory", "autocast",
               "flush_denormal", "vmap", "export", "jit", "backward", "apply_", "map_", "map2_", "register",
               "storage", "pointer", "cpp", "abi", "config", "profil", "__", "grad_fn", "inference_mode",
               "retain_grad", "numpy", "tolist", "checkpoint", "library", "typename", "lobpcg", "pca_lowrank",
               "svd_lowrank")


def _public(lucid_obj, torch_obj, want):
    names = []
    for n in sorted(dir(lucid_obj)):
        if n.startswith("_") or any(w in n for w in _SKIP_WORDS) or n.startswith("set"):
            continue
        lv, tv = getattr(lucid_obj, n, None), getattr(torch_obj, n, None)
        if lv is None or tv is None or not callable(lv) or inspect.ismodule(lv) or not want(lv):
            continue
        names.append(n)
    return names


@functools.lru_cache(maxsize=None)
def targets():
    """{prefix: sorted public names} of the callables Lucid and PyTorch share."""
    plain = lambda v: not inspect.isclass(v)  # noqa: E731
    out = {
        "T.": _public(lucid, torch, plain),
        "x.": _public(lucid.Tensor, torch.Tensor, lambda v: True),
        "T.nn.functional.": _public(lucid.nn.functional, torch.nn.functional, plain),
        "T.nn.": _public(lucid.nn, torch.nn, lambda v: inspect.isclass(v) and issubclass(v, lucid.nn.Module)),
    }
    for sub in ("linalg", "special", "fft"):
        if hasattr(lucid, sub) and hasattr(torch, sub):
            out[f"T.{sub}."] = _public(getattr(lucid, sub), getattr(torch, sub), plain)
    return out


META = ("meta = lambda r: [meta(v) for v in r] if isinstance(r, (tuple, list)) else "
        "(tuple(r.shape), r.dtype, r.requires_grad) if isinstance(r, T.Tensor) else type(r).__name__")
# The input after a failed call must be what it was: `lost` says so.
GUARD = ("before = x.detach().clone()\n"
         "try:\n    r = {call}\nexcept Exception as e:\n    r = e\n"
         "same = lambda a, b: a.shape == b.shape and bool(((a == b) | ((a != a) & (b != b))).all())\n"
         "lost = isinstance(r, Exception) and not same(x.detach(), before)\n")


def _arg(r):
    return r.choice(TENSORS) if r.random() < 0.45 else r.choice(OTHERS)


def _args(r, first_tensor=True, most=3):
    args = [r.choice(TENSORS)] if first_tensor else []
    args += [_arg(r) for _ in range(r.randint(0, most))]
    if r.random() < 0.3:
        args.append(r.choice(KWARGS))
    return ", ".join(args)


def _result(name, expr):
    if name.rsplit(".", 1)[-1] in NONDETERMINISTIC:
        return f"{META}\nresult = meta({expr})"
    return f"result = {expr}"


def family_edge(g):
    r = g.r
    t = targets()
    form = r.choice(["func", "func", "method", "method", "functional", "sub", "module", "factory", "index",
                     "index_inplace", "inplace", "inplace"])
    if form == "func":
        name = r.choice(t["T."])
        return f"# edge func {name}\n" + _result(name, f"T.{name}({_args(r, r.random() < 0.85)})")
    if form == "method":
        name = r.choice(t["x."])
        return f"# edge method {name}\nx = {r.choice(TENSORS)}\n" + _result(name, f"x.{name}({_args(r, False)})")
    if form == "functional":
        name = r.choice(t["T.nn.functional."])
        return f"# edge functional {name}\n" + _result(name, f"T.nn.functional.{name}({_args(r)})")
    if form == "sub":
        prefix = r.choice([p for p in t if p.startswith("T.") and p.count(".") == 2 and p != "T.nn."])
        name = r.choice(t[prefix])
        return f"# edge {prefix[2:-1]} {name}\n" + _result(name, f"{prefix}{name}({_args(r)})")
    if form == "module":
        name = r.choice(t["T.nn."])
        ctor = f"T.nn.{name}({_args(r, False, 3)})"
        call = f"m({_args(r, True, 1)})" if r.random() < 0.5 else "None"
        return (f"# edge module {name}\n{META}\nm = {ctor}\n"
                f"result = (type(m).__name__, [tuple(p.shape) for p in m.parameters()], meta({call}))")
    if form == "factory":
        name = r.choice(["zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "eye", "linspace",
                         "logspace", "tensor", "zeros_like", "full_like", "empty_strided", "randperm", "tril_indices",
                         "ones_like", "rand_like", "as_strided"])
        args = ", ".join(r.choice(["-1", "-2**62", "2**62", "2**40", "(2**31, 2**31, 4)", "(2**62, 2**62)",
                                   "(3, -2)", "2.5", "'x'", "None", "[1] * 70", "T.tensor(3)", "T.ones(2)",
                                   "(2, 3)", "0", "nan", "inf", "(2, 3.0)", "[2, None]", "T.bool", "[[1], [2, 3]]"])
                         for _ in range(r.randint(1, 3)))
        if r.random() < 0.3:
            args += ", " + r.choice(["dtype=T.bool", "dtype=T.int8", "dtype=T.float16", "requires_grad=True",
                                     "device='bogus'", "dtype='float32'", "layout=None", "out=T.zeros(1).expand(2)"])
        return f"# edge factory {name}\n" + _result(name, f"T.{name}({args})")
    if form == "index":
        tmpl = r.choice(INDEX_CALLS)
        call = tmpl.format(x=r.choice(TENSORS), d=r.choice(["0", "1", "-1", "2", "-3"]), i=r.choice(INDICES),
                           n=r.choice(["-1", "0", "3", "2**40"]))
        return f"# edge index {tmpl.split('(')[0]}\nresult = {call}"
    if form == "index_inplace":
        tmpl = r.choice(INDEX_INPLACE)
        call = tmpl.format(d=r.choice(["0", "1", "-1", "2"]), i=r.choice(INDICES + ["T.tensor([True, False, True])"]))
        x = r.choice(["T.arange(6.).reshape(2, 3)", "T.arange(6).reshape(2, 3)", "T.zeros(3)",
                      "T.tensor([1., 2., 3.]).expand(2, 3)", "T.ones(3, requires_grad=True)",
                      "T.arange(12.).reshape(3, 4).t()", "T.tensor(5.)", "T.zeros(0, 3)"])
        return f"# edge index_inplace {tmpl.split('(')[0]}\nx = {x}\n" + GUARD.format(call=call) + "result = (lost, r, x)"
    # in-place methods on inputs that cannot take them: leaves requiring grad,
    # expanded (overlapping) tensors, or with bad arguments
    name = r.choice([n for n in t["x."] if n.endswith("_")])
    x = r.choice(["T.tensor([1., 2., 3.], requires_grad=True)", "T.tensor([1., 2., 3.]).expand(2, 3)",
                  "T.tensor(2.).expand(3)", "T.arange(6.).reshape(2, 3)", "T.arange(6).reshape(2, 3)",
                  "T.tensor([True, False])", "T.tensor([nan, inf, -1.])", "T.zeros(0)"] + TENSORS[:6])
    call = f"x.{name}({_args(r, False, 2)})"
    after = f"{META}\nresult = (lost, r, meta(x))" if name in NONDETERMINISTIC else "result = (lost, r, x)"
    return (f"# edge inplace {name}\nx = {x}\n" + GUARD.format(call=call)
            + "r = r if isinstance(r, Exception) else None\n" + after)
