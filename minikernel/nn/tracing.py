"""``CallTrace``: hang recording hooks on every module of a model and list what fired.

A debugging aid (chapter 04 uses it to put torch's hook order beside
minikernel's). It uses only the public hook API — ``named_modules``, the four
``register_*hook`` methods and the handles' ``remove`` — so it traces a
``torch.nn.Module`` and a ``minikernel.nn.Module`` alike.
"""
from __future__ import annotations

from typing import Any


def _shape_of(value: Any) -> Any:
    """Tensors as their shape, tuples element by element, anything else as its repr."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return tuple(value.shape)
    if isinstance(value, (tuple, list)):
        return tuple(_shape_of(v) for v in value)
    return value


class CallTrace:
    """Record the hook events of every module of ``model``.

    Args:
        model: a torch or minikernel module; every module of ``model.named_modules()``
            gets the hooks.
        forward (bool, optional): forward pre-hooks and forward hooks. Default: ``True``
        backward (bool, optional): backward pre-hooks and full backward hooks. Default: ``True``

    Each event is ``(what, module name, shapes)``: the shapes of the args (forward
    pre-hook), of the output (forward hook), of grad_output (backward pre-hook) or
    of ``(grad_input, grad_output)`` (full backward hook); None where a gradient is None.

    Example::

        >>> with CallTrace(model) as trace:
        ...     model(x).sum().backward()
        >>> print(trace)
        forward pre-hook    (model)  args ((4, 2),)
        ...
    """

    def __init__(self, model: Any, *, forward: bool = True, backward: bool = True):
        self.events: list[tuple[str, str, Any]] = []
        self._handles: list[Any] = []
        for name, module in model.named_modules():
            label = name or "(model)"
            if forward:
                self._handles.append(module.register_forward_pre_hook(self._recorder("forward pre-hook", label)))
                self._handles.append(module.register_forward_hook(self._recorder("forward hook", label)))
            if backward:
                self._handles.append(module.register_full_backward_pre_hook(self._recorder("backward pre-hook",
                                                                                           label)))
                self._handles.append(module.register_full_backward_hook(self._recorder("full backward hook",
                                                                                       label)))

    def _recorder(self, what: str, label: str):
        def hook(module: Any, *args: Any) -> None:
            seen = args[-1] if what in ("forward hook", "backward pre-hook") else args[0]
            if what == "full backward hook":
                seen = args  # (grad_input, grad_output)
            self.events.append((what, label, _shape_of(seen)))
        return hook

    def remove(self) -> None:
        """Remove every hook this trace registered."""
        while self._handles:
            self._handles.pop().remove()

    def __enter__(self) -> "CallTrace":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            self.remove()
        except NotImplementedError:
            if exc_type is None:  # an unfinished exercise (4.4) — unless another error is on its way
                raise

    def lines(self) -> list[str]:
        width = max((len(label) for _, label, _ in self.events), default=0)
        return [f"{what:<19} {label:<{width}}  {shapes}" for what, label, shapes in self.events]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def attribute_kind(module: Any, name: str) -> str:
    """Where ``module`` keeps ``name``: "parameter", "buffer", "non-persistent buffer",
    "submodule", "attribute" (a plain ``__dict__`` entry) or "missing" (torch or minikernel)."""
    if name in module._parameters:
        return "parameter"
    if name in module._buffers:
        return "non-persistent buffer" if name in module._non_persistent_buffers_set else "buffer"
    if name in module._modules:
        return "submodule"
    return "attribute" if name in vars(module) else "missing"
