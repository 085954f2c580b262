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
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _group_defaults(self, group):
        for key, value in (("momentum", 0), ("centered", False), ("foreach", None), ("maximize", False),
                           ("differentiable", False), ("capturable", False)):
            group.setdefault(key, value)


class Adagrad(Optimizer):
    """Adagrad (torch.optim.Adagrad).

    State per parameter: ``step``, ``sum``. As in torch, the state of the
    parameters given to the constructor exists from the start, filled with
    the constructor's ``initial_accumulator_value``.
    """

    _kind = "adagrad"

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        self._constructing = True
        super().__init__(params, defaults)
        self._constructing = False

    def _group_added(self, group):
        if self._constructing:
            engine = self._engines[-1]
            for j in range(engine.num_params()):
                engine.init_state(j, group)

    def _group_defaults(self, group):
        for key, value in (("foreach", None), ("maximize", False), ("differentiable", False), ("fused", None)):
            group.setdefault(key, value)


class Adadelta(Optimizer):
    """Adadelta (torch.optim.Adadelta). State: ``step``, ``square_avg``, ``acc_delta``."""

    _kind = "adadelta"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _group_defaults(self, group):
        for key, value in (("foreach", None), ("maximize", False), ("differentiable", False),
                           ("capturable", False)):
            group.setdefault(key, value)
