"""Chapter 03 edge cases of matmul's backward (3.5): empty operands, 1-D ones among them.

Random shapes (test_derivatives.py) have sizes of at least 1. With a size 0 anywhere the
gradients are empty or zeros; putting a 1-D operand's removed dimension back with
``reshape(..., -1, ...)`` instead of the 1 it is fails there: a -1 beside a 0 is
ambiguous, so reshape refuses it.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.autograd import derivatives as D
from tests.ch03.test_derivatives import _check, _mk, _torch_grads

EMPTY_PAIRS = [
    ((0,), (0,)), ((0,), (0, 3)), ((3, 0), (0,)), ((2, 0), (0, 3)),
    ((0, 2), (2,)), ((2,), (2, 0)), ((0, 2), (2, 3)), ((2, 3), (3, 0)),
    ((0, 2, 3), (3, 4)), ((2, 2, 0), (0, 4)), ((2, 0, 3), (1, 3, 2)),
    ((3,), (0, 3, 2)), ((0, 2, 3), (3,)), ((1, 1, 3), (0, 3, 2)), ((0, 3), (2, 3, 4)),
]


@pytest.mark.exercise("3.5")
@pytest.mark.parametrize("shapes", EMPTY_PAIRS, ids=str)
def test_matmul_backward_with_empty_operands(shapes):
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(s, generator=g, dtype=torch.float64) for s in shapes)
    grad = torch.randn(torch.matmul(a, b).shape, generator=g, dtype=torch.float64)
    expected = _torch_grads(torch.matmul, a, b, grad=grad)
    _check(D.matmul_backward(_mk(grad), _mk(a), _mk(b)), expected)
