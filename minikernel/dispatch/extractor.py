"""Which keys a call brings: c10's ``DispatchKeyExtractor``, one per operator.

PyTorch does not read a call's arguments one by one to find its keys. Each operator
entry holds a ``DispatchKeyExtractor``, made from the schema when the operator is
declared: it knows which arguments dispatch (the ``Tensor``, ``Tensor?`` and
``Tensor[]`` ones) and ORs their tensors' key sets into one bit set
(``multi_dispatch_key_set``). ``computeDispatchKeySet`` then applies the thread's sets
and a key mask in one expression (``c10/core/impl/LocalDispatchKeySet.h``,
``ATen/core/dispatch/DispatchKeyExtractor.h``)::

    ((ks | local.included_) - local.excluded_) & key_mask

The extractor also keeps the operator's ``non_fallthrough_keys``: the keys whose table
entry is *not* fallthrough, updated each time the table is computed (``registry``).
Masking them makes a fallthrough key invisible: it is never the highest key of a
call, so its entry is never looked up (``Operator.kernel_for``).
"""
from __future__ import annotations

from typing import Any

from . import state
from .keys import DispatchKey, DispatchKeySet
from .schema import FunctionSchema

#: Every key: the mask of an operator without fallthrough entries (``DispatchKeySet::FULL``).
FULL = (1 << len(DispatchKey)) - 1
#: Where a call without any dispatch argument starts (a factory: ``ones(2)``). In torch,
#: ``BackendSelect`` is in every thread's default include set; its kernel picks the backend.
FACTORY = (1 << DispatchKey.BackendSelect) | (1 << DispatchKey.CPU)


def keys_of(value: Any) -> DispatchKeySet:
    """A tensor's own key set (``torch._C._dispatch_keys(t)``); empty for anything else."""
    method = getattr(value, "_dispatch_keys", None)
    return method() if callable(method) else DispatchKeySet()


def _bits(value: Any) -> int:
    """The key bits one dispatch argument adds: a tensor's, or every tensor's of a ``Tensor[]``
    (torch's ``MultiDispatchKeySet``, one overload per argument kind)."""
    if isinstance(value, (list, tuple)):
        bits = 0
        for item in value:
            bits |= _bits(item)
        return bits
    return keys_of(value).bits


def compute_dispatch_key_set(ks: int, key_mask: int = FULL) -> DispatchKeySet:
    """``c10::impl::computeDispatchKeySet``: the bits ``ks`` with the thread's included keys added, its
    excluded keys removed (exclude wins), and only the keys of ``key_mask`` kept."""
    tls = state._TLS
    return DispatchKeySet(bits=(ks | tls.include.bits) & ~tls.exclude.bits & key_mask)


class DispatchKeyExtractor:
    """The part of an operator's entry that turns a call's arguments into its key set."""

    __slots__ = ("schema", "non_fallthrough_keys")

    def __init__(self, schema: FunctionSchema) -> None:
        self.schema = schema
        #: bit k set: the entry at key k is not fallthrough (``nonFallthroughKeys_``)
        self.non_fallthrough_keys = FULL

    def multi_dispatch_key_set(self, args: tuple, kwargs: dict) -> int:
        """The OR of the dispatch arguments' key bits; ``FACTORY`` when they bring none."""
        ks = 0
        for value in self.schema.tensor_arguments(args, kwargs):
            ks |= _bits(value)
        return ks or FACTORY

    def get_dispatch_key_set(self, args: tuple, kwargs: dict) -> DispatchKeySet:
        """The keys the call ``op(*args, **kwargs)`` runs with on this thread (before the key mask:
        the kernel that runs gets the call's keys below its own, fallthrough ones included)."""
        return compute_dispatch_key_set(self.multi_dispatch_key_set(args, kwargs))

    def set_operator_has_fallthrough_for_key(self, key: DispatchKey, has_fallthrough: bool) -> None:
        """Called by the table's computation: mask ``key`` out (fallthrough) or back in."""
        if has_fallthrough:
            self.non_fallthrough_keys &= ~(1 << key)
        else:
            self.non_fallthrough_keys |= 1 << key
