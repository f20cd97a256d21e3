"""Your notebooks: copies of the chapters in ``my-notebooks/``, which git ignores.

The lab opens these copies, never ``chapters/`` itself, so running and saving a
chapter changes no file of the course: ``git pull`` (``make update``) brings course
updates in without a conflict. Each copy is made on the lab's first start:

* without the jupytext pairing of the course's notebooks, so saving it writes no
  ``.py`` twin;
* trusted (signed in Jupyter's notebook-signature database, as ``jupyter trust``
  does, at every start), so its stored pictures and widgets show, and the server
  has no warning.

A later start copies new chapters, and refreshes a copy that you never saved when
its chapter changed in the course; a copy you saved is kept (``sync`` says so: delete
it to get the course's new version next start). ``.course.json`` in the folder
remembers what was copied.

Standard library only, except the signing (``nbformat``, skipped without it).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

FOLDER = "my-notebooks"
RECORD = ".course.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def learner_copy(source: bytes) -> bytes:
    """A chapter's notebook as the learner's copy: the same cells, no jupytext pairing."""
    notebook = json.loads(source)
    notebook.get("metadata", {}).pop("jupytext", None)
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode()


def _trust(paths: list[Path]) -> None:
    """Sign ``paths`` in Jupyter's signature database (``jupyter trust``), where not yet."""
    try:
        import nbformat
        from nbformat.sign import NotebookNotary
    except ImportError:
        return
    notary = NotebookNotary()
    for path in paths:
        try:
            notebook = nbformat.read(path, as_version=4)
            if not notary.check_signature(notebook):
                notary.sign(notebook)
        except Exception:  # noqa: BLE001 - an unsigned copy only shows a "not trusted" warning
            continue


def sync(root: Path) -> list[str]:
    """Make or refresh the copies of ``root/chapters/NN_*.ipynb`` in ``root/my-notebooks``;
    one line for each thing worth saying (nothing on a start that changed nothing)."""
    folder = root / FOLDER
    folder.mkdir(exist_ok=True)
    record_path = folder / RECORD
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        record = {}
    made, refreshed, kept = [], [], []
    for chapter in sorted((root / "chapters").glob("[0-9][0-9]_*.ipynb")):
        source = chapter.read_bytes()
        copy = folder / chapter.name
        seen = record.get(chapter.name, {})
        if copy.exists():
            current = _sha(copy.read_bytes())
            if seen.get("from") == _sha(source):
                continue  # the course's version has not changed
            if seen and current != seen.get("copy"):
                if seen.get("kept") != _sha(source):
                    kept.append(chapter.name)
                    record[chapter.name] = {**seen, "kept": _sha(source)}
                continue  # the learner saved it: theirs
        (refreshed if copy.exists() else made).append(chapter.name)
        data = learner_copy(source)
        copy.write_bytes(data)
        record[chapter.name] = {"from": _sha(source), "copy": _sha(copy.read_bytes())}
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    _trust(sorted(folder.glob("[0-9][0-9]_*.ipynb")))  # every start: the database may be new
    lines = []
    if made:
        lines.append(f"made your copies of {len(made)} chapter(s) in {FOLDER}/ (git ignores them; "
                     "chapters/ stays the course's)")
    if refreshed:
        lines.append(f"updated your unsaved copies of {', '.join(refreshed)} (the course changed them)")
    for name in kept:
        lines.append(f"the course changed chapters/{name}; your saved {FOLDER}/{name} is kept "
                     "(delete it to get the new version on the next start)")
    return lines
