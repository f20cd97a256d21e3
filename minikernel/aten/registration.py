"""Every operator of ``native_functions.py``, registered with the dispatcher: PyTorch's
generated ``RegisterCPU.cpp`` / ``RegisterAutograd.cpp`` / ``RegisterADInplaceOrView.cpp``,
made when this module is loaded (``minikernel/__init__.py`` loads it once).

For each declaration:

* ``CPU`` and ``CUDA`` — the ``dispatch`` kernel (a function of a module in
  ``KERNEL_MODULES``), with the numpy reference standing in for an unfinished chapter 02
  kernel (``kernels/launch.py``: ``reference_fallback``);
* ``Autograd`` — the recording function (``minikernel.autograd.functions``), an
  ``Inplace`` write, or the node generated from a ``Derivative``; it records when autograd
  is involved and redispatches below otherwise. ``NOT_DIFFERENTIABLE`` / ``FALLS_THROUGH``:
  no kernel, the key falls through;
* ``ADInplaceOrView`` — for an in-place schema (``Tensor(a!) self``), the version bump;
* ``BackendSelect`` — for a factory (no tensor argument), the ``device`` argument's backend;
* the in-place variant ``<name>_`` when declared.

This module imports every layer it registers (the kernels and autograd sit above the
Tensor, the dispatcher below it), so nothing else needs to be imported first.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Optional

from .. import dispatch
from ..autograd import functions as autograd_functions
from ..autograd.generated import derivative_function
from ..autograd.grad_mode import backward_running, is_grad_enabled
from ..dispatch import DispatchKey
from ..kernels import launch
from ..tensor_backends import autograd_active, functions
from . import binary_ops, copy, factories, indexing, linalg, reduce_ops, shape, tensor_compare, unary_ops
from .native_functions import (
    COPY_BACK,
    FALLS_THROUGH,
    NATIVE_FUNCTIONS,
    NOT_DIFFERENTIABLE,
    OUT_SELF,
    Derivative,
    Inplace,
    NativeFunction,
)

K = DispatchKey

#: The modules a declaration's ``dispatch`` names its kernel in (``"binary_ops.add"``): the
#: kernel files of this package, named after ATen's (``aten/src/ATen/native/BinaryOps.cpp``, ...).
KERNEL_MODULES: dict[str, ModuleType] = {module.__name__.rpartition(".")[2]: module for module in (
    unary_ops, binary_ops, tensor_compare, reduce_ops, linalg, shape, indexing, copy, factories)}

#: how torch's messages name the multi-output view ops
_MULTI_NAMES = {"unbind.int": "Unbind", "split.Tensor": "Split", "split_with_sizes": "SplitWithSizes"}


def kernel(reference: str) -> Callable:
    """The function ``"module.name"`` names, looked up at each call (a test may replace it)."""
    module_name, _, attr = reference.partition(".")
    if module_name not in KERNEL_MODULES:
        raise KeyError(f"kernel {reference!r}: no kernel module {module_name!r}; the modules are "
                       f"{sorted(KERNEL_MODULES)} (aten/registration.py)")
    module = KERNEL_MODULES[module_name]
    if not hasattr(module, attr):
        raise AttributeError(f"kernel {reference!r}: {module.__name__} has no function {attr!r}")
    return lambda *args, **kwargs: getattr(module, attr)(*args, **kwargs)


def recorder(native: NativeFunction, inplace: bool = False) -> Optional[Callable]:
    """What the Autograd key runs when it records, or None (the key falls through)."""
    how = native.autograd
    if how in (NOT_DIFFERENTIABLE, FALLS_THROUGH):
        return None
    if inplace:
        return lambda *args: autograd_functions.inplace(native.schema.name, *args)
    if isinstance(how, Inplace):
        return lambda *args: autograd_functions.inplace(how.kind, *args)
    if isinstance(how, Derivative):
        return derivative_function(native).apply
    if not hasattr(autograd_functions, how):
        raise AttributeError(f"aten::{native.name}: minikernel.autograd.functions has no {how!r}")
    return lambda *args: getattr(autograd_functions, how)(*args)


# ----------------------------------------------------------------- the kernels per key
def _backend(name: str, fn: Callable) -> Callable:
    """The CPU/CUDA key's kernel, with the numpy reference backend allowed to stand in for an
    unfinished chapter 02 kernel (``kernels/launch.py``: ``reference_fallback``)."""
    def backend(*args, **kwargs):
        with launch.reference_fallback():
            return fn(*args, **kwargs)

    backend.__qualname__ = name
    return backend


def _autograd_kernel(name: str, fn: Callable, makes_views: bool) -> Callable:
    """The Autograd key: record (``fn``) when autograd is involved, else redispatch below."""
    op = dispatch.registry.get(name)

    def autograd_kernel(keys, *args):
        if autograd_active(args):
            return fn(*args)
        out = dispatch.redispatch(op, keys, *args)
        if makes_views and not backward_running():
            if not is_grad_enabled():
                _mark_no_grad_views(out, args[0])
            if isinstance(out, tuple) and is_grad_enabled():  # torch remembers a multi-output view as one
                for view in out:
                    view._multi_output_view = _MULTI_NAMES.get(name, name)
        return out

    autograd_kernel.__qualname__ = f"autograd.functions.{name.rstrip('_')}"
    return autograd_kernel


def _mark_no_grad_views(out: Any, source: Any) -> None:
    """A view taken under ``no_grad``: like torch (CreationMeta NO_GRAD_MODE), a recorded in-place
    write into it is refused (``Tensor._check_inplace``), whether or not its source requires
    grad; when the source does, the view requires grad too, as a leaf of its own (nothing flows
    to the base through it). An op that returned its input itself (``contiguous()`` of a
    contiguous tensor) made no new view: the input is left as it was."""
    for view in out if isinstance(out, (tuple, list)) else (out,):
        if view is source:
            continue
        if getattr(view, "_base", None) is not None:
            view._no_grad_view = True
            if getattr(source, "requires_grad", False):
                view._requires_grad = True


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
        return dispatch.redispatch(op, factories.backend_keys(keys, kwargs.get("device")), *args, **kwargs)

    backend_select.__qualname__ = "BackendSelect: the device argument's backend"
    return backend_select


def _inplace_kernel(native: NativeFunction) -> tuple[str, Callable]:
    """The in-place variant's backend kernel and its name: the chapter 02 kernel writing into
    ``self`` (``OUT_SELF``), or the functional kernel's result copied into ``self`` (``COPY_BACK``)."""
    name, functional = native.schema.name, kernel(native.dispatch)
    unary = sum(a.is_tensor for a in native.schema.arguments) == 1
    if native.inplace_kernel == OUT_SELF:
        if unary:
            return (f"unary_ops.unary({name!r}, out=self)",
                    lambda s: unary_ops.unary(name, s, out=s, inplace=True))
        return (f"binary_ops.binary({name!r}, out=self)",
                lambda s, o: binary_ops.binary(name, s, o, out=s, inplace=True))
    if native.inplace_kernel == COPY_BACK:
        return (f"unary_ops.unary('copy', {native.dispatch}(self), out=self)",
                lambda s, *a: unary_ops.unary("copy", functional(s, *a), out=s, inplace=True))
    raise ValueError(f"aten::{native.name}: inplace_kernel must be OUT_SELF or COPY_BACK, got {native.inplace_kernel!r}")


def _define(schema: str, backend_name: str, backend: Callable, record: Optional[Callable]) -> None:
    reg = dispatch.registry
    op = reg.define(schema)
    for key in (K.CPU, K.CUDA):
        reg.impl(op, key, _backend(backend_name, backend))
    name = op.schema.qualified_name.removeprefix("aten::")
    if not any(a.is_tensor for a in op.schema.arguments):
        reg.impl(op, K.BackendSelect, _backend_select(name), with_keys=True)
    if op.schema.is_inplace:
        reg.impl(op, K.ADInplaceOrView, _bump_version(name), with_keys=True)
    if record is not None:
        reg.impl(op, K.Autograd, _autograd_kernel(name, record, op.schema.is_view), with_keys=True)


def register(native: NativeFunction) -> None:
    """Register ``native`` (and its in-place variant) with the dispatcher."""
    _define(native.func, native.dispatch, kernel(native.dispatch), recorder(native))
    if native.inplace_func is not None:
        name, fn = _inplace_kernel(native)
        _define(native.inplace_func, name, fn, recorder(native, inplace=True))


def registered() -> tuple[str, ...]:
    """The qualified names of the operators this module registered (``aten::add``, ``aten::add_``, ...)."""
    return REGISTERED


functions.provide(autograd_functions)
for _native in NATIVE_FUNCTIONS:
    register(_native)
REGISTERED = tuple(f"aten::{n}" for f in NATIVE_FUNCTIONS
                   for n in (f.name, *([f.schema.name + "_"] if f.inplace_func else [])))
