"""Every mismatch the differential fuzzer (tests/fuzz) found, shrunk to a
minimal program and kept as a plain test. Each test's docstring names the
root cause and the command that found it; the code is the shrinker's output
(``python -m tests.fuzz`` prints it), lightly renamed.
"""
import numpy as np
import pytest

import lucid
import lucid.nn as lnn
import lucid.nn.functional as LF
import lucid.optim as loptim
from lucid.amp import GradScaler
from lucid.compile import compile_optimizer, fused_step, make_step, train_step

torch = pytest.importorskip("torch")
inf, nan = np.inf, np.nan


def same(got, want, what):
    """Compiled and eager Lucid on the CPU: the same bits."""
    g = None if got is None else np.asarray(got.detach().numpy() if hasattr(got, "detach") else got)
    w = None if want is None else np.asarray(want.detach().numpy() if hasattr(want, "detach") else want)
    assert (g is None) == (w is None), f"{what}: {g} vs {w}"
    if g is not None:
        np.testing.assert_array_equal(g, w, err_msg=what)


def close(got, want, rtol, what):
    """Lucid vs PyTorch: |got - want| <= rtol * max|want| (norm-wise)."""
    assert (got is None) == (want is None), f"{what}: {got} vs {want}"
    if got is None:
        return
    g = np.asarray(got.detach().numpy(), dtype=np.float64)
    w = np.asarray(want.detach().numpy(), dtype=np.float64)
    scale = np.abs(w[np.isfinite(w)]).max() if np.isfinite(w).any() else 0.0
    np.testing.assert_allclose(g, w, rtol=0, atol=rtol * scale, err_msg=what)


def make_model_rebound_param_compile_optimizer(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p10 = nn.Parameter(L.tensor(np.array([[-0.5679915210360565]], dtype=np.float64)))

        def forward(self, x):
            p10, = self.p10,
            return p10
    return Model()


def loss_fn_rebound_param_compile_optimizer(L, F):
    def loss_fn(out):
        return out.mean()
    return loss_fn


def test_rebound_param_compile_optimizer():
    """compile_optimizer after `p.data = new`: the update was traced through
    `param.detach()`, so the capture's owner was a temporary that expired at
    once and bindings_valid() never saw the rebinding; the executable kept
    updating the old buffer. (python -m tests.fuzz --seed 5 --count 1)"""
    make_model, make_loss = make_model_rebound_param_compile_optimizer, loss_fn_rebound_param_compile_optimizer
    batches = [
        (np.array(0.9317308068940906, dtype=np.float64),),
        (np.array(2.055063723960217, dtype=np.float64),),
    ]
    eager = make_model(lucid, LF, lnn, LF.dropout)
    compiled = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    opt_e = loptim.SGD([{'params': [eager.p10]}], lr=0.01)
    opt_c = compile_optimizer(loptim.SGD([{'params': [compiled.p10]}], lr=0.01))
    for s, set_to_none in enumerate([True, True]):
        if s == 1:
            eager.p10.data = eager.p10.data * 0.5
            compiled.p10.data = compiled.p10.data * 0.5
        opt_e.zero_grad(set_to_none)
        opt_c.zero_grad(set_to_none)
        for call in range(s * 1, (s + 1) * 1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            loss_fn(eager(x), *ys).backward()
            loss_fn(compiled(x), *ys).backward()
        opt_e.step()
        opt_c.step()
        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
            same(b, a, f'{n} after step {s}')
        se, sc = opt_e.state_dict()['state'], opt_c.state_dict()['state']
        assert se.keys() == sc.keys()
        for i in se:
            assert se[i].keys() == sc[i].keys()
            for k in se[i]:
                same(sc[i][k], se[i][k], f'state[{i}][{k}] after step {s}')


def make_model_all_targets_ignored_cross_entropy(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p7_ = nn.Parameter(L.tensor(np.array([[[[2.]]]], dtype=np.float64)))

        def forward(self, x):
            p7_, = self.p7_,
            return p7_
    return Model()


def loss_fn_all_targets_ignored_cross_entropy(L, F):
    def loss_fn(out, y):
        return F.cross_entropy(out, y, ignore_index=0)
    return loss_fn


def test_all_targets_ignored_cross_entropy():
    """cross_entropy/nll_loss with every target ignored: PyTorch returns a NaN
    loss with zero gradients; Lucid divided by the zero total weight inside
    the graph, so the gradient was 0 * inf = NaN.
    (python -m tests.fuzz --seed 10 --count 1)"""
    make_model, make_loss = make_model_all_targets_ignored_cross_entropy, loss_fn_all_targets_ignored_cross_entropy
    batches = [
        (np.array(-2, dtype=np.float64), np.array([[[0]]], dtype=np.int64),),
    ]
    import torch.nn as tnn
    import torch.nn.functional as TF
    model = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn, tloss_fn = make_loss(lucid, LF), make_loss(torch, TF)
    opt = loptim.SGD([{'params': [model.p7_]}], lr=0.01)
    masks = []
    call = 0
    for s, set_to_none in enumerate([True]):
        model.zero_grad(set_to_none)
        twin = make_model(torch, TF, tnn, lambda a, p: a * masks.pop(0))
        with torch.no_grad():
            for a, b in zip(twin.parameters(), model.parameters()):
                a.copy_(torch.from_numpy(b.detach().numpy()))
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            tx, *tys = [torch.from_numpy(a) for a in batches[call]]
            got = loss_fn(model(x), *ys)
            got.backward()
            want = tloss_fn(twin(tx), *tys)
            want.backward()
            close(got, want, 1e-12, f'loss, call {call}')
            for (n, a), b in zip(model.named_parameters(), twin.parameters()):
                close(a.grad, b.grad, 1e-12, f'grad {n}, call {call}')
            call += 1
        opt.step()


def make_model_float64_gradscaler_unscale(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer('p2', L.tensor(np.array([ 0.5,  0.2, -0.2, -1.9, -0.1, -0.1], dtype=np.float64)), persistent=False)
            self.register_buffer('p5', L.tensor(np.array([[ 0.7, -0.7, -2.2, -0.6, -0.1, -0.2]], dtype=np.float64)), persistent=False)
            self.p6 = nn.Parameter(L.tensor(np.array([-0.5], dtype=np.float64)))

        def forward(self, x):
            p2, p5, p6 = self.p2, self.p5, self.p6
            v7 = F.linear(p2, p5, p6)
            return v7
    return Model()


def loss_fn_float64_gradscaler_unscale(L, F):
    def loss_fn(out, y):
        return F.binary_cross_entropy(L.sigmoid(out), y)
    return loss_fn


def test_float64_gradscaler_unscale():
    """GradScaler with float64 gradients: unscale_ cast them to float32
    before multiplying by 1/scale (and the fused step did the same), so every
    float64 gradient lost half its digits; PyTorch unscales in the gradient's
    opmath type (float64 here). (python -m tests.fuzz --seed 7 --count 1)"""
    make_model, make_loss = make_model_float64_gradscaler_unscale, loss_fn_float64_gradscaler_unscale
    batches = [
        (np.array(0, dtype=np.float64), np.array([0.8], dtype=np.float64),),
    ]
    import torch.nn as tnn
    import torch.nn.functional as TF
    model = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    opt = loptim.Adadelta([{'params': [model.p6]}], lr=1.0)
    scaler = GradScaler(init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)
    for s, set_to_none in enumerate([True]):
        opt.zero_grad(set_to_none)
        x, *ys = [lucid.tensor(a) for a in batches[s * 1]]
        loss = loss_fn(model(x), *ys)
        scaler.scale(loss).backward()
        # PyTorch takes the same parameters, gradients and state
        twin = make_model(torch, TF, tnn, None)
        with torch.no_grad():
            for a, b in zip(twin.parameters(), model.parameters()):
                a.copy_(torch.from_numpy(b.detach().numpy()))
                a.grad = None if b.grad is None else torch.from_numpy(b.grad.numpy().copy())
        topt = torch.optim.Adadelta([{'params': [twin.p6]}], lr=1.0)
        sd = opt.state_dict()
        topt.load_state_dict({'param_groups': sd['param_groups'], 'state': {i: {k: torch.from_numpy(v.numpy()) if isinstance(v, lucid.Tensor) else v for k, v in st.items()} for i, st in sd['state'].items()}})
        tscaler = torch.amp.GradScaler('cpu', init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)
        tscaler.load_state_dict(scaler.state_dict())
        tscaler.scale(torch.zeros(()))  # creates its scale from the loaded one
        scaler.step(opt)
        scaler.update()
        tscaler.step(topt)
        tscaler.update()
        assert scaler.get_scale() == tscaler.get_scale()
        for (n, a), b in zip(model.named_parameters(), twin.parameters()):
            close(a, b, 1e-12, f'{n} after step {s}')


def make_model_masked_fill_broadcasts_the_input(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer('m3', L.tensor(np.array([True, False, False], dtype=np.bool_)), persistent=False)
            self.p5 = nn.Parameter(L.tensor(np.array([[-0.8798166310665677]], dtype=np.float64)))
            self.register_buffer('c2_', L.tensor(np.array([-1.3996048977318307], dtype=np.float64)), persistent=False)

        def forward(self, x):
            m3, p5, c2_ = self.m3, self.p5, self.c2_
            v4 = c2_.masked_fill(m3, -1.25)
            v6 = v4 + p5
            return v6
    return Model()


def loss_fn_masked_fill_broadcasts_the_input(L, F):
    def loss_fn(out):
        return out.mean()
    return loss_fn


def test_masked_fill_broadcasts_the_input():
    """masked_fill with a mask wider than the input: PyTorch broadcasts the
    two (out of place); Lucid rejected the mask. (python -m tests.fuzz --seed 23 --count 1)"""
    make_model, make_loss = make_model_masked_fill_broadcasts_the_input, loss_fn_masked_fill_broadcasts_the_input
    batches = [
        (np.array(0.383654989357483, dtype=np.float64),),
    ]
    import torch.nn as tnn
    import torch.nn.functional as TF
    model = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn, tloss_fn = make_loss(lucid, LF), make_loss(torch, TF)
    opt = loptim.SGD([{'params': [model.p5]}], lr=0.01)
    masks = []
    call = 0
    for s, set_to_none in enumerate([True]):
        model.zero_grad(set_to_none)
        twin = make_model(torch, TF, tnn, lambda a, p: a * masks.pop(0))
        with torch.no_grad():
            for a, b in zip(twin.parameters(), model.parameters()):
                a.copy_(torch.from_numpy(b.detach().numpy()))
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            tx, *tys = [torch.from_numpy(a) for a in batches[call]]
            got = loss_fn(model(x), *ys)
            got.backward()
            want = tloss_fn(twin(tx), *tys)
            want.backward()
            close(got, want, 1e-12, f'loss, call {call}')
            for (n, a), b in zip(model.named_parameters(), twin.parameters()):
                close(a.grad, b.grad, 1e-12, f'grad {n}, call {call}')
            call += 1
        opt.step()


def make_model_sub_alpha_with_a_number(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p8_ = nn.Parameter(L.tensor(np.array(-0.10426813727594057, dtype=np.float64)))

        def forward(self, x):
            p8_, = self.p8_,
            v1 = L.sub(x, 0.25, alpha=2)
            v2 = v1.repeat(2)
            v7 = v2.view(6, 1)
            v10 = v7 + p8_
            return v10
    return Model()


def loss_fn_sub_alpha_with_a_number(L, F):
    def loss_fn(out):
        return out.mean()
    return loss_fn


def test_sub_alpha_with_a_number():
    """add/sub with alpha and a Python number as `other` raised a TypeError
    (alpha was applied with the tensor op). (python -m tests.fuzz --seed 39 --count 1)"""
    make_model, make_loss = make_model_sub_alpha_with_a_number, loss_fn_sub_alpha_with_a_number
    batches = [
        (np.array([ 0.46427524134836956, -0.10408021697409559,  0.7163095198772815 ], dtype=np.float64),),
    ]
    import torch.nn as tnn
    import torch.nn.functional as TF
    model = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn, tloss_fn = make_loss(lucid, LF), make_loss(torch, TF)
    opt = loptim.SGD([{'params': [model.p8_]}], lr=0.01)
    masks = []
    call = 0
    for s, set_to_none in enumerate([True]):
        model.zero_grad(set_to_none)
        twin = make_model(torch, TF, tnn, lambda a, p: a * masks.pop(0))
        with torch.no_grad():
            for a, b in zip(twin.parameters(), model.parameters()):
                a.copy_(torch.from_numpy(b.detach().numpy()))
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            tx, *tys = [torch.from_numpy(a) for a in batches[call]]
            got = loss_fn(model(x), *ys)
            got.backward()
            want = tloss_fn(twin(tx), *tys)
            want.backward()
            close(got, want, 1e-12, f'loss, call {call}')
            for (n, a), b in zip(model.named_parameters(), twin.parameters()):
                close(a.grad, b.grad, 1e-12, f'grad {n}, call {call}')
            call += 1
        opt.step()


def make_model_transposed_gemm_operand_make_step(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer('c11_', L.tensor(np.array([[ 0.39,  1.96, -0.55,  0.26,  0.98,  0.86, -1.87,  0.12],
             [-1.03,  0.3 , -0.06,  0.19,  0.21,  0.73,  0.06,  0.12]], dtype=np.float64)), persistent=False)
            self.p10_ = nn.Parameter(L.tensor(np.array([[-0.65,  0.48,  0.47,  0.55, -1.22, -0.06, -1.51, -0.15],
             [ 0.14, -0.13,  0.26,  0.42,  0.  , -0.36, -0.71, -1.28]], dtype=np.float64)))

        def forward(self, x):
            c11_, p10_ = self.c11_, self.p10_
            v13 = (p10_ @ c11_.transpose(-1, -2)) * 0.35355339059327373
            return v13
    return Model()


def loss_fn_transposed_gemm_operand_make_step(L, F):
    def loss_fn(out):
        return out.mean()
    return loss_fn


def test_transposed_gemm_operand_make_step():
    """`p @ c.transpose(-1, -2)` gives the same bits compiled and eager: eager
    matmul takes the transposed view as BLAS's transpose flag, the kernel the
    compiled step's graph pass chooses. (Before views, eager copied the
    transpose and ran the NN kernel, one ulp away: 2.1303000000000005 vs
    2.1303 in float64.) (python -m tests.fuzz --seed 9 --count 1)"""
    make_model, make_loss = make_model_transposed_gemm_operand_make_step, loss_fn_transposed_gemm_operand_make_step
    batches = [
        (np.array(0.44, dtype=np.float64),),
    ]
    eager = make_model(lucid, LF, lnn, LF.dropout)
    compiled = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    step = make_step(compiled, make_loss(lucid, LF))
    opt_e = loptim.SGD([{'params': [eager.p10_]}], lr=0.01)
    opt_c = loptim.SGD([{'params': [compiled.p10_]}], lr=0.01)
    call = 0
    for s, set_to_none in enumerate([True]):
        eager.zero_grad(set_to_none)
        compiled.zero_grad(set_to_none)
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            want = loss_fn(eager(x), *ys)
            want.backward()
            got = step(x, *ys)
            same(got, want, f'loss, call {call}')
            for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
                same(b.grad, a.grad, f'grad {n}, call {call}')
            call += 1
        opt_e.step()
        opt_c.step()
        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
            same(b, a, f'{n} after step {s}')


def make_model_cumsum_gemm_variant(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(L.tensor(np.array([[[0.3, -1.2], [0.7, 0.1], [-0.4, 1.5], [1.1, -0.6],
                                                      [-0.9, 0.2], [0.5, 0.8], [-1.3, 0.4], [0.6, -0.7]]],
                                                    dtype=np.float32)))

        def forward(self, x):
            return L.cumsum(x, 1) * self.p
    return Model()


def loss_fn_cumsum_gemm_variant(L, F):
    def loss_fn(out):
        return out.sum()
    return loss_fn


def _cumsum_gemm_variant_grads():
    x = lucid.tensor(np.array([[[-1., 1.2], [1.6, -1.1], [2., .8], [1.8, -.4], [-1.1, 0.], [-.6, .6], [-1., .4],
                                [2., .4]]], dtype=np.float32))
    eager = make_model_cumsum_gemm_variant(lucid, LF, lnn, LF.dropout)
    compiled = make_model_cumsum_gemm_variant(lucid, LF, lnn, LF.dropout)
    loss_fn = loss_fn_cumsum_gemm_variant(lucid, LF)
    loss_fn(eager(x)).backward()
    make_step(compiled, loss_fn_cumsum_gemm_variant(lucid, LF))(x)
    return compiled.p.grad, eager.p.grad


def test_cumsum_gemm_variant_bitwise():
    """cumsum along a dim that is not the last was a triangular matmul of
    x.transpose(d, -1): eager mode materialized the transposed operand and
    ran one GEMM variant, the compiled graph took the transpose as the GEMM's
    flag and ran another, and the last bit of some sums differed. Eager matmul
    now takes a transposed view as the flag too, so both run the same GEMM;
    and cumsum is now a scan primitive with one kernel for eager and compiled
    runs, so it no longer reaches a GEMM at all.
    (python -m tests.fuzz --seed 1206 --count 1 (make_step))"""
    got, want = _cumsum_gemm_variant_grads()
    same(got, want, "grad p")


def _assert_make_step_is_eager_bitwise(forward, x, p0, loss_fn):
    """A model with one parameter p (initialised to p0) computing forward(x, p):
    make_step's loss and gradient equal eager mode's bit for bit."""
    class Model(lnn.Module):
        def __init__(self):
            super().__init__()
            self.p = lnn.Parameter(lucid.tensor(p0))

        def forward(self, x):
            return forward(x, self.p)

    eager, compiled = Model(), Model()
    want = loss_fn(eager(x))
    want.backward()
    got = make_step(compiled, loss_fn)(x)
    same(got, want, "loss")
    same(compiled.p.grad, eager.p.grad, "grad p")


@pytest.mark.parametrize("form", ["x.transpose(1, 2) @ p", "x.mT.transpose(1, 2).mT @ p", "(x.mT @ p.mT.t()) * 1.0"])
def test_matmul_of_transposed_views_bitwise(form):
    """A transpose feeding a matmul runs the same GEMM variant eagerly and
    compiled (a strided operand passed as the flag, decided from its layout
    at trace time as eagerly): compiled gradients equal eager's bit for bit."""
    rng = np.random.default_rng(3)
    x = lucid.tensor(rng.standard_normal((2, 9, 5)).astype(np.float32))
    p0 = rng.standard_normal((9, 7)).astype(np.float32)
    _assert_make_step_is_eager_bitwise(lambda x, p: eval(form, {"x": x, "p": p}),  # noqa: S307
                                       x, p0, lambda out: (out * out).sum())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form,c_shape,p_shape", [
    ("c @ p.T", (1, 18), (1, 18)),
    ("c @ p.T", (3, 18), (1, 18)),
    ("p.T @ c", (1, 5), (1, 18)),
    ("c.T @ p", (1, 3), (1, 18)),
    ("c * (p @ p.T @ p)", (1, 18), (1, 18)),
    ("(c @ p.T).T @ c", (4, 18), (1, 18)),
    ("c @ p.mT", (2, 1, 18), (2, 1, 18)),
    ("c @ p", (5, 1), (1, 18)),
])
def test_matmul_with_a_size_one_operand_bitwise(form, c_shape, p_shape, dtype):
    """An operand with a size-1 dim has the same memory transposed or not:
    eager mode saw p.T as a contiguous view (no flag), the compiled graph
    folded the transpose into the GEMM (a flag), and BLAS rounded the two
    paths differently (1 ulp in c1 @ p2.T, [1, 18] float64). The CPU kernel
    now makes such a flag canonical, so both give the same bits.
    (python -m tests.fuzz --seed 1226121 --count 1 --family views (make_step),
    and seeds 1253206, 1287381)"""
    rng = np.random.default_rng(7)
    c = lucid.tensor(rng.standard_normal(c_shape).astype(dtype))
    p0 = rng.standard_normal(p_shape).astype(dtype)
    _assert_make_step_is_eager_bitwise(lambda c, p: eval(form, {"c": c, "p": p}),  # noqa: S307
                                       c, p0, lambda out: (out * out).mean())


@pytest.mark.parametrize("form,c_shape,p_shape", [
    ("F.linear(c.transpose(-1, -2), p)", (36, 3), (4, 36)),
    ("F.linear(c.transpose(-1, -2), p, p[:, 0])", (36, 3), (4, 36)),
    ("F.linear(c, p.T)", (5, 6), (6, 4)),
    ("(c @ p).T * c[:, :4].T", (5, 6), (6, 4)),
    ("(c.T @ p.T).T.exp()", (6, 5), (4, 6)),
    ("F.linear(c.mT, p).mT", (2, 36, 3), (4, 36)),
])
def test_gemm_of_transposed_operands_and_cotangents_bitwise(form, c_shape, p_shape):
    """linear() called the Matmul primitive directly, so eager mode copied a
    transposed input to row-major while a compiled step folded the transpose
    into the GEMM's flag: two BLAS paths, 1 ulp apart. It now goes through
    the gemm() that matmul uses, which passes a transposed row-major operand
    as the flag, as the compiled fold does. The forms with a transposed
    cotangent check that the matmul VJP, which calls the primitive with the
    cotangent as autograd hands it over, agrees too (routing it through
    gemm() as well broke conv1d/conv2d: graph soak seeds 1801950, 1802730).
    (python -m tests.fuzz --seed 1536389 --count 1 --family views (make_step, fused_step))"""
    rng = np.random.default_rng(11)
    c = lucid.tensor(rng.standard_normal(c_shape))
    p0 = rng.standard_normal(p_shape)
    _assert_make_step_is_eager_bitwise(lambda c, p: eval(form, {"c": c, "p": p, "F": LF}),  # noqa: S307
                                       c, p0, lambda out: (out * out).mean())


def make_model_state_after_a_skipped_first_fused_step(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p12_ = nn.Parameter(L.tensor(np.array(-1.2999999523162842, dtype=np.float32)))

        def forward(self, x):
            p12_, = self.p12_,
            v1 = x.exp()
            v5 = v1.reshape(1, -1, 2, 2)
            v6 = L.flatten(v5, 2)
            v11 = v6.exp()
            v14 = v11 + p12_
            return v14
    return Model()


def loss_fn_state_after_a_skipped_first_fused_step(L, F):
    def loss_fn(out, y):
        return F.binary_cross_entropy(L.sigmoid(out), y)
    return loss_fn


def test_state_after_a_skipped_first_fused_step():
    """fused_step created the optimizer state when it traced, so after a first
    step skipped by the GradScaler (overflow) state_dict listed untouched
    step-0 state where the eager loop and PyTorch list none. The trace now
    only reserves the buffers; the first step taken creates the state.
    (python -m tests.fuzz --seed 12 --count 1)"""
    make_model, make_loss = make_model_state_after_a_skipped_first_fused_step, loss_fn_state_after_a_skipped_first_fused_step
    batches = [
        (np.array([[-0.9, -1.1],
             [ 1.1, -0.2]], dtype=np.float32), np.array([[[0.9, 0.2, 0.4, 1. ]]], dtype=np.float32),),
    ]
    eager = make_model(lucid, LF, lnn, LF.dropout)
    compiled = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    opt_e = loptim.NAdam([{'params': [eager.p12_]}], lr=0.01)
    opt_c = loptim.NAdam([{'params': [compiled.p12_]}], lr=0.01)
    scaler_e, scaler_c = GradScaler(init_scale=2.0 ** 127, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000), GradScaler(init_scale=2.0 ** 127, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)
    step = fused_step(compiled, make_loss(lucid, LF), opt_c, grad_scaler=scaler_c)
    for s, set_to_none in enumerate([True]):
        x, *ys = [lucid.tensor(a) for a in batches[s * 1]]
        opt_e.zero_grad(set_to_none)
        want = loss_fn(eager(x), *ys)
        scaler_e.scale(want).backward()
        scaler_e.step(opt_e)
        scaler_e.update()
        got = step(x, *ys)
        same(got, want, f'loss, step {s}')
        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
            same(b, a, f'{n} after step {s}')
        se, sc = opt_e.state_dict()['state'], opt_c.state_dict()['state']
        assert se.keys() == sc.keys()
        for i in se:
            assert se[i].keys() == sc[i].keys()
            for k in se[i]:
                same(sc[i][k], se[i][k], f'state[{i}][{k}] after step {s}')
        assert scaler_c.get_scale() == scaler_e.get_scale()


def make_model_bce_of_a_saturated_sigmoid(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p12_ = nn.Parameter(L.tensor(np.array(-1.2999999523162842, dtype=np.float32)))

        def forward(self, x):
            p12_, = self.p12_,
            v1 = x.exp()
            v5 = v1.reshape(1, -1, 2, 2)
            v6 = L.flatten(v5, 2)
            v11 = v6.exp()
            v14 = v11 + p12_
            return v14
    return Model()


def loss_fn_bce_of_a_saturated_sigmoid(L, F):
    def loss_fn(out, y):
        return F.binary_cross_entropy(L.sigmoid(out), y)
    return loss_fn


def test_bce_of_a_saturated_sigmoid():
    """binary_cross_entropy on an input saturated at 1.0 (float32 sigmoid of
    a large logit): the gradient went through the clamped log, 0 * inf = NaN;
    PyTorch's derivative is (x - t) / max((1 - x) x, 1e-12).
    (python -m tests.fuzz --seed 12 --count 1)"""
    make_model, make_loss = make_model_bce_of_a_saturated_sigmoid, loss_fn_bce_of_a_saturated_sigmoid
    batches = [
        (np.array([[-0.9, -1.1],
             [ 1.1, -0.2]], dtype=np.float32), np.array([[[0.9, 0.2, 0.4, 1. ]]], dtype=np.float32),),
    ]
    import torch.nn as tnn
    import torch.nn.functional as TF
    model = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn, tloss_fn = make_loss(lucid, LF), make_loss(torch, TF)
    opt = loptim.SGD([{'params': [model.p12_]}], lr=0.01)
    masks = []
    call = 0
    for s, set_to_none in enumerate([True]):
        model.zero_grad(set_to_none)
        twin = make_model(torch, TF, tnn, lambda a, p: a * masks.pop(0))
        with torch.no_grad():
            for a, b in zip(twin.parameters(), model.parameters()):
                a.copy_(torch.from_numpy(b.detach().numpy()))
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            tx, *tys = [torch.from_numpy(a) for a in batches[call]]
            got = loss_fn(model(x), *ys)
            got.backward()
            want = tloss_fn(twin(tx), *tys)
            want.backward()
            close(got, want, 1.239776611328125e-05, f'loss, call {call}')
            for (n, a), b in zip(model.named_parameters(), twin.parameters()):
                close(a.grad, b.grad, 1.239776611328125e-05, f'grad {n}, call {call}')
            call += 1
        opt.step()


def make_model_gradscaler_growth_stops_below_overflow(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p9_ = nn.Parameter(L.tensor(np.array([[[-0.6]]], dtype=np.float32)))

        def forward(self, x):
            p9_, = self.p9_,
            return p9_
    return Model()


def loss_fn_gradscaler_growth_stops_below_overflow(L, F):
    def loss_fn(out):
        return (out * out).sum()
    return loss_fn


def test_gradscaler_growth_stops_below_overflow():
    """GradScaler growing a scale of 2**127: PyTorch keeps the scale when the
    grown one would overflow float32; Lucid's became inf (and every later step
    overflowed). (python -m tests.fuzz --seed 112 --count 1)"""
    make_model, make_loss = make_model_gradscaler_growth_stops_below_overflow, loss_fn_gradscaler_growth_stops_below_overflow
    batches = [
        (np.array(-0.20000000298023224, dtype=np.float32),),
        (np.array(-1.5, dtype=np.float32),),
    ]
    import torch.nn as tnn
    import torch.nn.functional as TF
    model = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    opt = loptim.NAdam([{'params': [model.p9_]}], lr=0.01)
    scaler = GradScaler(init_scale=1.7014118346046923e+38, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
    for s, set_to_none in enumerate([True, True]):
        opt.zero_grad(set_to_none)
        x, *ys = [lucid.tensor(a) for a in batches[s * 1]]
        loss = loss_fn(model(x), *ys)
        scaler.scale(loss).backward()
        # PyTorch takes the same parameters, gradients and state
        twin = make_model(torch, TF, tnn, None)
        with torch.no_grad():
            for a, b in zip(twin.parameters(), model.parameters()):
                a.copy_(torch.from_numpy(b.detach().numpy()))
                a.grad = None if b.grad is None else torch.from_numpy(b.grad.numpy().copy())
        topt = torch.optim.NAdam([{'params': [twin.p9_]}], lr=0.01)
        sd = opt.state_dict()
        topt.load_state_dict({'param_groups': sd['param_groups'], 'state': {i: {k: torch.from_numpy(np.array(v)) for k, v in st.items()} for i, st in sd['state'].items()}})
        tparams = [q for g in topt.param_groups for q in g['params']]
        for i, st in sd['state'].items():  # 0-d state keeps its dtype, as in a fresh PyTorch run
            for k, v in st.items():
                if np.ndim(v) == 0:
                    topt.state[tparams[int(i)]][k] = torch.tensor(np.array(v))
        for g in topt.param_groups:  # PyTorch's single-tensor implementation (its CPU default)
            g['foreach'] = False
            if 'fused' in g:
                g['fused'] = None
        tscaler = torch.amp.GradScaler('cpu', init_scale=1.7014118346046923e+38, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
        tscaler.load_state_dict(scaler.state_dict())
        tscaler.scale(torch.zeros(()))  # creates its scale from the loaded one
        scaler.step(opt)
        scaler.update()
        tscaler.step(topt)
        tscaler.update()
        assert scaler.get_scale() == tscaler.get_scale()
        for (n, a), b in zip(model.named_parameters(), twin.parameters()):
            close(a, b, 9.5367431640625e-07, f'{n} after step {s}')
        for i, st in opt.state_dict()['state'].items():
            for k, v in st.items():
                close(lucid.tensor(np.array(v)), topt.state[tparams[int(i)]][k], 9.5367431640625e-07, f'state[{i}][{k}]')


def make_model_one_hot_of_a_constant_in_a_compiled_step(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer('i10', L.tensor(np.array([4], dtype=np.int64)), persistent=False)
            self.register_buffer('c12', L.tensor(np.array([[-1.],
             [-1.],
             [ 0.],
             [-0.],
             [-2.]], dtype=np.float64)), persistent=False)
            self.p19 = nn.Parameter(L.tensor(np.array([[-1.]], dtype=np.float64)))

        def forward(self, x):
            i10, c12, p19 = self.i10, self.c12, self.p19
            v11 = F.one_hot(i10, 5)
            v13 = v11.to(c12.dtype) @ c12
            v22 = F.linear(v13, p19)
            return v22
    return Model()


def loss_fn_one_hot_of_a_constant_in_a_compiled_step(L, F):
    def loss_fn(out):
        return (out * out).sum()
    return loss_fn


def test_one_hot_of_a_constant_in_a_compiled_step():
    """one_hot of a constant index inside a compiled step: its range check
    ran amin/amax, which the active trace recorded instead of running, and
    reading their value raised. (python -m tests.fuzz --seed 106 --count 1)"""
    make_model, make_loss = make_model_one_hot_of_a_constant_in_a_compiled_step, loss_fn_one_hot_of_a_constant_in_a_compiled_step
    batches = [
        (np.array(-1, dtype=np.float64),),
    ]
    eager = make_model(lucid, LF, lnn, LF.dropout)
    compiled = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    step = make_step(compiled, make_loss(lucid, LF))
    opt_e = loptim.SGD([{'params': [eager.p19]}], lr=0.01)
    opt_c = loptim.SGD([{'params': [compiled.p19]}], lr=0.01)
    call = 0
    for s, set_to_none in enumerate([True]):
        eager.zero_grad(set_to_none)
        compiled.zero_grad(set_to_none)
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            want = loss_fn(eager(x), *ys)
            want.backward()
            got = step(x, *ys)
            same(got, want, f'loss, call {call}')
            for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
                same(b.grad, a.grad, f'grad {n}, call {call}')
            call += 1
        opt_e.step()
        opt_c.step()
        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
            same(b, a, f'{n} after step {s}')


def make_model_rprop_state_made_at_trace_time(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p8_ = nn.Parameter(L.tensor(np.array([[[-1.]]], dtype=np.float32)))

        def forward(self, x):
            p8_, = self.p8_,
            return p8_
    return Model()


def loss_fn_rprop_state_made_at_trace_time(L, F):
    def loss_fn(out):
        return (out * out).sum()
    return loss_fn


def test_rprop_state_made_at_trace_time():
    """The same cause as the test above: the first step overflows and is
    skipped, StepLR halves the lr, and the first step taken started Rprop's
    step_size from the traced call's lr (fused_step) instead of the current
    one (eager loop, PyTorch). (python -m tests.fuzz --seed 189 --count 1)"""
    make_model, make_loss = make_model_rprop_state_made_at_trace_time, loss_fn_rprop_state_made_at_trace_time
    batches = [
        (np.array(0, dtype=np.float32),),
        (np.array(0, dtype=np.float32),),
    ]
    eager = make_model(lucid, LF, lnn, LF.dropout)
    compiled = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    opt_e = loptim.Rprop([{'params': [eager.p8_]}], lr=0.001)
    opt_c = loptim.Rprop([{'params': [compiled.p8_]}], lr=0.001)
    scaler_e, scaler_c = GradScaler(init_scale=1.7014118346046923e+38, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000), GradScaler(init_scale=1.7014118346046923e+38, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)
    step = fused_step(compiled, make_loss(lucid, LF), opt_c, grad_scaler=scaler_c)
    sched_e, sched_c = loptim.lr_scheduler.StepLR(opt_e, step_size=1, gamma=0.5), loptim.lr_scheduler.StepLR(opt_c, step_size=1, gamma=0.5)
    for s, set_to_none in enumerate([True, True]):
        x, *ys = [lucid.tensor(a) for a in batches[s * 1]]
        opt_e.zero_grad(set_to_none)
        want = loss_fn(eager(x), *ys)
        scaler_e.scale(want).backward()
        scaler_e.step(opt_e)
        scaler_e.update()
        got = step(x, *ys)
        same(got, want, f'loss, step {s}')
        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
            same(b, a, f'{n} after step {s}')
        se, sc = opt_e.state_dict()['state'], opt_c.state_dict()['state']
        assert se.keys() == sc.keys()
        for i in se:
            assert se[i].keys() == sc[i].keys()
            for k in se[i]:
                same(sc[i][k], se[i][k], f'state[{i}][{k}] after step {s}')
        assert scaler_c.get_scale() == scaler_e.get_scale()
        sched_e.step()
        sched_c.step()


def make_model_sparse_adam_on_a_0d_parameter(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p7 = nn.Parameter(L.tensor(np.array(0.800000011920929, dtype=np.float32)))

        def forward(self, x):
            p7, = self.p7,
            return p7
    return Model()


def loss_fn_sparse_adam_on_a_0d_parameter(L, F):
    def loss_fn(out, y):
        return F.mse_loss(out, y)
    return loss_fn


def test_sparse_adam_on_a_0d_parameter():
    """fused_step with SparseAdam on a 0-d float32 parameter: the rule's
    scalars were float64 feeds, and a 0-d float64 tensor promotes a 0-d float32
    one, so the moments were computed in float64 (one ulp off the eager step,
    whose numbers round to float32). (python -m tests.fuzz --seed 167 --count 1)"""
    make_model, make_loss = make_model_sparse_adam_on_a_0d_parameter, loss_fn_sparse_adam_on_a_0d_parameter
    batches = [
        (np.array(0.30000001192092896, dtype=np.float32), np.array(-0.800000011920929, dtype=np.float32),),
    ]
    eager = make_model(lucid, LF, lnn, LF.dropout)
    compiled = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    opt_e = loptim.SparseAdam([{'params': [eager.p7]}], lr=0.01)
    opt_c = loptim.SparseAdam([{'params': [compiled.p7]}], lr=0.01)
    step = fused_step(compiled, make_loss(lucid, LF), opt_c)
    for s, set_to_none in enumerate([True]):
        x, *ys = [lucid.tensor(a) for a in batches[s * 1]]
        opt_e.zero_grad(set_to_none)
        want = loss_fn(eager(x), *ys)
        want.backward()
        opt_e.step()
        got = step(x, *ys)
        same(got, want, f'loss, step {s}')
        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
            same(b, a, f'{n} after step {s}')
        se, sc = opt_e.state_dict()['state'], opt_c.state_dict()['state']
        assert se.keys() == sc.keys()
        for i in se:
            assert se[i].keys() == sc[i].keys()
            for k in se[i]:
                same(sc[i][k], se[i][k], f'state[{i}][{k}] after step {s}')


def make_model_std_and_norm_at_zero(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p4_ = nn.Parameter(L.tensor(np.array([-1.], dtype=np.float32)))

        def forward(self, x):
            p4_, = self.p4_,
            v8 = L.std(p4_, 0, correction=0, keepdim=False)
            return v8
    return Model()


def loss_fn_std_and_norm_at_zero(L, F):
    def loss_fn(out):
        return (out * out).sum()
    return loss_fn


def test_std_and_norm_at_zero():
    """std of a constant (here one element, correction 0) and norm of a zero
    vector: PyTorch's derivative is 0 there; Lucid's went through sqrt/pow at
    0 and gave 0 * inf = NaN (also in F.normalize of a zero row).
    (python -m tests.fuzz --seed 650 --count 1)"""
    make_model, make_loss = make_model_std_and_norm_at_zero, loss_fn_std_and_norm_at_zero
    batches = [
        (np.array(-1, dtype=np.float32),),
    ]
    import torch.nn as tnn
    import torch.nn.functional as TF
    model = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn, tloss_fn = make_loss(lucid, LF), make_loss(torch, TF)
    opt = loptim.SGD([{'params': [model.p4_]}], lr=0.1)
    masks = []
    call = 0
    for s, set_to_none in enumerate([True]):
        model.zero_grad(set_to_none)
        twin = make_model(torch, TF, tnn, lambda a, p: a * masks.pop(0))
        with torch.no_grad():
            for a, b in zip(twin.parameters(), model.parameters()):
                a.copy_(torch.from_numpy(b.detach().numpy()))
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            tx, *tys = [torch.from_numpy(a) for a in batches[call]]
            got = loss_fn(model(x), *ys)
            got.backward()
            want = tloss_fn(twin(tx), *tys)
            want.backward()
            close(got, want, 8.58306884765625e-06, f'loss, call {call}')
            for (n, a), b in zip(model.named_parameters(), twin.parameters()):
                close(a.grad, b.grad, 8.58306884765625e-06, f'grad {n}, call {call}')
            call += 1
        opt.step()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["hardtanh", "relu6", "hardsigmoid", "hardswish", "softplus", "logsigmoid"])
def test_activation_derivatives_at_their_corners(fn, dtype):
    """PyTorch's derivative at the corners: hardtanh/relu6/hardsigmoid are
    flat at their clamp points (clamp's derivative is 1 there), hardswish is
    0 at -3 and 1 at 3, softplus at beta*x == threshold takes the smooth
    branch (minimum split it in half between tied operands). Found while
    shrinking python -m tests.fuzz --seed 664 --count 1."""
    points = [-20.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 20.0, -2.5, 0.5, 2.5]
    got, want = [], []
    for lib, out in ((lucid, got), (torch, want)):
        x = lib.tensor(points, dtype=getattr(lib, dtype), requires_grad=True)
        getattr(lib.nn.functional, fn)(x).sum().backward()
        out.append(x.grad.numpy().astype(np.float64))
    # hardsigmoid: PyTorch's float64 derivative is float32(1/6); Lucid's is 1/6
    rtol = 1e-6 if (fn, dtype) == ("hardsigmoid", "float64") else 1e-6 if dtype == "float32" else 1e-15
    np.testing.assert_allclose(got[0], want[0], rtol=rtol, atol=1e-7 if dtype == "float32" else 1e-15)


def make_model_frozen_parameter_rebound_through_a_detached_read(L, F, nn, drop):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.p5 = nn.Parameter(L.tensor(np.array([[0.1]], dtype=np.float32)), requires_grad=False)
            self.p11_ = nn.Parameter(L.tensor(np.array(-1.2999999523162842, dtype=np.float32)))

        def forward(self, x):
            p5, p11_ = self.p5, self.p11_
            v8 = L.logsumexp(p5, -2, keepdim=False)
            v13 = v8 + p11_
            return v13
    return Model()


def loss_fn_frozen_parameter_rebound_through_a_detached_read(L, F):
    def loss_fn(out):
        return out.mean()
    return loss_fn


def test_frozen_parameter_rebound_through_a_detached_read():
    """A frozen parameter read through a detached handle (logsumexp's max) was
    captured with that temporary handle as its only owner; after `p.data = ...`
    the cached executable still read the old memory (stale loss, no error).
    Every tensor a trace reads a capture through now owns it.
    (python -m tests.fuzz --seed 401753 --count 1 (make_step))"""
    make_model = make_model_frozen_parameter_rebound_through_a_detached_read
    make_loss = loss_fn_frozen_parameter_rebound_through_a_detached_read
    batches = [
        (np.array([-1.], dtype=np.float32),),
        (np.array([1.9], dtype=np.float32),),
        (np.array([-2.2], dtype=np.float32),),
    ]
    eager = make_model(lucid, LF, lnn, LF.dropout)
    compiled = make_model(lucid, LF, lnn, LF.dropout)
    loss_fn = make_loss(lucid, LF)
    step = make_step(compiled, make_loss(lucid, LF))
    opt_e = loptim.SGD([{'params': [eager.p5, eager.p11_]}], lr=0.01)
    opt_c = loptim.SGD([{'params': [compiled.p5, compiled.p11_]}], lr=0.01)
    call = 0
    for s, set_to_none in enumerate([True, True, True]):
        if s == 2:
            eager.p5.data = eager.p5.data * 2.0
            compiled.p5.data = compiled.p5.data * 2.0
        eager.zero_grad(set_to_none)
        compiled.zero_grad(set_to_none)
        for _ in range(1):
            x, *ys = [lucid.tensor(a) for a in batches[call]]
            want = loss_fn(eager(x), *ys)
            want.backward()
            got = step(x, *ys)
            same(got, want, f'loss, call {call}')
            for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
                same(b.grad, a.grad, f'grad {n}, call {call}')
            call += 1
        opt_e.step()
        opt_c.step()
        for (n, a), b in zip(eager.named_parameters(), compiled.parameters()):
            same(b, a, f'{n} after step {s}')


@pytest.mark.parametrize("api", ["train_step", "fused_step"])
@pytest.mark.parametrize("k", [2, 3])
def test_accumulating_into_two_parameters_given_one_gradient(api, k):
    """python -m tests.fuzz --seed 812037 --count 1 --oracles train_step (also
    812881, 810471): ``p + q`` with accumulate=k. The first micro-batch's
    backward hands add's one gradient tensor to both leaves; under the
    tracer, AccumulateGrad gave each leaf a detached handle of it (now a
    copy), and a detached handle shares the traced storage, so the second micro-batch's
    in-place `p.grad += g` also reaches q.grad, which then adds g again:
    with k=2 each gradient is 1.5x the eager one, with k=3 5/3x. Silent
    (Rprop shows it only in its `prev` state); eager mode and make_step
    (one backward per executable) are right."""
    def run(compiled):
        p = lnn.Parameter(lucid.tensor(np.array([-1.0, 2.0])))
        q = lnn.Parameter(lucid.tensor(np.array([0.5, 0.0])))
        model = lnn.Module()
        model.p, model.q = p, q
        model.forward = lambda x: (p + q) * x
        opt = loptim.SGD([p, q], lr=1.0)
        xs = lucid.tensor(np.array([[1.0, 2.0], [3.0, 5.0], [7.0, 11.0]])[:k])
        loss_fn = lambda out: out.sum()  # noqa: E731
        if compiled:
            step = (train_step(lambda x: loss_fn(model(x)), opt, accumulate=k) if api == "train_step"
                    else fused_step(model, loss_fn, opt, accumulate=k))
            got = step(xs)
        else:
            opt.zero_grad(True)
            losses = []
            for m in range(k):
                loss = loss_fn(model(xs[m]))
                (loss / k).backward()
                losses.append(loss.detach())
            opt.step()
            got = lucid.stack(losses, 0).mean()
        return got, p, q
    want, pe, qe = run(False)
    got, pc, qc = run(True)
    same(got, want, "loss")
    same(pc, pe, "p after the step")
    same(qc, qe, "q after the step")


@pytest.mark.parametrize("api", ["make_step", "fused_step", "train_step"])
def test_trainable_parameter_rebound_through_a_detached_read(api):
    """python -m tests.fuzz --seed 821401 --count 1 (make_step, fused_step and
    train_step all flag it): a trainable parameter read through
    ``p.detach()`` and rebound with ``p.data = p.data * 2`` between calls.
    The compiled step's loss and gradients used the old values (silently:
    no retrace, no error), as only the detached handle, gone after the
    trace, owned the captured memory; eager mode uses the new ones."""
    class Model(lnn.Module):
        def __init__(self):
            super().__init__()
            self.p = lnn.Parameter(lucid.tensor([1.0, 2.0]))
            self.q = lnn.Parameter(lucid.tensor([1.0, 1.0]))

        def forward(self, x):
            return lucid.tanh((self.p.detach() * x).sum()) * (self.q * x).sum()

    compiled, eager = Model(), Model()
    loss_fn = lambda out: out  # noqa: E731
    opt = loptim.SGD(compiled.parameters(), lr=0.0)
    step = {"make_step": lambda: make_step(compiled, loss_fn), "fused_step": lambda: fused_step(compiled, loss_fn, opt),
            "train_step": lambda: train_step(lambda x: compiled(x), opt)}[api]()
    x = lucid.tensor([1.0, 1.0])
    for it in range(2):
        if it:
            compiled.p.data = compiled.p.data * 2.0
            eager.p.data = eager.p.data * 2.0
        compiled.zero_grad()
        eager.zero_grad()
        want = eager(x)
        want.backward()
        same(step(x), want, f"loss, call {it}")
        if api == "make_step":
            same(compiled.q.grad, eager.q.grad, f"grad q, call {it}")


def test_linear_of_a_moved_dim_input_bitwise():
    """graph soak seed 1912658 (make_step, fused_step, train_step): F.linear(x.movedim(0, 2), W),
    float64, gradients 1 ulp apart. linear's own flattening reshape merged the permuted dims into
    a view whose transpose is row-major, which eager mode passed to the GEMM as a flag while the
    compiled step copied it (it folded only a Permute right before the Matmul). The compiled step
    now runs the GEMM variants the trace recorded, decided from layouts as eagerly."""
    rng = np.random.default_rng(0)
    x = lucid.tensor(rng.standard_normal((8, 8, 5)))
    w0 = rng.standard_normal((1, 8))  # one output: BLAS's matrix-vector paths differ by the flag
    _assert_make_step_is_eager_bitwise(lambda x, p: LF.linear(lucid.movedim(x, 0, 2), p), x, w0,
                                       lambda out: out.mean())


@pytest.mark.parametrize("form,x_shape,p_shape", [
    ("x.permute(2, 0, 1).reshape(7, -1) @ p", (5, 6, 7), (30, 9)),
    ("x.unsqueeze(-1).transpose(0, 2)[0] @ p", (23, 31), (23, 9)),
    ("x.permute(1, 0, 2).reshape(-1, 7) @ p", (5, 6, 7), (7, 9)),
    ("x[:, :37].T @ p", (53, 61), (53, 29)),
    ("p @ x.T[:37].T", (53, 61), (29, 53)),
    ("x[::2] @ p.expand(3, 9, 7).transpose(-1, -2)", (6, 5, 7), (9, 7)),
])
def test_matmul_of_a_users_strided_operand_bitwise(form, x_shape, p_shape):
    """Transposed operands the user reached through reshapes, slices and
    index views: eager mode passes one to BLAS as a flag exactly when its
    layout is a transposed row-major one, and the compiled step used to
    decide by the graph's structure instead (a Permute right before the
    Matmul, folded into a flag; the first two forms differed in float64's
    last bit). It now runs the variants the trace recorded from the same
    layouts."""
    rng = np.random.default_rng(5)
    x = lucid.tensor(rng.standard_normal(x_shape))
    _assert_make_step_is_eager_bitwise(lambda x, p: eval(form, {"x": x, "p": p}),  # noqa: S307
                                       x, rng.standard_normal(p_shape), lambda out: (out * out).mean())


def test_layer_norm_gradient_of_a_near_constant_row_matches_torch():
    """graph soak seed 1915435 ([torch], step 1): mean(layer_norm(p + c)) has gradient 0 in exact
    arithmetic; float32 Lucid gave 9e-4 where PyTorch gives 1e-8 (rows 1.7958727, 1.7933964): the
    backward formed x_hat * mean(g * x_hat), whose rounding 1/std amplified, where PyTorch's uncentred
    sums cancel against the saved mean."""
    row = np.array([1.7958727, 1.7933964], np.float32)
    grads = []
    for m, f in ((lucid, LF), (torch, torch.nn.functional)):
        x = m.tensor(row, requires_grad=True)
        f.layer_norm(x, (2,)).mean().backward()
        grads.append(np.asarray(x.grad.detach().numpy(), np.float64))
    np.testing.assert_allclose(grads[0], grads[1], rtol=0, atol=1e-5)


def test_sparse_adam_skips_a_gradient_entry_that_unscales_to_zero():
    """graph soak seed 1917288 ([torch_optim], step 1): with init_scale 2**127 a scaled gradient entry
    of 1.1e-7 unscales to 0 in float32. SparseAdam skips it (its sparse entries are the non-zero
    entries of the gradient the step sees); the oracle had built PyTorch's sparse gradient from the
    scaled one, which keeps the entry. Moments and parameters agree with torch fed the unscaled
    gradient's non-zeros, and the underflowed entry is left alone."""
    scale = 2.0 ** 127
    first = np.array([[0.5, -0.25], [0.125, 1.0]], np.float32) * np.float32(scale)
    second = np.array([[0.5, -0.25], [0.0, 1.0]], np.float32) * np.float32(scale)
    second[1, 0] = 1.1e-7  # unscales to 0
    p = lnn.Parameter(lucid.tensor([[1.0, 2.0], [3.0, 4.0]]))
    t = torch.nn.Parameter(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    opt, topt = loptim.SparseAdam([p], lr=0.1), torch.optim.SparseAdam([t], lr=0.1)
    scaler = GradScaler(init_scale=scale, growth_interval=1000)
    for g in (first, second):
        scaler.scale(lucid.tensor(1.0))  # the step's scaled loss: unscale_/step need it, as in torch
        p.grad = lucid.tensor(g)
        scaler.step(opt)
        scaler.update()
        unscaled = g * np.float32(1 / scale)
        t.grad = torch.from_numpy(unscaled).to_sparse()
        topt.step()
        close(p, t, 2.0 ** -22, "param")
        for k in ("exp_avg", "exp_avg_sq"):
            close(opt.state[p][k], topt.state[t][k], 2.0 ** -22, k)
    assert float(p.detach().numpy()[1, 0]) == float(t.detach().numpy()[1, 0])
    assert np.float32(1.1e-7) * np.float32(1 / scale) == 0  # the premise: the entry underflows
