"""Chapter 02's printed conclusions, recomputed: that the vectorized build is chosen per process
(the speed-up itself is a timing, shown by the chapter, never asserted), and a matmul's
operations per element read and written (counted by torch's FlopCounterMode)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

PROBE = "import torch; print(torch.backends.cpu.get_cpu_capability())"


def _capability(forced: str) -> str:
    return subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, "ATEN_CPU_CAPABILITY": forced},
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_vector_build_is_chosen_per_process_as_the_chapter_times_it():
    """The chapter times sigmoid and exp under ``ATEN_CPU_CAPABILITY=default`` and ``=avx2`` (a timing
    cell: its figures are shown, not compared). What a test can check without a clock: each setting
    really selects that build in a fresh process, so the two timings compare two builds."""
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("this CPU has no AVX2: there is no vector build to compare")
    assert (_capability("default"), _capability("avx2")) == ("DEFAULT", "AVX2")


@pytest.mark.parametrize("n", [64, 128])
def test_a_square_matmul_does_n_operations_per_element_read_and_2n_per_element_written(n):
    a, b = torch.randn(n, n), torch.randn(n, n)
    with FlopCounterMode(display=False) as counter:
        torch.mm(a, b)
    flops = counter.get_total_flops()
    assert flops / (a.numel() + b.numel()) == n
    assert flops / (n * n) == 2 * n
