"""Reference bodies for minikernel/autograd.py (exercises 3.1, 3.3, 3.7)."""
from __future__ import annotations

import heapq
import itertools
from typing import Optional, Sequence, Union

import minikernel.autograd as A
from minikernel.graph import Edge, Node, gradient_edge, is_grad_enabled, set_grad_enabled, walk
from minikernel.tensor import Tensor

Tensors = Union[Tensor, Sequence[Tensor]]


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
    order = A.topological_order([node for node, _ in roots])
    buffers: dict[int, A.InputBuffer] = {}

    def arrive(node: Node, slot: int, grad: Tensor) -> None:
        buffers.setdefault(id(node), A.InputBuffer(node._num_outputs)).add(slot, grad)

    for (node, slot), grad in zip(roots, grad_roots):
        if node is not None:
            arrive(node, slot, grad)
    to_run = None if inputs is None else A.nodes_to_run(order, inputs)
    captured = {}
    with set_grad_enabled(create_graph):
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


def accumulate_grad(variable: Tensor, grad: Tensor) -> None:
    recording = is_grad_enabled()
    if variable.grad is None:
        variable.grad = grad if recording else grad.detach().clone()
    elif recording:
        variable.grad = variable.grad + grad
    else:
        variable.grad += grad


def grad(outputs: Tensors, inputs: Tensors, grad_outputs: Optional[Tensors] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Optional[Tensor], ...]:
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    roots_grads = A.make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if not all(t.requires_grad for t in inputs):
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    result = A.run_backward([gradient_edge(o) for o in outputs], roots_grads, retain_graph, create_graph,
                            inputs=[gradient_edge(t) for t in inputs])
    if not allow_unused and any(g is None for g in result):
        unused = next(i for i, g in enumerate(result) if g is None)
        raise RuntimeError(f"The differentiated Tensor at index {unused} appears to not have been used in the "
                           "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(result)
