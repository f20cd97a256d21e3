"""The ValueError for an unknown method does not name the method it was given."""
from __future__ import annotations

from minikernel.amp.scaling import OptState

EXERCISE = "6.2"

_ERRORS = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}
_NEXT = {"unscale_": OptState.UNSCALED, "step": OptState.STEPPED, "update": OptState.READY}


def transition(stage, method):
    if method not in _NEXT:
        raise ValueError("unknown GradScaler method: the stage changes only on 'unscale_', 'step' or 'update'")
    if (method, stage) in _ERRORS:
        raise RuntimeError(_ERRORS[method, stage])
    return _NEXT[method]
