"""``Function``: a differentiable operation written as a forward and a backward
(``torch.autograd.Function``), and the node/ctx that records one call of it.

``MyFunction.apply(*args)`` runs ``forward(ctx, *args)`` without recording, then —
when some tensor argument requires grad and grad mode is on — makes one node
(``MyFunctionBackward``) whose edges lead to the tensor arguments, and gives the
tensor outputs that node as their ``grad_fn``. The node *is* the ``ctx`` forward
saw: what forward saved, and the attributes it set, are there for backward.

The ctx methods are torch's: ``save_for_backward``, ``saved_tensors``,
``needs_input_grad``, ``mark_dirty`` (an input was modified in place and is returned),
``mark_non_differentiable`` (an output has no gradient, like argmax indices) and
``set_materialize_grads`` (whether backward gets zeros or None for outputs that
received no gradient).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import numpy as np

from .._C.graph import _GRAPH_FREED, Grads, Node, SavedTensor, gradient_edge
from ..tensor import Tensor
from . import values as V
from .grad_mode import is_grad_enabled, no_grad
from .view_nodes import CopySlices

_LEAF_INPLACE = "a leaf Variable that requires grad has been used in an in-place operation."


def _zeros(shape: tuple, dtype: np.dtype) -> Tensor:
    return V.zeros(shape, dtype=dtype)


class BackwardNode(Node):
    """The node of a ``Function`` call, and the ``ctx`` its forward and backward see.

    Holds what ``forward`` saved (``save_for_backward``) and anything set on
    ``ctx``; ``apply`` calls the Function's ``backward(ctx, *grads)``.
    """

    _function: Any = None

    def __init__(self) -> None:
        super().__init__()
        self._saved: Optional[list[Optional[SavedTensor]]] = []
        self._to_save: tuple = ()
        self._freed = False
        self.needs_input_grad: tuple[bool, ...] = ()
        self._forward_arg_is_tensor: tuple[bool, ...] = ()
        self._input_shapes: tuple[Optional[tuple], ...] = ()
        self._input_dtypes: tuple[Optional[np.dtype], ...] = ()
        self._output_meta: list[Optional[tuple[tuple, np.dtype]]] = []
        self._materialize_grads = True
        self._dirty: tuple[Tensor, ...] = ()
        self._non_differentiable: tuple[Tensor, ...] = ()

    def name(self) -> str:
        return getattr(self._function, "_torch_name", None) or f"{self._function.__name__}Backward"

    # ------------------------------------------------------------ ctx API
    def save_for_backward(self, *tensors: Optional[Tensor]) -> None:
        """Keep tensors (or None) for backward; they come back from ``ctx.saved_tensors``.

        Saved when forward returns (as torch does), so saving an output, or an input that
        forward modified in place (``mark_dirty``), records the version it has then.
        """
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}; store other values as attributes of ctx")
        self._to_save = tensors
        self._saved = []  # packed once forward has returned (_freeze_saved), as torch packs once

    def _freeze_saved(self) -> None:
        """Record the saved tensors' versions as they are once forward has returned."""
        self._saved = [None if t is None else SavedTensor(t, self) for t in self._to_save]

    @property
    def saved_tensors(self) -> tuple[Optional[Tensor], ...]:
        if self._freed:
            raise RuntimeError(_GRAPH_FREED)
        if not self._saved and self._to_save:  # inside forward, or a call that records nothing
            return tuple(self._to_save)
        return tuple(None if s is None else s.unpack() for s in self._saved)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Say that forward modified these inputs in place (and returns them)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Say that these outputs have no gradient: they won't require grad, and backward
        still receives a (zero) gradient slot for each."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """True (default): an output that got no gradient reaches backward as zeros;
        False: as None (backward must handle it)."""
        self._materialize_grads = bool(value)

    # ------------------------------------------------------------ backward
    def release(self) -> None:
        if self._saved:
            self._freed = True
            self._saved = None
            self._to_save = ()

    def apply(self, *grad_outputs: Optional[Tensor]) -> Grads:
        edges = self.next_functions
        if len(edges) > 1 and all(n is None for n, _ in edges) and self._function.__module__.startswith("minikernel."):
            # A built-in node of several inputs none of which takes a gradient (each edge leads
            # nowhere, e.g. a view taken under no_grad): torch saves an input of such an op only
            # when another input whose gradient needs it has an edge, so it checks nothing here.
            # (A one-input op saves unconditionally and checks; a user's Function always runs.)
            return (None,) * len(edges)
        if self._freed:
            raise RuntimeError(_GRAPH_FREED)
        if self._materialize_grads:
            grad_outputs = tuple(_zeros(*meta) if g is None and meta is not None else g
                                 for g, meta in zip(grad_outputs, self._output_meta))
        grads = self._function.backward(self, *grad_outputs)
        grads = grads if isinstance(grads, tuple) else (grads,)
        expected = len(self.needs_input_grad)
        if len(grads) > expected and all(g is None for g in grads[expected:]):
            grads = grads[:expected]  # torch accepts (and drops) extra trailing Nones
        if len(grads) != expected:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {expected}, got {len(grads)}): backward must return one "
                               f"gradient (or None) per argument of forward")
        kept = []
        for i, (g, is_tensor) in enumerate(zip(grads, self._forward_arg_is_tensor)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at "
                                       f"position {i + 1}, but the corresponding forward input was not a "
                                       f"Variable")
                continue
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"{self.name()}.backward returned a {type(g).__name__}; gradients must be "
                                f"minikernel Tensors or None")
            shape = self._input_shapes[i]
            if g is not None and shape is not None and g.shape != shape:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {len(kept)}"
                                   f" - got {list(g.shape)} but expected shape compatible with {list(shape)}")
            dtype = self._input_dtypes[i]
            if g is not None and dtype is not None and g.dtype != dtype:
                # torch's validate_outputs: a gradient takes its input's dtype (float32 + float64
                # computes in float64, and the float32 input's gradient is float32 again)
                g = _GradCast.apply(g, dtype)
            kept.append(g)  # only the tensor arguments have edges
        return tuple(kept)


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

    Or, as torch 2 allows, ``forward(*args)`` without ``ctx`` plus
    ``setup_context(ctx, inputs, output)``, which saves what backward needs.

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

    @staticmethod
    def setup_context(ctx, inputs: tuple, output):
        """Optional (torch 2's form): ``forward(*args)`` takes no ``ctx``; this saves what backward
        needs from ``inputs`` (the arguments of ``apply``) and ``output``."""
        raise NotImplementedError("setup_context is not overridden")

    @classmethod
    def apply(cls, *args):
        """Run ``forward``; when recording, make a node whose edges lead to the tensor arguments."""
        node = cls._backward_cls()
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        node._forward_arg_is_tensor = is_tensor
        node.needs_input_grad = tuple(t and a.requires_grad for a, t in zip(args, is_tensor))
        node._input_shapes = tuple(a.shape if t else None for a, t in zip(args, is_tensor))
        node._input_dtypes = tuple(a.dtype if t else None for a, t in zip(args, is_tensor))
        recording = is_grad_enabled() and any(node.needs_input_grad)
        if recording:  # the edges are taken before forward can rebase a dirty input's history
            node.next_functions = tuple(gradient_edge(a) for a, t in zip(args, is_tensor) if t)
            if cls.__module__.startswith("minikernel."):
                # a built-in node asks torch's should_compute_output: an input whose gradient goes
                # nowhere (a view taken under no_grad) needs none, so nothing is saved for it
                edges = iter(node.next_functions)
                node.needs_input_grad = tuple(t and next(edges)[0] is not None for t in is_tensor)
        with no_grad():
            if cls.setup_context is not Function.setup_context:  # torch 2's split form: forward has no ctx
                output = cls.forward(*args)
                cls.setup_context(node, args, output)
            else:
                output = cls.forward(node, *args)
        if not recording:
            for t in node._dirty:
                t._bump_version()  # torch counts a dirty input's write once more, recorded or not
            return output
        return _record(node, args, output)


def _record(node: BackwardNode, args: tuple, output: Any) -> Any:
    """Give forward's tensor outputs ``node`` as their history (``_wrap_outputs`` in torch)."""
    outputs = output if isinstance(output, tuple) else (output,)
    dirty = {id(t) for t in node._dirty}
    for t in node._dirty:
        t._bump_version()  # torch counts the write a dirty input went through once more here
    for a in args:
        if isinstance(a, Tensor) and id(a) in dirty:
            if a.is_leaf and a.requires_grad and a._base is None:
                raise RuntimeError(_LEAF_INPLACE)  # (torch's words differ here: "has been used")
            a._check_inplace()  # torch's other refusals of an in-place write: a view of a leaf, ...
    non_diff = {id(t) for t in node._non_differentiable}
    wrapped = []
    for out in outputs:
        if isinstance(out, Tensor) and id(out) not in dirty and any(out is a for a in args):
            out = out._alias()  # an input handed back unchanged gets a new header; the input keeps its history
        wrapped.append(out)
    node._num_outputs = len(wrapped)
    node._output_meta = [(o.shape, o.dtype) if isinstance(o, Tensor) else None for o in wrapped]
    for nr, out in enumerate(wrapped):
        if not isinstance(out, Tensor):
            continue  # a non-tensor output is returned as is; backward gets None for its slot
        if id(out) in non_diff or out.dtype.kind != "f":
            if id(out) in dirty:
                out._set_history(None, 0)
            continue
        if id(out) in dirty and out._base is not None:
            # a view written in place: its base's history is rewritten (CopySlices), and the view
            # reaches the graph through the base from now on, as after any in-place op on a view
            out._base._set_history(CopySlices(out._base, out, node), 0)
            out._view_version = -1  # its grad_fn, perhaps read above (is_leaf), is made again from the new one
            continue
        out._set_history(node, nr)
    node._freeze_saved()
    return tuple(wrapped) if isinstance(output, tuple) else wrapped[0]


class _GradCast(Function):
    """A gradient converted to its input's dtype (recorded under ``create_graph``)."""

    _torch_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, grad: Tensor, dtype: np.dtype) -> Tensor:
        ctx.dtype = grad.dtype
        out = V.zeros(grad.shape, dtype=dtype)
        V.compute("copy_", out, grad)  # copy_ casts to out's dtype
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _GradCast.apply(grad, ctx.dtype), None


class _DelayedError(Function):
    """Passes a gradient through in forward; its backward raises (``torch``'s ``DelayedError``)."""

    _torch_name = "DelayedError"

    @staticmethod
    def forward(ctx, x: Tensor, *sources: Tensor) -> Tensor:
        return x._alias()

    @staticmethod
    def backward(ctx, grad: Tensor):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(backward: Callable) -> Callable:
    """Decorate a Function's ``backward`` that can't itself be differentiated.

    It then runs without recording; with ``create_graph=True`` its results get a node
    that raises if a second derivative is asked for (``torch.autograd.function.once_differentiable``).
    """
    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        with no_grad():
            grads = backward(ctx, *grad_outputs)
        if not is_grad_enabled() or not any(isinstance(g, Tensor) and g.requires_grad for g in grad_outputs):
            return grads
        single = not isinstance(grads, tuple)
        grads = (grads,) if single else grads
        # Hang each result under the incoming gradients that require grad, through a node that refuses.
        sources = [g for g in grad_outputs if isinstance(g, Tensor) and g.requires_grad]
        grads = tuple(_DelayedError.apply(g, *sources) if isinstance(g, Tensor) else g for g in grads)
        return grads[0] if single else grads

    return wrapper
