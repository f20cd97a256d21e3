"""Module hooks: where they are kept, how a call runs them, how a handle removes them.

Every hook lives in an insertion-ordered dict keyed by its handle's id — the
module's own (``module._forward_pre_hooks``, ``_forward_hooks``,
``_backward_pre_hooks``, ``_backward_hooks``) or one of the global dicts here,
which every module of the process consults *before* its own
(``register_module_forward_pre_hook`` and friends). Flags such as ``with_kwargs``
and ``always_call`` are kept as ids in side dicts. Ids come from one counter and are
never reused, so a flag can never be mistaken for another hook's.

Exercises:

* 4.2 ``run_forward_pre_hooks``, ``run_forward_hooks``: the forward half of
  ``Module._call_impl`` (``torch/nn/modules/module.py``);
* 4.4 ``remove_hook``: what ``handle.remove()`` does.

The reference bodies are in ``solutions/nn/hooks.py``.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

from ..autograd import graph
from ..course.exercise import exercise

Args = tuple  #: the positional arguments of a module call
Kwargs = dict  #: its keyword arguments

# The global hooks (torch.nn.modules.module's module-level dicts).
_global_forward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict[int, bool] = OrderedDict()
_global_forward_hooks_always_called: OrderedDict[int, bool] = OrderedDict()
_global_backward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_is_full_backward_hook: Optional[bool] = None  # None: no global backward hook registered yet


@dataclass
class ModuleCall:
    """One call ``module(*args, **kwargs)`` in progress, shared by ``Module._call_impl`` and the
    hook runners. A hook's replacement is stored here at once: if a later hook raises,
    the ``always_call`` forward hooks still see what the earlier ones made (as in torch,
    where ``_call_impl``'s loops assign to the same local variables)."""

    args: Args
    kwargs: Kwargs
    result: Any = None  #: forward's output, then each forward hook's replacement
    called: set = field(default_factory=set)  #: ids of the always_call forward hooks that already ran



# ------------------------------------------------------------------- handles
class RemovableHandle(graph.RemovableHandle):
    """What every ``register_*hook`` returns: ``handle.remove()`` unregisters the hook
    (``torch.utils.hooks.RemovableHandle``).

    The same class as the tensor hooks' handle (``minikernel.autograd.graph.RemovableHandle``,
    one id counter for both), plus what module hooks need: the flag dicts to clean
    too, and *weak* references to every dict, so that a handle kept somewhere does
    not keep a deleted module's hooks alive.

    Args:
        hooks_dict (OrderedDict): the dict the hook is stored in, under ``handle.id``.
        extra_dict (dict or list of dicts, optional): flag dicts that may hold
            ``handle.id`` too (``with_kwargs``, ``always_call``). Default: ``None``

    Example::

        >>> handle = model.register_forward_hook(lambda module, args, output: print(output.shape))
        >>> handle.remove()          # or: with handle: ... (removed when the block ends)
    """

    def __init__(self, hooks_dict: OrderedDict, *, extra_dict: Union[None, dict, Sequence[dict]] = None):
        super().__init__(hooks_dict)  # takes the next id
        self._hooks = None  # keep no strong reference: the weak ones below are used
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        extras = [] if extra_dict is None else [extra_dict] if isinstance(extra_dict, dict) else list(extra_dict)
        self.extra_dict_ref: tuple[weakref.ref, ...] = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        remove_hook(self)


class WrappedHook:
    """A hook called with its module as first argument, the module held weakly
    (``torch.nn.modules.module._WrappedHook``); without a module, the hook as is."""

    def __init__(self, hook: Callable, module: Any = None):
        if not callable(hook):
            raise TypeError(f"a hook must be callable, got {type(hook).__name__}")
        self.hook = hook
        self.module = None if module is None else weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.module is None:
            return self.hook(*args, **kwargs)
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)


@exercise("4.4")
def remove_hook(handle: RemovableHandle) -> None:
    """What ``handle.remove()`` does: forget the hook everywhere it was filed.

    ``handle.hooks_dict_ref()`` is the dict holding the hook under ``handle.id``,
    or None once that dict has been garbage collected (a weak reference);
    ``handle.extra_dict_ref`` holds a weak reference to each flag dict that may
    hold ``handle.id`` too. Delete ``handle.id`` from each of them that still
    exists and still holds it. Removing twice, or after the module is gone, is
    not an error.

    A call that is already running is not affected: it loops over a list of the
    hooks it made before starting (exercise 4.2), so a hook removed during a call
    may still run in that call, never after.

    Matches: ``torch.utils.hooks.RemovableHandle.remove``.
    """
    # TODO(4.4): ≈6 lines
    raise NotImplementedError("exercise 4.4 (remove_hook) is not implemented yet")


def add_hook(hooks: OrderedDict, hook: Callable, *, prepend: bool = False,
             flags: Sequence[OrderedDict] = (), extra_dicts: Sequence[OrderedDict] = ()) -> RemovableHandle:
    """File ``hook`` under a new handle's id: last in ``hooks`` (first with ``prepend``),
    the id also marked ``True`` in each of ``flags``; ``handle.remove()`` cleans ``extra_dicts``."""
    if not callable(hook):
        raise TypeError(f"a hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(hooks, extra_dict=list(extra_dicts) or None)
    hooks[handle.id] = hook
    for flag in flags:
        flag[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


# -------------------------------------------------------------- global hooks
def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a forward pre-hook common to all modules.

    ``hook(module, args) -> None or new args`` runs before every module's
    ``forward``, before the module's own pre-hooks. A single returned value is
    wrapped into a 1-tuple. Meant for debugging and profiling.

    Matches: ``torch.nn.modules.module.register_module_forward_pre_hook``.

    Example::

        >>> handle = register_module_forward_pre_hook(lambda module, args: print(type(module).__name__, args))
    """
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Register a forward hook common to all modules.

    ``hook(module, args, output) -> None or new output`` (with ``with_kwargs``:
    ``hook(module, args, kwargs, output)``) runs after every module's ``forward``,
    before the module's own forward hooks. ``always_call=True`` runs it even when
    the call raises.

    Matches: ``torch.nn.modules.module.register_module_forward_hook``. (Like
    torch's, its handle does not clear the ``with_kwargs`` flag; ids are never
    reused, so a stale flag is harmless.)
    """
    flags = [d for d, on in ((_global_forward_hooks_with_kwargs, with_kwargs),
                             (_global_forward_hooks_always_called, always_call)) if on]
    return add_hook(_global_forward_hooks, hook, flags=flags, extra_dicts=[_global_forward_hooks_always_called])


def _claim_global_backward_kind(full: bool) -> None:
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a full backward hook common to all modules (run before the modules' own).

    ``hook(module, grad_input, grad_output) -> None or new grad_input``; see
    ``Module.register_full_backward_hook``.

    Matches: ``torch.nn.modules.module.register_module_full_backward_hook``.
    """
    _claim_global_backward_kind(full=True)
    return add_hook(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a backward pre-hook common to all modules (run before the modules' own).

    ``hook(module, grad_output) -> None or new grad_output``.

    Matches: ``torch.nn.modules.module.register_module_full_backward_pre_hook``.
    """
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Deprecated: the old, non-full global backward hook (see ``Module.register_backward_hook``).

    Matches: ``torch.nn.modules.module.register_module_backward_hook``.
    """
    _claim_global_backward_kind(full=False)
    return add_hook(_global_backward_hooks, hook)


def has_any_hook(module: Any) -> bool:
    """Whether a call of ``module`` has any hook to run (else ``forward`` is called directly)."""
    return bool(module._backward_hooks or module._backward_pre_hooks or module._forward_hooks
                or module._forward_pre_hooks or _global_backward_pre_hooks or _global_backward_hooks
                or _global_forward_hooks or _global_forward_pre_hooks)


# ------------------------------------------------------ the forward half (4.2)
@exercise("4.2")
def run_forward_pre_hooks(module: Any, call: ModuleCall) -> None:
    """Run the forward pre-hooks of ``call``: each may replace ``call.args`` (and ``call.kwargs``).

    First take one list of ``(hook_id, hook)`` pairs: the global ones
    (``_global_forward_pre_hooks.items()``) then the module's
    (``module._forward_pre_hooks.items()``). Loop over that list, not over the
    dicts, so that a hook removed or added during the call does not change this
    call (a dict changed while looping over it raises). For each hook:

    * ``hook_id in module._forward_pre_hooks_with_kwargs``: ``result = hook(module,
      call.args, call.kwargs)``; a non-None result must be a 2-tuple ``(new_args,
      new_kwargs)``, stored into ``call.args`` and ``call.kwargs``, else
      ``RuntimeError(f"forward pre-hook must return None or a tuple of (new_args,
      new_kwargs), but got {result}.")``;
    * otherwise ``result = hook(module, call.args)``; a non-None result replaces
      ``call.args``, wrapped into a 1-tuple if it is not a tuple.

    Each hook sees what the previous one stored.

    Matches: the first loop of ``torch.nn.Module._call_impl``.
    """
    # TODO(4.2): ≈14 lines
    raise NotImplementedError("exercise 4.2 (run_forward_pre_hooks) is not implemented yet")


@exercise("4.2")
def run_forward_hooks(module: Any, call: ModuleCall) -> None:
    """Run the forward hooks of ``call`` on forward's output ``call.result``; each may replace it.

    As for the pre-hooks, loop over one list made first: global hooks
    (``_global_forward_hooks.items()``) then the module's
    (``module._forward_hooks.items()``). For each ``(hook_id, hook)``:

    * if ``hook_id`` is in ``module._forward_hooks_always_called`` or in
      ``_global_forward_hooks_always_called``, add it to ``call.called`` (if the
      call raises later, the always-call hooks not in ``call.called`` still run);
    * if ``hook_id`` is in ``module._forward_hooks_with_kwargs`` or in
      ``_global_forward_hooks_with_kwargs``: ``out = hook(module, call.args,
      call.kwargs, call.result)``, else ``out = hook(module, call.args, call.result)``;
    * a non-None ``out`` replaces ``call.result`` (no tuple wrapping here).

    Matches: the forward-hook loop of ``torch.nn.Module._call_impl``.
    """
    # TODO(4.2): ≈10 lines
    raise NotImplementedError("exercise 4.2 (run_forward_hooks) is not implemented yet")
