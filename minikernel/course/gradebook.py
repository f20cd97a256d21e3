r"""``python -m minikernel gradebook SUBMISSIONS --out DIR``: grade a class.

Every submission (see ``submissions``) is graded in a tree made fresh for it:

1. a student edition of *this* copy of the course (``edition.release``, with the
   references ``--keep`` names) — so the tests, the grader and the kept references
   are the teacher's, whatever the student changed;
2. the teacher-only tests of ``teacher_tests/chNN/`` copied into ``tests/chNN/teacher/``;
3. the learner-editable modules (those with ``@exercise`` stubs) taken from the
   submission — nothing else of it is used.

``python -m minikernel grade --json`` then runs in that tree in the grading sandbox
(``sandbox``: bubblewrap where it can run, with limits on time, memory, processes,
files and disk; otherwise the gradebook warns what is not isolated). Several
submissions are graded at once (``-j``).

Writes ``DIR/gradebook.csv`` (one row per student, points per exercise and the
total), ``DIR/gradebook.html`` (a sortable table; click a cell for the grader's
message) and ``DIR/feedback/<student>.txt`` (what the grader told that student).
A submission that cannot be read gets a row saying why, and the run goes on; one
that makes the gradebook itself fail gets a row with that error.

**Gradescope.** ``--format gradescope`` writes, instead, Gradescope's autograder
``results.json`` per student (``DIR/gradescope/<student>/results.json``, see
``gradescope``). With ``--single``, SUBMISSIONS is one submission rather than a
folder of them, and the file is ``DIR/results.json``: what ``run_autograder`` does
(the course, the teacher's copy, in ``/autograder/source``)::

    cd /autograder/source
    python -m minikernel gradebook /autograder/submission --single --format gradescope \
        --out /autograder/results --weights weights.json

**Resuming.** Each submission's result is written to ``DIR/results/<student>.json``
as soon as it is graded, with a hash of what it was graded from (the learner files
taken from the submission, the teacher's edition, the settings). Run the command
again with the same ``--out`` after an interruption and it grades only the
submissions that are new or changed, and says how many it took over. Ctrl-C or
SIGTERM kills the gradings running (they are not recorded) and says how many are kept.

Example::

    python -m minikernel gradebook ~/class/submissions --out ~/class/grades -j 2 --weights weights.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import edition, exercise as ex, sandbox as sb
from .grade_pool import MAX_FILE_BYTES
from .gradebook_report import safe_filename, write_csv, write_feedback, write_html
from .gradescope import VISIBILITIES, write_results
from .submissions import Submission, SubmissionError, discover, learner_files, overlay, unpack
from .weights import load_weights

DEFAULT_TIMEOUT_S = 60  # per exercise, passed on to the grader
DEFAULT_SUBMISSION_TIMEOUT_S = 1800
DEFAULT_MEMORY_MB = 8192
FORMATS = ("gradebook", "gradescope")


@dataclass
class Result:
    """One student's row: a verdict per exercise, or why the submission was not graded."""

    student: str
    verdicts: dict[str, dict] = field(default_factory=dict)  #: id -> {"status", "detail", "name"}
    error: str = ""
    notes: list[str] = field(default_factory=list)
    resumed: bool = False  #: taken over from an earlier run's stored result
    crashed: bool = False  #: the gradebook itself failed on this submission


class Interrupted(Exception):
    """The gradebook was stopped (Ctrl-C, SIGTERM); the message says what was kept."""


#: Grading processes now running, and whether the gradebook is being stopped.
_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()
_stopping = threading.Event()


def _stop_all() -> None:
    """Stop every grading now running (it is not recorded: a rerun grades it again)."""
    _stopping.set()
    with _running_lock:
        for proc in _running:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@dataclass
class Settings:
    patterns: list[str]
    keep: str = ""
    timeout_s: int = DEFAULT_TIMEOUT_S
    submission_timeout_s: int = DEFAULT_SUBMISSION_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB
    sandbox: bool = True  #: grade in the strongest sandbox this machine allows (``sb.plan``)
    max_processes: int = sb.DEFAULT_NPROC
    open_files: int = sb.DEFAULT_NOFILE
    disk_mb: int = sb.DEFAULT_DISK_MB

    def limits(self) -> sb.Limits:
        return sb.Limits(self.memory_mb, MAX_FILE_BYTES, self.max_processes, self.open_files, self.disk_mb)


def build_tree(base: Path, student_root: Path, dest: Path, files: list[Path]) -> list[str]:
    """``dest``: a copy of the edition ``base`` with the student's ``files``; return those missing."""
    shutil.copytree(base, dest, symlinks=True)
    teacher = edition.ROOT / edition.TEACHER_TESTS
    for chapter in sorted(teacher.glob("ch*")) if teacher.is_dir() else []:
        target = dest / "tests" / chapter.name / "teacher"
        shutil.copytree(chapter, target, ignore=shutil.ignore_patterns("__pycache__"))
        (target / "__init__.py").touch()
    # The course's own checkout is on sys.path (editable install): take it off, so
    # the student's code finds neither its solutions/ nor its teacher tests.
    # In the sandbox, the processes the grader forks (pytest, each exercise) write their
    # temporary files to MINIKERNEL_SCRATCH, not beside the grader's own (sandbox.Sandbox.env).
    (dest / "sitecustomize.py").write_text(
        "import os, sys, tempfile\n"
        f"sys.path[:] = [p for p in sys.path if p.rstrip('/') != {str(edition.ROOT)!r}]\n"
        "if os.environ.get('MINIKERNEL_SCRATCH'):\n"
        "    def _scratch():\n"
        "        tempfile.tempdir = os.environ['TMPDIR'] = os.environ['MINIKERNEL_SCRATCH']\n"
        "    os.register_at_fork(after_in_child=_scratch)\n")
    return overlay(student_root, dest, files)


def grade_tree(tree: Path, settings: Settings, box: sb.Sandbox) -> tuple[dict[str, dict], str]:
    """The grader's verdicts in ``tree``, graded in ``box``, or ({}, why there are none)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIKERNEL_")}
    env.update(PYTHONPATH=str(box.tree_path(tree)), MINIKERNEL_SOLUTIONS=",".join(edition.kept_ids(settings.keep)),
               PYTHONDONTWRITEBYTECODE="1", **box.env(tree))
    grade = [sys.executable, "-m", "minikernel", "grade", "--json", "--timeout", str(settings.timeout_s),
             *settings.patterns]
    cmd = box.wrap(grade, tree)
    with _running_lock:
        if _stopping.is_set():
            raise Interrupted("stopped before grading")
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        _running.add(proc)
    try:
        out, err = proc.communicate(timeout=settings.submission_timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {}, f"grading did not finish in {settings.submission_timeout_s} s"
    finally:
        with _running_lock:
            _running.discard(proc)
        try:  # nothing the student started outlives grading
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if _stopping.is_set():
        raise Interrupted("stopped while grading")
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        tail = "\n".join((out + err).strip().splitlines()[-8:])
        return {}, f"the grader exited with {proc.returncode} and no report:\n{tail}"
    verdicts = {r["id"]: r for r in report["exercises"]}
    for verdict in verdicts.values():
        if verdict["status"] == "FAIL":
            verdict["detail"] = box.explain(verdict["detail"])
    return verdicts, report.get("error", "")


def _tree_hash(root: Path) -> str:
    """A hash of every file under ``root`` (names and contents), caches left out."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _submission_hash(student_root: Path, files: list[Path], context: str) -> str:
    """What a submission is graded from: its learner files (and which are missing), in ``context``."""
    h = hashlib.sha256(context.encode())
    for rel in files:
        source = student_root / rel
        h.update(rel.as_posix().encode() + b"\0")
        h.update(source.read_bytes() if source.is_file() and not source.is_symlink() else b"<missing>")
    return h.hexdigest()


def _saved(path: Path, digest: str) -> Result | None:
    """The result stored at ``path`` if it was graded from ``digest`` and completed."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if data.get("hash") != digest or data.get("crashed"):
        return None
    return Result(data["student"], data["verdicts"], data["error"], data["notes"], resumed=True)


def _save(path: Path, result: Result, digest: str, crashed: bool = False) -> None:
    """Write one result whole: to a temporary name, then renamed (an interruption leaves the old one or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"student": result.student, "hash": digest, "crashed": crashed, "verdicts": result.verdicts,
            "error": result.error, "notes": result.notes}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def grade_submission(submission: Submission, base: Path, files: list[Path], settings: Settings,
                     results_dir: Path | None = None, context: str = "", box: sb.Sandbox | None = None) -> Result:
    """Grade one submission; with ``results_dir``, reuse its stored result when nothing it
    was graded from changed, and store the new one as soon as it is known."""
    result = Result(submission.student)
    saved_at = results_dir / f"{submission.student}.json" if results_dir else None
    digest = ""
    with tempfile.TemporaryDirectory(prefix="minikernel-grade-") as tmp:
        try:
            student_root = unpack(submission, Path(tmp))
        except SubmissionError as err:
            result.error = f"not graded: {err}"
            return result
        digest = _submission_hash(student_root, files, context)
        if saved_at is not None and (saved := _saved(saved_at, digest)) is not None:
            return saved
        missing = build_tree(base, student_root, Path(tmp) / "tree", files)
        if missing:
            result.notes.append(f"not in the submission (graded as untouched stubs): {', '.join(missing)}")
        box = box or sb.plan(settings.limits(), [edition.ROOT], settings.sandbox)
        result.verdicts, error = grade_tree(Path(tmp) / "tree", settings, box)
        if error and not result.verdicts:
            result.error = error
        elif error:
            result.notes.append(error)
    if saved_at is not None:
        _save(saved_at, result, digest)
    return result


def _guarded(submission: Submission, grade) -> Result:
    """``grade(submission)``, or a row saying how the gradebook itself failed on it."""
    try:
        return grade(submission)
    except Interrupted:
        raise
    except Exception as err:  # noqa: BLE001 - one submission must not stop the class's gradebook
        return Result(submission.student, error=f"not graded: the gradebook failed on this submission "
                                                f"({type(err).__name__}: {err})", crashed=True)


def single(path: Path) -> list[Submission]:
    """``path`` as the one submission to grade (``--single``)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: give the submission (a folder, archive or git repository)")
    return [Submission(path.resolve().name or "submission", path)]


def run(submissions_dir: Path, out: Path, settings: Settings, weights_file: Path | None = None,
        jobs: int = 1, output_format: str = "gradebook", one: bool = False,
        visibility: str = "visible") -> list[Result]:
    """Grade every submission in ``submissions_dir`` and write the gradebook into ``out``
    (taking over the results of an earlier run into ``out`` that are still valid).

    ``output_format``: "gradebook" (CSV, HTML, feedback) or "gradescope" (results.json).
    ``one``: ``submissions_dir`` is itself the one submission; nothing is stored for resuming.
    ``visibility``: Gradescope's, for every test (one of ``gradescope.VISIBILITIES``).
    """
    if output_format not in FORMATS:
        raise ValueError(f"the format is one of {', '.join(FORMATS)}, not {output_format!r}")
    if visibility not in VISIBILITIES:
        raise ValueError(f"--visibility is one of {', '.join(VISIBILITIES)}, not {visibility!r}")
    ids = ex.select(settings.patterns, where="--exercises")
    weights = load_weights(weights_file, ids)
    submissions = single(submissions_dir) if one else discover(submissions_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_dir = None if one else out / "results"
    box = sb.plan(settings.limits(), [edition.ROOT, submissions_dir, out], settings.sandbox)
    print(box.describe(), file=sys.stderr)
    for warning in box.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="minikernel-edition-") as tmp:
        base = Path(tmp) / "edition"
        edition.release(base, settings.keep)
        files = learner_files(base)  # parsed once: ast.parse is not safe to run in several threads
        context = json.dumps([_tree_hash(base), settings.patterns, settings.keep, settings.timeout_s,
                              settings.submission_timeout_s, box.describe()])

        def grade(s: Submission) -> Result:
            result = _guarded(s, lambda s: grade_submission(s, base, files, settings, results_dir, context, box))
            if result.crashed and results_dir is not None:
                _save(results_dir / f"{s.student}.json", result, "", crashed=True)
            return result

        _stopping.clear()
        pool = ThreadPoolExecutor(max_workers=max(1, jobs))
        try:
            results = list(pool.map(grade, submissions))
        except (KeyboardInterrupt, Interrupted):
            _stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            kept = sum(1 for s in submissions if results_dir and (results_dir / f"{s.student}.json").exists())
            where = f"kept in {results_dir}; run the same command again to grade the rest" if results_dir else \
                "nothing kept (--single)"
            raise Interrupted(f"interrupted: {kept} of {len(submissions)} submissions graded, {where}") from None
        finally:
            pool.shutdown(wait=True)
    resumed = sum(r.resumed for r in results)
    if resumed:
        print(f"resumed: {resumed} of {len(results)} submissions unchanged since they were graded into "
              f"{results_dir} (graded now: {len(results) - resumed})", file=sys.stderr)
    write_outputs(out, results, ids, weights, output_format, one, visibility)
    return results


def write_outputs(out: Path, results: list[Result], ids: list[str], weights: dict[str, float],
                  output_format: str = "gradebook", one: bool = False, visibility: str = "visible") -> None:
    """The gradebook's files in ``out``, in ``output_format`` (see ``run``)."""
    if output_format == "gradescope":
        for r in results:
            where = out / "results.json" if one else out / "gradescope" / safe_filename(r.student) / "results.json"
            write_results(where, r, ids, weights, visibility)
        return
    write_csv(out / "gradebook.csv", results, ids, weights)
    write_html(out / "gradebook.html", results, ids, weights)
    write_feedback(out / "feedback", results, ids, weights)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel gradebook", description="grade a folder of submissions")
    parser.add_argument("submissions", type=Path, help="folder with one entry (folder, archive, git repo) per student")
    parser.add_argument("--out", type=Path, required=True, help="where gradebook.csv/.html and feedback/ go")
    parser.add_argument("--exercises", default="", help="IDs or globs to grade, e.g. '1.*,2.*' (default: all)")
    parser.add_argument("--keep", default="", help="references the class was given, e.g. '2.3' (as for release)")
    parser.add_argument("--weights", type=Path, help='JSON file of points per ID or glob, e.g. {"2.*": 2}')
    parser.add_argument("-j", "--jobs", type=_positive_int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--timeout", type=_positive_int, default=DEFAULT_TIMEOUT_S, help="seconds per exercise")
    parser.add_argument("--submission-timeout", type=_positive_int, default=DEFAULT_SUBMISSION_TIMEOUT_S,
                        help="seconds for one whole submission")
    parser.add_argument("--format", choices=FORMATS, default="gradebook", dest="output_format",
                        help="gradebook: CSV, HTML and feedback; gradescope: Gradescope's results.json per student")
    parser.add_argument("--single", action="store_true",
                        help="SUBMISSIONS is one submission (Gradescope's run_autograder: /autograder/submission)")
    parser.add_argument("--visibility", choices=VISIBILITIES, default="visible",
                        help="Gradescope's visibility of each exercise's result (default visible)")
    parser.add_argument("--memory-mb", type=_positive_int, default=DEFAULT_MEMORY_MB, help="address-space limit per process")
    parser.add_argument("--max-processes", type=_positive_int, default=sb.DEFAULT_NPROC,
                        help="processes and threads of one submission (in the sandbox)")
    parser.add_argument("--open-files", type=_positive_int, default=sb.DEFAULT_NOFILE, help="open files per process")
    parser.add_argument("--disk-mb", type=_positive_int, default=sb.DEFAULT_DISK_MB,
                        help="what one submission's grading may write, all files together (in the sandbox)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="grade without bubblewrap's sandbox (the gradebook warns what is then not isolated)")
    args = parser.parse_args(argv)
    settings = Settings([p for p in re.split(r"[,\s]+", args.exercises) if p], args.keep, args.timeout,
                        args.submission_timeout, args.memory_mb, not args.no_sandbox, args.max_processes,
                        args.open_files, args.disk_mb)
    def stop(*_):  # SIGTERM (a shutdown, a scheduler) stops it as Ctrl-C does
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        results = run(args.submissions, args.out, settings, args.weights, args.jobs, args.output_format,
                      args.single, args.visibility)
    except (ValueError, FileNotFoundError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt) as err:
        print(str(err) or "interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    graded = sum(not r.error for r in results)
    where = {"gradebook": f"gradebook in {args.out / 'gradebook.csv'} and .html",
             "gradescope": f"Gradescope results in {args.out / ('results.json' if args.single else 'gradescope')}"}
    print(f"{graded}/{len(results)} submissions graded; {where[args.output_format]}")
    return 0
