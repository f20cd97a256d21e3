"""How many bytes autograd keeps for backward: ``saved_tensors_hooks`` as a meter.

``torch.autograd.graph.saved_tensors_hooks(pack, unpack)`` calls ``pack(t)`` for every
tensor an op saves for its backward and stores what ``pack`` returns instead; backward
calls ``unpack`` on it. Returning a small handle object lets the meter see when the
graph lets go of it (backward frees each node's saved tensors once the node has run;
deleting the output frees the whole graph).

Bytes are counted per *storage*: two saved tensors sharing memory (a ReLU's output and
the next Linear's input, a weight and its transpose) count once, and the storages of
``exclude`` (the parameters: they exist whether or not autograd saves them) not at all.
"""
from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

import torch


class _Saved:
    """What the pack hook stores in the graph in place of a tensor."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor


class SavedTensorMeter:
    """Context manager: the bytes of activation memory autograd holds, now and at the peak.

    Example::

        with SavedTensorMeter(exclude=model.parameters()) as meter:
            loss = model(x).sum()
            at_end_of_forward = meter.live_bytes
            loss.backward()
        meter.peak_bytes
    """

    def __init__(self, exclude: Iterable[torch.Tensor] = ()):
        self.excluded = {p.untyped_storage().data_ptr() for p in exclude}
        self.live_bytes = 0
        self.peak_bytes = 0
        self.saved_count = 0  #: tensors packed (a storage saved twice counts twice here)
        self._refs: dict[int, list[int]] = {}  # storage pointer -> [bytes, handles alive]
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _pack(self, tensor: torch.Tensor) -> Any:
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        if key in self.excluded:
            return tensor
        self.saved_count += 1
        entry = self._refs.setdefault(key, [storage.nbytes(), 0])
        if entry[1] == 0:
            self.live_bytes += entry[0]
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        entry[1] += 1
        # Detached: a saved *output* (ReLU's, tanh's) would otherwise hold its own grad_fn,
        # which holds this handle — a cycle through C++ that Python's gc cannot free.
        handle = _Saved(tensor.detach())
        weakref.finalize(handle, self._release, key)
        return handle

    def _release(self, key: int) -> None:
        entry = self._refs[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.live_bytes -= entry[0]
            del self._refs[key]

    @staticmethod
    def _unpack(packed: Any) -> torch.Tensor:
        return packed.tensor if isinstance(packed, _Saved) else packed

    def __enter__(self) -> SavedTensorMeter:
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hooks.__exit__(*exc)


def saved_bytes_per_module(model: torch.nn.Module, *inputs: torch.Tensor) -> dict[str, int]:
    """Bytes of activations each leaf module of ``model`` leaves saved after one forward.

    The meter's live bytes are read before and after every leaf module's forward (forward
    pre-hooks and hooks); the difference is what that module added. Parameters are not
    counted. The graph is dropped at the end.
    """
    meter = SavedTensorMeter(exclude=model.parameters())
    added: dict[str, int] = {}
    before: dict[str, int] = {}
    handles = []
    for name, module in model.named_modules():
        if next(module.children(), None) is not None:
            continue  # only leaves: a container's bytes are its children's
        handles.append(module.register_forward_pre_hook(
            lambda m, args, name=name: before.__setitem__(name, meter.live_bytes)))
        handles.append(module.register_forward_hook(
            lambda m, args, out, name=name: added.__setitem__(name, meter.live_bytes - before[name])))
    try:
        with meter:
            output = model(*inputs)
        del output
    finally:
        for handle in handles:
            handle.remove()
    return added
