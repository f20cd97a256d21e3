"""Inputs that do not require grad are not refused."""
from __future__ import annotations

from collections.abc import Sequence

import minikernel.autograd.api as A
from minikernel.autograd.graph import gradient_edge
from minikernel.tensor import Tensor

EXERCISE = "3.7"

Tensors = Tensor | Sequence[Tensor]


def grad(outputs: Tensors, inputs: Tensors, grad_outputs: Tensors | None = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    roots_grads = A.make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    result = A.run_backward([gradient_edge(o) for o in outputs], roots_grads, retain_graph, create_graph,
                            inputs=[gradient_edge(t) for t in inputs])
    if not allow_unused and any(g is None for g in result):
        unused = next(i for i, g in enumerate(result) if g is None)
        raise RuntimeError(f"The differentiated Tensor at index {unused} appears to not have been used in the "
                           "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(result)
