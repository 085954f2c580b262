"""Family ``autograd`` of the differential semantics probe (tests.fuzz.semantics).

Random programs of a few ops on leaf tensors (float64 and float32, some
requiring grad), then a backward pass in one of its forms; each case returns
the gradients it reached (leaf ``.grad``, retained grads, what hooks saw,
``autograd.grad``'s results), the flags of every tensor it made
(``requires_grad``, ``is_leaf``, ``grad_fn is None``) and the kind of every
error a step raised. Besides the random chains, forms aim at one corner each:
backward twice with and without ``retain_graph``, higher derivatives,
``autograd.grad``'s options, grad-mode nesting, in-place writes that autograd
must refuse, ``.data`` and ``.grad`` assignment, custom ``Function``\\ s,
checkpointing, ``autograd.functional`` and anomaly mode.

A step that may raise runs through ``attempt``, which returns the exception,
so the case goes on past it; the probe compares an exception in a result as
a raised one (Lucid's must be an instance of PyTorch's class).

Not compared, on purpose: object identity (Lucid makes a new Python object
each time it hands out the same tensor, so ``x.grad is x.grad`` is False),
``grad_fn`` names, and error messages.
"""
from __future__ import annotations

# Defined in every case: a step's value, or the kind of error it raised.
PRELUDE = '''def attempt(f):
    try:
        return f()
    except Exception as e:
        return e
def flags(t):
    return (t.requires_grad, t.is_leaf, t.grad_fn is None)
def low(v):
    if isinstance(v, T.Tensor):
        return (v.dtype, v.detach().float())
    if isinstance(v, (tuple, list)):
        return tuple(low(x) for x in v)
    return v
'''

SHAPES = [(3,), (2, 2), (2, 3), ()]

# Ops of one operand, written in terms of ``a``; all keep the shape.
UNARY = ["T.tanh(a)", "T.sigmoid(a)", "T.sin(a)", "a.cos()", "T.exp(T.tanh(a))", "a.abs()", "T.relu(a)",
         "a.clamp(-1, 1)", "a * a", "a ** 2", "T.sqrt(a * a + 1)", "T.log(a * a + 1)", "-a", "a * 0.5", "2 - a",
         "a.clone()", "a.view(a.shape)", "a.reshape(a.shape)", "a[...]", "T.square(a)", "a.pow(3)",
         "T.atan(a)", "T.erf(a)", "a.sign() * a", "T.nn.functional.softplus(a)", "a.exp().log()",
         "T.clamp(a, min=0)", "a.flip(-1) if a.dim() else a", "a - a.mean()", "a * a.sum()",
         "a / (a.norm() + 1)", "T.softmax(a, -1) if a.dim() else a", "T.log_softmax(a, -1) if a.dim() else a",
         "a.cumsum(-1) if a.dim() else a", "a.max() * a", "a.amax() + a", "T.cumprod(a, -1) if a.dim() else a",
         "a.sort(-1)[0] if a.dim() else a", "T.nn.functional.gelu(a)", "T.nn.functional.silu(a)",
         "a.to(T.float64)", "a.to(T.float32)", "a.double() * a", "a.float() + 1", "a.t() if a.dim() == 2 and a.shape[0] == a.shape[1] else a",
         "a.unsqueeze(0).squeeze(0)", "a.expand(2, *a.shape).sum(0)", "a.detach()", "T.nn.functional.relu6(a)",
         "T.where(a > 0, a, 0.5 * a)", "a.masked_fill(a < 0, 0.0)", "a.var() + a if a.numel() > 1 else a",
         "a.prod() + a", "T.atan2(a, a * a + 1)", "T.nn.functional.leaky_relu(a, 0.1)", "T.rsqrt(a * a + 1)"]
BINARY = ["a + b", "a * b", "a - b", "a / (b * b + 1)", "T.maximum(a, b)", "T.minimum(a, b)",
          "T.where(a > b, a, b)", "T.atan2(a, b * b + 1)", "T.lerp(a, b, 0.3)", "T.addcmul(a, a, b, value=0.5)",
          "a.mul(b).add(a)", "T.hypot(a, b)", "(a * b).sum() * a", "T.stack([a, b]).sum(0)",
          "T.cat([a.reshape(-1), b.reshape(-1)])[:a.numel()].reshape(a.shape)", "a * b.detach()",
          "T.fmax(a, b)", "T.copysign(a, b)", "a.pow(2) + b.pow(2)", "T.dist(a, b) + a"]
INPLACE = ["{v}.mul_(2)", "{v}.add_({w})", "{v}.clamp_(-2, 2)", "{v}.tanh_()", "{v}.sigmoid_()", "{v}.exp_()",
           "{v}.zero_()", "{v}.copy_({w})", "{v}.sub_(1.5)", "{v}.div_(2)", "{v}.pow_(2)", "{v}.relu_()",
           "{v}.neg_()", "{v}.abs_()", "{v}.masked_fill_({v} > 0, 1.0)", "{v}.fill_(0.5)"]
VIEW_INPLACE = ["{v}[0].mul_(3)", "{v}.view(-1)[:1].add_(1)", "{v}[...].sub_({w})", "{v}.reshape(-1)[0:1].zero_()",
                "{v}.t().mul_(2)", "{v}.unsqueeze(0).add_(1)", "{v}.flatten()[-1:].fill_(2)"]


def _tensor(g, dtype, shape, rg):
    return g.tensor(dtype, shape, special=False, requires_grad=rg)


def _grad_tensor(g, dtype, shape):
    return g.tensor(dtype, shape, special=False)


class _Program:
    """The lines of one case, the names it made and what it will report."""

    def __init__(self, g):
        self.g = g
        self.r = g.r
        self.lines = []
        self.names = []        # every tensor name made, in order
        self.leaves = []       # leaf names
        self.nonleaves = []
        self.retained = []     # names that called retain_grad
        self.shape = self.r.choice(SHAPES)
        self.dtype = self.r.choice(["float64", "float64", "float32"])

    def emit(self, line):
        self.lines.append(line)

    def leaf(self, rg=None, dtype=None):
        name = f"x{len(self.leaves)}"
        rg = self.r.random() < 0.75 if rg is None else rg
        dtype = dtype or (self.dtype if self.r.random() < 0.85 else self.r.choice(["float32", "float64"]))
        self.emit(f"{name} = {_tensor(self.g, dtype, self.shape, rg)}")
        self.leaves.append(name)
        self.names.append(name)
        return name

    def new(self, expr, guard=None):
        name = f"v{len(self.nonleaves)}"
        if guard:
            self.emit(f"with {guard}:\n    {name} = attempt(lambda: {expr})")
        else:
            self.emit(f"{name} = attempt(lambda: {expr})")
        self.nonleaves.append(name)
        self.names.append(name)
        return name

    def pick(self):
        # Later tensors more often, so chains grow deep.
        k = len(self.names)
        return self.names[min(k - 1, int(k * (1 - self.r.random() ** 2)))]

    def body(self, n_ops):
        r = self.r
        for _ in range(n_ops):
            a, b = self.pick(), self.pick()
            roll = r.random()
            if roll < 0.4:
                self.new(_subst(r.choice(UNARY), a=a))
            elif roll < 0.65:
                self.new(_subst(r.choice(BINARY), a=a, b=b))
            elif roll < 0.72:
                guard = r.choice(["T.no_grad()", "T.enable_grad()", "T.set_grad_enabled(False)",
                                  "T.set_grad_enabled(True)", "T.inference_mode(False)"])
                self.new(_subst(r.choice(UNARY + BINARY), a=a, b=b), guard=guard)
            elif roll < 0.8:
                v = r.choice(self.names)
                self.emit(f"r_{len(self.lines)} = attempt(lambda: {r.choice(INPLACE).format(v=v, w=b)})")
            elif roll < 0.85:
                v = r.choice(self.names)
                self.emit(f"r_{len(self.lines)} = attempt(lambda: {r.choice(VIEW_INPLACE).format(v=v, w=b)})")
            elif roll < 0.9 and self.nonleaves:
                v = r.choice(self.nonleaves)
                self.emit(f"r_{len(self.lines)} = attempt(lambda: {v}.retain_grad())")
                self.retained.append(v)
            elif roll < 0.96:
                v = r.choice(self.names)
                hook = r.choice(["lambda g: g * 2", "lambda g: None", "lambda g: seen.append(g.sum().item())",
                                 "lambda g: g + 1", "lambda g: g.clone().zero_()"])
                h = f"h{len(self.lines)}"
                self.emit(f"{h} = attempt(lambda: {v}.register_hook({hook}))")
                if r.random() < 0.2:
                    self.emit(f"attempt(lambda: {h}.remove())")
            else:
                v = r.choice(self.leaves)
                op = r.choice(["requires_grad_()", "requires_grad_(False)", "detach_()"])
                self.emit(f"r_{len(self.lines)} = attempt(lambda: {v}.{op})")

    def report(self, extra=""):
        # A program that mixes float32 into float64 has float64 gradients of
        # float32 accuracy: they are compared as float32 (their dtype apart).
        low = "low" if any("float32" in ln or ".float()" in ln for ln in self.lines) else ""
        grads = ", ".join(f"attempt(lambda: {low}({n}.grad))" for n in self.leaves)
        kept = ", ".join(f"attempt(lambda: {low}({n}.grad))" for n in self.retained)
        fl = ", ".join(f"attempt(lambda: flags({n}))" for n in self.names)
        rs = ", ".join(sorted({ln.split(" = ")[0] for ln in self.lines if ln.startswith("r_")}))
        extra = f", {low}({extra[2:].replace(', ', f'), {low}(')})" if extra else ""
        return f"result = ([{grads}], [{kept}], [{fl}], [{rs}], seen{extra})"


def _subst(template, **names):
    """Replaces the operand letters of a template (whole identifiers only)."""
    import re
    return re.sub(r"\b([ab])\b", lambda m: names.get(m.group(1), m.group(1)), template)


def _backward_step(p, out):
    r = p.r
    form = r.choice(["sum", "gradient", "functional", "implicit", "grad", "weighted"])
    retain = r.choice(["", ", retain_graph=True", ", retain_graph=False"])
    if form == "sum":
        return f"attempt(lambda: {out}.sum().backward({retain[2:]}))"
    if form == "gradient":
        return (f"attempt(lambda: {out}.backward(T.ones_like({out}) * {r.choice([0.5, -2.0, 3.0])}{retain}))")
    if form == "functional":
        return f"attempt(lambda: T.autograd.backward([{out}.sum()]{retain}))"
    if form == "implicit":
        return f"attempt(lambda: {out}.backward({retain[2:]}))"
    if form == "weighted":
        return (f"attempt(lambda: ({out} * T.arange({out}.numel(), dtype={out}.dtype).reshape({out}.shape))"
                f".sum().backward({retain[2:]}))")
    leaves = ", ".join(p.leaves)
    return (f"attempt(lambda: T.autograd.grad({out}.sum(), [{leaves}], allow_unused={r.random() < 0.7}"
            f"{retain}))")


def form_chain(g):
    """A random program, one or two backward passes, and everything it touched."""
    r = g.r
    p = _Program(g)
    for _ in range(r.randint(1, 3)):
        p.leaf()
    p.emit("seen = []")
    p.body(r.randint(3, 12))
    out = p.pick()
    p.emit(f"b1 = {_backward_step(p, out)}")
    if r.random() < 0.4:
        p.emit(f"b2 = {_backward_step(p, out)}")
    else:
        p.emit("b2 = None")
    return PRELUDE + "\n".join(p.lines) + "\n" + p.report(", b1, b2")


def form_twice(g):
    """Backward twice through the same graph: an error without retain_graph
    where a node saved tensors, accumulation otherwise."""
    r = g.r
    dt = r.choice(["float64", "float32"])
    shape = r.choice(SHAPES[:3])
    x = _tensor(g, dt, shape, True)
    f = r.choice(["(x * x).sum()", "(x + 1).sum()", "x.exp().sum()", "(x * 2).mean()", "x.sum() * x.sum()",
                  "x.tanh().sum()", "x.view(-1).sum()", "(x.relu() + x.abs()).sum()", "x.norm()",
                  "(x.t() if x.dim() == 2 else x).sum()", "(x[0] * 3).sum()", "x.clone().sum()"])
    first = r.choice(["", "retain_graph=True", "retain_graph=False", "create_graph=True"])
    second = r.choice(["", "retain_graph=True"])
    zero = r.choice(["", "x.grad.zero_()", "x.grad = None"]) 
    return PRELUDE + (f"x = {x}\ny = {f}\nb1 = attempt(lambda: y.backward({first}))\ng1 = x.grad.detach().clone()\n"
                      f"{zero}\nb2 = attempt(lambda: y.backward({second}))\n"
                      f"result = (b1, b2, g1, x.grad, attempt(lambda: x.grad.requires_grad))")


def form_higher(g):
    """create_graph and second/third derivatives."""
    r = g.r
    dt = r.choice(["float64", "float64", "float32"])
    shape = r.choice(SHAPES)
    x = _tensor(g, dt, shape, True)
    w = _tensor(g, dt, shape, r.random() < 0.5)
    f = r.choice(["(x ** 3).sum()", "(x.sin() * w).sum()", "(x.exp() * x).sum()", "(x * x * w).sum()",
                  "x.tanh().pow(2).sum()", "(x.sigmoid() * w.sigmoid()).sum()", "(x.norm() ** 2)",
                  "T.log_softmax(x.reshape(-1), 0).sum() * 0 + (x.reshape(-1).softmax(0) * w.reshape(-1)).sum()",
                  "(x.abs() * x).sum()", "(x.relu() ** 2).sum()", "(x * w).sum()", "(x.clamp(-1, 1) ** 3).sum()",
                  "(x.cos() * x.sin()).sum()", "T.nn.functional.softplus(x).sum()", "(1 / (x * x + 1)).sum()",
                  "T.nn.functional.gelu(x).sum()", "(x.sqrt() if False else (x * x + 1).sqrt()).sum()",
                  "(x @ w if x.dim() == 2 and x.shape[0] == x.shape[1] else x * w).sum()"])
    form = r.choice(["grad_grad", "backward_after", "third", "sum_of_grad", "mixed", "no_create"])
    head = PRELUDE + f"x = {x}\nw = {w}\ny = {f}\n"
    if form == "grad_grad":
        return head + ("(gx,) = T.autograd.grad(y, x, create_graph=True)\n"
                       "gg = attempt(lambda: T.autograd.grad(gx.sum(), x, allow_unused=True))\n"
                       "result = (gx, flags(gx), gg, x.grad)")
    if form == "backward_after":
        return head + ("(gx,) = T.autograd.grad(y, x, create_graph=True)\n"
                       "b = attempt(lambda: (gx * gx).sum().backward())\n"
                       "result = (gx, b, x.grad, attempt(lambda: w.grad), flags(gx))")
    if form == "third":
        return head + ("(g1,) = T.autograd.grad(y, x, create_graph=True)\n"
                       "g2 = attempt(lambda: T.autograd.grad(g1.sum(), x, create_graph=True)[0])\n"
                       "g3 = attempt(lambda: T.autograd.grad(g2.sum(), x, allow_unused=True))\n"
                       "result = (g1, g2, g3)")
    if form == "sum_of_grad":
        return head + ("y.backward(create_graph=True)\n"
                       "gr = x.grad\n"
                       "f2 = attempt(lambda: flags(gr))\n"
                       "g2 = attempt(lambda: T.autograd.grad(gr.sum(), [x, w], allow_unused=True))\n"
                       "result = (gr, f2, g2)")
    if form == "mixed":
        return head + ("(gx,) = T.autograd.grad(y, x, create_graph=True)\n"
                       "z = (gx * w).sum() + y\n"
                       "gs = attempt(lambda: T.autograd.grad(z, [x, w], allow_unused=True, retain_graph=True))\n"
                       "b = attempt(lambda: z.backward())\n"
                       "result = (gs, b, x.grad, w.grad)")
    return head + ("(gx,) = T.autograd.grad(y, x)\n"
                   "f = flags(gx)\n"
                   "g2 = attempt(lambda: T.autograd.grad(gx.sum(), x))\n"
                   "result = (gx, f, g2)")


def form_grad_api(g):
    """autograd.grad's options: allow_unused, materialize_grads, only_inputs,
    grad_outputs for scalar and non-scalar outputs, inputs that need no grad."""
    r = g.r
    dt = r.choice(["float64", "float32"])
    shape = r.choice(SHAPES)
    x = _tensor(g, dt, shape, True)
    y = _tensor(g, dt, shape, True)
    z = _tensor(g, dt, shape, r.random() < 0.3)
    out = r.choice(["x * 2", "(x * x).sum()", "x.exp()", "x.sum() + z.sum()", "(x * z).sum()", "x + z",
                    "x.detach() * 2", "x.sum() * 0", "T.stack([x.sum(), (x * x).sum()])"])
    inputs = r.choice(["x", "[x]", "(x, y)", "[x, y, z]", "[y]", "[z]", "[]", "x.detach()"])
    kw = []
    if r.random() < 0.5:
        kw.append(f"allow_unused={r.random() < 0.7}")
    if r.random() < 0.3:
        kw.append(f"materialize_grads={r.random() < 0.7}")
    if r.random() < 0.2:
        kw.append(f"only_inputs={r.random() < 0.7}")
    if r.random() < 0.5:
        go = r.choice(["None", "T.ones_like(o)", "T.ones_like(o) * 2", "[T.ones_like(o)]", "T.ones(5)",
                       "T.ones_like(o).sum()", "[None]", "T.ones_like(o, dtype=T.float64)"])
        kw.append(f"grad_outputs={go}")
    if r.random() < 0.3:
        kw.append(f"retain_graph={r.random() < 0.5}")
    if r.random() < 0.2:
        kw.append("create_graph=True")
    args = ", ".join(["o", inputs] + kw)
    second = "attempt(lambda: T.autograd.grad(o.sum(), x))" if r.random() < 0.4 else "None"
    return PRELUDE + (f"x = {x}\ny = {y}\nz = {z}\no = {out}\nres = attempt(lambda: T.autograd.grad({args}))\n"
                      f"again = {second}\n"
                      f"result = (res, again, x.grad, y.grad, attempt(lambda: [flags(t) for t in res]))")


def form_modes(g):
    """Nested grad-mode switches: flags of what each level makes and of the
    global state inside and after."""
    r = g.r
    ctxs = ["T.no_grad()", "T.enable_grad()", "T.set_grad_enabled(False)", "T.set_grad_enabled(True)",
            "T.inference_mode()", "T.inference_mode(False)", "T.autograd.grad_mode.no_grad()",
            "T.autograd.set_grad_enabled(False)"]
    x = _tensor(g, r.choice(["float32", "float64"]), r.choice(SHAPES), True)
    lines = [f"x = {x}", "out = []"]
    depth = r.randint(1, 4)
    indent = ""
    for i in range(depth):
        c = r.choice(ctxs)
        lines.append(f"{indent}with {c}:")
        indent += "    "
        op = r.choice(["x * 2", "x.sum()", "x.view(-1)", "x[...]", "x.detach()", "x.clone()", "x.exp()", "x + 0"])
        lines.append(f"{indent}y{i} = {op}")
        lines.append(f"{indent}out.append((flags(y{i}), T.is_grad_enabled()))")
        if r.random() < 0.2:
            lines.append(f"{indent}out.append(T.is_inference_mode_enabled())")
    lines.append("out.append(T.is_grad_enabled())")
    lines.append("out.append(T.is_inference_mode_enabled())")
    if r.random() < 0.4:
        # The decorator forms.
        c = r.choice(["T.no_grad()", "T.enable_grad()", "T.inference_mode()", "T.no_grad"])
        lines.append(f"@{c}\ndef f(t):\n    return (t * 2, T.is_grad_enabled())")
        lines.append("fy, fe = f(x)\nout.append((flags(fy), fe, T.is_grad_enabled()))")
    if r.random() < 0.3:
        # set_grad_enabled takes effect when called, not on entering.
        lines.append("prev = T.set_grad_enabled(False)\nout.append(T.is_grad_enabled())\n"
                     "T.set_grad_enabled(True)\nout.append(T.is_grad_enabled())")
    if r.random() < 0.4:
        b = r.randint(0, depth - 1)
        lines.append(f"out.append(attempt(lambda: y{b}.sum().backward()))\nout.append(x.grad)")
    lines.append("result = out")
    return PRELUDE + "\n".join(lines)


def form_inplace(g):
    """In-place writes autograd must refuse or handle: on leaves, views of
    leaves, tensors saved for backward; .data and .grad assignment; zero_grad
    forms."""
    r = g.r
    dt = r.choice(["float32", "float64"])
    shape = r.choice(SHAPES[:3])
    x = _tensor(g, dt, shape, True)
    c = _tensor(g, dt, shape, False)
    form = r.choice(["leaf", "leaf_view", "saved", "saved_ok", "data", "grad_assign", "zero", "nonleaf_view",
                     "leaf_nograd", "version"])
    head = PRELUDE + f"x = {x}\nc = {c}\n"
    op = r.choice(INPLACE).format(v="{v}", w="c")
    if form == "leaf":
        return head + f"e = attempt(lambda: {op.format(v='x')})\nresult = (e, x, flags(x), x._version > 0)"
    if form == "leaf_view":
        vop = r.choice(VIEW_INPLACE).format(v="x", w="c")
        return head + (f"e = attempt(lambda: {vop})\n"
                       f"result = (e, x, flags(x))")
    if form == "leaf_nograd":
        vop = r.choice(VIEW_INPLACE + INPLACE).format(v="x", w="c")
        return head + (f"with T.no_grad():\n    e = attempt(lambda: {vop})\n"
                       "y = (x * x).sum()\nb = attempt(lambda: y.backward())\n"
                       "result = (e, x, flags(x), x.grad)")
    if form == "saved":
        f = r.choice(["y = x * 1\nz = y * y", "y = x.exp()\nz = y", "y = x + 0\nz = y.sin()",
                      "y = x * 2\nz = y.tanh()", "y = x.sigmoid()\nz = y * 3", "y = x.clone()\nz = y.pow(2)",
                      "y = x * 1\nz = y.abs()", "y = x + 1\nz = y.relu()", "y = x * 1\nz = y.sum()",
                      "y = x * 1\nz = y[0] * y[0]", "y = x * 1\nz = y.view(-1) * 2", "y = x * 1\nz = y / 2",
                      "y = x * 1\nz = y.clone() * y.detach()"])
        return head + (f"{f}\ne = attempt(lambda: {op.format(v='y')})\n"
                       "b = attempt(lambda: z.sum().backward())\n"
                       "result = (e, b, x.grad, flags(y))")
    if form == "saved_ok":
        vop = r.choice(VIEW_INPLACE).format(v="y", w="c")
        return head + (f"y = x * 1\ne = attempt(lambda: {vop})\nz = (y * y).sum()\n"
                       "b = attempt(lambda: z.backward())\nresult = (e, b, y, x.grad, flags(y))")
    if form == "nonleaf_view":
        vop = r.choice(VIEW_INPLACE).format(v="y", w="x")
        return head + (f"y = c * 1\ne = attempt(lambda: {vop})\nz = (y * y).sum()\n"
                       "b = attempt(lambda: z.backward())\nresult = (e, b, y, flags(y), x.grad)")
    if form == "data":
        new = r.choice(["T.zeros_like(x)", f"{_tensor(g, dt, shape, False)}",
                        f"{_tensor(g, 'float64' if dt == 'float32' else 'float32', shape, False)}",
                        "T.ones(7)", "x.detach() * 3"])
        # The assignment comes before any graph is built: a graph already
        # holding x sees PyTorch's implementation (a saved leaf reads the new
        # data; the cached grad accumulator checks the old shape), which Lucid
        # does not copy (saved tensors keep the memory they were saved with).
        return head + (f"e = attempt(lambda: setattr(x, 'data', {new}))\ny = x * x\n"
                       "b = attempt(lambda: (x * 2).sum().backward())\n"
                       "b2 = attempt(lambda: y.sum().backward())\n"
                       "result = (e, b, b2, x, x.grad, flags(x), x.dtype, x.shape)")
    if form == "grad_assign":
        new = r.choice(["T.zeros_like(x)", "T.ones(7)", "T.ones_like(x, dtype=T.float64)",
                        "T.ones_like(x, dtype=T.float16)", "None", "T.ones_like(x).requires_grad_()", "5.0",
                        "T.ones_like(x)[None]", "T.ones_like(x, dtype=T.int64)"])
        return head + (f"e = attempt(lambda: setattr(x, 'grad', {new}))\n"
                       "g0 = x.grad\n"
                       "b = attempt(lambda: (x * 3).sum().backward())\n"
                       "result = (e, g0, b, x.grad)")
    if form == "zero":
        stmt = r.choice(["x.grad.zero_()", "x.grad = None", "x.grad.mul_(0)", "x.grad.add_(1)",
                         "x.grad.detach_()", "x.grad.requires_grad_()"])
        return head + ("(x * x).sum().backward()\n"
                       f"e = attempt(lambda: exec({stmt!r}, {{'x': x}}))\n"
                       "g0 = x.grad\n"
                       "(x * c).sum().backward()\n"
                       "result = (e, g0, x.grad)")
    # Version counters seen from Python. Not ``x.data.mul_(2)``: PyTorch gives
    # ``.data`` a version counter of its own, so such a write escapes the
    # saved-tensor check; Lucid counts versions per storage and catches it.
    steps = r.choice(["x.detach().add_(1)", "y = x * 1; y.add_(1); y.add_(1)",
                      "with T.no_grad(): x.add_(1)", "x.detach()[0].zero_()"])
    return head + (f"v0 = x._version\nexec({steps!r}, {{'x': x, 'T': T}})\n"
                   "result = (x, x._version - v0 > 0)")


def form_function(g):
    """torch.autograd.Function subclasses: save_for_backward, mark_dirty,
    mark_non_differentiable, needs_input_grad, once_differentiable,
    non-tensor arguments, None gradients."""
    r = g.r
    dt = r.choice(["float32", "float64"])
    shape = r.choice(SHAPES)
    x = _tensor(g, dt, shape, True)
    y = _tensor(g, dt, shape, r.random() < 0.6)
    kind = r.choice(["square", "dirty", "nondiff", "needs", "once", "scale", "none_grad", "two_out",
                     "setup_context", "wrong_count", "saved_output", "view_out", "materialize"])
    classes = {
        "square": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * a * b
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return 2 * a * b * g, a * a * g
''',
        "dirty": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        a.mul_(2)
        ctx.mark_dirty(a)
        return a
    @staticmethod
    def backward(ctx, g):
        return 2 * g, None
''',
        "nondiff": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        s = a.sort(-1) if a.dim() else (a, T.zeros((), dtype=T.int64))
        idx = (a > 0).to(a.dtype)
        ctx.mark_non_differentiable(idx)
        return a * b, idx
    @staticmethod
    def backward(ctx, g, gi):
        return g, g
''',
        "needs": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b
    @staticmethod
    def backward(ctx, g):
        seen.append(tuple(ctx.needs_input_grad))
        a, b = ctx.saved_tensors
        return (g * b if ctx.needs_input_grad[0] else None), (g * a if ctx.needs_input_grad[1] else None)
''',
        "once": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a)
        return a.exp() + b
    @staticmethod
    @T.autograd.function.once_differentiable
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a.exp(), g
''',
        "scale": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, k=3.0, flag=True):
        ctx.k = k
        return a * k + b
    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, g, None, None
''',
        "none_grad": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b
    @staticmethod
    def backward(ctx, g):
        return None, g * 2
''',
        "two_out": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b
    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        return g1 * b + g2, g1 * a + g2
''',
        "setup_context": '''class F(T.autograd.Function):
    @staticmethod
    def forward(a, b):
        return a.sin() * b
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * a.cos() * b, g * a.sin()
''',
        "wrong_count": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 2 + b
    @staticmethod
    def backward(ctx, g):
        return g * 2
''',
        "saved_output": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        out = a.exp() * b
        ctx.save_for_backward(out, b)
        return out
    @staticmethod
    def backward(ctx, g):
        out, b = ctx.saved_tensors
        return g * out, g * out / b
''',
        "view_out": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a.view(a.shape) * 1 + b
    @staticmethod
    def backward(ctx, g):
        return g, g
''',
        "materialize": '''class F(T.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)
        return a * 2, b * 3
    @staticmethod
    def backward(ctx, g1, g2):
        seen.append((g1 is None, g2 is None))
        return (None if g1 is None else g1 * 2), (None if g2 is None else g2 * 3)
''',
    }
    call = "F.apply(x, y)"
    if kind == "scale":
        call = r.choice(["F.apply(x, y)", "F.apply(x, y, 0.5)", "F.apply(x, y, 2.0, False)"])
    if kind == "dirty":
        call = r.choice(["F.apply(x * 1, y)", "F.apply(x, y)", "F.apply(x.clone(), y)"])
    use = r.choice(["o = out[0] if isinstance(out, tuple) else out\n",
                    "o = (out[1] if isinstance(out, tuple) else out)\n"])
    back = r.choice(["b = attempt(lambda: (o * o).sum().backward())",
                     "b = attempt(lambda: o.sum().backward())",
                     "b = attempt(lambda: T.autograd.grad(o.sum(), [x], create_graph=True))",
                     "b = attempt(lambda: T.autograd.grad((T.autograd.grad(o.sum(), [x], create_graph=True)[0] ** 2)"
                     ".sum(), [x], allow_unused=True))"])
    mode = r.choice(["", "", "with T.no_grad():\n    "])
    return PRELUDE + ("seen = []\n" + classes[kind] + f"x = {x}\ny = {y}\n"
                      f"{mode}out = attempt(lambda: {call})\n" + use
                      + "fo = attempt(lambda: [flags(t) for t in (out if isinstance(out, tuple) else (out,))])\n"
                      + f"{back}\n"
                      "result = (out, fo, b, x.grad, y.grad, seen)")


def form_checkpoint(g):
    """torch.utils.checkpoint.checkpoint(use_reentrant=False) against the
    same function run plainly."""
    r = g.r
    dt = r.choice(["float32", "float64"])
    shape = r.choice(SHAPES[:3])
    x = _tensor(g, dt, shape, r.random() < 0.85)
    w = _tensor(g, dt, shape, r.random() < 0.7)
    fn = r.choice(["a.sin() * b", "(a * b).tanh() + a", "a.exp() * b.sigmoid()", "(a @ b.t() if a.dim() == 2 else a * b)",
                   "T.nn.functional.gelu(a) * b", "(a * a).sum() * b", "a.relu() + b.abs()", "a * b.detach()",
                   "(a.clone().mul_(2) * b)"])
    kw = r.choice(["use_reentrant=False", "use_reentrant=False, preserve_rng_state=False"])
    back = r.choice(["attempt(lambda: y.sum().backward())", "attempt(lambda: (y * y).sum().backward())",
                     "attempt(lambda: y.sum().backward(retain_graph=True) or y.sum().backward())",
                     "attempt(lambda: T.autograd.grad(y.sum(), [x], allow_unused=True))"])
    return PRELUDE + ("from importlib import import_module\n"
                      "cp = import_module(T.__name__ + '.utils.checkpoint').checkpoint\n"
                      f"def f(a, b):\n    return {fn}\n"
                      f"x = {x}\nw = {w}\ny = attempt(lambda: cp(f, x, w, {kw}))\n"
                      f"fy = attempt(lambda: flags(y))\nb = {back}\n"
                      "result = (y, fy, b, x.grad, w.grad)")


def form_functional(g):
    """autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp on small
    functions, with create_graph and strict."""
    r = g.r
    dt = r.choice(["float64", "float64", "float32"])
    shape = r.choice([(3,), (2,), (2, 2), ()])
    x = _tensor(g, dt, shape, False)
    y = _tensor(g, dt, shape, False)
    vec = ["a.sin() * 2", "a * a", "a.exp() + a", "a.tanh() * b", "a * b + b", "(a * a).sum() * a",
           "a.reshape(-1).cumsum(0).reshape(a.shape)", "a.detach() * 2", "a * 0 + 1"]
    scal = ["(a ** 3).sum()", "(a.sin() * b).sum()", "(a * a * b).sum()", "a.exp().sum() + (a * b).sum()",
            "(a.tanh() ** 2).sum()", "a.norm() ** 2", "(a * b.detach()).sum()", "b.sum() * 0 + a.sum()"]
    api = r.choice(["jacobian", "jacobian2", "hessian", "hessian2", "vjp", "jvp", "hvp", "vhp"])
    kw = []
    if r.random() < 0.3:
        kw.append("create_graph=True")
    if r.random() < 0.3:
        kw.append("strict=True")
    if api.startswith("jacobian") and r.random() < 0.3:
        kw.append("vectorize=True")
    kws = (", " + ", ".join(kw)) if kw else ""
    head = PRELUDE + f"x = {x}\ny = {y}\nF = T.autograd.functional\n"
    if api == "jacobian":
        return head + f"def f(a):\n    b = y\n    return {r.choice(vec)}\nresult = attempt(lambda: F.jacobian(f, x{kws}))"
    if api == "jacobian2":
        return head + (f"def f(a, b):\n    return ({r.choice(vec)}, {r.choice(vec)})\n"
                       f"result = attempt(lambda: F.jacobian(f, (x, y){kws}))")
    if api == "hessian":
        return head + f"def f(a):\n    b = y\n    return {r.choice(scal)}\nresult = attempt(lambda: F.hessian(f, x{kws}))"
    if api == "hessian2":
        return head + (f"def f(a, b):\n    return {r.choice(scal)}\n"
                       f"result = attempt(lambda: F.hessian(f, (x, y){kws}))")
    v = r.choice(["T.ones_like(x)", "x * 0 + 0.5", "None"])
    if api in ("vjp", "jvp"):
        body = r.choice(vec + scal)
        if api == "vjp" and body in scal:
            v = r.choice(["None", "T.tensor(2.0, dtype=x.dtype)"])
        return head + (f"def f(a):\n    b = y\n    return {body}\n"
                       f"result = attempt(lambda: F.{api}(f, x, {v}{kws}))")
    return head + (f"def f(a):\n    b = y\n    return {r.choice(scal)}\n"
                   f"result = attempt(lambda: F.{api}(f, x, {v}{kws}))")


def form_anomaly(g):
    """Anomaly mode: the error for a backward producing NaN, nothing when
    none does, and the state's flags."""
    r = g.r
    dt = r.choice(["float32", "float64"])
    vals = r.choice(["[0.0, 1.0, 4.0]", "[-1.0, 1.0, 2.0]", "[1.0, 2.0, 3.0]", "[0.0, 0.0, 0.0]"])
    f = r.choice(["x.sqrt()", "x.log()", "(x * 0).sqrt()", "x.pow(0.5)", "x * 2", "x / x", "x.sqrt() * 0",
                  "T.where(x > 0, x.log(), x)", "x.abs().sqrt()"])
    ctx = r.choice(["T.autograd.detect_anomaly()", "T.autograd.set_detect_anomaly(True)",
                    "T.autograd.detect_anomaly(check_nan=False)", "T.autograd.set_detect_anomaly(False)"])
    where = r.choice(["both", "forward", "backward"])
    body = f"y = {f}\nb = attempt(lambda: y.sum().backward())"
    if where == "both":
        code = f"with {ctx}:\n    y = {f}\n    b = attempt(lambda: y.sum().backward())\n    st = T.is_anomaly_enabled()"
    elif where == "forward":
        code = f"with {ctx}:\n    y = {f}\n    st = T.is_anomaly_enabled()\nb = attempt(lambda: y.sum().backward())"
    else:
        code = f"y = {f}\nwith {ctx}:\n    b = attempt(lambda: y.sum().backward())\n    st = T.is_anomaly_enabled()"
    del body
    return PRELUDE + (f"x = T.tensor({vals}, dtype=T.{dt}, requires_grad=True)\n{code}\n"
                      "result = (b, x.grad, st, T.is_anomaly_enabled())")


def form_post_hook(g):
    """register_post_accumulate_grad_hook on leaves, beside register_hook,
    retain_grad and handles removed."""
    r = g.r
    dt = r.choice(["float32", "float64"])
    shape = r.choice(SHAPES)
    x = _tensor(g, dt, shape, True)
    c = _tensor(g, dt, shape, r.random() < 0.3)
    hook = r.choice(["lambda p: seen.append(p.grad.sum().item())", "lambda p: p.grad.mul_(2)",
                     "lambda p: seen.append(p.is_leaf)", "lambda p: setattr(p, 'grad', None)",
                     "lambda p: seen.append(('post', p.grad is None))"])
    target = r.choice(["x", "x", "c", "(x * 2)"])
    pre = r.choice(["", "x.register_hook(lambda g: seen.append(('pre', g.sum().item())))\n",
                    "x.register_hook(lambda g: g * 3)\n"])
    remove = r.choice(["", "h.remove()\n"]) if target != "(x * 2)" else ""
    n = r.randint(1, 2)
    return PRELUDE + (f"seen = []\nx = {x}\nc = {c}\n{pre}h = attempt(lambda: {target}.register_post_accumulate_grad_hook({hook}))\n"
                      f"{remove}"
                      + "bs = [attempt(lambda: (x * c).sum().backward()) for _ in range(%d)]\n" % n
                      + "result = (h if isinstance(h, Exception) else None, bs, x.grad, c.grad, seen)")


FORMS = [(form_chain, 6), (form_twice, 2), (form_higher, 2), (form_grad_api, 2), (form_modes, 1),
         (form_inplace, 2), (form_function, 2), (form_checkpoint, 1), (form_functional, 1),
         (form_anomaly, 1), (form_post_hook, 1)]


def family_autograd(g):
    forms, weights = zip(*FORMS)
    return g.r.choices(forms, weights)[0](g)
