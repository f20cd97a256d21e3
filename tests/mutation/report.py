"""Write ``docs/mutation.md`` from the kept rows (``results.json``) and ``equivalent.json``."""
from __future__ import annotations

from pathlib import Path

INTRO = """\
# Mutation testing of the exercises

How strong is each exercise's test set? Each reference body in `solutions/` is changed in
one place at a time (a *mutant*) and graded with that exercise's tests, as a learner's
body is graded. A mutant the tests fail is *killed*; one they pass *survived*, unless it
is *equivalent* (it computes what the reference computes: listed with the reason in
`tests/mutation/equivalent.json`, so reruns keep it). The aim: at least 90% of the
non-equivalent mutants of every exercise killed.

```bash
make mutants ARGS="9.*"          # a selection: IDs or globs; no ARGS: every exercise (hours on 2 cores)
make mutants ARGS="9.2 --list"   # the mutants, graded nothing
```

The operators (`tests/mutation/mutate.py`), applied to the functions of the exercise only:
comparison flips (`<`/`<=`, `==`/`!=`, `is`/`is not`, `in`/`not in`), off-by-one in
`range` arguments, indices and slice bounds, arithmetic operator swaps (`+`/`-`, `*`/`/`,
`//`, `%`, `**`, `|`/`&`), constants changed to 0/1/-1 (and booleans flipped), a statement
dropped, two adjacent positional arguments swapped, a condition negated (`and`/`or`,
`not` dropped), a returned value replaced by `None`. Each mutant is the reference module
with that change, written to a temporary file and graded through `MINIKERNEL_OVERRIDE`
(the wrong-solution corpus's mechanism, `tests/wrong/README.md`): `python -m minikernel
grade N.M --json` with the references on, two at a time, forked from the corpus's zygote.
FAIL, a crash or a hang kills a mutant; "errors" are mutants the grader could not grade
(the course did not import, say): they are left out of the rate, and their exercise is run again.

A run replaces the rows of the exercises it ran and keeps the others (each row says
when it was measured); the seconds are the wall time of the exercise's run on the
measuring machine (2 cores, shared). The grader's limit per mutant is 30 s (`--timeout S`
changes it, and the command of the rows then says so): an exercise whose own tests take
near that long (5.6 on the CUDA simulator took about 31 s until simulated launches switched
threads every 0.1 ms; about 4 s since) is measured with a longer one, or every mutant
that passes would count as killed by a hang. So is one measured on a busy
machine: at a load average of about 10 on the 2 cores, 2.3's tests took over 30 s and its
8 equivalent mutants counted as hangs; with `--timeout 90` they survive. A mutant killed
only by the limit may still be a slow one that passes: `--again KEY...` (the keys `--list`
prints) grades such mutants of one exercise once more, with a longer `--timeout`, and moves
them in its row, whose command then names both passes.
"""


def write_report(results: dict, known: dict, equivalent: dict, path: Path, command: str | None) -> None:
    """``results``: the kept rows, whose survivors include the equivalent ones (told apart here by
    ``equivalent``); ``command``: the run's command, None to keep the one the page names."""
    if command is None:
        old = path.read_text() if path.exists() else ""
        command = old.split("Last command: `", 1)[1].split("`", 1)[0] if "Last command: `" in old else "?"
    lines = [INTRO, f"Last command: `{command}`.", "",
             "| exercise | functions | mutants | killed | survived | equivalent | errors | killed of non-equivalent "
             "| seconds | measured |", "|---|---|---|---|---|---|---|---|---|---|"]
    survivors = []
    for ident, row in results.items():
        same = [s for s in row["survivors"] if s["key"] in equivalent.get(ident, {})]
        others = [s for s in row["survivors"] if s["key"] not in equivalent.get(ident, {})]
        survivors += [(ident, s) for s in others]
        graded = row["killed"] + len(others)
        rate = f"{100.0 * row['killed'] / graded:.0f}%" if graded else "-"
        lines.append(f"| {ident} | {row['name']} | {row['mutants']} | {row['killed']} | {len(others)} | "
                     f"{len(same)} | {row['error']} | {rate} | {row['seconds']} | {row['date']} |")
    commands = list(dict.fromkeys(row.get("command", "?") for row in results.values()))
    lines += ["", "The rows came from: " + "; ".join(
        f"`{c}` ({', '.join(i for i, row in results.items() if row.get('command', '?') == c)})" for c in commands) + "."]
    not_run = [i for i in known if i not in results]
    lines += ["", "Not run yet: " + (", ".join(not_run) if not_run else "none") + ".", ""]
    lines += ["## Survivors (not equivalent)", ""]
    lines += [f"- {i} `{s['key']}`: `{s['line']}`" for i, s in survivors] or ["None."]
    errors = [(i, e) for i, row in results.items() for e in row["errors"]]
    if errors:
        lines += ["", "## Not graded", ""] + [f"- {i} `{e['key']}`: {e['detail']}" for i, e in errors]
    lines += ["", "## Equivalent mutants", ""]
    lines += [f"- {i} `{s['key']}`: `{s['line']}` ({equivalent[i][s['key']]})" for i, row in results.items()
              for s in row["survivors"] if s["key"] in equivalent.get(i, {})] or ["None."]
    path.write_text("\n".join(lines) + "\n")
