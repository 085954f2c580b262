"""lucid.autograd.forward_ad and lucid.func.jvp against PyTorch's forward
mode: the same tangents for the same functions; the documented differences
(dual tensors require grad, no tangents through no_grad) are checked too."""
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfwd
import torch.func as tfunc

import lucid
import lucid.autograd.forward_ad as lfwd
import lucid.func as lfunc
import lucid.nn.functional as F
from conftest import assert_close

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
T = RNG.standard_normal((3, 4)).astype(np.float32)
W = RNG.standard_normal((4, 5)).astype(np.float32)

FUNCTIONS = {
    "matmul_tanh": lambda lib, a: lib.tanh(a @ lib.tensor(W)),
    "softmax_scaled": lambda lib, a: (a * a.sum(1, keepdim=True)).softmax(-1),
    "log_softmax_of_exp": lambda lib, a: lib.nn.functional.log_softmax(a.exp(), dim=0),
    "reductions": lambda lib, a: lib.stack([a.mean(), a.norm(), a.max()]),
    "layer_norm": lambda lib, a: lib.nn.functional.layer_norm(a, (4,)),
    "indexing": lambda lib, a: a[1:, ::2] * a[0, :2],
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_unpack_dual_gives_torchs_tangent(name):
    fn = FUNCTIONS[name]
    with tfwd.dual_level():
        expected = tfwd.unpack_dual(fn(torch, tfwd.make_dual(torch.tensor(X), torch.tensor(T))))
    with lfwd.dual_level():
        got = lfwd.unpack_dual(fn(lucid, lfwd.make_dual(lucid.tensor(X), lucid.tensor(T))))
    assert_close(got.primal.detach(), expected.primal, atol=1e-5, rtol=1e-5)
    assert_close(got.tangent, expected.tangent, atol=1e-5, rtol=1e-5)


def test_tangents_of_several_duals_add_up():
    a, b = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((3,)).astype(np.float32)
    ta, tb = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((3,)).astype(np.float32)
    with tfwd.dual_level():
        out = torch.sin(tfwd.make_dual(torch.tensor(a), torch.tensor(ta)) * tfwd.make_dual(torch.tensor(b), torch.tensor(tb)))
        expected = tfwd.unpack_dual(out).tangent
    with lfwd.dual_level():
        out = lucid.sin(lfwd.make_dual(lucid.tensor(a), lucid.tensor(ta)) * lfwd.make_dual(lucid.tensor(b), lucid.tensor(tb)))
        got = lfwd.unpack_dual(out).tangent
    assert_close(got, expected, atol=1e-6, rtol=1e-5)


def test_a_module_with_dual_parameters_through_functional_call():
    model = lucid.nn.Linear(4, 2)
    tmodel = torch.nn.Linear(4, 2)
    tmodel.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
    tangent = {k: RNG.standard_normal(tuple(v.shape)).astype(np.float32) for k, v in model.state_dict().items()}
    with tfwd.dual_level():
        params = {k: tfwd.make_dual(v.detach(), torch.tensor(tangent[k])) for k, v in tmodel.named_parameters()}
        expected = tfwd.unpack_dual(torch.func.functional_call(tmodel, params, (torch.tensor(X),))).tangent
    with lfwd.dual_level():
        params = {k: lfwd.make_dual(v.detach(), lucid.tensor(tangent[k])) for k, v in model.named_parameters()}
        got = lfwd.unpack_dual(lucid.func.functional_call(model, params, (lucid.tensor(X),))).tangent
    assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_without_dependence_or_outside_the_level_there_is_no_tangent():
    with lfwd.dual_level():
        dual = lfwd.make_dual(lucid.tensor(X), lucid.tensor(T))
        assert lfwd.unpack_dual(lucid.ones(2)).tangent is None
        assert_close(lfwd.unpack_dual(dual).tangent, torch.tensor(T))
        y = dual * 3
    assert lfwd.unpack_dual(y).tangent is None  # the level is closed
    assert lfwd.unpack_dual(5).tangent is None


def test_errors_match_torch():
    with pytest.raises(RuntimeError, match="you must first enter a dual level"):
        lfwd.make_dual(lucid.ones(2), lucid.ones(2))
    with lfwd.dual_level():
        with pytest.raises(RuntimeError, match="different size than that of the original Tensor"):
            lfwd.make_dual(lucid.ones(2), lucid.ones(3))
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            with lfwd.dual_level():
                pass


def test_documented_differences():
    with lfwd.dual_level():
        dual = lfwd.make_dual(lucid.tensor(X), lucid.tensor(T))
        assert dual.requires_grad  # PyTorch's dual does not require grad
        with lucid.no_grad():
            y = dual * 2
        assert lfwd.unpack_dual(y).tangent is None  # PyTorch carries the tangent through no_grad


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_func_jvp_matches_torch(name):
    fn = FUNCTIONS[name]
    out_t, jvp_t = tfunc.jvp(lambda a: fn(torch, a), (torch.tensor(X),), (torch.tensor(T),))
    out_l, jvp_l = lfunc.jvp(lambda a: fn(lucid, a), (lucid.tensor(X),), (lucid.tensor(T),))
    assert_close(out_l, out_t, atol=1e-5, rtol=1e-5)
    assert_close(jvp_l, jvp_t, atol=1e-5, rtol=1e-5)
    assert not out_l.requires_grad and not jvp_l.requires_grad


def test_func_jvp_with_aux_linearize_and_structures():
    def f(a, b):
        return {"s": (a * b).sum(), "p": F.relu(a) + b}, a * 0

    a, b = lucid.tensor(X), lucid.tensor(T)
    out, jv, aux = lfunc.jvp(f, (a, b), (b, a), has_aux=True)
    tout, tjv, _ = tfunc.jvp(lambda x, y: ({"s": (x * y).sum(), "p": torch.relu(x) + y}, x * 0),
                             (torch.tensor(X), torch.tensor(T)), (torch.tensor(T), torch.tensor(X)), has_aux=True)
    assert_close(aux, torch.zeros(3, 4))
    for k in ("s", "p"):
        assert_close(jv[k], tjv[k], atol=1e-5, rtol=1e-5)
    value, jvp_fn = lfunc.linearize(lambda x: x.sin(), a)
    assert_close(jvp_fn(b), torch.tensor(T) * torch.tensor(X).cos(), atol=1e-6, rtol=1e-5)
    with pytest.raises(RuntimeError, match="Expected primals and tangents to be tuples"):
        lfunc.jvp(lambda x: x, a, b)
