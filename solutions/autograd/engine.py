"""Reference bodies for minikernel/autograd/engine.py (exercises 3.1, 3.3)."""
from __future__ import annotations

import heapq
import itertools
from typing import Optional, Sequence

import minikernel.autograd.engine as E
from minikernel.autograd.grad_mode import is_grad_enabled, set_grad_enabled
from minikernel.autograd.graph import Edge, Node, walk
from minikernel.tensor import Tensor


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
            heapq.heappush(ready, (-node._sequence_nr, next(tie), node))
    order = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                pending[id(nxt)] -= 1
                if pending[id(nxt)] == 0:
                    heapq.heappush(ready, (-nxt._sequence_nr, next(tie), nxt))
    return order


def run_backward(roots: Sequence[Edge], grad_roots: Sequence[Tensor], keep_graph: bool, create_graph: bool,
                 inputs: Optional[Sequence[Edge]] = None) -> Optional[list[Optional[Tensor]]]:
    order = E.topological_order([node for node, _ in roots])
    buffers: dict[int, E.InputBuffer] = {}

    def arrive(node: Node, slot: int, grad: Tensor) -> None:
        buffers.setdefault(id(node), E.InputBuffer(node._num_outputs)).add(slot, grad)

    for (node, slot), grad in zip(roots, grad_roots):
        if node is not None:
            arrive(node, slot, grad)
    to_run = None if inputs is None else E.nodes_to_run(order, inputs)
    captured = {}
    wanted = set() if inputs is None else {(id(node), slot) for node, slot in inputs if node is not None}
    with set_grad_enabled(create_graph):
        for node in order:
            buffer = buffers.pop(id(node), None)
            if buffer is None:
                continue
            for slot, grad in enumerate(buffer.grads):
                if (id(node), slot) in wanted:
                    captured[(id(node), slot)] = node.hooked(slot, grad)
            if to_run is not None and id(node) not in to_run:
                continue
            grad_inputs = node(tuple(buffer.grads), keep_graph)
            for (nxt, slot), grad in zip(node.next_functions, grad_inputs):
                if nxt is not None and grad is not None:
                    arrive(nxt, slot, grad)
    if inputs is None:
        return None
    return [captured.get((id(node), slot)) if node is not None else None for node, slot in inputs]


def accumulate_grad(variable: Tensor, grad: Tensor) -> None:
    recording = is_grad_enabled()
    if variable.grad is None:
        variable.grad = grad if recording else grad.detach().clone()
    elif recording:
        variable.grad = variable.grad + grad
    else:
        variable.grad += grad
