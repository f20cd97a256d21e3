"""The benchmark's figures: the interquartile spread, re-sampling and the flag, on a fake clock.

The clock is replaced, so every time a row reports is known in advance and no test
depends on how noisy the machine is.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from minikernel.course.bench import timing as bench

MS = 1_000_000  # nanoseconds


class FakeClock:
    """``perf_counter_ns`` that moves only when a timed call says how long it took."""

    def __init__(self):
        self.now = 0
        self.slowdown = 0.0  #: every call (of any thunk) makes later calls this much slower: a drifting machine
        self.factor = 1.0

    def __call__(self) -> int:
        return self.now

    def call(self, durations_ms: list[float]):
        """A thunk whose successive calls take ``durations_ms`` in turn (cycling), and the count of its calls."""
        count = [0]

        def fn():
            self.now += int(durations_ms[count[0] % len(durations_ms)] * self.factor * MS)
            self.factor *= 1.0 + self.slowdown
            count[0] += 1
        return fn, count


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(bench.time, "perf_counter_ns", fake)
    return fake


@pytest.mark.parametrize("samples", [
    [2.0] * 15,
    [1.0, 2.0, 3.0, 4.0, 5.0],
    [1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0],
    [0.5, 7.25, 3.0, 3.5, 100.0, 2.0, 2.5, 3.0],
])
def test_spread_is_the_interquartile_range_over_the_median(samples):
    q1, q2, q3 = np.percentile(np.asarray(samples, np.float64), [25, 50, 75])  # linear, as "inclusive" quartiles
    assert bench.spread_pct(samples) == pytest.approx(100 * (q3 - q1) / q2, rel=1e-12)


def test_samples_are_the_calls_own_durations_on_a_fake_clock(clock):
    fn, count = clock.call([1.0, 3.0])  # 1 ms calls: one call per sample
    samples = bench.samples_ms(fn, warmup=2, repeat=6)
    # warm-up 2 calls, the probe 1 call; then the samples alternate 3 ms and 1 ms
    assert count[0] == 2 + 1 + 6
    assert samples == [3.0, 1.0, 3.0, 1.0, 3.0, 1.0]


def test_a_noisy_side_is_timed_again_then_flagged_and_its_spread_printed(clock):
    mine, mine_calls = clock.call([1.0, 3.0])  # every other call three times as long: spread 100%
    theirs, _ = clock.call([2.0])
    row = bench.Row("noisy", lambda: (mine, theirs))
    r = bench.run_row(row, warmup=1, repeat=8, max_rounds=3)
    assert r.rounds == 3 and r.flagged
    assert r.torch_ms == 2.0 and r.torch_spread_pct == 0.0
    assert r.minikernel_ms == 2.0 and r.minikernel_spread_pct == pytest.approx(100.0)
    assert len(r.earlier_rounds) == 2  # the rounds before the last are kept, not dropped
    assert mine_calls[0] == 1 + 3 * (1 + 8)  # warm-up, then per round the probe and 8 samples
    line = bench.format_table([r]).splitlines()[1]
    assert "±100%!" in line and "±  0% " in line and "timed 3 times" in line


def test_a_steady_row_is_timed_once_and_not_flagged(clock):
    mine, _ = clock.call([3.0])
    theirs, _ = clock.call([2.0])
    r = bench.run_row(bench.Row("steady", lambda: (mine, theirs)), warmup=1, repeat=8, max_rounds=3)
    assert (r.rounds, r.flagged, r.earlier_rounds, r.ratio) == (1, False, [], 1.5)
    table = bench.format_table([r])
    assert "!" not in table and "timed" not in table


@pytest.mark.parametrize("hi, flagged", [(1.1, False), (1.12, True)])  # spreads 9.5% and 11.3% of the median
def test_a_spread_just_below_the_limit_passes_and_one_just_above_is_flagged(clock, hi, flagged):
    # 8 samples, half 1 ms and half hi: the quartiles (1.75 places in from each end)
    # are 1 and hi themselves, the median their mean
    mine, _ = clock.call([1.0, hi])
    theirs, _ = clock.call([1.0])
    r = bench.run_row(bench.Row("edge", lambda: (mine, theirs)), warmup=1, repeat=8, max_rounds=2)
    assert r.minikernel_spread_pct == pytest.approx(100 * (hi - 1.0) / ((1.0 + hi) / 2))
    assert r.flagged is flagged and r.rounds == (2 if flagged else 1)


def test_bench_k_without_a_match_exits_2_with_one_line_and_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "minikernel", "bench", "-k", "nomatch"],
                          capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench: no row matches -k 'nomatch'"), lines


def test_a_machine_slowing_down_during_a_row_leaves_the_ratio_alone(clock):
    # Both sides take 2 ms on a steady machine; here each call makes the next 0.5% slower
    # (about 8% over one side's 16 calls, below the spread limit). Timing all of torch's
    # samples before all of ours would report ours about 9% slower; taken in turns
    # (first-second, then second-first) the two medians stay within 0.5% of each other.
    clock.slowdown = 0.005
    mine, mine_calls = clock.call([2.0])
    theirs, theirs_calls = clock.call([2.0])
    r = bench.run_row(bench.Row("drift", lambda: (mine, theirs)), warmup=1, repeat=16, max_rounds=1)
    assert mine_calls[0] == theirs_calls[0] == 1 + 1 + 16
    assert r.ratio == pytest.approx(1.0, abs=0.005)


def test_paired_samples_take_turns_first_second_then_second_first(clock):
    order = []
    first, _ = clock.call([1.0])
    second, _ = clock.call([1.0])
    a, b = bench.paired_samples_ms(lambda: (order.append("a"), first()), lambda: (order.append("b"), second()), repeat=4)
    assert len(a) == len(b) == 4
    assert order == ["a", "b"] + ["a", "b", "b", "a", "a", "b", "b", "a"]  # the two probes, then the samples
