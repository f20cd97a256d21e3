"""Exercises 10.4 and 10.5 (minikernel/ao/quantization/quantize.py): affine quantization.

Oracle: ``torch.quantize_per_tensor`` / ``torch.quantize_per_channel`` — the integer
representation (``int_repr()``) and ``dequantize()`` compared bit for bit, over
generated shapes, layouts, scales, zero points and dtypes, with values placed exactly
half-way between two levels and far outside the range. Before torch 2.13, which rounds
otherwise, the levels are the docstrings' float steps (tests/ch10/torch_quantize.py).
"""
from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, strategies as st

from minikernel.ao.quantization import quantize as Q
from tests.ch10.torch_quantize import torch_quantize_per_channel, torch_quantize_per_tensor

DTYPES = [torch.quint8, torch.qint8, torch.qint32]

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*deprecated")


def _refusal(fn, *args) -> str | None:
    """The RuntimeError's message when ``fn(*args)`` refuses, else None.

    A stub's NotImplementedError is a RuntimeError too: it goes through, so an
    unfinished exercise does not count as a refusal.
    """
    try:
        fn(*args)
    except NotImplementedError:
        raise
    except RuntimeError as err:
        return str(err)
    return None


def _values(draw, shape, scale, zero_point, seed):
    """Float32 values: random, exactly half-way between levels, and past both ends."""
    g = torch.Generator().manual_seed(seed)
    spread = draw(st.sampled_from([0.1, 1.0, 30.0, 300.0]))
    x = torch.randn(shape, generator=g) * spread * scale * 10
    flat = x.view(-1)
    if flat.numel():
        k = torch.randint(-300, 300, (flat.numel(),), generator=g).float()
        halves = (k + 0.5 - zero_point) * scale  # q lands on .5 before rounding (up to float error)
        pick = torch.rand(flat.numel(), generator=g) < 0.3
        flat[pick] = halves[pick].float()
    return x


@st.composite
def per_tensor_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    qmin, qmax, _ = Q.QRANGES[dtype]
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=0, max_size=3)))
    scale = draw(st.sampled_from([1.0, 0.5, 0.1, 0.0123, 3e-3, 7.77, 1 / 3]))
    zero_point = draw(st.integers(max(qmin, -300), min(qmax, 300)))
    x = _values(draw, shape, scale, zero_point, draw(st.integers(0, 2**16)))
    if draw(st.booleans()) and x.dim() >= 2:
        x = x.transpose(0, 1)  # a non-contiguous input
    return x, scale, zero_point, dtype


@pytest.mark.exercise("10.4")
@given(per_tensor_cases())
def test_quantize_per_tensor_is_torchs_bit_for_bit(case):
    x, scale, zero_point, dtype = case
    theirs = torch_quantize_per_tensor(x, scale, zero_point, dtype)
    ours = Q.quantize_per_tensor(x, scale, zero_point, dtype)
    expected = theirs.int_repr()
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    assert torch.equal(ours, expected), f"first difference at {(ours != expected).nonzero()[:1].tolist()}"
    deq = Q.dequantize_per_tensor(ours, scale, zero_point)
    assert deq.dtype == torch.float32 and torch.equal(deq, theirs.dequantize())


@pytest.mark.exercise("10.4")
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_half_to_even_and_saturation(dtype):
    qmin, qmax, _ = Q.QRANGES[dtype]
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e9, -1e9, 1e12, -1e12, 0.0, 3.49999])
    for zero_point in (0, 3, -7):
        if not qmin <= zero_point <= qmax:
            continue
        ours = Q.quantize_per_tensor(x, 1.0, zero_point, dtype)
        assert torch.equal(ours, torch_quantize_per_tensor(x, 1.0, zero_point, dtype).int_repr()), zero_point


@pytest.mark.exercise("10.4")
@pytest.mark.parametrize("bad", [
    (torch.randn(3, dtype=torch.float64), 0.1, 0, torch.qint8),
    (torch.randint(0, 5, (3,)), 0.1, 0, torch.qint8),
    (torch.randn(3), 0.1, 300, torch.quint8),
])
def test_quantize_per_tensor_refuses_what_torch_refuses(bad):
    assert _refusal(torch.quantize_per_tensor, *bad) is not None
    assert _refusal(Q.quantize_per_tensor, *bad) is not None, "refuse it with a RuntimeError, as torch does"


@st.composite
def per_channel_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    qmin, qmax, _ = Q.QRANGES[dtype]
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=1, max_size=4)))
    axis = draw(st.integers(0, len(shape) - 1))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    n = shape[axis]
    scales = torch.rand(n, generator=g, dtype=torch.float64) * draw(st.sampled_from([1.0, 0.05, 10.0])) + 1e-3
    if draw(st.booleans()):
        scales = scales.float()
    zero_points = torch.randint(max(qmin, -100), min(qmax, 100) + 1, (n,), generator=g)
    x = torch.randn(shape, generator=g) * draw(st.sampled_from([0.1, 1.0, 50.0]))
    # Some values exactly half-way between two levels of their channel.
    view = x.movedim(axis, -1)
    halves = ((torch.randint(-50, 50, view.shape, generator=g) + 0.5 - zero_points) * scales).float()
    pick = torch.rand(view.shape, generator=g) < 0.3
    view[pick] = halves[pick]
    return x, scales, zero_points, axis, dtype


@pytest.mark.exercise("10.5")
@given(per_channel_cases())
def test_quantize_per_channel_is_torchs_bit_for_bit(case):
    x, scales, zero_points, axis, dtype = case
    theirs = torch_quantize_per_channel(x, scales, zero_points, axis, dtype)
    ours = Q.quantize_per_channel(x, scales, zero_points, axis, dtype)
    expected = theirs.int_repr()
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    assert torch.equal(ours, expected), f"first difference at {(ours != expected).nonzero()[:1].tolist()}"
    deq = Q.dequantize_per_channel(ours, scales, zero_points, axis)
    assert deq.dtype == torch.float32 and torch.equal(deq, theirs.dequantize())


@pytest.mark.exercise("10.5")
def test_each_channel_gets_its_own_scale():
    w = torch.tensor([[0.01, -0.02, 0.03], [10.0, -20.0, 30.0]])
    scales = torch.tensor([0.03 / 127, 30.0 / 127], dtype=torch.float64)
    zero_points = torch.zeros(2, dtype=torch.int64)
    ours = Q.quantize_per_channel(w, scales, zero_points, 0, torch.qint8)
    assert torch.equal(ours, torch_quantize_per_channel(w, scales, zero_points, 0, torch.qint8).int_repr())
    assert ours[0].abs().max() == 127 and ours[1].abs().max() == 127, "both rows use the full range"


@pytest.mark.exercise("10.5")
@pytest.mark.parametrize("axis, n", [(2, 3), (-1, 3), (1, 4)])
def test_quantize_per_channel_refuses_what_torch_refuses(axis, n):
    x = torch.randn(2, 3)
    args = (x, torch.rand(n, dtype=torch.float64) + 0.1, torch.zeros(n, dtype=torch.int64), axis, torch.qint8)
    assert _refusal(torch.quantize_per_channel, *args) is not None
    assert _refusal(Q.quantize_per_channel, *args) is not None, "refuse it with a RuntimeError, as torch does"
