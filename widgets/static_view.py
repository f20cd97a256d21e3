"""Static renderings stored in the notebooks, so a chapter reads well before it runs.

A notebook viewer (GitHub, nbviewer) or JupyterLab before the kernel runs cannot
draw a live widget, and JupyterLab does not draw an SVG of a notebook it does not
trust: each shows the next MIME type it can, and the stock ones are reprs
(``StrideExplorer(children=...)``, ``<IPython.core.display.SVG object>``).

* :class:`StaticView`, mixed into the course's widgets, adds ``text/html`` (the
  widget's pictures as they are now: its ``ipywidgets.HTML`` children in order)
  and a one-line ``text/plain`` to the widget's MIME bundle. A live kernel still
  draws the widget itself: JupyterLab prefers the widget view's MIME type.
* :class:`Picture` is an SVG with a PNG of the same drawing beside it (and a
  line of text): :func:`graph_picture` draws an autograd graph that way; without
  graphviz, a :class:`StoredPicture` (the stored drawing under a one-line note).
"""
from __future__ import annotations

import subprocess
from typing import Any

import ipywidgets as W

from .graph_render import (
    STORED_NOTE,
    GraphvizMissing,
    describe,
    dot_executable,
    note_html,
    render_svg,
    stored_graph_svg,
    to_dot,
)

#: MIME types every viewer draws without trusting the notebook.
SAFE_RICH = ("image/png", "image/jpeg", "text/html", "text/markdown")


def _pictures(widget: W.Widget) -> list[str]:
    """The HTML of ``widget``'s ``HTML`` descendants (and the text of its labels), in order."""
    if isinstance(widget, (W.HTML, W.HTMLMath)):
        return [widget.value] if widget.value else []
    if isinstance(widget, W.Label):
        return [f"<div>{widget.value}</div>"] if widget.value else []
    if isinstance(widget, W.Box):
        return [html for child in widget.children for html in _pictures(child)]
    return []


class StaticView:
    """Mixin for an ``ipywidgets.Box``: a static picture in the widget's MIME bundle."""

    #: what the widget is, for ``text/plain`` ("the stride explorer")
    static_name = "an interactive view"

    def static_html(self) -> str:
        """The widget's pictures as they are now, as one HTML block."""
        body = "\n".join(_pictures(self))  # type: ignore[arg-type]
        return (f'<div class="mk-static-view">{body}<div style="color:#777;font-size:11px">'
                f"(a still of {self.static_name}: run the notebook to use its controls)</div></div>")

    def static_text(self) -> str:
        return f"[{self.static_name}: run the notebook to use it]"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        data["text/plain"] = self.static_text()
        data["text/html"] = self.static_html()
        return data


class Picture:
    """A drawing as SVG and PNG, with a line of text for text-only viewers."""

    def __init__(self, svg: str, png: bytes | None, text: str):
        self.svg, self.png, self.text = svg, png, text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = {"image/svg+xml": self.svg, "text/plain": self.text}
        if self.png is not None:
            data["image/png"] = self.png
        return data


class Note:
    """A one-line note shown where a picture would be (graphviz missing), as HTML and text."""

    def __init__(self, text: str):
        self.text = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return {"text/html": note_html(self.text), "text/plain": self.text}


class StoredPicture:
    """A stored drawing (graphviz missing) under the one-line note that says so, as HTML and text."""

    def __init__(self, svg: str, text: str):
        self.svg, self.text = svg, text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return {"text/html": f'<div class="mk-stored-picture">{note_html(STORED_NOTE)}{self.svg}</div>',
                "text/plain": f"{STORED_NOTE} {self.text}"}


def dot_png(source: str) -> bytes:
    """``dot -Tpng`` on ``source`` (graphviz); GraphvizMissing or RuntimeError naming the fix if it fails."""
    exe = dot_executable()
    done = subprocess.run([exe, "-Tpng", "-Gdpi=96"], input=source.encode(), capture_output=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed (exit {done.returncode}): {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def graph_picture(root: Any, params: Any = None, title: str = "") -> Picture | StoredPicture | Note:
    """The backward graph behind ``root`` (see ``graph_svg``) as SVG and PNG.

    Without graphviz, the course's stored drawing of the same graph under a one-line note
    (:class:`StoredPicture`, chapters/figures/); for a graph the course did not store, a
    :class:`Note` saying how to install graphviz, and which nodes the graph has.
    """
    graph = describe(root, params)
    names = [n.name for n in graph.nodes]
    text = f"[autograd graph, {len(names)} nodes: {', '.join(names)}]"
    try:
        svg = render_svg(graph, None, set(), title, "g")
        png = dot_png(to_dot(graph, None, set(), title, "g"))
    except GraphvizMissing as exc:
        stored = stored_graph_svg(graph, title)
        return Note(f"{exc} {text}") if stored is None else StoredPicture(stored, text)
    return Picture(svg, png, text)
