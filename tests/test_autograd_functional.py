"""lucid.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp),
gradcheck/gradgradcheck, anomaly detection and Variable against
torch.autograd: values (float64), result structure for tensor and tuple
inputs/outputs, create_graph, strict-mode errors, messages."""
import warnings

import numpy as np
import pytest
import torch

import lucid

RNG = np.random.default_rng(5)
A, B = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
V_OUT, V_A, V_B = RNG.standard_normal(2), RNG.standard_normal((2, 3)), RNG.standard_normal(3)


def T(m, a, grad=False):
    t = m.tensor(np.asarray(a, dtype=np.float64))
    return t.requires_grad_() if grad else t


def _f_single(m):
    return lambda a: (a.exp() * a.sin()).sum(1)


def _f_tuple(m):
    return lambda a, b: ((a @ b).tanh(), (a * b).pow(2).sum())


def _f_scalar(m):
    return lambda a, b: ((a @ b).exp().sum() + (a * a).sum() * b.sum())


def _flatten(x):
    if isinstance(x, (tuple, list)):
        return [y for el in x for y in _flatten(el)]
    return [x]


def _structure(x):
    if isinstance(x, (tuple, list)):
        return type(x).__name__, [_structure(el) for el in x]
    return tuple(x.shape)


def _compare(got, want, rtol=1e-10):
    assert _structure(got) == _structure(want)
    for g, w in zip(_flatten(got), _flatten(want)):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=rtol, atol=1e-12)


CALLS = {
    "jacobian-single": lambda m, F: F.jacobian(_f_single(m), T(m, A)),
    "jacobian-tuple": lambda m, F: F.jacobian(_f_tuple(m), (T(m, A), T(m, B))),
    "jacobian-vectorize": lambda m, F: F.jacobian(_f_tuple(m), (T(m, A), T(m, B)), vectorize=True),
    "jacobian-forward": lambda m, F: F.jacobian(_f_tuple(m), (T(m, A), T(m, B)), vectorize=True,
                                                strategy="forward-mode"),
    "hessian-single": lambda m, F: F.hessian(lambda a: (a.exp() * a.sin()).sum(), T(m, A)),
    "hessian-tuple": lambda m, F: F.hessian(_f_scalar(m), (T(m, A), T(m, B))),
    "hessian-forward-outer": lambda m, F: F.hessian(_f_scalar(m), (T(m, A), T(m, B)), vectorize=True,
                                                    outer_jacobian_strategy="forward-mode"),
    "vjp-single": lambda m, F: F.vjp(_f_single(m), T(m, A), T(m, V_OUT)),
    "vjp-tuple": lambda m, F: F.vjp(_f_tuple(m), (T(m, A), T(m, B)), (T(m, V_OUT), T(m, 1.5))),
    "vjp-scalar-no-v": lambda m, F: F.vjp(_f_scalar(m), (T(m, A), T(m, B))),
    "jvp-single": lambda m, F: F.jvp(_f_single(m), T(m, A), T(m, V_A)),
    "jvp-tuple": lambda m, F: F.jvp(_f_tuple(m), (T(m, A), T(m, B)), (T(m, V_A), T(m, V_B))),
    "hvp": lambda m, F: F.hvp(_f_scalar(m), (T(m, A), T(m, B)), (T(m, V_A), T(m, V_B))),
    "vhp": lambda m, F: F.vhp(_f_scalar(m), (T(m, A), T(m, B)), (T(m, V_A), T(m, V_B))),
    "hvp-single": lambda m, F: F.hvp(lambda a: (a ** 3).sum(), T(m, A), T(m, V_A)),
    "jacobian-independent-input": lambda m, F: F.jacobian(lambda a, b: a.exp(), (T(m, A), T(m, B))),
    "jacobian-linear-hessian": lambda m, F: F.hessian(lambda a: a.sum(), T(m, A)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_values_and_structure_match_torch(name):
    want = CALLS[name](torch, torch.autograd.functional)
    got = CALLS[name](lucid, lucid.autograd.functional)
    _compare(got, want)
    assert all(not t.requires_grad for t in _flatten(got))  # no create_graph: detached results


@pytest.mark.parametrize("name", ["jacobian-tuple", "hessian-tuple", "vjp-tuple", "jvp-tuple", "hvp", "vhp"])
def test_create_graph_differentiates_again(name):
    grads = []
    for m in (torch, lucid):
        a, b = T(m, A, True), T(m, B, True)
        F = m.autograd.functional
        call = {
            "jacobian-tuple": lambda: F.jacobian(_f_tuple(m), (a, b), create_graph=True),
            "hessian-tuple": lambda: F.hessian(_f_scalar(m), (a, b), create_graph=True),
            "vjp-tuple": lambda: F.vjp(_f_tuple(m), (a, b), (T(m, V_OUT), T(m, 1.5)), create_graph=True)[1],
            "jvp-tuple": lambda: F.jvp(_f_tuple(m), (a, b), (T(m, V_A), T(m, V_B)), create_graph=True)[1],
            "hvp": lambda: F.hvp(_f_scalar(m), (a, b), (T(m, V_A), T(m, V_B)), create_graph=True)[1],
            "vhp": lambda: F.vhp(_f_scalar(m), (a, b), (T(m, V_A), T(m, V_B)), create_graph=True)[1],
        }[name]
        out = _flatten(call())
        total = sum((o * o).sum() for o in out)
        grads.append([g.numpy() for g in m.autograd.grad(total, [a, b])])
    for w, g in zip(*grads):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


ERRORS = {
    "strict-independent": lambda m, F: F.jacobian(lambda a, b: a.exp(), (T(m, A), T(m, B)), strict=True),
    "strict-no-grad-output": lambda m, F: F.vjp(lambda a: T(m, [1.0]), T(m, A), T(m, [1.0]), strict=True),
    "strict-linear-hessian": lambda m, F: F.hessian(lambda a: a.sum(), T(m, A), strict=True),
    "strict-jvp": lambda m, F: F.jvp(lambda a, b: a.exp(), (T(m, A), T(m, B)), (T(m, V_A), T(m, V_B)), strict=True),
    "strict-vhp": lambda m, F: F.vhp(lambda a: a.sum(), T(m, A), T(m, V_A), strict=True),
    "strict-hvp": lambda m, F: F.hvp(lambda a: a.sum(), T(m, A), T(m, V_A), strict=True),
    "v-missing": lambda m, F: F.vjp(_f_single(m), T(m, A)),
    "v-jvp-missing": lambda m, F: F.jvp(_f_single(m), T(m, A)),
    "v-bad-size": lambda m, F: F.vjp(_f_single(m), T(m, A), T(m, [1.0, 2.0, 3.0])),
    "v-bad-length": lambda m, F: F.jvp(_f_tuple(m), (T(m, A), T(m, B)), (T(m, V_A),)),
    "v-tuple-entry-size": lambda m, F: F.jvp(_f_tuple(m), (T(m, A), T(m, B)), (T(m, V_A), T(m, A))),
    "inputs-not-tensor": lambda m, F: F.jacobian(_f_single(m), [1.0, 2.0]),
    "tuple-entry-not-tensor": lambda m, F: F.vjp(_f_tuple(m), (T(m, A), 3.0)),
    "hessian-tuple-output": lambda m, F: F.hessian(_f_tuple(m), (T(m, A), T(m, B))),
    "hessian-vector-output": lambda m, F: F.hessian(_f_single(m), T(m, A)),
    "hvp-vector-output": lambda m, F: F.hvp(_f_single(m), T(m, A), T(m, V_A)),
    "bad-strategy": lambda m, F: F.jacobian(_f_single(m), T(m, A), strategy="sideways"),
    "forward-create-graph": lambda m, F: F.jacobian(_f_single(m), T(m, A), create_graph=True, strategy="forward-mode"),
    "forward-not-vectorized": lambda m, F: F.jacobian(_f_single(m), T(m, A), strategy="forward-mode"),
    "vectorize-strict": lambda m, F: F.jacobian(_f_single(m), T(m, A), strict=True, vectorize=True),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    errors = []
    for m in (torch, lucid):
        with pytest.raises(Exception) as info:
            ERRORS[name](m, m.autograd.functional)
        errors.append((type(info.value).__name__, str(info.value).replace("torch.", "lucid.")
                       .replace("<class 'lucid.Tensor'>", "<class 'lucid._C.Tensor'>")))
    assert errors[1] == errors[0]


def test_outputs_are_unchanged_by_create_graph_and_grad_mode():
    a = T(lucid, A, True)
    with lucid.no_grad():
        out, v = lucid.autograd.functional.vjp(_f_single(lucid), a, T(lucid, V_OUT))
    assert not out.requires_grad and not v.requires_grad
    out, v = lucid.autograd.functional.vjp(_f_single(lucid), a, T(lucid, V_OUT), create_graph=True)
    assert out.requires_grad and v.requires_grad


# ---------------------------------------------------------------- gradcheck
def _bad_function(m):
    class Wrong(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * g

    return Wrong.apply


GRADCHECKS = {
    "ok": lambda m: m.autograd.gradcheck(_f_tuple(m), (T(m, A, True), T(m, B, True))),
    "ok-mixed-inputs": lambda m: m.autograd.gradcheck(lambda a, k, b: a * k + b, (T(m, A, True), 2.0, T(m, B))),
    "ok-gradgrad": lambda m: m.autograd.gradgradcheck(_f_tuple(m), (T(m, A, True), T(m, B, True)),
                                                      (T(m, V_OUT, True), T(m, 1.5, True))),
    "ok-forward": lambda m: m.autograd.gradcheck(_f_tuple(m), (T(m, A, True), T(m, B, True)), check_forward_ad=True),
    "ok-fast-mode": lambda m: m.autograd.gradcheck(_f_single(m), T(m, A, True), fast_mode=True),
    "wrong": lambda m: m.autograd.gradcheck(_bad_function(m), (T(m, [1.0, 2.0], True),)),
    "wrong-no-raise": lambda m: m.autograd.gradcheck(_bad_function(m), (T(m, [1.0, 2.0], True),),
                                                     raise_exception=False),
    "wrong-second-order": lambda m: m.autograd.gradgradcheck(lambda x: _bad_function(m)(x.exp()),
                                                             (T(m, [1.0, 2.0], True),), (T(m, [0.5, 1.5], True),)),
    "no-input-requires-grad": lambda m: m.autograd.gradcheck(_f_single(m), (T(m, A),)),
    "expanded-input": lambda m: m.autograd.gradcheck(_f_single(m), (T(m, [1.0, 2.0, 3.0]).expand(2, 3)
                                                                      .requires_grad_(),)),
    "nondifferentiable-output-zero": lambda m: m.autograd.gradcheck(lambda a: (a > 0).double(), (T(m, A, True),)),
    "tolerance": lambda m: m.autograd.gradcheck(lambda a: a.exp() * 1.00001 if a.requires_grad else a.exp(),
                                                (T(m, A, True),), atol=1e-9, rtol=1e-9, raise_exception=False),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradcheck_matches_torch(name):
    outcome = []
    for m in (torch, lucid):
        try:
            result = ("ok", GRADCHECKS[name](m))
        except Exception as e:  # noqa: BLE001 (the outcome is compared)
            result = (type(e).__name__, str(e).replace("torch.", "lucid."))
        outcome.append(result)
    assert outcome[1] == outcome[0]


def test_gradcheck_warns_for_single_precision_and_names_the_error_class():
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        lucid.autograd.gradcheck(lambda a: a * 2, (lucid.ones(2, requires_grad=True),), atol=0.1, rtol=0.1)
    from lucid.autograd.gradcheck import GradcheckError

    assert issubclass(GradcheckError, RuntimeError) and lucid.autograd.GradcheckError is GradcheckError


# ---------------------------------------------------------- anomaly, Variable
def test_detect_anomaly_names_the_node_that_made_a_nan():
    errors = []
    for m in (torch, lucid):
        x = m.tensor([0.0, 1.0], requires_grad=True)
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            with m.autograd.detect_anomaly():
                assert m.is_anomaly_enabled()
                y = (x.sqrt() * 0).sum()
                with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # PyTorch's forward traceback warning
                    y.backward()
        errors.append(str(info.value))
        assert not m.is_anomaly_enabled()
    assert errors[1] == errors[0] == "Function 'SqrtBackward0' returned nan values in its 0th output."


def test_nan_gradients_pass_without_anomaly_mode_or_with_check_nan_off():
    x = lucid.tensor([0.0], requires_grad=True)
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()).all()
    with pytest.warns(UserWarning):
        with lucid.autograd.detect_anomaly(check_nan=False):
            assert lucid.is_anomaly_enabled() and not lucid.is_anomaly_check_nan_enabled()
            x.grad = None
            (x.sqrt() * 0).sum().backward()
    assert lucid.is_anomaly_check_nan_enabled()


def test_set_detect_anomaly_and_the_decorator():
    lucid.autograd.set_detect_anomaly(True)
    assert lucid.is_anomaly_enabled()
    lucid.autograd.set_detect_anomaly(False)
    with lucid.autograd.set_detect_anomaly(True):
        assert lucid.is_anomaly_enabled()
    assert not lucid.is_anomaly_enabled()

    with pytest.warns(UserWarning):
        @lucid.autograd.detect_anomaly()
        def inside():
            return lucid.is_anomaly_enabled()

    assert inside() and not lucid.is_anomaly_enabled()


def test_variable_is_the_tensor():
    from lucid.autograd import Variable

    for m, V in ((torch, torch.autograd.Variable), (lucid, Variable)):
        t = m.ones(2, requires_grad=True)
        v = V(t)
        assert v is not t and not v.requires_grad and v.grad_fn is None and isinstance(t, V)
        assert not isinstance(1, V)
        u = m.ones(2)
        w = V(u, requires_grad=True)
        assert w.requires_grad and not u.requires_grad and w.data_ptr() == u.data_ptr()
        assert tuple(V().shape) == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            V([1, 2])
        with pytest.warns(UserWarning, match="volatile was removed"):
            V(t, volatile=True)
