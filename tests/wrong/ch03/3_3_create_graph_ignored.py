"""run_backward never records the backward pass, so create_graph=True builds no graph."""
from __future__ import annotations

from collections.abc import Sequence

import minikernel.autograd as A
from minikernel.autograd.grad_mode import set_grad_enabled
from minikernel.autograd.graph import Edge, Node
from minikernel.tensor import Tensor

EXERCISE = "3.3"

Tensors = Tensor | Sequence[Tensor]


def run_backward(roots: Sequence[Edge], grad_roots: Sequence[Tensor], keep_graph: bool, create_graph: bool,
                 inputs: Sequence[Edge] | None = None) -> list[Tensor | None] | None:
    order = A.topological_order([node for node, _ in roots])
    buffers: dict[int, A.InputBuffer] = {}

    def arrive(node: Node, slot: int, grad: Tensor) -> None:
        buffers.setdefault(id(node), A.InputBuffer(node._num_outputs)).add(slot, grad)

    for (node, slot), grad in zip(roots, grad_roots):
        if node is not None:
            arrive(node, slot, grad)
    to_run = None if inputs is None else A.nodes_to_run(order, inputs)
    captured = {}
    with set_grad_enabled(False):
        for node in order:
            buffer = buffers.pop(id(node), None)
            if buffer is None:
                continue
            for slot, grad in enumerate(buffer.grads):
                captured[(id(node), slot)] = grad
            if to_run is not None and id(node) not in to_run:
                continue
            grad_inputs = node(tuple(buffer.grads), keep_graph)
            for (nxt, slot), grad in zip(node.next_functions, grad_inputs):
                if nxt is not None and grad is not None:
                    arrive(nxt, slot, grad)
    if inputs is None:
        return None
    return [captured.get((id(node), slot)) if node is not None else None for node, slot in inputs]
