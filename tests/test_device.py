"""minikernel.device: how it finds a GPU without initializing CUDA in this process.

A process that has called ``cuInit`` cannot use CUDA in a child it forks, and the
grader forks one child per exercise: on a GPU machine the GPU exercises failed with
"CudaSupportError" until the count came from NVML. These tests stand in fake driver
libraries for the real ones, so they run on any machine."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from minikernel import device as dev


class FakeNVML:
    def __init__(self, count: int, init_status: int = 0):
        self.count, self.init_status, self.calls = count, init_status, []

    def nvmlInit_v2(self):
        self.calls.append("init")
        return self.init_status

    def nvmlDeviceGetCount_v2(self, out):
        self.calls.append("count")
        ctypes.cast(out, ctypes.POINTER(ctypes.c_uint))[0] = self.count
        return 0

    def nvmlShutdown(self):
        self.calls.append("shutdown")
        return 0


def _libraries(monkeypatch, nvml=None, cuda=None):
    """Make dev._load find ``nvml`` for NVML's names and ``cuda`` for the CUDA driver's."""
    def load(names):
        return nvml if names == dev._NVML else cuda if names == dev._CUDA_DRIVERS else None
    monkeypatch.setattr(dev, "_load", load)


def test_nvml_answers_and_cuda_is_never_touched(monkeypatch):
    nvml = FakeNVML(2)
    _libraries(monkeypatch, nvml=nvml, cuda=object())  # a cuda library that is never called
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("asked CUDA although NVML answered"))
    assert dev.cuda_device_count() == 2
    assert nvml.calls == ["init", "count", "shutdown"]


def test_nvml_that_fails_to_start_means_no_gpu(monkeypatch):
    _libraries(monkeypatch, nvml=FakeNVML(2, init_status=9))  # NVML_ERROR_DRIVER_NOT_LOADED
    assert dev.cuda_device_count() == 0


@pytest.mark.parametrize("visible, expected", [(None, 4), ("", 0), ("-1", 0), ("0", 1), ("2,3", 2),
                                               ("0,1,2,3,4,5", 4), ("1,-1,2", 1), (" 1 , 0 ", 2)])
def test_cuda_visible_devices_is_honoured(monkeypatch, visible, expected):
    # CUDA's rule: the listed devices, up to the first invalid entry ("-1" hides all).
    _libraries(monkeypatch, nvml=FakeNVML(4))
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert dev.cuda_device_count() == expected


def test_without_nvml_a_child_process_asks_cuda(monkeypatch):
    _libraries(monkeypatch, nvml=None, cuda=object())
    asked = []

    def run(argv, **kwargs):
        asked.append(argv)
        assert argv[0] == sys.executable and argv[1] == "-c"
        return subprocess.CompletedProcess(argv, 0, stdout="3\n", stderr="")
    monkeypatch.setattr(subprocess, "run", run)
    assert dev.cuda_device_count() == 3
    assert len(asked) == 1


def test_without_any_driver_there_is_no_gpu(monkeypatch):
    _libraries(monkeypatch)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("no driver: nothing to ask"))
    assert dev.cuda_device_count() == 0


def test_the_child_script_reports_zero_without_a_driver():
    # The script itself, run for real with library names that exist nowhere.
    out = subprocess.run([sys.executable, "-c", dev._ASK_CUDA, "libno-such-cuda.so"], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert out.returncode == 0 and out.stdout.strip() == "0", out.stderr
