"""The pipelining unit of a ring: a chunk cut into pieces.

A ring that sends a whole chunk per step must wait for it to arrive before adding
it, and add it before sending it on: the link idles during every addition. Cut
into ``P`` pieces, piece ``k + 1`` can travel while piece ``k`` is added, and a
reduced piece can leave at once. Each piece pays the latency ``alpha`` again, so
more pieces are not always better: chapter 07's cost model
(``minikernel.distributed.cost.pipelined_ring_cost``) weighs the two, and the
reference ring (``solutions/distributed/ring.py``) uses ``PIECE_BYTES``.
"""
from __future__ import annotations

import math

import torch

#: the reference ring's piece size: 2 MiB, i.e. 8 pieces per chunk for 16M float32 over 4 ranks
PIECE_BYTES = 2 << 20


def piece_count(nbytes: float, piece_bytes: int = PIECE_BYTES) -> int:
    """``P = ceil(nbytes / piece_bytes)`` pieces for a chunk of ``nbytes`` (0 for an empty chunk).

    What the cost model counts; ``pieces`` cuts whole elements, and gives the same
    count when ``piece_bytes`` is a multiple of the element size (2 MiB always is).
    """
    if piece_bytes < 1:
        raise ValueError(f"piece_bytes must be positive, got {piece_bytes}")
    return math.ceil(nbytes / piece_bytes)


def pieces(chunk: torch.Tensor, piece_bytes: int = PIECE_BYTES) -> list[torch.Tensor]:
    """``chunk`` cut into ``P`` contiguous views of at most ``piece_bytes``, lengths differing by at most one.

    ``P = ceil(numel / e)`` with ``e = max(1, piece_bytes // element_size)`` elements per
    piece at most. ``[]`` for an empty chunk (nothing to send). Every rank cuts a chunk of a given
    length the same way, so the piece one rank sends has the length its neighbour
    receives. The views share the chunk's memory: adding into a piece adds into the
    buffer being reduced, and sending a piece sends that part of it.

    Example::

        >>> [p.numel() for p in pieces(torch.zeros(10), piece_bytes=16)]   # 40 bytes: 3 pieces
        [4, 3, 3]
    """
    if piece_bytes < 1:
        raise ValueError(f"piece_bytes must be positive, got {piece_bytes}")
    count = math.ceil(chunk.numel() / max(1, piece_bytes // chunk.element_size()))
    return list(chunk.tensor_split(count)) if count else []
