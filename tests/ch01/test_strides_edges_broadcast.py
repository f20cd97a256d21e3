"""Chapter 01 edge cases of broadcasting (1.4): what the error names, and indices that are positions.

test_strides.py reads ``x[broadcast_index(...)]`` through torch, which accepts negative
indices: an index of -1 in a size-1 dimension reads the same element there, but the
kernels of chapter 02 turn the index into a storage position with the strides, where
-1 is one stride *before* the tensor.
"""
from __future__ import annotations

import math
import re

import pytest
import torch
from hypothesis import given, strategies as st

from minikernel import strides as S
from tests.helpers import shapes


@pytest.mark.exercise("1.4")
@given(shapes(max_side=3), st.data())
def test_broadcast_index_is_in_range_and_gives_the_position(big_shape, data):
    keep = data.draw(st.integers(0, len(big_shape)))
    shape = tuple(data.draw(st.sampled_from([n, 1])) for n in big_shape[len(big_shape) - keep:])
    if math.prod(big_shape) == 0:
        return
    big_index = tuple(data.draw(st.integers(0, n - 1)) for n in big_shape)
    # a non-contiguous x (every value its own storage position) read through its strides
    storage = torch.arange(2 * max(math.prod(shape), 1) + 3)
    x = storage.as_strided(shape, tuple(2 * s for s in torch.empty(shape).stride()), 3)
    small_index = tuple(S.broadcast_index(big_index, big_shape, shape))
    assert len(small_index) == len(shape)
    for d, (i, n) in enumerate(zip(small_index, shape)):
        assert 0 <= i < n, (
            f"broadcast_index({big_index}, {big_shape}, {shape}) gave {i} at dimension {d} of size {n}: "
            f"an index is 0 <= i < size (the kernels multiply it by a stride; a negative one reads before the tensor)")
    position = 3 + sum(i * s for i, s in zip(small_index, x.stride()))
    expected = torch.broadcast_to(x, big_shape)[big_index].item()
    assert position == expected, (
        f"index {small_index} is storage position {position} with strides {x.stride()}, "
        f"but broadcasting reads position {expected}")


# (a, b, the names the clashing dimension may have: counted from the right, from the left
# of the longer shape, or in the shorter shape's own numbering)
CLASHES = [
    ((3, 4, 5, 9), (6, 9), {-2, 2, 0}),
    ((7, 8), (9, 5, 3, 8), {-2, 2, 0}),
    ((4, 5), (3, 5), {-2, 0}),
    ((5,), (8, 7, 3), {-1, 2, 0}),
]


@pytest.mark.exercise("1.4")
@pytest.mark.parametrize("a, b, names", CLASHES, ids=str)
def test_broadcast_error_names_the_dimension(a, b, names):
    with pytest.raises(RuntimeError) as info:
        torch.broadcast_shapes(a, b)
    try:
        got = S.broadcast_shape(a, b)
    except NotImplementedError:  # the stub (a subclass of RuntimeError): the exercise is not written
        raise
    except RuntimeError as err:
        message = str(err)
    else:
        pytest.fail(f"torch refuses to broadcast {a} and {b} ({info.value}); you returned {got!r}")
    numbers = {int(n) for n in re.findall(r"-?\d+", message)}
    assert numbers & names, (
        f"name the dimension where {a} and {b} clash: {' or '.join(map(str, sorted(names)))} "
        f"(counted from the right, or from the left); your message: {message!r}")
