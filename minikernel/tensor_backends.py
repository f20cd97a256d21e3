"""Where a Tensor method sends its work: the kernel path or the autograd path.

``x + y`` on tensors that take no part in autograd runs chapter 02's kernels
(``minikernel.ops``); when an operand requires grad, or while a backward pass
runs, it goes to the autograd layer (``minikernel.autograd.functions``), which
records the graph. Both layers sit above the Tensor and import it, so the Tensor
can't import them: each path is plugged in here once, when ``minikernel`` is
imported (``register``), the way PyTorch's kernels register themselves with the
dispatcher instead of the Tensor knowing them.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Optional

from .autograd.grad_mode import backward_running


class _Paths:
    kernels: Optional[ModuleType] = None    #: minikernel.ops
    autograd: Optional[ModuleType] = None   #: minikernel.autograd.functions
    backward: Optional[Callable] = None     #: minikernel.autograd.backward


_PATHS = _Paths()


def register(kernels: ModuleType, autograd: ModuleType, backward: Callable) -> None:
    """Plug in the two paths (called once by ``minikernel/__init__.py``)."""
    _PATHS.kernels, _PATHS.autograd, _PATHS.backward = kernels, autograd, backward


def _require(value: Any, what: str) -> Any:
    if value is None:
        raise RuntimeError(f"minikernel's {what} is not registered yet: import minikernel (the package) first")
    return value


def kernels() -> ModuleType:
    """``minikernel.ops``: device and dtype dispatch, checks, then your chapter 02 kernel."""
    return _require(_PATHS.kernels, "kernel path (minikernel.ops)")


def autograd() -> ModuleType:
    """``minikernel.autograd.functions``: numpy values, and a graph node when recording."""
    return _require(_PATHS.autograd, "autograd path (minikernel.autograd.functions)")


def run_backward(*args: Any) -> None:
    """``minikernel.autograd.backward(*args)``, for ``Tensor.backward``."""
    _require(_PATHS.backward, "autograd engine")(*args)


def autograd_active(args: tuple) -> bool:
    """Whether an operation on ``args`` takes the autograd path: when an operand
    requires grad, or while a backward pass runs. Otherwise it is the kernel path."""
    return backward_running() or any(getattr(a, "requires_grad", False) is True for a in args)


def route(name: str, *args: Any) -> Any:
    """Call ``name(*args)`` on the autograd path when autograd is involved, else on the kernel path."""
    return getattr(autograd() if autograd_active(args) else kernels(), name)(*args)


class _AutogradFunctions:
    """``minikernel.autograd.functions``, looked up at each use (see ``functions``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(autograd(), name)

    def __repr__(self) -> str:
        return "<minikernel.autograd.functions (through tensor_backends)>"


#: The autograd path's functions (``F.mul``, ``F.sum``, ...) for modules that the
#: op modules themselves import (the backward formulas of ``autograd/derivatives.py``):
#: they reach ``minikernel.autograd.functions`` through this registry at call time.
functions = _AutogradFunctions()
