"""The engine walks the nodes by recursion, one Python frame per node: a long chain overflows the stack."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import minikernel.autograd.engine as E
from minikernel.autograd.grad_mode import set_grad_enabled
from minikernel.autograd.graph import Edge, Node
from minikernel.tensor import Tensor

EXERCISE = "3.3"


def run_backward(roots: Sequence[Edge], grad_roots: Sequence[Tensor], keep_graph: bool, create_graph: bool,
                 inputs: Optional[Sequence[Edge]] = None) -> Optional[list[Optional[Tensor]]]:
    order = E.topological_order([node for node, _ in roots])
    buffers: dict[int, E.InputBuffer] = {}
    to_run = None if inputs is None else E.nodes_to_run(order, inputs)
    wanted = set() if inputs is None else {(id(node), slot) for node, slot in inputs if node is not None}
    captured = {}

    def arrive(node: Node, slot: int, grad: Tensor) -> None:
        buffers.setdefault(id(node), E.InputBuffer(node._num_outputs)).add(slot, grad)

    def run_from(i: int) -> None:  # this node, then (recursively) the rest of the order
        if i == len(order):
            return
        node = order[i]
        buffer = buffers.pop(id(node), None)
        if buffer is not None:
            for slot, grad in enumerate(buffer.grads):
                if (id(node), slot) in wanted:
                    captured[(id(node), slot)] = node.hooked(slot, grad)
            if to_run is None or id(node) in to_run:
                grad_inputs = node(tuple(buffer.grads), keep_graph)
                for (nxt, slot), grad in zip(node.next_functions, grad_inputs):
                    if nxt is not None and grad is not None:
                        arrive(nxt, slot, grad)
        run_from(i + 1)

    for (node, slot), grad in zip(roots, grad_roots):
        if node is not None:
            arrive(node, slot, grad)
    with set_grad_enabled(create_graph):
        run_from(0)
    if inputs is None:
        return None
    return [captured.get((id(node), slot)) if node is not None else None for node, slot in inputs]
