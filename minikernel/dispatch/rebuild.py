"""Exercises 9.1–9.3: the dispatcher's semantics, written by you as an interpreter.

minikernel's own dispatcher, which every Tensor operator uses, works as PyTorch's does:
each operator's dispatch table is computed when its kernels and the fallbacks are
registered (``registry.py``, torch's ``computeDispatchTableEntry``), and a call only
indexes it by the highest key of its key set, with the fallthrough keys masked out
(``dispatcher.py``). These exercises rebuild what that table encodes, step by step,
and the chapter checks that yours agree with it on every operator and key set:

* 9.1 ``compute_keys``   which keys a call visits (``torch._C._dispatch_keys`` and the
  thread-local include/exclude sets);
* 9.2 ``run_dispatch``   the loop: highest key first, fallthrough skipped, fallbacks,
  kernels that redispatch to the keys below;
* 9.3 ``mode_fallback``  the ``Python`` key's boxed fallback, which hands a call to
  the innermost ``DispatchMode`` (``TorchDispatchMode``).
"""
from __future__ import annotations

from typing import Any

from minikernel.course.exercise import exercise

from . import registry, state  # noqa: F401 - for your exercises
from .keys import DispatchKey, DispatchKeySet, keyset  # noqa: F401
from .registry import FALLTHROUGH, Operator  # noqa: F401


@exercise("9.1")
def compute_keys(op: Operator, args: tuple, kwargs: dict) -> DispatchKeySet:
    """The key set of the call ``op(*args, **kwargs)``:

        keys = (∪ keys_of(t) for t in op.schema.tensor_arguments(args, kwargs))
        if keys is empty: keys = {BackendSelect, CPU}             (a factory call)
        return (keys | state.local_include()) - state.local_exclude()

    A tensor's own keys are ``t._dispatch_keys()`` (anything without that method has none).
    "Empty" is decided on the union alone, *before* the thread-local sets: a call with no
    tensor argument (or only values without keys, such as a number passed for a ``Tensor``)
    gets ``{BackendSelect, CPU}`` and then the included keys too, and a call whose tensors'
    keys are all excluded gets an empty set, not the factory's.
    Matches: ``torch._C._dispatch_keys(t)`` combined with
    ``torch._C._dispatch_tls_local_include_set()`` / ``..._exclude_set()``, e.g. the highest
    key of a CPU tensor is ``AutogradCPU``, and ``AutocastCPU`` inside ``torch.autocast("cpu")``.
    ≈6 lines.
    """
    # TODO(9.1): ≈6 lines
    raise NotImplementedError("exercise 9.1 (compute_keys) is not implemented yet")


@exercise("9.2")
def run_dispatch(op: Operator, keys: DispatchKeySet, args: tuple, kwargs: dict) -> Any:
    """Run ``op`` on ``keys``, the dispatch loop::

        while keys:
            key = keys.highest()
            kernel, how = registry.lookup(op, key)      # op's own kernel, else the key's fallback
            if kernel is FALLTHROUGH: drop key, go on
            if kernel is None:                          # no kernel, no fallback at this key
                NotImplementedError("Could not run '<op.name>' with arguments from the
                                     '<key.name>' backend ...")
            return kernel.call(op, keys.below(key), args, kwargs)
        RuntimeError: no key left

    ``kernel.call`` passes the keys *below* ``key``, so a kernel that wraps a layer can
    redispatch to the next one. Matches the library's table lookup (``dispatcher.redispatch``:
    the same kernel, given the same keys, for every operator and key set) and torch's
    "Could not run 'mylib::op' with arguments from the 'CPU' backend" error. ≈10 lines.
    """
    # TODO(9.2): ≈10 lines
    raise NotImplementedError("exercise 9.2 (run_dispatch) is not implemented yet")


@exercise("9.3")
def mode_fallback(op: Operator, keys: DispatchKeySet, args: tuple, kwargs: dict) -> Any:
    """The ``Python`` key's boxed fallback: give the call to the innermost mode.

    * no mode on the stack (``state.mode_stack()``): redispatch ``op`` to ``keys``
      (the library's ``dispatch.redispatch``; here use ``run_dispatch``);
    * else pop the innermost mode, and while it runs set the thread-local sets so that
      the mode's own ``op(*args)`` goes on *below* the Python key: the keys above Python
      excluded, and Python itself included only if more modes remain (the next mode out
      sees the call then, as in torch);
    * ``return mode.__dispatch__(op, args, kwargs)``, and afterwards restore the sets
      (``state._TLS.include`` / ``.exclude``) and push the mode back — also on error.

    Matches: ``TorchDispatchMode``: the innermost mode sees each call first, a mode does
    not see the calls it makes itself, ``torch.add`` under a logging mode logs
    ``aten.add.Tensor`` once. ≈14 lines.
    """
    # TODO(9.3): ≈14 lines
    raise NotImplementedError("exercise 9.3 (mode_fallback) is not implemented yet")
