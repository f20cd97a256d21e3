"""Exercise 2.4 edge cases: every dimension of every ordering of small 3-d and 4-d tensors, and sizes that
split the outputs among several tasks or strips.

A reduction kernel may walk the input in more than one way (along the reduced dimension,
or a strip of outputs side by side along another one); whichever it picks, each output is
the fold of its whole row. The layouts here put the reduced dimension, and the kept ones,
at every place in memory: innermost, outermost, between two others of size > 1, next to
size-1 and empty dimensions, with gaps (a step of 2), expanded (stride 0), and with more outputs than one task
takes; and nothing is written past the output's last element. Integer values (as float64 and int64) make every sum exact, so any walk must match
torch exactly.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from minikernel.kernels import launch
from minikernel.kernels.scalar_ops import MAX, SUM
from minikernel.kernels.sizes import CPU_CHUNK, CPU_REDUCE_STRIP
from tests.ch02.strategies import assert_values, blank_like_contiguous, kernel_args
from tests.ch02.test_cpu_kernels import _random

SMALL = [(2, 3, 5), (4, 1, 3), (3, 0, 2), (1, 6, 1), (2, 2, 3, 2)]


GUARD = 16  # elements of the output's storage after its last one: a kernel must leave them alone


def _identity(op: int, dtype: np.dtype):
    """The fold's start, of the input's dtype: 0 for SUM, -inf (float) or the smallest integer for MAX."""
    if op == SUM:
        return dtype.type(0)
    return dtype.type(-np.inf) if dtype.kind == "f" else dtype.type(np.iinfo(dtype).min)


def _reduce(t: torch.Tensor, dim: int, name: str, out_layout: str = "contiguous") -> None:
    expected = getattr(torch, name)(t, dim, keepdim=True)
    numel = expected.numel()
    if out_layout == "reversed":  # an output whose dims lie in memory in the opposite order
        out = blank_like_contiguous(expected.shape[::-1], t.dtype).permute(*reversed(range(t.ndim)))
    else:  # contiguous, followed in its storage by GUARD elements nothing may write
        out = blank_like_contiguous((numel + GUARD,), t.dtype)[:numel].view(expected.shape)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, a_shape, a_strides, a_offset = kernel_args(t)
    op = SUM if name == "sum" else MAX
    launch.kernel("cpu", "reduce")(op, _identity(op, a_storage.dtype), o_storage, o_shape, o_strides, o_offset,
                                   a_storage, a_shape, a_strides, a_offset, dim)
    assert_values(out, expected)
    if out_layout != "reversed":
        after = torch.as_strided(out, (GUARD,), (1,), out.storage_offset() + numel)
        untouched = torch.isnan(after) if t.dtype.is_floating_point else after == -999
        assert bool(untouched.all()), (
            f"the kernel wrote past the output's {numel} elements (into the storage after them): {after.tolist()}")


def _layouts(shape):
    """Every ordering of ``shape``'s dims in memory, and each with a step of 2 along its innermost dim."""
    for perm in itertools.permutations(range(len(shape))):
        stored = [shape[p] for p in perm]
        base = _random(stored, torch.int64, 21).double()
        inverse = [perm.index(d) for d in range(len(shape))]
        yield f"perm{perm}", base.permute(*inverse)
        wide = _random(stored[:-1] + [2 * stored[-1]], torch.int64, 22).double()[..., ::2]
        yield f"perm{perm}-step2", wide.permute(*inverse)
    for d, size in enumerate(shape):  # one dim expanded from size 1: stride 0
        if size > 1:
            yield f"expanded{d}", _random(shape, torch.int64, 23 + d).double().narrow(d, 0, 1).expand(shape)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape", SMALL, ids=str)
def test_cpu_reduce_every_dim_of_every_layout(shape):
    for label, t in _layouts(shape):
        assert tuple(t.shape) == shape
        for dim in range(len(shape)):
            for name in ("sum", "amax"):
                if name == "amax" and t.shape[dim] == 0:
                    continue  # torch refuses a max over nothing
                for out_layout in ("contiguous", "reversed"):
                    try:
                        _reduce(t, dim, name, out_layout)
                    except AssertionError as err:
                        raise AssertionError(f"{name} over dim {dim} of shape {shape} laid out {label} "
                                             f"(strides {t.stride()}), output {out_layout}: {err}") from None


def _packed_reduced_dim_with_two_kept(k: int) -> torch.Tensor:
    """(2, k, 5) with dim 1 innermost in memory: the reduced dim packed, two kept dims of size > 1."""
    return _random((2, 5, k), torch.int64, 23).double().permute(0, 2, 1)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("make, dim", [
    (lambda: _random((3 * CPU_CHUNK // 2 + 1, 2), torch.int64, 24).double(), 1),   # many outputs, short rows
    (lambda: _random((2, 3 * CPU_CHUNK // 2 + 1), torch.int64, 25).double().t(), 1),  # the same, transposed
    (lambda: _packed_reduced_dim_with_two_kept(7), 1),
    (lambda: _packed_reduced_dim_with_two_kept(0), 1),                              # an empty packed dim
    (lambda: _random((3 * CPU_CHUNK // 2 + 1, 1), torch.int64, 30).double().expand(-1, 3), 1),  # stride-0 rows
    (lambda: _random((3, 0), torch.int64, 26).double(), 1),                         # empty, innermost
    (lambda: _random((0, 3), torch.int64, 27).double().t(), 1),                     # empty, transposed
    (lambda: _random((3, 2 * CPU_REDUCE_STRIP + 3, 2), torch.int64, 28).double(), 2),  # strips of outputs
    (lambda: _random((2, 2 * CPU_REDUCE_STRIP + 3, 3), torch.int64, 29).double().transpose(1, 2), 1),
    (lambda: _random((90, 7), torch.int64, 36).double(), 1),  # 90 short rows: groups of rows and a remainder
], ids=["many-short-rows", "many-short-rows-T", "expanded-rows", "packed-reduced-3d", "packed-empty-3d", "empty-inner",
        "empty-T", "strips-last", "strips-middle", "rows-not-by-four"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_cpu_reduce_tasks_and_strips(make, dim, dtype):
    t = make().to(dtype)
    for name in ("sum", "amax"):
        if name == "amax" and t.shape[dim] == 0:
            continue
        _reduce(t, dim, name)


def _signed_zeros(shape, dim: int, seed: int) -> torch.Tensor:
    """0.0 and -0.0 only: along ``dim``, each row's first element has one sign (at random) and the rest the other."""
    g = torch.Generator().manual_seed(seed)
    kept = list(shape)
    kept[dim] = 1
    first = torch.randint(0, 2, kept, generator=g).bool()
    position = torch.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))])
    negative = torch.where(position == 0, first, ~first)
    return torch.where(negative, torch.tensor(-0.0, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64))


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("make, dim", [
    (lambda: _signed_zeros((9, 6), 1, 31), 1),         # along contiguous rows, several outputs
    (lambda: _signed_zeros((6, 9), 0, 32), 0),         # outputs side by side
    (lambda: _signed_zeros((6, 9), 1, 33).t(), 0),     # transposed
    (lambda: _signed_zeros((2, 5, 4), 1, 34), 1),      # a middle dim
    (lambda: _signed_zeros((96, 6), 1, 35), 1),        # many contiguous rows: walked several at a time
], ids=["rows", "cols", "T", "middle", "many-rows"])
def test_cpu_amax_keeps_the_first_of_equal_values(make, dim):
    """0.0 and -0.0 are equal, and torch.amax keeps the first it meets: combine(op, acc, x), not combine(op, x, acc)."""
    t = make()
    expected = torch.amax(t, dim, keepdim=True)
    out = blank_like_contiguous(expected.shape, t.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, a_shape, a_strides, a_offset = kernel_args(t)
    launch.kernel("cpu", "reduce")(MAX, _identity(MAX, a_storage.dtype), o_storage, o_shape, o_strides, o_offset,
                                   a_storage, a_shape, a_strides, a_offset, dim)
    assert torch.equal(torch.signbit(out), torch.signbit(expected)), (
        f"amax over dim {dim} of rows of 0.0 and -0.0: signs {torch.signbit(out).int().flatten().tolist()} (1: -0.0), "
        f"torch's {torch.signbit(expected).int().flatten().tolist()}: fold with combine(op, acc, x), which keeps "
        "the first of equal values")
