"""Record backward, step by step: which node runs, and the gradient arriving at it.

Torch's order is recorded, not predicted: a pre-hook on every node
(``node.register_prehook``) logs the node and its incoming gradients
(``grad_outputs``) while ``backward(retain_graph=True)`` runs. minikernel's order
comes from *your* ``topological_order`` (exercise 3.1) and its gradients from
*your* engine (``run_backward``, 3.3, and the op backwards 3.2, 3.4-3.6) with the
same pre-hooks; while one of those is a stub the NotImplementedError naming it
comes back, for the viewer to show.

Recording runs backward once: the leaves' ``.grad`` are put back as they were
(the same tensor objects), but hooks registered on the tensors fire and tensors
that ``retain_grad()`` receive a gradient.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
import torch

from minikernel import autograd as A
from minikernel.autograd import functions as F
from minikernel.autograd import values
from minikernel.course.exercise import stub_exercise_id
from minikernel.tensor import Tensor as MkTensor

from .graph_render import GraphInfo, Params, describe, shape_text

SHOWN_VALUES = 4  #: values of each gradient printed in the step table
Grad = Optional[np.ndarray]  #: one gradient slot as numpy (None: nothing arrived there)


@dataclass
class Step:
    """One node run by backward: which node, and the gradients arriving at it (None: not known)."""

    uid: str
    name: str
    grads: Optional[tuple[Grad, ...]]


def _numpy(grad: Any) -> Grad:
    """A copy of a torch or minikernel gradient as numpy (the engine may add into it later)."""
    if grad is None:
        return None
    if isinstance(grad, torch.Tensor):
        return grad.detach().cpu().numpy().copy()
    return np.array(values.array(grad), copy=True)


def grad_text(grad: Grad) -> str:
    """"(2, 3) [1, 1, 1, 1, …]": the shape, then the first values in row-major order."""
    if grad is None:
        return "None"
    flat = grad.reshape(-1)
    shown = ", ".join(f"{float(v):.4g}" for v in flat[:SHOWN_VALUES])
    return f"{shape_text(grad.shape)} [{shown}{', …' if flat.size > SHOWN_VALUES else ''}]"


def _leaves(graph: GraphInfo) -> list:
    return [n.node.variable for n in graph.nodes if getattr(n.node, "variable", None) is not None]


def _run_with_prehooks(graph: GraphInfo, run_backward) -> list[Step]:
    """Run ``run_backward()`` with a pre-hook on every node; the leaves' ``.grad`` are restored after."""
    steps: list[Step] = []
    handles = []
    for info in graph.nodes:
        def hook(grad_outputs, info=info):
            steps.append(Step(info.uid, info.name, tuple(_numpy(g) for g in grad_outputs)))
        handles.append(info.node.register_prehook(hook))
    leaves = _leaves(graph)
    kept = [leaf.grad for leaf in leaves]
    try:
        for leaf in leaves:
            leaf.grad = None  # so backward stores new tensors instead of adding into the caller's
        run_backward()
    finally:
        for handle in handles:
            handle.remove()
        for leaf, grad in zip(leaves, kept):
            leaf.grad = grad
    return steps


def torch_steps(out: torch.Tensor, graph: GraphInfo) -> list[Step]:
    """The nodes torch's engine runs for ``out.backward()`` (ones as the gradient of a non-scalar
    ``out``), in order, with their incoming gradients, recorded by pre-hooks."""
    return _run_with_prehooks(graph, lambda: torch.autograd.backward(out, torch.ones_like(out),
                                                                     retain_graph=True))


def minikernel_steps(out: MkTensor, graph: GraphInfo) -> tuple[list[Step], Optional[BaseException]]:
    """minikernel's backward of ``out``: the order from your ``topological_order`` (3.1), then the
    gradients from your engine (3.3 and the op backwards).

    Returns ``(steps, stopped)``. A stub in ``topological_order`` raises its
    NotImplementedError (no order to show); a stub later leaves ``steps`` in
    3.1's order with ``grads=None`` and hands back the NotImplementedError as ``stopped``.
    """
    order = A.topological_order([out.grad_fn])
    steps = [Step(graph.uid_of(node) or "?", info_name(graph, node), None) for node in order]
    try:
        ran = _run_with_prehooks(graph, lambda: out.backward(F.ones_like(out), retain_graph=True))
    except NotImplementedError as exc:
        if not stub_exercise_id(exc):
            raise
        return steps, exc
    return ran, None


def info_name(graph: GraphInfo, node: Any) -> str:
    uid = graph.uid_of(node)
    return next((n.name for n in graph.nodes if n.uid == uid), node.name())


def grads_match(a: Optional[tuple[Grad, ...]], b: Optional[tuple[Grad, ...]]) -> Optional[bool]:
    """Same slots, shapes and values (allclose, rtol 1e-4); None if either side is unknown."""
    if a is None or b is None:
        return None
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if (x is None) != (y is None):
            return False
        if x is not None and (x.shape != y.shape or not np.allclose(x, y, rtol=1e-4, atol=1e-6)):
            return False
    return True


def record_steps(out: Union[torch.Tensor, MkTensor], params: Optional[Params] = None) -> list[Step]:
    """The steps of ``out``'s backward (torch: recorded; minikernel: your engine), without a widget.

    Example::

        >>> x = torch.ones(3, requires_grad=True)
        >>> [(s.name, grad_text(s.grads[0])) for s in record_steps((x * 2).sum())]
        [('SumBackward0', '() [1]'), ('MulBackward0', '(3,) [1, 1, 1]'), ('AccumulateGrad', '(3,) [2, 2, 2]')]
    """
    graph = describe(out, params)
    if isinstance(out, torch.Tensor):
        return torch_steps(out, graph)
    steps, stopped = minikernel_steps(out, graph)
    if stopped is not None:
        raise stopped
    return steps
