"""Exercise 2.1 edge cases: shapes with more elements than a float64 counts exactly.

Dividing the ordinal with ``/`` gives the right digits for small shapes (the float is
truncated when stored into the int64 buffer), but past 2**53 elements a float64 rounds
the ordinal, and the index is off. Tensors that large exist without memory (torch's
"meta" device, an expanded view), so the index arithmetic stays in integers: ``//``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from minikernel.kernels import cpu, index

S = 3 * 10**15 + 7  # a size whose multiples float64 cannot all count
CASES = [((7, S), 4 * S - 1), ((7, S), 6 * S + 12345), ((5, 3, S), 2 * 3 * S + S - 1), ((S, 9), 9 * S - 10),
         ((2, 2, 2, S), 7 * S + 1)]


def _exact(ordinal: int, shape) -> list[int]:
    out = []
    for size in reversed(shape):
        ordinal, rest = divmod(ordinal, size)
        out.append(rest)
    return out[::-1]


@pytest.mark.exercise("2.1")
@pytest.mark.parametrize("compiled", [False, True], ids=["python", "numba"])
@pytest.mark.parametrize("shape, ordinal", CASES, ids=str)
def test_to_index_into_past_2_to_the_53_elements(shape, ordinal, compiled):
    expected = _exact(ordinal, shape)
    assert expected == [int(i) for i in torch.unravel_index(torch.tensor(ordinal), shape)]
    buffer = np.zeros(len(shape), dtype=np.int64)
    (cpu if compiled else index).to_index_into(ordinal, np.array(shape, np.int64), buffer)
    assert buffer.tolist() == expected, (
        f"to_index_into({ordinal}, {shape}) gave {buffer.tolist()}, torch.unravel_index gives {expected}: keep the "
        "ordinal an integer (//), a float64 cannot tell apart ordinals this large")
