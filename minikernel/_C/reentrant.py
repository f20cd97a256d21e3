"""Reentrant backward: a backward started from inside another one's node (a custom
``Function.backward`` that calls ``backward()`` or ``autograd.grad``).

Each such level runs inside the node that started it, so a chain of them a few thousand
deep would exhaust the thread's stack (Python's recursion limit). PyTorch's engine
(``torch/csrc/autograd/engine.cpp``) counts the nesting per thread and, past
``max_recursion_depth`` (60), runs the nested graph task on a fresh thread of its pool,
carrying the caller's thread-local state (grad mode, saved-tensor hooks, dispatch state)
along; the caller waits for it. minikernel does the same, one new thread per hop, and
also hops early when the Python stack is already half full (a node's Python frames
cost more than torch's C++ ones).

This module imports nothing from minikernel: the modules that keep thread-local state
register it here (``carry``).
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Callable

MAX_RECURSION_DEPTH = 60  #: torch's ``max_recursion_depth`` of nested backward on one thread

_CARRIED: list[threading.local] = []
_NESTING = threading.local()  # how many node calls are running on this thread (not carried)


def carry(local: threading.local) -> threading.local:
    """Copy ``local``'s values for this thread into every fresh thread a nested backward moves to
    (lists are copied, so a push there does not reach the caller). Returns ``local``."""
    _CARRIED.append(local)
    return local


def nesting() -> int:
    """How many node calls are running on this thread: 0 outside backward, 1 in a plain one,
    one more for each level of reentrant backward."""
    return getattr(_NESTING, "depth", 0)


def set_nesting(depth: int) -> None:
    _NESTING.depth = depth


def needs_fresh_thread(depth: int) -> bool:
    """Whether a node called at nesting ``depth`` should run on a fresh thread: at
    ``MAX_RECURSION_DEPTH``, or earlier when the Python stack holds more than half the
    recursion limit. (Only nested calls look at the stack: ``depth`` 0 never moves.)"""
    if depth == 0:
        return False
    if depth >= MAX_RECURSION_DEPTH:
        return True
    half, frame, frames = sys.getrecursionlimit() // 2, sys._getframe(), 0
    while frame is not None and frames <= half:
        frame, frames = frame.f_back, frames + 1
    return frames > half


def _snapshot() -> list[tuple[threading.local, dict]]:
    return [(local, {k: list(v) if isinstance(v, list) else v for k, v in vars(local).items()})
            for local in _CARRIED]


def run_on_fresh_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on a new thread that starts with this thread's carried state and an empty
    stack; this thread waits for it and returns its result or raises its exception."""
    state, outcome = _snapshot(), {}

    def target() -> None:
        for local, values in state:
            vars(local).update(values)
        try:
            outcome["value"] = fn(*args)
        except BaseException as err:  # noqa: BLE001 - raised again in the waiting thread
            outcome["error"] = err

    worker = threading.Thread(target=target, name="minikernel reentrant backward", daemon=True)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
