"""Reading students' submissions for ``gradebook``: folders, archives, git repositories.

A submission is one entry of the submissions folder, named after the student:

* a folder (a copy of the course), read as it is;
* a folder that is a git repository (or a bare ``name.git``): its committed ``HEAD``;
* an archive: ``.zip``, ``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``.

Only the learner-editable files are ever taken from it: the modules under
``minikernel/`` that hold ``@exercise`` stubs (``learner_files``).
"""
from __future__ import annotations

import ast
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
MAX_DEPTH = 3  # how deep below an archive's top the course's folder may sit


class SubmissionError(Exception):
    """A submission that cannot be read; the message says why, for the gradebook row."""


@dataclass(frozen=True)
class Submission:
    student: str  #: the entry's name without its archive suffix
    path: Path


def _student(path: Path) -> str:
    name = path.name
    for suffix in sorted(ARCHIVES + (".git",), key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def discover(folder: Path) -> list[Submission]:
    """One submission per non-hidden entry of ``folder``, sorted by student name."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if not entries:
        raise FileNotFoundError(f"{folder} holds no submissions (one folder, archive or git repository per student)")
    return sorted((Submission(_student(p), p) for p in entries), key=lambda s: s.student)


def _is_git(path: Path) -> bool:
    return (path / ".git").exists() or (path / "HEAD").is_file() and (path / "objects").is_dir()


def _safe_members(names: list[str]) -> None:
    for name in names:
        parts = Path(name).parts
        if name.startswith(("/", "\\")) or ".." in parts:
            raise SubmissionError(f"the archive holds a path outside itself: {name!r}")


def _extract(archive: Path, dest: Path) -> None:
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                _safe_members(z.namelist())
                z.extractall(dest)
        else:
            with tarfile.open(archive) as t:
                _safe_members(t.getnames())
                t.extractall(dest, filter="data")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as err:
        raise SubmissionError(f"the archive cannot be read ({type(err).__name__}: {err})") from None


def _course_root(top: Path) -> Path:
    """The shallowest folder under ``top`` that holds a ``minikernel/`` package."""
    level = [top]
    for _ in range(MAX_DEPTH + 1):
        for folder in sorted(level):
            if (folder / "minikernel").is_dir():
                return folder
        level = [c for f in level for c in f.iterdir() if c.is_dir() and not c.name.startswith(".")]
    raise SubmissionError(f"no minikernel/ folder within {MAX_DEPTH} levels of the submission's top")


def unpack(submission: Submission, workdir: Path) -> Path:
    """The folder of the student's copy of the course (unpacked into ``workdir`` if needed)."""
    path = submission.path
    if path.is_dir() and _is_git(path):
        clone = workdir / "repo"
        proc = subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(path), str(clone)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SubmissionError(f"the git repository cannot be cloned: {proc.stderr.strip()[:300]}")
        return _course_root(clone)
    if path.is_dir():
        return _course_root(path)
    if path.name.endswith(ARCHIVES):
        _extract(path, workdir / "unpacked")
        return _course_root(workdir / "unpacked")
    raise SubmissionError(f"{path.name} is neither a folder nor an archive ({', '.join(ARCHIVES)})")


def learner_files(course: Path) -> list[Path]:
    """The modules under ``course/minikernel`` that hold ``@exercise`` stubs (relative paths)."""
    found = []
    for path in sorted((course / "minikernel").rglob("*.py")):
        if "course" in path.relative_to(course / "minikernel").parts:
            continue
        tree = ast.parse(path.read_text())
        marked = any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "exercise"
                     for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for d in node.decorator_list)
        if marked:
            found.append(path.relative_to(course))
    return found


def overlay(student_root: Path, tree: Path, files: list[Path]) -> list[str]:
    """Copy the learner's versions of ``files`` into ``tree``; return the ones the submission lacks."""
    missing = []
    for rel in files:
        source = student_root / rel
        if source.is_file() and not source.is_symlink():
            shutil.copyfile(source, tree / rel)
        else:
            missing.append(rel.as_posix())
    return missing
