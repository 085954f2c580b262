"""Runs PyTorch programs as written, under PyTorch or under Lucid.

    python run.py torch|lucid PROGRAM [ARGS...] [--then PROGRAM [ARGS...]]...

Several programs run one after the other in one process (the library is
imported once); each one's output is framed by "##### begin NAME" and
"##### end NAME: ok" (or the traceback of what it raised).

Under ``lucid`` every ``import torch...`` resolves to ``lucid...`` (the
program's text is not touched: this is "renaming the import"). A missing
module or attribute fails the run as it would fail a user.

With ``SHARED_RANDOM=1`` in the environment, both libraries draw their
random numbers from one NumPy stream (seeded by its value), so the two runs
can be compared number for number: parameter initialisation
(``Tensor.uniform_/normal_``, ``nn.init.orthogonal_`` and Lucid's init
helpers), ``rand/randn/randint/randperm/multinomial`` and their ``_like``
forms, dropout masks (``F.dropout``), the ``RandomSampler`` order,
``random_split`` and Python's ``random`` module (seeded). What a library
computes from those numbers is untouched.
"""
import importlib
import importlib.abc
import importlib.machinery
import os
import random
import runpy
import sys
import traceback

import numpy as np


class _TorchIsLucid(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `torch` and `torch.X` to `lucid` and `lucid.X`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("lucid" + spec.name[len("torch"):])

    def exec_module(self, module):
        pass


def _np_dtype(lib, dtype):
    return np.dtype(str(dtype).split(".")[-1].replace("bfloat16", "float32"))


def _share_random(lib, seed):
    rng = np.random.Generator(np.random.PCG64(seed))
    random.seed(seed)  # Python's own generator too (programs that pick samples with random.randint)

    def make(arr, dtype=None, device=None, requires_grad=False):
        dtype = dtype or lib.get_default_dtype()
        t = lib.tensor(np.asarray(arr).astype(_np_dtype(lib, dtype)), dtype=dtype, device=device)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def sizes(size):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = size[0]
        return tuple(int(s) for s in size)

    def randn(*size, dtype=None, device=None, requires_grad=False, generator=None, **kw):
        return make(rng.standard_normal(sizes(size)), dtype, device, requires_grad)

    def rand(*size, dtype=None, device=None, requires_grad=False, generator=None, **kw):
        return make(rng.random(sizes(size)), dtype, device, requires_grad)

    def randn_like(t, dtype=None, device=None, **kw):
        return make(rng.standard_normal(tuple(t.shape)), dtype or t.dtype, device or t.device)

    def rand_like(t, dtype=None, device=None, **kw):
        return make(rng.random(tuple(t.shape)), dtype or t.dtype, device or t.device)

    def randint(low, high=None, size=None, *, dtype=None, generator=None, device=None, **kw):
        if size is None:
            low, high, size = 0, low, high
        elif high is None:
            low, high = 0, low
        return lib.tensor(rng.integers(low, high, size=tuple(size)), dtype=dtype or lib.int64, device=device)

    def randperm(n, *, dtype=None, generator=None, device=None, **kw):
        return lib.tensor(rng.permutation(int(n)), dtype=dtype or lib.int64, device=device)

    def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
        p = input.detach().double().cpu().numpy().reshape(-1, input.shape[-1])
        p = p / p.sum(axis=1, keepdims=True)
        out = np.stack([rng.choice(p.shape[1], num_samples, replace=replacement, p=row) for row in p])
        return lib.tensor(out if input.ndim == 2 else out[0], dtype=lib.int64, device=input.device)

    def fill(t, arr):
        with lib.no_grad():
            t.copy_(lib.tensor(arr.astype(_np_dtype(lib, t.dtype)), device=t.device))
        return t

    def uniform_(self, a=0.0, b=1.0, generator=None):
        return fill(self, a + (b - a) * rng.random(tuple(self.shape)))

    def normal_(self, mean=0.0, std=1.0, generator=None):
        return fill(self, mean + std * rng.standard_normal(tuple(self.shape)))

    def orthogonal_(tensor, gain=1, generator=None):
        rows = tensor.shape[0]
        cols = tensor.numel() // rows
        flat = rng.standard_normal((rows, cols))
        if rows < cols:
            flat = flat.T
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return fill(tensor, (q * gain).reshape(tuple(tensor.shape)))

    functional = sys.modules[lib.__name__ + ".nn.functional"]

    def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
        if not training or p == 0.0:
            return input
        keep = (rng.random(tuple(input.shape)) >= p).astype(np.float64) / (1.0 - p)
        return input * lib.tensor(keep.astype(_np_dtype(lib, input.dtype)), device=input.device)

    if lib.__name__ == "torch":
        # PyTorch's attention drops attention weights inside its C++ kernel;
        # the same math in Python lets those masks come from the shared stream.
        def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                         scale=None, enable_gqa=False):
            length, source = query.size(-2), key.size(-2)
            s = 1.0 / np.sqrt(query.size(-1)) if scale is None else scale
            scores = query @ key.transpose(-2, -1) * s
            if is_causal:
                keep = lib.ones(length, source, dtype=lib.bool).tril()
                scores = scores.masked_fill(~keep, float("-inf"))
            if attn_mask is not None:
                if attn_mask.dtype == lib.bool:
                    scores = scores.masked_fill(~attn_mask, float("-inf"))
                else:
                    scores = scores + attn_mask
            weights = lib.softmax(scores, dim=-1)
            if dropout_p > 0.0:
                weights = functional.dropout(weights, dropout_p, True)
            return weights @ value

        functional.scaled_dot_product_attention = scaled_dot_product_attention

    def feature_dropout(batched_ndim):
        # Whole channels; PyTorch's dropout2d treats 2-D input elementwise and 3-D input as [N, C, L].
        def fn(input, p=0.5, training=True, inplace=False):  # noqa: A002
            if not training or p == 0.0:
                return input
            nd = input.ndim
            if batched_ndim == 4 and nd == 2:
                shape = tuple(input.shape)
            else:
                lead = 2 if nd == batched_ndim or (batched_ndim == 4 and nd == 3) else 1
                shape = tuple(input.shape[:lead]) + (1,) * (nd - lead)
            keep = (rng.random(shape) >= p).astype(np.float64) / (1.0 - p)
            return input * lib.tensor(keep.astype(_np_dtype(lib, input.dtype)), device=input.device)

        return fn

    functional.dropout1d = feature_dropout(3)
    functional.dropout2d = feature_dropout(4)
    functional.dropout3d = feature_dropout(5)

    for name, fn in [("randn", randn), ("rand", rand), ("randn_like", randn_like), ("rand_like", rand_like),
                     ("randint", randint), ("randperm", randperm), ("multinomial", multinomial)]:
        setattr(lib, name, fn)
    lib.Tensor.uniform_ = uniform_
    lib.Tensor.normal_ = normal_
    lib.nn.init.orthogonal_ = orthogonal_
    functional.dropout = dropout
    if lib.__name__ == "lucid":  # Lucid's initialisers draw through two helpers
        init = sys.modules["lucid.nn.init"]
        init._uniform = lambda t, a, b: lib.tensor((a + (b - a) * rng.random(tuple(t.shape))).astype(
            _np_dtype(lib, t.dtype)), device=t.device)
        init._normal = lambda t, mean, std: lib.tensor((mean + std * rng.standard_normal(tuple(t.shape))).astype(
            _np_dtype(lib, t.dtype)), device=t.device)
    data = sys.modules[lib.__name__ + ".utils.data"]
    # random_split draws its permutation through the randperm its module imported
    sys.modules[lib.__name__ + ".utils.data.dataset"].randperm = \
        lambda n, generator=None, **kw: lib.tensor(rng.permutation(int(n)))
    data.RandomSampler.__iter__ = lambda self: iter(rng.permutation(len(self.data_source)).tolist())


def main():
    lib_name, rest = sys.argv[1], sys.argv[2:]
    if lib_name == "lucid":
        sys.meta_path.insert(0, _TorchIsLucid())
    elif lib_name != "torch":
        raise SystemExit(f"unknown library {lib_name!r}")
    lib = importlib.import_module("torch")
    if lib_name == "torch":  # strict float32 on a GPU too: PyTorch's cuDNN convolutions default to TF32, Lucid's do not
        lib.backends.cudnn.allow_tf32 = False
    importlib.import_module("torch.nn.functional")
    importlib.import_module("torch.nn.init")
    importlib.import_module("torch.utils.data")
    runs, current = [], []
    for a in rest:
        if a == "--then":
            runs.append(current)
            current = []
        else:
            current.append(a)
    runs.append(current)
    failed = False
    for program, *args in runs:
        if os.environ.get("SHARED_RANDOM"):  # a fresh shared stream for each program
            _share_random(lib, int(os.environ["SHARED_RANDOM"]))
        sys.argv = [program] + args
        name = os.path.basename(program)
        print(f"##### begin {name}", flush=True)
        try:
            runpy.run_path(program, run_name="__main__")
            status = "ok"
        except BaseException:  # noqa: B902  (a program's SystemExit or error is reported, the next still runs)
            status = traceback.format_exc()
            failed = True
        print(f"##### end {name}: {status}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
