"""``minikernel.course.stub_reload``: a saved exercise file is picked up without a restart.

Each test edits a temporary copy of the course (never the checkout's own files) and
runs a fresh student-mode interpreter on it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.own_mode, pytest.mark.timeout(300)]


@pytest.fixture
def course(tmp_path) -> Path:
    for name in ("minikernel", "solutions", "widgets"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def run(course: Path, script: str) -> str:
    env = dict(os.environ, MINIKERNEL_SOLUTIONS="", PYTHONPATH=str(course), PYTHONDONTWRITEBYTECODE="1")
    env.pop("MINIKERNEL_OVERRIDE", None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=course, env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_saved_body_replaces_the_stub_everywhere_it_was_imported(course):
    out = run(course, """
        import os, time
        import minikernel
        from minikernel import strides as S
        from minikernel.strides import contiguous_strides as imported_by_name
        from minikernel.course import stub_reload, notebook_display as nd
        stub_reload.remember()
        assert stub_reload.reload_changed() == []  # nothing saved yet
        path = S.__file__
        source = open(path).read()
        stub = 'raise NotImplementedError("exercise 1.1 (contiguous_strides) is not implemented yet")'
        body = ("out = [1] * len(shape)\\n    for d in range(len(shape) - 2, -1, -1):\\n"
                "        out[d] = out[d + 1] * max(shape[d + 1], 1)\\n    return helper(out)")
        new = source.replace(stub, body) + "\\n\\ndef helper(out):\\n    return tuple(out)\\n"
        new = "import math  # a line added above every stub\\n" + new
        time.sleep(0.01)
        open(path, "w").write(new)
        done = stub_reload.reload_changed()
        print(done[0])
        print(imported_by_name((2, 3, 4)), S.contiguous_strides((2, 0, 3)))
        # the other stubs moved one line down: the box's link follows them
        print(S.__file__ and open(path).read().splitlines()[int(nd.editor_href("1.2").split("=")[1])])
        open(path, "w").write(new.replace("return helper(out)", "return helper(out"))
        print(stub_reload.reload_changed()[0])
        print(S.contiguous_strides((5,)))  # the last good version stays
    """)
    lines = out.splitlines()
    assert lines[0] == "Reloaded your saved minikernel/strides.py: contiguous_strides, helper."
    assert lines[1] == "(12, 4, 1) (3, 3, 1)"
    assert 'raise NotImplementedError("exercise 1.2 ' in lines[2]
    assert lines[3].startswith("Not reloaded: minikernel/strides.py has an error (SyntaxError at line ")
    assert lines[4] == "(1,)"


def test_kernels_numba_compiled_from_the_old_code_are_compiled_again(course):
    out = run(course, """
        import time
        from minikernel import strides as S
        from minikernel.course import stub_reload
        from minikernel.kernels import cpu
        stub_reload.remember()
        try:  # the helper kernels/cpu.py compiled at import, as its kernels call it
            cpu.index_to_position((1, 2), (5, 1), 2)
        except NotImplementedError as err:
            print("before:", err)
        source = open(S.__file__).read()
        stub = 'raise NotImplementedError("exercise 1.2 (index_to_position) is not implemented yet")'
        body = ("position = offset\\n    for i in range(len(index)):\\n"
                "        position += index[i] * strides[i]\\n    return position")
        time.sleep(0.01)
        open(S.__file__, "w").write(source.replace(stub, body))
        print(stub_reload.reload_changed()[0])
        print("after:", cpu.index_to_position((1, 2), (5, 1), 2))
    """)
    assert "before: exercise 1.2 (index_to_position) is not implemented yet" in out
    assert "Reloaded your saved minikernel/strides.py: index_to_position." in out
    assert "after: 9" in out
