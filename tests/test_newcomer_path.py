"""The notebook layer's newcomer PATH (tools/system_packages.py --newcomer-path).

``make test`` installs graphviz, Chromium and bubblewrap (``--system``) and a developer's machine
may have compilers; ``make lab`` installs none of them. The notebook layer runs under
a PATH that lacks them, so these tests check that the shim hides exactly those
programs, keeps everything else (first folder wins, as in the shell), and says what
to do when it is called without a command.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "system_packages.py"
sys.path.insert(0, str(ROOT / "tools"))
import system_packages  # noqa: E402  (tools/ is not a package)


def _program(folder: Path, name: str, text: str = "#!/bin/sh\necho {name}\n", mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text.format(name=name))
    path.chmod(mode)
    return path


@pytest.fixture
def fake_path(tmp_path: Path) -> str:
    first, second = tmp_path / "first", tmp_path / "second"
    for name in ("dot", "neato", "chromium", "bwrap", "gcc", "gcc-14", "g++", "cc", "x86_64-linux-gnu-g++-12",
                 "clang++-19", "python3", "make", "git", "ccache-like"):
        _program(first, name)
    _program(first, "README", mode=0o644)  # not executable: not a program
    _program(second, "make", text="#!/bin/sh\necho second-{name}\n")  # shadowed by first/make
    _program(second, "sh-only-here")
    (first / "subdir").mkdir()
    return os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])


def test_hides_graphviz_chromium_and_compilers_and_keeps_the_rest(fake_path, tmp_path):
    shim = tmp_path / "shim"
    hidden = system_packages.newcomer_path(shim, fake_path)
    assert hidden == sorted(["dot", "neato", "chromium", "bwrap", "gcc", "gcc-14", "g++", "cc",
                             "x86_64-linux-gnu-g++-12", "clang++-19"])
    assert sorted(p.name for p in shim.iterdir()) == ["ccache-like", "git", "make", "python3", "sh-only-here"]
    assert (shim / "make").resolve() == (tmp_path / "first" / "make").resolve()  # the first on PATH wins


def test_summary_names_dot_and_the_compilers():
    line = system_packages.summary(["cc", "chromium", "dot", "g++", "gcc", "gcc-14", "neato"])
    assert line == "programs dot, chromium and 1 more; C/C++ compilers gcc, g++, cc and 1 more"
    assert "nothing" in system_packages.summary([])


def test_command_runs_without_dot_although_dot_is_on_path(fake_path, tmp_path):

    env = dict(os.environ, PATH=fake_path + os.pathsep + os.path.dirname(sys.executable) + os.pathsep + "/bin")
    probe = ("import shutil; print(shutil.which('dot'), shutil.which('gcc'), "
             "shutil.which('make') is not None)")
    out = subprocess.run([sys.executable, str(TOOL), "--newcomer-path", "--", sys.executable, "-c", probe],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith("[newcomer PATH] hidden, as after `make lab` alone: programs dot")
    assert out.stdout.splitlines()[-1] == "None None True"


def test_exit_code_is_the_command_s(fake_path):
    out = subprocess.run([sys.executable, str(TOOL), "--newcomer-path", "--", sys.executable, "-c",
                          "raise SystemExit(3)"], env=dict(os.environ, PATH=fake_path),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 3


@pytest.mark.parametrize("command", [[], ["no-such-program-here"]])
def test_bad_command_is_one_line_not_a_traceback(fake_path, command):
    out = subprocess.run([sys.executable, str(TOOL), "--newcomer-path", "--", *command],
                         env=dict(os.environ, PATH=fake_path), capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[setup] FAILED: ")
