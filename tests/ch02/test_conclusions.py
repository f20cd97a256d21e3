"""Chapter 02's printed conclusions, recomputed: which ops show the vectorized builds'
speed-up (``sigmoid`` does, ``exp`` — handed to MKL — does not), and a matmul's
operations per element read and written (counted by torch's FlopCounterMode)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

TIMER = ("import torch, time; torch.set_num_threads(1); x = torch.randn(1 << 22); r = []\n"
         "for op in (torch.exp, torch.sigmoid):\n"
         " op(x); t = []\n"
         " for _ in range(9):\n  s = time.perf_counter(); op(x); t.append(time.perf_counter() - s)\n"
         " r.append(sorted(t)[4])\n"
         "print(torch.backends.cpu.get_cpu_capability(), *r)")


def _times(capability: str) -> tuple[str, float, float]:
    out = subprocess.run([sys.executable, "-c", TIMER], env={**os.environ, "ATEN_CPU_CAPABILITY": capability},
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], float(out[1]), float(out[2])


def test_sigmoid_shows_the_vector_build_and_exp_does_not():
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("this CPU has no AVX2: there is no vector build to compare")
    default, vector = _times("default"), _times("avx2")
    assert (default[0], vector[0]) == ("DEFAULT", "AVX2")
    assert default[2] > 1.8 * vector[2], f"sigmoid: {default[2]:.4f} s plain vs {vector[2]:.4f} s AVX2"
    if torch.backends.mkl.is_available():
        assert 0.6 < default[1] / vector[1] < 1.6, f"exp: {default[1]:.4f} s plain vs {vector[1]:.4f} s AVX2"


@pytest.mark.parametrize("n", [64, 128])
def test_a_square_matmul_does_n_operations_per_element_read_and_2n_per_element_written(n):
    a, b = torch.randn(n, n), torch.randn(n, n)
    with FlopCounterMode(display=False) as counter:
        torch.mm(a, b)
    flops = counter.get_total_flops()
    assert flops / (a.numel() + b.numel()) == n
    assert flops / (n * n) == 2 * n
