"""The active CPU kernel compiled with numba's bounds checks, serially.

numba checks no index by default: one element past an array is read or written
silently. Compiled with ``boundscheck=True`` any such index raises IndexError, and
compiled serially (``prange`` runs as ``range``) the error reaches the caller.
"""
from __future__ import annotations

from typing import Callable

import numba

from minikernel.kernels import launch

_COMPILED: dict[str, tuple[Callable, Callable]] = {}


def bounds_checked(name: str) -> Callable:
    """``launch.kernel("cpu", name)``'s active function, so compiled (once per function)."""
    fn = launch.kernel("cpu", name).function
    if name not in _COMPILED or _COMPILED[name][0] is not fn:
        _COMPILED[name] = (fn, numba.njit(boundscheck=True, error_model="numpy", parallel=False)(fn))
    return _COMPILED[name][1]
