"""``torch.autograd.backward`` and ``torch.autograd.grad``: check the roots, then run the engine.

``backward`` accumulates into the leaves' ``.grad``; ``grad`` (exercise 3.7) hands
the gradients back instead. Both end in ``engine.run_backward`` (exercise 3.3).
The reference body is in ``solutions/autograd/api.py``.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

from ..course.exercise import exercise
from ..tensor import Tensor
from . import engine
from .engine import run_backward  # noqa: F401 - for your exercise
from .grad_mode import engine_running, set_grad_enabled
from .graph import Edge, gradient_edge  # noqa: F401 - for your exercise
from .values import ones

Tensors = Union[Tensor, Sequence[Tensor]]


def make_grads(outputs: Sequence[Tensor], grad_outputs: Sequence[Optional[Tensor]]) -> list[Tensor]:
    """Check the roots and give each a starting gradient (ones for a scalar output)."""
    grads = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"expected minikernel Tensors as outputs, got {type(out).__name__}")
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if grad is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = ones(out.shape, dtype=out.dtype)
        elif not isinstance(grad, Tensor):
            raise TypeError(f"gradients must be minikernel Tensors, got {type(grad).__name__}")
        elif grad.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {_size(grad.shape)} and "
                               f"output[{i}] has a shape of {_size(out.shape)}.")
        grads.append(grad)
    return grads


def _size(shape: tuple) -> str:
    return f"minikernel.Size({list(shape)})"


def _as_tuple(x: Tensors, what: str) -> tuple:
    items = (x,) if isinstance(x, Tensor) else tuple(x)
    if not items:
        raise RuntimeError(f"{what} must not be empty")
    return items


def backward(tensors: Tensors, grad_tensors: Optional[Tensors] = None, retain_graph: Optional[bool] = None,
             create_graph: bool = False, inputs: Optional[Tensors] = None) -> None:
    """Accumulate into the leaves' ``.grad`` the gradients of ``tensors`` (``torch.autograd.backward``).

    Args:
        tensors: the roots (``loss``, or several outputs).
        grad_tensors: the gradient of each root (default None: ones for a scalar root).
        retain_graph: keep saved tensors for another backward (default: ``create_graph``).
        create_graph: record the backward computations, for higher derivatives (default False).
        inputs: accumulate into the ``.grad`` of these tensors only (leaves or not), instead of
            every leaf (default None).
    """
    tensors = _as_tuple(tensors, "backward: tensors")
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    grad_tensors = (grad_tensors,) if isinstance(grad_tensors, Tensor) else tuple(grad_tensors)
    grads = make_grads(tensors, grad_tensors)
    keep = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        engine.run_backward([gradient_edge(t) for t in tensors], grads, keep, create_graph)
        return
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    before = [t._grad for t in inputs]
    found = engine.run_backward([gradient_edge(t) for t in tensors], grads, keep, create_graph,
                                inputs=[gradient_edge(t) for t in inputs])
    with set_grad_enabled(create_graph):
        for t, g, old in zip(inputs, found, before):
            if g is not None and not (t._retains_grad and t._grad is not old):  # retain_grad stored it already
                engine.accumulate_grad(t, g)
            _run_prehooks(t, g)


def _run_prehooks(t: Tensor, grad: Optional[Tensor]) -> None:
    """A non-leaf input of ``backward(inputs=...)``: torch runs its node's pre-hooks on the gradient it
    captured (their result does not change ``.grad``), though the node itself does not run."""
    node = t.grad_fn
    if node is None or grad is None or not node._pre_hooks:
        return
    slots: list = [None] * getattr(node, "_num_outputs", 1)
    slots[t._output_nr] = grad
    with engine_running():
        for hook in list(node._pre_hooks.values()):
            hook(tuple(slots))


@exercise("3.7")
def grad(outputs: Tensors, inputs: Tensors, grad_outputs: Optional[Tensors] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Optional[Tensor], ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned, not accumulated.

    1. Make tuples of ``outputs``/``inputs`` (a single Tensor counts as one);
       ``grad_outputs`` defaults to None for each output; ``make_grads`` checks the
       outputs and fills in ones for scalars.
    2. ``retain_graph`` defaults to ``create_graph``; empty ``inputs``: ``RuntimeError("`inputs`
       argument to `grad()` cannot be empty.")`` (torch's).
    3. Every input must require grad, else ``RuntimeError("One of the differentiated
       Tensors does not require grad")``.
    4. ``run_backward`` with the outputs' edges as roots and the inputs' edges
       (``gradient_edge``) as ``inputs``.
    5. The first input ``i`` that received no gradient: ``RuntimeError(f"The differentiated
       Tensor at index {i} appears to not have been used in the graph. Set
       allow_unused=True if this is the desired behavior.")`` unless ``allow_unused``
       (then its gradient is None).

    Matches: ``torch.autograd.grad`` (same arguments and defaults).
    """
    # TODO(3.7): ≈12 lines
    raise NotImplementedError("exercise 3.7 (grad) is not implemented yet")
