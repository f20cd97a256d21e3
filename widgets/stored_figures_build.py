"""``python -m widgets.stored_figures_build``: draw chapter 03's pictures again into chapters/figures/.

Runs chapter 03 (``chapters/03_autograd_graphs.py``, every reference on, its grade cell
left out: it draws nothing) in a fresh kernel with graphviz's ``dot`` on PATH and
``MINIKERNEL_RECORD_FIGURES`` pointing at an empty folder, so every drawing the
chapter makes is recorded (``widgets.stored_figures``); then the folder's drawings
replace those in chapters/figures/. Run it after changing what chapter 03 draws, or
how it is drawn (``graph_render.to_dot``), and commit the folder.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import jupytext
from nbclient import NotebookClient

from .stored_figures import FIGURES, RECORD_VAR

CHAPTER = FIGURES.parent / "03_autograd_graphs.py"
CELL_TIMEOUT_S = 600


def run_chapter(record_into: Path, chapter: Path = CHAPTER) -> None:
    """Execute ``chapter`` (without its grade cell) with every drawing recorded into ``record_into``."""
    notebook = jupytext.read(chapter)
    notebook.cells = [c for c in notebook.cells if not (c.cell_type == "code" and "mk.grade(" in c.source)]
    saved = {name: os.environ.get(name) for name in (RECORD_VAR, "MINIKERNEL_SOLUTIONS")}
    os.environ.update({RECORD_VAR: str(record_into), "MINIKERNEL_SOLUTIONS": "all"})  # the kernel inherits them
    try:
        NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                       resources={"metadata": {"path": str(chapter.parent)}}).execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def replace_figures(recorded: Path, target: Path = FIGURES) -> tuple[int, int]:
    """Make ``target`` hold exactly the drawings in ``recorded``; (written, removed) file counts."""
    target.mkdir(parents=True, exist_ok=True)
    new = {p.name for p in recorded.iterdir() if p.suffix in (".dot", ".svg")}
    removed = [p for p in target.iterdir() if p.suffix in (".dot", ".svg") and p.name not in new]
    for path in removed:
        path.unlink()
    for name in sorted(new):
        shutil.copyfile(recorded / name, target / name)
    return len(new), len(removed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m widgets.stored_figures_build",
                                     description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    if shutil.which("dot") is None:
        print("graphviz's `dot` is not on PATH: install graphviz (`sudo apt install graphviz`, "
              "`brew install graphviz` or `conda install graphviz`) to draw the pictures", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="minikernel-figures-") as tmp:
        run_chapter(Path(tmp))
        written, removed = replace_figures(Path(tmp))
    print(f"{FIGURES.relative_to(CHAPTER.parents[1])}: {written // 2} drawings written, "
          f"{removed} stale files removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
