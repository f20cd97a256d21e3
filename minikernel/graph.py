"""The autograd graph: nodes, edges, saved tensors, hooks and grad mode.

Every result of a differentiable operation points at the node that made it
(``y.grad_fn``). A node knows where the gradients it produces go next
(``next_functions``: one ``(node, input_nr)`` edge per tensor input, ``(None, 0)``
when that input needs no gradient) and what it saved from the forward pass to
compute them. Leaves that require grad end in an ``AccumulateGrad`` node, which
adds the gradient into ``leaf.grad``. This is PyTorch's ``torch/csrc/autograd``
in a few classes; the engine that walks the graph is ``autograd.py``.
"""
from __future__ import annotations

import itertools
import math
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

if TYPE_CHECKING:
    from .tensor import Tensor

Edge = tuple[Optional["Node"], int]   #: (node the gradient goes to, which of its inputs)
Grads = tuple[Optional["Tensor"], ...]  #: one gradient (or None) per slot

_GRAPH_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")

# ------------------------------------------------------------------ grad mode
_local = threading.local()


def is_grad_enabled() -> bool:
    """Whether new operations are recorded (``torch.is_grad_enabled()``)."""
    return getattr(_local, "enabled", True)


@contextmanager
def set_grad_enabled(mode: bool) -> Iterator[None]:
    """Record (True) or not (False) inside the block, then restore the previous mode."""
    previous = is_grad_enabled()
    _local.enabled = bool(mode)
    try:
        yield
    finally:
        _local.enabled = previous


def no_grad():
    """``with minikernel.no_grad():`` — nothing inside is recorded (``torch.no_grad``)."""
    return set_grad_enabled(False)


def enable_grad():
    """``with minikernel.enable_grad():`` — record again inside a ``no_grad`` block."""
    return set_grad_enabled(True)


def backward_running() -> bool:
    """True while the engine runs a backward pass (see ``engine_running``)."""
    return getattr(_local, "in_backward", 0) > 0


@contextmanager
def engine_running() -> Iterator[None]:
    """Mark a backward pass: tensor arithmetic inside it uses the autograd layer's
    numpy values (``functions.py``), so a backward formula never needs chapter 02's kernels."""
    _local.in_backward = getattr(_local, "in_backward", 0) + 1
    try:
        yield
    finally:
        _local.in_backward -= 1


# ---------------------------------------------------------------------- hooks
class RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` unregisters the hook.

    Also a context manager: the hook is removed when the ``with`` block ends.
    """

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks, self.id = hooks, next(RemovableHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def add_hook(hooks: dict, fn: Callable) -> RemovableHandle:
    """Store ``fn`` in an insertion-ordered dict and hand back its removal handle."""
    if not callable(fn):
        raise TypeError(f"a hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


# -------------------------------------------------------------- saved tensors
class SavedTensor:
    """A tensor saved for backward, with the version it had when it was saved.

    An in-place operation bumps a tensor's version; unpacking a saved tensor
    whose version moved on raises, because backward would use the wrong values
    (``torch/csrc/autograd/saved_variable.cpp``).
    """

    def __init__(self, tensor: "Tensor", node: "Node"):
        self.tensor, self.version = tensor, tensor._version
        self._node_name = node.name()

    def unpack(self) -> "Tensor":
        t = self.tensor
        if t._version != self.version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{t.type()} {list(t.shape)}], which is saved by {self._node_name}, is at "
                f"version {t._version}; expected version {self.version} instead. Hint: the in-place "
                f"operation overwrote a value backward needs; use its out-of-place form (e.g. x = x.mul(2) "
                f"instead of x.mul_(2)) or .clone() the tensor first.")
        return t


# ----------------------------------------------------------------------- nodes
class Node:
    """One step of the backward graph (``torch.autograd.graph.Node``).

    ``apply(*grad_outputs)`` maps the gradients of this node's outputs to the
    gradients of its inputs. Nodes are numbered in creation order
    (``_sequence_nr``): when several nodes are ready, the engine runs the most
    recent one first, as PyTorch's does.
    """

    _counter = itertools.count()
    _name = "Node"

    def __init__(self) -> None:
        self._sequence_nr = next(Node._counter)
        self.next_functions: tuple[Edge, ...] = ()
        self._pre_hooks: dict = {}           # fn(grad_outputs) -> grad_outputs | None
        self._post_hooks: dict = {}          # fn(grad_inputs, grad_outputs) -> grad_inputs | None
        self._tensor_pre_hooks: dict = {}    # output_nr -> {id: fn(grad) -> grad | None}
        self._retains_grad: dict = {}        # output_nr -> the non-leaf tensor that called retain_grad()
        self._num_outputs = 1

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs) -> new grad_inputs or None``, after this node runs."""
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs) -> new grad_outputs or None``, before this node runs."""
        return add_hook(self._pre_hooks, fn)

    # The engine calls this; subclasses implement ``apply``.
    def __call__(self, grad_outputs: Grads, keep_graph: bool) -> Grads:
        """Run hooks around ``apply``: tensor hooks, retain_grad, pre-hooks, apply, post-hooks,
        then free what was saved unless ``keep_graph`` (``retain_graph=True``)."""
        with engine_running():
            grad_outputs = self.call_tensor_hooks(grad_outputs)
            for hook in list(self._pre_hooks.values()):
                new = hook(grad_outputs)
                if new is not None:
                    grad_outputs = tuple(new)
            grad_inputs = tuple(self.apply(*grad_outputs))
            for hook in list(self._post_hooks.values()):
                new = hook(grad_inputs, grad_outputs)
                if new is not None:
                    grad_inputs = tuple(new)
        if not keep_graph:
            self.release()
        return grad_inputs

    def call_tensor_hooks(self, grad_outputs: Grads) -> Grads:
        """The hooks registered on this node's output tensors (``t.register_hook``), each one
        may replace the gradient; then ``retain_grad()`` stores what arrived."""
        grads = list(grad_outputs)
        for nr, hooks in self._tensor_pre_hooks.items():
            for hook in list(hooks.values()):
                if grads[nr] is not None:
                    new = hook(grads[nr])
                    if new is not None:
                        grads[nr] = new
        for nr, tensor in self._retains_grad.items():
            if grads[nr] is not None:
                tensor._store_retained_grad(grads[nr])
        return tuple(grads)

    def apply(self, *grad_outputs: "Tensor") -> Grads:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def release(self) -> None:
        """Free the tensors saved for backward (retain_graph=False)."""


class AccumulateGrad(Node):
    """The end of the graph for a leaf that requires grad: adds the gradient into ``.grad``.

    It runs as soon as it is ready (PyTorch gives it the largest sequence number).
    """

    _name = "AccumulateGrad"

    def __init__(self, variable: "Tensor"):
        super().__init__()
        self._sequence_nr = math.inf
        self.variable = variable

    def apply(self, grad: "Tensor") -> Grads:
        from . import autograd

        autograd.accumulate_grad(self.variable, grad)
        return ()


class BackwardNode(Node):
    """The node of a ``Function`` call: it is also the ``ctx`` its forward saw.

    Holds what ``forward`` saved (``save_for_backward``) and anything set on
    ``ctx``; ``apply`` calls the Function's ``backward(ctx, *grads)``.
    """

    _function: Any = None

    def __init__(self) -> None:
        super().__init__()
        self._saved: Optional[list[Optional[SavedTensor]]] = []
        self._freed = False
        self.needs_input_grad: tuple[bool, ...] = ()
        self._forward_arg_is_tensor: tuple[bool, ...] = ()

    def name(self) -> str:
        return getattr(self._function, "_torch_name", None) or f"{self._function.__name__}Backward"

    def save_for_backward(self, *tensors: Optional["Tensor"]) -> None:
        """Keep tensors (or None) for backward; they come back from ``ctx.saved_tensors``."""
        from .tensor import Tensor

        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {len(self._saved)} "
                                f"is of type {type(t).__name__}; store other values as attributes of ctx")
        self._saved = [None if t is None else SavedTensor(t, self) for t in tensors]

    @property
    def saved_tensors(self) -> tuple[Optional["Tensor"], ...]:
        if self._freed:
            raise RuntimeError(_GRAPH_FREED)
        return tuple(None if s is None else s.unpack() for s in self._saved)

    def release(self) -> None:
        if self._saved:
            self._freed = True
            self._saved = None

    def apply(self, *grad_outputs: "Tensor") -> Grads:
        from .tensor import Tensor

        if self._freed:
            raise RuntimeError(_GRAPH_FREED)
        grads = self._function.backward(self, *grad_outputs)
        grads = grads if isinstance(grads, tuple) else (grads,)
        expected = len(self.needs_input_grad)
        if len(grads) != expected:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {expected}, got {len(grads)}): backward must return one "
                               f"gradient (or None) per argument of forward")
        # Keep the gradients of tensor arguments only: those are the node's edges.
        kept = [g for g, is_tensor in zip(grads, self._forward_arg_is_tensor) if is_tensor]
        for g in kept:
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"{self.name()}.backward returned a {type(g).__name__}; gradients must be "
                                f"minikernel Tensors or None")
        return tuple(kept)


def gradient_edge(t: "Tensor") -> Edge:
    """Where a gradient for ``t`` goes: its ``grad_fn`` (which output), its
    ``AccumulateGrad`` for a leaf that requires grad, else nowhere ``(None, 0)``."""
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    if t.requires_grad:
        return t._grad_accumulator(), 0
    return None, 0


def walk(roots: Sequence[Node]) -> Iterator[Node]:
    """Every node reachable from ``roots`` once, depth first, without recursion."""
    seen, stack = set(), [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(n for n, _ in node.next_functions if n is not None)
