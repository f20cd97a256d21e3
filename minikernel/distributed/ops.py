"""Reduction ops and dtypes: what a rank does with the chunk it receives.

``torch.distributed.ReduceOp`` names the reduction (``ReduceOp.SUM``,
``ReduceOp.AVG``, ``ReduceOp.MAX``, ``ReduceOp.MIN``). A ring never divides along
the way: AVG travels as SUM and the result is divided by the world size once, at
the end (that is also what gloo does).
"""
from __future__ import annotations

import torch
from torch.distributed import ReduceOp

Op = ReduceOp.RedOpType  #: the type of ``ReduceOp.SUM`` and friends

#: the ops the rings here support
SUPPORTED_OPS: tuple[Op, ...] = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX, ReduceOp.MIN)

#: dtypes the rings reduce (everything gloo reduces that has an order and an add)
SUPPORTED_DTYPES: tuple[torch.dtype, ...] = (
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

#: every dtype a rank may send in the metadata exchange, so that an unsupported one
#: can still be named on every rank (code = index here; -1 = something else)
KNOWN_DTYPES: tuple[torch.dtype, ...] = SUPPORTED_DTYPES + (torch.bool, torch.complex64, torch.complex128)


def op_name(op: Op) -> str:
    """``ReduceOp.SUM`` -> ``'SUM'``."""
    return getattr(op, "name", str(op).rsplit(".", 1)[-1])


def check_op(op: Op) -> None:
    """Raise ValueError unless ``op`` is one of ``SUPPORTED_OPS``."""
    if not isinstance(op, Op) or op not in SUPPORTED_OPS:
        shown = f"ReduceOp.{op_name(op)}" if isinstance(op, Op) else repr(op)
        raise ValueError(f"{shown} is not supported here; use one of "
                         f"{', '.join('ReduceOp.' + op_name(o) for o in SUPPORTED_OPS)}")


def transport_op(op: Op) -> Op:
    """The op the ring applies on the way: SUM for AVG (divide once at the end)."""
    return ReduceOp.SUM if op == ReduceOp.AVG else op


def combine_(mine: torch.Tensor, incoming: torch.Tensor, op: Op = ReduceOp.SUM) -> torch.Tensor:
    """Fold a received chunk into this rank's chunk, in place, and return ``mine``.

    SUM and AVG add (AVG divides later), MAX/MIN keep the larger/smaller value.
    Integer sums wrap around on overflow, exactly like gloo's.

    Example::

        >>> mine = torch.tensor([1, 5]); combine_(mine, torch.tensor([3, 2]), ReduceOp.MAX)
        tensor([3, 5])
    """
    if mine.shape != incoming.shape:
        raise ValueError(f"cannot combine a chunk of shape {tuple(incoming.shape)} into one of shape "
                         f"{tuple(mine.shape)}: a rank must receive exactly the chunk it reduces")
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        return mine.add_(incoming)
    if op == ReduceOp.MAX:
        return torch.maximum(mine, incoming, out=mine)
    if op == ReduceOp.MIN:
        return torch.minimum(mine, incoming, out=mine)
    check_op(op)  # raises with the list of supported ops
    raise AssertionError("unreachable")


def dtype_code(dtype: torch.dtype) -> int:
    """Index of ``dtype`` in ``KNOWN_DTYPES``, or -1: how a dtype travels in metadata."""
    return KNOWN_DTYPES.index(dtype) if dtype in KNOWN_DTYPES else -1


def dtype_from_code(code: int) -> str:
    """The readable name of a dtype code (``'torch.float32'``, or ``'an unknown dtype'``)."""
    return str(KNOWN_DTYPES[code]) if 0 <= code < len(KNOWN_DTYPES) else "an unknown dtype"


def check_dtype(dtype: torch.dtype, op: Op, what: str) -> None:
    """Raise like torch for a dtype the reduction cannot handle.

    * bool, complex and other dtypes: TypeError (no order, or no ring-friendly add);
    * AVG on an integer dtype: RuntimeError, like ``dist.all_reduce`` on gloo, whose
      final division cannot write a float back into an integer tensor.
    """
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{what} reduces integer and floating-point tensors; got {dtype}. "
                        "Convert it first, e.g. tensor.to(torch.int64) for a bool mask.")
    if op == ReduceOp.AVG and not dtype.is_floating_point:
        raise RuntimeError(f"{what}: ReduceOp.AVG needs a floating-point tensor, got {dtype} (dist.all_reduce "
                           "on gloo fails too: 'result type Float can't be cast to the desired output type'). "
                           "Use ReduceOp.SUM and divide, or convert to float first.")
