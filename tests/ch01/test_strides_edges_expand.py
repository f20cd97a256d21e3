"""Chapter 01 edge cases of expand (1.6): new leading dimensions of size 1 or 0, and 0-d inputs.

A new leading dimension takes the stride it would have in a contiguous layout (the size
times the stride of the dimension after it); the last dimension of an expanded 0-d
tensor has no dimension after it, and its stride is 0 like every other one. Random
new shapes (test_strides.py) seldom end a 0-d tensor's expansion in a 1.
"""
from __future__ import annotations

import itertools

import pytest

from minikernel import strides as S
from tests.ch01.test_strides import _raises
from tests.helpers import as_strided

HEADERS = [((), (), 0), ((1,), (5,), 1), ((3,), (2,), 0), ((2, 1), (1, 7), 0), ((1, 3), (0, 1), 2), ((0,), (1,), 0)]


def _new_shapes(shape):
    tails = [[n, -1] + ([1, 2, 3] if n == 1 else [n + 1]) for n in shape]
    for lead_count in range(3):
        for lead in itertools.product([1, 0, 2, -1], repeat=lead_count):
            for tail in itertools.product(*tails):
                yield tuple(lead) + tuple(tail)


@pytest.mark.exercise("1.6")
@pytest.mark.parametrize("header", HEADERS, ids=str)
def test_expand_strides_new_leading_dims_and_0d(header):
    shape, strides, offset = header
    t = as_strided(shape, strides, offset)
    for new_shape in _new_shapes(shape):
        if not shape and -1 in new_shape:
            continue  # torch lets a 0-d tensor "expand" to size -1 (a negative size)
        expected, torch_error = _raises(lambda s=new_shape: t.expand(s).stride())
        got, error = _raises(S.expand_strides, shape, strides, new_shape)
        if torch_error is not None:
            assert isinstance(error, RuntimeError), (
                f"torch refuses expand{new_shape} of shape {shape} strides {strides}; you returned {got!r}")
        else:
            assert error is None, f"torch allows expand{new_shape} of shape {shape}; you raised {error!r}"
            assert tuple(got) == expected, (
                f"expand{new_shape} of shape {shape} strides {strides}: torch's strides {expected}, yours {tuple(got)}")
