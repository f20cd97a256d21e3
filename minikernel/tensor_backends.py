"""Where a Tensor method sends its work: through minikernel's dispatcher (``minikernel/dispatch``).

Every tensor carries a key set (``Tensor._dispatch_keys()``: its backend, CPU or
CUDA, and the ``ADInplaceOrView``, ``Autograd`` and ``Autocast`` layers, as in
PyTorch). ``x + y`` calls the operator ``aten::add`` (``route``) and the dispatcher
runs, highest key first:

* ``Autograd`` — when an operand requires grad (or a backward pass runs) the
  autograd layer (``minikernel.autograd.functions``) records the graph (chapter 03)
  and its forward calls the op again below Autograd; otherwise it redispatches;
* ``ADInplaceOrView`` — for in-place ops, bumps the version counter after the
  layers below wrote;
* ``Python`` — a ``DispatchMode`` that is on, if any;
* ``CPU`` / ``CUDA`` — the backend kernel, a function of ``minikernel/aten/`` (``binary_ops.add``:
  ``tensor_iterator.py``'s dtype dispatch and checks, then your chapter 02 kernel)

Which kernel each key runs for each operator is declared once, in
``aten/native_functions.py``, and registered by ``aten/registration.py``.

The autograd layer sits above the Tensor: the few Tensor methods that call it directly
(``backward``, indexing with tensors) and the backward formulas of
``autograd/derivatives.py`` reach it through ``functions``, which the registration fills
when it registers the operators.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Optional

from . import dispatch
from ._C.grad_mode import backward_running, is_grad_enabled


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


class AutogradFunctions:
    """``minikernel.autograd.functions`` (``F.mul``, ``F.sum``, ``F.getitem``, ``F.backward``), looked
    up at each use: the registration provides the module (``aten/registration.py``)."""

    def __init__(self) -> None:
        self._module: Optional[ModuleType] = None

    def provide(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        module = self.__dict__.get("_module")
        if module is None:
            raise RuntimeError("minikernel's operators are not registered yet: import minikernel (the package)")
        return getattr(module, name)

    def __repr__(self) -> str:
        return "<minikernel.autograd.functions (provided by aten/registration.py)>"


#: The autograd path's functions, for the Tensor and for the backward formulas of
#: ``autograd/derivatives.py`` (the op modules import that one, so it can't import them).
functions = AutogradFunctions()
