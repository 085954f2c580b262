"""Tensor.grad_fn as a node of the backward graph (torch.autograd.graph.Node):
names, next_functions down to the leaves' AccumulateGrad, and `variable`."""
import pytest
import torch

import lucid
import lucid.nn as nn


def _walk(fn):
    """(name, [(child name or None, input_nr)]) for every node reachable from
    fn, depth first, each node once."""
    out, seen, stack = [], {}, [fn]  # seen holds the nodes: an id is unique only while its object lives
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen[id(n)] = n
        out.append((n.name(), [(c.name() if c is not None else None, i) for c, i in n.next_functions]))
        stack.extend(c for c, _ in reversed(n.next_functions))
    return out


def _programs(lib):
    def elementwise(a, b):
        return ((a * b).exp() + b.sin()).sum()

    def reductions(a, b):
        return (a.relu().sum() * 2 - b.abs().sum()) / 3

    def softmax_nll(a, b):
        return lib.nn.functional.log_softmax(a * b, dim=-1).sum().neg()

    return [elementwise, reductions, softmax_nll]


@pytest.mark.parametrize("index", range(3))
def test_graph_names_and_edges_match_torch(index):
    ta = torch.randn(4, 5, requires_grad=True)
    tb = torch.randn(4, 5, requires_grad=True)
    la = lucid.tensor(ta.detach().numpy(), requires_grad=True)
    lb = lucid.tensor(tb.detach().numpy(), requires_grad=True)
    expected = _walk(_programs(torch)[index](ta, tb).grad_fn)
    got = _walk(_programs(lucid)[index](la, lb).grad_fn)
    assert got == expected


def test_accumulate_grad_holds_the_leaf():
    w = lucid.randn(3, 3, requires_grad=True)
    x = lucid.randn(2, 3)
    loss = (x * w.sum(0)).sum()
    leaves = []
    stack = [loss.grad_fn]
    while stack:
        n = stack.pop()
        for f, _ in n.next_functions:
            if f is None:
                continue
            if f.name() == "torch::autograd::AccumulateGrad":
                leaves.append(f.variable)
            else:
                stack.append(f)
    assert len(leaves) == 1
    assert leaves[0]._same(w) and leaves[0].shape == lucid.Size([3, 3])
    with pytest.raises(AttributeError, match="'SumBackward0' object has no attribute 'variable'"):
        loss.grad_fn.variable


def test_node_identity_type_and_repr():
    a = lucid.randn(3, requires_grad=True)
    y = (a * 2).sum()
    assert y.grad_fn is y.grad_fn
    assert isinstance(y.grad_fn, lucid.autograd.graph.Node)
    assert repr(y.grad_fn).startswith("<SumBackward0 object at 0x")
    assert "grad_fn=<SumBackward0>" in repr(y)
    assert a.grad_fn is None and (a * 2).detach().grad_fn is None
    assert y.grad_fn._sequence_nr() > y.grad_fn.next_functions[0][0]._sequence_nr()


def test_custom_function_node():
    class Square(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = lucid.randn(3, requires_grad=True)
    y = Square.apply(a)
    assert y.grad_fn.name() == "SquareBackward"
    (acc, nr), = y.grad_fn.next_functions
    assert (acc.name(), nr, acc.next_functions) == ("torch::autograd::AccumulateGrad", 0, ())
    assert repr(acc).startswith("<AccumulateGrad object at 0x")


def test_module_graph_reaches_every_parameter():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    loss = model(lucid.randn(5, 4)).pow(2).mean()
    found, stack, seen = [], [loss.grad_fn], {}
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        for f, _ in n.next_functions:
            if f is None:
                continue
            if f.name() == "torch::autograd::AccumulateGrad":
                found.append(f.variable)
            else:
                stack.append(f)
    params = list(model.parameters())
    assert len(found) == len(params)
    assert all(any(v._same(p) for v in found) for p in params)
