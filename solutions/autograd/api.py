"""Reference body for minikernel/autograd/api.py (exercise 3.7)."""
from __future__ import annotations

from typing import Optional, Sequence, Union

import minikernel.autograd.api as API
from minikernel.autograd.graph import gradient_edge
from minikernel.tensor import Tensor

Tensors = Union[Tensor, Sequence[Tensor]]


def grad(outputs: Tensors, inputs: Tensors, grad_outputs: Optional[Tensors] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Optional[Tensor], ...]:
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    roots_grads = API.make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if not all(t.requires_grad for t in inputs):
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    result = API.run_backward([gradient_edge(o) for o in outputs], roots_grads, retain_graph, create_graph,
                            inputs=[gradient_edge(t) for t in inputs])
    if not allow_unused and any(g is None for g in result):
        unused = next(i for i, g in enumerate(result) if g is None)
        raise RuntimeError(f"The differentiated Tensor at index {unused} appears to not have been used in the "
                           "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(result)
