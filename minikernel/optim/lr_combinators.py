"""Warm-up schedulers and schedulers made of schedulers (``torch.optim.lr_scheduler``):
``ConstantLR``, ``LinearLR``, ``SequentialLR`` and ``ChainedScheduler``.

The first two scale the base lr by a factor that changes over ``total_iters`` epochs
(computed from the current lr, as torch does, so they compose with others); the last
two run other schedulers: one after another at ``milestones``, or all at every step.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Optional, Sequence

from .lr_scheduler import LRScheduler
from .plateau import ReduceLROnPlateau


class ConstantLR(LRScheduler):
    r"""lr × ``factor`` until epoch ``total_iters``, then the base lr (``torch.optim.lr_scheduler.ConstantLR``).

    Args:
        optimizer (Optimizer): wrapped optimizer.
        factor (float, optional): in [0, 1]. Default: ``1/3``
        total_iters (int, optional): epochs at the reduced lr. Default: ``5``
        last_epoch (int, optional): index of the last epoch. Default: ``-1``

    Example::

        >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)   # 0.05, 0.05, 0.1, 0.1, ... for lr 0.1
    """

    def __init__(self, optimizer: Any, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [base * (self.factor + done * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    r"""lr × a factor going linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs
    (``torch.optim.lr_scheduler.LinearLR``): the usual warm-up.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        start_factor (float, optional): in (0, 1]. Default: ``1/3``
        end_factor (float, optional): in [0, 1]. Default: ``1.0``
        total_iters (int, optional): epochs to get there. Default: ``5``
        last_epoch (int, optional): index of the last epoch. Default: ``-1``
    """

    def __init__(self, optimizer: Any, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self.last_epoch > self.total_iters:
            return lrs
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)
        return [lr * ratio for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done) for base in self.base_lrs]


def _check_schedulers(owner: str, schedulers: Sequence[Any], optimizer: Any, what: str) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler{what}, but got no scheduler.")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             f"kwargs to be specified when calling `step`, but got one at index {i} in the given "
                             f"schedulers sequence.")
        if s.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(s).__name__} at index {i} has {s.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


class _Composite(LRScheduler):
    """What the two composites share: saving their schedulers' state with their own."""

    _schedulers: list

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        inner = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, saved in zip(self._schedulers, inner):
            s.load_state_dict(saved)


class SequentialLR(_Composite):
    r"""``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (restarted at its epoch 0), ...
    (``torch.optim.lr_scheduler.SequentialLR``).

    Args:
        optimizer (Optimizer): the optimizer every scheduler drives.
        schedulers (list): the schedulers, in order.
        milestones (list): the epochs at which the next one takes over (one fewer than ``schedulers``).
        last_epoch (int, optional): index of the last epoch. Default: ``-1``

    Example::

        >>> warm = LinearLR(opt, start_factor=0.1, total_iters=3)
        >>> decay = ExponentialLR(opt, gamma=0.9)
        >>> sched = SequentialLR(opt, [warm, decay], milestones=[3])
    """

    def __init__(self, optimizer: Any, schedulers: Sequence[Any], milestones: Sequence[int],
                 last_epoch: int = -1) -> None:
        _check_schedulers(type(self).__name__, schedulers, optimizer, "")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch, self.optimizer = last_epoch + 1, optimizer
        for group in optimizer.param_groups:  # the other schedulers' first steps are undone
            group["lr"] = group["initial_lr"]
        for s in self._schedulers:
            s.last_epoch -= 1
        self._schedulers[0]._initial_step()
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler.step(0)  # the next scheduler starts at its epoch 0 (torch warns here too)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    r"""Every scheduler steps at every ``step()``, in order, each on the lr the previous one left
    (``torch.optim.lr_scheduler.ChainedScheduler``).

    Args:
        schedulers (list): the schedulers.
        optimizer (Optimizer, optional): the optimizer they drive. Default: the first one's.
    """

    def __init__(self, schedulers: Sequence[Any], optimizer: Optional[Any] = None) -> None:
        optimizer = optimizer or schedulers[0].optimizer if schedulers else optimizer
        _check_schedulers(type(self).__name__, schedulers, optimizer, " to be chained")
        self._schedulers, self.optimizer = list(schedulers), optimizer
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self) -> None:  # type: ignore[override]
        for s in self._schedulers:
            s.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
