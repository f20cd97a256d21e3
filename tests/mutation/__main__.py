"""Grade mutants of the reference bodies with each exercise's tests: ``make mutants ARGS="9.*"``.

``python -m tests.mutation [IDS or globs] [--workers N] [--timeout S] [--list]``: every mutant
of the selected exercises (mutate.py) is graded as the wrong-solution corpus grades a case
(``python -m minikernel grade N.M --json`` with ``MINIKERNEL_SOLUTIONS=all`` and the mutant in
``MINIKERNEL_OVERRIDE``, forked from the corpus zygote). FAIL, a crash or a hang kills it;
PASS is a survivor, unless ``equivalent.json`` says it computes what the reference computes.
The rows are kept in ``results.json`` (a run replaces the rows of the exercises it ran) and
``docs/mutation.md`` is written from them and ``equivalent.json`` (``--report``: only that),
naming the exercises with no row. ``--again KEY...`` grades some mutants of one exercise once
more (those a busy machine's time limit killed, with a longer ``--timeout``) and moves them in
its kept row.
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path

from tests.mutation.mutate import ROOT, Mutant, exercises, mutants
from tests.mutation.report import write_report
from tests.wrong.forks import grade_in_forks, grader_env

HERE = Path(__file__).resolve().parent
EQUIVALENT = HERE / "equivalent.json"
RESULTS = HERE / "results.json"
CRASH_RE = re.compile(r"pytest exited with -\d+")  # killed by a signal: the mutant's doing


def outcome(mutant: Mutant, reply: dict) -> tuple[str, str]:
    """("killed" | "survived" | "error", detail) from the zygote's reply."""
    if reply["hung"]:
        return "killed", "hang"
    try:
        report = json.loads(reply["stdout"])
    except json.JSONDecodeError:
        return "error", f"no JSON from the grader (exit {reply['exit']}): {reply['stderr'][-300:]}"
    error = report.get("error", "")
    if error and not CRASH_RE.search(error):
        return "error", error.splitlines()[0] if error else ""
    row = next(r for r in report["exercises"] if r["id"] == mutant.exercise)
    if row["status"] == "FAIL":
        return "killed", (row["detail"] or "").strip().splitlines()[0][:120] if row["detail"] else ""
    if row["status"] == "PASS":
        return "survived", ""
    return "error", f"graded {row['status']}"


def _grade(ident: str, found: list[Mutant], workers: int, timeout_s: float, tmp: str):
    """(mutant, verdict, detail) for each of ``found``, graded as a learner's body of ``ident`` is, as they finish."""
    by_path, requests = {}, []
    for n, mutant in enumerate(found):
        path = Path(tmp) / f"mutant_{ident.replace('.', '_')}_{n}.py"
        path.write_text(mutant.source)
        by_path[str(path)] = mutant
        requests.append({"case": str(path), "exercise": ident,
                         "args": ["--json", f"--timeout={timeout_s}"],
                         "env": {**grader_env("all"), "MINIKERNEL_OVERRIDE": str(path)}})
    for reply in grade_in_forks(requests, workers, 4 * timeout_s):
        mutant = by_path[reply["case"]]
        verdict, detail = outcome(mutant, reply)
        print(f"  {mutant.key}: {verdict} {detail[:100]}", file=sys.stderr, flush=True)
        yield mutant, verdict, detail


def run(selected: list[str], workers: int, timeout_s: float, command: str) -> dict:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    known = exercises()
    with tempfile.TemporaryDirectory(prefix="minikernel-mutants-") as tmp:
        for ident in selected:
            start = time.monotonic()
            found = mutants(known[ident])
            print(f"{ident}: {len(found)} mutants", file=sys.stderr, flush=True)
            counts = {"killed": 0, "survived": 0, "error": 0}
            survivors, errors = [], []
            for mutant, verdict, detail in _grade(ident, found, workers, timeout_s, tmp):
                counts[verdict] += 1
                if verdict == "survived":
                    survivors.append({"key": mutant.key, "line": mutant.before})
                if verdict == "error":
                    errors.append({"key": mutant.key, "detail": detail})
            results[ident] = {"name": ", ".join(known[ident].functions), "mutants": len(found), **counts,
                              "seconds": round(time.monotonic() - start), "date": datetime.date.today().isoformat(), "command": command,
                              "survivors": survivors, "errors": errors}
            results = dict(sorted(results.items(), key=lambda kv: _order(kv[0])))  # the report lists them so too
            RESULTS.write_text(json.dumps(results, indent=1) + "\n")
            row = results[ident]
            print(f"{ident}: {row['killed']} killed, {row['survived']} survived (equivalent ones included), "
                  f"{row['error']} errors, {row['seconds']} s", file=sys.stderr, flush=True)
    return results


def regraded(row: dict, mutant: Mutant, verdict: str, detail: str) -> None:
    """Move ``mutant`` in a kept ``row`` from its earlier verdict (survived or error if listed so, else
    killed) to ``verdict``."""
    was_survivor = any(s["key"] == mutant.key for s in row["survivors"])
    was_error = any(e["key"] == mutant.key for e in row["errors"])
    row["survived" if was_survivor else "error" if was_error else "killed"] -= 1
    row["survivors"] = [s for s in row["survivors"] if s["key"] != mutant.key]
    row["errors"] = [e for e in row["errors"] if e["key"] != mutant.key]
    row[verdict] += 1
    if verdict == "survived":
        row["survivors"].append({"key": mutant.key, "line": mutant.before})
    if verdict == "error":
        row["errors"].append({"key": mutant.key, "detail": detail})


def again(ident: str, keys: list[str], workers: int, timeout_s: float, command: str) -> dict:
    """Grade the named mutants of ``ident`` once more and put their new verdicts in its kept row.

    For mutants a run killed by its time limit on a busy machine: with a longer limit, a slow but
    passing one survives. The row's counts move accordingly, its seconds grow by this pass's, and
    its command gains this one.
    """
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if ident not in results:
        raise SystemExit(f"--again: {ident} has no kept row in {RESULTS.name}: grade all its mutants first")
    by_key = {m.key: m for m in mutants(exercises()[ident])}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise SystemExit(f"--again: {ident} has no mutant {unknown[0]!r} (see --list for the keys)")
    row, start = results[ident], time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minikernel-mutants-") as tmp:
        for mutant, verdict, detail in _grade(ident, [by_key[k] for k in dict.fromkeys(keys)], workers, timeout_s, tmp):
            regraded(row, mutant, verdict, detail)
    row["seconds"] += round(time.monotonic() - start)
    row["command"] += f", then `{command}`"
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"{ident}: {row['killed']} killed, {row['survived']} survived (equivalent ones included), "
          f"{row['error']} errors", file=sys.stderr, flush=True)
    return results


def _order(ident: str) -> tuple[int, ...]:
    return tuple(int(p) for p in ident.split("."))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="*", help="exercise IDs or globs (9.2, 9.*); none: every exercise")
    parser.add_argument("--workers", type=int, default=2, help="mutants graded at a time (default 2)")
    parser.add_argument("--timeout", type=float, default=30.0, help="the grader's limit per mutant, in seconds (default 30)")
    parser.add_argument("--list", action="store_true", help="print the mutants, grade nothing")
    parser.add_argument("--report", action="store_true", help="write docs/mutation.md from the kept rows, grade nothing")
    parser.add_argument("--again", nargs="+", metavar="KEY", help="grade these mutants (keys as --list prints them) of "
                        "the one selected exercise once more, e.g. with a longer --timeout, and update its kept row")
    options = parser.parse_args(argv)
    known = exercises()
    patterns = options.patterns or ["*"]
    selected = [i for i in known if any(fnmatch.fnmatchcase(i, p) for p in patterns)]
    if not selected:
        parser.error(f"{' '.join(patterns)} selects no exercise (IDs: {', '.join(known)})")
    if options.list:
        for ident in selected:
            for mutant in mutants(known[ident]):
                print(f"{ident} {mutant.key} | {mutant.before}")
        return 0
    if options.report:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        write_report(results, known, json.loads(EQUIVALENT.read_text()), ROOT / "docs" / "mutation.md", None)
        return 0
    if options.again:
        if len(selected) != 1:
            parser.error(f"--again needs exactly one exercise, not {', '.join(selected)}")
        command = shlex.join(["make", "mutants", "ARGS=" + shlex.join(
            [*selected, "--timeout", f"{options.timeout:g}", "--again", *options.again])])
        results = again(selected[0], options.again, options.workers, options.timeout, command)
        write_report(results, known, json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {},
                     ROOT / "docs" / "mutation.md", None)
        return 0
    args = options.patterns + ([f"--timeout {options.timeout:g}"] if options.timeout != 30.0 else [])
    command = "make mutants" + (f' ARGS="{" ".join(args)}"' if args else "")  # a longer limit is part of the result
    results = run(selected, options.workers, options.timeout, command)
    write_report(results, known, json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {},
                 ROOT / "docs" / "mutation.md", command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
