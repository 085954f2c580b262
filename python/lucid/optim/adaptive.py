"""RMSprop, Adagrad and Adadelta: engine optimizers with torch.optim's
arguments, defaults and math."""
from __future__ import annotations

from .optimizer import Optimizer

__all__ = ["RMSprop", "Adagrad", "Adadelta"]


class RMSprop(Optimizer):
    """RMSprop (torch.optim.RMSprop).

    State per parameter: ``step``, ``square_avg``, and ``momentum_buffer``
    (momentum > 0) and ``grad_avg`` (centered).
    """

    _kind = "rmsprop"

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        super().__init__(params, self._defaults_from(locals()))


class Adagrad(Optimizer):
    """Adagrad (torch.optim.Adagrad).

    State per parameter: ``step``, ``sum``. As in torch, the state of the
    parameters given to the constructor exists from the start, filled with
    the constructor's ``initial_accumulator_value``.
    """

    _kind = "adagrad"

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        super().__init__(params, self._defaults_from(locals()))


class Adadelta(Optimizer):
    """Adadelta (torch.optim.Adadelta). State: ``step``, ``square_avg``, ``acc_delta``."""

    _kind = "adadelta"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        super().__init__(params, self._defaults_from(locals()))

