"""Exercise 2.1: chapter 01's ``to_index``, in the form compiled kernels can call.

Kernels run your index helpers once per element, compiled by numba. Chapter 01's
``index_to_position`` compiles as it is: it reads two arrays and returns an int.
``to_index`` cannot: it *returns a new tuple* whose length depends on the shape, and
compiled code has no variable-length tuples (numba needs every tuple's length at
compile time), while GPU code cannot allocate memory at all. So kernels allocate an
**index buffer** once (an array per CPU task, a ``cuda.local.array`` per GPU thread)
and a helper *writes* the index into it — MiniTorch's style, and ATen's
``OffsetCalculator`` idea.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..course.exercise import exercise

IndexBuffer = np.ndarray  #: int64 array the index is written into (len(shape) elements)


@exercise("2.1")
def to_index_into(ordinal: int, shape: Sequence[int], out_index: IndexBuffer) -> None:
    """Write the multi-index of the ``ordinal``-th element (row-major) into ``out_index``.

    Exercise 1.3 without building a tuple: for ``d`` from the last dimension down,
    ``out_index[d] = ordinal % shape[d]`` and ``ordinal //= shape[d]``. Write exactly
    ``len(shape)`` entries; return nothing. No range check: kernels only ask for
    ordinals in ``range(prod(shape))`` (and a GPU thread cannot raise).

    This runs inside compiled kernels (``numba.njit`` and ``cuda.jit(device=True)``),
    so stay within numba's subset: integer arithmetic, ``for`` over ``range``,
    indexing the arrays you are given — no lists, tuples or exceptions.

    Matches: ``torch.unravel_index(torch.tensor(ordinal), shape)``, written into
    ``out_index`` instead of returned.
    """
    # TODO(2.1): ≈4 lines
    raise NotImplementedError("exercise 2.1 (to_index_into) is not implemented yet")
