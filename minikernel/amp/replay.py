"""Replay a sequence of GradScaler calls and report what happened, for any scaler class.

The chapter asks the same question of torch.amp.GradScaler and of yours: after
these calls, where is the optimizer, or what did the last call raise?
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from .scaling import OptState

#: the calls ``play`` understands
CALLS = ("backward", "backward fp16", "unscale_", "step", "step other", "update", "zero_grad")


def _set_up(make_scaler: Callable[..., Any]):
    p = torch.nn.Parameter(torch.ones(2))
    half = torch.nn.Parameter(torch.ones(2, dtype=torch.float16))
    q = torch.nn.Parameter(torch.ones(2))
    return make_scaler("cpu"), p, half, torch.optim.SGD([p, half], lr=0.1), q, torch.optim.SGD([q], lr=0.1)


def play(make_scaler: Callable[..., Any], calls: Sequence[str]) -> str:
    """Make ``calls`` on a fresh ``make_scaler("cpu")`` and describe the outcome.

    The set-up: an optimizer over a float32 parameter (and a float16 one, which gets
    a gradient only from ``"backward fp16"``), and an ``other`` optimizer over a third
    parameter. ``"backward"`` is ``scaler.scale(loss).backward()``; ``"unscale_"``,
    ``"step"`` and ``"zero_grad"`` act on the first optimizer, ``"step other"`` on
    the other one, ``"update"`` is ``scaler.update()``.

    Returns ``"<first optimizer's stage>, scale <scale>"`` when every call succeeds,
    else ``"<call>: <ExceptionType>: <message>"`` for the first call that raised.

    Example::

        >>> play(torch.amp.GradScaler, ["backward", "step", "step"])
        'step: RuntimeError: step() has already been called since the last update().'
    """
    scaler, p, half, opt, q, other = _set_up(make_scaler)
    for call in calls:
        try:
            if call in ("backward", "backward fp16"):
                loss = p.sum() + q.sum() + (half.sum().float() if call == "backward fp16" else 0)
                scaler.scale(loss).backward()
            elif call in ("unscale_", "step"):
                getattr(scaler, call)(opt)
            elif call == "step other":
                scaler.step(other)
            elif call == "update":
                scaler.update()
            elif call == "zero_grad":
                opt.zero_grad()
            else:
                raise ValueError(f"play: unknown call {call!r}; use one of {', '.join(CALLS)}")
        except NotImplementedError:
            raise  # an unfinished exercise: let the notebook say which
        except ValueError as err:
            if str(err).startswith("play:"):
                raise
            return f"{call}: {type(err).__name__}: {err}"
        except Exception as err:  # noqa: BLE001 - the error is the answer
            return f"{call}: {type(err).__name__}: {err}"
    state = scaler._per_optimizer_states.get(id(opt))
    return f"{'READY' if state is None else state['stage'].name}, scale {scaler.get_scale():g}"


def torch_transition(stage: OptState, method: str) -> OptState:
    """The stage torch.amp.GradScaler moves an optimizer in ``stage`` to on ``method``
    ("unscale_", "step" or "update"); raises torch's error where torch refuses.

    Another optimizer has stepped first, so that ``update`` has inf checks to use.
    """
    if method not in ("unscale_", "step", "update"):
        raise ValueError(f"method must be 'unscale_', 'step' or 'update', not {method!r}")
    scaler, p, _, opt, q, other = _set_up(torch.amp.GradScaler)
    scaler.scale(p.sum() + q.sum()).backward()
    scaler.step(other)
    if stage is not OptState.READY:
        getattr(scaler, "unscale_" if stage is OptState.UNSCALED else "step")(opt)
    getattr(scaler, method)(*([] if method == "update" else [opt]))
    state = scaler._per_optimizer_states.get(id(opt))
    return OptState.READY if state is None else OptState[state["stage"].name]


def run_update(update_fn: Callable[..., Any], scale: float, growth_tracker: int, found_inf: float,
               growth_factor: float, backoff_factor: float, growth_interval: int) -> tuple[float, int]:
    """Call ``update_fn`` — ``torch._amp_update_scale_`` or your ``update_scale_`` — on
    fresh tensors made from these numbers; return the new ``(scale, growth_tracker)``.

    Example::

        >>> run_update(torch._amp_update_scale_, 65536.0, 1, 0.0, 2.0, 0.5, 2)
        (131072.0, 0)
    """
    scale_t = torch.tensor(scale, dtype=torch.float32)
    tracker_t = torch.tensor(growth_tracker, dtype=torch.int32)
    update_fn(scale_t, tracker_t, torch.tensor(found_inf, dtype=torch.float32), growth_factor, backoff_factor,
              growth_interval)
    return scale_t.item(), int(tracker_t.item())


def run_unscale(unscale_fn: Callable[..., Any], grads: Sequence[torch.Tensor],
                inv_scale: torch.Tensor) -> tuple[list[list[float | str]], float]:
    """Call ``unscale_fn`` — ``torch._amp_foreach_non_finite_check_and_unscale_`` or your
    ``non_finite_check_and_unscale_`` — on copies of ``grads``; return the unscaled
    gradients as lists (NaN written ``"nan"``, so equal results compare equal) and
    ``found_inf``.

    Example::

        >>> run_unscale(torch._amp_foreach_non_finite_check_and_unscale_,
        ...             [torch.tensor([2.0, float("nan")])], torch.tensor(0.5))
        ([[1.0, 'nan']], 1.0)
    """
    copies, found_inf = [g.clone() for g in grads], torch.zeros(1)
    unscale_fn(copies, found_inf, inv_scale)
    return [["nan" if v != v else v for v in g.float().reshape(-1).tolist()] for g in copies], found_inf.item()
