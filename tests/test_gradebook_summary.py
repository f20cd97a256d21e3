"""The gradebook page's class summary: per exercise how many passed, and the tests that
failed most often with one example input each (minikernel/course/gradebook_report.py).

Verdicts are written as the grader's ``--json`` writes them (status, detail, fields).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from minikernel.course.gradebook_report import class_summary, summary_html, write_html


@dataclass
class Result:
    student: str
    verdicts: dict[str, dict]
    error: str = ""
    notes: list[str] = field(default_factory=list)


def _fail(test: str, inputs: list[str], error: str = "AssertionError: strides differ") -> dict:
    return {"status": "FAIL", "detail": f"test: {test}\n{error}",
            "fields": {"test": test, "input": inputs, "error": error, "expected": "", "got": ""}}


PASS, TODO = {"status": "PASS", "detail": ""}, {"status": "TODO", "detail": "exercise 1.2 is not implemented yet"}
HANG = {"status": "FAIL", "detail": "did not finish in 60 s (an endless loop?) before its first test",
        "fields": {"test": "", "input": [], "error": "did not finish in 60 s"}}
RESULTS = [
    Result("ada", {"1.1": PASS, "1.2": _fail("view shares storage", [])}),
    Result("bob", {"1.1": PASS, "1.2": _fail("view shares storage", ["shape=(0, 3)", "strides=(3, 1)"])}),
    Result("cy", {"1.1": _fail("contiguous strides of a 0-d tensor", ["shape=()"]),
                  "1.2": _fail("view shares storage", ["shape=(2, 0)"])}),
    Result("dee", {"1.1": PASS, "1.2": _fail("negative offsets are refused", ["offset=-1"])}),
    Result("eve", {"1.1": PASS, "1.2": HANG}),
    Result("fay", {"1.1": PASS, "1.2": TODO}),
    Result("gus", {}, error="the submission could not be unpacked"),
]


def test_counts_per_exercise():
    one, two = class_summary(RESULTS, ["1.1", "1.2"])
    assert (one["passed"], one["total"]) == (5, 7)
    assert one["counts"] == {"PASS": 5, "FAIL": 1, "TODO": 0, "BLOCKED": 0, "": 1}
    assert (two["passed"], two["counts"]["FAIL"], two["counts"]["TODO"], two["counts"][""]) == (0, 5, 1, 1)


def test_most_frequent_failing_tests_first_each_with_the_first_example_input():
    two = class_summary(RESULTS, ["1.2"])[0]
    tests = [(e["test"], e["count"]) for e in two["failing"]]
    assert tests[0] == ("view shares storage", 3)
    assert sorted(tests[1:]) == [("did not finish in 60 s (an endless loop?) before its first test", 1),
                                 ("negative offsets are refused", 1)]
    top = two["failing"][0]
    # ada failed it first but without an input: bob's is the example
    assert (top["student"], top["input"], top["error"]) == ("bob", "shape=(0, 3)\nstrides=(3, 1)",
                                                            "AssertionError: strides differ")


def test_only_the_top_three_tests_are_listed():
    many = [Result(f"s{k}", {"1.2": _fail(f"test {k % 5}", [f"x={k}"])}) for k in range(12)]
    failing = class_summary(many, ["1.2"])[0]["failing"]
    assert [(e["test"], e["count"]) for e in failing] == [("test 0", 3), ("test 1", 3), ("test 2", 2)]
    assert failing[0]["input"] == "x=0"


def test_summary_is_on_the_gradebook_page_escaped(tmp_path):
    results = RESULTS + [Result("<mal>", {"1.2": _fail("a <script> test", ["x='<b>'"])})]
    page = tmp_path / "gradebook.html"
    write_html(page, results, ["1.1", "1.2"], {"1.1": 1.0, "1.2": 2.0})
    text = page.read_text()
    summary = text[text.index("<h2>Class summary</h2>"):text.index("<h2>Submissions</h2>")]
    assert "<td>1.1</td><td data-sort='5'>5/8</td>" in summary
    assert "<b>3×</b> view shares storage" in summary and "shape=(0, 3)\nstrides=(3, 1)" in summary
    assert "a &lt;script&gt; test" in summary and "x=&#x27;&lt;b&gt;&#x27;" in summary and "<script> test" not in summary
    assert summary_html(class_summary([], ["1.1"])).count("<tr>") == 2  # header and one exercise, nobody graded
