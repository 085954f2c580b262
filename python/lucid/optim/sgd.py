"""SGD (with momentum and Nesterov), ASGD and Rprop: engine optimizers with
torch.optim's arguments, defaults and math."""
from __future__ import annotations

from .optimizer import Optimizer

__all__ = ["SGD", "ASGD", "Rprop"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum (torch.optim.SGD).

    State per parameter: ``momentum_buffer`` (only when momentum is non-zero).
    """

    _kind = "sgd"

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        super().__init__(params, self._defaults_from(locals()))


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (torch.optim.ASGD).

    State per parameter: ``step``, ``eta``, ``mu``, ``ax``.
    """

    _kind = "asgd"

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        super().__init__(params, self._defaults_from(locals()))


class Rprop(Optimizer):
    """Resilient backpropagation (torch.optim.Rprop).

    State per parameter: ``step``, ``prev``, ``step_size``.
    """

    _kind = "rprop"

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        super().__init__(params, self._defaults_from(locals()))

