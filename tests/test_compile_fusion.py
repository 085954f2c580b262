"""What the CPU executable does to a graph (fused elementwise groups with
broadcast operands, contiguous slices as views, gradients of unbind as one
concat), checked against the eager results bit for bit."""
import numpy as np
import pytest

import lucid
from lucid.compile import make_step


class Model:
    def __init__(self, forward, *shapes, seed=0):
        lucid.manual_seed(seed)
        self.training = True
        self.params = [lucid.randn(*s).requires_grad_() for s in shapes]
        self.forward = forward

    def parameters(self):
        return list(self.params)

    def __call__(self, x):
        return self.forward(x, *self.params)


def mean_loss(out):
    return out.mean()


def compiled_vs_eager(model, x):
    for p in model.parameters():
        p.grad = None
    loss = mean_loss(model(x))
    loss.backward()
    eager = [loss.detach().numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    step = make_step(model, lambda out: mean_loss(out))
    loss = step(x)
    compiled = [loss.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]
    exe = step.executables()[0]
    exe.set_profiling(True)
    for p in model.parameters():
        p.grad = None  # the same signature as the first call: the same executable
    step(x)
    assert exe.profiled_runs == 1
    labels = [label for label, _ in exe.profile()]
    return eager, compiled, exe, labels


def assert_bitwise(eager, compiled):
    for e, c in zip(eager, compiled):
        np.testing.assert_array_equal(e, c)


def layer_norm_like(x, w, b):
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdim=True)
    return xc / (var + 1e-5).sqrt() * w + b


@pytest.mark.parametrize("shape", [(4, 6, 16), (2, 3, 5, 7), (33, 1025)])
def test_broadcast_operands_fuse_and_match_eager(shape):
    model = Model(layer_norm_like, shape[-1:], shape[-1:])
    x = lucid.randn(*shape)
    eager, compiled, _, labels = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)
    fused = [lbl for lbl in labels if lbl.startswith("fused")]
    # (x - mu) * rstd * w + b runs as one group reading mu, rstd, w, b broadcast.
    assert any(lbl.count(" ") >= 3 for lbl in fused), labels
    assert not any(lbl.startswith(("add ", "mul ", "sub ", "div ")) and "<-" in lbl and
                   f"[{shape[-1]}]" in lbl.split("<-")[1] for lbl in labels), labels


def test_broadcast_over_middle_and_leading_dims():
    # Operands of shape [1, C, 1], [B, 1, 1] and [] broadcast into [B, C, L].
    def forward(x, a, b, c):
        return ((x * a + b) * c - a).tanh() * (x > b)

    model = Model(forward, (1, 5, 1), (3, 1, 1), ())
    x = lucid.randn(3, 5, 7)
    eager, compiled, _, labels = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)
    assert any(lbl.startswith("fused") for lbl in labels)


def test_groups_span_unrelated_nodes():
    # The matmul between the elementwise ops neither reads nor is read by the
    # first ones, so they join one group with the ops after it.
    def forward(x, w, s):
        y = x * s
        z = x @ w
        return (y + 1.0) * z

    model = Model(forward, (8, 8), (8,))
    x = lucid.randn(8, 8)
    eager, compiled, _, labels = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)
    assert any(lbl.startswith("fused") and "mul add mul" in lbl for lbl in labels), labels


def test_a_value_read_between_members_is_materialized_first():
    # y is read by the reduction before z joins: y's group must run (and
    # write y) before the sum, so z starts a group of its own.
    def forward(x, s):
        y = (x * s).exp()
        t = y.sum(-1, keepdim=True)
        return (y * 2.0 + t) * y

    model = Model(forward, (16,))
    x = lucid.randn(4, 16)
    eager, compiled, _, _ = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)


def test_unbind_gradient_is_one_concat_and_slices_are_views():
    def forward(x, w):
        q, k, v = (x @ w).reshape(4, 3, 2, 5).permute(1, 0, 2, 3).unbind(0)
        return (q * k + v).tanh()

    model = Model(forward, (6, 30))
    x = lucid.randn(4, 6)
    eager, compiled, exe, labels = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)
    text = exe.dump()
    assert "slice_scatter" not in text and "cat" in text, text
    # q, k and v are contiguous blocks of the permuted tensor: no copies.
    assert not any(lbl.startswith("slice ") for lbl in labels), labels


@pytest.mark.parametrize("window", [(2, 2, 0, False), (3, 2, 1, False), (3, 1, 1, False), (3, 2, 0, True)],
                         ids=["2x2", "3x3s2p1", "3x3s1p1", "3x3s2ceil"])
@pytest.mark.parametrize("shift", [0.0, -2.0], ids=["mixed", "mostly-negative"])
def test_relu_gradient_is_masked_on_the_pooled_grid(window, shift):
    """conv -> ReLU -> max-pool: the ReLU's gradient mask is applied to the
    pool's gradient before it is scattered back (no pass over the full-size
    gradient), with the eager results bit for bit, for overlapping, padded
    and ceil-mode windows and windows whose maximum is 0."""
    k, s, p, ceil = window

    def forward(x, w, b):
        y = lucid.nn.functional.conv2d(x, w, b, padding=1).relu()
        return lucid.nn.functional.max_pool2d(y, k, s, p, ceil_mode=ceil).tanh()

    model = Model(forward, (4, 2, 3, 3), (4,))
    x = lucid.randn(3, 2, 9, 9) + shift
    eager, compiled, exe, labels = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)
    # every select runs on the pooled grid (for a stride-1 pool, as large as the input)
    pooled = lucid.nn.functional.max_pool2d(lucid.zeros(3, 4, 9, 9), k, s, p, ceil_mode=ceil).numel()
    selects = [lbl for lbl in labels if lbl.startswith("fused x") and "where" in lbl]
    assert selects and all(int(lbl.split()[1][1:]) <= pooled for lbl in selects), labels
    assert any(lbl.startswith("max_pool2d_backward") for lbl in labels), labels


def test_strided_slice_still_copies():
    def forward(x, w):
        y = x @ w
        return y[:, ::2] * y[:, 1::2]

    model = Model(forward, (6, 10))
    x = lucid.randn(4, 6)
    eager, compiled, _, labels = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)
    assert sum(lbl.startswith("slice ") for lbl in labels) == 2, labels


def test_profile_reports_every_step():
    model = Model(layer_norm_like, (8,), (8,))
    x = lucid.randn(3, 8)
    _, _, exe, labels = compiled_vs_eager(model, x)
    assert exe.profiled_runs == 1
    assert len(labels) == int(exe.describe().split(" steps")[0].split(": ")[1])
    assert all(seconds >= 0 for _, seconds in exe.profile())
    exe.set_profiling(False)
    assert exe.profiled_runs == 0


# Random elementwise programs in bfloat16 and float16: the fused groups
# compute in float32 registers and round each 16-bit result as the eager
# kernel stores it, so compiled and eager agree bit for bit, gradients too.
_UNARY_16 = [lambda v: v.exp(), lambda v: v.tanh(), lambda v: v.sigmoid(), lambda v: v.relu(), lambda v: -v,
             lambda v: v.abs().sqrt(), lambda v: v.abs().log1p(), lambda v: lucid.nn.functional.gelu(v),
             lambda v: v.sin(), lambda v: v.square(), lambda v: v.clamp(-1.5, 2.0), lambda v: v.erf()]
_BINARY_16 = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b.abs() + 1.0),
              lambda a, b: lucid.maximum(a, b), lambda a, b: lucid.where(a > b, a, b * 0.5),
              lambda a, b: a * (b > 0).to(a.dtype), lambda a, b: (a.float() * b.float()).to(a.dtype)]


def _random_half_program(seed, dtype):
    r = np.random.default_rng(seed)
    plan = []
    for i in range(int(r.integers(3, 9))):
        plan.append((int(r.integers(2)), int(r.integers(len(_UNARY_16))), int(r.integers(len(_BINARY_16))),
                     int(r.integers(-1, 3)), int(r.integers(i + 1))))

    def forward(x, w, b, s):
        vals = [x.to(dtype)]
        operands = [w.to(dtype), b.to(dtype), s.to(dtype)]  # [C], [1, C] and [] broadcast
        for kind, u, bi, o, earlier in plan:
            v = vals[-1]
            if kind == 0:
                vals.append(_UNARY_16[u](v))
            else:
                vals.append(_BINARY_16[bi](v, vals[earlier] if o < 0 else operands[o]))
        return (vals[-1] + vals[len(vals) // 2] + operands[0] * operands[1] * operands[2]).float()

    return forward


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("seed", range(12))
def test_sixteen_bit_elementwise_programs_fuse_and_match_eager(seed, dtype):
    forward = _random_half_program(seed, getattr(lucid, dtype))
    model = Model(forward, (33,), (1, 33), (), seed=seed)
    x = lucid.randn(5, 7, 33) * 2.0
    eager, compiled, _, labels = compiled_vs_eager(model, x)
    assert_bitwise(eager, compiled)
    if x.device.type == "cpu":  # the CUDA kernels fuse float32 and bool only: 16-bit ops stay one kernel each
        assert any(lbl.startswith("fused") for lbl in labels), labels
