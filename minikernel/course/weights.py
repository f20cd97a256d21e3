"""Points per exercise for ``gradebook`` and ``release --github-classroom``: the weights file."""
from __future__ import annotations

import json
from pathlib import Path

from . import exercise as ex


def load_weights(path: Path | None, ids: list[str]) -> dict[str, float]:
    """Points per exercise: 1 each, unless a JSON file maps IDs or globs to points.

    ``{"2.*": 2, "2.9": 5}``: an exact ID wins over a glob; among globs, the later one.
    """
    points = {i: 1.0 for i in ids}
    if path is None:
        return points
    try:
        table = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"the weights file {path} cannot be read: {err}") from None
    if not isinstance(table, dict) or not all(isinstance(v, (int, float)) for v in table.values()):
        raise ValueError(f"the weights file {path} must map exercise IDs or globs to numbers, e.g. {{\"2.*\": 2}}")
    for pattern, value in sorted(table.items(), key=lambda kv: "*" not in kv[0]):
        hits = ex.select([pattern], where=f"a key of the weights file {path}")  # ValueError naming the known IDs
        for i in hits:
            if i in points:
                points[i] = float(value)
    return points
