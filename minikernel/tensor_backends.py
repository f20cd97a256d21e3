"""Where a Tensor method sends its work: through minikernel's dispatcher (``minikernel/dispatch``).

Every tensor carries a key set (``Tensor._dispatch_keys()``: its backend, CPU or
CUDA, and the ``ADInplaceOrView``, ``Autograd`` and ``Autocast`` layers, as in
PyTorch). ``x + y`` calls the operator ``aten::add`` and the dispatcher runs,
highest key first:

* ``Autograd`` — when an operand requires grad (or a backward pass runs) the
  autograd layer (``minikernel.autograd.functions``) records the graph (chapter 03)
  and its forward calls the op again below Autograd; otherwise it redispatches;
* ``ADInplaceOrView`` — for in-place ops, bumps the version counter after the
  layers below wrote;
* ``Python`` — a ``DispatchMode`` that is on, if any;
* ``CPU`` / ``CUDA`` — ``minikernel.ops``: dtype dispatch, checks, your chapter 02 kernel
  (on the CPU, the numpy reference backend while that kernel is unfinished); for the
  other ops ``ops_reference``, ``view_ops``, ``shape_views``, ``write_ops``
  (``copy_``, ``fill_``, ``zero_``, ``index_put_``), ``copy_ops`` (``clone``, ``_to_copy``).

A factory (``zeros``, ``ones``, ``full``) has no tensor argument: its ``BackendSelect``
kernel sends it to the backend of its ``device`` argument (``factory_ops.py``).

The layers sit above the Tensor and import it, so they are plugged in here once,
when ``minikernel`` is imported (``register``), the way PyTorch's kernels
register themselves with the dispatcher instead of the Tensor knowing them.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Optional

from . import dispatch
from .autograd.grad_mode import backward_running, is_grad_enabled
from .dispatch import DispatchKey
from .kernels import launch

K = DispatchKey


class _Paths:
    kernels: Optional[ModuleType] = None    #: minikernel.ops
    reference: Optional[ModuleType] = None  #: minikernel.ops_reference
    views: Optional[ModuleType] = None      #: minikernel.view_ops
    shapes: Optional[ModuleType] = None     #: minikernel.shape_views
    writes: Optional[ModuleType] = None     #: minikernel.write_ops
    copies: Optional[ModuleType] = None     #: minikernel.copy_ops
    factories: Optional[ModuleType] = None  #: minikernel.factory_ops
    autograd: Optional[ModuleType] = None   #: minikernel.autograd.functions
    backward: Optional[Callable] = None     #: minikernel.autograd.backward


_PATHS = _Paths()

#: op name → schema. Ops with a chapter 02 kernel (``minikernel.ops``) at CPU/CUDA:
KERNEL_OPS = {
    "add": "add(Tensor self, Tensor other) -> Tensor",
    "sub": "sub(Tensor self, Tensor other) -> Tensor",
    "mul": "mul(Tensor self, Tensor other) -> Tensor",
    "div": "div(Tensor self, Tensor other) -> Tensor",
    "neg": "neg(Tensor self) -> Tensor",
    "exp": "exp(Tensor self) -> Tensor",
    "log": "log(Tensor self) -> Tensor",
    "relu": "relu(Tensor self) -> Tensor",
    "sigmoid": "sigmoid(Tensor self) -> Tensor",
    "sum": "sum(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "mean": "mean(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "max": "max(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "matmul": "matmul(Tensor self, Tensor other) -> Tensor",
    "amax": "amax(Tensor self, int[] dim=None, bool keepdim=False) -> Tensor",
}
#: In-place forms: chapter 02's ``out=self`` variant at the backend, the version bump at ADInplaceOrView.
INPLACE_BINARY = ("add", "sub", "mul", "div")
INPLACE_UNARY = ("neg", "exp", "log", "relu", "sigmoid")
#: Ops with no chapter 02 kernel: ``minikernel.ops_reference`` computes them at CPU (numpy reference backend).
REFERENCE_OPS = {
    "pow": "pow(Tensor self, Tensor exponent) -> Tensor",
    "prod": "prod(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "where": "where(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "tanh": "tanh(Tensor self) -> Tensor",
    "gt": "gt(Tensor self, Tensor other) -> Tensor",
    "lt": "lt(Tensor self, Tensor other) -> Tensor",
    "ge": "ge(Tensor self, Tensor other) -> Tensor",
    "le": "le(Tensor self, Tensor other) -> Tensor",
    "eq": "eq(Tensor self, Tensor other) -> Tensor",
    "index_tensor": "index.Tensor(Tensor self, Any indices) -> Tensor",
    "cat": "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "stack": "stack(Tensor[] tensors, int dim=0) -> Tensor",
}
NOT_DIFFERENTIABLE = ("gt", "lt", "ge", "le", "eq")
#: Views and the contiguous copy: ``minikernel.view_ops`` at CPU/CUDA (your chapter 01 code).
VIEW_OPS = {
    "view": "view(Tensor self, int[] size) -> Tensor",
    "reshape": "reshape(Tensor self, int[] shape) -> Tensor",
    "permute": "permute(Tensor self, int[] dims) -> Tensor",
    "transpose": "transpose(Tensor self, int dim0, int dim1) -> Tensor",
    "t": "t(Tensor self) -> Tensor",
    "expand": "expand(Tensor self, int[] size) -> Tensor",
    "index": "index(Tensor self, Any indices) -> Tensor",
    "contiguous": "contiguous(Tensor self) -> Tensor",
}
#: Views with no chapter 01 exercise: ``minikernel.shape_views`` at CPU/CUDA (numpy's header),
#: recorded by ``autograd/shape_ops.py``. Qualified name -> (schema, kernel's name in both modules).
SHAPE_OPS = {
    "select.int": ("select.int(Tensor self, int dim, int index) -> Tensor", "select"),
    "slice.Tensor": ("slice.Tensor(Tensor self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor",
                     "slice_"),
    "squeeze": ("squeeze(Tensor self) -> Tensor", "squeeze"),
    "squeeze.dim": ("squeeze.dim(Tensor self, int dim) -> Tensor", "squeeze_dim"),
    "squeeze.dims": ("squeeze.dims(Tensor self, int[] dim) -> Tensor", "squeeze_dims"),
    "unsqueeze": ("unsqueeze(Tensor self, int dim) -> Tensor", "unsqueeze"),
    "alias": ("alias(Tensor self) -> Tensor", "alias"),
    "diagonal": ("diagonal(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor", "diagonal"),
    "unbind.int": ("unbind.int(Tensor self, int dim=0) -> Tensor[]", "unbind"),
    "split.Tensor": ("split.Tensor(Tensor self, int split_size, int dim=0) -> Tensor[]", "split"),
    "split_with_sizes": ("split_with_sizes(Tensor self, int[] split_sizes, int dim=0) -> Tensor[]",
                         "split_with_sizes"),
    "unfold": ("unfold(Tensor self, int dimension, int size, int step) -> Tensor", "unfold"),
}
#: Writes into ``self`` (``minikernel.write_ops``): the version bump at ADInplaceOrView, recorded by
#: ``autograd/inplace.py`` (``index_put_``, a boolean mask, only ever runs unrecorded: ``Tensor.__setitem__``
#: records a masked assignment as ``copy_(where(mask, value, self))``, so it has no Autograd kernel).
WRITE_OPS = {
    "copy_": ("copy_(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", "copy"),
    "fill_.Scalar": ("fill_.Scalar(Tensor self, Scalar value) -> Tensor", "fill"),
    "zero_": ("zero_(Tensor self) -> Tensor", "zero"),
    "index_put_": ("index_put_(Tensor self, Any indices, Tensor values, bool accumulate=False) -> Tensor", None),
}
#: Factories (``minikernel.factory_ops``): no tensor argument, so BackendSelect picks the backend from ``device``.
FACTORY_OPS = {
    "zeros": "zeros(int[] size, *, Any dtype=None, Any device=None) -> Tensor",
    "ones": "ones(int[] size, *, Any dtype=None, Any device=None) -> Tensor",
    "full": "full(int[] size, Scalar fill_value, *, Any dtype=None, Any device=None) -> Tensor",
}


def register(kernels: ModuleType, reference: ModuleType, views: ModuleType, shapes: ModuleType,
             writes: ModuleType, copies: ModuleType, factories: ModuleType, autograd: ModuleType,
             backward: Callable) -> None:
    """Plug in the layers and register every operator's kernels (called once by ``minikernel/__init__.py``)."""
    _PATHS.kernels, _PATHS.reference, _PATHS.views = kernels, reference, views
    _PATHS.shapes, _PATHS.writes, _PATHS.copies, _PATHS.factories = shapes, writes, copies, factories
    _PATHS.autograd, _PATHS.backward = autograd, backward
    if not dispatch.registry.has("aten::add"):
        _register_operators()


def _require(value: Any, what: str) -> Any:
    if value is None:
        raise RuntimeError(f"minikernel's {what} is not registered yet: import minikernel (the package) first")
    return value


def kernels() -> ModuleType:
    """``minikernel.ops``: device and dtype dispatch, checks, then your chapter 02 kernel."""
    return _require(_PATHS.kernels, "kernel path (minikernel.ops)")


def autograd() -> ModuleType:
    """``minikernel.autograd.functions``: a graph node when recording, values from the backend."""
    return _require(_PATHS.autograd, "autograd path (minikernel.autograd.functions)")


def run_backward(*args: Any) -> None:
    """``minikernel.autograd.backward(*args)``, for ``Tensor.backward``."""
    _require(_PATHS.backward, "autograd engine")(*args)


def autograd_active(args: tuple) -> bool:
    """Whether the Autograd key's kernel records: when an operand requires grad and grad mode is on,
    or while a backward pass runs. Otherwise it redispatches to the backend (under ``no_grad``
    torch's autograd kernels do only that: ``with no_grad(): w.fill_(1)`` is one ``fill_``)."""
    if backward_running():
        return True
    flat = [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))]  # Tensor[] arguments too
    return is_grad_enabled() and any(getattr(a, "requires_grad", False) is True for a in flat)


def route(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the operator ``aten::<name>`` through the dispatcher."""
    return dispatch.registry.get(name)(*args, **kwargs)


# ----------------------------------------------------------------- kernels
def _autograd_kernel(name: str, fn: Callable) -> Callable:
    """The Autograd key: record (``fn``) when autograd is involved, else redispatch below."""
    op = dispatch.registry.get(name)

    makes_views = name in VIEW_OPS or name in SHAPE_OPS

    def autograd_kernel(keys, *args):
        if autograd_active(args):
            return fn(*args)
        out = dispatch.redispatch(op, keys, *args)
        if makes_views and not backward_running():
            if getattr(args[0], "requires_grad", False):
                _mark_no_grad_views(out)
            if isinstance(out, tuple) and is_grad_enabled():  # torch remembers a multi-output view as one
                for view in out:
                    view._multi_output_view = _MULTI_NAMES.get(name, name)
        return out

    autograd_kernel.__qualname__ = f"autograd.functions.{name.rstrip('_')}"
    return autograd_kernel


#: how torch's messages name the multi-output view ops
_MULTI_NAMES = {"unbind.int": "Unbind", "split.Tensor": "Split", "split_with_sizes": "SplitWithSizes"}


def _mark_no_grad_views(out: Any) -> None:
    """A view taken under ``no_grad`` of a tensor that requires grad: like torch, it requires grad
    too, as a leaf of its own (nothing flows to the base through it), and writing into it
    with grad mode on is refused (``Tensor._check_inplace``)."""
    for view in out if isinstance(out, (tuple, list)) else (out,):
        if getattr(view, "_base", None) is not None:
            view._requires_grad, view._no_grad_view = True, True


def _backend(name: str, fn: Callable) -> Callable:
    """The CPU/CUDA key's kernel: ``minikernel.ops`` with the numpy reference backend allowed to
    stand in for an unfinished chapter 02 kernel (``kernels/launch.py``: ``reference_fallback``)."""
    def backend(*args, **kwargs):
        with launch.reference_fallback():
            return fn(*args, **kwargs)

    backend.__qualname__ = name
    return backend


def _bump_version(name: str) -> Callable:
    """ADInplaceOrView for an in-place op: run the layers below, then bump ``self``'s version."""
    op = dispatch.registry.get(name)

    def inplace_or_view(keys, self, *args):
        dispatch.redispatch(op, keys, self, *args)
        self._bump_version()
        return self

    inplace_or_view.__qualname__ = "ADInplaceOrView: bump version"
    return inplace_or_view


def _backend_select(name: str) -> Callable:
    """BackendSelect for a factory (no tensor argument): redispatch to the ``device`` argument's backend."""
    op = dispatch.registry.get(name)

    def backend_select(keys, *args, **kwargs):
        return dispatch.redispatch(op, _PATHS.factories.backend_keys(keys, kwargs.get("device")), *args, **kwargs)

    backend_select.__qualname__ = "BackendSelect: the device argument's backend"
    return backend_select


def _define(schema: str, backend_name: str, backend: Callable, autograd_fn: Optional[Callable] = None,
            bumps_version: bool = False, factory: bool = False) -> None:
    """Declare ``aten::<schema>``: ``backend`` at CPU and CUDA, ``autograd_fn`` (records when autograd
    is involved, else redispatches) at Autograd, a version bump at ADInplaceOrView for in-place ops,
    and for a factory the BackendSelect kernel."""
    reg = dispatch.registry
    op = reg.define(schema)
    for key in (K.CPU, K.CUDA):
        reg.impl(op, key, _backend(backend_name, backend))
    name = schema.split("(", 1)[0]  # "add_", as the kernels' names say it (not "aten::add_")
    if factory:
        reg.impl(op, K.BackendSelect, _backend_select(name), with_keys=True)
    if bumps_version:
        reg.impl(op, K.ADInplaceOrView, _bump_version(name), with_keys=True)
    if autograd_fn is not None:
        reg.impl(op, K.Autograd, _autograd_kernel(name, autograd_fn), with_keys=True)


def _register_operators() -> None:
    for name, schema in KERNEL_OPS.items():
        _define(schema, f"ops.{name}", lambda *a, _n=name: getattr(kernels(), _n)(*a),
                lambda *a, _n=name: getattr(autograd(), _n)(*a))
    for name in INPLACE_BINARY:
        _define(f"{name}_(Tensor self, Tensor other) -> Tensor", f"ops.binary({name!r}, out=self)",
                lambda s, o, _n=name: kernels().binary(_n, s, o, out=s, inplace=True),
                lambda *a, _n=name: autograd().inplace(_n, *a), bumps_version=True)
    for name in INPLACE_UNARY:
        _define(f"{name}_(Tensor self) -> Tensor", f"ops.unary({name!r}, out=self)",
                lambda s, _n=name: kernels().unary(_n, s, out=s, inplace=True),
                lambda *a, _n=name: autograd().inplace(_n, *a), bumps_version=True)
    for name, schema in REFERENCE_OPS.items():  # comparisons: no Autograd kernel, it falls through
        _define(schema, f"ops_reference.{name}", lambda *a, _n=name: getattr(_PATHS.reference, _n)(*a),
                None if name in NOT_DIFFERENTIABLE else lambda *a, _n=name: getattr(autograd(), _n)(*a))
    _define("tanh_(Tensor self) -> Tensor", "ops.unary('copy', ops_reference.tanh(self), out=self)",
            lambda s: kernels().unary("copy", _PATHS.reference.tanh(s), out=s, inplace=True),
            lambda s: autograd().inplace("tanh", s), bumps_version=True)
    for name, schema in VIEW_OPS.items():
        _define(schema, f"view_ops.{name}", lambda *a, _n=name: getattr(_PATHS.views, _n)(*a),
                lambda *a, _n=name: _autograd_view(_n, *a))
    for schema, fn in SHAPE_OPS.values():
        _define(schema, f"shape_views.{fn}", lambda *a, _f=fn: getattr(_PATHS.shapes, _f)(*a),
                lambda *a, _f=fn: getattr(autograd(), _f)(*a))
    for name, (schema, kind) in WRITE_OPS.items():
        fn = name.split(".")[0]
        _define(schema, f"write_ops.{fn}", lambda *a, _f=fn: getattr(_PATHS.writes, _f)(*a),
                None if kind is None else lambda *a, _k=kind: autograd().inplace(_k, *a), bumps_version=True)
    _define("clone(Tensor self) -> Tensor", "copy_ops.clone", lambda x: _PATHS.copies.clone(x),
            lambda x: autograd().clone(x))
    # not recorded (minikernel's autograd runs on the CPU): the Autograd key falls through
    _define("_to_copy(Tensor self, *, Any device=None) -> Tensor", "copy_ops._to_copy",
            lambda x, **kw: _PATHS.copies._to_copy(x, **kw))
    _define("as_strided(Tensor self, int[] size, int[] stride, int? storage_offset=None) -> Tensor",
            "Tensor._with", lambda x, size, stride, offset=None: x._with(size, stride, offset))
    for name, schema in FACTORY_OPS.items():
        _define(schema, f"factory_ops.{name}", lambda *a, _n=name, **kw: getattr(_PATHS.factories, _n)(*a, **kw),
                factory=True)


def _autograd_view(name: str, x, *args):
    """The Autograd key's kernel of a view op: its recording Function (``contiguous`` records a clone)."""
    if name == "contiguous":
        return x if x.is_contiguous() else autograd().clone(x, True)
    return getattr(autograd(), name)(x, *args)


class _AutogradFunctions:
    """``minikernel.autograd.functions``, looked up at each use (see ``functions``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(autograd(), name)

    def __repr__(self) -> str:
        return "<minikernel.autograd.functions (through tensor_backends)>"


#: The autograd path's functions (``F.mul``, ``F.sum``, ...) for modules that the
#: op modules themselves import (the backward formulas of ``autograd/derivatives.py``):
#: they reach ``minikernel.autograd.functions`` through this registry at call time.
functions = _AutogradFunctions()
