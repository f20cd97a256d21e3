"""``state_dict`` and ``load_state_dict``: a module tree's tensors as a flat, named dict.

Keys are attribute paths: the parameter ``weight`` of the submodule ``"0"`` of
``fc`` is ``"fc.0.weight"``. Saving walks the tree and writes each module's
parameters and *persistent* buffers under its prefix; loading walks it again
and, per module, copies the values it finds, notes the keys it expected but did
not find (missing) and the keys under its prefix that name nothing it has
(unexpected). With ``strict=True`` (the default) either kind is an error.

Exercise 4.5: ``module_state_dict`` and ``load_from_state_dict`` (references in
``solutions/nn/state.py``); the rest is complete.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Mapping, Sequence

from ..autograd import values as V
from ..autograd.grad_mode import no_grad
from ..course.exercise import exercise
from ..tensor import Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns (``torch.nn.modules.module._IncompatibleKeys``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def size_text(shape: Sequence[int]) -> str:
    """How error messages print a shape: ``minikernel.Size([2, 3])`` (torch: ``torch.Size([2, 3])``)."""
    return f"minikernel.Size({list(shape)})"


def as_checkpoint_shape(tensor: Tensor, value: Tensor) -> Tensor:
    """``value`` as torch reads it for ``tensor``: a one-element 1-D value loads into a 0-d
    tensor (old checkpoints stored scalars that way), so it is viewed as 0-d; anything else as is."""
    if tensor.ndim == 0 and value.shape == (1,):
        return V.view_of(value, V.array(value).reshape(()))
    return value


def copy_values(param: Tensor, value: Tensor) -> None:
    """``param.copy_(value)`` under ``no_grad``: write ``value``'s elements into ``param``'s memory
    (casting the dtype if needed) and bump ``param``'s version. Shapes must be equal."""
    with no_grad():
        param.copy_(value)  # aten::copy_ (its version goes up once)


@exercise("4.5")
def module_state_dict(module: Any, destination: dict, prefix: str, keep_vars: bool) -> dict:
    """Write ``module``'s state, then its submodules', into ``destination``; return it.

    1. Each parameter in ``module._parameters`` that is not None:
       ``destination[prefix + name] = param`` if ``keep_vars`` else ``param.detach()``
       (the same memory without the autograd history).
    2. Then each buffer in ``module._buffers`` that is not None and whose name is
       not in ``module._non_persistent_buffers_set``, the same way.
    3. Then each submodule ``(name, child)`` of ``module._modules`` that is not None:
       ``child.state_dict(destination=destination, prefix=prefix + name + ".",
       keep_vars=keep_vars)`` (the method, which calls this function again for the child).

    Matches: ``torch.nn.Module.state_dict`` (and ``_save_to_state_dict``): same keys, same order.
    """
    # TODO(4.5): ≈10 lines
    raise NotImplementedError("exercise 4.5 (module_state_dict) is not implemented yet")


@exercise("4.5")
def load_from_state_dict(module: Any, state_dict: Mapping[str, Any], prefix: str, missing_keys: list,
                         unexpected_keys: list, error_msgs: list) -> None:
    """Load ``module``'s own tensors from ``state_dict`` and note what does not fit.

    ``local_state``: the parameters that are not None, then the persistent buffers
    that are not None, by name. For each ``(name, tensor)`` of it, with
    ``key = prefix + name``:

    * ``key`` not in ``state_dict``: append ``key`` to ``missing_keys``;
    * its value is not a minikernel Tensor: append to ``error_msgs``
      ``f'While copying the parameter named "{key}", expected minikernel.Tensor or
      Tensor-like object from checkpoint but received {type(value)}'``;
    * else take ``value = as_checkpoint_shape(tensor, value)`` (a 1-element value
      loads into a 0-d tensor); if the shapes still differ: append ``f"size mismatch for {key}: copying a param with shape
      {size_text(value.shape)} from checkpoint, the shape in current model is
      {size_text(tensor.shape)}."``;
    * otherwise ``copy_values(tensor, value)`` (in place: the module keeps its objects).

    Then every key of ``state_dict`` that starts with ``prefix`` is unexpected when
    the rest after the prefix, split once at the first ``"."``, is either
    ``child.rest`` with ``child`` not in ``module._modules``, or a plain name not in
    ``local_state`` (a non-persistent buffer's name too: it is no part of the state). (``load_state_dict`` calls this for every module, with the
    entries under that module's prefix, and turns the lists into its error.)

    Matches: ``torch.nn.Module._load_from_state_dict`` with ``strict=True`` bookkeeping.
    """
    # TODO(4.5): ≈20 lines
    raise NotImplementedError("exercise 4.5 (load_from_state_dict) is not implemented yet")


def _run_load_pre_hooks(module: Any, local: dict, prefix: str, metadata: Any, missing_keys: list,
                        unexpected_keys: list, error_msgs: list) -> None:
    """The module's ``register_load_state_dict_pre_hook`` hooks, before it loads: each gets the entries
    under ``prefix`` (it may edit them), the module's metadata (``{}`` without any), ``strict=True``
    whatever ``load_state_dict`` was given (as torch: the lists are filtered afterwards), and the lists."""
    local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
    for hook in list(module._load_state_dict_pre_hooks.values()):
        hook(local, prefix, local_metadata, True, missing_keys, unexpected_keys, error_msgs)


def _run_load_post_hooks(module: Any, incompatible_keys: _IncompatibleKeys) -> None:
    for hook in list(module._load_state_dict_post_hooks.values()):
        if hook(module, incompatible_keys) is not None:
            raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not expected to "
                                 "return new values, if incompatible_keys need to be modified, it should be done "
                                 "inplace.")


def load_state_dict(module: Any, state_dict: Mapping[str, Any], strict: bool = True) -> _IncompatibleKeys:
    """``module.load_state_dict``: visit the tree, let each module load its part, then report."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing_keys: list[str] = []
    unexpected_keys: list[str] = []
    error_msgs: list[str] = []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)

    # Depth first, parents before children, like torch's recursion; a module's post-hooks run
    # once its whole subtree is loaded (the "done" entry pushed under its children).
    todo: list = [(module, state_dict, "", False)]
    while todo:
        current, local, prefix, done = todo.pop()
        if done:
            _run_load_post_hooks(current, _IncompatibleKeys(missing_keys, unexpected_keys))
            continue
        _run_load_pre_hooks(current, local, prefix, metadata, missing_keys, unexpected_keys, error_msgs)
        load_from_state_dict(current, local, prefix, missing_keys, unexpected_keys, error_msgs)
        todo.append((current, None, prefix, True))
        children = []
        for name, child in current._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                children.append((child, {k: v for k, v in local.items() if k.startswith(child_prefix)}, child_prefix,
                                 False))
        todo.extend(reversed(children))

    if strict:
        if unexpected_keys:
            error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected_keys)))
        if missing_keys:
            error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing_keys)))
    if error_msgs:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(error_msgs)))
    return _IncompatibleKeys(missing_keys, unexpected_keys)
