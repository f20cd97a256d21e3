"""Which iterations of a ``prange`` loop write which memory: a data-race check that needs no luck.

Two iterations of one ``prange`` loop may run at the same time on two threads, so no
element may be written by two of them: one thread's read-add-write can overwrite the
other's (a lost update). Timing decides whether it shows, and on a small input or a
busy machine it seldom does. Here the kernel's Python function runs as plain Python,
its ``prange`` replaced by a ``range`` that notes the current loop and iteration, and
every array it is given or creates with ``np.zeros``/``np.empty``/... recording the
address of each element written. ``conflicts`` lists each element that two iterations
of one loop wrote; writes in different loops are ordered (a loop ends before the next
begins) and never conflict.

Only for kernels whose body is numpy and Python (no numba-compiled helpers: those do
not accept the recording arrays).
"""
from __future__ import annotations

import types
from typing import Callable

import numpy as np

_CREATORS = ("zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like", "full_like")


class _Recorder:
    def __init__(self):
        self.loop = 0
        self.where: tuple[int, int] | None = None  # (loop, iteration) while inside a prange
        self.writers: dict[int, set[tuple[int, int]]] = {}

    def prange(self, *args):
        self.loop += 1
        loop = self.loop
        for i in range(*args):
            self.where = (loop, i)
            yield i
        self.where = None

    def wrote(self, array: np.ndarray, key) -> None:
        if self.where is None:
            return
        start = array.__array_interface__["data"][0]
        index = key if isinstance(key, tuple) else (key,)
        if len(index) == array.ndim and all(isinstance(i, (int, np.integer)) for i in index):  # one element
            position = [int(i) + (n if int(i) < 0 else 0) for i, n in zip(index, array.shape)]
            self.writers.setdefault(start + int(np.dot(position, array.strides)), set()).add(self.where)
            return
        mark = np.zeros(array.shape, bool)
        mark[key] = True
        for position in np.argwhere(mark):
            address = start + int(np.dot(position, array.strides)) if array.ndim else start
            self.writers.setdefault(address, set()).add(self.where)


class _Recording(np.ndarray):
    recorder: _Recorder | None = None

    def __setitem__(self, key, value):
        if _Recording.recorder is not None:
            _Recording.recorder.wrote(np.asarray(self), key)
        super().__setitem__(key, value)


class _NumpyRecording:
    """numpy, except that new arrays record their writes. Each is kept alive until the
    run ends: an array one iteration made and dropped must not lend its memory to the
    next one's, whose writes would then look like the same elements."""

    def __init__(self):
        self.made: list[np.ndarray] = []

    def __getattr__(self, name):
        value = getattr(np, name)
        if name in _CREATORS:
            def make(*args, **kwargs):
                array = value(*args, **kwargs).view(_Recording)
                self.made.append(array)
                return array
            return make
        return value


def conflicts(fn: Callable, *args) -> list[tuple[int, list[int]]]:
    """Run ``fn(*args)`` as Python; the elements two iterations of one prange loop wrote,
    as (loop number from 1, [iterations]). Array arguments are written in place."""
    recorder = _Recorder()
    scope = {**fn.__globals__, "prange": recorder.prange, "np": _NumpyRecording()}
    plain = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    recorded = [a.view(_Recording) if isinstance(a, np.ndarray) else a for a in args]
    _Recording.recorder = recorder
    try:
        plain(*recorded)
    finally:
        _Recording.recorder = None
    found = []
    for writers in recorder.writers.values():
        loops = {loop for loop, _ in writers}
        for loop in loops:
            iterations = sorted(i for lp, i in writers if lp == loop)
            if len(iterations) > 1:
                found.append((loop, iterations))
    return found
