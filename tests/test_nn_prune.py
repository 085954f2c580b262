"""lucid.nn.utils.prune against torch.nn.utils.prune: masks, the
weight_orig/weight_mask reparametrisation and its forward pre-hook, state
dicts, successive prunings (PruningContainer), global pruning, remove,
is_pruned, errors. Random methods are checked for their counts and shape
(their draws come from Lucid's generator)."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401 (not imported by torch itself)

import lucid

RNG = np.random.default_rng(8)
W_LIN, B_LIN = RNG.standard_normal((5, 6)), RNG.standard_normal(5)
W_CONV = RNG.standard_normal((4, 3, 3, 3))
X_LIN = RNG.standard_normal((2, 6))


def _models(m):
    lin = m.nn.Linear(6, 5).double()
    conv = m.nn.Conv2d(3, 4, 3).double()
    with m.no_grad():
        lin.weight.copy_(m.tensor(W_LIN))
        lin.bias.copy_(m.tensor(B_LIN))
        conv.weight.copy_(m.tensor(W_CONV))
    return lin, conv


def _state(m, lin, conv):
    return {
        "lin_params": sorted(n for n, _ in lin.named_parameters()),
        "lin_buffers": sorted(n for n, _ in lin.named_buffers()),
        "lin_state": sorted(lin.state_dict()),
        "lin_weight": lin.weight.detach().numpy().copy(),
        "conv_weight": conv.weight.detach().numpy().copy(),
        "out": lin(m.tensor(X_LIN)).detach().numpy(),
        "pruned": (m.nn.utils.prune.is_pruned(lin), m.nn.utils.prune.is_pruned(conv)),
    }


SCENARIOS = {
    "l1-fraction": lambda P, lin, conv: P.l1_unstructured(lin, "weight", amount=0.3),
    "l1-count": lambda P, lin, conv: P.l1_unstructured(lin, "weight", amount=7),
    "l1-bias-and-weight": lambda P, lin, conv: (P.l1_unstructured(lin, "weight", 0.5),
                                                P.l1_unstructured(lin, "bias", 2)),
    "l1-importance": lambda P, lin, conv: P.l1_unstructured(lin, "weight", 0.4,
                                                            importance_scores=lin.weight.detach().flip(0)),
    "ln-structured-rows": lambda P, lin, conv: P.ln_structured(lin, "weight", 0.4, n=2, dim=0),
    "ln-structured-conv": lambda P, lin, conv: P.ln_structured(conv, "weight", 2, n=1, dim=1),
    "ln-structured-inf": lambda P, lin, conv: P.ln_structured(conv, "weight", 0.5, n=float("inf"), dim=0),
    "container-l1-then-ln": lambda P, lin, conv: (P.l1_unstructured(lin, "weight", 0.3),
                                                  P.ln_structured(lin, "weight", 2, n=2, dim=1)),
    "container-ln-then-l1": lambda P, lin, conv: (P.ln_structured(conv, "weight", 1, n=2, dim=0),
                                                  P.l1_unstructured(conv, "weight", 0.2),
                                                  P.l1_unstructured(conv, "weight", 5)),
    "identity": lambda P, lin, conv: P.identity(lin, "weight"),
    "custom": lambda P, lin, conv: P.custom_from_mask(lin, "weight", mask=(lin.weight.detach() > 0).double()),
    "global": lambda P, lin, conv: P.global_unstructured([(lin, "weight"), (conv, "weight"), (lin, "bias")],
                                                         pruning_method=P.L1Unstructured, amount=0.4),
    "global-count-after-l1": lambda P, lin, conv: (P.l1_unstructured(lin, "weight", 5), P.global_unstructured(
        [(lin, "weight"), (conv, "weight")], pruning_method=P.L1Unstructured, amount=30)),
    "remove": lambda P, lin, conv: (P.l1_unstructured(lin, "weight", 0.5), P.remove(lin, "weight")),
    "remove-container": lambda P, lin, conv: (P.l1_unstructured(lin, "weight", 0.2),
                                              P.ln_structured(lin, "weight", 1, n=1, dim=0), P.remove(lin, "weight")),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pruning_matches_torch(name):
    states = []
    for m in (torch, lucid):
        lin, conv = _models(m)
        SCENARIOS[name](m.nn.utils.prune, lin, conv)
        states.append(_state(m, lin, conv))
    want, got = states
    for k in want:
        if isinstance(want[k], np.ndarray):
            np.testing.assert_allclose(got[k], want[k], rtol=1e-12, err_msg=k)
        else:
            assert got[k] == want[k], k


def test_the_hook_recomputes_the_weight_and_gradients_reach_weight_orig():
    P = lucid.nn.utils.prune
    lin, _ = _models(lucid)
    P.l1_unstructured(lin, "weight", 0.5)
    with lucid.no_grad():
        lin.weight_orig.add_(1.0)  # the next forward sees the new values, still masked
    out = lin(lucid.tensor(X_LIN))
    np.testing.assert_allclose(lin.weight.detach().numpy(),
                               (lin.weight_orig * lin.weight_mask).detach().numpy())
    out.sum().backward()
    assert lin.weight_orig.grad is not None
    assert np.all(lin.weight_orig.grad.numpy()[lin.weight_mask.numpy() == 0] == 0)
    hooks = [h for h, _ in lin._forward_pre_hooks.values()]
    assert len(hooks) == 1 and isinstance(hooks[0], P.L1Unstructured) and hooks[0]._tensor_name == "weight"
    P.l1_unstructured(lin, "weight", 2)
    (container,) = [h for h, _ in lin._forward_pre_hooks.values()]
    assert isinstance(container, P.PruningContainer) and len(container) == 2


@pytest.mark.parametrize("method", ["random_unstructured", "random_structured"])
def test_random_methods_prune_the_right_amount(method):
    P = lucid.nn.utils.prune
    lucid.manual_seed(0)
    _, conv = _models(lucid)
    if method == "random_unstructured":
        P.random_unstructured(conv, "weight", amount=0.25)
        assert int((conv.weight_mask == 0).sum()) == round(0.25 * conv.weight.numel())
    else:
        P.random_structured(conv, "weight", amount=2, dim=0)
        per_channel = conv.weight_mask.sum((1, 2, 3)).numpy()
        assert sorted(per_channel.tolist()) == [0, 0, 27, 27]


ERRORS = {
    "amount-type": lambda P, lin: P.l1_unstructured(lin, "weight", amount="half"),
    "amount-range": lambda P, lin: P.l1_unstructured(lin, "weight", amount=1.5),
    "amount-negative": lambda P, lin: P.l1_unstructured(lin, "weight", amount=-1),
    "amount-too-large": lambda P, lin: P.l1_unstructured(lin, "weight", amount=31),
    "structured-1d": lambda P, lin: P.ln_structured(lin, "bias", 1, n=2, dim=0),
    "structured-dim": lambda P, lin: P.ln_structured(lin, "weight", 1, n=2, dim=2),
    "remove-unpruned": lambda P, lin: P.remove(lin, "weight"),
    "global-not-unstructured": lambda P, lin: P.global_unstructured([(lin, "weight")], P.LnStructured, amount=1,
                                                                     n=2, dim=0),
    "global-not-iterable": lambda P, lin: P.global_unstructured(3, P.L1Unstructured, amount=1),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    outcome = []
    for m in (torch, lucid):
        lin, _ = _models(m)
        with pytest.raises(Exception) as info:
            ERRORS[name](m.nn.utils.prune, lin)
        outcome.append((type(info.value).__name__, str(info.value).split(" of module ")[0]
                        .replace("torch.", "lucid.")))
        # A failed pruning leaves the module as it was.
        assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]
    assert outcome[1] == outcome[0]
