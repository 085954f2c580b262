"""Learning-rate schedulers.

Arguments, defaults, raised errors, learning-rate sequences and
``state_dict`` layouts match ``torch.optim.lr_scheduler``.

A scheduler drives the ``"lr"`` entry (and, for the cyclic schedules, the
``"momentum"`` entry or the first element of ``"betas"``) of every dict in
``optimizer.param_groups``. Call :meth:`LRScheduler.step` after the
optimizer's ``step``.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "PolynomialLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "OneCycleLR",
    "ChainedScheduler",
    "SequentialLR",
    "ReduceLROnPlateau",
]

_EPOCH_DEPRECATION_WARNING = (
    "Passing an epoch to `scheduler.step()` is deprecated; call "
    "`scheduler.step()` without arguments. When an epoch is given, the "
    "closed-form schedule is used instead of the chainable one where "
    "available."
)


def _is_optimizer(obj: Any) -> bool:
    try:
        from .optimizer import Optimizer
    except ImportError:
        # Standalone use: accept anything that looks like an optimizer.
        return isinstance(getattr(obj, "param_groups", None), list)
    return isinstance(obj, Optimizer)


def _check_optimizer(optimizer: Any) -> None:
    if not _is_optimizer(optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _format_param(name: str, optimizer: Any, param: Any) -> list:
    """Broadcast a scalar to one value per param group, or validate a list."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has "
                f"{len(optimizer.param_groups)}."
            )
        return list(param)
    return [param] * len(optimizer.param_groups)


def _group_values(optimizer: Any, key: str) -> list:
    """``[group[key] for group in optimizer.param_groups]`` (KeyError if
    absent), tensors cloned so the list does not alias the live values."""
    return [_clone_if_tensor(group[key]) for group in optimizer.param_groups]


def _is_tensor(value: Any) -> bool:
    # duck-typed: the module also drives other libraries' optimizers (its tests run it on torch's)
    return hasattr(value, "fill_") and hasattr(value, "detach")


def _clone_if_tensor(value: Any) -> Any:
    return value.detach().clone() if _is_tensor(value) else value


def _set_group_value(group: dict, key: str, value: Any) -> None:
    """``group[key] = value``, except that a tensor hyper-parameter (an lr
    given as a Tensor) is filled in place, as torch does, so it stays the
    tensor the user and the optimizer hold."""
    current = group[key]
    if _is_tensor(current):
        current.fill_(value.reshape(()) if _is_tensor(value) else value)
    else:
        group[key] = value


def _set_first_beta(group: dict, value: float) -> None:
    group["betas"] = (value, *group["betas"][1:])


@contextmanager
def _flag(obj: Any, name: str) -> Iterator[None]:
    setattr(obj, name, True)
    try:
        yield
    finally:
        setattr(obj, name, False)


class LRScheduler:
    """Base class for learning-rate schedulers.

    Subclasses implement :meth:`get_lr`, the chainable update computed from the
    current ``group["lr"]`` values at ``last_epoch``; they may also define
    ``_get_closed_form_lr``, computed from ``base_lrs``, which :meth:`step`
    uses when given an explicit epoch.

    Args:
        optimizer: Wrapped optimizer.
        last_epoch: Index of the last epoch. ``-1`` (default) starts the
            schedule and records each group's ``"initial_lr"``; any other value
            resumes and requires ``"initial_lr"`` to be present in every group.
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer

        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _clone_if_tensor(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] "
                        "when resuming scheduler with last_epoch >= 0."
                    )
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and perform the constructor's step."""
        self._step_count = 0
        with _flag(self, "_is_initial"):
            self.step()

    def state_dict(self) -> dict[str, Any]:
        """Return the scheduler state: every instance attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scheduler state from :meth:`state_dict` output."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """Return the learning rates set by the most recent step."""
        return self._last_lr

    def get_lr(self) -> list:
        """Compute the learning rates for the current ``last_epoch``."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one epoch (or jump to ``epoch``, deprecated)."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        with _flag(self, "_get_lr_called_within_step"):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()

        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _warn_if_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, "
                "please use `get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )


class _LRScheduler(LRScheduler):
    """Backward-compatible name for :class:`LRScheduler`."""


class _LambdaScheduler(LRScheduler):
    """Shared handling of per-group ``lr_lambdas`` and their serialization."""

    def _set_lr_lambdas(self, optimizer: Any, lr_lambda: Any) -> None:
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, "
                    f"but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)

    def state_dict(self) -> dict[str, Any]:
        """Return the scheduler state.

        Plain functions and lambdas in ``lr_lambdas`` are stored as ``None``;
        callable objects are stored as a copy of their ``__dict__``.
        """
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "lr_lambdas")
        }
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scheduler state; saved callable-object attributes are reapplied."""
        state = dict(state_dict)
        lr_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, fn_state in zip(self.lr_lambdas, lr_lambdas):
            if fn_state is not None:
                fn.__dict__.update(fn_state)


class LambdaLR(_LambdaScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``.

    Args:
        optimizer: Wrapped optimizer.
        lr_lambda: A function of the epoch returning a multiplicative factor,
            or a list with one such function per param group.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self._set_lr_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        return [
            base_lr * lmbda(self.last_epoch)
            for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]


class MultiplicativeLR(_LambdaScheduler):
    """``lr_t = lr_{t-1} * lr_lambda(t)`` for ``t >= 1``.

    Args:
        optimizer: Wrapped optimizer.
        lr_lambda: A function of the epoch returning a multiplicative factor,
            or a list with one such function per param group.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self._set_lr_lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(
                    f"lr_lambda should be a function, but got {type(fn).__name__}"
                )
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [
            group["lr"] * lmbda(self.last_epoch)
            for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)
        ]


class StepLR(LRScheduler):
    """``lr = initial_lr * gamma ** (epoch // step_size)``.

    Applied multiplicatively (every ``step_size`` epochs the current lr is
    multiplied by ``gamma``), so it composes with other schedulers.

    Args:
        optimizer: Wrapped optimizer.
        step_size: Period of learning-rate decay.
        gamma: Multiplicative factor of decay. Default: 0.1.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr * self.gamma ** (self.last_epoch // self.step_size)
            for base_lr in self.base_lrs
        ]


class MultiStepLR(LRScheduler):
    """``lr = initial_lr * gamma ** (number of milestones <= epoch)``.

    A milestone listed ``n`` times decays by ``gamma ** n``.

    Args:
        optimizer: Wrapped optimizer.
        milestones: Epoch indices at which to decay.
        gamma: Multiplicative factor of decay. Default: 0.1.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        decay = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * decay for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [
            base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
            for base_lr in self.base_lrs
        ]


class ConstantLR(LRScheduler):
    """``lr = initial_lr * (factor if epoch < total_iters else 1)``.

    Args:
        optimizer: Wrapped optimizer.
        factor: Multiplier applied until ``total_iters``, in ``[0, 1]``.
            Default: 1/3.
        total_iters: Number of epochs the factor is applied. Default: 5.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError(
                "Constant multiplicative factor expected to be between 0 and 1."
            )
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [
            group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups
        ]

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr
            * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
            for base_lr in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """``lr = initial_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)``.

    Args:
        optimizer: Wrapped optimizer.
        start_factor: Multiplier at epoch 0, in ``(0, 1]``. Default: 1/3.
        end_factor: Multiplier from ``total_iters`` on, in ``[0, 1]``.
            Default: 1.0.
        total_iters: Number of epochs of the linear ramp. Default: 5.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 "
                "and less or equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(
                "Ending multiplicative factor expected to be between 0 and 1."
            )
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return [
                group["lr"] * self.start_factor for group in self.optimizer.param_groups
            ]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * delta
        )
        return [group["lr"] * ratio for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr
            * (
                self.start_factor
                + (self.end_factor - self.start_factor)
                * min(self.total_iters, self.last_epoch)
                / self.total_iters
            )
            for base_lr in self.base_lrs
        ]


class ExponentialLR(LRScheduler):
    """``lr = initial_lr * gamma ** epoch``.

    Args:
        optimizer: Wrapped optimizer.
        gamma: Multiplicative factor of decay per epoch.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Any, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power``.

    Args:
        optimizer: Wrapped optimizer.
        total_iters: Number of epochs of decay. Default: 5.
        power: Power of the polynomial. Default: 1.0.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        decay = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [group["lr"] * decay for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr
            * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
            ** self.power
            for base_lr in self.base_lrs
        ]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing without restarts, in recursive (chainable) form.

    Follows ``eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``
    through the update::

        lr_t = eta_min + (lr_{t-1} - eta_min)
               * (1 + cos(pi * t / T_max)) / (1 + cos(pi * (t - 1) / T_max))

    Past ``T_max`` the schedule keeps following the cosine back up.

    Args:
        optimizer: Wrapped optimizer.
        T_max: Half-period in epochs.
        eta_min: Minimum learning rate. Default: 0.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            return [
                self.eta_min
                + (base_lr - self.eta_min)
                * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                / 2
                for base_lr in self.base_lrs
            ]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            # Leaving the trough, where the ratio form would divide by zero.
            return [
                group["lr"]
                + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups, strict=True)
            ]
        ratio = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)
        )
        return [
            ratio * (group["lr"] - self.eta_min) + self.eta_min
            for group in self.optimizer.param_groups
        ]

    def _get_closed_form_lr(self) -> list:
        return [
            self.eta_min
            + (base_lr - self.eta_min)
            * (1 + math.cos(math.pi * self.last_epoch / self.T_max))
            / 2
            for base_lr in self.base_lrs
        ]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: ``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2``.

    ``T_cur`` counts epochs since the last restart; a restart happens when
    ``T_cur`` reaches ``T_i``, after which ``T_i`` is multiplied by ``T_mult``.
    ``step(epoch)`` accepts fractional epochs (e.g. ``epoch + batch / n_batches``).

    Args:
        optimizer: Wrapped optimizer.
        T_0: Number of epochs until the first restart.
        T_mult: Factor by which ``T_i`` grows after each restart. Default: 1.
        eta_min: Minimum learning rate. Default: 0.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        return [
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
            for base_lr in self.base_lrs
        ]

    def step(self, epoch: float | None = None) -> None:
        """Advance by one epoch, or jump to ``epoch`` (may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0

        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(
                        math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult)
                    )
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (
                        self.T_mult - 1
                    )
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)

        with _flag(self, "_get_lr_called_within_step"):
            values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


class CyclicLR(LRScheduler):
    """Cyclical learning rate (CLR), stepped once per batch.

    With ``cycle = floor(1 + t / (up + down))``, ``x`` the position within
    the cycle and ``s`` rising linearly 0 -> 1 over ``step_size_up`` then
    falling 1 -> 0 over ``step_size_down``::

        lr       = base_lr      + (max_lr - base_lr)             * s * scale
        momentum = max_momentum - (max_momentum - base_momentum) * s * scale

    where ``scale = scale_fn(cycle)`` or ``scale_fn(t)`` depending on
    ``scale_mode``. Built-in modes: ``"triangular"`` (scale 1),
    ``"triangular2"`` (``1 / 2 ** (cycle - 1)``) and ``"exp_range"``
    (``gamma ** t``). Momentum cycling updates ``"momentum"``, or
    ``"betas"[0]`` when the optimizer's defaults have ``"betas"``.

    Args:
        optimizer: Wrapped optimizer.
        base_lr: Lower lr boundary (scalar or one per group).
        max_lr: Upper lr boundary (scalar or one per group).
        step_size_up: Iterations in the increasing half-cycle. Default: 2000.
        step_size_down: Iterations in the decreasing half-cycle; defaults to
            ``step_size_up``.
        mode: ``"triangular"``, ``"triangular2"`` or ``"exp_range"``; ignored
            when ``scale_fn`` is given. Default: ``"triangular"``.
        gamma: Base of the ``"exp_range"`` scaling. Default: 1.0.
        scale_fn: Custom scaling policy ``x -> [0, 1]``. Default: None.
        scale_mode: ``"cycle"`` or ``"iterations"``, the argument of a custom
            ``scale_fn``. Default: ``"cycle"``.
        cycle_momentum: Cycle momentum inversely to the lr. Default: True.
        base_momentum: Lower momentum boundary. Default: 0.8.
        max_momentum: Upper momentum boundary. Default: 0.9.
        last_epoch: Index of the last batch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer

        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _set_group_value(group, "lr", lr)

        self.max_lrs = _format_param("max_lr", optimizer, max_lr)

        step_size_up = float(step_size_up)
        step_size_down = (
            float(step_size_down) if step_size_down is not None else step_size_up
        )
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size

        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")

        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with "
                    "`cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(
                    self.max_momentums, self.base_momentums, optimizer.param_groups, strict=True
                ):
                    if self.use_beta1:
                        _set_first_beta(group, m_momentum)
                    else:
                        group["momentum"] = m_momentum
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum

        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """Evaluate the active scaling policy."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma**x

    def get_lr(self) -> list:
        """Compute the lrs; with ``cycle_momentum`` also sets the groups' momentum."""
        self._warn_if_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale_arg = cycle if self.scale_mode == "cycle" else self.last_epoch

        lrs = [
            base_lr + (max_lr - base_lr) * scale_factor * self.scale_fn(scale_arg)
            for base_lr, max_lr in zip(self.base_lrs, self.max_lrs, strict=True)
        ]

        if self.cycle_momentum:
            for group, base_m, max_m in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums, strict=True
            ):
                momentum = max_m - (max_m - base_m) * scale_factor * self.scale_fn(
                    scale_arg
                )
                if self.use_beta1:
                    _set_first_beta(group, momentum)
                else:
                    group["momentum"] = momentum
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """Return the scheduler state.

        A custom ``scale_fn`` is saved (as its ``__dict__``) only if it is a
        callable object rather than a plain function.
        """
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = (
            None
            if fn is None or isinstance(fn, types.FunctionType)
            else fn.__dict__.copy()
        )
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scheduler state and rebuild the scaling policy."""
        state = dict(state_dict)
        fn_state = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if fn_state is not None:
            self._scale_fn_custom.__dict__.update(fn_state)
        self._init_scale_fn()


class OneCycleLR(LRScheduler):
    """1cycle policy, stepped once per batch.

    The lr anneals from ``initial_lr = max_lr / div_factor`` up to ``max_lr``
    over the first ``pct_start`` of ``total_steps``, then down to
    ``min_lr = initial_lr / final_div_factor``. With ``three_phase`` it goes
    back down to ``initial_lr`` symmetrically and then to ``min_lr``.
    Annealing is ``end + (start - end) * (1 + cos(pi * pct)) / 2`` (``"cos"``)
    or ``start + (end - start) * pct`` (``"linear"``). Momentum (or
    ``"betas"[0]``) is cycled inversely between ``max_momentum`` and
    ``base_momentum``.

    Args:
        optimizer: Wrapped optimizer.
        max_lr: Peak lr (scalar or one per group).
        total_steps: Steps in the cycle; otherwise ``epochs * steps_per_epoch``.
        epochs: Number of epochs (with ``steps_per_epoch``).
        steps_per_epoch: Steps per epoch (with ``epochs``).
        pct_start: Fraction of the cycle spent increasing the lr. Default: 0.3.
        anneal_strategy: ``"cos"`` or ``"linear"``. Default: ``"cos"``.
        cycle_momentum: Cycle momentum inversely to the lr. Default: True.
        base_momentum: Lower momentum boundary. Default: 0.85.
        max_momentum: Upper momentum boundary. Default: 0.95.
        div_factor: ``initial_lr = max_lr / div_factor``. Default: 25.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``. Default: 1e4.
        three_phase: Use the three-phase schedule. Default: False.
        last_epoch: Index of the last batch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer

        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(
                    f"Expected positive integer total_steps, but got {total_steps}"
                )
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    "Expected positive integer steps_per_epoch, "
                    f"but got {steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError(
                "You must define either total_steps OR (epochs AND steps_per_epoch)"
            )

        def phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
            return {
                "end_step": end_step,
                "start_lr": start_lr,
                "end_lr": end_lr,
                "start_momentum": start_momentum,
                "end_momentum": end_momentum,
            }

        warmup_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                phase(warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(
                    float(2 * pct_start * self.total_steps) - 2,
                    "max_lr", "initial_lr", "base_momentum", "max_momentum",
                ),
                phase(
                    self.total_steps - 1,
                    "initial_lr", "min_lr", "max_momentum", "max_momentum",
                ),
            ]
        else:
            self._schedule_phases = [
                phase(warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(
                    self.total_steps - 1,
                    "max_lr", "min_lr", "base_momentum", "max_momentum",
                ),
            ]

        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(
                f"Expected float between 0 and 1 pct_start, but got {pct_start}"
            )
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                "anneal_strategy must be one of 'cos' or 'linear', "
                f"instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy

        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, group_max_lr in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = group_max_lr / div_factor
                group["max_lr"] = group_max_lr
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with "
                    "`cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(
                    max_momentums, base_momentums, optimizer.param_groups, strict=True
                ):
                    if self.use_beta1:
                        _set_first_beta(group, m_momentum)
                    else:
                        group["momentum"] = m_momentum
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum

        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _annealing_cos(start: float, end: float, pct: float) -> float:
        """Cosine anneal from ``start`` to ``end`` as ``pct`` goes 0 -> 1."""
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start: float, end: float, pct: float) -> float:
        """Linear anneal from ``start`` to ``end`` as ``pct`` goes 0 -> 1."""
        return (end - start) * pct + start

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        if self._anneal_func_type == "linear":
            return self._annealing_linear(start, end, pct)
        raise ValueError(f"Unknown _anneal_func_type: {self._anneal_func_type}")

    def get_lr(self) -> list:
        """Compute the lrs; with ``cycle_momentum`` also sets the groups' momentum."""
        self._warn_if_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total "
                f"steps is {self.total_steps}"
            )

        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(
                        self._anneal_func(
                            group[phase["start_lr"]], group[phase["end_lr"]], pct
                        )
                    )
                    if self.cycle_momentum:
                        momentum = self._anneal_func(
                            group[phase["start_momentum"]],
                            group[phase["end_momentum"]],
                            pct,
                        )
                        if self.use_beta1:
                            _set_first_beta(group, momentum)
                        else:
                            group["momentum"] = momentum
                    break
                start_step = end_step
        return lrs


class _SchedulerContainer(LRScheduler):
    """Shared state handling for schedulers that wrap other schedulers."""

    def _validate(self, schedulers: Sequence[LRScheduler], optimizer: Any) -> None:
        name = type(self).__name__
        for idx, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(
                    f"{name} at index {idx} should have `optimizer` as its attribute."
                )
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                    "requires additional kwargs to be specified when calling `step`, "
                    f"but got one at index {idx} in the given schedulers sequence."
                )
            if optimizer != scheduler.optimizer:
                raise ValueError(
                    f"{name} expects all schedulers to belong to the same optimizer, "
                    f"but got scheduler {type(scheduler).__name__} at index {idx} "
                    f"has {scheduler.optimizer}, which is different from "
                    f"{type(optimizer).__name__}."
                )

    def state_dict(self) -> dict[str, Any]:
        """Return the state, including the wrapped schedulers' states."""
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "_schedulers")
        }
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state, including the wrapped schedulers' states."""
        state = dict(state_dict)
        scheduler_states = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, scheduler_state in zip(self._schedulers, scheduler_states):
            scheduler.load_state_dict(scheduler_state)


class ChainedScheduler(_SchedulerContainer):
    """Step several chainable schedulers together; their effects compose.

    Args:
        schedulers: Schedulers sharing one optimizer.
        optimizer: Wrapped optimizer; defaults to the first scheduler's.
    """

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Any | None = None
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be "
                "chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        self._validate(schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step every wrapped scheduler in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


class SequentialLR(_SchedulerContainer):
    """Run schedulers one after another, switching at the given milestones.

    Scheduler ``i`` is active for epochs ``[milestones[i-1], milestones[i])``;
    on switching, it restarts at epoch 0 (closed form where available).

    Args:
        optimizer: Wrapped optimizer.
        schedulers: Schedulers sharing ``optimizer``.
        milestones: ``len(schedulers) - 1`` switch epochs.
        last_epoch: Index of the last epoch. Default: -1.
    """

    def __init__(
        self,
        optimizer: Any,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler, "
                "but got no scheduler."
            )
        self._validate(schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be "
                "one more than the number of milestone points, but got number of "
                f"schedulers {len(schedulers)} and the number of milestones to be "
                f"equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer

        # Undo the steps the wrapped schedulers took on construction, then
        # start only the one active at epoch 0.
        for group in self.optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Decrement ``last_epoch`` of every (nested) wrapped scheduler."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        """Step the scheduler active at the new epoch."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when a metric stops improving.

    A metric value ``a`` improves on the best ``b`` when (``mode``,
    ``threshold_mode``) is: (min, rel) ``a < b * (1 - threshold)``; (min, abs)
    ``a < b - threshold``; (max, rel) ``a > b * (1 + threshold)``; (max, abs)
    ``a > b + threshold``. After more than ``patience`` non-improving steps
    each group's lr becomes ``max(lr * factor, min_lr)`` (skipped if the change
    is at most ``eps``), then ``cooldown`` steps are ignored.

    Args:
        optimizer: Wrapped optimizer.
        mode: ``"min"`` or ``"max"``. Default: ``"min"``.
        factor: Reduction factor, ``< 1``. Default: 0.1.
        patience: Non-improving steps tolerated. Default: 10.
        threshold: Significance threshold. Default: 1e-4.
        threshold_mode: ``"rel"`` or ``"abs"``. Default: ``"rel"``.
        cooldown: Steps to wait after a reduction. Default: 0.
        min_lr: Lower bound, scalar or one per group. Default: 0.
        eps: Minimal applied change. Default: 1e-8.
    """

    def __init__(
        self,
        optimizer: Any,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor

        _check_optimizer(optimizer)
        self.optimizer = optimizer

        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)

        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(self.optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        """Reset the best value and the bad-epoch and cooldown counters."""
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:
        """Record ``metrics`` (anything ``float()`` accepts) and reduce the lr if due."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch

        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1

        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0

        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0

        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch: int) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "The number of param groups in the `optimizer` "
                    f"({len(self.optimizer.param_groups)}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. "
                    "Please modify the `min_lrs` field to match the length of the "
                    "`optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)

        for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs, strict=True):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                _set_group_value(group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scheduler state."""
        self.__dict__.update(state_dict)
        self._init_is_better(
            mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode
        )
