"""Exercises 2.2–2.5: no two iterations of a kernel's ``prange`` loop write the same element.

Two tasks that write one element (a chunk that overlaps the next, a strip of
outputs two tasks both fold, a tile computed twice) race: which value lands depends
on timing, and the value tests see it only when it differs. ``tests/prange_writes.py``
runs the kernel as Python and records which iteration wrote which element, so a race
shows on every run. Each shape spans several tasks at the exercise's sizes and the
reference's; the values of that run are compared with torch too.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from minikernel.kernels import launch
from minikernel.kernels.cpu_tiles import REFERENCE_TILES as T
from minikernel.kernels.scalar_ops import BINARY, SUM, UNARY
from minikernel.kernels.sizes import CPU_CHUNK, CPU_REDUCE_STRIP, CPU_TILE_M
from tests.ch02.strategies import assert_values, blank_like_contiguous, kernel_args
from tests.ch02.test_cpu_kernels import _random
from tests.prange_writes import conflicts


def _assert_no_race(exercise: str, found) -> None:
    if found:
        loop, iterations = found[0]
        raise AssertionError(
            f"exercise {exercise}: {len(found)} elements were each written by more than one iteration of prange "
            f"loop {loop} (e.g. iterations {iterations[:4]}): iterations run on different threads at the same "
            "time, so which write lands depends on timing. Give each iteration its own outputs (chunks, strips "
            "or tiles that do not overlap) and its own scratch arrays")


def _values(shape, seed: int) -> torch.Tensor:
    return _random(shape, torch.int64, seed).double()


@pytest.mark.exercise("2.2")
def test_cpu_map_chunks_write_disjoint_memory():
    launch.kernel("cpu", "map").check_implemented()
    t = _values((2 * CPU_CHUNK + 6,), 70)[::2]  # longer than a chunk, not contiguous
    out = blank_like_contiguous(t.shape, t.dtype)
    o, shape, o_strides, o_offset = kernel_args(out)
    a, _, a_strides, a_offset = kernel_args(t)
    found = conflicts(launch.kernel("cpu", "map").function, UNARY["neg"], o, shape, o_strides, o_offset,
                      a, a_strides, a_offset)
    _assert_no_race("2.2", found)
    assert_values(out, -t)


@pytest.mark.exercise("2.3")
def test_cpu_zip_chunks_write_disjoint_memory():
    launch.kernel("cpu", "zip").check_implemented()
    x, y = _values((2, CPU_CHUNK + 3), 71), _values((1, CPU_CHUNK + 3), 72).expand(2, -1)
    out = blank_like_contiguous(x.shape, x.dtype)
    o, shape, o_strides, o_offset = kernel_args(out)
    a, _, a_strides, a_offset = kernel_args(x)
    b, _, b_strides, b_offset = kernel_args(y)
    found = conflicts(launch.kernel("cpu", "zip").function, BINARY["add"], o, shape, o_strides, o_offset,
                      a, a_strides, a_offset, b, b_strides, b_offset)
    _assert_no_race("2.3", found)
    assert_values(out, x + y)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape, step, dim", [((3, 2 * CPU_REDUCE_STRIP + 3), 1, 0),  # strips of outputs side by side
                                              ((9, 5), 1, 1),                        # one output per row
                                              ((96, 5), 1, 1),                       # many rows, several per task
                                              ((40, 10), 2, 1)],                     # rows whose elements are 2 apart
                         ids=["strips", "rows", "many-rows", "rows-step2"])
def test_cpu_reduce_tasks_write_disjoint_memory(shape, step, dim):
    launch.kernel("cpu", "reduce").check_implemented()
    t = _values(shape, 73)[:, ::step]
    expected = t.sum(dim, keepdim=True)
    out = blank_like_contiguous(expected.shape, t.dtype)
    o, o_shape, o_strides, o_offset = kernel_args(out)
    a, a_shape, a_strides, a_offset = kernel_args(t)
    found = conflicts(launch.kernel("cpu", "reduce").function, SUM, np.float64(0), o, o_shape, o_strides, o_offset,
                      a, a_shape, a_strides, a_offset, dim)
    _assert_no_race("2.4", found)
    assert_values(out, expected)


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("a_shape, b_shape", [((2, 9, 7), (2, 7, 10)),                   # batches, one tile each
                                              ((6, 5), (5, 7)),                           # one tile split in tasks
                                              ((max(T.m, CPU_TILE_M) + 3, 2), (2, 5))],  # two tile rows
                         ids=["batched", "split-tile", "tile-rows"])
def test_cpu_matmul_tasks_write_disjoint_memory(a_shape, b_shape):
    launch.kernel("cpu", "matmul").check_implemented()
    x, y = _values(a_shape, 74), _values(b_shape, 75)
    expected = torch.matmul(x, y)
    out = blank_like_contiguous(expected.shape, x.dtype)
    o, shape, o_strides, o_offset = kernel_args(out)
    a, _, a_strides, a_offset = kernel_args(x)
    b, _, b_strides, b_offset = kernel_args(y)
    found = conflicts(launch.kernel("cpu", "matmul").function, o, shape, o_strides, o_offset,
                      a, a_strides, a_offset, b, b_strides, b_offset, x.shape[-1])
    _assert_no_race("2.5", found)
    assert_values(out, expected)
