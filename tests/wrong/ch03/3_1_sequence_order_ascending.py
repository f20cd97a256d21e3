"""Ready nodes are taken oldest first (ascending sequence number) instead of newest first."""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence

from minikernel.autograd.graph import Node, walk
from minikernel.tensor import Tensor

EXERCISE = "3.1"

Tensors = Tensor | Sequence[Tensor]


def topological_order(roots: Sequence[Node]) -> list[Node]:
    pending: dict[int, int] = {}
    for node in walk(roots):
        for nxt, _ in node.next_functions:
            if nxt is not None:
                pending[id(nxt)] = pending.get(id(nxt), 0) + 1
    tie = itertools.count()  # equal sequence numbers (AccumulateGrad) keep arrival order
    ready, queued = [], set()
    for node in roots:
        if node is not None and pending.get(id(node), 0) == 0 and id(node) not in queued:
            queued.add(id(node))
            heapq.heappush(ready, (node._sequence_nr, next(tie), node))
    order = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                pending[id(nxt)] -= 1
                if pending[id(nxt)] == 0:
                    heapq.heappush(ready, (nxt._sequence_nr, next(tie), nxt))
    return order
