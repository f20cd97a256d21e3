"""The ring-stepper widget (widgets/ring_stepper.py), without a browser.

Torch is the oracle: every cell a frame draws must hold the reduction (by torch)
of that chunk over exactly the ranks the cell says it contains, and the last frame
must show ``torch.stack(rows).sum(0)`` on every rank. No exercise marker: with the
references on, the pictures are checked; in student mode the widget must name the
exercise to finish, without raising, and step the ring with the reference solutions
meanwhile (labelled as such).
"""
from __future__ import annotations

import re

import ipywidgets as W
import pytest
import torch
from torch.distributed import ReduceOp

from minikernel.distributed.simulate import NOTES_EXAMPLE
from minikernel.course.exercise import uses_reference
from widgets import ring_stepper
from widgets.ring_stepper import frames, render_html

REFERENCE = uses_reference("7.1") and uses_reference("7.2")
CELL_RE = re.compile(r'class="mk-chunk" data-rank="(\d+)" data-chunk="(\d+)" data-value="([^"]*)" '
                     r'data-contributors="(\d+)" data-received="([01])"')
RANK_RE = re.compile(r'class="mk-rank" data-rank="(\d+)" data-sent="(\d+)" data-received="(\d+)" '
                     r'data-additions="(\d+)" data-overwrites="(\d+)"')
TODO = "Finish exercise 7.1 (scatter_reduce_step) to step through your ring; meanwhile, the course&#x27;s reference"

CASES = [
    (NOTES_EXAMPLE, ReduceOp.SUM),
    ([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3], [5, 8, 9, 7, 9]], ReduceOp.MAX),
    ([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]], ReduceOp.SUM),  # fewer values than ranks: empty chunks
]


def _values(text: str) -> list[int]:
    return [int(v) for v in text.split(", ")] if text != "·" else []


def _needs_steps(data=NOTES_EXAMPLE, op=ReduceOp.SUM) -> bool:
    """True with the references on; in student mode, check the stub stops ``frames`` and return False."""
    if REFERENCE:
        return True
    with pytest.raises(NotImplementedError, match=r"exercise 7\.1 \(scatter_reduce_step\)"):
        frames(data, op)
    w = ring_stepper(data, op)
    assert TODO in w.note.value and 'class="mk-ring mk-reference-side"' in w.picture.value
    return False


@pytest.mark.parametrize("data, op", CASES)
def test_every_cell_holds_what_its_contributors_add_up_to(data, op):
    if not _needs_steps(data, op):
        return
    rows = torch.tensor(data)
    n = rows.shape[0]
    reduce = {ReduceOp.SUM: lambda t: t.sum(0), ReduceOp.MAX: lambda t: t.amax(0)}[op]
    fs = frames(data, op)
    assert len(fs) == 2 * (n - 1) + 1
    for frame in fs:
        cells = CELL_RE.findall(render_html(frame))
        assert len(cells) == n * n
        for rank, chunk, value, count, _ in cells:
            rank, chunk = int(rank), int(chunk)
            ranks = sorted(frame.contributors[rank][chunk])
            assert int(count) == len(ranks)
            expected = reduce(torch.stack([rows[q].tensor_split(n)[chunk] for q in ranks]))
            assert _values(value) == expected.tolist(), f"frame {frame.index}, rank {rank}, chunk {chunk}"
    last = CELL_RE.findall(render_html(fs[-1]))
    full = reduce(rows).tensor_split(n)
    assert all(_values(v) == full[int(c)].tolist() and int(k) == n for _, c, v, k, _ in last)


def test_counters_arrows_and_received_cells_for_the_notes_example():
    if not _needs_steps():
        return
    fs = frames()
    page = render_html(fs[-1])
    assert [tuple(map(int, m[1:])) for m in RANK_RE.findall(page)] == [(6, 6, 3, 3)] * 4
    first = render_html(fs[1])
    arrows = re.findall(r'class="mk-arrow" data-src="(\d)" data-dst="(\d)" data-chunk="(\d)"', first)
    assert arrows == [("0", "1", "0"), ("1", "2", "1"), ("2", "3", "2"), ("3", "0", "3")]
    received = [(r, c) for r, c, _, _, got in CELL_RE.findall(first) if got == "1"]
    assert received == [("0", "3"), ("1", "0"), ("2", "1"), ("3", "2")]
    assert 'data-rank="0" data-chunk="3" data-value="20"' in first  # 4 + 16, as in the notes


def test_the_slider_steps_through_the_frames():
    if not _needs_steps():
        return
    w = ring_stepper()
    assert isinstance(w, W.VBox) and w.step.max == 6 and not w.step.disabled
    assert 'data-frame="0"' in w.picture.value
    w.step.value = 4
    assert 'data-frame="4" data-phase="allgather step 1"' in w.picture.value


def test_one_rank_draws_in_both_modes():
    w = ring_stepper([[1, 2, 3]])
    assert w.step.max == 0 and 'data-value="1, 2, 3"' in w.picture.value


def test_student_mode_names_the_exercise_and_steps_the_reference_meanwhile():
    w = ring_stepper()
    if REFERENCE:
        assert TODO not in w.note.value and "mk-reference-side" not in w.picture.value
        return
    assert TODO in w.note.value and not w.step.disabled and w.step.max == 6
    with pytest.raises(NotImplementedError, match="exercise 7.1"):
        frames()
    w.step.value = w.step.max  # the last frame: every rank holds torch's sum
    total = torch.tensor(NOTES_EXAMPLE).sum(0).tolist()
    got = {int(r): _values(v) for r, _c, v, _n, _x in CELL_RE.findall(w.picture.value)}
    assert 'class="mk-ring mk-reference-side"' in w.picture.value and "reference solution, step 6" in w.picture.value
    for rank in range(4):
        row = [v for r, c, v, _n, _x in CELL_RE.findall(w.picture.value) if int(r) == rank]
        assert sum((_values(v) for v in row), []) == total, (rank, row)
    assert len(got) == 4


def test_bad_data_is_a_message_not_a_traceback():
    w = ring_stepper([[1, 2], [3]])
    assert "ValueError" in w.picture.value and "rank 1 has 1" in w.picture.value
    w = ring_stepper([[1]] * 9)
    assert "at most 8 ranks" in w.picture.value
