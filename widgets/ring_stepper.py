"""Ring stepper: watch a ring allreduce move, one step at a time.

The ranks sit on a circle; each rank's buffer is a row of cells, one per chunk,
coloured by chunk (the same hue on every rank). A cell's colour deepens with the
number of ranks whose values it already contains, so you can watch each chunk
fill up during the scatter-reduce and then spread during the allgather. Arrows
show this step's messages with the values they carry; a thick border marks the
cells just received. Under each rank: values sent and received, additions and
overwrites so far — the notes' counts (6, 6, 3, 3 for 4 ranks of 4 values).

Every step is computed by *your* ``scatter_reduce_step`` and ``allgather_step``
(exercises 7.1 and 7.2) through ``SimulatedRing``. While they are unfinished the
widget says which one to finish and steps the ring with the course's reference
solutions meanwhile, labelled "reference" (class ``mk-reference-side``); a student
edition without those references shows the message alone.

``frames`` and ``render_html`` are plain functions (HTML with ``data-`` attributes),
testable without a browser.
"""
from __future__ import annotations

import contextlib
import html
import math
from dataclasses import dataclass, field
from typing import Sequence

import ipywidgets as W
import torch
from torch.distributed import ReduceOp

from minikernel.course import exercise as ex
from minikernel.course.exercise import finish_message, stub_exercise_id
from minikernel.distributed import simulate
from minikernel.distributed.ops import Op, op_name
from minikernel.distributed.simulate import NOTES_EXAMPLE, Counters, Data, Send, SimulatedRing

from .static_view import StaticView

MAX_RANKS = 8     #: the most ranks the circle draws legibly
MAX_VALUES = 64   #: the most values per rank
_SIZE = 520       #: the drawing is _SIZE x _SIZE pixels


@dataclass
class Frame:
    """The ring after ``index`` steps (0: before the first)."""

    index: int
    label: str                       #: "start", "scatter-reduce step 1", ..., "allgather step 3"
    chunks: list[list[list]]         #: chunks[rank][chunk] -> list of values
    contributors: list[list[frozenset]]  #: which ranks' values each chunk already holds
    sends: list[Send] = field(default_factory=list)  #: the messages of this step
    counters: list[Counters] = field(default_factory=list)


def _split(t: torch.Tensor, n: int) -> list[list]:
    return [c.tolist() for c in t.tensor_split(n)]


STEP_FUNCTIONS = {"scatter_reduce_step": "7.1", "allgather_step": "7.2"}


@contextlib.contextmanager
def _references():
    """``SimulatedRing`` steps with the reference solutions of 7.1 and 7.2 inside this block
    (LookupError where this edition of the course ships none)."""
    saved = {name: getattr(simulate, name) for name in STEP_FUNCTIONS}
    chosen = {name: ex.reference_of(i, ex.registry()[i].stubs[name]) for name, i in STEP_FUNCTIONS.items()}
    try:
        for name, function in chosen.items():
            setattr(simulate, name, function)
        yield
    finally:
        for name, function in saved.items():
            setattr(simulate, name, function)


def frames(data: Data = NOTES_EXAMPLE, op: Op = ReduceOp.SUM, reference: bool = False) -> list[Frame]:
    """Every state of a ring allreduce of ``data`` (one row per rank), computed with your 7.1 and 7.2
    (``reference=True``: with the course's reference solutions).

    Raises NotImplementedError (naming the exercise) while a step function is a stub.

    Example::

        >>> fs = frames()                       # the notes' 4 ranks holding 1..16
        >>> len(fs), fs[3].chunks[0]            # after the scatter-reduce, rank 0 owns chunk 1
        (7, [[1], [32], [29], [20]])
    """
    if reference:
        with _references():
            return frames(data, op)
    ring = SimulatedRing(data, op)
    n = ring.world_size
    if n > MAX_RANKS or ring.buffers[0].numel() > MAX_VALUES:
        raise ValueError(f"the stepper draws at most {MAX_RANKS} ranks of {MAX_VALUES} values; "
                         f"got {n} ranks of {ring.buffers[0].numel()}")
    contributors = [[frozenset([r]) for _ in range(n)] for r in range(n)]
    out = [Frame(0, "start", [_split(b, n) for b in ring.buffers], contributors,
                 counters=[Counters() for _ in range(n)])]
    while not ring.done:
        record = ring.step()
        before, contributors = contributors, [list(row) for row in contributors]
        for s in record.sends:
            if record.phase == "scatter-reduce":
                contributors[s.dst][s.chunk] = before[s.dst][s.chunk] | before[s.src][s.chunk]
            else:
                contributors[s.dst][s.chunk] = before[s.src][s.chunk]
        out.append(Frame(len(out), f"{record.phase} step {record.step + 1}", [_split(b, n) for b in record.after],
                         contributors, record.sends, [Counters(**vars(c)) for c in ring.counters]))
    return out


def _fmt(values: list) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) or "·"


def _colour(chunk: int, n: int, share: float) -> str:
    """Chunk hue; lightness from 92% (own value only) down to 62% (every rank's)."""
    return f"hsl({360 * chunk / max(n, 1):.0f}, 75%, {92 - 30 * share:.0f}%)"


def _position(rank: int, n: int) -> tuple[float, float]:
    """Centre of rank's box: clockwise from the top."""
    if n == 1:
        return _SIZE / 2, _SIZE / 2
    angle = 2 * math.pi * rank / n - math.pi / 2
    radius = _SIZE * 0.34
    return _SIZE / 2 + radius * math.cos(angle), _SIZE / 2 + radius * math.sin(angle)


def _arrows(sends: Sequence[Send], n: int) -> str:
    lines = []
    for s in sends:
        (x1, y1), (x2, y2) = _position(s.src, n), _position(s.dst, n)
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        shrink = min(70.0, length / 3)  # start and end outside the boxes
        ax, ay = x1 + dx * shrink / length, y1 + dy * shrink / length
        bx, by = x2 - dx * shrink / length, y2 - dy * shrink / length
        mx, my = (ax + bx) / 2 - dy / length * 14, (ay + by) / 2 + dx / length * 14
        lines.append(f'<line class="mk-arrow" data-src="{s.src}" data-dst="{s.dst}" data-chunk="{s.chunk}" '
                     f'x1="{ax:.0f}" y1="{ay:.0f}" x2="{bx:.0f}" y2="{by:.0f}" stroke="#555" stroke-width="2" '
                     f'marker-end="url(#mk-head)"/><text x="{mx:.0f}" y="{my:.0f}" font-size="12" '
                     f'font-family="monospace" text-anchor="middle" fill="#333">'
                     f'{html.escape(_fmt(s.values.tolist()))}</text>')
    return (f'<svg width="{_SIZE}" height="{_SIZE}" style="position:absolute;left:0;top:0">'
            '<defs><marker id="mk-head" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto">'
            '<path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>' + "".join(lines) + "</svg>")


def render_html(frame: Frame) -> str:
    r"""Draw one frame: the ranks on a circle, their chunks, this step's messages, the counters.

    Args:
        frame (Frame): one element of ``frames(...)``.

    Returns:
        str: HTML. The root has ``data-frame`` and ``data-phase``; each rank box
        ``data-rank``, ``data-sent``, ``data-received``, ``data-additions``,
        ``data-overwrites``; each cell ``data-rank``, ``data-chunk``, ``data-value``
        (comma-separated), ``data-contributors`` (how many ranks' values it holds)
        and ``data-received`` ("1" if it arrived in this step).

    Example::

        >>> page = render_html(frames()[-1])
        >>> 'data-rank="0" data-chunk="1" data-value="32"' in page
        True
    """
    n = len(frame.chunks)
    received = {(s.dst, s.chunk) for s in frame.sends}
    boxes = []
    for r in range(n):
        x, y = _position(r, n)
        cells = []
        for c, values in enumerate(frame.chunks[r]):
            share = len(frame.contributors[r][c]) / n
            border = "3px solid #111" if (r, c) in received else "1px solid #777"
            cells.append(f'<div class="mk-chunk" data-rank="{r}" data-chunk="{c}" data-value="{_fmt(values)}" '
                         f'data-contributors="{len(frame.contributors[r][c])}" data-received="{int((r, c) in received)}" '
                         f'title="rank {r}, chunk {c}: holds the values of ranks '
                         f'{", ".join(map(str, sorted(frame.contributors[r][c])))}" style="min-width:28px;height:28px;'
                         f'padding:0 3px;display:inline-flex;align-items:center;justify-content:center;'
                         f'box-sizing:border-box;border:{border};background:{_colour(c, n, share)};'
                         f'font:12px monospace">{html.escape(_fmt(values))}</div>')
        k = frame.counters[r] if frame.counters else Counters()
        boxes.append(f'<div class="mk-rank" data-rank="{r}" data-sent="{k.sent}" data-received="{k.received}" '
                     f'data-additions="{k.additions}" data-overwrites="{k.overwrites}" style="position:absolute;'
                     f'left:{x:.0f}px;top:{y:.0f}px;transform:translate(-50%,-50%);text-align:center;'
                     f'background:white;padding:4px;border-radius:6px;box-shadow:0 0 0 1px #ccc">'
                     f'<div style="font:bold 12px sans-serif">rank {r}</div>'
                     f'<div style="display:flex;gap:2px;justify-content:center">{"".join(cells)}</div>'
                     f'<div style="font:11px sans-serif;color:#444;margin-top:2px;white-space:nowrap">sent {k.sent} · received '
                     f'{k.received}<br>additions {k.additions} · overwrites {k.overwrites}</div></div>')
    title = (f'<div style="font:bold 13px sans-serif;margin:4px 0">step {frame.index}: {html.escape(frame.label)}'
             f'</div>')
    return (f'<div class="mk-ring" data-frame="{frame.index}" data-phase="{html.escape(frame.label)}">{title}'
            f'<div style="position:relative;width:{_SIZE}px;height:{_SIZE}px">{_arrows(frame.sends, n)}'
            f'{"".join(boxes)}</div></div>')


def message_html(text: str, kind: str = "todo") -> str:
    colour = "#8a5a00" if kind == "todo" else "#b00020"
    return (f'<div class="mk-{kind}" style="color:{colour};font-family:sans-serif;margin:4px 0">'
            f'{html.escape(text)}</div>')


class RingStepper(StaticView, W.VBox):
    """What ``ring_stepper`` returns: ``.step`` (the slider), ``.play``, ``.picture``, ``.frames``."""

    static_name = "the ring allreduce stepper"

    def __init__(self, data: Data = NOTES_EXAMPLE, op: Op = ReduceOp.SUM):
        self.frames: list[Frame] = []
        self.picture = W.HTML()
        self.step = W.IntSlider(0, min=0, max=0, description="step", continuous_update=True)
        self.play = W.Play(value=0, min=0, max=0, interval=1200, description="play")
        W.jslink((self.play, "value"), (self.step, "value"))
        self.note = W.HTML()
        self.todo = ""  #: the line naming the exercise to finish, while the reference steps the ring
        try:
            self.frames = frames(data, op)
        except NotImplementedError as exc:
            message = finish_message(exc, "to step through your ring") or f"NotImplementedError: {exc}"
            try:
                if not stub_exercise_id(exc):
                    raise LookupError
                self.frames = frames(data, op, reference=True)
                self.todo = message_html(f"{message}; meanwhile, the course's reference solution steps it:")
            except (LookupError, NotImplementedError):
                self.picture.value = message_html(message)
        except Exception as exc:  # a readable line, never a traceback
            self.picture.value = message_html(f"{type(exc).__name__}: {exc}", "error")
        if self.frames:
            self.step.max = self.play.max = len(self.frames) - 1
            n = len(self.frames[0].chunks)
            self.note.value = (f'{self.todo}<div style="font:12px sans-serif;color:#555">{n} ranks, op '
                               f'ReduceOp.{op_name(op)}: steps 1–{n - 1} scatter-reduce, {n}–{2 * (n - 1)} '
                               f'allgather{" (reference solution)" if self.todo else ""}</div>')
            self.step.observe(self._draw, "value")
            self._draw()
        else:
            self.step.disabled = self.play.disabled = True
        super().__init__([W.HBox([self.play, self.step]), self.note, self.picture])
        self.add_class("mk-ring-stepper")

    def _draw(self, change=None) -> None:
        page = render_html(self.frames[self.step.value])
        if self.todo:  # drawn by the reference: say so on the picture itself
            page = page.replace('<div class="mk-ring"', '<div class="mk-ring mk-reference-side"', 1).replace(
                '<div style="font:bold 13px sans-serif;margin:4px 0">step',
                '<div style="font:bold 13px sans-serif;margin:4px 0">reference solution, step', 1)
        self.picture.value = page


def ring_stepper(data: Data = NOTES_EXAMPLE, op: Op = ReduceOp.SUM) -> RingStepper:
    r"""An interactive ring allreduce: a slider through the scatter-reduce, then the allgather.

    Args:
        data (rows of numbers, optional): one row per rank, up to 8 ranks of up to
            64 values. Default: the notes' ``[[1..4], [5..8], [9..12], [13..16]]``
        op (ReduceOp, optional): ``ReduceOp.SUM``, ``AVG``, ``MAX`` or ``MIN``. Default: ``ReduceOp.SUM``

    Returns:
        RingStepper: an ``ipywidgets.VBox`` (CSS class ``mk-ring-stepper``); move
        ``.step`` (an IntSlider, 0 .. 2(N-1)) or press ``.play``.

    Example::

        >>> from widgets import ring_stepper
        >>> ring_stepper()                                          # doctest: +SKIP
        >>> ring_stepper([[3, 1, 4], [1, 5, 9], [2, 6, 5]], op=ReduceOp.MAX)  # doctest: +SKIP
    """
    return RingStepper(data, op)
