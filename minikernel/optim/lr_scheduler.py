"""Learning-rate schedulers: ``LambdaLR`` (exercise 8.4), ``StepLR``, ``CosineAnnealingLR``.

A scheduler rewrites ``group["lr"]`` of every param group of its optimizer. At
construction it records each group's starting lr as ``group["initial_lr"]`` (the
*base* lrs) and takes one step (``last_epoch`` goes from -1 to 0), so the lr of
epoch 0 is in place before the first ``optimizer.step()``. Each ``scheduler.step()``
— once per epoch, *after* ``optimizer.step()`` — moves to the next epoch and
writes its lrs; ``get_last_lr()`` returns them.

Call order in a training loop (torch warns if the scheduler steps first)::

    for epoch in range(n):
        for x, y in data:
            optimizer.zero_grad(); loss_fn(model(x), y).backward(); optimizer.step()
        scheduler.step()

The schedulers here drive minikernel's optimizers, and torch's too (they only
read and write ``param_groups``).
"""
from __future__ import annotations

import math
import sys
import types
import warnings
from bisect import bisect_right
from collections import Counter
from functools import wraps
from typing import Any, Callable, Optional, Sequence, Union
from weakref import ref

from ..course.exercise import exercise
from .optimizer import Optimizer

LrLambda = Callable[[int], float]  #: epoch -> factor multiplying the base lr

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. Please open an issue if you are "
    "unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")
STEP_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should "
    "call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
    "result in PyTorch skipping the first value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")
GET_LR_WARNING = "To get the last learning rate computed by the scheduler, please use `get_last_lr()`."


@exercise("8.4")
def expand_lr_lambdas(lr_lambda: Union[LrLambda, Sequence[LrLambda]], num_groups: int) -> list[LrLambda]:
    """One lr lambda per param group.

    A single callable is used for every group (``[lr_lambda] * num_groups``); a list or
    tuple must have exactly one per group, else
    ``ValueError(f"Expected {num_groups} lr_lambdas, but got {len(lr_lambda)}")``.
    Only a list or a tuple is one lambda per group: any other object (a callable schedule
    that can also be iterated over, say) is a single lambda. Return a new list.

    Matches: ``torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda).lr_lambdas`` and its ValueError.
    """
    # TODO(8.4): ≈5 lines
    raise NotImplementedError("exercise 8.4 (expand_lr_lambdas) is not implemented yet")


@exercise("8.4")
def lambda_lrs(base_lrs: Sequence[float], lr_lambdas: Sequence[LrLambda], last_epoch: int) -> list[float]:
    """The lr of each group at epoch ``last_epoch``: ``base_lr * lr_lambda(last_epoch)``.

    ``base_lrs[i]`` is group i's ``initial_lr``: the factor always multiplies the *base*
    lr, never the current one (LambdaLR does not compound). With ``lr_lambda =
    lambda e: (e + 1) ** 2`` and base lr 0.1 the lrs are 0.1, 0.4, 0.9, 1.6, ...

    Matches: ``torch.optim.lr_scheduler.LambdaLR``: ``get_last_lr()`` after each ``step()``.
    """
    # TODO(8.4): ≈1 line
    raise NotImplementedError("exercise 8.4 (lambda_lrs) is not implemented yet")


def _is_optimizer(optimizer: Any) -> bool:
    if isinstance(optimizer, Optimizer):
        return True
    torch_optim = sys.modules.get("torch.optim")  # torch's optimizers too, when torch is loaded
    return torch_optim is not None and isinstance(optimizer, torch_optim.Optimizer)


class LRScheduler:
    r"""Base class of the schedulers (``torch.optim.lr_scheduler.LRScheduler``).

    Args:
        optimizer (Optimizer): the optimizer whose ``param_groups``' lrs it sets
            (minikernel's or torch's).
        last_epoch (int, optional): index of the last epoch; ``-1`` starts afresh. A
            resumed scheduler needs ``initial_lr`` in every group. Default: ``-1``

    A subclass implements ``get_lr()``: the lrs of epoch ``self.last_epoch``.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        if not _is_optimizer(optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.")
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._track_optimizer_steps()
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def _track_optimizer_steps(self) -> None:
        """Wrap ``optimizer.step`` so that ``step()`` can tell whether it ran first (torch does the same)."""
        opt = self.optimizer
        if hasattr(opt.step, "_wrapped_by_lr_sched"):
            return
        opt_ref, func = ref(opt), opt.step.__func__

        @wraps(func)
        def wrapper(*args, **kwargs):
            o = opt_ref()
            o._opt_called = True
            return func.__get__(o, type(o))(*args, **kwargs)

        wrapper._wrapped_by_lr_sched = True
        opt.step = wrapper

    def _initial_step(self) -> None:
        """Step to epoch 0 again (``SequentialLR`` restarts its first scheduler this way, as torch does)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The lrs of epoch ``last_epoch`` (called by ``step()``; use ``get_last_lr()`` to read them)."""
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def _warn_if_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(GET_LR_WARNING, UserWarning, stacklevel=3)

    def get_last_lr(self) -> list[float]:
        """The lrs the last ``step()`` wrote, one per param group."""
        return self._last_lr

    def step(self, epoch: Optional[int] = None) -> None:
        """Move to the next epoch (or to ``epoch``, deprecated) and write its lrs into the groups."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(STEP_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                lrs = self.get_lr()
            else:
                self.last_epoch = epoch
                lrs = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        if len(lrs) != len(self.optimizer.param_groups):
            raise ValueError(f"{type(self).__name__}.get_lr() gave {len(lrs)} lrs for "
                             f"{len(self.optimizer.param_groups)} param groups")
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer: ``last_epoch``, ``base_lrs``, ``_last_lr``, ..."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    r"""lr of group i at epoch e = ``initial_lr_i * lr_lambda_i(e)`` (``torch.optim.lr_scheduler.LambdaLR``).

    Args:
        optimizer (Optimizer): wrapped optimizer.
        lr_lambda (function or list): a function of the epoch, or one per param group.
        last_epoch (int, optional): index of the last epoch. Default: ``-1``

    Example::

        >>> opt = minikernel.optim.SGD([x], lr=0.1)
        >>> sched = LambdaLR(opt, lambda epoch: (epoch + 1) ** 2)
        >>> sched.get_last_lr()      # [0.1]; after one sched.step(): [0.4]
    """

    def __init__(self, optimizer: Any, lr_lambda: Union[LrLambda, Sequence[LrLambda]], last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = expand_lr_lambdas(lr_lambda, len(optimizer.param_groups))
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        return lambda_lrs(self.base_lrs, self.lr_lambdas, self.last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Lambdas are not saved (functions do not pickle reliably); a callable object's
        ``__dict__`` is."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lr_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class StepLR(LRScheduler):
    r"""Multiply the lr by ``gamma`` every ``step_size`` epochs (``torch.optim.lr_scheduler.StepLR``).

    Args:
        optimizer (Optimizer): wrapped optimizer.
        step_size (int): period of the decay, in epochs.
        gamma (float, optional): factor of the decay. Default: ``0.1``
        last_epoch (int, optional): index of the last epoch. Default: ``-1``

    Example::

        >>> sched = StepLR(opt, step_size=30, gamma=0.1)  # lr 0.05 for epochs 0-29, 0.005 for 30-59, ...
    """

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing from the base lr down to ``eta_min`` over ``T_max`` epochs
    (``torch.optim.lr_scheduler.CosineAnnealingLR``):

    .. math:: \eta_t = \eta_{min} + \tfrac12(\eta_{max} - \eta_{min})(1 + \cos(\pi t / T_{max}))

    computed recursively from the current lr, as torch does (so an lr changed by hand
    carries on), and rising again after ``T_max``.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        T_max (int): half a period, in epochs.
        eta_min (float, optional): the lowest lr. Default: ``0.0``
        last_epoch (int, optional): index of the last epoch. Default: ``-1``

    Example::

        >>> sched = CosineAnnealingLR(opt, T_max=10)
    """

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                    / 2 for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    r"""Multiply the lr by ``gamma`` every epoch (``torch.optim.lr_scheduler.ExponentialLR``):
    :math:`\eta_t = \eta_0 \gamma^t`, computed from the current lr as torch does.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        gamma (float): factor of the decay per epoch.
        last_epoch (int, optional): index of the last epoch. Default: ``-1``
    """

    def __init__(self, optimizer: Any, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        if self._is_initial:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    r"""Multiply the lr by ``gamma`` at each milestone epoch (``torch.optim.lr_scheduler.MultiStepLR``);
    a milestone listed n times multiplies by ``gamma ** n``.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        milestones (list): epochs at which to decay (any order).
        gamma (float, optional): factor of each decay. Default: ``0.1``
        last_epoch (int, optional): index of the last epoch. Default: ``-1``
    """

    def __init__(self, optimizer: Any, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]
