"""The smallest programs that show divergences ``make fuzz`` found, each run through torch and
minikernel by the fuzzer's own engine (``programs.run_program``: values, shapes, ``_version``,
``grad_fn`` names and gradients compared after every step):

* ``fill_``/``zero_`` into an expanded view of a tensor that requires grad: torch checks no
  overlap for a fill, so the write goes through and the view's history is rebased;
* ``zero_`` on a ``matmul`` result that torch returns as a view (its composite ends with a
  transpose): torch's ``grad_fn`` becomes ``AsStridedBackward0`` (docs/conformance.md).
"""
from __future__ import annotations

import pytest

from tests.conformance.programs import run_program

PROGRAMS = {
    "fill_ into an expanded view": [
        ("leaves", [(3,), (2, 3)], [True, True], 5325),
        ("op", "add", [1, 0], False),
        ("op", "permute", [2], False),
        ("op", "expand", [3], False),
        ("inplace", "fill_", [4], False),
        ("op", "relu", [4], False),
        ("backward", False, False),
    ],
    "zero_ into an expanded view of a leaf's clone": [
        ("leaves", [(2, 1)], [True], 7),
        ("op", "clone", [0], False),
        ("op", "expand", [1], False),
        ("inplace", "zero_", [2], False),
        ("op", "square", [1], False),
        ("backward", False, False),
    ],
    "zero_ on a batched matmul result": [
        ("leaves", [(2, 3), (3,)], [True, True], 11),
        ("op", "unsqueeze", [1], False),
        ("op", "none_index", [2], False),
        ("op", "expand", [3], False),
        ("op", "matmul", [0, 4], False),
        ("inplace", "zero_", [5], False),
        ("op", "select0", [5], False),
        ("backward", False, False),
    ],
}


@pytest.mark.exercise("3.9")  # every program ends in backward (student mode: TODO)
@pytest.mark.parametrize("case", sorted(PROGRAMS))
def test_minimal_program_matches_torch(case):
    run_program(PROGRAMS[case])
