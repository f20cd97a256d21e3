"""The dispatch trace (chapter 09): one call, the keys it passes and the kernel it lands on,
PyTorch's beside minikernel's.

PyTorch's side is read from PyTorch itself, without running anything: the call's key
set (``torch._C._dispatch_keys`` of its tensors, plus the thread-local include set,
minus the exclude set) walked highest first through the operator's computed dispatch
table (``torch._C._dispatch_dump_table``), where each key's entry says whether it is
a kernel, a backend fallback, or fallthrough. minikernel's side is recorded while the
call runs (``minikernel.dispatch.trace``). Until chapter 02's kernels are written,
minikernel's trace still reaches the backend and says which exercise it waits for.
"""
from __future__ import annotations

import html
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Callable, Optional

import ipywidgets as W
import torch

import minikernel as mk
from minikernel import dispatch as D
from minikernel.course.notebook_display import stub_id_in

from .static_view import StaticView

#: Torch keys that wrap a layer and then call the keys below (the others end the call).
_WRAPPERS = ("Autocast", "Autograd", "Python", "PythonTLSSnapshot", "ADInplaceOrView", "BackendSelect")


@dataclass(frozen=True)
class Row:
    key: str
    what: str       #: "kernel", "fallback", "fallthrough", "autograd kernel", ...
    detail: str = ""


def _names(keyset) -> list[str]:
    text = str(keyset)
    return [n.strip() for n in text[text.index("(") + 1:text.rindex(")")].split(",") if n.strip()]


def torch_path(op: str, *tensors: torch.Tensor) -> list[Row]:
    """The keys ``op`` (``"aten::add.Tensor"``) visits for these tensors under the current thread-local
    state, highest first, from torch's dispatch table; ends at the first key that does not wrap."""
    keys: set[str] = set()
    for t in tensors:
        keys |= set(_names(torch._C._dispatch_keys(t)))
    keys |= set(_names(torch._C._dispatch_tls_local_include_set()))
    keys -= set(_names(torch._C._dispatch_tls_local_exclude_set()))
    table = {}
    for line in torch._C._dispatch_dump_table(op).splitlines():
        key, _, rest = line.partition(": ")
        table[key] = rest
    rows = []
    for key in _priority(keys):
        entry = table.get(key, "")
        if not entry or entry.startswith("[None]"):
            continue
        kind = entry[entry.rfind("[") + 1:entry.rfind("]")] if "[" in entry else "kernel"
        if entry.startswith("fallthrough"):
            rows.append(Row(key, "fallthrough"))
            continue
        rows.append(Row(key, kind))
        if not any(key.startswith(w) for w in _WRAPPERS):
            break
    return rows


def _priority(keys: set[str]) -> list[str]:
    """Torch's keys, highest priority first (torch prints a key set lowest first)."""
    ks = None
    for k in keys:
        one = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, k))
        ks = one if ks is None else ks | one
    return list(reversed(_names(ks))) if ks is not None else []


def minikernel_path(call: Callable[..., object], args: tuple = ()) -> tuple[list[Row], Optional[str]]:
    """Run ``call(*args)`` under ``minikernel.dispatch.trace``: its steps, and the exercise it waits for,
    if any. Make the tensors in ``args`` before: a factory call goes through the dispatcher too."""
    waiting = None
    with D.trace() as steps:
        try:
            call(*args)
        except NotImplementedError as err:
            waiting = stub_id_in(err)
    return [Row(s.key, s.how, s.kernel) for s in steps], waiting


@dataclass
class Scenario:
    text: str
    torch_op: str
    torch_args: Callable[[], tuple]
    mk_args: Callable[[], tuple]
    mk_call: Callable[..., object]
    context: Callable[[], list] = lambda: []


def _t(requires_grad=False):
    return torch.ones(2, 2, requires_grad=requires_grad)


def _m(requires_grad=False):
    return mk.ones(2, 2, requires_grad=requires_grad)


class _Quiet(torch.utils._python_dispatch.TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


SCENARIOS: dict[str, Scenario] = {
    "a + b": Scenario("a + b", "aten::add.Tensor", lambda: (_t(), _t()), lambda: (_m(), _m()),
                      lambda a, b: a + b),
    "a + b, a requires grad": Scenario("a + b", "aten::add.Tensor", lambda: (_t(True), _t()),
                                       lambda: (_m(True), _m()), lambda a, b: a + b),
    "a.mul_(b)": Scenario("a.mul_(b)", "aten::mul_.Tensor", lambda: (_t(), _t()), lambda: (_m(), _m()),
                          lambda a, b: a.mul_(b)),
    "a @ b under a dispatch mode": Scenario(
        "a @ b", "aten::mm", lambda: (_t(), _t()), lambda: (_m(), _m()), lambda a, b: a @ b,
        context=lambda: [_Quiet(), D.DispatchMode()]),
    "a @ b under autocast": Scenario(
        "a @ b", "aten::mm", lambda: (_t(), _t()), lambda: (_m(), _m()), lambda a, b: a @ b,
        context=lambda: [torch.autocast("cpu"), D.include_keys(D.DispatchKey.Autocast)]),
}


def paths(name: str) -> tuple[list[Row], list[Row], Optional[str]]:
    """(torch's rows, minikernel's rows, the exercise minikernel waits for) of one scenario."""
    s = SCENARIOS[name]
    args = s.mk_args()
    with ExitStack() as stack:
        for ctx in s.context():
            stack.enter_context(ctx)
        theirs = torch_path(s.torch_op, *s.torch_args())
        ours, waiting = minikernel_path(s.mk_call, args)
    return theirs, ours, waiting


_COLOURS = {"fallthrough": "#999", "kernel": "#1a7f37", "autograd kernel": "#8250df",
            "backend fallback": "#0969da", "fallback": "#0969da"}


def _column(title: str, rows: list[Row], note: str = "") -> str:
    items = "".join(
        f'<li data-key="{html.escape(r.key)}" data-what="{html.escape(r.what)}" '
        f'style="color:{_COLOURS.get(r.what, "#1a7f37")}"><b>{html.escape(r.key)}</b> — {html.escape(r.what)}'
        f'{(" · " + html.escape(r.detail)) if r.detail else ""}</li>' for r in rows)
    return (f'<div style="flex:1;min-width:18em"><div style="font-weight:bold">{html.escape(title)}</div>'
            f'<ol style="margin:4px 0 0 0">{items}</ol><div style="color:#9a6700">{html.escape(note)}</div></div>')


def render_html(name: str) -> str:
    theirs, ours, waiting = paths(name)
    note = f"the CPU kernel waits for exercise {waiting}" if waiting else ""
    return (f'<div class="mk-dispatch-trace" style="font-family:monospace;font-size:12px">'
            f'<div>{html.escape(SCENARIOS[name].text)} — highest key first; grey keys fall through</div>'
            f'<div style="display:flex;gap:2em">{_column("PyTorch (" + SCENARIOS[name].torch_op + ")", theirs)}'
            f'{_column("minikernel", ours, note)}</div></div>')


class DispatchTrace(StaticView, W.VBox):
    """What ``dispatch_trace`` returns: a ``scenario`` dropdown over an HTML ``picture``."""

    static_name = "the dispatch trace"

    def __init__(self, scenario: str = "a + b"):
        if scenario not in SCENARIOS:
            raise ValueError(f"scenario {scenario!r} is not one of: {', '.join(SCENARIOS)}")
        self.scenario = W.Dropdown(options=list(SCENARIOS), value=scenario, description="call",
                                   layout=W.Layout(width="26em"))
        self.picture = W.HTML(render_html(scenario))
        super().__init__([self.scenario, self.picture])
        self.add_class("mk-dispatch-trace")
        self.scenario.observe(lambda change: setattr(self.picture, "value", render_html(change["new"])), "value")


def dispatch_trace(scenario: str = "a + b") -> DispatchTrace:
    """One call's way through the dispatcher, PyTorch's beside minikernel's.

    Args:
        scenario (str, optional): one of ``"a + b"``, ``"a + b, a requires grad"``,
            ``"a.mul_(b)"``, ``"a @ b under a dispatch mode"``, ``"a @ b under autocast"``.
            Default: ``"a + b"``

    Example::

        >>> from widgets import dispatch_trace
        >>> dispatch_trace("a.mul_(b)")   # doctest: +SKIP
    """
    return DispatchTrace(scenario)
