"""The hook half of ``minikernel.nn.Module``: registering hooks and ``_call_impl``.

``Module`` inherits these methods; they read the hook dicts that ``Module.__init__``
creates (``_forward_pre_hooks``, ``_forward_hooks``, ``_backward_pre_hooks``,
``_backward_hooks`` and the flag dicts) and the global ones in ``hooks.py``.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from ..tensor import Tensor
from . import backward_hooks as BH
from . import hooks as H
from .hooks import RemovableHandle

Hook = Callable[..., Any]


class HookMethods:
    """``register_*hook`` and ``__call__`` of ``Module`` (``torch/nn/modules/module.py``)."""

    def register_forward_pre_hook(self, hook: Hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Run ``hook(module, args) -> None or new args`` before every ``forward``.

        Args:
            hook: a single returned value is wrapped into a 1-tuple; with
                ``with_kwargs`` the hook is ``hook(module, args, kwargs) -> None or
                (new_args, new_kwargs)``.
            prepend (bool, optional): run before the hooks already registered. Default: ``False``
            with_kwargs (bool, optional): also pass (and let it replace) the keyword arguments.
                Default: ``False``

        Example::

            >>> handle = model.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
        """
        flags = [self._forward_pre_hooks_with_kwargs] if with_kwargs else []
        return H.add_hook(self._forward_pre_hooks, hook, prepend=prepend, flags=flags,
                          extra_dicts=[self._forward_pre_hooks_with_kwargs])

    def register_state_dict_pre_hook(self, hook: Hook) -> RemovableHandle:
        """Run ``hook(module, prefix, keep_vars) -> None`` at the start of every ``state_dict`` call
        on this module (``torch.nn.Module.register_state_dict_pre_hook``)."""
        return H.add_hook(self._state_dict_pre_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Hook) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) -> None`` each time ``load_state_dict`` reaches this module, before it loads its own
        tensors. ``state_dict`` holds the entries under ``prefix``; the hook may edit it (rename or add
        keys) and append to the three lists (``torch.nn.Module.register_load_state_dict_pre_hook``)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Hook, with_module: bool = False) -> RemovableHandle:
        """The same without ``module`` as the hook's first argument unless ``with_module``
        (``torch.nn.Module._register_load_state_dict_pre_hook``); the module is held weakly."""
        return H.add_hook(self._load_state_dict_pre_hooks, H.WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_post_hook(self, hook: Hook) -> RemovableHandle:
        """Run ``hook(module, incompatible_keys) -> None`` once this module and its children are
        loaded by ``load_state_dict``; it may edit ``incompatible_keys.missing_keys`` /
        ``.unexpected_keys`` in place (before ``strict`` turns them into an error), and must
        return None (``torch.nn.Module.register_load_state_dict_post_hook``)."""
        return H.add_hook(self._load_state_dict_post_hooks, hook)

    def register_forward_hook(self, hook: Hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Run ``hook(module, args, output) -> None or new output`` after every ``forward``.

        Args:
            hook: ``args`` are the positional arguments forward received; with
                ``with_kwargs`` the hook is ``hook(module, args, kwargs, output)``.
            prepend (bool, optional): run before the hooks already registered. Default: ``False``
            with_kwargs (bool, optional): pass the keyword arguments too. Default: ``False``
            always_call (bool, optional): run even when the call raises. Default: ``False``

        Example::

            >>> acts = {}
            >>> handle = model[0].register_forward_hook(lambda module, args, out: acts.update(fc1=out))
        """
        flags = [d for d, on in ((self._forward_hooks_with_kwargs, with_kwargs),
                                 (self._forward_hooks_always_called, always_call)) if on]
        return H.add_hook(self._forward_hooks, hook, prepend=prepend, flags=flags,
                          extra_dicts=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])

    def register_full_backward_pre_hook(self, hook: Hook, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_output) -> None or new grad_output`` when the gradients of the
        module's outputs are known, before they flow into the module.

        Args:
            hook: ``grad_output`` has one entry per output (None for non-tensors).
            prepend (bool, optional): run before the hooks already registered. Default: ``False``
        """
        return H.add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def register_full_backward_hook(self, hook: Hook, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_input, grad_output) -> None or new grad_input`` once the gradients
        of the module's inputs are computed.

        Args:
            hook: ``grad_input`` has one entry per positional argument of the call
                (None for non-tensors); the gradients of parameters are not in it.
            prepend (bool, optional): run before the hooks already registered. Default: ``False``

        Example::

            >>> handle = model.register_full_backward_hook(lambda m, gin, gout: print(gout[0].shape))
        """
        self._claim_backward_kind(full=True)
        return H.add_hook(self._backward_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook: Hook) -> RemovableHandle:
        """Deprecated: ``hook(module, grad_input, grad_output)`` hung on the ``grad_fn`` of the
        first output tensor, so ``grad_input`` is that one node's inputs, not the module's.
        Use ``register_full_backward_hook``."""
        self._claim_backward_kind(full=False)
        return H.add_hook(self._backward_hooks, hook)

    def _claim_backward_kind(self, full: bool) -> None:
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", full)

    def _get_backward_hooks(self) -> tuple[list[Hook], list[Hook]]:
        """(full, non-full) backward hooks of a call: the global ones first. A list, taken at
        call time: a hook removed between forward and backward still runs in that backward."""
        full: list[Hook] = []
        non_full: list[Hook] = []
        for is_full, hooks in ((H._global_is_full_backward_hook, H._global_backward_hooks),
                               (self._is_full_backward_hook, self._backward_hooks)):
            if is_full is True:
                full += hooks.values()
            elif is_full is False:
                non_full += hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self) -> list[Hook]:
        return [*H._global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    # ------------------------------------------------------------------- call
    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """``module(*args, **kwargs)``: ``forward`` wrapped in the hooks (``torch.nn.Module._call_impl``).

        1. no hook anywhere: just ``forward``;
        2. forward pre-hooks, global then the module's (4.2);
        3. full backward hooks / backward pre-hooks: inputs through the identity node (4.3);
        4. ``forward``;
        5. forward hooks, global then the module's (4.2);
        6. outputs through the identity node (4.3); deprecated non-full hooks on the output's grad_fn.

        If anything raises, the ``always_call`` forward hooks that have not run yet run, then the
        exception propagates.
        """
        forward_call = self.forward
        if not H.has_any_hook(self):
            return forward_call(*args, **kwargs)
        call = H.ModuleCall(args, kwargs)
        try:
            full_hooks, non_full_hooks, pre_hooks = [], [], []
            if self._backward_pre_hooks or H._global_backward_pre_hooks:
                pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or H._global_backward_hooks:
                full_hooks, non_full_hooks = self._get_backward_hooks()
            if H._global_forward_pre_hooks or self._forward_pre_hooks:
                H.run_forward_pre_hooks(self, call)
            bw_hook = None
            if full_hooks or pre_hooks:
                bw_hook = BH.BackwardHook(self, full_hooks, pre_hooks)
                call.args = BH.setup_input_hook(bw_hook, call.args)
            call.result = forward_call(*call.args, **call.kwargs)
            if H._global_forward_hooks or self._forward_hooks:
                H.run_forward_hooks(self, call)
            if bw_hook:
                if not isinstance(call.result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(call.result)}", stacklevel=2)
                call.result = BH.setup_output_hook(bw_hook, call.result)
            if non_full_hooks:
                BH.register_non_full_backward_hooks(self, call.args, call.result, non_full_hooks)
            return call.result
        except Exception:
            self._run_always_called_hooks(call)
            raise

    __call__ = _call_impl

    def _run_always_called_hooks(self, call: H.ModuleCall) -> None:
        """After an exception: the ``always_call`` forward hooks that did not run yet; their own
        errors become warnings, so the original exception is the one that propagates."""
        for where, hooks, always, with_kwargs in (
                ("global module", H._global_forward_hooks, H._global_forward_hooks_always_called, {}),
                ("module", self._forward_hooks, self._forward_hooks_always_called, self._forward_hooks_with_kwargs)):
            for hook_id, hook in list(hooks.items()):
                if hook_id not in always or hook_id in call.called:
                    continue
                try:
                    out = (hook(self, call.args, call.kwargs, call.result) if hook_id in with_kwargs
                           else hook(self, call.args, call.result))
                    call.result = call.result if out is None else out
                except Exception as err:  # noqa: BLE001 - reported, the first error wins
                    warnings.warn(f"{where} forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {err}", stacklevel=3)

