"""minikernel.device's choice between a real GPU and numba's CUDA simulator.

The simulator must never be switched on where a CUDA driver reports a GPU (a hosted
notebook with a GPU runs the kernels natively); without one it is switched on, unless
numba was imported first. The detection (``cuda_device_count``, ``_has_numba_cuda``)
is replaced here, so every case runs on any machine; tests/test_device.py tests the
detection itself.
"""
from __future__ import annotations

import sys

import pytest

from minikernel import device as dev

SIM = dev._SIM_VAR


@pytest.fixture
def machine(monkeypatch):
    """A machine with ``gpus`` devices, numba.cuda importable or not, numba imported or not."""
    def make(gpus: int, numba_cuda: bool = True, numba_imported: bool = False, sim: str | None = None):
        monkeypatch.setattr(dev, "cuda_device_count", lambda: gpus)
        monkeypatch.setattr(dev, "_has_numba_cuda", lambda: numba_cuda)
        if numba_imported:
            monkeypatch.setitem(sys.modules, "numba", sys.modules.get("numba", object()))
        else:
            monkeypatch.delitem(sys.modules, "numba", raising=False)
        if sim is None:
            monkeypatch.delenv(SIM, raising=False)
        else:
            monkeypatch.setenv(SIM, sim)
    return make


@pytest.mark.parametrize("numba_imported", [False, True])
def test_a_gpu_runs_natively_and_the_simulator_stays_off(machine, numba_imported):
    machine(gpus=1, numba_imported=numba_imported)
    backend, why = dev._choose_backend()
    assert backend == "gpu" and "1 device" in why
    assert SIM not in dev.os.environ


def test_without_a_gpu_the_simulator_is_switched_on_for_this_process_and_its_children(machine):
    machine(gpus=0)
    assert dev._choose_backend()[0] == "simulator"
    assert dev.os.environ[SIM] == "1"


def test_without_a_gpu_after_numba_was_imported_it_is_unavailable_and_says_why(machine):
    machine(gpus=0, numba_imported=True)
    backend, why = dev._choose_backend()
    assert backend == "unavailable" and "import minikernel first" in why
    assert SIM not in dev.os.environ


@pytest.mark.parametrize(("gpus", "sim", "expected"), [(1, "1", "simulator"), (0, "1", "simulator"),
                                                        (1, "0", "gpu"), (0, "0", "gpu")])
def test_an_explicit_setting_is_honoured_as_given(machine, gpus, sim, expected):
    machine(gpus=gpus, sim=sim)
    backend, why = dev._choose_backend()
    assert backend == expected and f"{SIM}={sim} was set" in why
    assert dev.os.environ[SIM] == sim


def test_without_numba_cuda_it_is_unavailable_even_with_a_gpu(machine):
    machine(gpus=1, numba_cuda=False)
    backend, why = dev._choose_backend()
    assert backend == "unavailable" and "numba-cuda publishes no build" in why
    assert SIM not in dev.os.environ
