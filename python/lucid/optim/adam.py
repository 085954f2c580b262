"""The Adam family: Adam, AdamW, Adamax, NAdam, RAdam and SparseAdam (engine
optimizers), with torch.optim's arguments, defaults and math."""
from __future__ import annotations

from .. import _C
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
    return tuple(betas)  # Tensor betas stay Tensors in param_groups, as torch keeps them


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
        super().__init__(params, self._defaults_from(locals()))


class AdamW(Adam):
    """AdamW (torch.optim.AdamW): Adam with decoupled weight decay."""

    _kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class Adamax(Optimizer):
    """Adamax (torch.optim.Adamax). State: ``step``, ``exp_avg``, ``exp_inf``."""

    _kind = "adamax"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        super().__init__(params, self._defaults_from(locals()))


class NAdam(Optimizer):
    """NAdam (torch.optim.NAdam). State: ``step``, ``mu_product``, ``exp_avg``,
    ``exp_avg_sq``."""

    _kind = "nadam"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        super().__init__(params, self._defaults_from(locals()))


class RAdam(Optimizer):
    """RAdam (torch.optim.RAdam). State: ``step``, ``exp_avg``, ``exp_avg_sq``."""

    _kind = "radam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        super().__init__(params, self._defaults_from(locals()))


class SparseAdam(Optimizer):
    """SparseAdam (torch.optim.SparseAdam) for Lucid's dense gradients: the
    non-zero entries of a gradient are its sparse entries, so the result
    equals torch's SparseAdam fed ``grad.to_sparse()`` of the gradient the
    step sees (after a GradScaler's unscale, an entry that underflowed to
    zero is absent). Moments and parameters change only where the gradient
    is non-zero; the step count advances for every parameter that has a
    gradient (an engine optimizer: the rule is ``sparse_adam_rule`` in
    csrc/lucid/optim/rules.h).

    State per parameter: ``step`` (an int, as torch keeps it), ``exp_avg``,
    ``exp_avg_sq``.
    """

    _kind = "sparse_adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        super().__init__(params, self._defaults_from(locals()))
