"""Whether the params are named is decided by the first item alone: a named pair after an unnamed tensor is taken for a tensor."""
from __future__ import annotations

import warnings
from typing import Any

from minikernel.optim.optimizer import DUPLICATE_WARNING, SET_MESSAGE, ParamGroup, required, typename
from minikernel.tensor import Tensor

EXERCISE = "8.1"


def add_param_group(param_groups: list[ParamGroup], param_group: ParamGroup, defaults: dict[str, Any]) -> None:
    if not isinstance(param_group, dict):
        raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
    params = param_group["params"]
    if isinstance(params, Tensor):
        params = [params]
    elif isinstance(params, set):
        raise TypeError(SET_MESSAGE)
    params = list(params)
    named = bool(params) and isinstance(params[0], tuple)
    names = [p[0] for p in params if isinstance(p, tuple)] if named else []
    param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in params] if named else params
    if names:
        if len(names) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        param_group["param_names"] = names
    for param in param_group["params"]:
        if not isinstance(param, Tensor):
            raise TypeError("optimizer can only optimize Tensors, but one of the params is " + typename(param))
        if not defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
            raise ValueError("can't optimize a non-leaf Tensor")
    for name, default in defaults.items():
        if default is required and name not in param_group:
            raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
        param_group.setdefault(name, default)
    if len(param_group["params"]) != len(set(param_group["params"])):
        warnings.warn(DUPLICATE_WARNING, stacklevel=3)
    seen: set[Tensor] = set()
    for group in param_groups:
        seen.update(group["params"])
        if ("param_names" in param_group) != ("param_names" in group):
            which = "with names" if "param_names" in param_group else "without names"
            raise ValueError("all optimizer param groups should be with/without names. "
                             f"cannot add param group {which} to the optimizer")
    if not seen.isdisjoint(param_group["params"]):
        raise ValueError("some parameters appear in more than one parameter group")
    param_groups.append(param_group)
