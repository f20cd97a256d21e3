"""32-bit vs 64-bit index arithmetic: one strided gather, compiled twice (chapter 02).

``gather(width)`` returns a compiled kernel that copies a strided view into a
contiguous output, ``out[i] = storage[position(i)]``, where ``position`` is what
every kernel of this course computes per element: split the linear index ``i`` into
a multi-index by dividing by the sizes (last dimension first), then
``offset + sum(index[d] * strides[d])`` (exercises 1.2 and 2.1). The two builds run
the same loop and differ only in the width of that arithmetic:

* ``64``: numba's own integer arithmetic. numba types every integer operation at
  least as wide as ``intp`` (64 bits here), so an ``int32`` argument is widened
  before it is divided or multiplied.
* ``32``: the divisions, remainders, multiplications and additions are emitted as
  32-bit LLVM instructions (``sdiv i32``, ``srem i32``, ``mul i32``, ``add i32``) by
  two small ``numba.extending.intrinsic`` functions, so the compiled code is what a
  C++ kernel with ``index_t = int32_t`` (PyTorch's ``PackedTensorAccessor32``,
  ``OffsetCalculator<N, uint32_t>``) would compute. It is valid only when every
  position fits in 32 bits: ``fits_int32`` says so, like PyTorch's
  ``canUse32BitIndexMath``, and the 32-bit gather refuses anything larger.

The loop is serial (one thread), so a timing measures the arithmetic per element,
not how the threads were scheduled.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

#: The largest value a signed 32-bit index holds.
INT32_MAX = 2**31 - 1


@intrinsic
def _divmod32(typingctx, n, d):
    """``(n // d, n % d)`` with 32-bit signed instructions (for n >= 0, d > 0)."""
    sig = types.UniTuple(types.int32, 2)(types.int32, types.int32)

    def codegen(context, builder, signature, args):
        q, r = builder.sdiv(args[0], args[1]), builder.srem(args[0], args[1])
        return context.make_tuple(builder, signature.return_type, (q, r))

    return sig, codegen


@intrinsic
def _muladd32(typingctx, a, b, c):
    """``a * b + c`` with 32-bit instructions."""
    sig = types.int32(types.int32, types.int32, types.int32)

    def codegen(context, builder, signature, args):
        return builder.add(builder.mul(args[0], args[1]), args[2])

    return sig, codegen


@numba.njit
def _divmod64(n, d):
    """``(n // d, n % d)`` with numba's integers (64-bit)."""
    return n // d, n % d


@numba.njit
def _muladd64(a, b, c):
    """``a * b + c`` with numba's integers (64-bit)."""
    return a * b + c


def _make(index_type, divmod_, muladd) -> Callable:
    dm, ma = divmod_, muladd

    def kernel(out, storage, shape, strides, offset):
        nd = shape.size
        for i in range(out.size):
            rem = index_type(i)
            pos = index_type(offset)
            for d in range(nd - 1, -1, -1):
                rem, idx = dm(rem, shape[d])
                pos = ma(idx, strides[d], pos)
            out[i] = storage[pos]

    return numba.njit(error_model="numpy")(kernel)


_BUILDS = {32: (np.int32, _divmod32, _muladd32), 64: (np.int64, _divmod64, _muladd64)}
_compiled: dict[int, Callable] = {}


def gather(width: int) -> Callable:
    """The gather kernel whose index arithmetic is ``width`` (32 or 64) bits wide.

    Called as ``kernel(out, storage, shape, strides, offset)``: ``out`` 1-D with
    ``prod(shape)`` elements, ``storage`` 1-D, ``shape`` and ``strides`` 1-D arrays of
    ``numpy.int32`` (width 32) or ``numpy.int64`` (width 64). Use ``run`` to call it.
    """
    if width not in _BUILDS:
        raise ValueError(f"width must be 32 or 64, got {width!r}")
    if width not in _compiled:
        index_type, divmod_, muladd = _BUILDS[width]
        _compiled[width] = _make(index_type, divmod_, muladd)
    return _compiled[width]


def fits_int32(shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> bool:
    """Whether every linear index and storage position of the view fits a signed 32-bit int.

    The question PyTorch asks with ``at::native::canUse32BitIndexMath``: the element
    count, and the largest position ``offset + sum((shape[d] - 1) * strides[d])``,
    must both be at most ``INT32_MAX``.
    """
    if 0 in shape:
        return True
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
    return math.prod(shape) <= INT32_MAX and last <= INT32_MAX


def run(width: int, storage: np.ndarray, shape: Sequence[int], strides: Sequence[int], offset: int = 0,
        out: np.ndarray | None = None) -> np.ndarray:
    """The view ``(shape, strides, offset)`` of the 1-D ``storage``, copied into a new
    contiguous array with the ``width``-bit gather.

    Matches: ``torch.as_strided(torch.from_numpy(storage), shape, strides, offset).contiguous()``

    Raises ValueError for width 32 when the view does not fit 32-bit indices (``fits_int32``).
    """
    kernel = gather(width)
    if width == 32 and not fits_int32(shape, strides, offset):
        raise ValueError(f"shape {tuple(shape)}, strides {tuple(strides)}, offset {offset}: "
                         "positions do not fit 32-bit indices; use width=64")
    index_dtype = np.int32 if width == 32 else np.int64
    if out is None:
        out = np.empty(math.prod(shape), dtype=storage.dtype)
    kernel(out, storage, np.asarray(shape, dtype=index_dtype), np.asarray(strides, dtype=index_dtype), int(offset))
    return out.reshape(tuple(shape))


def instruction_counts(width: int) -> dict[str, int]:
    """How many integer divisions of each width the compiled ``width``-bit gather's LLVM IR holds.

    Keys ``"64-bit divisions"`` (``sdiv/udiv/srem/urem i64``) and ``"32-bit divisions"``
    (the same on ``i32``). Compiles the kernel if needed (``run`` it once first).
    """
    kernel = gather(width)
    if not kernel.signatures:
        raise RuntimeError("the kernel has not been compiled yet: call run() once first")
    text = "\n".join(kernel.inspect_llvm(sig) for sig in kernel.signatures)
    count = {bits: sum(text.count(f"{op} i{bits} ") for op in ("sdiv", "udiv", "srem", "urem")) for bits in (64, 32)}
    return {"64-bit divisions": count[64], "32-bit divisions": count[32]}


__all__ = ["INT32_MAX", "fits_int32", "gather", "instruction_counts", "run"]
