"""Chapter 03: the backward engine, ``Function`` and ``autograd.grad``.

The graph is built eagerly: every differentiable call records a node
(``graph.py``). ``loss.backward()`` then asks the engine to

1. order the nodes so that each runs after every node that sends it a gradient
   (``topological_order``, exercise 3.1);
2. run them in that order, adding up the gradients that arrive at each node's
   inputs (several uses of one tensor = several contributions) and passing the
   results along ``next_functions`` (``run_backward``, exercise 3.3);
3. add the gradients that reach a leaf into ``leaf.grad`` (``accumulate_grad``,
   exercise 3.3), or, for ``autograd.grad`` (exercise 3.7), hand them back
   without touching ``.grad``.

The reference bodies are in ``solutions/autograd.py``.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

from .course.exercise import exercise
from .graph import (AccumulateGrad, BackwardNode, Edge, Node, RemovableHandle, enable_grad,  # noqa: F401
                    gradient_edge, is_grad_enabled, no_grad, set_grad_enabled, walk)
from .tensor import Tensor

Tensors = Union[Tensor, Sequence[Tensor]]


# --------------------------------------------------------------------- Function
class _FunctionMeta(type):
    """Give every Function subclass its own node class, named like PyTorch's (``MulBackward0``)."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        cls._backward_cls = type(f"{name}Backward", (BackwardNode,), {"_function": cls})


class Function(metaclass=_FunctionMeta):
    """Base class of differentiable operations (``torch.autograd.Function``).

    Subclass it with two static methods:

    * ``forward(ctx, *args)`` computes the result (nothing inside is recorded)
      and may call ``ctx.save_for_backward(*tensors)`` and set attributes on ``ctx``;
    * ``backward(ctx, *grad_outputs)`` returns one gradient (or None) per argument
      of ``forward``, reading ``ctx.saved_tensors`` and ``ctx.needs_input_grad``.

    Call it with ``MyFunction.apply(*args)``, never ``forward`` directly.

    Example::

        >>> class Square(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return grad * 2 * x
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward method for your custom autograd.Function "
                                  "to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args):
        """Run ``forward``; when recording, make a node whose edges lead to the tensor arguments."""
        node = cls._backward_cls()
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        node._forward_arg_is_tensor = is_tensor
        node.needs_input_grad = tuple(t and a.requires_grad for a, t in zip(args, is_tensor))
        with no_grad():
            output = cls.forward(node, *args)
        if not (is_grad_enabled() and any(node.needs_input_grad)):
            return output
        outputs = output if isinstance(output, tuple) else (output,)
        # An input handed back unchanged gets a new header: the input keeps its own history.
        outputs = tuple(o._alias() if any(o is a for a in args) else o for o in outputs)
        node.next_functions = tuple(gradient_edge(a) for a, t in zip(args, is_tensor) if t)
        node._num_outputs = len(outputs)
        for nr, out in enumerate(outputs):
            if isinstance(out, Tensor) and out.dtype.kind == "f":
                out._set_history(node, nr)
        return outputs if isinstance(output, tuple) else outputs[0]


# ------------------------------------------------------------------- the engine
class InputBuffer:
    """The gradients arriving at one node, one slot per output of its forward;
    several arrivals at one slot are added (``torch/csrc/autograd/input_buffer.cpp``)."""

    def __init__(self, size: int):
        self.grads: list[Optional[Tensor]] = [None] * size

    def add(self, slot: int, grad: Tensor) -> None:
        from . import functions as F

        old = self.grads[slot]
        self.grads[slot] = grad if old is None else F.add(old, grad)


@exercise("3.1")
def topological_order(roots: Sequence[Node]) -> list[Node]:
    """Every node reachable from ``roots`` (through ``next_functions``) in the order backward runs them.

    A node may run only once every node that sends it a gradient has run (count,
    for each node, the edges pointing at it from reachable nodes; a node is ready
    when its count drops to 0). Among ready nodes, run the one with the largest
    ``_sequence_nr`` (the most recently created) first: PyTorch's engine keeps its
    ready nodes in a priority queue on that number, which decides the order your
    hooks fire in. Use ``heapq`` and no recursion (graphs can be 10 000 nodes deep).

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
    none arrived), and return them in order. Without ``inputs`` return None.
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
    return run


def make_grads(outputs: Sequence[Tensor], grad_outputs: Sequence[Optional[Tensor]]) -> list[Tensor]:
    """Check the roots and give each a starting gradient (ones for a scalar output)."""
    from . import functions as F

    grads = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"expected minikernel Tensors as outputs, got {type(out).__name__}")
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if grad is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = F.ones_like(out)
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
             create_graph: bool = False) -> None:
    """Accumulate into the leaves' ``.grad`` the gradients of ``tensors`` (``torch.autograd.backward``).

    Args:
        tensors: the roots (``loss``, or several outputs).
        grad_tensors: the gradient of each root (default None: ones for a scalar root).
        retain_graph: keep saved tensors for another backward (default: ``create_graph``).
        create_graph: record the backward computations, for higher derivatives (default False).
    """
    tensors = _as_tuple(tensors, "backward: tensors")
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    grad_tensors = (grad_tensors,) if isinstance(grad_tensors, Tensor) else tuple(grad_tensors)
    grads = make_grads(tensors, grad_tensors)
    keep = create_graph if retain_graph is None else retain_graph
    run_backward([gradient_edge(t) for t in tensors], grads, keep, create_graph)


@exercise("3.7")
def grad(outputs: Tensors, inputs: Tensors, grad_outputs: Optional[Tensors] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Optional[Tensor], ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned, not accumulated.

    1. Make tuples of ``outputs``/``inputs`` (a single Tensor counts as one);
       ``grad_outputs`` defaults to None for each output; ``make_grads`` checks the
       outputs and fills in ones for scalars.
    2. ``retain_graph`` defaults to ``create_graph``.
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


from .gradcheck import gradcheck  # noqa: E402,F401  exercise 3.9, minikernel.autograd.gradcheck like torch's
