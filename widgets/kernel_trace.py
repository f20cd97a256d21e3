"""Kernel trace: which thread of which block read and wrote which cells of a GPU launch.

A tiny launch runs on numba's CUDA simulator (one Python thread per CUDA thread)
with its arrays wrapped so every element read and write is recorded together with
the ``blockIdx`` and ``threadIdx`` of the thread that made it; ``cuda.shared.array``
is wrapped the same way. From the record the widget draws:

* every matrix as a grid, each cell labelled with how often it was read, so the
  **reuse** of the tiled matmul (exercise 2.9) shows against the naive one: each
  element of ``a`` and ``b`` is read ``TILE`` times less often from global memory,
  and the rest of the reads come from fast shared memory;
* the totals of global and shared reads and writes;
* for one chosen thread, the cells it touched, in order;
* for the map kernel (exercise 2.6), the storage positions the first warp reads
  and how many 32-byte memory segments that takes: **coalescing**, when
  consecutive threads read consecutive addresses, or not, when the input is
  transposed and the output is not.

Pure functions (``trace``, ``render_html``) work without a browser; the HTML carries
``data-`` attributes for tests. While an exercise is unfinished the widget says
"Finish exercise N.M (...)" and draws the trace of the course's reference solution
meanwhile, labelled as such (class ``mk-reference-side``).
"""
from __future__ import annotations

import html
import math
import re
import sys
import threading
import traceback
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import ipywidgets as W
import numpy as np
import torch

from minikernel import device as dev
from minikernel.course.exercise import finish_message, stub_exercise_id

from .reference_side import references
from .static_view import StaticView

SCENARIOS = {
    "map, contiguous input": "gpu_map (exercise 2.6): out = -a, both 8x8 and contiguous",
    "map, transposed input": "gpu_map (exercise 2.6): out = -a, out contiguous but a transposed",
    "matmul, naive": "naive_matmul: each thread reads a row of a and a column of b from global memory",
    "matmul, tiled": "gpu_matmul (exercise 2.9): TILE x TILE tiles of a and b staged in shared memory",
}
SECTOR_BYTES = 32  #: the unit in which a GPU's memory system serves a warp's loads
WARP = 32

Dim = tuple[int, int, int]


@dataclass(frozen=True)
class Access:
    """One element access by one CUDA thread."""

    array: str   #: "a", "b", "out", or a shared array's variable name
    space: str   #: "global" or "shared"
    kind: str    #: "read" or "write"
    cell: tuple[int, ...]  #: the index used: (storage position,) for global arrays
    block: Dim
    thread: Dim


@dataclass
class Trace:
    """The record of one launch: every access, plus what is needed to draw the arrays."""

    scenario: str
    grid: Dim
    block: Dim
    accesses: list[Access] = field(default_factory=list)
    #: global array name -> (rows, cols, row stride, col stride, offset): how to draw its storage as a matrix
    matrices: dict[str, tuple[int, int, int, int, int]] = field(default_factory=dict)
    shared: dict[str, tuple[int, ...]] = field(default_factory=dict)  #: shared array name -> shape
    itemsize: int = 4
    result: Optional[np.ndarray] = None  #: the output matrix the launch computed
    expected: Optional[np.ndarray] = None  #: torch's answer
    reference: bool = False  #: run with the course's reference solutions (yours not written yet)

    def counts(self) -> dict[str, int]:
        """Totals: ``{"global reads": n, "global writes": n, "shared reads": n, "shared writes": n}``."""
        c = Counter(f"{a.space} {a.kind}s" for a in self.accesses)
        return {k: c.get(k, 0) for k in ("global reads", "global writes", "shared reads", "shared writes")}

    def per_cell(self, array: str, kind: str = "read") -> Counter:
        """How often each cell of ``array`` was read (or written)."""
        return Counter(a.cell for a in self.accesses if a.array == array and a.kind == kind)

    def threads(self) -> list[tuple[Dim, Dim]]:
        """Every (block, thread) that touched memory, in launch order."""
        return sorted({(a.block, a.thread) for a in self.accesses}, key=lambda bt: (bt[0][::-1], bt[1][::-1]))

    def by_thread(self, block: Dim, thread: Dim) -> list[Access]:
        return [a for a in self.accesses if a.block == block and a.thread == thread]

    def first_warp_reads(self, array: str = "a") -> list[int]:
        """Storage positions of ``array`` read first by threads 0..31 of block 0 (in thread order)."""
        first: dict[int, int] = {}
        for a in self.accesses:
            if a.array == array and a.kind == "read" and a.block == (0, 0, 0):
                first.setdefault(a.thread[0] + self.block[0] * a.thread[1], a.cell[0])
        return [first[t] for t in sorted(first) if t < WARP]

    def sectors(self, array: str = "a") -> int:
        """32-byte segments the first warp's first read of ``array`` touches (fewer is better)."""
        return len({p * self.itemsize // SECTOR_BYTES for p in self.first_warp_reads(array)})


# ------------------------------------------------------------ instrumentation
def _dim(d) -> Dim:
    return (int(d.x), int(d.y), int(d.z))


def _cell(index) -> tuple[int, ...]:
    return tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)


class TracedArray:
    """An array that records every element access with the current simulated thread."""

    def __init__(self, data: np.ndarray, name: str, space: str, log: list[Access]):
        self._data, self._name, self._space, self._log = data, name, space, log

    def _record(self, kind: str, index) -> None:
        me = threading.current_thread()
        if hasattr(me, "blockIdx"):  # a simulated CUDA thread (not the host filling the array)
            self._log.append(Access(self._name, self._space, kind, _cell(index), _dim(me.blockIdx),
                                    _dim(me.threadIdx)))

    def __getitem__(self, index):
        self._record("read", index)
        return self._data[index]

    def __setitem__(self, index, value):
        self._record("write", index)
        self._data[index] = value

    def __len__(self) -> int:
        return len(self._data)

    shape = property(lambda self: self._data.shape)
    size = property(lambda self: self._data.size)
    ndim = property(lambda self: self._data.ndim)
    dtype = property(lambda self: self._data.dtype)


@contextmanager
def _traced_shared_memory(log: list[Access], shapes: dict[str, tuple[int, ...]]) -> Iterator[None]:
    """Make ``cuda.shared.array`` return TracedArrays (one per source line, as the simulator does)."""
    from numba import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    original = kernelapi.FakeCUDAShared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        caller = traceback.extract_stack(sys._getframe())[-2]
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        store = self.__dict__.setdefault("_mk_traced", {})
        with lock:
            if (caller.filename, caller.lineno) not in store:
                match = re.match(r"\s*(\w+)\s*=", caller.line or "")
                name = match.group(1) if match else f"shared@{caller.lineno}"
                shapes[name] = tuple(int(n) for n in np.atleast_1d(shape))
                store[(caller.filename, caller.lineno)] = TracedArray(np.zeros(shape, dtype), name, "shared", log)
            return store[(caller.filename, caller.lineno)]

    kernelapi.FakeCUDAShared.array = array
    try:
        yield
    finally:
        kernelapi.FakeCUDAShared.array = original


# -------------------------------------------------------------------- scenarios
def _flat(t: torch.Tensor) -> np.ndarray:
    """The whole storage of a torch tensor, as a numpy array (shared memory)."""
    s = t.untyped_storage()
    return torch.empty(0, dtype=t.dtype).set_(s, 0, (s.nbytes() // t.element_size(),), (1,)).numpy()


def _ints(values: Sequence[int]) -> np.ndarray:
    return np.array(tuple(values), dtype=np.int64)


def trace(scenario: str, size: Optional[int] = None) -> Trace:
    """Run one of ``SCENARIOS`` on the simulator and return its record.

    Args:
        scenario (str): a key of ``SCENARIOS``.
        size (int, optional): side of the square matrices. Default: ``2 * TILE`` for
            matmul (a 2 x 2 grid of tiles), 8 for map.

    Raises NotImplementedError while the exercise it runs is unfinished, and
    RuntimeError when the GPU kernels do not run on the simulator here.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario!r} is not one of: {', '.join(SCENARIOS)}")
    if not dev.SIMULATOR:
        raise RuntimeError("tracing needs numba's CUDA simulator, and this session runs GPU kernels "
                           f"{'natively' if dev.CUDA_BACKEND == 'gpu' else 'nowhere'}: start Jupyter "
                           "with NUMBA_ENABLE_CUDASIM=1 to trace")
    from minikernel.kernels import launch, naive, sizes
    from minikernel.kernels.scalar_ops import NEG

    g = torch.Generator().manual_seed(0)
    log: list[Access] = []
    if scenario.startswith("map"):
        n = size or 8
        base = torch.randint(-9, 10, (n, n), generator=g).float()
        a = base.t().contiguous().t() if "transposed" in scenario else base.clone()  # same values, other layout
        out = torch.zeros(n, n)
        threads = sizes.THREADS
        result = Trace(scenario, ((n * n + threads - 1) // threads, 1, 1), (threads, 1, 1), log)
        for name, t in (("a", a), ("out", out)):
            result.matrices[name] = (n, n, t.stride(0), t.stride(1), t.storage_offset())
        args = (NEG, TracedArray(_flat(out), "out", "global", log), _ints(out.shape), _ints(out.stride()), 0,
                TracedArray(_flat(a), "a", "global", log), _ints(a.stride()), 0)
        launch.kernel("cuda", "map").launch(result.grid[0], threads, *args)
        result.result, result.expected = out.numpy(), (-base).numpy()
        return result
    n = size or 2 * sizes.TILE
    a = torch.randint(-3, 4, (n, n), generator=g).float()
    b = torch.randint(-3, 4, (n, n), generator=g).float()
    out = torch.zeros(n, n)
    tile = sizes.TILE
    result = Trace(scenario, ((n + tile - 1) // tile, (n + tile - 1) // tile, 1), (tile, tile, 1), log)
    for name, t in (("a", a), ("b", b), ("out", out)):
        result.matrices[name] = (n, n, t.stride(0), t.stride(1), 0)
    ta, tb, to = (TracedArray(_flat(t), name, "global", log) for name, t in (("a", a), ("b", b), ("out", out)))
    if scenario == "matmul, naive":
        naive.launch(result.grid[:2], result.block[:2], to, _ints(out.stride()), ta, _ints(a.stride()),
                     tb, _ints(b.stride()), n, n, n)
    else:
        with _traced_shared_memory(log, result.shared):
            launch.kernel("cuda", "matmul").launch(result.grid, result.block[:2], to, _ints(out.shape),
                                                   _ints(out.stride()), 0, ta, _ints(a.stride()), 0,
                                                   tb, _ints(b.stride()), 0, n)
    result.result, result.expected = out.numpy(), (a @ b).numpy()
    return result


# -------------------------------------------------------------------- drawing
_CELL = ("display:inline-flex;align-items:center;justify-content:center;width:30px;height:30px;"
         "box-sizing:border-box;font:11px monospace;color:#111;")


def message_html(text: str, kind: str = "error") -> str:
    colour = "#b00020" if kind == "error" else "#8a5a00"
    return (f'<div class="mk-{kind}" style="color:{colour};font-family:sans-serif;margin:4px 0">'
            f'{html.escape(text)}</div>')


def _who(block: Dim, thread: Dim) -> str:
    return f"block ({block[0]}, {block[1]}) thread ({thread[0]}, {thread[1]})"


def _heat(count: int, top: int) -> str:
    if not count:
        return "#f4f4f4"
    return f"hsl(210, 80%, {92 - 50 * count / max(top, 1):.0f}%)"


def _matrix_html(t: Trace, name: str, mine: set) -> str:
    """One global array drawn as its matrix; ``mine`` holds the cells the chosen thread touched."""
    rows, cols, rs, cs, offset = t.matrices[name]
    reads, writes = t.per_cell(name, "read"), t.per_cell(name, "write")
    readers: dict[tuple, list] = {}
    for a in t.accesses:
        if a.array == name:
            readers.setdefault(a.cell, []).append(f"b{a.block[:2]}t{a.thread[:2]}".replace(" ", ""))
    top = max(rows, cols)  # a fixed scale: the reads per element of a naive matmul
    cells = []
    for i in range(rows):
        for j in range(cols):
            pos = offset + i * rs + j * cs
            r, w = reads.get((pos,), 0), writes.get((pos,), 0)
            border = "3px solid #d1242f" if (pos,) in mine else "1px solid #888"
            label = str(r) if r else (f"w{w}" if w else "")
            who = " ".join(sorted(set(readers.get((pos,), []))))
            cells.append(f'<div class="mk-tcell" data-array="{name}" data-row="{i}" data-col="{j}" data-pos="{pos}" '
                         f'data-reads="{r}" data-writes="{w}" data-threads="{who}" title="{name}[{i}, {j}] '
                         f'(storage {pos}): read {r}x, written {w}x" style="{_CELL}border:{border};'
                         f'background:{_heat(r + w, top)}">{label}</div>')
    grid = (f'<div style="display:grid;grid-template-columns:repeat({cols},30px);gap:1px">{"".join(cells)}</div>')
    return (f'<div class="mk-matrix" data-array="{name}" style="margin-right:1.5em"><div style="font:13px monospace">'
            f'<b>{name}</b> (global)</div>{grid}</div>')


def _counts_html(t: Trace) -> str:
    rows = "".join(f'<tr><td>{k}</td><td class="mk-count" data-kind="{k}" style="text-align:right">{v}</td></tr>'
                   for k, v in t.counts().items())
    return f'<table class="mk-counts" style="font:13px monospace;margin:6px 0">{rows}</table>'


def _thread_html(t: Trace, block: Dim, thread: Dim) -> str:
    steps = t.by_thread(block, thread)
    shown = ", ".join(f"{a.kind[0]}:{a.array}[{', '.join(map(str, a.cell))}]" for a in steps[:48])
    more = f" … ({len(steps) - 48} more)" if len(steps) > 48 else ""
    return (f'<div class="mk-thread" data-block="{block[0]},{block[1]}" data-thread="{thread[0]},{thread[1]}" '
            f'style="font:12px monospace;margin:6px 0;max-width:60em"><b>{_who(block, thread)}</b>: '
            f'{len(steps)} accesses (r = read, w = write; global cells are storage positions): '
            f'{html.escape(shown + more)}</div>')


def _coalescing_html(t: Trace) -> str:
    positions = t.first_warp_reads("a")
    if not positions:
        return ""
    ideal = math.ceil(len(set(positions)) * t.itemsize / SECTOR_BYTES)  # the distinct bytes, packed
    return (f'<div class="mk-coalescing" data-sectors="{t.sectors("a")}" data-ideal="{ideal}" '
            f'style="font:12px monospace;margin:6px 0">first warp (threads 0..{len(positions) - 1} of block 0) '
            f'reads a at storage positions {positions}: {t.sectors("a")} memory segments of {SECTOR_BYTES} bytes '
            f'(at best {ideal})</div>')


def render_html(t: Trace, block: Optional[Dim] = None, thread: Optional[Dim] = None) -> str:
    r"""Draw a trace: launch shape, totals, read counts per cell, one thread's accesses.

    Args:
        t (Trace): what ``trace`` returned.
        block (tuple of 3 ints, optional): the block of the thread to highlight.
            Default: the first block
        thread (tuple of 3 ints, optional): the thread to highlight. Default: ``(0, 0, 0)``

    Example::

        >>> page = render_html(trace("matmul, naive"))
        >>> 'data-array="a" data-row="0" data-col="0"' in page
        True
    """
    block = tuple(block) if block is not None else (0, 0, 0)
    thread = tuple(thread) if thread is not None else (0, 0, 0)
    mine = {(a.array, a.cell) for a in t.by_thread(block, thread) if a.space == "global"}
    threads = math.prod(t.grid) * math.prod(t.block)
    ok = t.result is not None and t.expected is not None and np.array_equal(t.result, t.expected)
    verdict = ("result matches torch" if ok else "result DIFFERS from torch")
    if t.reference:
        verdict = "the reference solution's launch (yours is not written yet); " + verdict
    head = (f'<div class="mk-launch" style="font:13px monospace"><b>{html.escape(t.scenario)}</b> — '
            f'{html.escape(SCENARIOS[t.scenario])}<br>grid {t.grid[:2]} x block {t.block[:2]} = {threads} threads; '
            f'{verdict}</div>')
    shared = "".join(f'<span class="mk-shared" data-array="{n}">{n}{list(s)} </span>' for n, s in t.shared.items())
    shared = f'<div style="font:12px monospace">shared memory per block: {shared}</div>' if shared else ""
    grids = "".join(_matrix_html(t, name, {c for n, c in mine if n == name}) for name in t.matrices)
    side = " mk-reference-side" if t.reference else ""
    return (f'<div class="mk-trace{side}" data-scenario="{html.escape(t.scenario)}">{head}{_counts_html(t)}{shared}'
            f'{_coalescing_html(t)}<div style="display:flex;flex-wrap:wrap;margin:6px 0">{grids}</div>'
            f'{_thread_html(t, block, thread)}</div>')


def todo_html(exc: NotImplementedError) -> str:
    """'Finish exercise N.M (name) to see this trace', from a stub's error."""
    return message_html(finish_message(exc, "to see this trace"), "todo")


def safe_trace(scenario: str) -> tuple[Optional[Trace], str]:
    """(trace, "") or (None, a message line) — never raises for an unfinished exercise: then
    the reference's trace, if this edition has the references, with a line saying so."""
    try:
        return trace(scenario), ""
    except NotImplementedError as exc:
        if not stub_exercise_id(exc):
            return None, message_html(f"NotImplementedError: {exc}")
        try:
            with references():
                reference = trace(scenario)
        except (LookupError, NotImplementedError):
            return None, todo_html(exc)
        reference.reference = True
        return reference, message_html(finish_message(exc, "to trace yours; meanwhile, the course's "
                                                      "reference solution's:"), "todo")
    except Exception as exc:  # a readable line, never a traceback
        return None, message_html(f"{type(exc).__name__}: {exc}")


def _label(block: Dim, thread: Dim) -> str:
    return _who(block, thread)


class KernelTrace(StaticView, W.VBox):
    """What ``kernel_trace`` returns: ``scenario`` and ``who`` dropdowns over an HTML ``picture``."""

    static_name = "the kernel trace"

    def __init__(self, scenario: str = "matmul, tiled"):
        if scenario not in SCENARIOS:
            raise ValueError(f"scenario {scenario!r} is not one of: {', '.join(SCENARIOS)}")
        self.scenario = W.Dropdown(options=list(SCENARIOS), value=scenario, description="launch",
                                   layout=W.Layout(width="26em"))
        self.who = W.Dropdown(description="thread", layout=W.Layout(width="26em"))
        self.picture = W.HTML()
        self.picture.add_class("mk-trace-view")
        self._trace: Optional[Trace] = None
        self._busy = False
        super().__init__([W.HBox([self.scenario, self.who]), self.picture])
        self.add_class("mk-kernel-trace")
        self.scenario.observe(self._new_scenario, "value")
        self.who.observe(self._redraw, "value")
        self._new_scenario(None)

    def _new_scenario(self, change) -> None:
        self._trace, message = safe_trace(self.scenario.value)
        self._busy = True
        try:
            pairs = self._trace.threads() if self._trace else []
            self.who.options = [(_label(b, t), (b, t)) for b, t in pairs]
            self.who.value = pairs[0] if pairs else None
        finally:
            self._busy = False
        self.picture.value = message + self._draw() if self._trace else message

    def _redraw(self, change) -> None:
        if not self._busy and self._trace is not None:
            self.picture.value = self._draw()

    def _draw(self) -> str:
        block, thread = self.who.value if self.who.value else ((0, 0, 0), (0, 0, 0))
        return render_html(self._trace, block, thread)


def kernel_trace(scenario: str = "matmul, tiled") -> KernelTrace:
    r"""An interactive record of a tiny GPU launch: who read and wrote which cells.

    Runs the launch on numba's CUDA simulator with every array access recorded, and
    draws each matrix with per-cell read counts, the totals of global and shared
    reads and writes, and the accesses of the thread picked in the ``thread``
    dropdown (its global cells outlined in red).

    Args:
        scenario (str, optional): one of ``"map, contiguous input"``,
            ``"map, transposed input"``, ``"matmul, naive"``, ``"matmul, tiled"``.
            Default: ``"matmul, tiled"``

    Returns:
        KernelTrace: an ``ipywidgets.VBox`` (CSS class ``mk-kernel-trace``) whose
        ``scenario`` and ``who`` dropdowns redraw ``picture`` (an ``ipywidgets.HTML``)
        when their ``value`` changes; ``who.value`` is a ``(block, thread)`` pair of
        3-tuples.

    Example::

        >>> from widgets import kernel_trace
        >>> kernel_trace("matmul, naive")   # doctest: +SKIP
    """
    return KernelTrace(scenario)
