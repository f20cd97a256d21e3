"""What a Tensor knows about autograd (chapter 03): ``requires_grad``, ``grad``,
``grad_fn``, hooks, ``backward()``, ``detach()`` and its version counter.

Mixed into ``Tensor`` (``tensor.py``); the graph itself is ``autograd/graph.py``
and the engine ``autograd/engine.py``.
"""
from __future__ import annotations

import warnings
from typing import Callable, Optional

from . import tensor_backends
from .autograd import graph
from .autograd.engine import AccumulateGrad

_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make "
    "sure you access the leaf Tensor instead.")


class AutogradMixin:
    """Autograd state of a Tensor. ``_init_autograd`` is called by ``Tensor.__init__``."""

    def _init_autograd(self) -> None:
        self._requires_grad = False
        self._grad = None
        self.grad_fn: Optional[graph.Node] = None
        self._output_nr = 0
        self._accumulator: Optional[AccumulateGrad] = None
        self._retains_grad = False
        self._vc = [0]  # version counter, shared by views of the same memory

    # ----------------------------------------------------------- flags
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad or self.grad_fn is not None

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if value and self.dtype.kind != "f":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True):
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors the user made (and for results recorded under no_grad)."""
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        """How many in-place writes this memory has seen (shared with views and ``detach()``)."""
        return self._vc[0]

    def _bump_version(self) -> None:
        self._vc[0] += 1

    # ------------------------------------------------------------ grad
    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, AutogradMixin):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: {list(value.shape)} "
                                   f"vs the tensor's {list(self.shape)}")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep the gradient of this non-leaf tensor in ``.grad`` during backward (no-op on leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        self._retains_grad = True
        self.grad_fn._retains_grad[self._output_nr] = self

    def _store_retained_grad(self, grad) -> None:
        self._grad = grad.clone() if self._grad is None else self._grad + grad

    # ----------------------------------------------------------- hooks
    def register_hook(self, hook: Callable) -> graph.RemovableHandle:
        """Call ``hook(grad) -> Tensor or None`` when this tensor's gradient is computed.

        A returned tensor replaces the gradient for everything downstream (and for
        ``.grad`` of a leaf: the hook runs before accumulation).

        Example::

            >>> h = y.register_hook(lambda g: print("y grad", g.item()))
            >>> h.remove()
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node, nr = graph.gradient_edge(self)
        return graph.add_hook(node._tensor_pre_hooks.setdefault(nr, {}), hook)

    # ---------------------------------------------------------- backward
    def backward(self, gradient=None, retain_graph: Optional[bool] = None, create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (``torch.Tensor.backward``).

        Args:
            gradient: d(something)/d(self), needed unless ``self`` has one element (default None).
            retain_graph: keep the saved tensors for another backward (default: ``create_graph``).
            create_graph: record the backward pass, for higher-order derivatives (default False).
        """
        tensor_backends.run_backward(self, gradient, retain_graph, create_graph)

    # -------------------------------------------------- graph plumbing
    def detach(self):
        """The same memory (and version counter), cut from the graph: ``requires_grad=False``."""
        out = type(self)(self._storage, self._shape, self._strides, self._offset)
        out._vc = self._vc
        return out

    @property
    def data(self):
        """``detach()`` without the shared version counter (PyTorch's legacy ``.data``)."""
        return type(self)(self._storage, self._shape, self._strides, self._offset)

    def clone(self):
        return tensor_backends.autograd().clone(self)

    def _alias(self):
        """Another Tensor object over the same memory with the same history."""
        out = self.detach()
        out._requires_grad, out.grad_fn, out._output_nr = self._requires_grad, self.grad_fn, self._output_nr
        out._accumulator = self._grad_accumulator() if self._requires_grad and self.grad_fn is None else None
        return out

    def _set_history(self, node: graph.Node, output_nr: int) -> None:
        self.grad_fn, self._output_nr = node, output_nr

    def _grad_accumulator(self) -> AccumulateGrad:
        """The leaf's AccumulateGrad node, made once (every use of the leaf shares it)."""
        if self._accumulator is None:
            self._accumulator = AccumulateGrad(self)
        return self._accumulator

    def _autograd_repr(self, text: str) -> str:
        """torch's repr suffix: ``grad_fn=<MulBackward0>`` or ``requires_grad=True``."""
        if self.grad_fn is not None:
            return f"{text[:-1]}, grad_fn=<{self.grad_fn.name()}>)"
        if self._requires_grad:
            return f"{text[:-1]}, requires_grad=True)"
        return text
