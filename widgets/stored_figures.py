"""Chapter 03's drawings stored in the repository, for machines without graphviz's ``dot``.

Every SVG that ``dot`` draws while chapter 03 runs is kept in ``chapters/figures/``
under the sha256 of its graphviz text: ``<key>.dot`` (the text) and ``<key>.svg``
(``dot``'s drawing of it). Without ``dot`` a picture cell builds the same text, finds
the stored drawing by that key and shows it with a one-line note; a graph the course
did not store gets the note alone. The text of a graph does not depend on the
learner's code (only on the expression), so the stored drawing is the learner's graph.

``python -m widgets.stored_figures_build`` runs chapter 03 with ``dot`` and writes the
folder again: while ``MINIKERNEL_RECORD_FIGURES`` names a folder, each drawing is
written there (:func:`record`).
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from pathlib import Path
from typing import Iterator, Optional

FIGURES = Path(__file__).resolve().parents[1] / "chapters" / "figures"
RECORD_VAR = "MINIKERNEL_RECORD_FIGURES"
_ANSWERING = contextvars.ContextVar("minikernel_stored_figures", default=False)


def key(source: str) -> str:
    """The file name stem of the drawing of ``source``: the first 20 hex digits of its sha256."""
    return hashlib.sha256(source.encode()).hexdigest()[:20]


def lookup(source: str, folder: Optional[Path] = None) -> Optional[str]:
    """The stored SVG of the graphviz text ``source`` (in ``folder``, default ``FIGURES``), None if there is none."""
    path = (folder or FIGURES) / f"{key(source)}.svg"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def record(source: str, svg: str) -> None:
    """Store ``svg`` as the drawing of ``source`` in the folder ``MINIKERNEL_RECORD_FIGURES`` names (if set)."""
    folder = os.environ.get(RECORD_VAR)
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    stem = Path(folder) / key(source)
    stem.with_suffix(".dot").write_text(source, encoding="utf-8")
    stem.with_suffix(".svg").write_text(svg, encoding="utf-8")


def recording() -> bool:
    """Whether drawings are being recorded (``MINIKERNEL_RECORD_FIGURES`` is set)."""
    return bool(os.environ.get(RECORD_VAR))


@contextlib.contextmanager
def answering() -> Iterator[None]:
    """While inside, a missing ``dot`` is answered from the stored drawings (see ``graph_render.run_dot``)."""
    token = _ANSWERING.set(True)
    try:
        yield
    finally:
        _ANSWERING.reset(token)


def is_answering() -> bool:
    """Whether the caller is inside :func:`answering`."""
    return _ANSWERING.get()
