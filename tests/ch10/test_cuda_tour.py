"""minikernel.utils.cuda_tour on whatever machine runs the tests: the GPU demos run where
CUDA is available, and otherwise say they are skipped without printing any number."""
from __future__ import annotations

import inspect

import pytest
import torch

from minikernel.utils import cuda_tour

DEMOS = [cuda_tour.demo_stream_race, cuda_tour.demo_event_timing, cuda_tour.demo_caching_allocator,
         cuda_tour.demo_pinned_copies, cuda_tour.demo_cudnn_flags]


def test_build_facts_are_torchs_own():
    facts = cuda_tour.build_facts()
    assert facts["torch.version.cuda"] == torch.version.cuda
    assert facts["torch.cuda.is_available()"] == torch.cuda.is_available()
    assert facts["cudnn.benchmark (default)"] is torch.backends.cudnn.benchmark


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only path")
@pytest.mark.parametrize("demo", DEMOS, ids=lambda d: d.__name__)
def test_without_a_gpu_each_demo_is_skipped_and_shows_its_code(demo, capsys):
    with pytest.raises(cuda_tour.NoCuda, match="no CUDA device"):
        demo()
    assert cuda_tour.run_or_show(demo) is None
    out = capsys.readouterr().out
    assert "SKIPPED" in out and inspect.getsource(demo) in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_fixes_remove_the_race():
    result = cuda_tour.demo_stream_race(n=1 << 16)
    for key, value in result.items():
        if "none" not in key:
            assert value.startswith(f"{1 << 16} "), (key, value)


def test_reset_max_memory_allocated_warns_that_it_forwards():
    message, outcome = cuda_tour.reset_max_memory_allocated_forwarding()
    assert "reset_peak_memory_stats" in message
    assert outcome


def test_visible_devices_is_read_at_initialization():
    seen, after = cuda_tour.visible_devices_in_subprocess("")
    assert seen == 0 and after == 0
