"""The random-program fuzzer's budget in ``make test``: 2,000 programs (``programs.py``), each
run through torch and minikernel and compared after every step. ``make fuzz ARGS="--minutes 30"``
runs more of them (``fuzz.py``) and writes any divergence into ``found/`` as a test."""
from __future__ import annotations

import pytest
import torch

from tests.conformance import programs as P
from tests.conformance.programs import Divergence, draw_program, run_program

PROGRAMS, CHUNKS = 2000, 8


@pytest.mark.exercise("3.9")  # every program ends in backward or autograd.grad (student mode: TODO)
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_programs_match_torch(chunk):
    size = PROGRAMS // CHUNKS
    for seed in range(chunk * size, (chunk + 1) * size):
        program = draw_program(seed)
        try:
            run_program(program)
        except Divergence as err:
            listing = "\n".join(f"    {step!r}," for step in program)
            raise AssertionError(f"program {seed} diverges from torch: {err}\n  [\n{listing}\n  ]") from None


def test_a_divergence_is_reported(monkeypatch):
    """The comparison can fail: a program whose minikernel side computes something else diverges."""
    exp = lambda L, a: a.exp() if L is torch else a.exp() * 1.001  # noqa: E731
    monkeypatch.setitem(P.OPS, "exp", (1, exp))
    program = [("leaves", [(2, 3)], [True], 0), ("op", "exp", [0], False), ("backward", False, False)]
    with pytest.raises(Divergence, match="values"):
        run_program(program)


def test_an_error_on_one_side_only_is_reported(monkeypatch):
    def relu(L, a):
        if L is not torch:
            raise RuntimeError("only on one side")
        return a.relu()
    monkeypatch.setitem(P.OPS, "relu", (1, relu))
    program = [("leaves", [(3,)], [True], 0), ("op", "relu", [0], False), ("backward", False, False)]
    with pytest.raises(Divergence, match="torch raised None"):
        run_program(program)
