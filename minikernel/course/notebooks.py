"""``python -m minikernel notebooks [NN ...]``: rebuild chapters/*.ipynb from the .py sources.

For each ``chapters/NN_topic.py`` (jupytext percent format, the source of truth):
convert to a notebook, execute it top to bottom with every reference switched on
(``MINIKERNEL_SOLUTIONS=all``) in a fresh kernel, then strip volatile metadata but
keep outputs and execution counts — the stored outputs nbval compares against —
and the widgets' state (nbclient saves it; JupyterLab draws saved widgets before
the notebook runs).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
CELL_TIMEOUT_S = 600
#: The last line of a grade table: "9/9 passed".
_GRADE_TOTAL = re.compile(r"^(\d+)/(\d+) passed$")


def failed_grade_cells(notebook) -> list[str]:
    """The cells calling ``mk.grade(...)`` whose stored table is not all PASS.

    With every reference switched on each exercise passes, so such a table is left over
    from a run beside a half-edited file; nbval would then expect the failure and report
    the live, passing table as the difference."""
    found = []
    for n, cell in enumerate((c for c in notebook.cells if c.cell_type == "code"), 1):
        if "mk.grade(" not in cell.source:
            continue
        tables = [o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", [])]
        last = [t.strip().splitlines()[-1] for t in tables if t.strip()]
        totals = [m for line in last if (m := _GRADE_TOTAL.match(line))]
        if not totals or any(m.group(1) != m.group(2) for m in totals):
            found.append(f"code cell {n} ({cell.source.strip()[:40]}): {last[-1] if last else 'no grade table'}")
    return found


def sources(selected: list[str] | None = None) -> list[Path]:
    """The chapter sources, all or those whose number prefix is in ``selected``."""
    found = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))
    if selected:
        found = [p for p in found if p.name[:2] in {s.zfill(2) for s in selected}]
    return found


def build(source: Path) -> Path:
    """Execute ``source`` into its paired .ipynb and return the notebook's path."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    target = source.with_suffix(".ipynb")
    notebook = jupytext.read(source)
    env_before = os.environ.get("MINIKERNEL_SOLUTIONS")
    os.environ["MINIKERNEL_SOLUTIONS"] = "all"  # the kernel inherits this environment
    try:
        NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                       resources={"metadata": {"path": str(CHAPTERS)}}).execute()
    finally:
        if env_before is None:
            os.environ.pop("MINIKERNEL_SOLUTIONS")
        else:
            os.environ["MINIKERNEL_SOLUTIONS"] = env_before
    if failed := failed_grade_cells(notebook):
        raise RuntimeError(f"{source.name}: not written, a grade cell does not pass with every reference on: "
                           f"{'; '.join(failed)}. Is a file being edited? Run `make notebooks` again after.")
    nbformat.write(notebook, target)
    # keep outputs and execution counts (nbval compares them) and the widgets' saved
    # state (JupyterLab draws the widgets from it before the kernel runs); drop the rest
    subprocess.run([sys.executable, "-m", "nbstripout", "--keep-output", "--keep-count",
                    "--keep-metadata-keys", "metadata.widgets", str(target)], check=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel notebooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers, e.g. 01 (default: all)")
    args = parser.parse_args(argv)
    chosen = sources(args.chapters)
    if not chosen:
        print(f"no chapter sources match {args.chapters} in {CHAPTERS}", file=sys.stderr)
        return 2
    for source in chosen:
        start = time.perf_counter()
        target = build(source)
        print(f"{target.relative_to(ROOT)}: executed in {time.perf_counter() - start:.1f} s")
    return 0
