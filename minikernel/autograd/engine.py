"""Chapter 03: the backward engine (``torch/csrc/autograd/engine.cpp``).

The graph is built eagerly: every differentiable call records a node
(``graph.py``). ``loss.backward()`` then asks the engine to

1. order the nodes so that each runs after every node that sends it a gradient
   (``topological_order``, exercise 3.1);
2. run them in that order, adding up the gradients that arrive at each node's
   inputs (several uses of one tensor = several contributions) and passing the
   results along ``next_functions`` (``run_backward``, exercise 3.3);
3. add the gradients that reach a leaf into ``leaf.grad`` (``accumulate_grad``,
   exercise 3.3), or, for ``autograd.grad`` (exercise 3.7, in ``api.py``), hand
   them back without touching ``.grad``.

The reference bodies are in ``solutions/autograd/engine.py``.
"""
from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from .._C import reentrant
from ..course.exercise import exercise
from ..dispatch import state as dispatch_state
from ..kernels import launch
from ..kernels.layout import is_non_overlapping_and_dense
from .grad_mode import engine_running, is_grad_enabled, set_grad_enabled  # noqa: F401 - for your exercises
from .graph import Edge, Grads, Node, walk  # noqa: F401 - for your exercises

if TYPE_CHECKING:
    from ..tensor import Tensor


# ------------------------------------------------------------------- the engine
def _carry_thread_state() -> None:
    """The dispatcher's per-thread key sets and modes, and the kernels' fallback switch, go
    along when a deep reentrant backward moves to a fresh thread (grad mode and saved-tensor
    hooks are registered by ``_C.graph``), as torch's engine carries its ThreadLocalState."""
    for module in (dispatch_state, launch):
        for value in vars(module).values():
            if isinstance(value, threading.local):
                reentrant.carry(value)


_carry_thread_state()


class InputBuffer:
    """The gradients arriving at one node, one slot per output of its forward;
    several arrivals at one slot are added (``torch/csrc/autograd/input_buffer.cpp``)."""

    def __init__(self, size: int):
        self.grads: list[Optional[Tensor]] = [None] * size

    def add(self, slot: int, grad: Tensor) -> None:
        old = self.grads[slot]
        if old is None:
            self.grads[slot] = grad
            return
        with engine_running():  # through the dispatcher: recorded under create_graph, values from the backend
            self.grads[slot] = old + grad


class AccumulateGrad(Node):
    """The end of the graph for a leaf that requires grad: adds the gradient into ``.grad``
    (``accumulate_grad``, exercise 3.3).

    It runs as soon as it is ready (PyTorch gives it the largest sequence number).
    """

    _name = "AccumulateGrad"

    def __init__(self, variable: Tensor):
        super().__init__()
        self._sequence_nr = math.inf
        self.variable = variable

    def apply(self, grad: Tensor) -> Grads:
        accumulate_grad(self.variable, _obey_layout(grad, self.variable))
        for hook in list(self.variable._post_accumulate_hooks.values()):
            hook(self.variable)  # register_post_accumulate_grad_hook: after .grad holds the sum
        return ()


def _obey_layout(grad: Tensor, variable: Tensor) -> Tensor:
    """A first gradient laid out like its leaf, as torch's ``clone_obey_contract`` does: a dense,
    non-overlapping leaf (a transposed one too) gets a ``.grad`` with its own strides, so that
    ``p.grad`` and ``p`` can be walked in step. (While recording the gradient is kept as is.)"""
    strides = variable.stride()
    if (variable._grad is not None or grad.stride() == strides or is_grad_enabled()
            or not is_non_overlapping_and_dense(variable.shape, strides)):
        return grad
    values = np.empty(grad.numel(), grad.dtype)
    out = type(grad)(values, grad.shape, strides, 0)
    out._numpy_view()[...] = grad._numpy_view()
    return out


@exercise("3.1")
def topological_order(roots: Sequence[Node]) -> list[Node]:
    """Every node reachable from ``roots`` (through ``next_functions``) in the order backward runs them.

    A node may run only once every node that sends it a gradient has run (count,
    for each node, the edges pointing at it from reachable nodes; a node is ready
    when its count drops to 0). Among ready nodes, run the one with the largest
    ``_sequence_nr`` (the most recently created) first: PyTorch's engine keeps its
    ready nodes in a priority queue on that number, which decides the order your
    hooks fire in. Nodes of equal number (every leaf's ``AccumulateGrad`` has the same)
    run in the order they became ready: break ties with a counter, not by ``id``.
    (torch leaves ties to its C++ heap: the same order for up to three such nodes, another
    from four on, e.g. 0, 2, 1, 3; the course keeps the order they became ready.)
    Use ``heapq`` and no recursion (graphs can be 10 000 nodes deep).

    Matches: the order in which ``loss.backward()`` calls the nodes' hooks.
    """
    # TODO(3.1): ≈15 lines
    raise NotImplementedError("exercise 3.1 (topological_order) is not implemented yet")


@exercise("3.3")
def run_backward(roots: Sequence[Edge], grad_roots: Sequence[Tensor], keep_graph: bool, create_graph: bool,
                 inputs: Optional[Sequence[Edge]] = None) -> Optional[list[Optional[Tensor]]]:
    """The engine (``torch.autograd.backward`` and ``grad`` both end here).

    ``roots[i] = (node, slot)`` receives ``grad_roots[i]``. Then, for each node in
    ``topological_order``: take its gradients (an ``InputBuffer`` per node, with
    ``node._num_outputs`` slots; skip nodes that received nothing), run it with
    ``node(tuple(grads), keep_graph)`` (that also runs hooks and frees saved tensors),
    and ``add`` each returned gradient to the buffer of ``next_functions[i]``
    (skip ``None`` nodes and ``None`` gradients). Run everything inside
    ``set_grad_enabled(create_graph)``: with ``create_graph`` the backward
    computations are recorded too.

    ``inputs`` (autograd.grad): a list of edges whose gradients to return instead of
    accumulating. Then run only the nodes in ``nodes_to_run(order, inputs)``,
    read the gradient arriving at each input edge from its node's buffer (None if
    none arrived) and pass it through that slot's tensor hooks (``node.hooked(slot, grad)``:
    a hook registered on an input changes what ``grad`` returns, as in torch), and return
    them in order. Without ``inputs`` return None.
    """
    # TODO(3.3): ≈20 lines
    raise NotImplementedError("exercise 3.3 (run_backward) is not implemented yet")


@exercise("3.3")
def accumulate_grad(variable: Tensor, grad: Tensor) -> None:
    """What ``AccumulateGrad`` does when a gradient reaches the leaf ``variable``.

    * ``variable.grad is None``: store ``grad`` — a detached copy
      (``grad.detach().clone()``) when not recording: one gradient tensor may reach
      several leaves (``a + b`` hands the same one to both), and a later in-place
      ``+=`` into one ``.grad`` must not change the others; as is (keeping its
      graph) when recording (``create_graph=True`` makes ``is_grad_enabled()`` true);
    * otherwise add: in place (``variable.grad += grad``) when not recording,
      out of place (``variable.grad = variable.grad + grad``) when recording.

    Matches: ``x.grad`` after one or several ``backward()`` calls.
    """
    # TODO(3.3): ≈8 lines
    raise NotImplementedError("exercise 3.3 (accumulate_grad) is not implemented yet")


def nodes_to_run(order: Sequence[Node], inputs: Sequence[Edge]) -> set[int]:
    """ids of the nodes ``autograd.grad`` must run: those from which an input's node is reachable.

    An input's own node is only *reached* (its incoming gradient is read), not run,
    unless another input lies beyond it. ``AccumulateGrad`` never runs, so ``.grad``
    is left alone.
    """
    targets = {id(node) for node, _ in inputs if node is not None}
    run: set[int] = set()
    for node in reversed(order):  # from the leaves up
        if any(n is not None and (id(n) in run or id(n) in targets) for n, _ in node.next_functions):
            run.add(id(node))
    for node, _ in inputs:  # what node.hooked returns for it: the gradient before its hooks if it runs
        if node is not None:
            node._capture_raw = id(node) in run
    return run
