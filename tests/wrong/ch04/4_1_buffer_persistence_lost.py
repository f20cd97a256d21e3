"""A tensor assigned over a non-persistent buffer is registered as persistent (register_buffer's default): the buffer starts appearing in state_dict()."""
EXERCISE = "4.1"

from minikernel.nn.module import Module, typename
from minikernel.nn.parameter import Parameter
from minikernel.tensor import Tensor


def _remove_from(name, *places):
    for place in places:
        if name in place:
            if isinstance(place, dict):
                del place[name]
            else:
                place.discard(name)


def module_setattr(module, name, value):
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
            modules[name] = value
        else:
            buffers = module.__dict__.get("_buffers")
            if buffers is not None and name in buffers:
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                    "(minikernel.Tensor or None expected)")
                module.register_buffer(name, value)
            else:
                object.__setattr__(module, name, value)
