"""Autograd corners where Lucid once differed from PyTorch (found by the
``autograd`` family of tests.fuzz.semantics): each case runs the same code
with ``T = torch`` and ``T = lucid`` and compares what it observes."""
import warnings

import numpy as np
import pytest
import torch

import lucid


def observe(value):
    """A library-neutral picture: tensors as (dtype name, shape, requires_grad,
    values), exceptions as the exception object itself."""
    if isinstance(value, (torch.Tensor, lucid.Tensor)):
        return ("tensor", str(value.dtype).rsplit(".", 1)[-1], tuple(value.shape), value.requires_grad,
                np.asarray(value.detach().double().numpy()))
    if isinstance(value, (tuple, list)):
        return tuple(observe(v) for v in value)
    if isinstance(value, dict):
        return {k: observe(v) for k, v in value.items()}
    return value


def same(lucid_value, torch_value):
    if isinstance(torch_value, BaseException):
        assert isinstance(lucid_value, type(torch_value)), (lucid_value, torch_value)
        return
    if isinstance(torch_value, tuple) and torch_value and torch_value[0] == "tensor":
        assert isinstance(lucid_value, tuple) and lucid_value[:4] == torch_value[:4], (lucid_value, torch_value)
        np.testing.assert_allclose(lucid_value[4], torch_value[4], rtol=1e-6, atol=1e-9)
        return
    if isinstance(torch_value, tuple):
        assert isinstance(lucid_value, tuple) and len(lucid_value) == len(torch_value), (lucid_value, torch_value)
        for a, b in zip(lucid_value, torch_value):
            same(a, b)
        return
    if isinstance(torch_value, dict):
        assert lucid_value.keys() == torch_value.keys()
        for k in torch_value:
            same(lucid_value[k], torch_value[k])
        return
    assert lucid_value == torch_value


def attempt(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        return e


def both(case):
    """Runs case(T) for T = torch and T = lucid and checks they observe the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = observe(case(torch))
        got = observe(case(lucid))
    same(got, expected)


def flags(t):
    return (t.requires_grad, t.is_leaf, t.grad_fn is None)


# ------------------------------------------------------------ autograd.grad

GRAD_CALLS = {
    "materialize_grads": lambda T, o, x, y: T.autograd.grad(o, [x, y], materialize_grads=True),
    "materialize_grads create_graph": lambda T, o, x, y: T.autograd.grad(o, [y], materialize_grads=True,
                                                                         create_graph=True),
    "materialize_grads with allow_unused=False": lambda T, o, x, y: T.autograd.grad(o, [y], allow_unused=False,
                                                                                    materialize_grads=True),
    "only_inputs": lambda T, o, x, y: T.autograd.grad(o, x, only_inputs=False),
    "no inputs": lambda T, o, x, y: T.autograd.grad(o, []),
    "unused input": lambda T, o, x, y: T.autograd.grad(o, [x, y]),
    "grad_outputs of another shape": lambda T, o, x, y: T.autograd.grad(o, x, grad_outputs=T.ones(5)),
    "grad_outputs not a tensor": lambda T, o, x, y: T.autograd.grad(o, x, grad_outputs=[1.0]),
    "grad_outputs of another dtype": lambda T, o, x, y: T.autograd.grad(o, x, grad_outputs=T.tensor(2.0,
                                                                                                    dtype=T.float64)),
    "more grad_outputs than outputs": lambda T, o, x, y: T.autograd.grad(o, x, grad_outputs=[None, T.ones(2)]),
    "dict inputs": lambda T, o, x, y: T.autograd.grad(o, {"x": x, "y": y}, allow_unused=True),
    "batched grad_outputs": lambda T, o, x, y: T.autograd.grad(x * x, x, grad_outputs=T.eye(3),
                                                               is_grads_batched=True),
    "non-scalar output without grad_outputs": lambda T, o, x, y: T.autograd.grad(x * 2, x),
    "output that needs no grad": lambda T, o, x, y: T.autograd.grad(x.detach().sum(), x),
}


@pytest.mark.parametrize("call", list(GRAD_CALLS), ids=list(GRAD_CALLS))
def test_grad_arguments(call):
    def case(T):
        x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = T.tensor([0.5, 0.5, 0.5], requires_grad=True)
        o = (x * x).sum()
        r = attempt(lambda: GRAD_CALLS[call](T, o, x, y))
        listed = r.values() if isinstance(r, dict) else r if isinstance(r, tuple) else ()
        return r, [flags(g) for g in listed if g is not None]

    both(case)


@pytest.mark.parametrize("call", ["backward(gradient=wrong shape)", "backward(gradient=float64)",
                                  "autograd.backward(gradient=[])", "backward() of a non-scalar"])
def test_backward_gradients(call):
    def case(T):
        x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x * x
        run = {"backward(gradient=wrong shape)": lambda: y.backward(T.ones(2)),
               "backward(gradient=float64)": lambda: y.backward(T.ones(3, dtype=T.float64)),
               "autograd.backward(gradient=[])": lambda: T.autograd.backward([y.sum()], []),
               "backward() of a non-scalar": lambda: y.backward()}[call]
        return attempt(run), x.grad

    both(case)


# ------------------------------------------------------------ .grad and hooks

@pytest.mark.parametrize("value", ["T.ones(7)", "T.ones(3, dtype=T.float64)", "T.ones(3, dtype=T.int64)", "5.0",
                                   "T.ones(1, 3)", "None"])
def test_grad_assignment(value):
    def case(T):
        x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        e = attempt(lambda: setattr(x, "grad", eval(value, {"T": T})))
        (x * 3).sum().backward()
        return e, x.grad

    both(case)


def test_post_accumulate_grad_hook_must_return_none():
    def case(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(2))
        return attempt(lambda: (x * 3).sum().backward())

    both(case)


def test_accumulators_run_as_soon_as_ready():
    # A leaf's hooks and .grad are done before the next node runs (PyTorch's
    # accumulators have the highest priority), whatever order they were made in.
    def case(T):
        seen = []
        x = T.tensor([1.0, 2.0], requires_grad=True)
        c = T.tensor([3.0, 4.0], requires_grad=True)
        x.register_hook(lambda g: seen.append(("x", g.sum().item())))
        c.register_post_accumulate_grad_hook(lambda p: seen.append(("c", p.grad.sum().item())))
        y = (x * c).exp()
        y.register_hook(lambda g: seen.append(("y", None)))
        (y.sum() + (c * 2).sum()).backward()
        return seen

    both(case)


@pytest.mark.parametrize("stop", ["requires_grad_(False)", "detach_()"])
def test_leaf_that_stopped_requiring_grad_gets_none(stop):
    def case(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([3.0, 4.0], requires_grad=True)
        y = (x * w).sum()
        getattr(x, stop.split("(")[0])(*([False] if "False" in stop else []))
        y.backward()
        return x.grad, w.grad

    both(case)


# ------------------------------------------------------------ grad modes

@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled(False)"])
def test_views_made_without_grad_mode(mode):
    # A view of a tensor that requires grad requires grad too, made in any
    # mode; made without grad mode it is a leaf of its own, and an in-place
    # write to it under grad mode is refused.
    def case(T):
        x = T.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
        w = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        ctx = {"no_grad": T.no_grad, "inference_mode": T.inference_mode,
               "set_grad_enabled(False)": lambda: T.set_grad_enabled(False)}[mode]
        with ctx():
            views = [x[0], x.view(-1), x.t(), x[...], x.reshape(4)]
            copies = [x * 1, x.detach(), x.clone()]
            written = w.reshape(-1)[0:1].zero_()
        # Asking for the history of a view made without grad mode after a
        # write to its memory is an error, also when the write was made
        # without grad mode.
        out = [attempt(lambda v=v: flags(v)) for v in views + copies + [written]]
        out.append(attempt(lambda: views[0].mul_(2)))
        out.append(attempt(lambda: (views[1] * 2).sum().backward()))
        out.append(attempt(lambda: views[1].backward(T.ones(4))))
        out.append(attempt(lambda: T.autograd.grad(views[1].sum(), x)))
        with ctx():
            nonleaf_view = (x * 2).view(-1)
        out.append(attempt(lambda: nonleaf_view.backward(T.ones(4))))
        return out, views[1].grad, x.grad

    both(case)


NESTINGS = [("inference_mode()", "enable_grad()"), ("inference_mode()", "set_grad_enabled(True)"),
            ("no_grad()", "inference_mode(False)"), ("inference_mode()", "inference_mode(False)"),
            ("inference_mode()", "enable_grad()", "inference_mode(False)"), ("enable_grad()", "inference_mode()"),
            ("set_grad_enabled(False)", "inference_mode()", "no_grad()")]


@pytest.mark.parametrize("nesting", NESTINGS, ids=[" in ".join(reversed(n)) for n in NESTINGS])
def test_grad_mode_nesting(nesting):
    # Inference mode records nothing whatever the grad mode says inside it
    # (though is_grad_enabled() reports that mode); inference_mode(False)
    # turns the grad mode on.
    def case(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        seen = []

        def level(k):
            if k == len(nesting):
                return
            with eval("T." + nesting[k], {"T": T}):
                seen.append(((x * 2).requires_grad, T.is_grad_enabled(), T.is_inference_mode_enabled()))
                level(k + 1)
            seen.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))

        level(0)
        return seen

    both(case)


# ------------------------------------------------------------ retained grads, Functions

def test_retained_grads_accumulate():
    # Over backward() and autograd.grad() alike, out of place.
    def case(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        v = x * 2
        v.retain_grad()
        seen = []
        (v * 3).sum().backward(retain_graph=True)
        first = v.grad
        seen.append(v.grad)
        (v * 5).sum().backward(retain_graph=True)
        seen.append(v.grad)
        T.autograd.grad((v * 7).sum(), x)
        seen.append(v.grad)
        return seen, first

    both(case)


@pytest.mark.parametrize("once", [False, True])
def test_function_saved_output_keeps_its_history_under_create_graph(once):
    # A Function that saves its output: a backward recording history sees the
    # output with its grad_fn, so the gradient differentiates again
    # (once_differentiable: it does not).
    def case(T):
        def backward(ctx, g):
            out, b = ctx.saved_tensors
            return g * out, g * out / b

        class F(T.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                out = a.exp() * b
                ctx.save_for_backward(out, b)
                return out

        F.backward = staticmethod(T.autograd.function.once_differentiable(backward) if once else backward)
        x = T.tensor([0.5, -1.0], requires_grad=True)
        y = T.tensor([2.0, 3.0], requires_grad=True)
        (gx,) = T.autograd.grad(F.apply(x, y).sum(), [x], create_graph=True)
        second = attempt(lambda: T.autograd.grad((gx ** 2).sum(), [x, y], allow_unused=True))
        return gx, flags(gx), second

    both(case)


def test_grad_runs_only_the_nodes_leading_to_its_inputs():
    # Nodes off every path to the inputs neither run (their hooks are not
    # called) nor free what they saved (a later backward still works).
    def case(T):
        seen = []
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = T.tensor([3.0, 4.0], requires_grad=True)
        a = x.exp()
        a.register_hook(lambda g: seen.append("a"))
        b = y * y
        b.register_hook(lambda g: seen.append("b"))
        out = (a * 2).sum() + b.sum()
        gy = T.autograd.grad(out, [y])
        again = attempt(lambda: T.autograd.grad(out, [x]))
        unused = attempt(lambda: T.autograd.grad(x.sum() * 2, [y], materialize_grads=True))
        return gy, again, unused, seen

    both(case)


@pytest.mark.parametrize("write", ["v.clamp_(-2, 2)", "v.mul_(w)", "v[1:].zero_()", "v.copy_(w * 3)"])
def test_retained_grad_follows_in_place_writes(write):
    # .grad of a tensor that retains it is the gradient of its value after
    # later in-place writes; a hook registered before stays with the old value.
    def case(T):
        seen = []
        x = T.tensor([-3.0, 1.0, 4.0], requires_grad=True)
        w = T.tensor([0.5, 2.0, -1.0], requires_grad=True)
        v = x * 1
        v.retain_grad()
        v.register_hook(lambda g: seen.append(g))
        eval(write, {"v": v, "w": w})
        (v * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        return v.grad, x.grad, w.grad, seen

    both(case)
