"""The benchmark harness (what it measures is reported by `make bench`, never asserted)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from minikernel import bench
from minikernel import exercise as ex


def test_median_ms_measures_the_call_and_runs_sync():
    synced = []
    ms = bench.median_ms(lambda: time.sleep(0.002), warmup=1, repeat=3, sync=lambda: synced.append(1))
    assert 1.5 <= ms < 50  # a 2 ms sleep, give or take a loaded machine
    assert synced, "sync was never called"


def test_median_ms_batches_fast_calls():
    calls = []
    bench.median_ms(lambda: calls.append(1), warmup=0, repeat=3)
    assert len(calls) > 3 * 10  # sub-microsecond calls are timed many at a time


def test_bench_cli_reports_every_row():
    proc = subprocess.run([sys.executable, "-m", "minikernel", "bench", "--quick", "--json"],
                          capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    bench._load_rows()
    assert [r["name"] for r in rows] == [r.name for r in bench.ROWS]
    for r in rows:
        assert r["torch_ms"] > 0
        if ex.uses_reference("1.7"):
            assert r["minikernel_ms"] > 0 and r["ratio"] > 0, r
        else:
            assert r["minikernel_ms"] is None and "not implemented" in r["note"], r
