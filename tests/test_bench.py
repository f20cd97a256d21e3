"""The benchmark harness (what it measures is reported by `make bench`, never asserted)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from minikernel.course.bench import cli, gpu, timing as bench  # cli imports every chapter's rows
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
