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
``_call_impl`` (``module_hooks.py``, with the ``register_*hook`` methods): global
then module forward pre-hooks, ``forward``, global then
module forward hooks (exercise 4.2, ``hooks.py``), with the full backward hooks
set up around it (exercise 4.3, ``backward_hooks.py``).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterator, Mapping, Optional


from ..course.exercise import exercise
from ..tensor import Tensor, typename  # noqa: F401 - re-exported for error messages
from . import state as S
from .hooks import (  # noqa: F401
    RemovableHandle,
    register_module_backward_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from .module_hooks import HookMethods
from .parameter import Parameter


def _forward_unimplemented(self, *input: Any) -> None:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _addindent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [(" " * spaces + line) if line.strip() else "" for line in rest])


class Module(HookMethods):
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
                            ("_forward_pre_hooks_with_kwargs", OrderedDict()), ("_state_dict_pre_hooks", OrderedDict()),
                            ("_load_state_dict_pre_hooks", OrderedDict()), ("_load_state_dict_post_hooks", OrderedDict()),
                            ("_modules", {})]:
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
                grad.zero_()  # aten::zero_ (its version goes up once)

    # ------------------------------------------------------------------ state
    def state_dict(self, *, destination: Optional[dict] = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """Every parameter and persistent buffer of the tree by dotted name (exercise 4.5).

        Values are detached (same memory, no history) unless ``keep_vars``.
        """
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
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
