"""Chapter 03: automatic differentiation (``torch.autograd``).

The package mirrors PyTorch's:

* ``grad_mode``  — ``no_grad``, ``enable_grad``, ``set_grad_enabled``;
* ``graph``      — the nodes of the backward graph, saved tensors, hooks;
* ``engine``     — runs a backward pass (exercises 3.1, 3.3);
* ``api``        — ``backward`` and ``grad`` (exercise 3.7);
* ``function``   — ``Function`` and its ctx, ``once_differentiable``;
* ``derivatives``— the backward formulas that are exercises (3.2, 3.4–3.6);
* ``pointwise``, ``views``, ``reductions``, ``linalg``, ``inplace`` — the operations,
  forward and backward side by side; ``functions`` gathers them (``F``);
* ``custom_functions`` — a hand-written Function (exercise 3.8);
* ``finite_differences`` — ``gradcheck``: finite differences against backward (exercise 3.9).

Import order matters once: ``grad_mode``, ``graph`` and ``engine`` import no Tensor
(the Tensor holds their nodes, so they sit below it); everything after them does.
"""
from . import grad_mode, graph, engine  # noqa: I001 - below the Tensor: first
from . import function, values, derivatives, pointwise, views, reductions, linalg, inplace  # noqa: F401, I001
from . import view_nodes, shape_ops, indexing, index_put, joining  # noqa: F401, I001
from . import api, functions, custom_functions, finite_differences  # noqa: I001
from .api import backward, grad
from .engine import InputBuffer, accumulate_grad, nodes_to_run, run_backward, topological_order
from .function import BackwardNode, Function, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .finite_differences import GradcheckError, gradcheck, gradgradcheck, numerical_jacobian
from .graph import Node, RemovableHandle

__all__ = ["inference_mode", "is_inference_mode_enabled", "Function", "backward", "grad", "gradcheck", "gradgradcheck", "GradcheckError", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "Node", "RemovableHandle", "BackwardNode",
           "topological_order", "run_backward", "accumulate_grad", "InputBuffer", "nodes_to_run",
           "numerical_jacobian", "graph", "grad_mode", "engine", "api", "function", "functions",
           "derivatives", "custom_functions", "finite_differences", "values"]
