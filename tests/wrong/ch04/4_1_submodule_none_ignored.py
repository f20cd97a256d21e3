"""Assigning None to an existing submodule passes the check and stores nothing: the old submodule stays."""
from __future__ import annotations

from typing import Any

from minikernel.nn.module import Module, typename
from minikernel.nn.parameter import Parameter
from minikernel.tensor import Tensor

EXERCISE = "4.1"


def _remove_from(name: str, *places) -> None:
    for place in places:
        if name in place:
            if isinstance(place, dict):
                del place[name]
            else:
                place.discard(name)


def module_setattr(module: Module, name: str, value: Any) -> None:
    params = module.__dict__.get("_parameters")
    if isinstance(value, Parameter):
        if params is None:
            raise AttributeError("cannot assign parameters before Module.__init__() call")
        _remove_from(name, module.__dict__, module._buffers, module._modules, module._non_persistent_buffers_set)
        module.register_parameter(name, value)
    elif params is not None and name in params:
        if value is not None:
            raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                            "(minikernel.nn.Parameter or None expected)")
        module.register_parameter(name, value)
    else:
        modules = module.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(name, module.__dict__, module._parameters, module._buffers,
                         module._non_persistent_buffers_set)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                "(minikernel.nn.Module or None expected)")
        else:
            buffers = module.__dict__.get("_buffers")
            if buffers is not None and name in buffers:
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                    "(minikernel.Tensor or None expected)")
                module.register_buffer(name, value, name not in module._non_persistent_buffers_set)
            else:
                object.__setattr__(module, name, value)
