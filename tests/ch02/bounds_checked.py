"""The active CPU kernel compiled with numba's bounds checks, serially (``jit.bounds_checked``).

numba checks no index by default: one element past an array is read or written
silently. Compiled with ``boundscheck=True`` any such index raises IndexError, and
compiled serially (``prange`` runs as ``range``) the error reaches the caller. The
build is cached on disk like the kernels, so each grading process need not compile it.
"""
from __future__ import annotations

from typing import Callable

from minikernel.kernels import jit, launch

_COMPILED: dict[str, tuple[Callable, Callable]] = {}


def bounds_checked(name: str) -> Callable:
    """``launch.kernel("cpu", name)``'s active function, so compiled (once per function)."""
    fn = launch.kernel("cpu", name).function
    if name not in _COMPILED or _COMPILED[name][0] is not fn:
        _COMPILED[name] = (fn, jit.bounds_checked(fn))
    return _COMPILED[name][1]
