"""The autograd graph: nodes, edges, saved tensors, hooks and grad mode.

Every result of a differentiable operation points at the node that made it
(``y.grad_fn``). A node knows where the gradients it produces go next
(``next_functions``: one ``(node, input_nr)`` edge per tensor input, ``(None, 0)``
when that input needs no gradient) and what it saved from the forward pass to
compute them. Leaves that require grad end in an ``AccumulateGrad`` node, which
adds the gradient into ``leaf.grad``. This is PyTorch's ``torch/csrc/autograd``
in a few classes (``torch.autograd.graph``); the engine that walks the graph is
``engine.py``, the node of a ``Function`` call is in ``function.py``.

Nothing here imports the Tensor: a Tensor holds its ``grad_fn`` node, so the
nodes sit below it (as PyTorch's ``Node`` sits below ``TensorImpl``'s autograd meta).
"""
from __future__ import annotations

import itertools
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

from . import grad_mode, reentrant
from .grad_mode import engine_running

if TYPE_CHECKING:
    from ..tensor import Tensor

Edge = tuple[Optional["Node"], int]   #: (node the gradient goes to, which of its inputs)
Grads = tuple[Optional["Tensor"], ...]  #: one gradient (or None) per slot

_GRAPH_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")

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
        self.version, self._vc = tensor._version, tensor._vc
        self._node, self._node_name = node, node.name()
        # For its error torch names the saving node when the tensor is that node's own output,
        # else the node the tensor comes out of when it is unpacked.
        self._is_output = tensor._grad_fn is node
        self._output_nr = tensor._output_nr
        self._described = (tensor.type(), list(tensor.shape))
        hooks = _SAVED_HOOKS.stack[-1] if getattr(_SAVED_HOOKS, "stack", None) else None
        if hooks is None:
            self.tensor, self._unpack_hook = tensor, None
        else:  # saved_tensors_hooks: keep what pack returns instead of the tensor
            pack, self._unpack_hook = hooks
            self.tensor, self._packed = None, pack(tensor)
            self._grad_fn = tensor.grad_fn

    def unpack(self) -> "Tensor":
        if self._vc[0] != self.version:
            t_grad_fn = self.tensor.grad_fn if self.tensor is not None else self._grad_fn
            node, nr = (self._node, self._output_nr) if self._is_output else (t_grad_fn, self._output_nr)
            which = f", which is output {nr} of {_short_name(node)}," if node is not None else ""
            kind, shape = self._described
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{kind} {shape}]{which} is at version {self._vc[0]}; expected version "
                f"{self.version} instead. Hint: the in-place operation overwrote a value that {self._node_name} "
                f"needs; use its out-of-place form (e.g. x = x.mul(2) instead of x.mul_(2)) or .clone() the "
                f"tensor first.")
        if self._unpack_hook is None:
            return self.tensor
        out = self._unpack_hook(self._packed)
        if not hasattr(out, "_vc"):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(out).__name__}")
        return out


_SAVED_HOOKS = reentrant.carry(threading.local())
reentrant.carry(grad_mode._local)


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Inside the block, every tensor saved for backward is replaced by ``pack_hook(tensor)``, and
    ``unpack_hook(packed)`` gives it back in backward (``torch.autograd.graph.saved_tensors_hooks``).

    Args:
        pack_hook: ``fn(tensor) -> anything``, called when a node saves ``tensor``.
        unpack_hook: ``fn(packed) -> tensor``, called when backward needs it.

    Example::

        >>> with saved_tensors_hooks(lambda t: t.to_numpy(), lambda a: minikernel.tensor(a)):
        ...     y = (x * x).sum()      # x is kept as a numpy copy
    """

    def __init__(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if not hasattr(_SAVED_HOOKS, "stack"):
            _SAVED_HOOKS.stack = []
        _SAVED_HOOKS.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: Any) -> None:
        _SAVED_HOOKS.stack.pop()


def _checked_count(hook: Callable, values: tuple, expected: int) -> tuple:
    """A hook must return one gradient (or None) per slot, as torch checks."""
    if len(values) != expected:
        name = getattr(hook, "__name__", type(hook).__name__)
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got {len(values)}, but "
                           f"expected {expected})")
    return values


def _short_name(node: "Node") -> str:
    """``MulBackward0`` -> ``Mul``: how torch names a node in its version-counter error."""
    name = node.name()
    return re.sub(r"Backward\d*$", "", name)


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
    _capture_raw = False  # set by the engine's nodes_to_run (see ``hooked``)

    def __init__(self) -> None:
        self._sequence_nr = next(Node._counter)
        self.next_functions: tuple[Edge, ...] = ()
        self._pre_hooks: dict = {}           # fn(grad_outputs) -> grad_outputs | None
        self._post_hooks: dict = {}          # fn(grad_inputs, grad_outputs) -> grad_inputs | None
        self._tensor_pre_hooks: dict = {}    # output_nr -> {id: fn(grad) -> grad | None}
        self._retains_grad: dict = {}        # output_nr -> weakref to the non-leaf tensor that called retain_grad()
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
        then free what was saved unless ``keep_graph`` (``retain_graph=True``).

        Called from inside another node's backward (reentrant backward) deeper than the
        thread's stack allows, it runs on a fresh thread, as torch's engine does (``reentrant.py``)."""
        depth = reentrant.nesting()
        if reentrant.needs_fresh_thread(depth):
            return reentrant.run_on_fresh_thread(self.__call__, grad_outputs, keep_graph)
        reentrant.set_nesting(depth + 1)
        try:
            return self._run(grad_outputs, keep_graph)
        finally:
            reentrant.set_nesting(depth)

    def _run(self, grad_outputs: Grads, keep_graph: bool) -> Grads:
        with engine_running():
            grad_outputs = self.call_tensor_hooks(grad_outputs)
            for hook in list(self._pre_hooks.values()):
                new = hook(grad_outputs)
                if new is not None:
                    grad_outputs = _checked_count(hook, tuple(new), len(grad_outputs))
            grad_inputs = tuple(self.apply(*grad_outputs))
            for hook in list(self._post_hooks.values()):
                new = hook(grad_inputs, grad_outputs)
                if new is not None:
                    grad_inputs = _checked_count(hook, tuple(new), len(grad_inputs))
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
        for nr, ref in self._retains_grad.items():
            tensor = ref()
            if grads[nr] is not None and tensor is not None:
                tensor._store_retained_grad(grads[nr])
        return tuple(grads)

    def hooked(self, slot: int, grad: Optional["Tensor"]) -> Optional["Tensor"]:
        """``grad`` after the tensor hooks registered on output ``slot`` (what ``autograd.grad``
        returns for an input: torch runs the input's hooks on the gradient it captures) — unless
        this node runs in the same pass (another input lies beyond it, ``_capture_raw``): then
        torch captures the gradient before the hooks, which run once, when the node does."""
        if self._capture_raw:
            return grad
        for hook in list(self._tensor_pre_hooks.get(slot, {}).values()):
            if grad is not None:
                new = hook(grad)
                if new is not None:
                    grad = new
        return grad

    def apply(self, *grad_outputs: "Tensor") -> Grads:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def release(self) -> None:
        """Free the tensors saved for backward (retain_graph=False)."""


def gradient_edge(t: "Tensor") -> Edge:
    """Where a gradient for ``t`` goes: its ``grad_fn`` (which output), its
    ``AccumulateGrad`` for a leaf that requires grad, else nowhere ``(None, 0)``.

    A view taken under ``no_grad`` of a tensor that requires grad requires grad too, but
    as in torch its gradient goes nowhere: it has no ``grad_fn`` and no accumulator of its
    own (its ``requires_grad`` comes from its base), so nothing reaches its ``.grad`` or the
    base's, and the nodes that would compute it save and check nothing for it."""
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    if t.requires_grad and not (t._base is not None and t._no_grad_view is True):
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
