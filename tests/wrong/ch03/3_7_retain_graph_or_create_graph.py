"""retain_graph is taken as retain_graph or create_graph: an explicit retain_graph=False with create_graph=True still keeps the graph."""
EXERCISE = "3.7"

import minikernel.autograd.api as API
from minikernel.autograd.graph import gradient_edge
from minikernel.tensor import Tensor


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    roots_grads = API.make_grads(outputs, grad_outputs)
    retain_graph = bool(retain_graph) or create_graph
    if not all(t.requires_grad for t in inputs):
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    result = API.run_backward([gradient_edge(o) for o in outputs], roots_grads, retain_graph, create_graph,
                              inputs=[gradient_edge(t) for t in inputs])
    if not allow_unused and any(g is None for g in result):
        unused = next(i for i, g in enumerate(result) if g is None)
        raise RuntimeError(f"The differentiated Tensor at index {unused} appears to not have been used in the "
                           "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(result)
