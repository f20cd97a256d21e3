"""The two nodes an in-place operation on a view needs (``torch/csrc/autograd/functions/tensor.cpp``).

A view (``a[0]``, ``a.t()``, ``a.view(...)``) shares memory with its *base*
(``view._base``) and the base's version counter. When an in-place op writes through
the view, the base's values change too, so the base's history must change with them:

* the base gets a ``CopySlices`` node. Its backward takes the gradient of the whole
  base, runs the in-place op's backward on the part the view covers (written back
  in place), and passes the rest through unchanged to the base's old history;
* every view of that base then reaches the graph through the base: its ``grad_fn``
  becomes an ``AsStridedBackward0`` node (made when it is next read, because the
  shared version counter moved on) that puts the view's gradient at its place in a
  zero gradient of the base.

Nothing here imports the Tensor (a Tensor makes these nodes, so they sit below it):
new tensors are made with ``type(grad)``, the class of the gradient they come from.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..kernels.layout import has_internal_overlap
from .graph import Edge, Grads, Node, gradient_edge

if TYPE_CHECKING:
    from ..tensor import Tensor

Geometry = tuple[tuple[int, ...], tuple[int, ...], int]  #: (shape, strides, storage offset)


def geometry(t: Tensor) -> Geometry:
    return t.shape, t.stride(), t.storage_offset()


def _dense(cls: type, values: np.ndarray) -> Tensor:
    """A contiguous tensor of class ``cls`` holding a copy of ``values``."""
    values = np.array(values, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    strides = tuple(s // values.itemsize for s in values.strides) if values.size else (0,) * values.ndim
    return cls(values.reshape(-1).copy() if values.size else np.zeros(0, values.dtype), values.shape, strides, 0)


class _BaseGradient:
    """A zero gradient laid out like the base's storage, and windows on it for a view."""

    def __init__(self, cls: type, storage_size: int, dtype: np.dtype, base: Geometry):
        self.cls, self.storage = cls, np.zeros(storage_size, dtype)
        self.base = cls(self.storage, *base)

    def window(self, where: Geometry) -> np.ndarray:
        return self.cls(self.storage, *where)._numpy_view()

    def dense_base(self) -> Tensor:
        return _dense(self.cls, self.base._numpy_view())


class AsStridedBackward(Node):
    """The ``grad_fn`` of a view whose base was modified in place: the view's gradient,
    put at the view's place in a zero gradient of the base."""

    _name = "AsStridedBackward0"

    def __init__(self, base: Tensor, view: Tensor):
        super().__init__()
        self._storage_size, self._dtype = base._storage.size, base.dtype
        self._base, self._view = geometry(base), geometry(view)
        self.next_functions: tuple[Edge, ...] = (gradient_edge(base),)

    def apply(self, grad: Tensor) -> Grads:
        out = _BaseGradient(type(grad), self._storage_size, self._dtype, self._base)
        shape, strides, offset = self._view
        positions = offset + sum(np.indices(shape, dtype=np.int64)[d] * st for d, st in enumerate(strides))
        # np.add.at: a view that names one element several times (an expand) adds every gradient there
        np.add.at(out.storage, np.asarray(positions).reshape(-1), grad._numpy_view().reshape(-1))
        return (out.dense_base(),)


class CopySlices(Node):
    """The base's new ``grad_fn`` after an in-place op ``fn`` wrote through one of its views.

    ``next_functions``: the base's previous history, then ``fn``'s other inputs.
    """

    _name = "CopySlices"

    def __init__(self, base: Tensor, view: Tensor, fn: Node):
        super().__init__()
        self._storage_size, self._dtype = base._storage.size, base.dtype
        self._base, self._view = geometry(base), geometry(view)
        self.fn = fn
        self.next_functions = (gradient_edge(base), *fn.next_functions[1:])
        self._keep_graph = False

    def __call__(self, grad_outputs: Grads, keep_graph: bool) -> Grads:
        self._keep_graph = keep_graph
        return super().__call__(grad_outputs, keep_graph)

    def apply(self, grad: Any) -> Grads:
        # The base's gradient is made only when its previous history takes one (torch's
        # task_should_compute_output(0)); the view's window is then written back, which torch
        # refuses for a view that names one element several times (an expand).
        wants_base = self.next_functions[0][0] is not None
        if wants_base and has_internal_overlap(*self._view[:2]):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        cls = type(grad)
        out = _BaseGradient(cls, self._storage_size, self._dtype, self._base)
        out.base._numpy_view()[...] = grad._numpy_view()
        window = out.window(self._view)
        grads = self.fn((_dense(cls, window),), self._keep_graph)
        if not wants_base:
            return (None, *grads[1:])
        first = grads[0] if grads else None
        window[...] = 0 if first is None else first._numpy_view()
        return (out.dense_base(), *grads[1:])

    def release(self) -> None:
        self.fn.release()
