"""The ``nn`` family of the differential probe (tests/fuzz/semantics.py):
``torch.nn`` modules and ``torch.nn.functional`` calls built the way programs
use them, run with ``T = torch`` and with ``T = lucid``.

Every case runs after ``PRELUDE`` (below), which gives it seeded data shared
by both sides: ``data``/``ints`` make tensors from NumPy, ``init`` sets every
floating parameter and buffer of a module from NumPy by name (neither side's
random generator is used), and ``outcome`` runs backward through a seeded
weighted sum of a module's outputs and returns what the case compares: the
outputs, input and parameter gradients, buffers after the forward (running
statistics, ``num_batches_tracked``) and the state_dict's keys, order and
shapes. A case may set ``tolerance = (rtol, atol)`` for its floating values.

To run a printed case by hand: ``import torch as T`` (or ``lucid as T``),
``import numpy as np``, ``exec(PRELUDE)`` from this module, then the case.
"""
from __future__ import annotations

PRELUDE = '''
import zlib as _zlib


def _rng(seed):
    return np.random.default_rng(seed)


def _dname(dt):
    return str(dt).rsplit(".", 1)[-1]


def data(shape, seed, dtype="float64", lo=-2.0, hi=2.0, grad=False, contiguous=True):
    """A leaf tensor of uniform values from NumPy; contiguous=False gives the
    same values through a transposed (or strided, for rank 1) layout."""
    shape = tuple(int(s) for s in shape)
    a = _rng(seed).uniform(lo, hi, size=shape)
    if contiguous or len(shape) == 0:
        t = T.tensor(a, dtype=getattr(T, dtype))
    elif len(shape) == 1:
        t = T.tensor(np.repeat(a, 2), dtype=getattr(T, dtype))[::2]
    else:
        order = tuple(reversed(range(len(shape))))
        t = T.tensor(np.ascontiguousarray(a.transpose(order)), dtype=getattr(T, dtype)).permute(*order)
    t = t.detach()
    return t.requires_grad_() if grad else t


def ints(shape, seed, lo, hi):
    """int64 values in [lo, hi)."""
    return T.tensor(_rng(seed).integers(lo, hi, size=tuple(int(s) for s in shape)), dtype=T.int64)


def init(m, seed=0, scale=0.5):
    """Every floating parameter and buffer from NumPy, by name (variances
    positive), so both libraries start from the same numbers."""
    with T.no_grad():
        for name, p in list(m.named_parameters()) + list(m.named_buffers()):
            if p is None or not p.dtype.is_floating_point:
                continue
            r = _rng([seed, _zlib.crc32(name.encode())])
            if name.endswith("running_var"):
                v = r.uniform(0.5, 1.5, size=tuple(p.shape))
            else:
                v = r.uniform(-scale, scale, size=tuple(p.shape))
            p.copy_(T.tensor(v, dtype=p.dtype))
    return m


def _leaves(v):
    if isinstance(v, T.Tensor):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for x in v for t in _leaves(x)]
    return []


def backward(out, seed=0):
    """Backward through a seeded weighted sum of every differentiable output."""
    ts = [t for t in _leaves(out) if t.requires_grad and t.dtype.is_floating_point]
    if ts:
        loss = sum((t * data(t.shape, seed + 101 + i, _dname(t.dtype))).sum() for i, t in enumerate(ts))
        loss.backward()


def layout(m):
    return [(k, tuple(v.shape)) for k, v in m.state_dict().items()]


def outcome(m, inputs, out, seed=0):
    backward(out, seed)
    return dict(out=out,
                input_grads=[x.grad if isinstance(x, T.Tensor) else None for x in inputs],
                param_grads={n: p.grad for n, p in m.named_parameters()},
                buffers=dict(m.named_buffers()),
                layout=layout(m))
'''

F32_TOL = "tolerance = (2e-4, 2e-5)\n"
F64_TOL = "tolerance = (1e-7, 1e-9)\n"


class _Case:
    """Accumulates a case's lines; ``seed`` numbers each data() call."""

    def __init__(self, g, dtype=None):
        self.g = g
        self.r = g.r
        self.lines = []
        self.n = 0
        self.dtype = dtype or self.r.choice(["float64", "float64", "float32"])
        self.noncontiguous = True  # whether data() may give a transposed layout

    def seed(self):
        self.n += 1
        return self.r.randint(0, 10 ** 6)

    def data(self, shape, grad=True, lo=None, hi=None, dtype=None, contiguous=None):
        if contiguous is None:
            contiguous = self.r.random() > 0.2 or not self.noncontiguous
        extra = ""
        if lo is not None:
            extra += f", lo={lo}, hi={hi}"
        if grad:
            extra += ", grad=True"
        if not contiguous:
            extra += ", contiguous=False"
        return f"data({tuple(shape)}, {self.seed()}, {(dtype or self.dtype)!r}{extra})"

    def line(self, s):
        self.lines.append(s)

    def source(self):
        tol = F32_TOL if self.dtype == "float32" else F64_TOL
        return tol + "\n".join(self.lines)


def _kw(pairs):
    return ", ".join(f"{k}={v!r}" for k, v in pairs if v is not _SKIP)


_SKIP = object()


def _opt(r, p, value):
    """value with probability p, else _SKIP (the keyword left at its default)."""
    return value if r.random() < p else _SKIP


def _batch(r):
    """Batch size: usually 2, sometimes 1 or 0, or None for an unbatched input."""
    return r.choice([2, 2, 2, 1, 1, 0, None])


def _module_case(c, ctor, inputs, mode="train", call=None):
    """A module built from ctor, set from NumPy, run on inputs in mode."""
    c.line(f"m = {ctor}")
    c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()})")
    c.line(f"m.{mode}()")
    names = []
    for i, src in enumerate(inputs):
        c.line(f"x{i} = {src}")
        names.append(f"x{i}")
    c.line(f"y = {call or 'm(' + ', '.join(names) + ')'}")
    c.line(f"result = outcome(m, [{', '.join(names)}], y, {c.seed()})")
    return c.source()


# ---------------------------------------------------------------- linear

def _linear(g):
    c = _Case(g)
    r = c.r
    bias = r.random() < 0.7
    lead = r.choice([(2,), (3,), (), (2, 3), (0,), (1,)])
    if r.random() < 0.6:
        i, o = r.randint(0, 4), r.randint(1, 4)
        fin = i if r.random() > 0.08 else i + 1  # mismatched features
        if r.random() < 0.3:
            c.line(f"x = {c.data(lead + (fin,))}")
            c.line(f"w = {c.data((o, i))}")
            c.line(f"b = {c.data((o,)) if bias else None}")
            c.line("y = T.nn.functional.linear(x, w, b)")
            c.line(f"backward(y, {c.seed()})")
            c.line("result = (y, x.grad, w.grad, b.grad if b is not None else None)")
            return c.source()
        return _module_case(c, f"T.nn.Linear({i}, {o}, bias={bias})", [c.data(lead + (fin,))])
    i1, i2, o = r.randint(1, 3), r.randint(1, 3), r.randint(1, 3)
    lead2 = lead if r.random() > 0.1 else (lead + (1,))
    return _module_case(c, f"T.nn.Bilinear({i1}, {i2}, {o}, bias={bias})",
                        [c.data(lead + (i1,)), c.data(lead2 + (i2,))])


# ---------------------------------------------------------------- convolution

def _tup(r, nd, lo, hi):
    if r.random() < 0.5:
        return r.randint(lo, hi)
    return tuple(r.randint(lo, hi) for _ in range(nd))


def _per_dim(v, nd):
    return v if isinstance(v, tuple) else (v,) * nd


def _conv(g):
    c = _Case(g)
    r = c.r
    nd = r.choice([1, 1, 2, 2, 2, 3])
    transpose = r.random() < 0.3
    groups = r.choice([1, 1, 1, 2, 3])
    cin = groups * r.randint(1, 2)
    cout = groups * r.randint(1, 2)
    if r.random() < 0.04:
        cout += 1  # not divisible by groups
    k = _tup(r, nd, 1, 3)
    stride = _tup(r, nd, 1, 2)
    dilation = _tup(r, nd, 1, 2) if r.random() < 0.4 else 1
    bias = r.random() < 0.7
    kw = [("stride", stride), ("dilation", dilation), ("groups", groups), ("bias", bias)]
    if transpose:
        padding = _tup(r, nd, 0, 1)
        sp, dp = _per_dim(stride, nd), _per_dim(dilation, nd)
        outpad = tuple(r.randint(0, max(s, d) - 1) for s, d in zip(sp, dp)) if r.random() < 0.4 else 0
        if r.random() < 0.03:
            outpad = max(max(sp), max(dp))  # too large
        kw += [("padding", padding), ("output_padding", outpad)]
        mode = _opt(r, 0.05, r.choice(["reflect", "zeros"]))
        kw.append(("padding_mode", mode))
        ctor = f"T.nn.ConvTranspose{nd}d({cin}, {cout}, {k!r}, {_kw(kw)})"
    else:
        padding = r.choice([0, 1, _tup(r, nd, 0, 2), "same", "valid"])
        if padding == "same" and r.random() < 0.8:
            kw[0] = ("stride", 1)  # 'same' with stride > 1 is an error
        mode = r.choice(["zeros", "zeros", "reflect", "replicate", "circular"])
        if r.random() < 0.02:
            mode = "mirror"
        kw += [("padding", padding), ("padding_mode", mode)]
        ctor = f"T.nn.Conv{nd}d({cin}, {cout}, {k!r}, {_kw(kw)})"
    kp, dp = _per_dim(k, nd), _per_dim(dilation, nd)
    spatial = tuple(r.randint(max(1, (kk - 1) * d + 1 - (1 if r.random() < 0.05 else 0)), (kk - 1) * d + 3)
                    for kk, d in zip(kp, dp))
    if transpose:
        # Where an output size comes to 0, PyTorch's transposed convolutions
        # return an empty output for some shapes and raise for others; Lucid
        # always raises
        pp, sp = _per_dim(padding, nd), _per_dim(stride, nd)
        op = _per_dim(outpad, nd)
        spatial = tuple(i + (1 if (i - 1) * s - 2 * p + d * (kk - 1) + o + 1 == 0 else 0)
                        for i, s, p, d, kk, o in zip(spatial, sp, pp, dp, kp, op))
    n = _batch(r)
    if transpose and n == 0:
        # PyTorch returns an empty batch before checking output_padding and the output size
        sp, pp, op = _per_dim(stride, nd), _per_dim(padding, nd), _per_dim(outpad, nd)
        if any(o >= max(s, d) or (i - 1) * s - 2 * p + d * (kk - 1) + o + 1 <= 0
               for i, s, p, d, kk, o in zip(spatial, sp, pp, dp, kp, op)):
            n = 1
    cin_x = cin if r.random() > 0.04 else cin + 1
    shape = ((n,) if n is not None else ()) + (cin_x,) + spatial
    if r.random() < 0.03:
        shape = shape[1:] if n is not None else (1, 1) + shape  # wrong rank
    if r.random() < 0.25 and not transpose and padding not in ("same",) and mode == "zeros":
        # the functional form, with weights made here
        wshape = (cout, cin // groups) + kp
        c.line(f"x = {c.data(shape)}")
        c.line(f"w = {c.data(wshape, lo=-0.5, hi=0.5)}")
        c.line(f"b = {c.data((cout,)) if bias else None}")
        c.line(f"y = T.nn.functional.conv{nd}d(x, w, b, stride={kw[0][1]!r}, padding={padding!r}, "
               f"dilation={dilation!r}, groups={groups})")
        c.line(f"backward(y, {c.seed()})")
        c.line("result = (y, x.grad, w.grad, b.grad if b is not None else None)")
        return c.source()
    return _module_case(c, ctor, [c.data(shape)])


# ---------------------------------------------------------------- pooling

def _pool(g):
    c = _Case(g)
    r = c.r
    kind = r.choice(["max", "max", "avg", "avg", "adaptive_max", "adaptive_avg", "lp", "unpool"])
    nd = r.choice([1, 2, 2, 3])
    n = _batch(r)
    ch = r.randint(1, 3)
    spatial = tuple(r.randint(1, 6) for _ in range(nd))
    if kind in ("adaptive_max", "adaptive_avg"):
        out = tuple(r.choice([1, 2, 3, None]) for _ in range(nd)) if r.random() < 0.6 else r.randint(1, 4)
        if nd == 1 and isinstance(out, tuple):
            out = out[0] or 2
        name = "AdaptiveMaxPool" if kind == "adaptive_max" else "AdaptiveAvgPool"
        kws = ", return_indices=True" if kind == "adaptive_max" and r.random() < 0.4 else ""
        ctor = f"T.nn.{name}{nd}d({out!r}{kws})"
    else:
        k = _tup(r, nd, 1, 3)
        kp = _per_dim(k, nd)
        stride = _opt(r, 0.6, _tup(r, nd, 1, 3))
        padding = tuple(r.randint(0, kk // 2) for kk in kp) if r.random() < 0.5 else 0
        if r.random() < 0.04:
            padding = max(kp) // 2 + 1  # more than half the kernel
        ceil = _opt(r, 0.5, r.random() < 0.5)
        spatial = tuple(max(s, kk) for s, kk in zip(spatial, kp))
        if kind in ("max", "unpool"):
            dil = _opt(r, 0.3, _tup(r, nd, 1, 2))
            ri = r.random() < 0.3 or kind == "unpool"
            kw = [("stride", stride), ("padding", padding), ("dilation", dil), ("return_indices", ri),
                  ("ceil_mode", ceil)]
            if kind == "unpool":
                c.line(f"p = T.nn.MaxPool{nd}d({k!r}, {_kw([('stride', stride), ('padding', padding), ('return_indices', True)])})")
                ctor = f"T.nn.MaxUnpool{nd}d({k!r}, {_kw([('stride', stride), ('padding', padding)])})"
                shape = ((n,) if n is not None else ()) + (ch,) + spatial
                c.line(f"x = {c.data(shape, grad=False)}")
                c.line("v, i = p(x)")
                c.line("v = v.detach().requires_grad_()")
                size = "" if r.random() < 0.6 else ", output_size=x.shape"
                c.line(f"m = {ctor}")
                c.line(f"y = m(v, i{size})")
                c.line(f"result = outcome(m, [v], y, {c.seed()})")
                return c.source()
            ctor = f"T.nn.MaxPool{nd}d({k!r}, {_kw(kw)})"
        elif kind == "avg":
            kw = [("stride", stride), ("padding", padding), ("ceil_mode", ceil),
                  ("count_include_pad", _opt(r, 0.5, r.random() < 0.5))]
            if nd > 1:
                kw.append(("divisor_override", _opt(r, 0.3, r.randint(1, 3))))
            ctor = f"T.nn.AvgPool{nd}d({k!r}, {_kw(kw)})"
        else:
            p = r.choice([1, 2, 3, 1.5])
            if r.random() < 0.3:
                c.dtype = "float64"
            if nd == 1:
                # PyTorch's lp_pool1d multiplies by kernel_size itself: a tuple is its TypeError
                k, stride = kp[0], stride if stride is _SKIP else _per_dim(stride, 1)[0]
            ctor = f"T.nn.LPPool{nd}d({p}, {k!r}, {_kw([('stride', stride), ('ceil_mode', ceil)])})"
    shape = ((n,) if n is not None else ()) + (ch,) + spatial
    if kind == "lp":
        # LPPool's |x|^p has kinks at 0 (and a pow gradient of 0^p); keep the values away from it
        return _module_case(c, ctor, [c.data(shape, lo=0.2, hi=2.0)])
    if r.random() < 0.3:
        # the functional form
        fname = {"AdaptiveMaxPool": "adaptive_max_pool", "AdaptiveAvgPool": "adaptive_avg_pool",
                 "MaxPool": "max_pool", "AvgPool": "avg_pool"}
        for cls, fn in fname.items():
            if ctor.startswith(f"T.nn.{cls}"):
                args = ctor[len(f"T.nn.{cls}{nd}d("):-1]
                c.line(f"x = {c.data(shape)}")
                c.line(f"y = T.nn.functional.{fn}{nd}d(x, {args})")
                c.line(f"backward(y, {c.seed()})")
                c.line("result = (y, x.grad)")
                return c.source()
    return _module_case(c, ctor, [c.data(shape)])


# ---------------------------------------------------------------- normalization

def _norm(g):
    # Normalising one or two values in float32 leaves only rounding noise
    # (x - mean for one; a gradient that cancels to ~0 for two), which the
    # two libraries round differently: such cases run in float64.
    c = _Case(g)
    r = c.r
    kind = r.choice(["batch", "batch", "batch", "layer", "group", "instance", "rms", "lrn"])
    n = r.choice([2, 3, 1, 0, None])
    if kind == "batch":
        nd = r.choice([1, 1, 2, 3])
        ch = r.randint(1, 3)
        kw = [("momentum", _opt(r, 0.4, r.choice([None, 0.3, 0.0, 1.0]))), ("affine", _opt(r, 0.3, False)),
              ("track_running_stats", _opt(r, 0.3, False)), ("eps", _opt(r, 0.2, 1e-3))]
        ctor = f"T.nn.BatchNorm{nd}d({ch}, {_kw(kw)})"
        if nd == 1:
            shape = r.choice([(n or 2, ch), (n or 2, ch, r.randint(1, 3))])
        else:
            shape = (n if n is not None else 2, ch) + tuple(r.randint(1, 3) for _ in range(nd))
        if r.random() < 0.05:
            shape = shape[1:]  # wrong rank
        if len(shape) >= 2 and _numel(shape) // shape[1] <= 2:
            c.dtype = "float64"
        if shape and shape[0] == 1:
            # PyTorch's CPU batch norm backward is wrong for a batch of 1 whose
            # strides read as channels-last (e.g. (1, 1, 3, 3) for [1, 3, 1, 2])
            c.noncontiguous = False
        mode = r.choice(["train", "train", "eval"])
        if mode == "train" and r.random() < 0.5:
            # two steps then eval: the running statistics (and their count) feed the eval output
            c.line(f"m = {ctor}")
            c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()})")
            c.line(f"a = m({c.data(shape, grad=False)})")
            c.line(f"b = m({c.data(shape, grad=False)})")
            c.line("m.eval()")
            c.line(f"x = {c.data(shape)}")
            c.line("y = (a, b, m(x))")
            c.line(f"result = outcome(m, [x], y, {c.seed()})")
            return c.source()
        return _module_case(c, ctor, [c.data(shape)], mode=mode)
    if kind == "layer":
        last = tuple(r.randint(1, 3) for _ in range(r.randint(1, 2)))
        lead = () if n is None else (n,)
        shape = lead + (r.randint(1, 3),) + last if r.random() < 0.5 else lead + last
        ns = last if r.random() < 0.7 else last[-1]
        kw = [("elementwise_affine", _opt(r, 0.3, False)), ("bias", _opt(r, 0.3, False)), ("eps", _opt(r, 0.2, 1e-3))]
        if _numel(_per_dim(ns, 1)) <= 2:
            c.dtype = "float64"
        if r.random() < 0.3:
            c.line(f"x = {c.data(shape)}")
            c.line(f"w = {c.data(_per_dim(ns, 1))}")
            c.line(f"y = T.nn.functional.layer_norm(x, {_per_dim(ns, 1)!r}, w, None)")
            c.line(f"backward(y, {c.seed()})")
            c.line("result = (y, x.grad, w.grad)")
            return c.source()
        return _module_case(c, f"T.nn.LayerNorm({ns!r}, {_kw(kw)})", [c.data(shape)])
    if kind == "rms":
        last = tuple(r.randint(1, 3) for _ in range(r.randint(1, 2)))
        shape = ((n,) if n is not None else ()) + last
        ns = last if r.random() < 0.7 else last[-1]
        kw = [("eps", _opt(r, 0.5, r.choice([None, 1e-3]))), ("elementwise_affine", _opt(r, 0.3, False))]
        return _module_case(c, f"T.nn.RMSNorm({ns!r}, {_kw(kw)})", [c.data(shape)])
    if kind == "group":
        groups = r.randint(1, 3)
        ch = groups * r.randint(1, 2) + (1 if r.random() < 0.04 else 0)
        shape = (n if n is not None else 2, ch) + tuple(r.randint(1, 3) for _ in range(r.randint(0, 2)))
        kw = [("affine", _opt(r, 0.3, False)), ("eps", _opt(r, 0.2, 1e-3))]
        if ch // groups * _numel(shape[2:]) <= 2:
            c.dtype = "float64"
        return _module_case(c, f"T.nn.GroupNorm({groups}, {ch}, {_kw(kw)})", [c.data(shape)])
    if kind == "instance":
        nd = r.choice([1, 2, 3])
        ch = r.randint(1, 3)
        kw = [("affine", _opt(r, 0.4, True)), ("track_running_stats", _opt(r, 0.4, True)),
              ("momentum", _opt(r, 0.2, r.choice([None, 0.5])))]
        if n == 0 and ("affine", True) in kw:
            n = 1  # PyTorch's affine instance norm fails on an empty batch (an IndexError from its select)
        spatial = tuple(r.randint(2, 3) for _ in range(nd))
        if _numel(spatial) <= 2:
            c.dtype = "float64"
        shape = ((n,) if n is not None else ()) + (ch,) + spatial
        return _module_case(c, f"T.nn.InstanceNorm{nd}d({ch}, {_kw(kw)})", [c.data(shape)],
                            mode=r.choice(["train", "eval"]))
    size = r.randint(1, 4)
    kw = [("alpha", _opt(r, 0.5, 0.01)), ("beta", _opt(r, 0.5, 0.5)), ("k", _opt(r, 0.5, 2.0))]
    shape = (n if n is not None else 1, r.randint(1, 5)) + tuple(r.randint(1, 3) for _ in range(r.randint(0, 2)))
    return _module_case(c, f"T.nn.LocalResponseNorm({size}, {_kw(kw)})", [c.data(shape)])


# ---------------------------------------------------------------- activations and dropout

ACTIVATIONS = [
    ("ReLU", []), ("ReLU6", []), ("LeakyReLU", [("negative_slope", [0.1, 0.0, -0.5])]), ("ELU", [("alpha", [0.5, 2.0])]),
    ("SELU", []), ("CELU", [("alpha", [0.5, 2.0])]), ("GELU", [("approximate", ["none", "tanh"])]), ("SiLU", []),
    ("Mish", []), ("Softplus", [("beta", [0.5, 2.0, -1.0]), ("threshold", [1.0, 20.0])]), ("Softsign", []),
    ("Softshrink", [("lambd", [0.5, 1.0, 0.0])]), ("Hardshrink", [("lambd", [0.5, 1.0])]), ("Tanhshrink", []),
    ("Threshold", [("threshold", [0.5, -1.0]), ("value", [2.0, 0.0])]),
    ("Hardtanh", [("min_val", [-0.5, -2.0]), ("max_val", [0.5, 1.0])]), ("Hardsigmoid", []), ("Hardswish", []),
    ("LogSigmoid", []), ("Sigmoid", []), ("Tanh", []), ("PReLU", [("num_parameters", [1, 3]), ("init", [0.1, -0.3])]),
    ("RReLU", [("lower", [0.1]), ("upper", [0.3])]), ("GLU", [("dim", [-1, 0, 1])]), ("Softmax", [("dim", [-1, 0, 1])]),
    ("LogSoftmax", [("dim", [-1, 0, 1])]), ("Softmin", [("dim", [-1, 0, 1])]), ("Softmax2d", []), ("Identity", []),
]
# Values on the kinks of the activations above (their subgradients are conventions to match).
KINKS = [0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 6.0, 20.0, 0.25]


def _activation(g):
    c = _Case(g)
    r = c.r
    name, params = r.choice(ACTIVATIONS)
    kw = [(k, _opt(r, 0.5, r.choice(vs))) for k, vs in params]
    if name == "Threshold":
        kw = [(k, r.choice(vs)) for k, vs in params]
        ctor = f"T.nn.Threshold({kw[0][1]}, {kw[1][1]})"
    else:
        ctor = f"T.nn.{name}({_kw(kw)})"
    shape = r.choice([(2, 3), (3,), (), (2, 3, 2), (0, 3), (1, 3, 2, 2), (2, 4)])
    if name == "PReLU" and dict(kw).get("num_parameters") == 3 and len(shape) >= 2:
        shape = (shape[0], 3) + shape[2:]
    if name == "Softmax2d":
        shape = r.choice([(2, 3, 2, 2), (3, 2, 2), (2, 3)])
    if name == "GLU":
        shape = r.choice([(2, 4), (4, 2), (2, 2, 4), (3,), (2, 3)])
    if r.random() < 0.35:
        vals = [r.choice(KINKS) * r.choice([1, 1, 1]) for _ in range(max(1, _numel(shape)))]
        x = f"T.tensor(np.array({vals})[:{_numel(shape)}].reshape({shape}), dtype=T.{c.dtype}).requires_grad_()"
    else:
        x = c.data(shape, lo=-4, hi=4)
    inplace = name in ("ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "SiLU", "Mish", "Hardtanh",
                       "Hardsigmoid", "Hardswish", "Threshold") and r.random() < 0.2
    if name == "LeakyReLU" and ("negative_slope", -0.5) in kw:
        inplace = False  # PyTorch has no backward for an in-place leaky_relu with a negative slope
    if inplace:
        # inplace=True on a non-leaf: the result is the input tensor, written
        c.line(f"x = {x}")
        c.line("z = x * 1")
        c.line(f"m = T.nn.{name}({_kw(kw + [('inplace', True)])})" if name != "Threshold"
               else f"m = T.nn.Threshold({kw[0][1]}, {kw[1][1]}, inplace=True)")
        c.line("y = m(z)")
        c.line(f"backward(y, {c.seed()})")
        c.line("result = (y, y is z, x.grad)")
        return c.source()
    return _module_case(c, ctor, [x], mode="eval" if name == "RReLU" else r.choice(["train", "eval"]))


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _dropout(g):
    c = _Case(g)
    r = c.r
    name = r.choice(["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"])
    shape = {"Dropout1d": r.choice([(2, 3, 4), (3, 4)]), "Dropout2d": r.choice([(2, 3, 2, 2), (3, 2, 2)]),
             "Dropout3d": r.choice([(2, 3, 2, 2, 2), (3, 2, 2, 2)])}.get(name, r.choice([(2, 3), (4,), ()]))
    if name == "FeatureAlphaDropout":
        shape = (2, 3, 2, 2)
    p = r.choice([0.0, 0.5, 1.0, 0.2])
    if r.random() < 0.05:
        p = r.choice([-0.1, 1.5])  # invalid
    mode = "eval"
    if p in (0.0,) and r.random() < 0.5:
        mode = "train"  # no element dropped: deterministic
    if p == 1.0 and name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d") and r.random() < 0.5:
        mode = "train"  # every element dropped: deterministic
    if r.random() < 0.3:
        fn = {"Dropout": "dropout", "Dropout1d": "dropout1d", "Dropout2d": "dropout2d", "Dropout3d": "dropout3d",
              "AlphaDropout": "alpha_dropout", "FeatureAlphaDropout": "feature_alpha_dropout"}[name]
        c.line(f"x = {c.data(shape)}")
        c.line(f"y = T.nn.functional.{fn}(x, {p}, training={mode == 'train'})")
        c.line(f"backward(y, {c.seed()})")
        c.line("result = (y, x.grad)")
        return c.source()
    return _module_case(c, f"T.nn.{name}({p})", [c.data(shape)], mode=mode)


# ---------------------------------------------------------------- embeddings

def _embedding(g):
    c = _Case(g)
    r = c.r
    num, dim = r.randint(1, 6), r.randint(1, 4)
    idx_shape = r.choice([(3,), (2, 3), (), (0,), (2, 0), (4,)])
    bad = r.random() < 0.04
    if r.random() < 0.65:
        pad = _opt(r, 0.4, r.randint(-num, num - 1))
        kw = [("padding_idx", pad), ("max_norm", _opt(r, 0.3, r.choice([0.5, 1.0]))),
              ("norm_type", _opt(r, 0.2, r.choice([1.0, 3.0]))),
              ("scale_grad_by_freq", _opt(r, 0.3, True))]
        c.line(f"m = T.nn.Embedding({num}, {dim}, {_kw(kw)})")
        c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()}, scale=1.0)")
        c.line(f"i = ints({idx_shape}, {c.seed()}, 0, {num + (1 if bad else 0)})")
        c.line("y = m(i)")
        c.line(f"result = outcome(m, [], y, {c.seed()})")
        c.line("result['weight_after'] = m.weight.detach()")
        return c.source()
    mode = r.choice(["sum", "mean", "max"])
    kw = [("mode", mode), ("padding_idx", _opt(r, 0.3, r.randint(0, num - 1))),
          ("max_norm", _opt(r, 0.2, 1.0))]
    bags = r.randint(1, 3)
    if r.random() < 0.5:
        # 2-D input: fixed-length bags
        c.line(f"i = ints(({bags}, {r.randint(1, 3)}), {c.seed()}, 0, {num})")
        c.line("o = None")
    else:
        length = r.randint(0, 6)
        cuts = sorted(r.randint(0, length) for _ in range(bags - 1))
        last = r.random() < 0.3
        offs = [0] + cuts + ([length] if last else [])
        kw.append(("include_last_offset", last))
        c.line(f"i = ints(({length},), {c.seed()}, 0, {num})")
        c.line(f"o = T.tensor({offs})")
    psw = mode == "sum" and r.random() < 0.4
    c.line(f"m = T.nn.EmbeddingBag({num}, {dim}, {_kw(kw)})")
    c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()}, scale=1.0)")
    if psw:
        c.line(f"w = {c.data(('i.shape',), grad=True)}".replace("('i.shape',)", "tuple(i.shape)"))
        c.line("y = m(i, o, per_sample_weights=w)")
        c.line(f"result = outcome(m, [w], y, {c.seed()})")
    else:
        c.line("y = m(i, o)")
        c.line(f"result = outcome(m, [], y, {c.seed()})")
    return c.source()


# ---------------------------------------------------------------- recurrent

def _rnn(g):
    c = _Case(g)
    r = c.r
    cls = r.choice(["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
    isz, hsz = r.randint(1, 3), r.randint(1, 3)
    bias = _opt(r, 0.3, False)
    n = r.choice([2, 1, 3, None, 0])
    if cls.endswith("Cell"):
        kw = [("bias", bias)]
        if cls == "RNNCell":
            kw.append(("nonlinearity", _opt(r, 0.5, "relu")))
        xs = ((n,) if n is not None else ()) + (isz,)
        hs = ((n,) if n is not None else ()) + (hsz,)
        c.line(f"m = T.nn.{cls}({isz}, {hsz}, {_kw(kw)})")
        c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()})")
        c.line(f"x = {c.data(xs)}")
        inputs = ["x"]
        if r.random() < 0.5:
            c.line(f"h = {c.data(hs)}")
            inputs.append("h")
            if cls == "LSTMCell":
                c.line(f"cc = {c.data(hs)}")
                inputs.append("cc")
                c.line("y = m(x, (h, cc))")
            else:
                c.line("y = m(x, h)")
        else:
            c.line("y = m(x)")
        c.line(f"result = outcome(m, [{', '.join(inputs)}], y, {c.seed()})")
        return c.source()
    layers = r.randint(1, 2)
    bidir = r.random() < 0.4
    bf = r.random() < 0.4
    kw = [("num_layers", layers), ("bias", bias), ("batch_first", bf), ("bidirectional", bidir)]
    proj = 0
    if cls == "RNN":
        kw.append(("nonlinearity", _opt(r, 0.4, "relu")))
    if cls == "LSTM" and hsz > 1 and r.random() < 0.4:
        proj = r.randint(1, hsz - 1)
        kw.append(("proj_size", proj))
    seq = r.randint(1, 3)
    if n is None:
        xs = (seq, isz)
    else:
        xs = (n, seq, isz) if bf else (seq, n, isz)
    d = 2 if bidir else 1
    hout = proj or hsz
    lead = (d * layers,) + ((n,) if n is not None else ())
    c.line(f"m = T.nn.{cls}({isz}, {hsz}, {_kw(kw)})")
    c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()})")
    c.line(f"x = {c.data(xs)}")
    if n and r.random() < 0.3:
        # a packed batch of sequences of several lengths, padded back after the layer
        lengths = sorted((r.randint(1, seq) for _ in range(n)), reverse=r.random() < 0.7)
        enforce = lengths == sorted(lengths, reverse=True) and r.random() < 0.5
        c.line(f"pk = T.nn.utils.rnn.pack_padded_sequence(x, {lengths}, batch_first={bf}, "
               f"enforce_sorted={enforce})")
        c.line("out, h = m(pk)")
        c.line(f"y = (T.nn.utils.rnn.pad_packed_sequence(out, batch_first={bf}), h)")
        c.line(f"result = outcome(m, [x], y, {c.seed()})")
        return c.source()
    if r.random() < 0.5:
        if cls == "LSTM":
            c.line(f"h = {c.data(lead + (hout,))}")
            c.line(f"cc = {c.data(lead + (hsz,))}")
            c.line("y = m(x, (h, cc))")
            inputs = "x, h, cc"
        else:
            c.line(f"h = {c.data(lead + (hout,))}")
            c.line("y = m(x, h)")
            inputs = "x, h"
    else:
        c.line("y = m(x)")
        inputs = "x"
    c.line(f"result = outcome(m, [{inputs}], y, {c.seed()})")
    c.line("result['params'] = [(k, tuple(p.shape)) for k, p in m.named_parameters()]")
    return c.source()


# ---------------------------------------------------------------- attention and transformer layers

def _transformer(g):
    c = _Case(g)
    r = c.r
    kind = r.choice(["encoder", "decoder", "mha", "mha", "sdpa"])
    heads = r.randint(1, 2)
    e = heads * r.randint(1, 3)
    if e <= 2:
        c.dtype = "float64"  # float32 layer norms of one or two values: rounding noise (see _norm)
    s, t = r.randint(1, 3), r.randint(1, 3)
    n = r.choice([2, 1, None])
    bf = r.random() < 0.5

    def seq_shape(length, width=e):
        if n is None:
            return (length, width)
        return (n, length, width) if bf else (length, n, width)

    if kind == "sdpa":
        shape = (r.randint(1, 2), r.randint(1, 2))
        d = r.randint(1, 3)
        c.line(f"q = {c.data(shape + (t, d))}")
        c.line(f"k = {c.data(shape + (s, d))}")
        c.line(f"v = {c.data(shape + (s, r.randint(1, 3)))}")
        mask = r.choice(["None", "bool", "float", "causal"])
        extra = ""
        if mask == "bool":
            c.line(f"mask = ints(({t}, {s}), {c.seed()}, 0, 2).bool()")
            c.line("mask[:, 0] = True")
            extra = ", attn_mask=mask"
        elif mask == "float":
            c.line(f"mask = {c.data((t, s), grad=False)}")
            extra = ", attn_mask=mask"
        elif mask == "causal":
            extra = ", is_causal=True"
        if r.random() < 0.3:
            extra += f", scale={r.choice([0.5, 2.0])}"
        c.line(f"y = T.nn.functional.scaled_dot_product_attention(q, k, v{extra})")
        c.line(f"backward(y, {c.seed()})")
        c.line("result = (y, q.grad, k.grad, v.grad)")
        return c.source()
    if kind == "mha":
        kdim = _opt(r, 0.3, r.randint(1, 3))
        vdim = _opt(r, 0.3, r.randint(1, 3))
        kw = [("bias", _opt(r, 0.3, False)), ("add_bias_kv", _opt(r, 0.3, True)),
              ("add_zero_attn", _opt(r, 0.2, True)), ("kdim", kdim), ("vdim", vdim), ("batch_first", bf)]
        c.line(f"m = T.nn.MultiheadAttention({e}, {heads}, {_kw(kw)})")
        c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()})")
        c.line(f"m.{r.choice(['train', 'eval'])}()")
        self_attn = kdim is _SKIP and vdim is _SKIP and r.random() < 0.4
        c.line(f"q = {c.data(seq_shape(t))}")
        if self_attn:
            c.line("k = v = q")
        else:
            c.line(f"k = {c.data(seq_shape(s, e if kdim is _SKIP else kdim))}")
            c.line(f"v = {c.data(seq_shape(s, e if vdim is _SKIP else vdim))}")
        sk = t if self_attn else s
        call = []
        if n is not None and r.random() < 0.3:
            c.line(f"kpm = ints(({n}, {sk}), {c.seed()}, 0, 2).bool()")
            c.line("kpm[:, 0] = False")
            call.append("key_padding_mask=kpm")
        if r.random() < 0.3:
            c.line(f"am = T.nn.Transformer.generate_square_subsequent_mask({t}, dtype=T.{c.dtype})"
                   if self_attn else f"am = ints(({t}, {sk}), {c.seed()}, 0, 2).bool()")
            if not self_attn:
                c.line("am[:, 0] = False")
            call.append("attn_mask=am")
        call.append(f"need_weights={r.random() < 0.7}")
        call.append(f"average_attn_weights={r.random() < 0.7}")
        c.line(f"y = m(q, k, v, {', '.join(call)})")
        c.line(f"result = outcome(m, [q] if k is q else [q, k, v], y, {c.seed()})")
        return c.source()
    ff = r.randint(1, 6)
    kw = [("dim_feedforward", ff), ("dropout", 0.0), ("activation", _opt(r, 0.5, "gelu")),
          ("layer_norm_eps", _opt(r, 0.2, 1e-3)), ("batch_first", bf), ("norm_first", _opt(r, 0.4, True)),
          ("bias", _opt(r, 0.2, False))]
    mode = r.choice(["train", "eval"])
    if mode == "eval" and r.random() < 0.5:
        kw[1] = ("dropout", 0.3)
    cls = "TransformerEncoderLayer" if kind == "encoder" else "TransformerDecoderLayer"
    c.line(f"m = T.nn.{cls}({e}, {heads}, {_kw(kw)})")
    c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()})")
    c.line(f"m.{mode}()")
    c.line(f"x = {c.data(seq_shape(t))}")
    call = ["x"]
    inputs = ["x"]
    if kind == "decoder":
        c.line(f"mem = {c.data(seq_shape(s))}")
        call.append("mem")
        inputs.append("mem")
    if r.random() < 0.3:
        c.line(f"msk = T.nn.Transformer.generate_square_subsequent_mask({t}, dtype=T.{c.dtype})")
        call.append(("src_mask" if kind == "encoder" else "tgt_mask") + "=msk")
    if n is not None and r.random() < 0.3:
        c.line(f"kpm = ints(({n}, {t}), {c.seed()}, 0, 2).bool()")
        c.line("kpm[:, 0] = False")
        call.append(("src_key_padding_mask" if kind == "encoder" else "tgt_key_padding_mask") + "=kpm")
    c.line(f"y = m({', '.join(call)})")
    c.line(f"result = outcome(m, [{', '.join(inputs)}], y, {c.seed()})")
    return c.source()


# ---------------------------------------------------------------- losses

def _loss(g):
    c = _Case(g)
    r = c.r
    red = r.choice(["mean", "sum", "none"])
    n = r.choice([3, 2, 1, 0])
    ch = r.randint(2, 4)
    kind = r.choice(["regress", "regress", "class", "class", "class", "binary", "dist", "margin", "ctc", "prob"])
    lines = []
    if kind == "regress":
        name = r.choice(["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss", "GaussianNLLLoss",
                         "PoissonNLLLoss"])
        shape = r.choice([(n, ch), (n,), (), (2, 3, 2)])
        extra = {"SmoothL1Loss": [("beta", _opt(r, 0.5, r.choice([0.5, 2.0, 0.0])))],
                 "HuberLoss": [("delta", _opt(r, 0.5, r.choice([0.5, 2.0])))],
                 "GaussianNLLLoss": [("full", _opt(r, 0.5, True)), ("eps", _opt(r, 0.3, 0.1))],
                 "PoissonNLLLoss": [("log_input", _opt(r, 0.5, False)), ("full", _opt(r, 0.5, True)),
                                    ("eps", _opt(r, 0.3, 0.1))]}.get(name, [])
        lines.append(f"crit = T.nn.{name}({_kw(extra + [('reduction', red)])})")
        lo = "0.1" if name == "PoissonNLLLoss" else "-2"
        lines.append(f"a = {c.data(shape, lo=lo, hi=3)}")
        if name == "SoftMarginLoss":
            lines.append(f"b = ints({shape}, {c.seed()}, 0, 2).to(T.{c.dtype}) * 2 - 1")
        elif name == "PoissonNLLLoss":
            lines.append(f"b = ints({shape}, {c.seed()}, 0, 5).to(T.{c.dtype})")
        else:
            lines.append(f"b = {c.data(shape)}")
        if name == "GaussianNLLLoss":
            vshape = r.choice([shape, shape[:-1] + (1,) if shape else (), shape[:-1] if shape else ()])
            lines.append(f"var = {c.data(vshape, lo=0.2, hi=2)}")
            lines.append("y = crit(a, b, var)")
            lines.append(f"backward(y, {c.seed()})")
            lines.append("result = (y, a.grad, b.grad, var.grad)")
        else:
            lines.append("y = crit(a, b)")
            lines.append(f"backward(y, {c.seed()})")
            lines.append("result = (y, a.grad, b.grad)")
    elif kind == "class":
        name = r.choice(["CrossEntropyLoss", "CrossEntropyLoss", "NLLLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
                         "MultiLabelSoftMarginLoss"])
        spatial = r.choice([(), (), (2,), (2, 2)]) if name in ("CrossEntropyLoss", "NLLLoss") else ()
        unbatched = name in ("CrossEntropyLoss", "NLLLoss", "MultiMarginLoss") and r.random() < 0.15
        xshape = (ch,) if unbatched else (n, ch) + spatial
        tshape = () if unbatched else (n,) + spatial
        kw = [("reduction", red)]
        if name in ("CrossEntropyLoss", "NLLLoss", "MultiMarginLoss", "MultiLabelSoftMarginLoss") and r.random() < 0.4:
            lines.append(f"wt = {c.data((ch,), grad=False, lo=0.1, hi=2)}")
            kw.insert(0, ("weight", "WT"))
        ign = None
        if name in ("CrossEntropyLoss", "NLLLoss") and r.random() < 0.4:
            ign = r.choice([0, 1, -100, -1])
            kw.append(("ignore_index", ign))
        if name == "CrossEntropyLoss" and r.random() < 0.4:
            kw.append(("label_smoothing", r.choice([0.1, 0.5, 1.0])))
        if name == "MultiMarginLoss":
            kw += [("p", _opt(r, 0.4, 2)), ("margin", _opt(r, 0.4, 0.5))]
        if name in ("MultiMarginLoss", "MultiLabelMarginLoss") and n == 0 and red != "none" and not unbatched:
            # PyTorch's kernels reduce an empty batch to uninitialised memory (an arbitrary number)
            xshape, tshape = (1, ch), (1,)
        args = _kw(kw).replace("'WT'", "wt")
        lines.append(f"crit = T.nn.{name}({args})")
        x = c.data(xshape)
        if name == "NLLLoss":
            x = f"T.log_softmax({x}, {0 if unbatched else 1}).detach().requires_grad_()"
        lines.append(f"a = {x}")
        if name == "MultiLabelMarginLoss":
            lines.append(f"b = ints({xshape}, {c.seed()}, -1, {ch})")
        elif name == "MultiLabelSoftMarginLoss":
            lines.append(f"b = ints({xshape}, {c.seed()}, 0, 2).to(T.{c.dtype})")
        elif name == "CrossEntropyLoss" and r.random() < 0.25:
            # class probabilities as the target
            lines.append(f"b = T.softmax({c.data(xshape, grad=False)}, {0 if unbatched else 1})")
        else:
            hi = ch + (1 if r.random() < 0.04 else 0)
            lines.append(f"b = ints({tshape}, {c.seed()}, 0, {hi})")
            if ign is not None and ign >= 0 and r.random() < 0.3:
                lines.append(f"b = T.full_like(b, {ign})")  # every target ignored
        lines.append("y = crit(a, b)")
        lines.append(f"backward(y, {c.seed()})")
        lines.append("result = (y, a.grad)")
    elif kind == "binary":
        name = r.choice(["BCELoss", "BCEWithLogitsLoss", "HingeEmbeddingLoss"])
        shape = r.choice([(n, ch), (n,), (), (2, 2, 3)])
        kw = [("reduction", red)]
        if name != "HingeEmbeddingLoss" and r.random() < 0.4:
            lines.append(f"wt = {c.data(shape[-1:] if shape else (), grad=False, lo=0.1, hi=2)}")
            kw.insert(0, ("weight", "WT"))
        if name == "BCEWithLogitsLoss" and r.random() < 0.4:
            lines.append(f"pw = {c.data(shape[-1:] if shape else (), grad=False, lo=0.1, hi=2)}")
            kw.append(("pos_weight", "PW"))
        if name == "HingeEmbeddingLoss":
            kw.append(("margin", _opt(r, 0.5, 0.5)))
        args = _kw(kw).replace("'WT'", "wt").replace("'PW'", "pw")
        lines.append(f"crit = T.nn.{name}({args})")
        if name == "BCELoss":
            lines.append(f"a = {c.data(shape, lo=0.05, hi=0.95)}")
            lines.append(f"b = {c.data(shape, lo=0, hi=1)}")
        elif name == "BCEWithLogitsLoss":
            lines.append(f"a = {c.data(shape, lo=-4, hi=4)}")
            lines.append(f"b = {c.data(shape, lo=0, hi=1)}")
        else:
            lines.append(f"a = {c.data(shape)}")
            lines.append(f"b = ints({shape}, {c.seed()}, 0, 2).to(T.{c.dtype}) * 2 - 1")
        lines.append("y = crit(a, b)")
        lines.append(f"backward(y, {c.seed()})")
        lines.append("result = (y, a.grad, b.grad)")
    elif kind == "dist":
        name = r.choice(["CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss",
                         "TripletMarginWithDistanceLoss"])
        d = r.randint(1, 3)
        shape = (n, d) if r.random() < 0.85 else (d,)
        kw = [("reduction", red), ("margin", _opt(r, 0.5, r.choice([0.0, 0.5, 1.0])))]
        if name == "MarginRankingLoss":
            shape = shape[:1]
        if name == "TripletMarginLoss":
            kw += [("p", _opt(r, 0.4, r.choice([1.0, 3.0]))), ("swap", _opt(r, 0.4, True)),
                   ("eps", _opt(r, 0.2, 1e-3))]
        if name == "TripletMarginWithDistanceLoss":
            kw += [("swap", _opt(r, 0.4, True))]
        lines.append(f"crit = T.nn.{name}({_kw(kw)})")
        lines.append(f"a = {c.data(shape)}")
        lines.append(f"b = {c.data(shape)}")
        if name in ("CosineEmbeddingLoss", "MarginRankingLoss"):
            lines.append(f"t = ints({shape[:1] if len(shape) > 1 or name == 'MarginRankingLoss' else ()}, "
                         f"{c.seed()}, 0, 2).to(T.{c.dtype}) * 2 - 1")
            lines.append("y = crit(a, b, t)")
            lines.append(f"backward(y, {c.seed()})")
            lines.append("result = (y, a.grad, b.grad)")
        else:
            lines.append(f"p = {c.data(shape)}")
            lines.append("y = crit(a, b, p)")
            lines.append(f"backward(y, {c.seed()})")
            lines.append("result = (y, a.grad, b.grad, p.grad)")
    elif kind == "prob":
        lines.append(f"crit = T.nn.KLDivLoss(reduction={r.choice([red, 'batchmean'])!r}, "
                     f"log_target={r.random() < 0.3})")
        shape = r.choice([(n, ch), (2, 2, 3), (ch,)])
        lines.append(f"a = T.log_softmax({c.data(shape, grad=False)}, -1).requires_grad_()")
        lines.append(f"b = T.softmax({c.data(shape, grad=False)}, -1)")
        lines.append("b = b.log() if crit.log_target else b")
        lines.append("y = crit(a, b)")
        lines.append(f"backward(y, {c.seed()})")
        lines.append("result = (y, a.grad)")
    else:
        c.dtype = r.choice(["float64", "float32"])
        tl, cl = r.randint(1, 6), r.randint(1, 5)
        nb = r.choice([2, 1])
        blank = r.choice([0, 0, ch - 1])
        kw = [("blank", blank), ("reduction", red), ("zero_infinity", _opt(r, 0.5, True))]
        lines.append(f"crit = T.nn.CTCLoss({_kw(kw)})")
        lines.append(f"a = T.log_softmax({c.data((tl, nb, ch), grad=False)}, 2).requires_grad_()")
        lines.append(f"tg = ints(({nb}, {cl}), {c.seed()}, 0, {ch - 1})")
        lines.append(f"tg = tg + (tg >= {blank}).long()")
        lines.append(f"il = ints(({nb},), {c.seed()}, 1, {tl + 1})")
        lines.append(f"tl = ints(({nb},), {c.seed()}, 0, {cl + 1})")
        lines.append("y = crit(a, tg, il, tl)")
        lines.append(f"backward(y, {c.seed()})")
        lines.append("result = (y, a.grad)")
    for ln in lines:
        c.line(ln)
    return c.source()


# ---------------------------------------------------------------- functional

def _functional(g):
    c = _Case(g)
    r = c.r
    F = "T.nn.functional"
    kind = r.choice(["interpolate", "interpolate", "pad", "pad", "unfold", "fold", "pixel_shuffle", "grid_sample",
                     "one_hot", "normalize", "cosine_similarity", "pairwise_distance", "pdist", "channel_shuffle",
                     "affine_grid", "softmax", "gumbel", "glu", "local", "embedding"])
    if kind == "interpolate":
        nd = r.choice([1, 2, 2, 3])
        # bicubic, 5-D area and antialias=True are documented as missing (docs/compatibility.md)
        mode = r.choice({1: ["nearest", "nearest-exact", "linear", "area"],
                         2: ["nearest", "nearest-exact", "bilinear", "area"],
                         3: ["nearest", "nearest-exact", "trilinear"]}[nd])
        if r.random() < 0.04:
            mode = "bilinear" if nd != 2 else "trilinear"  # wrong rank for the mode
        shape = (r.choice([1, 2]), r.randint(1, 2)) + tuple(r.randint(1, 4) for _ in range(nd))
        kw = []
        if r.random() < 0.5:
            kw.append(("size", _tup(r, nd, 1, 6) if nd > 1 else r.randint(1, 6)))
        else:
            sf = r.choice([0.5, 2, 1.5, 3, 0.7, 2.5]) if r.random() < 0.6 else \
                tuple(r.choice([0.5, 2.0, 1.5, 1.0]) for _ in range(nd))
            kw.append(("scale_factor", sf))
            kw.append(("recompute_scale_factor", _opt(r, 0.4, r.random() < 0.5)))
        if mode in ("linear", "bilinear", "bicubic", "trilinear"):
            kw.append(("align_corners", _opt(r, 0.7, r.random() < 0.5)))
        if r.random() < 0.05:
            kw.append(("antialias", True))  # only where PyTorch rejects it (a mode or rank it lacks)
            if mode == "bilinear" and nd == 2:
                mode = "trilinear"
        kw.append(("mode", mode))
        c.line(f"x = {c.data(shape)}")
        c.line(f"y = {F}.interpolate(x, {_kw(kw)})")
    elif kind == "pad":
        mode = r.choice(["constant", "constant", "reflect", "replicate", "circular"])
        rank = r.randint(1, 5)
        shape = tuple(r.randint(1, 4) for _ in range(rank))
        npairs = r.randint(1, min(3, rank))
        if mode != "constant":
            npairs = r.randint(1, min(3, max(1, rank - 1)))
        pads = tuple(r.randint(-1 if mode == "constant" else 0, 3) for _ in range(2 * npairs))
        kw = f", value={r.choice([0.0, 1.5, -2.0])}" if mode == "constant" and r.random() < 0.5 else ""
        c.line(f"x = {c.data(shape)}")
        c.line(f"y = {F}.pad(x, {pads}, mode={mode!r}{kw})")
    elif kind in ("unfold", "fold"):
        k = _tup(r, 2, 1, 3)
        kw = [("dilation", _opt(r, 0.3, _tup(r, 2, 1, 2))), ("padding", _opt(r, 0.4, _tup(r, 2, 0, 1))),
              ("stride", _opt(r, 0.4, _tup(r, 2, 1, 2)))]
        args = _kw([("kernel_size", k)] + kw)
        shape = (r.choice([1, 2, None]), r.randint(1, 2), r.randint(3, 5), r.randint(3, 5))
        shape = shape[1:] if shape[0] is None else shape
        c.line(f"x = {c.data(shape)}")
        if kind == "unfold":
            c.line(f"y = {F}.unfold(x, {args})")
        else:
            c.line(f"u = {F}.unfold(x, {args}).detach().requires_grad_()")
            c.line(f"y = {F}.fold(u, output_size={shape[-2:]}, {args})")
            c.line("x = u")
    elif kind == "pixel_shuffle":
        f = r.randint(1, 3)
        if r.random() < 0.5:
            shape = (r.choice([1, 2]), f * f * r.randint(1, 2) + (1 if r.random() < 0.04 else 0), 2, r.randint(1, 3))
            c.line(f"x = {c.data(shape)}")
            c.line(f"y = {F}.pixel_shuffle(x, {f})")
        else:
            shape = (r.choice([1, 2]), r.randint(1, 2), 2 * f, f * r.randint(1, 2))
            c.line(f"x = {c.data(shape)}")
            c.line(f"y = {F}.pixel_unshuffle(x, {f})")
    elif kind == "grid_sample":
        nd = r.choice([2, 2, 3])
        mode = r.choice(["bilinear", "nearest"] + (["bicubic"] if nd == 2 else []))
        pm = r.choice(["zeros", "border", "reflection"])
        ac = r.random() < 0.5
        n = r.choice([1, 2])
        sp = tuple(r.randint(1, 4) for _ in range(nd))
        out = tuple(r.randint(1, 3) for _ in range(nd))
        c.line(f"x = {c.data((n, r.randint(1, 2)) + sp)}")
        # sample points off the grid's nodes, where nearest and the kinks of bilinear are not ties
        c.line(f"grid = {c.data((n,) + out + (nd,), lo=-1.3, hi=1.3)}")
        c.line(f"y = {F}.grid_sample(x, grid, mode={mode!r}, padding_mode={pm!r}, align_corners={ac})")
        c.line(f"backward(y, {c.seed()})")
        c.line("result = (y, x.grad, grid.grad)")
        return c.source()
    elif kind == "affine_grid":
        nd = r.choice([2, 3])
        n = r.choice([1, 2])
        size = (n, r.randint(1, 2)) + tuple(r.randint(1, 4) for _ in range(nd))
        c.line(f"x = {c.data((n, nd, nd + 1))}")
        c.line(f"y = {F}.affine_grid(x, {list(size)}, align_corners={r.random() < 0.5})")
    elif kind == "one_hot":
        nc = r.choice([-1, 3, 5])
        shape = r.choice([(3,), (2, 2), (), (0,)])
        c.line(f"i = ints({shape}, {c.seed()}, 0, 3)")
        c.line(f"result = {F}.one_hot(i, {nc})" if r.random() < 0.9 else f"result = {F}.one_hot(-i - 1, {nc})")
        return c.source()
    elif kind == "normalize":
        shape = r.choice([(2, 3), (3,), (2, 3, 2), (0, 3)])
        kw = [("p", _opt(r, 0.5, r.choice([1.0, 3.0, float("inf")]))), ("dim", _opt(r, 0.5, r.choice([0, -1]))),
              ("eps", _opt(r, 0.3, 0.5))]
        c.line(f"x = {c.data(shape)}")
        if r.random() < 0.2:
            c.line("x = (x * 0).detach().requires_grad_()")  # the eps floor
        c.line(f"y = {F}.normalize(x, {_kw(kw)})")
    elif kind in ("cosine_similarity", "pairwise_distance"):
        sa = r.choice([(2, 3), (3,), (2, 1, 3), (1, 3)])
        sb = r.choice([sa, sa[-1:], (1,) + sa[1:]])
        c.line(f"a = {c.data(sa)}")
        c.line(f"b = {c.data(sb)}")
        if r.random() < 0.15:
            c.line("b = a.detach().clone().requires_grad_()")
        if kind == "cosine_similarity":
            kw = [("dim", _opt(r, 0.5, r.choice([0, -1]))), ("eps", _opt(r, 0.3, 0.5))]
        else:
            kw = [("p", _opt(r, 0.5, r.choice([1.0, 3.0, 0.0, float("inf")]))), ("eps", _opt(r, 0.3, 0.0)),
                  ("keepdim", _opt(r, 0.4, True))]
        c.line(f"y = {F}.{kind}(a, b, {_kw(kw)})")
        c.line(f"backward(y, {c.seed()})")
        if dict(kw).get("p") == 0.0:
            # PyTorch's p=0 norm has an undefined gradient (.grad stays None);
            # Lucid's is a materialised 0
            c.line("result = (y, a.grad is None or not a.grad.any(), b.grad is None or not b.grad.any())")
        else:
            c.line("result = (y, a.grad, b.grad)")
        return c.source()
    elif kind == "pdist":
        c.line(f"x = {c.data((r.randint(1, 4), r.randint(1, 3)))}")
        c.line(f"y = {F}.pdist(x, p={r.choice([2.0, 1.0, 3.0])})")
    elif kind == "channel_shuffle":
        gs = r.randint(1, 3)
        c.line(f"x = {c.data((2, gs * r.randint(1, 2), 2))}")
        c.line(f"y = {F}.channel_shuffle(x, {gs})")
    elif kind == "softmax":
        fn = r.choice(["softmax", "log_softmax", "softmin"])
        shape = r.choice([(2, 3), (3,), (), (0, 2)])
        dt = f", dtype=T.float64" if r.random() < 0.2 else ""
        c.line(f"x = {c.data(shape)}")
        c.line(f"y = {F}.{fn}(x, dim={r.choice([0, -1])}{dt})")
    elif kind == "glu":
        c.line(f"x = {c.data(r.choice([(2, 4), (4,), (3,)]))}")
        c.line(f"y = {F}.glu(x, {r.choice([0, -1])})")
    elif kind == "local":
        c.line(f"x = {c.data((2, r.randint(1, 5), 3))}")
        c.line(f"y = {F}.local_response_norm(x, {r.randint(1, 4)})")
    elif kind == "embedding":
        num = r.randint(2, 5)
        c.line(f"w = {c.data((num, 3))}")
        c.line(f"i = ints((2, 3), {c.seed()}, 0, {num})")
        pad = f", padding_idx={r.randint(0, num - 1)}" if r.random() < 0.5 else ""
        c.line(f"y = {F}.embedding(i, w{pad})")
        c.line(f"backward(y, {c.seed()})")
        c.line("result = (y, w.grad)")
        return c.source()
    else:  # gumbel in a deterministic corner: no noise is drawn for an empty input
        c.line(f"x = {c.data((0, 3))}")
        c.line(f"y = {F}.gumbel_softmax(x, hard={r.random() < 0.5})")
    c.line(f"backward(y, {c.seed()})")
    c.line("result = (y, x.grad)")
    return c.source()


# ---------------------------------------------------------------- containers and structure

def _structure(g):
    """state_dict keys, order and shapes, parameter names, train/eval flags of composed models."""
    r = g.r
    parts = []
    for _ in range(r.randint(1, 4)):
        parts.append(r.choice([
            # (a dropout that drops in training mode draws from each library's own generator)
            "T.nn.Linear(3, 3)", "T.nn.BatchNorm1d(3)", "T.nn.LayerNorm(3)", "T.nn.ReLU()", "T.nn.Dropout(0.0)",
            "T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Tanh())", "T.nn.PReLU(3)", "T.nn.Identity()",
            "T.nn.BatchNorm1d(3, affine=False)", "T.nn.BatchNorm1d(3, track_running_stats=False)",
            "T.nn.GroupNorm(1, 3)", "T.nn.RMSNorm(3)", "T.nn.Linear(3, 3, bias=False)",
        ]))
    c = _Case(g, dtype="float64")
    c.line(f"m = T.nn.Sequential({', '.join(parts)})")
    c.line(f"m = init(m.double(), {c.seed()})")
    c.line(f"x = {c.data((4, 3))}")
    c.line("y = m(x)")
    c.line(f"result = outcome(m, [x], y, {c.seed()})")
    c.line("result['names'] = [n for n, _ in m.named_parameters()]")
    c.line("result['modules'] = [(n, type(s).__name__) for n, s in m.named_modules()]")
    c.line("m.eval()")
    c.line("result['eval'] = m(x)")
    return c.source()


def _misc(g):
    """Padding, reshaping, upsampling and sliding-window layers; load_state_dict."""
    c = _Case(g)
    r = c.r
    kind = r.choice(["pad", "pad", "shape", "upsample", "fold", "load", "adaptive_softmax", "distance"])
    if kind == "pad":
        name = r.choice(["ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad"])
        nd = r.choice([1, 2, 3])
        pad = r.randint(0, 2) if r.random() < 0.4 else tuple(r.randint(0, 2) for _ in range(2 * nd))
        args = f"{pad!r}, {r.choice([1.5, -2.0])}" if name == "ConstantPad" else f"{pad!r}"
        shape = ((r.choice([1, 2]),) if r.random() < 0.7 else ()) + (r.randint(1, 2),) + \
            tuple(r.randint(2, 4) for _ in range(nd))
        return _module_case(c, f"T.nn.{name}{nd}d({args})", [c.data(shape)])
    if kind == "shape":
        ctor = r.choice(["T.nn.Flatten()", "T.nn.Flatten(0, -1)", "T.nn.Flatten(-2)", "T.nn.Unflatten(1, (2, 3))",
                         "T.nn.Unflatten(-1, (3, -1))", "T.nn.ChannelShuffle(2)", "T.nn.PixelShuffle(2)",
                         "T.nn.PixelUnshuffle(2)", "T.nn.Identity(3, k=1)"])
        shape = r.choice([(2, 6, 2, 2), (1, 6, 4, 2), (2, 6), (0, 6, 2, 2)])
        if "Unshuffle" in ctor and shape[0] == 0:
            shape = (1,) + shape[1:]  # PyTorch's pixel_unshuffle of an empty batch checks the wrong divisibility
        return _module_case(c, ctor, [c.data(shape)])
    if kind == "upsample":
        mode = r.choice(["nearest", "bilinear", "nearest-exact"])
        kw = [("size", _opt(r, 0.4, (3, 5)))]
        if kw[0][1] is _SKIP:
            kw.append(("scale_factor", r.choice([2, 1.5, (2.0, 1.0)])))
        if mode == "bilinear":
            kw.append(("align_corners", _opt(r, 0.6, r.random() < 0.5)))
        ctor = r.choice([f"T.nn.Upsample({_kw(kw + [('mode', mode)])})",
                         f"T.nn.UpsamplingNearest2d({_kw(kw[:2])})", f"T.nn.UpsamplingBilinear2d({_kw(kw[:2])})"])
        return _module_case(c, ctor, [c.data((r.choice([1, 2]), 2, 2, 3))])
    if kind == "fold":
        k, st = _tup(r, 2, 1, 2), _opt(r, 0.5, _tup(r, 2, 1, 2))
        kw = _kw([("stride", st), ("padding", _opt(r, 0.3, 1)), ("dilation", _opt(r, 0.3, 2))])
        c.line(f"u = T.nn.Unfold({k!r}, {kw})")
        c.line(f"x = {c.data((2, 2, 5, 4))}")
        c.line("cols = u(x)")
        c.line(f"m = T.nn.Fold((5, 4), {k!r}, {kw})")
        c.line("y = (cols, m(cols))")
        c.line(f"result = outcome(m, [x], y, {c.seed()})")
        return c.source()
    if kind == "load":
        # load_state_dict with missing, unexpected and misshapen keys, strict or not
        strict = r.random() < 0.5
        edit = r.choice(["none", "drop", "extra", "shape", "buffer"])
        c.line(f"m = init(T.nn.Sequential(T.nn.Linear(2, 3), T.nn.BatchNorm1d(3), T.nn.Linear(3, 1)), {c.seed()})")
        c.line("sd = {k: v.clone() + 1 for k, v in m.state_dict().items()}" if r.random() < 0.5 else
               "sd = m.state_dict()\nfor k in sd:\n    sd[k] = sd[k] + 1")  # a plain dict, or one keeping _metadata
        c.line({"none": "pass", "drop": "del sd['2.bias']", "extra": "sd['2.extra'] = T.zeros(1)",
                "shape": "sd['0.weight'] = T.zeros(2, 2)", "buffer": "del sd['1.num_batches_tracked']"}[edit])
        c.line(f"r = m.load_state_dict(sd, strict={strict})")
        c.line("result = (sorted(r.missing_keys), sorted(r.unexpected_keys), dict(m.state_dict()))")
        return c.source()
    if kind == "adaptive_softmax":
        cutoffs = r.choice([[2], [2, 4], [1, 3]])
        c.line(f"m = T.nn.AdaptiveLogSoftmaxWithLoss(3, 6, {cutoffs}, div_value={r.choice([2.0, 4.0])}, "
               f"head_bias={r.random() < 0.5})")
        c.line(f"m = init(m.to(T.{c.dtype}), {c.seed()})")
        n = r.choice([4, 1, 0])
        c.line(f"x = {c.data((n, 3))}")
        c.line(f"t = ints(({n},), {c.seed()}, 0, 6)")
        c.line("o = m(x, t)")
        c.line("y = (o.output, o.loss, m.log_prob(x), m.predict(x))")
        c.line(f"result = outcome(m, [x], y, {c.seed()})")
        return c.source()
    name = r.choice(["CosineSimilarity", "PairwiseDistance"])
    kw = "dim=-1, eps=0.1" if name == "CosineSimilarity" else r.choice(["p=1.0", "p=2.0, keepdim=True", "eps=0.0"])
    return _module_case(c, f"T.nn.{name}({kw})", [c.data((2, 3)), c.data(r.choice([(2, 3), (3,), (1, 3)]))])


# Constructors and calls that PyTorch refuses (or, near the edge, accepts):
# the exception kind must match. Left out, where PyTorch's outcome is an
# accident of its implementation: ConvTranspose1d(padding='same') (accepted
# until forward; Lucid refuses it at construction), BatchNorm1d(0) on an
# empty channel dim (an IndexError from its select), LSTM given a tensor as
# hx (an IndexError from unpacking it; Lucid's TypeError asks for the tuple),
# Unfold of a 1-D input (an IndexError from its dim arithmetic).
INVALID = [
    "T.nn.Conv2d(3, 4, 0)", "T.nn.Conv2d(3, 4, 3, stride=0)", "T.nn.Conv2d(3, 4, 3, padding=-1)",
    "T.nn.Conv2d(3, 4, 3, groups=2)", "T.nn.Conv2d(4, 3, 3, groups=2)", "T.nn.Conv2d(0, 4, 3)",
    "T.nn.Conv1d(2, 2, 3, padding='same', stride=2)", "T.nn.Conv1d(2, 2, 3, padding='full')",
    "T.nn.Conv2d(2, 2, 3, padding_mode='mirror')", "T.nn.ConvTranspose2d(2, 2, 3, padding_mode='reflect')",
    "T.nn.Conv2d(2, 2, 3, dilation=0)",
    "T.nn.Linear(-1, 2)", "T.nn.Linear(2, 3)(T.zeros(2, 3))", "T.nn.Linear(2, 3)(T.zeros(2, 2, dtype=T.int64))",
    "T.nn.Conv2d(3, 4, 3)(T.zeros(2, 2, 5, 5))", "T.nn.Conv2d(3, 4, 3)(T.zeros(2, 3, 2, 5))",
    "T.nn.Conv2d(3, 4, 3)(T.zeros(5, 5))", "T.nn.Conv2d(3, 4, 3)(T.zeros(1, 1, 3, 5, 5))",
    "T.nn.Conv1d(3, 4, 3)(T.zeros(2, 3, 5, dtype=T.float64))", "T.nn.Conv2d(3, 4, 3)(T.zeros(2, 3, 5, 5, dtype=T.int64))",
    "T.nn.Conv2d(2, 2, 3, padding=2, padding_mode='reflect')(T.zeros(1, 2, 2, 2))",
    "T.nn.Conv2d(2, 2, 3, padding=3, padding_mode='circular')(T.zeros(1, 2, 2, 2))",
    "T.nn.MaxPool2d(0)", "T.nn.MaxPool2d(2, padding=2)(T.zeros(1, 1, 4, 4))", "T.nn.MaxPool2d(3)(T.zeros(1, 1, 2, 2))",
    "T.nn.MaxPool1d(2)(T.zeros(2))", "T.nn.MaxPool2d(2, stride=0)(T.zeros(1, 1, 4, 4))",
    "T.nn.MaxPool2d(2, dilation=0)(T.zeros(1, 1, 4, 4))", "T.nn.AvgPool2d(2, padding=2)(T.zeros(1, 1, 4, 4))",
    "T.nn.AvgPool2d(2, divisor_override=0)(T.zeros(1, 1, 4, 4))", "T.nn.AvgPool1d(3)(T.zeros(1, 1, 2))",
    "T.nn.AdaptiveAvgPool2d((2, 0))(T.zeros(1, 1, 4, 4))", "T.nn.AdaptiveMaxPool1d(2)(T.zeros(1, 1, 0))",
    "T.nn.AdaptiveAvgPool2d(2)(T.zeros(1, 0, 4, 4))", "T.nn.AdaptiveAvgPool2d(2)(T.zeros(4, 4))",
    "T.nn.LPPool2d(2, 3)(T.zeros(1, 1, 2, 2))", "T.nn.MaxPool2d(2)(T.zeros(1, 1, 4, 4, dtype=T.int64))",
    "T.nn.BatchNorm1d(3)(T.zeros(2, 4))", "T.nn.BatchNorm1d(3)(T.zeros(3))", "T.nn.BatchNorm2d(3)(T.zeros(2, 3, 4))",
    "T.nn.BatchNorm1d(3)(T.zeros(1, 3))", "T.nn.BatchNorm1d(3).eval()(T.zeros(1, 3))",
    "T.nn.BatchNorm2d(3)(T.zeros(1, 3, 1, 1))",
    "T.nn.LayerNorm(3)(T.zeros(2, 4))", "T.nn.LayerNorm((2, 3))(T.zeros(3, 2))", "T.nn.LayerNorm(())",
    "T.nn.GroupNorm(2, 3)", "T.nn.GroupNorm(0, 3)", "T.nn.GroupNorm(1, 3)(T.zeros(2, 4))",
    "T.nn.GroupNorm(1, 3)(T.zeros(3))", "T.nn.InstanceNorm1d(3)(T.zeros(2, 3, 1))", "T.nn.InstanceNorm1d(3)(T.zeros(3))",
    "T.nn.InstanceNorm2d(3, affine=True)(T.zeros(1, 4, 2, 2))", "T.nn.InstanceNorm2d(3)(T.zeros(1, 4, 2, 2))",
    "T.nn.RMSNorm(3)(T.zeros(2, 4))", "T.nn.LocalResponseNorm(2)(T.zeros(3))", "T.nn.LocalResponseNorm(0)(T.zeros(1, 3, 2))",
    "T.nn.Embedding(3, 2)(T.tensor([3]))", "T.nn.Embedding(3, 2)(T.tensor([-1]))", "T.nn.Embedding(3, 2)(T.tensor([1.0]))",
    "T.nn.Embedding(3, 2, padding_idx=3)", "T.nn.Embedding(3, 2, padding_idx=-4)", "T.nn.Embedding(0, 2)(T.tensor([], dtype=T.int64))",
    "T.nn.EmbeddingBag(3, 2)(T.tensor([1, 2]))", "T.nn.EmbeddingBag(3, 2)(T.tensor([1, 2]), T.tensor([1]))",
    "T.nn.EmbeddingBag(3, 2, mode='prod')", "T.nn.EmbeddingBag(3, 2)(T.tensor([[1, 2]]), T.tensor([0]))",
    "T.nn.RNN(2, 3)(T.zeros(4, 2, 3))", "T.nn.RNN(2, 3)(T.zeros(4, 2, 2), T.zeros(1, 2, 4))", "T.nn.RNN(2, 3)(T.zeros(2))",
    "T.nn.RNN(2, 3, nonlinearity='gelu')", "T.nn.LSTM(2, 3, proj_size=3)", "T.nn.LSTM(2, 3, proj_size=-1)",
    "T.nn.GRU(2, 3, num_layers=0)", "T.nn.RNN(2, 3, dropout=1.5)", "T.nn.GRU(2, 3, proj_size=1)",
    "T.nn.LSTMCell(2, 3)(T.zeros(4, 3))",
    "T.nn.GRUCell(2, 3)(T.zeros(4, 2), T.zeros(3, 3))", "T.nn.RNNCell(2, 3)(T.zeros(2, 2, 2))",
    "T.nn.MultiheadAttention(5, 2)", "T.nn.MultiheadAttention(4, 2)(T.zeros(3, 2, 4), T.zeros(3, 2, 4), T.zeros(2, 2, 4))",
    "T.nn.MultiheadAttention(4, 2)(T.zeros(3, 2, 5), T.zeros(3, 2, 5), T.zeros(3, 2, 5))",
    "T.nn.TransformerEncoderLayer(5, 2)", "T.nn.TransformerEncoderLayer(4, 2, activation='tanh')",
    "T.nn.Dropout(1.5)", "T.nn.Dropout(-0.1)", "T.nn.Dropout2d(2.0)", "T.nn.AlphaDropout(-1)",
    "T.nn.PixelShuffle(2)(T.zeros(1, 3, 2, 2))", "T.nn.PixelShuffle(2)(T.zeros(3, 2))", "T.nn.PixelUnshuffle(2)(T.zeros(1, 1, 3, 4))",
    "T.nn.Unflatten(1, (2, 2))(T.zeros(2, 3))", "T.nn.Flatten(3)(T.zeros(2, 3))", "T.nn.Fold(3, 2)(T.zeros(1, 3, 4))",
    "T.nn.ZeroPad2d(-3)(T.zeros(1, 1, 2, 2))", "T.nn.ReflectionPad1d(3)(T.zeros(1, 1, 2))",
    "T.nn.Softmax(dim=2)(T.zeros(2, 3))", "T.nn.GLU()(T.zeros(2, 3))", "T.nn.PReLU(2)(T.zeros(2, 3))",
    "T.nn.Hardtanh(1.0, -1.0)", "T.nn.Softplus(beta=0)(T.zeros(2))", "T.nn.Threshold(0.5, 1.0)(T.zeros(2, dtype=T.bool))",
    "T.nn.functional.one_hot(T.tensor([3]), 3)", "T.nn.functional.one_hot(T.tensor([1.0]), 3)",
    "T.nn.functional.one_hot(T.tensor([-1]))", "T.nn.functional.one_hot(T.tensor([], dtype=T.int64))",
    "T.nn.functional.interpolate(T.zeros(1, 1, 2, 2), size=3, scale_factor=2)",
    "T.nn.functional.interpolate(T.zeros(1, 1, 2, 2))", "T.nn.functional.interpolate(T.zeros(2, 2), size=3)",
    "T.nn.functional.interpolate(T.zeros(1, 1, 2), size=3, mode='bilinear')",
    "T.nn.functional.interpolate(T.zeros(1, 1, 2), size=3, mode='nearest', align_corners=True)",
    "T.nn.functional.interpolate(T.zeros(1, 1, 2, 2), size=(3,))", "T.nn.functional.interpolate(T.zeros(1, 1, 2), size=0)",
    "T.nn.functional.pad(T.zeros(2, 3), (1,))", "T.nn.functional.pad(T.zeros(2, 3), (1, 1, 1, 1, 1, 1))",
    "T.nn.functional.pad(T.zeros(1, 2, 3), (1, 1), mode='reflect', value=1.0)",
    "T.nn.functional.pad(T.zeros(1, 2, 3), (1, 1), mode='wrap')", "T.nn.functional.pad(T.zeros(1, 2, 3), (-4, 0))",
    "T.nn.functional.grid_sample(T.zeros(1, 1, 2, 2), T.zeros(1, 2, 2, 3))",
    "T.nn.functional.grid_sample(T.zeros(1, 1, 2, 2), T.zeros(1, 2, 2, 2), mode='area')",
    "T.nn.functional.grid_sample(T.zeros(1, 1, 2, 2, 2), T.zeros(1, 2, 2, 2, 3), mode='bicubic')",
    "T.nn.functional.affine_grid(T.zeros(1, 2, 3), [1, 1, 2])", "T.nn.functional.affine_grid(T.zeros(2, 2, 3), [1, 1, 2, 2])",
    "T.nn.functional.unfold(T.zeros(1, 1, 2, 2), 3)", "T.nn.functional.fold(T.zeros(1, 4, 3), (2, 2), 2)",
    "T.nn.functional.normalize(T.zeros(2, 3), dim=2)", "T.nn.functional.cosine_similarity(T.zeros(2, 3), T.zeros(3, 3))",
    "T.nn.functional.pairwise_distance(T.zeros(2, 3), T.zeros(2, 4))", "T.nn.functional.pdist(T.zeros(3))",
    "T.nn.functional.embedding(T.tensor([1]), T.zeros(3))", "T.nn.functional.softmax(T.zeros(2, 3), 2)",
    "T.nn.functional.scaled_dot_product_attention(T.zeros(2, 3, 4), T.zeros(2, 5, 3), T.zeros(2, 5, 4))",
    "T.nn.functional.layer_norm(T.zeros(2, 3), (3,), T.zeros(2))",
    "T.nn.functional.batch_norm(T.zeros(2, 3), T.zeros(2), T.ones(2))",
    "T.nn.functional.batch_norm(T.zeros(2, 3), None, None, training=False)",
    "T.nn.functional.group_norm(T.zeros(2, 4), 3)", "T.nn.functional.conv2d(T.zeros(1, 2, 4, 4), T.zeros(3, 2, 2))",
    "T.nn.functional.conv2d(T.zeros(1, 2, 4, 4), T.zeros(3, 2, 2, 2), T.zeros(2))",
    "T.nn.functional.conv_transpose2d(T.zeros(1, 2, 4, 4), T.zeros(3, 2, 2, 2))",
    "T.nn.functional.linear(T.zeros(2, 3), T.zeros(4, 3), T.zeros(3))",
    "T.nn.functional.max_pool2d(T.zeros(1, 1, 4, 4), 2, return_indices=True, ceil_mode=True, padding=1)",
    "T.nn.functional.avg_pool2d(T.zeros(1, 1, 4, 4), 2, stride=(1,))",
    "T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 3]))",
    "T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 1, 2]))",
    "T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 1]), label_smoothing=1.5)",
    "T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 1]), weight=T.ones(2))",
    "T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 1]), reduction='avg')",
    "T.nn.functional.cross_entropy(T.zeros(2, 3), T.zeros(2, 3, dtype=T.int64))",
    "T.nn.functional.cross_entropy(T.zeros(3), T.tensor(5))", "T.nn.functional.cross_entropy(T.zeros(()), T.tensor(0))",
    "T.nn.functional.nll_loss(T.zeros(2, 3), T.tensor([0.0, 1.0]))", "T.nn.functional.nll_loss(T.zeros(2, 3, 4), T.tensor([0, 1]))",
    "T.nn.functional.mse_loss(T.zeros(2, 3), T.zeros(3, 3))", "T.nn.functional.l1_loss(T.zeros(2, 3), T.zeros(4))",
    "T.nn.functional.binary_cross_entropy(T.full((2,), 1.5), T.zeros(2))",
    "T.nn.functional.binary_cross_entropy(T.zeros(2), T.zeros(3))",
    "T.nn.functional.binary_cross_entropy_with_logits(T.zeros(2), T.zeros(3))",
    "T.nn.functional.binary_cross_entropy(T.zeros(2, 2), T.zeros(2, 2), weight=T.ones(3))",
    "T.nn.functional.kl_div(T.zeros(2, 3), T.zeros(2, 4))", "T.nn.functional.kl_div(T.zeros(2, 3), T.zeros(2, 3), reduction='bad')",
    "T.nn.functional.poisson_nll_loss(T.zeros(2), T.zeros(3))", "T.nn.functional.gaussian_nll_loss(T.zeros(2, 3), T.zeros(2, 3), -T.ones(2, 3))",
    "T.nn.functional.gaussian_nll_loss(T.zeros(2, 3), T.zeros(2, 3), T.ones(2, 2))",
    "T.nn.functional.huber_loss(T.zeros(2), T.zeros(2), delta=0.0)", "T.nn.functional.smooth_l1_loss(T.zeros(2), T.zeros(2), beta=-1.0)",
    "T.nn.functional.margin_ranking_loss(T.zeros(2), T.zeros(2), T.zeros(3))",
    "T.nn.functional.hinge_embedding_loss(T.zeros(2), T.zeros(3))",
    "T.nn.functional.cosine_embedding_loss(T.zeros(2, 3), T.zeros(2, 3), T.zeros(3))",
    "T.nn.functional.multi_margin_loss(T.zeros(2, 3), T.tensor([0, 3]))", "T.nn.functional.multi_margin_loss(T.zeros(2, 3), T.tensor([0, 1]), p=3)",
    "T.nn.functional.multilabel_soft_margin_loss(T.zeros(2, 3), T.zeros(2, 4))",
    "T.nn.functional.soft_margin_loss(T.zeros(2, 3), T.zeros(2, 4))",
    "T.nn.functional.ctc_loss(T.zeros(3, 1, 4), T.tensor([[1, 2]]), T.tensor([3]), T.tensor([2]), blank=4)",
    "T.nn.functional.ctc_loss(T.zeros(3, 1, 4), T.tensor([[1, 2]]), T.tensor([4]), T.tensor([2]))",
    "T.nn.functional.embedding_bag(T.tensor([1, 2]), T.zeros(3, 2), T.tensor([0]), mode='max', per_sample_weights=T.ones(2))",
    "T.nn.functional.dropout(T.zeros(2), p=1.5)", "T.nn.functional.gelu(T.zeros(2), approximate='fast')",
    "T.nn.functional.softplus(T.zeros(2), beta=0)", "T.nn.functional.hardtanh(T.zeros(2), 1.0, -1.0)",
    "T.nn.functional.rrelu(T.zeros(2), 0.5, 0.1)", "T.nn.functional.glu(T.zeros(()))",
    "T.nn.functional.relu(T.zeros(2, dtype=T.bool))", "T.nn.functional.silu(T.zeros(2, dtype=T.int64))",
    "T.nn.functional.softmax(T.zeros(2, dtype=T.int64), 0)", "T.nn.functional.log_softmax(T.zeros(2, dtype=T.int64), 0)",
    "T.nn.functional.sigmoid(T.zeros(2, dtype=T.int64))", "T.nn.functional.tanh(T.zeros(2, dtype=T.int64))",
    "T.nn.functional.elu(T.zeros(2, dtype=T.int64))", "T.nn.functional.leaky_relu(T.zeros(2, dtype=T.int64))",
    "T.nn.functional.gelu(T.zeros(2, dtype=T.int64))", "T.nn.functional.hardswish(T.zeros(2, dtype=T.int64))",
    "T.nn.functional.logsigmoid(T.zeros(2, dtype=T.int64))", "T.nn.functional.softsign(T.zeros(2, dtype=T.int64))",
    "T.nn.functional.mish(T.zeros(2, dtype=T.int64))", "T.nn.functional.hardsigmoid(T.zeros(2, dtype=T.int64))",
    "T.nn.functional.normalize(T.zeros(2, dtype=T.int64), dim=0)", "T.nn.functional.layer_norm(T.zeros(2, 3, dtype=T.int64), (3,))",
    "T.nn.functional.mse_loss(T.zeros(2, dtype=T.int64), T.zeros(2, dtype=T.int64))",
    "T.nn.functional.l1_loss(T.zeros(2, dtype=T.int64), T.zeros(2, dtype=T.int64))",
    "T.nn.functional.avg_pool1d(T.zeros(1, 1, 4, dtype=T.int64), 2)",
    "T.nn.functional.adaptive_avg_pool1d(T.zeros(1, 1, 4, dtype=T.int64), 2)",
    "T.nn.functional.pad(T.zeros(1, 1, 4, dtype=T.int64), (1, 1), mode='reflect')",
    "T.nn.functional.interpolate(T.zeros(1, 1, 4, dtype=T.int64), size=3)",
]


def _invalid(g):
    """A configuration or call at or past what PyTorch accepts: compared by
    the result's picture, or the exception's kind."""
    return f"result = {g.r.choice(INVALID)}"


SUBFAMILIES = [
    (_linear, 2), (_conv, 5), (_pool, 4), (_norm, 4), (_activation, 3), (_dropout, 1), (_embedding, 2),
    (_rnn, 3), (_transformer, 3), (_loss, 6), (_functional, 5), (_structure, 1),
    (_misc, 3), (_invalid, 3),
]


def family_nn(g):
    fns = [f for f, w in SUBFAMILIES for _ in range(w)]
    return g.r.choice(fns)(g)
