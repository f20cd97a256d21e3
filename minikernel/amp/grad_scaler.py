"""``minikernel.amp.GradScaler``: torch.amp.GradScaler's public API, built on your exercises.

Everything here is complete code (lazy creation of the scale, per-optimizer
bookkeeping, argument checks, state_dict); the arithmetic and the stage machine are
the chapter's exercises in ``scaling.py``:

* ``scale``     -> ``scale_outputs`` (6.1)
* ``unscale_``  -> ``transition`` (6.2), then ``unscale_grads_`` (6.3)
* ``step``      -> ``transition`` (6.2), ``unscale_`` if not done yet, ``maybe_opt_step`` (6.4)
* ``update``    -> ``update_scale_`` (6.5)

The code follows ``torch/amp/grad_scaler.py`` line by line where it matters, so that
the same calls on both give the same scales, skipped steps, bit-identical
parameters and the same exceptions.
"""
from __future__ import annotations

import inspect
import warnings
from collections import defaultdict
from typing import Any

import torch

from . import scaling as S  # S.<name> is looked up per call: your code, or the reference
from .scaling import FoundInfPerDevice, OptState, Outputs

_FIX = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
_NEW_SCALE = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
              "torch.FloatTensor with requires_grad=False.")


def _fresh_state() -> dict[str, Any]:
    """One optimizer's bookkeeping for the current iteration."""
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    r"""Dynamic loss scaling for mixed-precision training.

    ``scale(loss)`` multiplies the loss by the scale factor S; after ``backward()``
    every gradient is S times too large. ``step(optimizer)`` divides them by S
    (unless ``unscale_(optimizer)`` already did), and calls ``optimizer.step()``
    only if none of them is inf/NaN. ``update()`` multiplies S by ``backoff_factor``
    after an inf/NaN, or by ``growth_factor`` after ``growth_interval`` clean
    iterations in a row.

    Args:
        device (str, optional): device type of the scale, ``"cuda"`` or ``"cpu"``.
            A ``"cuda"`` scaler on a machine without CUDA warns and disables itself,
            as torch's does. Default: ``"cuda"``
        init_scale (float, optional): initial scale factor. Default: ``2.0**16``
        growth_factor (float, optional): factor (> 1) applied after ``growth_interval``
            clean iterations. Default: ``2.0``
        backoff_factor (float, optional): factor (< 1) applied after an iteration
            with inf/NaN gradients. Default: ``0.5``
        growth_interval (int, optional): clean iterations needed to grow. Default: ``2000``
        enabled (bool, optional): ``False`` makes every method a pass-through
            (``step`` just calls ``optimizer.step()``). Default: ``True``

    Example::

        >>> scaler = minikernel.amp.GradScaler("cpu")
        >>> with torch.autocast("cpu", dtype=torch.float16):
        ...     loss = loss_fn(model(x), y)
        >>> scaler.scale(loss).backward()
        >>> scaler.unscale_(optimizer)                      # optional: clip true gradients
        >>> torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        >>> scaler.step(optimizer)                          # skipped if a gradient is inf/NaN
        >>> scaler.update()
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not torch.cuda.is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: torch.Tensor | None = None          # made by the first scale() call
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: torch.Tensor | None = None
            # keyed by id(optimizer), like torch: an optimizer need not be hashable
            self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ plumbing
    def _check_scale_growth_tracker(self, funcname: str) -> tuple[torch.Tensor, torch.Tensor]:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _FIX)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + _FIX)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device: torch.device) -> None:
        # The scale lives on the device of the first output scaled, as a tensor: on a
        # GPU, torch's update kernel then reads and writes it without a sync.
        self._scale = torch.full((), self._init_scale, dtype=torch.float32, device=device)
        self._growth_tracker = torch.full((), self._init_growth_tracker, dtype=torch.int32, device=device)

    def _scale_source(self):
        """``scale_on(device)`` for one scale() call: created on first use, one copy per device."""
        copies: dict[torch.device, torch.Tensor] = {}

        def scale_on(device: torch.device) -> torch.Tensor:
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(device)
            if device not in copies:
                copies[device] = self._scale.to(device=device, non_blocking=True)
            return copies[device]

        return scale_on

    @staticmethod
    def _check_grads_supported(optimizer: torch.optim.Optimizer) -> None:
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None and param.grad.is_sparse:
                    raise TypeError("minikernel.amp.GradScaler does not unscale sparse gradients; "
                                    "use torch.amp.GradScaler for models with sparse embeddings")

    # ------------------------------------------------------------------ the API
    def scale(self, outputs: Outputs) -> Outputs:
        """Multiply a tensor, or (nested) lists/tuples/iterables of tensors, by the scale factor.

        Returns ``outputs`` unchanged when the scaler is disabled.
        """
        if not self._enabled:
            return outputs
        return S.scale_outputs(outputs, self._scale_source())

    def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and record inf/NaN.

        Optional: call it to clip or inspect true gradients before ``step``. At most
        once per optimizer per iteration, and not after ``step`` (RuntimeError).
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        self._check_grads_supported(optimizer)
        state = self._per_optimizer_states[id(optimizer)]
        after = S.transition(state["stage"], "unscale_")
        # The reciprocal in float64, then rounded to float32, as torch does (a float32
        # division can be imprecise under some compiler options).
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = torch.full((), 0.0, dtype=torch.float32, device=self._scale.device)
        state["found_inf_per_device"] = S.unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = after

    def step(self, optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
        """Unscale (if ``unscale_`` was not called), then ``optimizer.step(*args, **kwargs)``
        unless a gradient is inf/NaN. Returns what ``optimizer.step`` returned, or None
        when the step was skipped. Closures are not supported.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        after = S.transition(state["stage"], "step")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._fused_step(optimizer, state, after, *args, **kwargs)
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        retval = S.maybe_opt_step(optimizer, state["found_inf_per_device"], *args, **kwargs)
        state["stage"] = after
        return retval

    def _fused_step(self, optimizer, state: dict[str, Any], after: OptState, *args: Any, **kwargs: Any) -> Any:
        """Optimizers with ``_step_supports_amp_scaling`` (``fused=True``) unscale and skip
        inside their own step: hand them the scale and the inf flag as attributes."""
        if "grad_scaler" in inspect.signature(optimizer.step).parameters:
            raise TypeError(f"{type(optimizer).__name__}.step takes a grad_scaler argument, a protocol "
                            "torch is retiring; minikernel's GradScaler supports only optimizers that "
                            "read optimizer.grad_scale and optimizer.found_inf")
        if state["stage"] is OptState.READY:
            # check for inf/NaN without unscaling: inv_scale 1.0, fp16 allowed
            self._check_grads_supported(optimizer)
            one = torch.full((), 1.0, dtype=torch.float32, device=self._scale.device)
            zero = torch.full((), 0.0, dtype=torch.float32, device=self._scale.device)
            state["found_inf_per_device"] = S.unscale_grads_(optimizer, one, zero, True)
        found_inf = sum([t.to(self._scale.device, non_blocking=True)
                         for t in state["found_inf_per_device"].values()])
        optimizer.grad_scale = (getattr(optimizer, "grad_scale", None) if state["stage"] is OptState.UNSCALED
                                else self._scale * getattr(optimizer, "grad_scale", 1))
        optimizer.found_inf = found_inf
        retval = optimizer.step(*args, **kwargs)
        state["stage"] = after
        del optimizer.grad_scale
        del optimizer.found_inf
        return retval

    def update(self, new_scale: float | torch.Tensor | None = None) -> None:
        """Back off or grow the scale from this iteration's inf/NaN checks, then start
        a new iteration (every optimizer READY).

        Args:
            new_scale (float or Tensor, optional): set the scale to this value instead
                (a float, or a 1-element float32 tensor on the scaler's device with
                ``requires_grad=False``). Default: ``None``
        """
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                if not isinstance(new_scale, torch.Tensor):
                    # torch fails here with an AttributeError too, but says less
                    raise AttributeError(f"{_NEW_SCALE} Got {type(new_scale).__name__}.")
                if (new_scale.device.type != self._device or new_scale.numel() != 1
                        or new_scale.requires_grad is True):
                    raise AssertionError(_NEW_SCALE)
                scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for other in found_infs[1:]:
                found_inf_combined += other
            S.update_scale_(scale, growth_tracker, found_inf_combined, self._growth_factor,
                            self._backoff_factor, self._growth_interval)
        # a new iteration: every optimizer back to READY, no inf checks recorded
        self._per_optimizer_states = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ getters, setters, state
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def _found_inf_per_device(self, optimizer: torch.optim.Optimizer) -> FoundInfPerDevice:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def state_dict(self) -> dict[str, Any]:
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (a no-op when disabled)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            # tensors are re-created lazily after unpickling, from these two numbers
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        if not self._enabled:
            return f"GradScaler(device={self._device!r}, enabled=False)"
        stages = ", ".join(s["stage"].name for s in self._per_optimizer_states.values()) or "no optimizer yet"
        return (f"GradScaler(device={self._device!r}, scale={self.get_scale():g}, "
                f"growth_tracker={self._get_growth_tracker()}, stages=[{stages}])")
