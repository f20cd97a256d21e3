"""Exercise 2.4 edge cases: the reduce kernel stays inside every array it indexes, and keeps the
first of equal values on the walks whose elements lie at a step.

Not only the storages: its own buffers (an index buffer, a strip of accumulators) and the
headers (``out_shape``, ``a_strides``) too. One element past an accumulator strip or past
``out_shape`` changes no value the other tests compare, but a write there corrupts whatever
memory lies after the buffer, and a read there decides with whatever it finds. numba checks no
index by default; compiled with ``boundscheck=True`` (and serially: ``prange`` then runs as
``range``, so the error reaches the caller), any such index raises IndexError.

torch.amax keeps the first of equal values (0.0 and -0.0): ``combine(op, acc, x)``, not
``combine(op, x, acc)``. Whichever loop folds the outputs, the contiguous one or the one that
steps ``a`` by a stride, must fold in that order.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from minikernel.kernels import launch
from minikernel.kernels.scalar_ops import MAX, SUM
from minikernel.kernels.sizes import CPU_REDUCE_STRIP
from tests.ch02.bounds_checked import bounds_checked
from tests.ch02.strategies import assert_values, blank_like_contiguous, kernel_args
from tests.ch02.test_cpu_kernels import _random
from tests.ch02.test_cpu_kernels_edges_reduce_layouts import _signed_zeros

W = CPU_REDUCE_STRIP

CASES = [  # (input, dim): every walk of a reduction, with full strips and a partial last one
    (lambda: _random((5, 2 * W + 3), torch.int64, 41).double(), 0),           # outputs side by side, contiguous
    (lambda: _random((5, 4 * W + 6), torch.int64, 42).double()[:, ::2], 0),   # side by side, a step of 2
    (lambda: _random((3, 2 * W + 3, 2), torch.int64, 43).double().transpose(1, 2), 2),  # a middle kept dim
    (lambda: _random((9, 7), torch.int64, 44).double(), 1),                   # a few contiguous rows
    (lambda: _random((90, 7), torch.int64, 49).double(), 1),                  # many: several at a time and the rest
    (lambda: _random((9, 14), torch.int64, 45).double()[:, ::2], 1),          # rows at a step of 2
    (lambda: _random((2, 3, 5), torch.int64, 46).double().permute(2, 0, 1), 1),  # the reduced dim between two others
    (lambda: _random((4, 1), torch.int64, 47).double().expand(4, 6), 0),      # a kept dim of stride 0
    (lambda: _random((40, 1), torch.int64, 50).double().expand(40, 6), 1),    # rows of stride 0
    (lambda: _random((3, 0), torch.int64, 48).double(), 1),                   # rows of no element
]
IDS = ["strips", "strips-step2", "strips-middle", "rows", "many-rows", "rows-step2", "middle", "expanded",
       "expanded-rows", "empty-rows"]


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("make, dim", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_cpu_reduce_indexes_no_array_out_of_bounds(make, dim, dtype):
    launch.kernel("cpu", "reduce").check_implemented()
    kernel = bounds_checked("reduce")
    t = make().to(dtype)
    for name, op in (("sum", SUM), ("amax", MAX)):
        if name == "amax" and t.shape[dim] == 0:
            continue  # torch refuses a max over nothing
        expected = getattr(torch, name)(t, dim, keepdim=True)
        out = blank_like_contiguous(expected.shape, t.dtype)
        o_storage, o_shape, o_strides, o_offset = kernel_args(out)
        a_storage, a_shape, a_strides, a_offset = kernel_args(t)
        kind = a_storage.dtype
        identity = kind.type(0) if op == SUM else (kind.type(-np.inf) if kind.kind == "f" else kind.type(np.iinfo(kind).min))
        try:
            kernel(op, identity, o_storage, o_shape, o_strides, o_offset, a_storage, a_shape, a_strides, a_offset, dim)
        except IndexError as err:
            raise AssertionError(
                f"{name} over dim {dim} of shape {tuple(t.shape)} (strides {t.stride()}): the kernel indexed an "
                f"array out of its bounds ({err}); every index into out, a, the headers and the kernel's own "
                "buffers (index, accumulators) must stay below the array's length") from None
        assert_values(out, expected)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("make, dim", [
    (lambda: _signed_zeros((6, 18), 0, 51)[:, ::2], 0),   # outputs side by side, 2 elements apart
    (lambda: _signed_zeros((9, 12), 1, 52)[:, ::2], 1),   # rows whose elements are 2 apart
], ids=["strip-step2", "rows-step2"])
def test_cpu_amax_at_a_step_keeps_the_first_of_equal_values(make, dim):
    """0.0 and -0.0 are equal and torch.amax keeps the first: combine(op, acc, x) on the walks at a step too."""
    launch.kernel("cpu", "reduce").check_implemented()
    t = make()
    expected = torch.amax(t, dim, keepdim=True)
    out = blank_like_contiguous(expected.shape, t.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, a_shape, a_strides, a_offset = kernel_args(t)
    launch.kernel("cpu", "reduce")(MAX, np.float64(-np.inf), o_storage, o_shape, o_strides, o_offset,
                                   a_storage, a_shape, a_strides, a_offset, dim)
    assert torch.equal(torch.signbit(out), torch.signbit(expected)), (
        f"amax over dim {dim} of {tuple(t.shape)} (strides {t.stride()}), rows of 0.0 and -0.0: signs "
        f"{torch.signbit(out).int().flatten().tolist()} (1: -0.0), torch's "
        f"{torch.signbit(expected).int().flatten().tolist()}: fold with combine(op, acc, x), which keeps the first "
        "of equal values")
