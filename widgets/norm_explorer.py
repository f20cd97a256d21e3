"""Normalization explorer: which elements each BatchNorm, LayerNorm or InstanceNorm statistic averages.

A small ``(N, C, L)`` tensor — N samples, C channels, length L — is drawn as N
grids of C rows by L columns. Pick a normalization and one of its statistics: the
cells that statistic averages over light up, and a table lists every statistic's
mean and (biased) variance:

=============  ================  ====================================  ===========
kind           reduces dims      one statistic per                     torch call
=============  ================  ====================================  ===========
BatchNorm      (0, 2): N and L   channel ``c``                         ``F.batch_norm(x, None, None, training=True)``
LayerNorm      (1, 2): C and L   sample ``n``                          ``F.layer_norm(x, (C, L))``
InstanceNorm   (2,): L           sample and channel ``(n, c)``         ``F.instance_norm(x)``
=============  ================  ====================================  ===========

The statistics are computed by *your* ``var_mean`` (exercise 5.1, ``correction=0``
as every normalization layer uses) and compared with ``torch.var_mean``; while 5.1
is unfinished the widget says so instead of drawing numbers.

``render_html`` is a plain function (HTML with ``data-`` attributes), testable
without a browser.
"""
from __future__ import annotations

import html
import itertools
from dataclasses import dataclass
from typing import Sequence

import ipywidgets as W
import torch

from minikernel.course.exercise import finish_message
from minikernel.norm import var_mean
from minikernel.tensor import Tensor

from .reference_side import references
from .static_view import StaticView

Group = tuple[int, ...]  #: the kept coordinates of one statistic: (c,), (n,) or (n, c)
MAX_SIDE = 6  #: the largest N, C or L drawn


@dataclass(frozen=True)
class Kind:
    """One normalization: the dimensions its statistics reduce over, and the torch call it matches."""

    name: str
    dims: tuple[int, ...]
    per: str
    torch_call: str

    @property
    def kept(self) -> tuple[int, ...]:
        return tuple(d for d in range(3) if d not in self.dims)


KINDS = {
    "BatchNorm": Kind("BatchNorm", (0, 2), "channel c", "F.batch_norm(x, None, None, training=True)"),
    "LayerNorm": Kind("LayerNorm", (1, 2), "sample n", "F.layer_norm(x, (C, L))"),
    "InstanceNorm": Kind("InstanceNorm", (2,), "sample n and channel c", "F.instance_norm(x)"),
}
_AXES = "ncl"
# Table cells: padded columns, numbers right-aligned under their headings (without
# padding the columns ran together).
_LEFT = "padding:1px 10px 1px 0;text-align:left"
_RIGHT = "padding:1px 10px;text-align:right"


def sample(shape: Sequence[int] = (2, 3, 4), seed: int = 0) -> torch.Tensor:
    """The explorer's float64 ``(N, C, L)`` tensor: seeded normal values rounded to one decimal."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != 3 or not all(1 <= s <= MAX_SIDE for s in shape):
        raise ValueError(f"the explorer draws an (N, C, L) tensor with sides 1..{MAX_SIDE}, got shape {shape}")
    g = torch.Generator().manual_seed(seed)
    return torch.round(10 * torch.randn(shape, generator=g, dtype=torch.float64)) / 10


def groups(kind: str, shape: Sequence[int]) -> list[Group]:
    """Every statistic of ``kind`` on ``shape``, in order: ``[(0,), (1,), ...]`` or ``[(0, 0), (0, 1), ...]``."""
    k = KINDS[kind]
    return list(itertools.product(*(range(shape[d]) for d in k.kept)))


def members(kind: str, shape: Sequence[int], group: Group) -> list[tuple[int, int, int]]:
    """The ``(n, c, l)`` cells that statistic ``group`` of ``kind`` averages over."""
    k = KINDS[kind]
    return [i for i in itertools.product(*(range(s) for s in shape))
            if tuple(i[d] for d in k.kept) == tuple(group)]


def statistics(x: torch.Tensor, kind: str) -> dict[Group, tuple[float, float]]:
    """``{group: (mean, biased var)}`` by your ``var_mean`` (exercise 5.1).

    Raises the stub's NotImplementedError while 5.1 is unfinished.
    """
    k = KINDS[kind]
    var, mean = var_mean(Tensor.from_torch(x), k.dims, correction=0)
    var, mean = var.to_torch(), mean.to_torch()
    return {g: (float(mean[g]), float(var[g])) for g in groups(kind, x.shape)}


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _hue(index: int, count: int) -> int:
    return round(360 * index / max(count, 1))


def render_html(x: torch.Tensor, kind: str = "BatchNorm", group: Group | None = None) -> str:
    r"""Draw ``x`` with the cells of statistic ``group`` of ``kind`` highlighted, and the statistics table.

    Args:
        x (Tensor): a torch ``(N, C, L)`` tensor (see ``sample``).
        kind (str): ``"BatchNorm"``, ``"LayerNorm"`` or ``"InstanceNorm"``. Default: ``"BatchNorm"``
        group (tuple of ints, optional): the statistic to highlight, e.g. ``(1,)`` or
            ``(0, 2)``; one of ``groups(kind, x.shape)``. Default: the first.

    Returns:
        str: HTML. The root has ``data-kind`` and ``data-dims``; each cell
        ``data-n``, ``data-c``, ``data-l``, ``data-value``, ``data-group`` (its
        statistic, comma-separated) and ``data-selected`` ("1" in the highlighted
        group); each row of the table ``data-group``, ``data-count``,
        ``data-mean``, ``data-var`` (yours) and ``data-ok`` ("1" where they agree
        with ``torch.var_mean(x, dims, correction=0)``).

    Raises:
        NotImplementedError: exercise 5.1 is unfinished (the widget catches it).

    Example::

        >>> page = render_html(sample((2, 3, 4)), "LayerNorm", (1,))
        >>> page.count('data-selected="1"')   # sample 1: all of its C x L cells
        12
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    k = KINDS[kind]
    shape = tuple(x.shape)
    all_groups = groups(kind, shape)
    group = all_groups[0] if group is None else tuple(group)
    if group not in all_groups:
        raise ValueError(f"{kind} on shape {shape} has statistics {all_groups[0]} .. {all_groups[-1]}; got {group}")
    stats = statistics(x, kind)
    t_var, t_mean = torch.var_mean(x, k.dims, correction=0)
    order = {g: i for i, g in enumerate(all_groups)}
    blocks = []
    for n in range(shape[0]):
        rows = []
        for c in range(shape[1]):
            cells = []
            for l in range(shape[2]):
                g = tuple((n, c, l)[d] for d in k.kept)
                chosen = g == group
                colour = (f"hsl({_hue(order[g], len(all_groups))}, 70%, {55 if chosen else 92}%)")
                border = "2px solid #111" if chosen else "1px solid #ccc"
                cells.append(f'<td class="mk-cell" data-n="{n}" data-c="{c}" data-l="{l}" '
                             f'data-value="{_fmt(float(x[n, c, l]))}" data-group="{",".join(map(str, g))}" '
                             f'data-selected="{int(chosen)}" style="width:38px;height:26px;text-align:center;'
                             f'font:12px monospace;background:{colour};border:{border}">{_fmt(float(x[n, c, l]))}</td>')
            rows.append(f'<tr><th style="font:11px sans-serif;color:#555;padding-right:4px">c={c}</th>'
                        f'{"".join(cells)}</tr>')
        blocks.append(f'<div style="display:inline-block;margin:0 12px 6px 0;vertical-align:top">'
                      f'<div style="font:bold 12px sans-serif">sample n={n}</div>'
                      f'<table style="border-collapse:collapse">{"".join(rows)}</table></div>')
    table_rows = []
    for g in all_groups:
        mean, var = stats[g]
        ok = abs(mean - float(t_mean[g])) <= 1e-9 + 1e-9 * abs(float(t_mean[g])) and \
            abs(var - float(t_var[g])) <= 1e-9 + 1e-9 * abs(float(t_var[g]))
        label = ", ".join(f"{_AXES[d]}={v}" for d, v in zip(k.kept, g))
        weight = "bold" if g == group else "normal"
        table_rows.append(
            f'<tr class="mk-stat" data-group="{",".join(map(str, g))}" data-count="{len(members(kind, shape, g))}" '
            f'data-mean="{mean!r}" data-var="{var!r}" data-ok="{int(ok)}" style="font-weight:{weight}">'
            f'<td style="{_LEFT}">{label}</td><td style="{_RIGHT}">{len(members(kind, shape, g))}</td>'
            f'<td style="{_RIGHT}">{_fmt(mean)}</td><td style="{_RIGHT}">{_fmt(var)}</td>'
            f'<td style="{_LEFT};color:{"#1a7f37" if ok else "#cf222e"}">{"ok" if ok else "DIFFERENT from torch"}'
            '</td></tr>')
    dims = ", ".join(f"{d} ({_AXES[d].upper()})" for d in k.dims)
    caption = (f'<div style="font:13px sans-serif;margin:4px 0"><b>{kind}</b>: one statistic per '
               f'{html.escape(k.per)}, averaged over dims {dims} — <code>{html.escape(k.torch_call)}</code>; '
               f'{len(all_groups)} statistics of {len(members(kind, shape, group))} elements each</div>')
    table = ('<table class="mk-stats" style="font:12px monospace;border-collapse:collapse;margin-top:4px">'
             f'<tr><th style="{_LEFT}">statistic</th><th style="{_RIGHT}">count</th><th style="{_RIGHT}">mean</th>'
             f'<th style="{_RIGHT}">var (biased)</th><th style="{_LEFT}">vs torch</th></tr>'
             + "".join(table_rows) + "</table>")
    return (f'<div class="mk-norm" data-kind="{kind}" data-dims="{",".join(map(str, k.dims))}">{caption}'
            f'<div>{"".join(blocks)}</div>{table}</div>')


def message_html(text: str, kind: str = "todo") -> str:
    colour = "#8a5a00" if kind == "todo" else "#b00020"
    return (f'<div class="mk-{kind}" style="color:{colour};font-family:sans-serif;margin:4px 0">'
            f'{html.escape(text)}</div>')


def _group_label(kind: str, g: Group) -> str:
    return ", ".join(f"{_AXES[d]}={v}" for d, v in zip(KINDS[kind].kept, g))


class NormExplorer(StaticView, W.VBox):
    """What ``norm_explorer`` returns: ``.kind`` and ``.group`` (Dropdowns), ``.picture`` (HTML), ``.x``."""

    static_name = "the normalization explorer"

    def __init__(self, shape: Sequence[int] = (2, 3, 4), kind: str = "BatchNorm", seed: int = 0):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.x = sample(shape, seed)
        self.kind = W.Dropdown(options=list(KINDS), value=kind, description="normalize")
        self.group = W.Dropdown(description="statistic")
        self.picture = W.HTML()
        self._set_groups()
        self.kind.observe(self._on_kind, "value")
        self.group.observe(self._draw, "value")
        self._draw()
        super().__init__([W.HBox([self.kind, self.group]), self.picture])
        self.add_class("mk-norm-explorer")

    def _set_groups(self) -> None:
        options = [(_group_label(self.kind.value, g), g) for g in groups(self.kind.value, self.x.shape)]
        self.group.options = options
        self.group.value = options[0][1]  # a Dropdown given new options does not pick one itself

    def _on_kind(self, change=None) -> None:
        self._set_groups()
        self._draw()

    def _draw(self, change=None) -> None:
        if self.group.value is None:
            return
        try:
            self.picture.value = render_html(self.x, self.kind.value, self.group.value)
        except NotImplementedError as exc:
            self.picture.value = message_html(
                finish_message(exc, "to see the statistics") or f"NotImplementedError: {exc}")
            try:  # meanwhile, the reference's statistics, labelled as such
                with references():
                    page = render_html(self.x, self.kind.value, self.group.value)
            except (LookupError, NotImplementedError):
                return
            self.picture.value = (message_html(finish_message(exc, "to see yours; meanwhile, the course's "
                                                              "reference solution's:") or str(exc))
                                  + f'<div class="mk-reference-side">{page}</div>')
        except Exception as exc:  # a readable line, never a traceback
            self.picture.value = message_html(f"{type(exc).__name__}: {exc}", "error")


def norm_explorer(shape: Sequence[int] = (2, 3, 4), kind: str = "BatchNorm", seed: int = 0) -> NormExplorer:
    r"""An interactive view of which elements a normalization's statistics average over.

    Args:
        shape (tuple of 3 ints, optional): ``(N, C, L)``, each side 1..6. Default: ``(2, 3, 4)``
        kind (str, optional): ``"BatchNorm"``, ``"LayerNorm"`` or ``"InstanceNorm"``. Default: ``"BatchNorm"``
        seed (int, optional): seed of the tensor's values. Default: ``0``

    Returns:
        NormExplorer: an ``ipywidgets.VBox`` (CSS class ``mk-norm-explorer``); change
        ``.kind`` or ``.group`` (``Dropdown``\ s; ``.group``'s values are tuples such as
        ``(1,)``) and ``.picture`` redraws.

    Example::

        >>> from widgets import norm_explorer
        >>> norm_explorer()                                   # doctest: +SKIP
        >>> norm_explorer((4, 2, 3), kind="InstanceNorm")     # doctest: +SKIP
    """
    return NormExplorer(shape, kind, seed)
