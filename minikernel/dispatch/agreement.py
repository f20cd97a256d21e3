"""Does an interpretive dispatch loop agree with the computed dispatch tables?

The library never searches for a kernel at call time: it indexes each operator's table
(``Operator.kernel_for``). Exercise 9.2 writes the search instead — highest key first,
fallthrough skipped, a fallback where the op has no kernel, an error where there is
neither. Both must pick the same entry, and hand it the same keys, for every operator
and every key set. This module finds out without running any operator's kernels: the
loop runs on a *stand-in* operator whose entries record what was reached.

Example::

    >>> from minikernel.dispatch import agreement, rebuild
    >>> agreement.disagreements(rebuild.run_dispatch)     # every operator, every key set
    []
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from ..course.exercise import stub_exercise_id
from . import registry
from .keys import DispatchKey, DispatchKeySet
from .registry import FALLTHROUGH, Operator

#: ``loop(op, keys, args, kwargs)``: an interpretive dispatch loop (``rebuild.run_dispatch``)
Loop = Callable[[Operator, DispatchKeySet, tuple, dict], Any]


@dataclass(frozen=True)
class Outcome:
    """Where a call with some keys lands: the key, its entry's kernel, where the entry comes from
    ("kernel" or "fallback") and the keys the kernel receives; or the error, when it is refused."""

    key: str = ""
    kernel: str = ""
    how: str = ""
    below: Optional[DispatchKeySet] = None
    error: str = ""

    def __str__(self) -> str:
        return self.error or f"{self.key}: {self.kernel} [{self.how}], given {self.below}"


def every_key_set() -> list[DispatchKeySet]:
    """All 2^8 key sets, the empty one included."""
    return [DispatchKeySet(bits=bits) for bits in range(1 << len(DispatchKey))]


def refusal(err: Exception) -> Outcome:
    """An error as an outcome: its type, and for a missing kernel the key torch's message names."""
    if stub_exercise_id(err):  # an unfinished exercise: not an answer
        raise err
    text = str(err)
    if isinstance(err, NotImplementedError) and text.startswith("Could not run"):
        text = text[:text.find("backend") + len("backend")]
    elif isinstance(err, RuntimeError):
        text = "no dispatch key left"
    return Outcome(error=f"{type(err).__name__}: {text}")


def table_outcome(op: Operator, keys: DispatchKeySet) -> Outcome:
    """What the library runs for ``op`` on ``keys``: the computed table's entry (nothing is run)."""
    try:
        key, kernel = op.kernel_for(keys)
    except (NotImplementedError, RuntimeError) as err:
        return refusal(err)
    return Outcome(key.name, kernel.name, op.provenance[key], keys.below(key))


def _stand_in(op: Operator) -> Operator:
    """An unregistered operator with ``op``'s schema whose entry at each key, computed from the
    registrations (``registry.lookup``), is ``op``'s: fallthrough where ``op`` falls through, missing
    where it has nothing, and elsewhere a kernel that returns the ``Outcome`` of reaching it."""
    stand_in = Operator(op.schema)
    for key in DispatchKey:
        entry, how = registry.lookup(op, key)
        if entry is FALLTHROUGH:
            registry.impl_fallthrough(stand_in, key)
        elif entry is not None:
            def reached(keys: DispatchKeySet, *args: Any, _key: DispatchKey = key, _name: str = entry.name,
                        _how: str = how, **kwargs: Any) -> Outcome:
                return Outcome(_key.name, _name, _how, keys)
            registry.impl(stand_in, key, reached, name=entry.name, with_keys=True)
    return stand_in


def _run(loop: Loop, stand_in: Operator, keys: DispatchKeySet) -> Outcome:
    try:
        return loop(stand_in, keys, (), {})
    except (NotImplementedError, RuntimeError) as err:
        return refusal(err)


def loop_outcome(loop: Loop, op: Operator, keys: DispatchKeySet) -> Outcome:
    """What ``loop`` runs for ``op`` on ``keys``, found by running it on a stand-in of ``op``."""
    return _run(loop, _stand_in(op), keys)


def disagreements(loop: Loop, ops: Optional[Iterable[Operator]] = None,
                  key_sets: Optional[Iterable[DispatchKeySet]] = None) -> list[tuple[str, DispatchKeySet, Outcome, Outcome]]:
    """``(op name, keys, the table's outcome, the loop's)`` wherever they differ: for every registered
    operator and every key set unless told otherwise. An empty list: they agree."""
    key_sets = every_key_set() if key_sets is None else list(key_sets)
    found = []
    for op in registry.operators().values() if ops is None else ops:
        stand_in = _stand_in(op)
        for keys in key_sets:
            theirs, ours = table_outcome(op, keys), _run(loop, stand_in, keys)
            if ours != theirs:
                found.append((op.name, keys, theirs, ours))
    return found
