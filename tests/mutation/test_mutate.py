"""The mutation tool itself (cheap: nothing is graded here; ``make mutants`` grades)."""
from __future__ import annotations

import ast
import json

from tests.mutation.__main__ import EQUIVALENT, outcome, regraded
from tests.mutation.mutate import Exercise, exercises, mutants

SAMPLE = '''"""A module."""
import math


def helper(x):
    return x + 1


def f(xs, n, flag=True):
    """Doc."""
    total = 0
    for i in range(n):
        if xs[i] < 0 and flag:
            continue
        total += xs[i] * 2
    if not flag:
        return -1
    return math.pow(total, n)
'''


def test_every_operator_family_changes_the_exercise_function_only():
    found = mutants(Exercise("9.9", "sample", ("f",)), SAMPLE)
    families = {m.key.split(":")[3].split(" ")[0] for m in found}
    assert families == {"compare", "arith", "constant", "range", "index", "swap", "negate", "boolop",
                        "drop", "return"}, families
    assert len({m.key for m in found}) == len(found)
    for m in found:
        tree = ast.parse(m.source)
        helper, f = (n for n in tree.body if isinstance(n, ast.FunctionDef))
        assert ast.unparse(helper) == "def helper(x):\n    return x + 1"
        assert ast.unparse(f) != ast.unparse(ast.parse(SAMPLE).body[3]), m.key
        assert tree.body[-1].targets[0].id == "EXERCISE" and tree.body[-1].value.value == "9.9"
    assert all(m.key.startswith("f:") for m in found)
    keys = {m.key for m in found}
    assert {"f:3:13:range arg 0 +1", "f:4:11:compare Lt->LtE", "f:6:8:arith Add->Sub", "f:6:17:arith Mult->Div",
            "f:6:25:constant 2->0", "f:7:4:drop statement", "f:8:15:constant -1->1", "f:9:4:return None",
            "f:9:11:swap args 0,1", "f:4:11:boolop And->Or", "f:7:7:drop not"} <= keys, sorted(keys)


def test_every_listed_equivalent_mutant_exists_and_says_why():
    listed = json.loads(EQUIVALENT.read_text())
    known = exercises()
    for ident, entries in listed.items():
        made = {m.key for m in mutants(known[ident])}
        for key, reason in entries.items():
            assert key in made, f"{ident} {key}: no such mutant any more (the reference changed): drop it"
            assert len(reason.split()) >= 4, f"{ident} {key}: say in a line why it computes the same"


def _reply(status, hung=False, error=""):
    report = {"exercises": [{"id": "9.9", "status": status, "detail": "test: x\nmore"}], "error": error}
    return {"hung": hung, "stdout": json.dumps(report), "stderr": "", "exit": 1}


def test_a_mutant_is_killed_by_a_fail_or_a_hang_and_survives_a_pass():
    mutant = mutants(Exercise("9.9", "sample", ("f",)), SAMPLE)[0]
    assert outcome(mutant, _reply("FAIL"))[0] == "killed"
    assert outcome(mutant, _reply("PASS", hung=True))[0] == "killed"
    assert outcome(mutant, _reply("FAIL", error="pytest exited with -11"))[0] == "killed"
    assert outcome(mutant, _reply("PASS"))[0] == "survived"
    assert outcome(mutant, _reply("FAIL", error="ImportError: no module"))[0] == "error"
    assert outcome(mutant, _reply("TODO"))[0] == "error"
    assert outcome(mutant, {"hung": False, "stdout": "Traceback", "stderr": "", "exit": 1})[0] == "error"


def test_a_mutant_graded_again_moves_between_the_row_counts():
    first, second, third = mutants(Exercise("9.9", "sample", ("f",)), SAMPLE)[:3]
    row = {"killed": 2, "survived": 1, "error": 1, "survivors": [{"key": second.key, "line": second.before}],
           "errors": [{"key": third.key, "detail": "no JSON"}]}
    regraded(row, first, "survived", "")  # killed by the time limit, passes with a longer one
    assert (row["killed"], row["survived"], row["error"]) == (1, 2, 1)
    assert [s["key"] for s in row["survivors"]] == [second.key, first.key]
    regraded(row, second, "killed", "test: x")
    regraded(row, third, "killed", "test: x")
    assert (row["killed"], row["survived"], row["error"]) == (3, 1, 0)
    assert [s["key"] for s in row["survivors"]] == [first.key] and row["errors"] == []
