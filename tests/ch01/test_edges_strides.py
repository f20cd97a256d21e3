"""Chapter 01 edge cases: size-1 dimensions with any stride, 0-d and empty tensors.

Random strides (test_strides.py) almost never give a layout that is contiguous except
for the stride of a size-1 dimension; torch ignores those strides when it views.
"""
from __future__ import annotations

import pytest
import torch

from minikernel import strides as S
from tests.helpers import as_strided

# (shape, strides, offset): contiguous but for size-1 dimensions' strides, 0-d, empty.
SIZE_ONE_HEADERS = [
    ((2, 1, 3), (3, 100, 1), 0),
    ((1, 4), (7, 1), 2),
    ((4, 1), (1, 5), 0),
    ((2, 1, 1, 3), (3, 9, 0, 1), 1),
    ((1,), (4,), 0),
    ((), (), 3),
    ((2, 0, 3), (3, 3, 1), 0),
]
NEW_SHAPES = [(-1,), (1, -1), (-1, 1), (3, -1), (-1, 3), (2, -1, 1), (1, 1, -1), (), (0,), (2, 3, 0)]


@pytest.mark.exercise("1.5")
@pytest.mark.parametrize("header", SIZE_ONE_HEADERS, ids=str)
def test_view_strides_ignores_strides_of_size_one_dims(header):
    shape, strides, offset = header
    t = as_strided(shape, strides, offset)
    for new_shape in NEW_SHAPES:
        try:
            expected = t.view(new_shape).stride()
        except RuntimeError:
            continue  # the element counts differ: test_view_strides covers refusals
        got = S.view_strides(shape, strides, new_shape)
        assert got is not None and tuple(got) == expected, (
            f"torch.as_strided(storage, {shape}, {strides}).view{new_shape}.stride() is {expected}; "
            f"you returned {got}")


@pytest.mark.exercise("1.6")
@pytest.mark.parametrize("header", SIZE_ONE_HEADERS, ids=str)
def test_is_contiguous_ignores_strides_of_size_one_dims(header):
    shape, strides, offset = header
    assert S.is_contiguous(shape, strides) == as_strided(shape, strides, offset).is_contiguous()


@pytest.mark.exercise("1.1")
@pytest.mark.parametrize("shape", [(), (0,), (1,), (1, 1), (3, 0, 2), (0, 4), (2, 1, 0, 5)], ids=str)
def test_contiguous_strides_of_empty_and_size_one_shapes(shape):
    assert tuple(S.contiguous_strides(shape)) == torch.empty(shape).stride()
