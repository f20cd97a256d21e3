"""Stride explorer: how a shape, strides and an offset address a flat storage.

The picture is drawn with *your* chapter-01 functions: every logical index comes
from ``to_index`` (exercise 1.3), its storage position from ``index_to_position``
(1.2), the header of an operation's result from minikernel's own ``Tensor`` ops,
and ``is_contiguous`` / ``contiguous_strides`` (1.6, 1.1) fill in the rest. Where
your answer differs from PyTorch's, a warning line says so. While a stub is
unfinished, the widget draws PyTorch's picture of the same view (labelled as such,
class ``mk-torch-side``) under a line naming the exercise to finish to see yours.

The drawing is plain HTML, so ``layout`` and ``render_html`` work without a
browser; cells carry ``data-index`` and ``data-pos`` attributes.
"""
from __future__ import annotations

import html
import itertools
import math
import re
from collections import Counter
from typing import Callable, Sequence

import ipywidgets as W
import torch

from minikernel import strides as S
from minikernel.course.exercise import finish_message, stub_exercise_id
from minikernel.tensor import Tensor

from .static_view import StaticView

MAX_ELEMENTS = 256  #: the largest view or storage the explorer draws
_BOX = ("display:inline-flex;align-items:center;justify-content:center;width:32px;height:32px;"
        "box-sizing:border-box;font:13px monospace;color:#111;")


def _args(values: Sequence[int]) -> str:
    """(3, 4) -> '3, 4': sizes as written inside ``view(...)``."""
    return ", ".join(str(v) for v in values)


def parse_ints(text: str, what: str) -> tuple[int, ...]:
    """Read ``'3, 4'``, ``'(3, 4)'`` or ``'3 4'`` as ``(3, 4)``; ValueError otherwise."""
    parts = [p for p in re.split(r"[,\s]+", text.strip().strip("()[]")) if p]
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a list of integers like '3, 4'") from None


def operations(shape: Sequence[int]) -> dict[str, tuple[str, Callable]]:
    """The operations offered on ``x = torch.arange(numel).view(shape)``, by key.

    Each value is ``(code, fn)``: ``code`` follows ``x`` in the torch call (``{}``
    stands for the ``view`` sizes) and ``fn(x, view_as)`` applies it to a torch
    tensor or a minikernel Tensor alike, since their APIs match.
    """
    shape, rev = tuple(shape), tuple(reversed(range(len(shape))))
    ops = {"none": ("", lambda x, v: x), "[1:]": ("[1:]", lambda x, v: x[1:])}
    if len(shape) >= 2:
        ops["[:, ::2]"] = ("[:, ::2]", lambda x, v: x[:, ::2])
        ops["[:, 0]"] = ("[:, 0]", lambda x, v: x[:, 0])
        if len(shape) == 2:
            ops["t()"] = (".t()", lambda x, v: x.t())
        ops["permute"] = (f".permute({_args(rev)})", lambda x, v: x.permute(*rev))
    ops["expand"] = (f"[:1].expand({_args(shape)})", lambda x, v: x[:1].expand(*shape))
    ops["view"] = (".view({})", lambda x, v: x.view(*v))
    return ops


def _default_view(shape: Sequence[int]) -> str:
    return _args(tuple(shape)[::-1] if len(shape) > 1 else (2, -1))


def torch_layout(shape: Sequence[int], strides: Sequence[int], offset: int,
                 storage_size: int) -> list[tuple[tuple[int, ...], int]]:
    """``layout`` as PyTorch answers it: ``torch.as_strided`` over ``torch.arange``."""
    view = torch.as_strided(torch.arange(storage_size), tuple(shape), tuple(strides), offset)
    return [(tuple(int(i) for i in index), int(view[index])) for index in itertools.product(*map(range, shape))]


def layout(shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> list[tuple[tuple[int, ...], int]]:
    """Every logical index of the view, in row-major order, with its storage position.

    Computed with your ``to_index`` (exercise 1.3) and ``index_to_position`` (1.2).

    Example::

        >>> layout((2, 2), (1, 2))          # a transposed 2x2
        [((0, 0), 0), ((0, 1), 2), ((1, 0), 1), ((1, 1), 3)]
    """
    out = []
    for ordinal in range(math.prod(shape)):
        index = tuple(int(i) for i in S.to_index(ordinal, shape))
        out.append((index, int(S.index_to_position(index, strides, offset))))
    return out


def check_header(shape: Sequence[int], strides: Sequence[int], offset: int, storage_size: int) -> None:
    """Raise ValueError, in words, unless the view fits the storage (plain arithmetic)."""
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) != len(strides):
        raise ValueError(f"shape {shape} has {len(shape)} dimensions but strides {strides} has "
                         f"{len(strides)}; give one stride per dimension")
    if min(shape + strides + (offset,)) < 0:
        raise ValueError("sizes, strides and offset must be non-negative")
    if math.prod(shape) > MAX_ELEMENTS:
        raise ValueError(f"{math.prod(shape)} elements is too many to draw (at most {MAX_ELEMENTS})")
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
    if math.prod(shape) and last >= storage_size:
        raise ValueError(f"strides {strides} with offset {offset} reach storage position {last}, past "
                         f"the end of the storage (positions 0..{storage_size - 1}); lower the strides "
                         "or offset, or grow the storage")


def _optional(fn: Callable, *args):
    """``fn(*args)``, or "(finish exercise N.M)" while it is a stub: the picture can do without."""
    try:
        out = fn(*args)
    except NotImplementedError as exc:
        return f"(finish exercise {stub_exercise_id(exc)})" if stub_exercise_id(exc) else "?"
    return tuple(out) if isinstance(out, (list, tuple)) else bool(out)


def _colour(pos: int, storage_size: int) -> str:
    """One hue per storage position, red (0) through violet (last), light enough to read."""
    return f"hsl({300 * pos / max(storage_size - 1, 1):.0f}, 80%, 78%)"


def message_html(text: str, kind: str = "error") -> str:
    """One line of text; ``kind`` is 'todo' (unfinished exercise), 'error' or 'warn'."""
    colour = "#b00020" if kind == "error" else "#8a5a00"
    return (f'<div class="mk-{kind}" style="color:{colour};font-family:sans-serif;margin:4px 0">'
            f'{html.escape(text)}</div>')


def _grids(cells: list, shape: tuple, storage_size: int) -> str:
    """One CSS grid per leading index; the last two dimensions are rows and columns."""
    groups: dict[tuple, list[str]] = {}
    for index, pos in cells:
        groups.setdefault(index[:-2], []).append(
            f'<div class="mk-cell" data-index="{_args(index)}" data-pos="{pos}" title="index {index} -> '
            f'storage position {pos}" style="{_BOX}border:1px solid #444;background:'
            f'{_colour(pos, storage_size)}">{pos}</div>')
    out = []
    for lead, divs in groups.items():
        caption = f'<div style="font:12px monospace;color:#555">[{_args(lead)}, :, :]</div>' if lead else ""
        out.append(f'<div style="margin-right:1.2em">{caption}<div class="mk-grid" style="display:grid;'
                   f'grid-template-columns:repeat({shape[-1] if shape else 1},32px);gap:2px">'
                   f'{"".join(divs)}</div></div>')
    return f'<div style="display:flex;flex-wrap:wrap;margin:6px 0">{"".join(out) or "(no elements)"}</div>'


def _strip(cells: list, storage_size: int) -> str:
    """The storage, one cell per element, coloured where some logical element reads it."""
    readers = Counter(pos for _, pos in cells)
    slots = []
    for p in range(storage_size):
        style = (f"border:1px solid #444;background:{_colour(p, storage_size)}" if readers[p]
                 else "border:1px dashed #bbb;background:#f6f6f6;color:#999")
        slots.append(f'<div class="mk-slot" data-pos="{p}" data-used="{int(p in readers)}" title="storage'
                     f'[{p}] = {p}, read by {readers[p]} element(s)" style="{_BOX}{style}">{p}</div>')
    return (f'<div style="font:12px sans-serif;color:#555;margin-top:8px">storage: positions 0..'
            f'{storage_size - 1} (torch.arange, so each value is its position)</div><div class="mk-strip" '
            f'style="display:flex;gap:2px;overflow-x:auto">{"".join(slots)}</div>')


def render_html(shape: Sequence[int], strides: Sequence[int], offset: int = 0,
                storage_size: int | None = None, call: str = "", warnings: Sequence[str] = (),
                torch_side: bool = False) -> str:
    r"""Draw a view of ``torch.arange(storage_size)``: header, logical grid(s), storage strip.

    Args:
        shape (sequence of ints): sizes of the view.
        strides (sequence of ints): storage step of each dimension.
        offset (int, optional): storage position of element ``(0, 0, ...)``. Default: ``0``
        storage_size (int, optional): elements in the storage. Default: just enough
        call (str, optional): the torch call that makes this view, shown verbatim. Default: ``""``
        warnings (sequence of str, optional): extra lines shown above the picture. Default: ``()``
        torch_side (bool, optional): draw PyTorch's answer instead of yours (while your
            exercises are unfinished). Default: ``False``

    Raises ValueError for a view that does not fit its storage, and whatever your
    exercises raise (NotImplementedError while a stub is unfinished).

    Example::

        >>> page = render_html((2, 3), (1, 2), 0, 6, "torch.arange(6).view(3, 2).t()")
        >>> 'data-index="1, 0" data-pos="1"' in page
        True
    """
    shape, strides = tuple(shape), tuple(strides)
    if storage_size is None:
        storage_size = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    check_header(shape, strides, offset, storage_size)
    oracle = torch.as_strided(torch.arange(storage_size), shape, strides, offset)
    if torch_side:
        cells = torch_layout(shape, strides, offset, storage_size)
        contiguous, natural = oracle.is_contiguous(), torch.empty(shape).stride()
        return (f'<div class="mk-picture mk-torch-side">{_header(shape, strides, offset, contiguous, natural, call)}'
                f'{_grids(cells, shape, storage_size)}{_strip(cells, storage_size)}</div>')
    cells = layout(shape, strides, offset)
    for index, pos in cells:
        if not 0 <= pos < storage_size:
            raise ValueError(f"index_to_position({index}, {strides}, {offset}) = {pos} is outside the "
                             f"storage (0..{storage_size - 1}); check exercise 1.2")
    contiguous, natural = _optional(S.is_contiguous, shape, strides), _optional(S.contiguous_strides, shape)
    warnings = list(warnings)
    wrong = [(i, p, t) for (i, p), t in zip(cells, oracle.flatten().tolist()) if p != t]
    if wrong:
        warnings.append("torch puts index {0} at position {2}; your to_index/index_to_position say {1}"
                        .format(*wrong[0]))
    if isinstance(contiguous, bool) and contiguous != oracle.is_contiguous():
        warnings.append(f"torch says is_contiguous() is {not contiguous}; yours says {contiguous} (1.6)")
    header = _header(shape, strides, offset, contiguous, natural, call)
    return (f'<div class="mk-picture">{header}{"".join(message_html(w, "warn") for w in warnings)}'
            f'{_grids(cells, shape, storage_size)}{_strip(cells, storage_size)}</div>')


def _header(shape: tuple, strides: tuple, offset: int, contiguous, natural, call: str) -> str:
    if contiguous is not True:
        contiguous = (f"{contiguous} &nbsp;<span style='color:#555;white-space:nowrap'>(contiguous "
                      f"strides would be {natural})</span>")
    return (f'<div class="mk-header" style="font:13px monospace"><b>shape</b> {shape} &nbsp; '
            f'<b>stride()</b> {strides} &nbsp; <b>storage_offset()</b> {offset} &nbsp; '
            f'<b>is_contiguous()</b> {contiguous}</div><div class="mk-call" style="font:13px '
            f'monospace;margin:4px 0"><code>{html.escape(call)}</code></div>')


def _op_view(shape: tuple[int, ...], key: str, view_as: tuple[int, ...], mine: bool = True) -> tuple:
    """(header from minikernel, header from torch, storage size, torch call) of an operation;
    ``mine=False``: torch's header twice (your exercises are not called)."""
    numel = math.prod(shape)
    if not shape or min(shape) < 0 or numel > MAX_ELEMENTS:
        raise ValueError(f"x needs at least one dimension, sizes >= 0 and at most {MAX_ELEMENTS} elements")
    code, fn = operations(shape)[key]
    call = f"torch.arange({numel})" + (f".view({_args(shape)})" if len(shape) > 1 else "")
    x = torch.arange(numel).view(shape)
    want = fn(x, view_as)                     # where torch refuses, its error is shown
    expected = (tuple(want.shape), want.stride(), want.storage_offset())
    if not mine:
        return expected, expected, numel, call + code.format(_args(view_as))
    yours = fn(Tensor.from_torch(x), view_as)  # your exercises at work
    header = (tuple(yours.shape), tuple(yours.stride()), yours.storage_offset())
    return header, expected, numel, call + code.format(_args(view_as))


class StrideExplorer(StaticView, W.VBox):
    """What ``stride_explorer`` returns; its controls are attributes (``op``, ``offset``, ...)."""

    static_name = "the stride explorer"

    def __init__(self, shape=(3, 4), op="none", strides=None, offset=0, storage=None):
        shape = tuple(shape)

        def text(value, description, **kw):
            return W.Text(value, description=description, continuous_update=False,
                          layout=W.Layout(width="14em"), **kw)

        self.mode = W.ToggleButtons(options=[("torch operation", "op"), ("as_strided", "strided")],
                                    value="op" if strides is None else "strided")
        self.base, self.view_as = text(_args(shape), "x shape"), text(_default_view(shape), "view as")
        self.op = W.Dropdown(description="operation", layout=W.Layout(width="22em"))
        self.shape = text(_args(shape), "shape")
        self.strides = text(_args(strides or ()), "strides", placeholder="contiguous")
        span = sum((n - 1) * s for n, s in zip(shape, strides or ()))
        size = storage or max(math.prod(shape), offset + 1 + span, 1)
        self.storage = W.BoundedIntText(size, min=1, max=MAX_ELEMENTS, description="storage",
                                        layout=W.Layout(width="12em"))
        self.offset = W.IntSlider(offset, min=0, max=max(size - 1, offset), description="offset")
        self.picture = W.HTML()
        for widget, name in ((self.picture, "view"), (self.op, "op"), (self.offset, "offset")):
            widget.add_class(f"mk-{name}")
        self._op_box = W.HBox([self.base, self.op, self.view_as])
        self._strided_box = W.VBox([W.HBox([self.shape, self.strides, self.storage]), self.offset])
        self._busy, self._last = False, None
        self._set_ops(shape, op)
        super().__init__([self.mode, self._op_box, self._strided_box, self.picture])
        self.add_class("mk-stride-explorer")
        for w in (self.mode, self.base, self.op, self.view_as, self.shape, self.strides, self.storage,
                  self.offset):
            w.observe(self._changed, "value")
        self._changed(None)

    def _set_ops(self, shape: tuple, keep: str) -> None:
        ops = operations(shape)
        if keep not in ops:
            raise ValueError(f"op {keep!r} is not one of {', '.join(ops)} for shape {shape}")
        self.op.options = [("x" + code.format("…"), key) for key, (code, _) in ops.items()]
        self.op.value = keep

    def _changed(self, change) -> None:
        """Any control moved: sync the others (without re-entering), then redraw."""
        if self._busy:
            return
        self._busy = True
        try:
            owner = change and change["owner"]
            if owner is self.base:
                try:
                    shape = parse_ints(self.base.value, "x shape")
                    self._set_ops(shape, self.op.value if self.op.value in operations(shape) else "none")
                    self.view_as.value = _default_view(shape)
                except ValueError:
                    pass  # _draw shows the error
            if owner is self.mode and self.mode.value == "strided" and self._last:
                (shape, strides, offset), size = self._last  # start from the operation's view
                self.shape.value, self.strides.value = _args(shape), _args(strides)
                self.storage.value, self.offset.max, self.offset.value = size, size - 1, offset
            self.offset.max = self._offset_room()
            self._op_box.layout.display = "" if self.mode.value == "op" else "none"
            self._strided_box.layout.display = "none" if self.mode.value == "op" else ""
            self.view_as.layout.display = "" if self.op.value == "view" else "none"
        finally:
            self._busy = False
        self.picture.value = self._draw()

    def _offset_room(self) -> int:
        """The slider's max: the largest offset that keeps the view inside the storage."""
        try:
            shape, strides = parse_ints(self.shape.value, "shape"), parse_ints(self.strides.value, "strides")
        except ValueError:
            return self.storage.value - 1
        span = sum((n - 1) * s for n, s in zip(shape, strides)) if strides else math.prod(shape) - 1
        return max(self.storage.value - 1 - (span if math.prod(shape) else 0), 0)

    def _draw(self) -> str:
        self._last = None
        try:
            return self._draw_side(mine=True)
        except NotImplementedError as exc:
            if not stub_exercise_id(exc):
                return message_html(f"NotImplementedError: {exc}")
            note = message_html(finish_message(exc, "to see yours here; meanwhile, PyTorch's:"), "todo")
            try:
                return note + self._draw_side(mine=False)
            except Exception as err:  # noqa: BLE001 - a readable line, never a traceback
                return note + message_html(f"{type(err).__name__}: {err}")
        except Exception as exc:  # a readable line, never a traceback
            return message_html(f"{type(exc).__name__}: {exc}")

    def _draw_side(self, mine: bool) -> str:
        """The picture drawn by your exercises (``mine``), or by PyTorch alone."""
        if self.mode.value == "op":
            header, expected, size, call = _op_view(parse_ints(self.base.value, "x shape"), self.op.value,
                                                    parse_ints(self.view_as.value, "view as"), mine)
            self._last = (header, size)
            warn = [] if header == expected else [
                f"torch gives (shape, stride, offset) {expected}; your minikernel gives {header}"]
            return render_html(*header, size, call, warn, torch_side=not mine)
        shape = parse_ints(self.shape.value, "shape")
        strides = parse_ints(self.strides.value, "strides") or tuple(
            S.contiguous_strides(shape) if mine else torch.empty(shape).stride())
        size, offset = self.storage.value, self.offset.value
        call = f"torch.as_strided(torch.arange({size}), {shape}, {strides}, {offset})"
        return render_html(shape, strides, offset, size, call, torch_side=not mine)


def stride_explorer(shape: Sequence[int] = (3, 4), op: str = "none", strides: Sequence[int] | None = None,
                    offset: int = 0, storage: int | None = None) -> StrideExplorer:
    r"""An interactive picture of how a view's header addresses its storage.

    Either pick an operation on ``x = torch.arange(numel).view(shape)`` (slicing,
    ``t()``, ``permute``, ``expand``, ``view``) or set shape, strides and offset
    directly (``torch.as_strided``). Each logical element is drawn in a grid (one
    grid per leading index for 3-D and up), coloured by the storage position it
    reads; the storage strip below uses the same colours.

    Args:
        shape (sequence of ints, optional): shape of ``x``. Default: ``(3, 4)``
        op (str, optional): one of ``"none"``, ``"[1:]"``, ``"[:, ::2]"``, ``"[:, 0]"``,
            ``"t()"`` (2-D only), ``"permute"``, ``"expand"``, ``"view"``. Default: ``"none"``
        strides (sequence of ints, optional): start in ``as_strided`` mode with these
            strides. Default: ``None`` (operation mode)
        offset (int, optional): storage offset in ``as_strided`` mode. Default: ``0``
        storage (int, optional): storage size in ``as_strided`` mode. Default: ``prod(shape)``,
            or more if the strides and offset reach further

    Returns:
        StrideExplorer: an ``ipywidgets.VBox`` with CSS class ``mk-stride-explorer``.

    Example::

        >>> from widgets import stride_explorer
        >>> stride_explorer((3, 4), op="t()")                              # doctest: +SKIP
        >>> stride_explorer((2, 3), strides=(1, 2), offset=1, storage=8)   # doctest: +SKIP
    """
    return StrideExplorer(shape, op, strides, offset, storage)
