"""Chapter 01 edge cases: a -1 beside a size 0, and results that are Python integers.

Random shapes (test_strides.py) seldom put a 0 and a -1 in one shape with elements to
spare; torch says such a shape is invalid for the input's size (the -1 cannot make a
product of 0 into 5). And ``(2.0, 3) == (2, 3)`` in Python: a size or stride computed
with ``/`` compares equal to torch's, but it is a float that ``range`` and indexing refuse.
"""
from __future__ import annotations

import operator

import pytest
import torch

from minikernel import strides as S
from tests.ch01.test_strides import _raises
from tests.helpers import as_strided

ZERO_BESIDE_MINUS_ONE = [(0, -1), (-1, 0), (2, 0, -1), (-1, 3, 0), (0,), (-1,), (3, -1), (0, 0, -1)]


@pytest.mark.exercise("1.5")
@pytest.mark.parametrize("numel", [0, 5, 6, 12])
@pytest.mark.parametrize("shape", ZERO_BESIDE_MINUS_ONE, ids=str)
def test_infer_size_with_a_zero_beside_the_minus_one(shape, numel):
    expected, torch_error = _raises(lambda: torch.empty(numel).view(shape).shape)
    got, error = _raises(S.infer_size, shape, numel)
    if torch_error is not None:
        assert type(error) is type(torch_error), f"infer_size({shape}, {numel}): torch raised {torch_error!r}, you {error!r}"
        assert str(error) == str(torch_error)
    else:
        assert error is None, f"torch accepts {shape} for {numel} elements; you raised {error!r}"
        assert tuple(got) == tuple(expected)


def _ints(values, what):
    values = tuple(values)
    for v in values:
        try:
            operator.index(v)
        except TypeError:
            pytest.fail(f"{what} gave {values}: {v!r} is a {type(v).__name__}; sizes, strides and indices "
                        f"are integers (use // where you divide)")
    return values


@pytest.mark.exercise("1.5")
@pytest.mark.parametrize("shape, numel", [((-1,), 6), ((2, -1), 6), ((-1, 4), 12), ((3, -1, 2), 12), ((-1, 1), 1),
                                          ((2, 3), 6), ((-1, 2), 0)], ids=str)
def test_infer_size_gives_integers(shape, numel):
    assert _ints(S.infer_size(shape, numel), f"infer_size({shape}, {numel})") == tuple(torch.empty(numel).view(shape).shape)


@pytest.mark.exercise("1.5")
@pytest.mark.parametrize("shape, strides, new_shape", [((2, 6), (6, 1), (3, -1)), ((4, 3), (3, 1), (-1,)),
                                                      ((2, 3, 4), (24, 4, 1), (2, -1, 2)), ((), (), (1, 1)),
                                                      ((0, 3), (3, 1), (3, 0))], ids=str)
def test_view_strides_gives_integers(shape, strides, new_shape):
    got = _ints(S.view_strides(shape, strides, new_shape), f"view_strides({shape}, {strides}, {new_shape})")
    assert got == as_strided(shape, strides, 0).view(new_shape).stride()


@pytest.mark.exercise("1.1")
@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), (), (3, 0, 2)], ids=str)
def test_contiguous_strides_gives_integers(shape):
    _ints(S.contiguous_strides(shape), f"contiguous_strides({shape})")


@pytest.mark.exercise("1.2")
def test_index_to_position_gives_an_integer():
    _ints([S.index_to_position((1, 2), (3, 1), 4)], "index_to_position((1, 2), (3, 1), 4)")


@pytest.mark.exercise("1.3")
@pytest.mark.parametrize("ordinal", [0, 7, 23])
def test_to_index_gives_integers(ordinal):
    _ints(S.to_index(ordinal, (2, 3, 4)), f"to_index({ordinal}, (2, 3, 4))")


@pytest.mark.exercise("1.4")
def test_broadcast_gives_integers():
    _ints(S.broadcast_shape((2, 1, 3), (4, 1)), "broadcast_shape((2, 1, 3), (4, 1))")
    _ints(S.broadcast_index((1, 0, 2), (2, 4, 3), (4, 1)), "broadcast_index((1, 0, 2), (2, 4, 3), (4, 1))")


@pytest.mark.exercise("1.6")
def test_permute_and_expand_give_integers():
    shape, strides = S.permute_strides((2, 3, 4), (12, 4, 1), (2, 0, 1))
    _ints(shape, "permute_strides's shape")
    _ints(strides, "permute_strides's strides")
    _ints(S.expand_strides((3, 1), (1, 1), (2, 3, 4)), "expand_strides((3, 1), (1, 1), (2, 3, 4))")
