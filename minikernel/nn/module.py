"""``minikernel.nn.Module``: PyTorch's ``nn.Module`` internals, rebuilt.

A Module is a plain Python object with a few dicts that ``__init__`` creates
(``torch/nn/modules/module.py``)::

    training                      True / False      train(), eval()
    _parameters                   {name: Parameter}  register_parameter, self.w = Parameter(...)
    _buffers                      {name: Tensor}     register_buffer(name, t, persistent=True)
    _non_persistent_buffers_set   {name}             register_buffer(..., persistent=False)
    _modules                      {name: Module}     add_module, self.fc = Linear(...)
    _forward_pre_hooks            {id: hook}         register_forward_pre_hook
    _forward_hooks                {id: hook}         register_forward_hook
    _backward_pre_hooks           {id: hook}         register_full_backward_pre_hook
    _backward_hooks               {id: hook}         register_full_backward_hook / register_backward_hook

``self.fc = Linear(2, 3)`` lands in ``_modules`` because ``Module.__setattr__``
sorts what is assigned (exercise 4.1, ``module_setattr`` below), and reading
``self.fc`` finds it again through ``__getattr__``. Calling ``model(x)`` runs
``_call_impl``: global then module forward pre-hooks, ``forward``, global then
module forward hooks (exercise 4.2, ``hooks.py``), with the full backward hooks
set up around it (exercise 4.3, ``backward_hooks.py``).
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Callable, Iterator, Mapping, Optional

import numpy as np

from .. import values as V
from ..exercise import exercise
from ..tensor import Tensor
from . import backward_hooks as BH
from . import hooks as H
from . import state as S
from .hooks import (RemovableHandle, register_module_backward_hook, register_module_forward_hook,  # noqa: F401
                    register_module_forward_pre_hook, register_module_full_backward_hook,
                    register_module_full_backward_pre_hook)
from .parameter import Parameter

Hook = Callable[..., Any]


def typename(obj: Any) -> str:
    """The name error messages give a value's type (``torch.typename``): ``minikernel.FloatTensor``
    for a tensor, ``int``, ``mymodule.MyNet``."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    return qualname if module in {"", "builtins"} else f"{module}.{qualname}"


def _forward_unimplemented(self, *input: Any) -> None:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _addindent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [(" " * spaces + line) if line.strip() else "" for line in rest])


class Module:
    """Base class for all neural network modules (``torch.nn.Module``).

    Subclass it, assign parameters, buffers and submodules as attributes in
    ``__init__`` (after ``super().__init__()``), and define ``forward``. Call the
    module, not ``forward``: the call runs the hooks.

    Example::

        >>> class MLP(Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1, self.act, self.fc2 = Linear(2, 16), ReLU(), Linear(16, 3)
        ...     def forward(self, x):
        ...         return self.fc2(self.act(self.fc1(x)))
        >>> [name for name, _ in MLP().named_parameters()]
        ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    _version: int = 1  #: stored in state_dict metadata, as torch does
    training: bool
    forward: Callable[..., Any] = _forward_unimplemented

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        # object.__setattr__: these must exist before Module.__setattr__ can sort anything.
        for name, value in [("training", True), ("_parameters", {}), ("_buffers", {}),
                            ("_non_persistent_buffers_set", set()), ("_backward_pre_hooks", OrderedDict()),
                            ("_backward_hooks", OrderedDict()), ("_is_full_backward_hook", None),
                            ("_forward_hooks", OrderedDict()), ("_forward_hooks_with_kwargs", OrderedDict()),
                            ("_forward_hooks_always_called", OrderedDict()), ("_forward_pre_hooks", OrderedDict()),
                            ("_forward_pre_hooks_with_kwargs", OrderedDict()), ("_modules", {})]:
            object.__setattr__(self, name, value)

    # ------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (running statistics, masks).

        Args:
            name (str): the attribute name.
            tensor (Tensor or None): the buffer.
            persistent (bool, optional): whether ``state_dict`` includes it. Default: ``True``
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            f"(minikernel Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Add a parameter (a ``Parameter`` or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            f"(minikernel.nn.Parameter or None required)")
        elif param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value "
                             f"in the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        """Add a child module (or None) under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, kind: str, name: Any, registry: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    # -------------------------------------------------------------- attributes
    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: parameters, buffers and submodules are not in __dict__.
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in self.__dict__ and name in self.__dict__[registry]:
                return self.__dict__[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        module_setattr(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = [*dir(type(self)), *self.__dict__, *self._parameters, *self._modules, *self._buffers]
        return sorted(k for k in keys if not k[0].isdigit())

    # ------------------------------------------------------------------ hooks
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

    # -------------------------------------------------------------- traversal
    def named_modules(self, memo: Optional[set] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """This module and every submodule, depth first, each once (unless ``remove_duplicate=False``),
        with its dotted name: ``("", model), ("0", model[0]), ...``."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator["Module"]:
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """The direct submodules, each once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, get_members: Callable[["Module"], Any], prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()  # ids: one tensor shared by two modules is listed once
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``("fc1.weight", Parameter)`` for every parameter of the tree (skipping None)."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """Every buffer of the tree, persistent or not, with its dotted name."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule (children first, recursively), then on ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ train / eval
    def train(self, mode: bool = True) -> "Module":
        """Set ``training`` on this module and every submodule (Dropout looks at it)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients: ``None`` (default), or zeros in place with ``set_to_none=False``."""
        for param in self.parameters():
            grad = param.grad
            if grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                grad.grad_fn = None  # torch: grad.detach_() / requires_grad_(False)
                grad.requires_grad_(False)
                np.copyto(V.array(grad), 0)
                grad._bump_version()

    # ------------------------------------------------------------------ state
    def state_dict(self, *, destination: Optional[dict] = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """Every parameter and persistent buffer of the tree by dotted name (exercise 4.5).

        Values are detached (same memory, no history) unless ``keep_vars``.
        """
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = dict(version=self._version)
        return S.module_state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> S._IncompatibleKeys:
        """Copy values from ``state_dict`` into this tree's tensors, in place (exercise 4.5).

        Args:
            state_dict (dict): names to minikernel Tensors, e.g. another model's ``state_dict()``.
            strict (bool, optional): missing or unexpected keys are an error. Default: ``True``

        Returns:
            ``_IncompatibleKeys(missing_keys, unexpected_keys)`` (a named tuple).
        """
        return S.load_state_dict(self, state_dict, strict)

    # ------------------------------------------------------------------- repr
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text between the parentheses of ``repr(module)``; layers override it."""
        return ""

    def __repr__(self) -> str:
        extra_lines = self.extra_repr().split("\n") if self.extra_repr() else []
        child_lines = [f"({key}): {_addindent(repr(module), 2)}" for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


# ---------------------------------------------------------- exercise 4.1
@exercise("4.1")
def module_setattr(module: Module, name: str, value: Any) -> None:
    """``module.<name> = value``: file parameters, submodules and buffers in their dicts.

    Look at ``module.__dict__`` with ``.get`` (the dicts may not exist yet when
    ``super().__init__()`` was forgotten), then, in this order:

    1. ``value`` is a ``Parameter``: if ``_parameters`` does not exist yet raise
       ``AttributeError("cannot assign parameters before Module.__init__() call")``;
       remove ``name`` from ``module.__dict__``, ``_buffers``, ``_modules`` and
       ``_non_persistent_buffers_set`` (one name lives in one place), then
       ``module.register_parameter(name, value)``.
    2. ``name`` is already a parameter: only None may replace it
       (``register_parameter(name, None)``); anything else raises
       ``TypeError(f"cannot assign '{typename(value)}' as parameter '{name}'
       (minikernel.nn.Parameter or None expected)")``.
    3. ``value`` is a ``Module``: like 1. (``"cannot assign module before
       Module.__init__() call"``; remove from ``__dict__``, ``_parameters``,
       ``_buffers``, ``_non_persistent_buffers_set``), then ``_modules[name] = value``.
    4. ``name`` is already a submodule: None is stored, anything else raises
       ``TypeError(f"cannot assign '{typename(value)}' as child module '{name}'
       (minikernel.nn.Module or None expected)")``.
    5. ``name`` is already a buffer: a Tensor or None replaces it, keeping its
       persistence (``register_buffer(name, value, persistent=name not in
       module._non_persistent_buffers_set)``); anything else raises
       ``TypeError(f"cannot assign '{typename(value)}' as buffer '{name}'
       (minikernel.Tensor or None expected)")``. (A *new* buffer needs
       ``register_buffer``: assigning a plain tensor to a new name is a plain attribute.)
    6. Otherwise a plain attribute: ``object.__setattr__(module, name, value)``.

    Matches: ``torch.nn.Module.__setattr__``.
    """
    # TODO(4.1): ≈30 lines
    raise NotImplementedError("exercise 4.1 (module_setattr) is not implemented yet")
