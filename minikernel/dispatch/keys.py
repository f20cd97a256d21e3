"""Dispatch keys and key sets: which layers an operator call passes through, in which order.

PyTorch gives every tensor a ``DispatchKeySet``: a 64-bit set of *dispatch keys*,
one per layer that may want to see an operation on it (``torch._C._dispatch_keys(x)``
prints it, lowest priority first: ``DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU,
AutocastCPU)``). A call takes the union of its tensors' sets, adds the thread-local
*include* set, removes the thread-local *exclude* set, and runs the kernel of the
highest key left. minikernel keeps the keys this course uses, in PyTorch's order
(``c10/core/DispatchKey.h``), lowest first:

======================  ======================================================
``CPU``, ``CUDA``,      backends: the kernels that compute (chapter 02, or a
``Meta``                custom op's own kernel); Meta computes shapes only
``BackendSelect``       picks a backend for factory functions (no tensor argument)
``Python``              ``__torch_dispatch__`` modes and subclasses (below autograd!)
``ADInplaceOrView``     bumps version counters, sets up views
``Autograd``            records the graph (chapter 03); PyTorch has one per backend
``Autocast``            casts inputs by op (chapter 06); PyTorch has one per device
======================  ======================================================

A key set is an immutable bit set; ``highest()`` is the key whose kernel runs next.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Iterable, Iterator


class DispatchKey(IntEnum):
    """The keys, valued by priority: a higher value runs first (PyTorch's order)."""

    CPU = 0
    CUDA = 1
    Meta = 2
    BackendSelect = 3
    Python = 4
    ADInplaceOrView = 5
    Autograd = 6
    Autocast = 7


#: The keys whose kernels compute; exactly one of them ends every call.
BACKENDS = (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta)
#: PyTorch's per-backend names, for comparing key sets with ``torch._C._dispatch_keys``.
TORCH_NAMES = {
    DispatchKey.Autograd: {"cpu": "AutogradCPU", "cuda": "AutogradCUDA", "meta": "AutogradMeta"},
    DispatchKey.Autocast: {"cpu": "AutocastCPU", "cuda": "AutocastCUDA", "meta": None},
}


class DispatchKeySet:
    """An immutable set of dispatch keys, stored as bits (``1 << key``), like ``c10::DispatchKeySet``.

    Example::

        >>> ks = DispatchKeySet([DispatchKey.CPU, DispatchKey.Autograd])
        >>> ks.highest()
        <DispatchKey.Autograd: 6>
        >>> ks.remove(DispatchKey.Autograd)
        DispatchKeySet(CPU)
    """

    __slots__ = ("bits",)

    def __init__(self, keys: Iterable[DispatchKey] = (), *, bits: int = 0) -> None:
        for key in keys:
            bits |= 1 << DispatchKey(key)
        self.bits = bits

    # -- set algebra
    def __or__(self, other: "DispatchKeySet") -> "DispatchKeySet":
        return DispatchKeySet(bits=self.bits | other.bits)

    def __and__(self, other: "DispatchKeySet") -> "DispatchKeySet":
        return DispatchKeySet(bits=self.bits & other.bits)

    def __sub__(self, other: "DispatchKeySet") -> "DispatchKeySet":
        return DispatchKeySet(bits=self.bits & ~other.bits)

    def add(self, key: DispatchKey) -> "DispatchKeySet":
        return DispatchKeySet(bits=self.bits | (1 << key))

    def remove(self, key: DispatchKey) -> "DispatchKeySet":
        return DispatchKeySet(bits=self.bits & ~(1 << key))

    def has(self, key: DispatchKey) -> bool:
        return bool(self.bits >> key & 1)

    __contains__ = has

    def below(self, key: DispatchKey) -> "DispatchKeySet":
        """The keys of lower priority than ``key``: what a kernel at ``key`` redispatches to."""
        return DispatchKeySet(bits=self.bits & ((1 << key) - 1))

    def highest(self) -> DispatchKey:
        """The key whose kernel runs next (``highestPriorityTypeId`` in c10)."""
        if not self.bits:
            raise RuntimeError("empty DispatchKeySet: no kernel to run (did every key get excluded?)")
        return DispatchKey(self.bits.bit_length() - 1)

    def backend(self) -> DispatchKey:
        """The backend key in the set (the highest one if several)."""
        backends = self & DispatchKeySet(BACKENDS)
        return backends.highest()

    # -- iteration and display
    def __iter__(self) -> Iterator[DispatchKey]:
        """Keys in priority order, highest first: the order a call visits them."""
        return (k for k in sorted(DispatchKey, reverse=True) if self.has(k))

    def __len__(self) -> int:
        return bin(self.bits).count("1")

    def __bool__(self) -> bool:
        return bool(self.bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DispatchKeySet) and other.bits == self.bits

    def __hash__(self) -> int:
        return hash(self.bits)

    def __repr__(self) -> str:
        # lowest priority first, the way torch prints a DispatchKeySet
        return "DispatchKeySet(" + ", ".join(k.name for k in reversed(list(self))) + ")"

    def torch_names(self, device_type: str) -> list[str]:
        """The names torch prints for these keys on ``device_type`` tensors, lowest first."""
        names = []
        for key in reversed(list(self)):
            name = TORCH_NAMES.get(key, {}).get(device_type, key.name) if key in TORCH_NAMES else key.name
            if name is not None:
                names.append(name)
        return names


def keyset(*keys: DispatchKey) -> DispatchKeySet:
    """``DispatchKeySet`` of the given keys."""
    return DispatchKeySet(keys)


#: Keys every tensor of a backend carries (the layers always get a look, as in PyTorch).
ALWAYS = keyset(DispatchKey.ADInplaceOrView, DispatchKey.Autograd, DispatchKey.Autocast)
