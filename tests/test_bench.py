"""The benchmark harness (what it measures is reported by `make bench`, never asserted)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import llvmlite.binding as llvm
import numba
import pytest
import torch

from minikernel.course.bench import cli, gpu, machine, timing as bench  # cli imports every chapter's rows
from minikernel.course import exercise as ex


def test_median_ms_measures_the_call_and_runs_sync():
    synced = []
    ms = bench.median_ms(lambda: time.sleep(0.002), warmup=1, repeat=3, sync=lambda: synced.append(1))
    assert 1.5 <= ms < 50  # a 2 ms sleep, give or take a loaded machine
    assert synced, "sync was never called"


def test_median_ms_batches_fast_calls():
    calls = []
    bench.median_ms(lambda: calls.append(1), warmup=0, repeat=3)
    assert len(calls) > 3 * 10  # sub-microsecond calls are timed many at a time


def test_min_batch_times_slow_calls_together():
    calls, synced = [], []
    bench.samples_ms(lambda: (calls.append(1), time.sleep(0.002)), warmup=0, repeat=2,
                     sync=lambda: synced.append(len(calls)), min_batch=5)
    # after the warm-up's sync: one probe call, then two batches of 5 calls, each followed by one sync
    assert synced == [0, 1, 6, 11]


def test_bench_cli_reports_every_row():
    proc = subprocess.run([sys.executable, "-m", "minikernel", "bench", "--quick", "--json"],
                          capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert [r["name"] for r in rows] == [r.name for r in bench.ROWS]
    for r in rows:
        if r["note"].startswith("skipped:"):  # only the GPU rows, and only without a GPU
            assert "cuda" in r["name"] and gpu.skip_reason() is not None, r
            assert r["torch_ms"] is None and r["minikernel_ms"] is None, r
            continue
        assert r["torch_ms"] > 0
        if r["minikernel_ms"] is None:  # only allowed while the exercise it needs is a stub
            todo = re.search(r"exercise (\d+\.\d+) not implemented", r["note"])
            assert todo and not ex.uses_reference(todo.group(1)), r
        else:
            assert r["ratio"] > 0, r
    if all(ex.uses_reference(i) for i in ex.registry()):
        timed = [r for r in rows if not r["note"].startswith("skipped:")]
        assert all(r["minikernel_ms"] is not None for r in timed), "references on: every row is timed"
    gpu_rows = [r for r in rows if " cuda " in r["name"]]
    assert {r["note"].startswith("skipped:") for r in gpu_rows} == {gpu.skip_reason() is not None}


def test_k_keeps_rows_containing_the_text_any_case_and_alternatives():
    names = [r.name for r in cli.select(bench.ROWS, "MATMUL 512|layernorm forward 4096")]
    assert names == [n for n in (r.name for r in bench.ROWS)
                     if "matmul 512" in n or "layernorm forward 4096" in n]
    assert len(names) >= 2, names  # one of each alternative at least
    assert cli.select(bench.ROWS, "") == bench.ROWS


def test_k_without_a_match_says_so_on_one_line_and_fails(capsys):
    assert cli.main(["-k", "allreduce|no such row"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("bench: no row matches -k 'allreduce|no such row'")
    assert all(r.name in lines[0] for r in bench.ROWS)


def _scripted_row(monkeypatch, rounds_of_samples):
    """A row whose calls are logged, timed by a paired_samples_ms that returns the given sample lists
    in turn: (torch's, minikernel's) for each round."""
    log, script = [], list(rounds_of_samples)

    def fake_samples(first, second, repeat, sync=None, min_batch=1):
        log.append("timed")
        return script.pop(0), script.pop(0)

    monkeypatch.setattr(bench, "paired_samples_ms", fake_samples)
    row = bench.Row("scripted", lambda: ((lambda: log.append("mine")), (lambda: log.append("theirs"))))
    return row, log


STEADY, NOISY = [2.0] * 15, [1.0] * 7 + [3.0] * 8  # interquartile range 0% and 100% of the median


def test_run_row_warms_both_sides_then_times_again_while_a_spread_is_wide(monkeypatch):
    # round 1: torch steady, minikernel noisy; round 2: both steady
    row, log = _scripted_row(monkeypatch, [STEADY, NOISY, STEADY, [4.0] * 15])
    r = bench.run_row(row, warmup=2, repeat=15)
    assert log[:log.index("timed")].count("mine") == 2 and log[:log.index("timed")].count("theirs") == 2
    assert (r.rounds, r.flagged, r.minikernel_ms, r.torch_ms, r.ratio) == (2, False, 4.0, 2.0, 2.0)
    assert r.earlier_rounds == [(3.0, bench.spread_pct(NOISY), 2.0, 0.0)]  # nothing dropped silently
    assert "timed 2 times" in bench.format_table([r]) and "!" not in bench.format_table([r])


def test_run_row_flags_a_row_still_noisy_after_the_last_round(monkeypatch):
    row, log = _scripted_row(monkeypatch, [NOISY, STEADY] * 3)
    r = bench.run_row(row, warmup=1, repeat=15, max_rounds=3)
    assert (r.rounds, r.flagged, len(r.earlier_rounds)) == (3, True, 2)
    assert log.count("timed") == 3
    table = bench.format_table([r]).splitlines()
    assert "%!" in table[1] and table[-1].startswith("!: spread still above 10%")


def test_header_names_the_cpu_its_isa_cores_and_thread_settings():
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "minikernel", "bench", "--quick", "--json", "-k", "ch01 view"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    setup, machine = out["setup"], out["machine"]
    assert f"({llvm.get_host_cpu_name()}/" in setup or f"({llvm.get_host_cpu_name()})" in setup
    assert f"{os.cpu_count()} cores" in setup and machine["cores"] == os.cpu_count()
    assert "threads: torch 1, numba 1" in setup and "OMP_NUM_THREADS=1" in setup and "NUMBA_NUM_THREADS=1" in setup
    assert machine["cpu"] and machine["cpu"] in setup
    if hasattr(os, "getloadavg"):
        assert f"load average {machine['load_average_before']:.1f} before" in setup
    assert "reference matmul tiles" in setup


_FAULTS = """
import resource, sys
import numpy as np
from minikernel.course.bench.machine import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
a = np.ones(16 * 1024 * 1024, np.float32); del a  # 64 MiB written, then freed
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
b = np.ones(16 * 1024 * 1024, np.float32)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and Linux page-fault counts")
def test_kept_memory_gives_the_next_output_warm_pages():
    def faults(mode: str) -> int:
        proc = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout)

    huge_pages = 64 * 1024 * 1024 // (2 * 1024 * 1024)  # numpy asks for 2 MiB pages; 4 KiB ones fault more often
    assert faults("fresh") >= huge_pages  # the default: a fresh mapping, a fault per page
    assert faults("keep") <= 4  # kept: the freed block is reused, its pages already mapped


def test_header_warns_when_other_processes_leave_too_few_cores_for_the_threads():
    cores = os.cpu_count()
    assert "WARNING" in machine.contention(float(cores))  # every core busy: any thread waits
    threads = max(torch.get_num_threads(), numba.get_num_threads())
    idle = machine.contention(0.0)
    assert idle.startswith(f"other processes kept 0.0 of {cores} cores busy")
    assert ("WARNING" in idle) == (threads > cores + 0.5)
    assert machine.contention(None) == ""
    if sys.platform.startswith("linux"):
        busy = machine.busy_cores(0.2)
        assert busy is not None and -0.01 <= busy <= cores + 0.01
