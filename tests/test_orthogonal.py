"""nn.utils.parametrizations.orthogonal against PyTorch's: for each map
(matrix_exp, cayley, householder), with and without the trivialization,
square, tall and wide matrices, the same weights and gradients once the
original and the base hold the same values."""
import pytest
import torch
from torch.nn.utils import parametrizations as torch_parametrizations

import lucid
from conftest import assert_close
from lucid.nn.utils import parametrizations

CASES = [(shape, m, triv) for shape in [(4, 4), (5, 3), (3, 5)] for m in ["matrix_exp", "cayley", "householder"]
         for triv in [True, False] if triv or m == "householder"]


def _pair(shape, seed):
    torch.manual_seed(seed)
    t = torch.nn.Linear(shape[1], shape[0])
    lm = lucid.nn.Linear(shape[1], shape[0])
    lm.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return t, lm


@pytest.mark.parametrize("shape, orthogonal_map, use_trivialization", CASES)
def test_weight_and_gradient_match_torch(shape, orthogonal_map, use_trivialization):
    t, lm = _pair(shape, 0)
    torch_parametrizations.orthogonal(t, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    parametrizations.orthogonal(lm, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    t_orig, l_orig = t.parametrizations.weight.original, lm.parametrizations.weight.original
    # the right inverse of the starting weight: -I with a trivialization, the reflectors of its QR without
    assert_close(l_orig.detach(), t_orig.detach(), atol=1e-5, rtol=1e-5)
    if use_trivialization:
        base = t.parametrizations.weight[0].base
        if shape[0] == shape[1]:  # a square base is the QR orthogonalization of the weight (a tall one is random)
            assert_close(lm.parametrizations.weight[0].base, base, atol=1e-5, rtol=1e-5)
        lm.parametrizations.weight[0].base.copy_(lucid.tensor(base.numpy()))
    step = torch.randn(t_orig.shape) * 0.3
    with torch.no_grad():
        t_orig.add_(step)
    with lucid.no_grad():
        l_orig.add_(lucid.tensor(step.numpy()))
    assert_close(lm.weight, t.weight, atol=1e-5, rtol=1e-5)
    upstream = torch.randn(t.weight.shape)
    (t.weight * upstream).sum().backward()
    (lm.weight * lucid.tensor(upstream.numpy())).sum().backward()
    assert_close(l_orig.grad, t_orig.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("shape", [(4, 4), (6, 2), (2, 6)])
def test_the_weight_is_orthogonal_after_training_steps(shape):
    _, lm = _pair(shape, 1)
    parametrizations.orthogonal(lm)
    opt = lucid.optim.SGD(lm.parameters(), lr=0.1)
    x = lucid.randn(8, shape[1])
    for _ in range(3):
        opt.zero_grad()
        lm(x).pow(2).sum().backward()
        opt.step()
    q = lm.weight
    gram = q.mT @ q if shape[0] >= shape[1] else q @ q.mT
    assert_close(gram, torch.eye(min(shape)), atol=1e-5, rtol=1e-5)


def test_default_maps_and_errors_match_torch():
    square, tall = lucid.nn.Linear(3, 3), lucid.nn.Linear(2, 5)
    parametrizations.orthogonal(square)
    parametrizations.orthogonal(tall)
    assert square.parametrizations.weight[0].orthogonal_map.name == "matrix_exp"
    assert tall.parametrizations.weight[0].orthogonal_map.name == "householder"
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        parametrizations.orthogonal(lucid.nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"):
        parametrizations.orthogonal(lucid.nn.Linear(2, 2), name="bias")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        parametrizations.orthogonal(lucid.nn.Linear(2, 2), name="nope")
    for m in ["matrix_exp", "cayley"]:
        layer = lucid.nn.Linear(3, 3)
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            parametrizations.orthogonal(layer, orthogonal_map=m, use_trivialization=False)


def test_assigning_an_orthogonal_matrix_keeps_it():
    lm = lucid.nn.Linear(4, 4)
    parametrizations.orthogonal(lm)
    q = torch.linalg.qr(torch.randn(4, 4))[0]
    with lucid.no_grad():
        lm.weight = lucid.tensor(q.numpy())
    assert_close(lm.weight, q, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        with lucid.no_grad():
            lm.weight = lucid.ones(3, 3)
