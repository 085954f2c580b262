"""Helpers for the nn tests: build a layer in both libraries, copy PyTorch's
weights into lucid's (through state_dict, as NumPy arrays), and compare
outputs and input/parameter gradients."""
import numpy as np
import torch

import lucid
from conftest import assert_close


def torch_state_as_numpy(tm):
    return {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}


def copy_weights(lm, tm):
    """Loads tm's state_dict into lm (strictly: the keys must be identical)."""
    result = lm.load_state_dict(torch_state_as_numpy(tm))
    assert not result.missing_keys and not result.unexpected_keys
    return lm


def _seq(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def compare_module(lm, tm, *inputs, rtol=None, atol=None, grad_rtol=1e-4, grad_atol=1e-5, kwargs=None,
                   input_grad=True, seed=3):
    """lm(*inputs) vs tm(*inputs) after copying tm's weights into lm; then
    the gradients of every floating input and every parameter, after a
    backward pass with the same random upstream gradient."""
    copy_weights(lm, tm)
    kwargs = kwargs or {}
    l_in, t_in = [], []
    for x in inputs:
        if isinstance(x, np.ndarray):
            rg = input_grad and x.dtype.kind == "f"
            l_in.append(lucid.tensor(x, requires_grad=rg))
            t_in.append(torch.tensor(x, requires_grad=rg))
        else:
            l_in.append(x)
            t_in.append(x)
    l_kw = {k: (lucid.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    t_kw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    l_out, t_out = lm(*l_in, **l_kw), tm(*t_in, **t_kw)
    l_outs = [o for o in _seq(l_out)]
    t_outs = [o for o in _seq(t_out)]
    assert len(l_outs) == len(t_outs)
    for lo, to in zip(l_outs, t_outs):
        if to is None:
            assert lo is None
            continue
        assert_close(lo, to, rtol, atol)
    rng = np.random.default_rng(seed)
    pairs = [(lo, to) for lo, to in zip(l_outs, t_outs) if to is not None and to.requires_grad]
    if not pairs:
        return l_out
    ups = [rng.standard_normal(tuple(to.shape)).astype(np.float32) for _, to in pairs]
    torch.autograd.backward([to for _, to in pairs], [torch.tensor(u).to(to.dtype) for u, (_, to) in zip(ups, pairs)])
    lucid.autograd.backward([lo for lo, _ in pairs], [lucid.tensor(u).to(lo.dtype) for u, (lo, _) in zip(ups, pairs)])
    for i, (li, ti) in enumerate(zip(l_in, t_in)):
        if isinstance(ti, torch.Tensor) and ti.requires_grad:
            assert (li.grad is None) == (ti.grad is None), f"input {i}: gradient presence differs"
            if ti.grad is not None:
                assert_close(li.grad, ti.grad, grad_rtol, grad_atol, msg=f"grad of input {i}: ")
    l_params = dict(lm.named_parameters())
    for name, tp in tm.named_parameters():
        lp = l_params[name]
        assert (lp.grad is None) == (tp.grad is None), f"{name}: gradient presence differs"
        if tp.grad is not None:
            assert_close(lp.grad, tp.grad, grad_rtol, grad_atol, msg=f"grad of {name}: ")
    return l_out
