"""What a Tensor knows about autograd (chapter 03): ``requires_grad``, ``grad``,
``grad_fn``, hooks, ``backward()``, ``detach()`` and its version counter.

Mixed into ``Tensor`` (``tensor.py``); the graph itself is ``_C/graph.py``
and the engine ``autograd/engine.py``.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Callable, Optional

from . import tensor_backends
from ._C import graph
from ._C.view_nodes import AsStridedBackward

_VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
#: What follows torch's first sentence, by the view's creation meta (torch's ``handle_view_on_rebase``).
_MULTI_OUTPUT_SUFFIX = (
    " This view is the output of a function that returns multiple views. Such functions do not allow the output "
    "views to be modified inplace. You should replace the inplace operation by an out-of-place one.")
_NO_GRAD_SUFFIX = (
    " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
    "both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked).")
_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."

_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make "
    "sure you access the leaf Tensor instead.")


#: C++ names of the dtypes, as torch's messages write them
_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "bool": "bool"}
_SCALAR_TYPES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "bool": "Bool"}


class AutogradMixin:
    """Autograd state of a Tensor. ``_init_autograd`` is called by ``Tensor.__init__``."""

    def _init_autograd(self) -> None:
        self._requires_grad = False
        self._grad = None
        self._grad_fn: Optional[graph.Node] = None
        self._base = None  # the tensor this one is a view of (None: not a view)
        self._view_version = 0  # the version when this view's grad_fn was last set
        self._creation_meta: Optional[str] = None  # torch's CreationMeta: None (DEFAULT), "multi" or "no_grad"
        self._multi_output_view: Optional[str] = None  # "Unbind", ... when made by a multi-view op
        self._output_nr = 0
        self._accumulator: Optional[graph.Node] = None  # its AccumulateGrad
        self._retains_grad = False
        self._no_grad_view = False  # a view taken under no_grad (True), or a view of one ("view")
        self._post_accumulate_hooks: dict = {}  # id -> fn(tensor), after AccumulateGrad
        self._vc = [0]  # version counter, shared by views of the same memory

    # ------------------------------------------------------------ views
    def _make_view_of(self, source) -> None:
        """Mark this new header as a view of ``source``'s memory: same version counter,
        and the same base (a view of a view is a view of the original base, as in torch)."""
        self._vc = source._vc
        self._base = source._base if source._base is not None else source
        self._view_version = self._vc[0]
        # torch's CreationMeta is inherited: a view of a multi-output view, or of a view made
        # under no_grad, is refused in-place writes the same way ("" / "view": inherited)
        if source._multi_output_view is not None:
            self._multi_output_view = ""
        if source._no_grad_view:
            self._no_grad_view = "view"
        self._creation_meta = source._creation_meta  # torch: a view made in grad mode keeps its source's

    # Setting either flag makes it the view's creation meta: the later one wins, as a new
    # non-default CreationMeta replaces an inherited one in torch.
    @property
    def _multi_output_view(self) -> Optional[str]:
        return self._multi_output_name

    @_multi_output_view.setter
    def _multi_output_view(self, name: Optional[str]) -> None:
        self._multi_output_name = name
        if name is not None:
            self._creation_meta = "multi"

    @property
    def _no_grad_view(self):
        return self._no_grad_flag

    @_no_grad_view.setter
    def _no_grad_view(self, flag) -> None:
        self._no_grad_flag = flag
        if flag:
            self._creation_meta = "no_grad"

    def _view_rebase_error(self, indirect: bool) -> RuntimeError:
        """torch's ``handle_view_on_rebase``: the refusal of an in-place write into this view
        (``indirect``: into its base or another view of it) when the view was made by a
        multi-output op or under no_grad. Its first sentence depends on whether the view has
        a ``grad_fn``; the second on how it was made."""
        modified = "its base or another view of its base has been" if indirect else "is being"
        node = self._grad_fn
        if self._creation_meta == "no_grad" or node is None:
            prefix = ("A view was created in" if node is None else
                      f"Output {self._output_nr} of {self._view_name()} is a view of a view which was created in")
            message = f"{prefix} no_grad mode and {modified} modified inplace with grad mode enabled."
        else:
            message = f"Output {self._output_nr} of {self._view_name()} is a view and {modified} modified inplace."
        return RuntimeError(message + (_MULTI_OUTPUT_SUFFIX if self._creation_meta == "multi" else _NO_GRAD_SUFFIX))

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another's memory (``torch.Tensor._is_view()``)."""
        return self._base is not None

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf and most results)."""
        return self._output_nr

    @property
    def grad_fn(self) -> Optional[graph.Node]:
        """The node that made this tensor (None for a leaf).

        A view whose memory was modified in place since its ``grad_fn`` was set (the shared
        version counter moved on) gets its gradient through its base's new history: its
        ``grad_fn`` is regenerated as ``AsStridedBackward0`` (torch does the same).
        """
        base = self._base
        if base is not None and self._view_version != self._vc[0]:
            if self._grad_fn is None and not base.requires_grad:
                return None  # nothing to rebase onto (torch returns here too, keeping the old version)
            if self._creation_meta is not None:
                raise self._view_rebase_error(indirect=True)
            self._view_version = self._vc[0]
            if base.requires_grad:
                old, old_nr = self._grad_fn, self._output_nr
                self._grad_fn, self._output_nr = AsStridedBackward(base, self), 0
                if self._retains_grad and old is not None:  # retain_grad follows the view to its new node
                    ref = old._retains_grad.pop(old_nr, None)
                    if ref is not None:
                        self._grad_fn._retains_grad[0] = ref
        return self._grad_fn

    def _view_name(self) -> str:
        """The op that made this view, as torch's messages name it ("Unbind", "T", "Slice")."""
        if self._multi_output_view:
            return self._multi_output_view
        return self._grad_fn.name().removesuffix("Backward0") if self._grad_fn is not None else "view"

    @grad_fn.setter
    def grad_fn(self, node: Optional[graph.Node]) -> None:
        self._grad_fn = node

    def _check_inplace(self) -> None:
        """torch's refusals before an in-place op that will be recorded (``check_inplace``): a view
        made by a multi-output op or under no_grad, whether or not it requires grad; a view of
        a leaf that requires grad; a tensor that requires grad and has no node of its own. The
        last is decided on the node the tensor holds, not regenerated (torch reads ``grad_fn_``):
        a view made while its base did not require grad, whose base has taken a history since
        (through another view) and whose ``grad_fn`` was not read since, counts as a leaf."""
        if self._base is not None and self._creation_meta is not None:
            raise self._view_rebase_error(indirect=False)
        base = self._base
        if base is not None and base.is_leaf and base.requires_grad:
            raise RuntimeError(_VIEW_OF_LEAF)
        if self._grad_fn is None and self.requires_grad:
            raise RuntimeError(_LEAF)

    # ----------------------------------------------------------- flags
    @property
    def requires_grad(self) -> bool:
        # without reading grad_fn, which refuses some rebased views (torch's flag never raises)
        base = self._base
        return (self._requires_grad or self._grad_fn is not None
                or (base is not None and self._view_version != self._vc[0] and base.requires_grad))

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if value:
                return  # a non-leaf already requires grad: nothing to change (torch allows it)
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
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                                   f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                                   f"the same size")
            if value.dtype != self.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype '{_C_NAMES[value.dtype.name]}' to a "
                                   f"tensor with grad_dtype '{_SCALAR_TYPES[self.dtype.name]}'. The gradient "
                                   f"must match the tensor's dtype: cast it first, e.g. g.to(x.dtype)")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep the gradient of this non-leaf tensor in ``.grad`` during backward (no-op on leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:  # torch reads the field: a view's history is not remade here
            return
        self._retains_grad = True
        self.grad_fn._retains_grad[self._output_nr] = weakref.ref(self)  # (the node must not keep it alive)

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
        if node is None:  # a view taken under no_grad: no gradient reaches it, so the hook never runs (torch)
            return graph.add_hook({}, hook)
        return graph.add_hook(node._tensor_pre_hooks.setdefault(nr, {}), hook)

    def register_post_accumulate_grad_hook(self, hook: Callable) -> graph.RemovableHandle:
        """Call ``hook(tensor) -> None`` on this leaf after its gradient was accumulated into ``.grad``
        (``torch.Tensor.register_post_accumulate_grad_hook``; an optimizer step per parameter, e.g.).

        Example::

            >>> h = w.register_post_accumulate_grad_hook(lambda p: print("grad ready", p.grad))
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if not self.is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        return graph.add_hook(self._post_accumulate_hooks, hook)

    # ---------------------------------------------------------- backward
    def backward(self, gradient=None, retain_graph: Optional[bool] = None, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (``torch.Tensor.backward``).

        Args:
            gradient: d(something)/d(self), needed unless ``self`` has one element (default None).
            retain_graph: keep the saved tensors for another backward (default: ``create_graph``).
            create_graph: record the backward pass, for higher-order derivatives (default False).
            inputs: accumulate only into these tensors' ``.grad`` (default None: every leaf).
        """
        tensor_backends.functions.backward(self, gradient, retain_graph, create_graph, inputs)

    # -------------------------------------------------- graph plumbing
    def detach(self):
        """The same memory (and version counter), cut from the graph: ``requires_grad=False``."""
        out = type(self)(self._storage, self._shape, self._strides, self._offset)
        out._vc = self._vc
        return out

    def detach_(self):
        """Cut this tensor from the graph in place: it becomes a leaf that doesn't require grad."""
        if self._base is not None and self.requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                               "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                               "called on these gradients. To fix this error, please refer to the Optimizer."
                               "zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn, self._requires_grad, self._output_nr = None, False, 0
        return self

    @property
    def data(self):
        """``detach()`` without the shared version counter (PyTorch's legacy ``.data``)."""
        return type(self)(self._storage, self._shape, self._strides, self._offset)

    def clone(self):
        """A copy in new memory (``aten::clone``), recorded as ``CloneBackward0`` when autograd is involved."""
        return tensor_backends.route("clone", self)

    def _alias(self):
        """Another Tensor object over the same memory with the same history."""
        out = self.detach()
        out._base, out._view_version = self._base, self._vc[0]
        out._requires_grad, out.grad_fn, out._output_nr = self._requires_grad, self.grad_fn, self._output_nr
        out._accumulator = self._grad_accumulator() if self._requires_grad and self.grad_fn is None else None
        return out

    def _set_history(self, node: Optional[graph.Node], output_nr: int) -> None:
        self._grad_fn, self._output_nr = node, output_nr
        self._view_version = self._vc[0]

    def _grad_accumulator(self) -> graph.Node:
        """The leaf's AccumulateGrad node, made once (every use of the leaf shares it)."""
        if self._accumulator is None:
            self._accumulator = tensor_backends.functions.AccumulateGrad(self)  # autograd/engine.py
        return self._accumulator

    def _autograd_repr(self, text: str) -> str:
        """torch's repr suffix: ``grad_fn=<MulBackward0>`` or ``requires_grad=True``."""
        if self.grad_fn is not None:
            return f"{text[:-1]}, grad_fn=<{self.grad_fn.name()}>)"
        if self._requires_grad:
            return f"{text[:-1]}, requires_grad=True)"
        return text
