"""Chapter 03: automatic differentiation (``torch.autograd``).

The package mirrors PyTorch's:

* ``grad_mode``  — ``no_grad``, ``enable_grad``, ``set_grad_enabled``;
* ``graph``      — the nodes of the backward graph, saved tensors, hooks;
* ``engine``     — runs a backward pass (exercises 3.1, 3.3);
* ``api``        — ``backward`` and ``grad`` (exercise 3.7);
* ``function``   — ``Function`` and its ctx, ``once_differentiable``;
* ``derivatives``— the backward formulas that are exercises (3.2, 3.4–3.6);
* ``pointwise``, ``views``, ``reductions``, ``linalg``, ``inplace`` — the operations,
  forward and backward side by side; ``functions`` gathers them (``F``); ``generated`` —
  the nodes of formulas declared in ``aten/native_functions.py``;
* ``custom_functions`` — a hand-written Function (exercise 3.8);
* ``finite_differences`` — ``gradcheck``: finite differences against backward (exercise 3.9);
  ``checks`` — the exported ``gradcheck``: 3.9's check with torch's handling of inputs,
  outputs and grad mode around it; ``gradcheck_modes`` — its ``nondet_tol`` and ``fast_mode``.

Grad mode, the graph's classes and the view nodes sit below the Tensor, in
``minikernel/_C/`` (a Tensor holds its node and reads grad mode); ``grad_mode.py``,
``graph.py`` and ``view_nodes.py`` here show them under torch's names. Everything else
here sits above the Tensor.
"""
from . import (
               api,
               checks,
               custom_functions,
               derivatives,
               engine,
               finite_differences,
               function,
               functions,
               grad_mode,
               graph,
               values,
)
from .api import backward, grad
from .checks import gradcheck
from .engine import InputBuffer, accumulate_grad, nodes_to_run, run_backward, topological_order
from .finite_differences import GradcheckError, gradgradcheck, numerical_jacobian
from .function import BackwardNode, Function, once_differentiable
from .grad_mode import (
               enable_grad,
               inference_mode,
               is_grad_enabled,
               is_inference_mode_enabled,
               no_grad,
               set_grad_enabled,
)
from .graph import Node, RemovableHandle

__all__ = ["inference_mode", "is_inference_mode_enabled", "Function", "backward", "grad", "gradcheck", "gradgradcheck", "GradcheckError", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "Node", "RemovableHandle", "BackwardNode",
           "topological_order", "run_backward", "accumulate_grad", "InputBuffer", "nodes_to_run",
           "numerical_jacobian", "graph", "grad_mode", "engine", "api", "function", "functions",
           "derivatives", "custom_functions", "finite_differences", "checks", "values"]
