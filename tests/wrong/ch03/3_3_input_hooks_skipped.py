"""run_backward returns the raw gradient at each input edge without passing it through the slot's tensor hooks: a hook registered on an input does not change what grad returns."""
EXERCISE = "3.3"

import minikernel.autograd.engine as E
from minikernel.autograd.grad_mode import set_grad_enabled


def run_backward(roots, grad_roots, keep_graph, create_graph, inputs=None):
    order = E.topological_order([node for node, _ in roots])
    buffers = {}

    def arrive(node, slot, grad):
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
