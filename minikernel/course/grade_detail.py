"""What a FAIL says: the test in words, the failing input as code, expected vs got,
and the line of the learner's own code where it went wrong.

Everything here reads a finished test's exception; nothing runs the learner's code.
pytest's and hypothesis's own frames and advice ("Use -v", "Falsifying example:"
headers) are left out: the grader cannot take -v, and the learner needs their own
line, not the test harness's.
"""
from __future__ import annotations

import collections
import os
import re
import traceback
from pathlib import Path
from types import TracebackType

from . import exercise as ex

ROOT = Path(__file__).resolve().parents[2]
#: Where a learner's code lives: minikernel/ (not the course machinery) and the
#: references in solutions/ (a reference that calls the learner's exercise shows it).
_LEARNER_DIRS = (ROOT / "minikernel", ROOT / "solutions")
_COURSE_DIR = ROOT / "minikernel" / "course"
#: The command line's entry: on the stack of every exercise's process that the command
#: line forked, never the learner's code.
_ENTRY = ROOT / "minikernel" / "__main__.py"
_MAX_LINES = 14
_MAX_CHARS = 1500
#: A line on the stack this many times is a recursion: that line is named, not the deepest.
_RECURSION_FRAMES = 50


def test_in_words(name: str, doc: str | None) -> str:
    """The test's docstring's first line, else its name without ``test_`` and underscores:
    ``test_view_strides[2-3]`` -> ``view strides [2-3]``."""
    if doc and doc.strip():
        return doc.strip().splitlines()[0].rstrip(".")
    base, _, params = name.partition("[")
    words = base.removeprefix("test_").replace("_", " ")
    return f"{words} [{params}" if params else words


def is_learner_file(filename: str) -> bool:
    """True for a file under minikernel/ (outside minikernel/course/ and the command line's
    ``minikernel/__main__.py``) or solutions/."""
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    if path.is_relative_to(_COURSE_DIR) or path == _ENTRY:
        return False
    return any(path.is_relative_to(d) for d in _LEARNER_DIRS)


def _relative(filename: str) -> str:
    path = Path(filename).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else filename


def exercise_files() -> set[Path]:
    """The files that hold the exercises in use: each registered exercise's module under
    minikernel/, its reference under solutions/, and the files ``MINIKERNEL_OVERRIDE``
    puts in their place."""
    files = set()
    for entry in ex.registry().values():
        relative = Path(*entry.module.split(".")).with_suffix(".py")
        files |= {ROOT / "minikernel" / relative, ROOT / "solutions" / relative}
    try:
        files |= set(ex.parse_overrides(os.environ.get(ex.OVERRIDE_VAR)).values())
    except (OSError, ValueError):  # a bad variable is reported where the exercises are imported
        pass
    return files


def _deepest(frames: list[tuple[str, int, str, str | None]]) -> str:
    """Of ``(file, line, function, code or None)`` frames, innermost last: the deepest in an
    exercise's file, else the deepest in the learner's package (``is_learner_file``).
    An exercise's file first: an error raised in a helper of the package (a kernel
    launcher) still names the learner's own line; and a line that is on the stack
    ``_RECURSION_FRAMES`` times or more (a RecursionError) is named instead of the deepest."""
    own = exercise_files()
    mine = [f for f in frames if Path(f[0]).resolve() in own] or [f for f in frames if is_learner_file(f[0])]
    if not mine:
        return ""
    (place, times), = collections.Counter(f[:2] for f in mine).most_common(1)
    filename, lineno, name, line = next(f for f in reversed(mine) if f[:2] == place) \
        if times >= _RECURSION_FRAMES else mine[-1]
    if line is None:  # a stack dump names the line, not its code
        try:
            line = Path(filename).read_text().splitlines()[lineno - 1]
        except (OSError, IndexError):
            line = ""
    return f"{_relative(filename)}:{lineno} in {name}: {line.strip()}"


def learner_frame(tb: TracebackType | None) -> str:
    """``minikernel/strides.py:42 in to_index: return ordinal % shape[d]``, the deepest
    frame of the traceback in the learner's code (see ``_deepest``), or ``""`` when none is."""
    return _deepest([(f.filename, f.lineno, f.name, f.line or "") for f in traceback.extract_tb(tb)])


def learner_frame_from_dump(text: str) -> str:
    """The same from a ``faulthandler`` stack dump (a hung or crashed process), where
    the most recent call comes first."""
    frames = [(filename, int(lineno), name, None)
              for filename, lineno, name in re.findall(r'File "([^"]+)", line (\d+) in (\S+)', text)]
    return _deepest(frames[::-1])


def one_line_call(text: str) -> str:
    """hypothesis's multi-line ``test_x(\\n    a=1,\\n    b=(2, 3),\\n)`` as one line of
    code: ``test_x(a=1, b=(2, 3))``."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    joined = " ".join(lines)
    joined = re.sub(r"\(\s+", "(", joined)
    joined = re.sub(r",\s*\)", ")", joined)
    return re.sub(r"\s+\)", ")", joined)


def failing_input(exc: BaseException) -> list[str]:
    """The smallest failing input hypothesis found, as code, with the values drawn
    inside the test (``data.draw``) and any ``note()``: one item per line."""
    out = []
    for note in getattr(exc, "__notes__", []) or []:
        header = next((h for h in _EXAMPLE_HEADERS if note.startswith(h)), None)
        if header:
            out.append(one_line_call(note.removeprefix(header)))
        elif note.startswith(_ADVICE):
            continue  # harness advice the grader's learner cannot act on
        else:  # "Draw 1: (2, 3)", the test's own note()s
            out.append(note.strip())
    return [o for o in out if o]


#: How hypothesis introduces the failing example (the wording changed across versions).
_EXAMPLE_HEADERS = ("Falsifying example:", "Failing test case:", "Falsifying explicit example:")
_ADVICE = ("You can reproduce", "You can add @seed", "Explanation:", "The test", "Unreliable", "Traceback",
           "Falsifying", "Failing", "Trying example")


_ASSERT_EQ = re.compile(r"^(?:\w+: )?assert (.+?) == (.+)$")


_FUNCTION = re.compile(r"<function (\S+) at 0x[0-9a-f]+>")
_METHOD = re.compile(r"<(?:built-in |bound )?method (\S+) of (?:(\S+) object|.*?) at 0x[0-9a-f]+>+")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+>")
_ALIAS = re.compile(r"^\s*\+\s+where (\S+) = (\S+)$")


def _strip_advice(message: str) -> list[str]:
    """The exception's message without pytest's advice lines, object addresses, and
    pytest's lines that only say where a name came from (``where f = S.f``)."""
    keep = []
    for line in message.splitlines():
        if "Use -v" in line or "use -vv" in line.lower() or line.strip().startswith("Full diff"):
            continue
        line = _METHOD.sub(lambda m: f"{m.group(2) or ''}.{m.group(1)}".lstrip("."), _FUNCTION.sub(r"\1", line))
        line = _ADDRESS.sub(">", line)  # <generator object f.<locals>.<genexpr> at 0x7f...>
        alias = _ALIAS.match(line)
        if alias and alias.group(2).endswith("." + alias.group(1).rpartition(".")[2]):
            continue
        keep.append(line.rstrip())
    return keep


def expected_vs_got(message_lines: list[str]) -> tuple[str, str]:
    """From pytest's rewritten ``assert got == expected`` line: the two sides, if present.

    The course's tests write the learner's value first and torch's second."""
    for line in message_lines:
        m = _ASSERT_EQ.match(line.strip())
        if m and " where " not in m.group(0):
            return m.group(2).strip(), m.group(1).strip()
    return "", ""


def describe_failure(exc: BaseException, tb: TracebackType | None, words: str) -> tuple[str, dict]:
    """The text of a FAIL and its fields: test, input, expected, got, where, error."""
    lines = _strip_advice(f"{type(exc).__name__}: {exc}".strip())
    error = "\n".join(lines[:_MAX_LINES])
    if len(error) > _MAX_CHARS:
        error = error[:_MAX_CHARS] + " …"
    expected, got = expected_vs_got(lines)
    fields = {"test": words, "input": failing_input(exc), "expected": expected, "got": got,
              "where": learner_frame(tb), "error": error}
    return render(fields), fields


def render(fields: dict) -> str:
    """The detail text of a FAIL, one part per line."""
    out = [f"test: {fields['test']}"] if fields.get("test") else []
    for i, item in enumerate(fields.get("input") or []):
        out.append(("input: " if i == 0 else "       ") + item)
    if fields.get("expected") or fields.get("got"):
        out.append(f"expected (torch): {fields['expected']}")
        out.append(f"got (yours):      {fields['got']}")
    if fields.get("error"):
        out.append(fields["error"])
    if fields.get("where"):
        out.append(f"your code: {fields['where']}")
    return "\n".join(out)
