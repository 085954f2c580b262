"""The Adam family: Adam, AdamW, Adamax, NAdam, RAdam (engine optimizers) and
SparseAdam, with torch.optim's arguments, defaults and math."""
from __future__ import annotations

import math

from .. import _C
from ..autograd import enable_grad, no_grad
from .optimizer import Optimizer

Tensor = _C.Tensor

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "SparseAdam"]


def _check_tensor_hypers(lr, betas, foreach, capturable):
    # torch's constructor-only checks on tensor-valued hyper-parameters
    if isinstance(lr, Tensor) and foreach and not capturable:
        raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
    b0, b1 = betas
    if isinstance(b0, Tensor) != isinstance(b1, Tensor):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, b in enumerate(betas):
        if isinstance(b, Tensor):
            if foreach and not capturable:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
            if b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
    if isinstance(b0, Tensor):
        return (b0.item(), b1.item())
    return tuple(betas)


class Adam(Optimizer):
    """Adam (torch.optim.Adam); ``decoupled_weight_decay=True`` makes it AdamW.

    State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq`` and, with
    amsgrad, ``max_exp_avg_sq``.
    """

    _kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        betas = _check_tensor_hypers(lr, betas, foreach, capturable)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _group_defaults(self, group):
        for key, value in (("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                           ("differentiable", False), ("decoupled_weight_decay", False), ("fused", None)):
            group.setdefault(key, value)


class AdamW(Adam):
    """AdamW (torch.optim.AdamW): Adam with decoupled weight decay."""

    _kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def _group_defaults(self, group):
        super()._group_defaults(group)
        group["decoupled_weight_decay"] = True  # as torch: always, even for loaded groups


class Adamax(Optimizer):
    """Adamax (torch.optim.Adamax). State: ``step``, ``exp_avg``, ``exp_inf``."""

    _kind = "adamax"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _group_defaults(self, group):
        for key, value in (("foreach", None), ("maximize", False), ("differentiable", False),
                           ("capturable", False)):
            group.setdefault(key, value)


class NAdam(Optimizer):
    """NAdam (torch.optim.NAdam). State: ``step``, ``mu_product``, ``exp_avg``,
    ``exp_avg_sq``."""

    _kind = "nadam"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _group_defaults(self, group):
        for key, value in (("maximize", False), ("foreach", None), ("capturable", False),
                           ("differentiable", False), ("decoupled_weight_decay", False)):
            group.setdefault(key, value)


class RAdam(Optimizer):
    """RAdam (torch.optim.RAdam). State: ``step``, ``exp_avg``, ``exp_avg_sq``."""

    _kind = "radam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _group_defaults(self, group):
        for key, value in (("foreach", None), ("maximize", False), ("differentiable", False),
                           ("capturable", False), ("decoupled_weight_decay", False)):
            group.setdefault(key, value)


def sparse_adam_rule(param, grad, exp_avg, exp_avg_sq, one_minus_beta1, one_minus_beta2, eps, step_size,
                     maximize=False):
    """One SparseAdam update, in place, through ops: moments and parameter
    change only where the gradient is non-zero. The scalars are numbers
    (eager) or 0-d tensors of the parameter's dtype (feeds of a compiled
    step, cast as an op casts a number); the rounding is the same either way."""
    if maximize:
        grad = -grad
    mask = grad != 0
    # old <- b * old + (1 - b) * new  <=>  old += (1 - b) * (new - old), on the entries present
    avg_update = (grad - exp_avg) * one_minus_beta1
    sq_update = (grad * grad - exp_avg_sq) * one_minus_beta2
    numer = avg_update + exp_avg
    denom = _C.sqrt(sq_update + exp_avg_sq) + eps
    _C.assign_(exp_avg, _C.where(mask, exp_avg + avg_update, exp_avg))
    _C.assign_(exp_avg_sq, _C.where(mask, exp_avg_sq + sq_update, exp_avg_sq))
    update = (numer / denom) * -step_size
    _C.assign_(param, _C.where(mask, param + update, param))


class SparseAdam(Optimizer):
    """SparseAdam (torch.optim.SparseAdam) for Lucid's dense gradients: the
    non-zero entries of a gradient are its sparse entries, so the result
    equals torch's SparseAdam fed ``grad.to_sparse()``. Moments and
    parameters change only where the gradient is non-zero; the step count
    advances for every parameter that has a gradient.

    State per parameter (in ``state``): ``step`` (an int), ``exp_avg``,
    ``exp_avg_sq``.
    """

    _kind = "sparse_adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._validate(group)
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group):
        maximize = group.get("maximize", False)
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self._init_param_state(p)
            state["step"] += 1
            grad = p.grad.detach()
            if not bool(_C.any(grad != 0)):
                continue  # torch skips an empty sparse gradient (the step still counts)
            sparse_adam_rule(p.detach(), grad, state["exp_avg"], state["exp_avg_sq"],
                             *self._rule_scalars(group, state["step"]), maximize=maximize)

    def _init_param_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = 0
            state["exp_avg"] = _C.full(list(p.shape), 0.0, p.dtype, p.device)
            state["exp_avg_sq"] = _C.full(list(p.shape), 0.0, p.dtype, p.device)
        return state

    @staticmethod
    def _rule_scalars(group, step):
        """(1 - beta1, 1 - beta2, eps, step_size) for step number `step`
        (1-based), computed in double precision."""
        beta1, beta2 = group["betas"]
        step_size = float(group["lr"]) * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        return 1 - float(beta1), 1 - float(beta2), float(group["eps"]), step_size

    # The compiled step (lucid.compile) runs the same rule with the scalars as
    # feeds; these are its hooks.
    def _compiled_structure(self, group):
        return bool(group.get("maximize", False))

    def _compiled_init_state(self, gi, i, p):
        self._init_param_state(p)

    def _compiled_state_key(self):
        return tuple(id(s.get("exp_avg")) for s in (self.state.get(p, {}) for g in self.param_groups
                                                     for p in g["params"]))

    def _compiled_host_scalars(self, gi, i):
        group = self.param_groups[gi]
        return list(self._rule_scalars(group, self.state[group["params"][i]]["step"] + 1))

    def _compiled_update(self, gi, i, p, grad, feeds):
        group = self.param_groups[gi]
        state = self.state[p]
        # A float64 feed would promote the update of a 0-d parameter to
        # float64; the eager rule's numbers are rounded to the parameter's dtype.
        feeds = [_C.cast(f, p.dtype) for f in feeds]
        sparse_adam_rule(p, grad, state["exp_avg"], state["exp_avg_sq"], *feeds,
                         maximize=group.get("maximize", False))

    def _compiled_advance(self, gi, i):
        self.state[self.param_groups[gi]["params"][i]]["step"] += 1

    def _import_param_state(self, gi, j, param, entries):
        out = super()._import_param_state(gi, j, param, entries)
        if out:
            if set(out) != {"step", "exp_avg", "exp_avg_sq"}:
                raise ValueError(f"SparseAdam state must have 'step', 'exp_avg' and 'exp_avg_sq', got {sorted(out)}")
            for name in ("exp_avg", "exp_avg_sq"):
                if not isinstance(out[name], Tensor) or tuple(out[name].shape) != tuple(param.shape):
                    raise ValueError(f"SparseAdam state '{name}' must have the parameter's shape {tuple(param.shape)}")
            out["step"] = int(out["step"].item() if isinstance(out["step"], Tensor) else out["step"])
        return out
