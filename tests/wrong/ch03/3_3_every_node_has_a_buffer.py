"""run_backward takes every node's buffer as if each node in the order received a gradient: a node that got none (beyond backward's inputs, or behind a None gradient) raises KeyError."""
from __future__ import annotations

from typing import Optional, Sequence

import minikernel.autograd.engine as E
from minikernel.autograd.grad_mode import set_grad_enabled
from minikernel.autograd.graph import Edge
from minikernel.tensor import Tensor

EXERCISE = "3.3"


def run_backward(roots: Sequence[Edge], grad_roots: Sequence[Tensor], keep_graph: bool, create_graph: bool,
                 inputs: Optional[Sequence[Edge]] = None) -> Optional[list[Optional[Tensor]]]:
    order = E.topological_order([node for node, _ in roots])
    buffers = {}
    for (node, slot), grad in zip(roots, grad_roots):
        if node is not None:
            buffers.setdefault(id(node), E.InputBuffer(node._num_outputs)).add(slot, grad)
    to_run = None if inputs is None else E.nodes_to_run(order, inputs)
    wanted = set() if inputs is None else {(id(node), slot) for node, slot in inputs if node is not None}
    captured = {}
    with set_grad_enabled(create_graph):
        for node in order:
            buffer = buffers.pop(id(node))
            for slot, grad in enumerate(buffer.grads):
                if (id(node), slot) in wanted:
                    captured[(id(node), slot)] = node.hooked(slot, grad)
            if to_run is not None and id(node) not in to_run:
                continue
            for (nxt, slot), grad in zip(node.next_functions, node(tuple(buffer.grads), keep_graph)):
                if nxt is not None and grad is not None:
                    buffers.setdefault(id(nxt), E.InputBuffer(nxt._num_outputs)).add(slot, grad)
    if inputs is None:
        return None
    return [captured.get((id(node), slot)) if node is not None else None for node, slot in inputs]
