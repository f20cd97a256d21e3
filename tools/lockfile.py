"""Reading a lock file written by ``make lock`` (uv pip compile --generate-hashes).

A lock is pip's requirements syntax: one entry per package, ``name==version [; marker]``
then ``--hash=sha256:...`` continuation lines, then uv's ``# via`` annotation naming
the packages that need it (``minikernel (pyproject.toml)`` for the course's own
dependencies). The annotations make the lock a dependency graph, which lets the
set-up install only what the torch build pip actually chose needs (see
``needed_entries``).

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT_LABEL = "minikernel (pyproject.toml)"
_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def canonical(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Entry:
    """One package of a lock: its text (pin, marker, hashes) and who needs it."""

    name: str
    version: str
    lines: list[str] = field(default_factory=list)
    needed_by: list[str] = field(default_factory=list)

    @property
    def hashes(self) -> list[str]:
        return re.findall(r"--hash=(sha256:[0-9a-f]{64})", "".join(self.lines))

    @property
    def requirement_text(self) -> str:
        """The entry as pip reads it (pin, marker, hashes), without the annotation."""
        return "".join(line for line in self.lines if not line.lstrip().startswith("#"))


def parse_lock(text: str) -> dict[str, list[Entry]]:
    """Entries of a lock, keyed by canonical name.

    A universal lock may pin one package twice under exclusive markers (contourpy
    ``; python_full_version < '3.12'`` and ``>= '3.12'``); pip installs the one whose
    marker holds. The same version twice is an error.
    """
    entries: dict[str, list[Entry]] = {}
    current: Entry | None = None
    in_via = False
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        match = _ENTRY.match(line)
        if match:
            name = canonical(match.group(1))
            if any(e.version == match.group(2) for e in entries.get(name, ())):
                raise ValueError(f"line {number}: {match.group(1)}=={match.group(2)} is locked twice")
            current = Entry(name, match.group(2))
            entries.setdefault(name, []).append(current)
            current.lines.append(line)
            in_via = False
            continue
        if current is None or not line.startswith("    "):
            current, in_via = None, False
            continue
        current.lines.append(line)
        comment = line.strip()
        if comment.startswith("# via"):
            rest = comment[len("# via"):].strip()
            in_via = not rest
            if rest:
                current.needed_by.append(rest)
        elif in_via and comment.startswith("#   "):
            current.needed_by.append(comment[4:].strip())
    return entries


def read_lock(path: Path) -> dict[str, list[Entry]]:
    try:
        return parse_lock(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path.name}: {exc}") from None


def needed_entries(entries: dict[str, list[Entry]], requires: dict[str, set[str]]) -> list[str]:
    """Names of the entries the course needs, given what some installed packages require.

    The graph comes from the ``# via`` annotations: X needs Y when Y's entry names X.
    ``requires`` overrides that for packages already installed: ``{"torch": {...}}``
    keeps only the edges from torch to what the installed torch declares. So the
    lock can list PyPI's Linux torch with its CUDA packages (nvidia-*, triton,
    cuda-toolkit) while a CPU build of the same release installs without them.
    Starts from the course's own dependencies; returns lock order.
    """
    children: dict[str, set[str]] = {name: set() for name in entries}
    roots = set()
    for name, pins in entries.items():
        for parent in (p for entry in pins for p in entry.needed_by):
            if parent == PROJECT_ROOT_LABEL:
                roots.add(name)
            elif parent.startswith("-"):
                continue  # "-c constraints.txt": a pin, not a need
            elif canonical(parent) in children:
                children[canonical(parent)].add(name)
    for parent, wanted in requires.items():
        if parent in children:
            children[parent] = {child for child in children[parent] if child in wanted}
    seen, todo = set(), sorted(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += sorted(children[name] - seen)
    return [name for name in entries if name in seen]


def requirement_names(requirements: list[str]) -> set[str]:
    """Canonical names in ``importlib.metadata.requires()`` lines, leaving out extras' ones."""
    names = set()
    for line in requirements:
        if re.search(r"""extra\s*==""", line):
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if match:
            names.add(canonical(match.group(1)))
    return names


def write_requirements(entries: dict[str, list[Entry]], names: list[str], path: Path) -> None:
    """A requirements file with only ``names``' entries (pins, markers, hashes)."""
    path.write_text("".join(entry.requirement_text for name in names for entry in entries[name]))
