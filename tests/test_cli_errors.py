"""Every command-line error names what the user typed: ``python -m minikernel COMMAND``
with a malformed argument, a missing path, a port in use, an unknown ID or an empty
selection exits with a non-zero status and a line naming that argument, never a
traceback."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.own_mode  # each command runs in its own process and mode


@pytest.fixture(scope="module")
def busy_port():
    """A port something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield str(sock.getsockname()[1])


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli")
    (base / "empty").mkdir()
    (base / "full").mkdir()
    (base / "full" / "file").write_text("")
    (base / "subs").mkdir()
    (base / "subs" / "alice").mkdir()
    (base / "bad.json").write_text("{not json")
    return base


# (arguments, the text the error line must hold); {tmp} is a scratch folder, {port} a port in use.
CASES = [
    (["grade", "abc"], "'abc' is not an exercise ID"),
    (["grade", "9.9"], "'9.9'"),
    (["grade", "1.2", "--timeout", "0"], "--timeout"),
    (["grade", "-j", "x"], "'x'"),
    (["gradebook", "{tmp}/missing", "--out", "{tmp}/o"], "{tmp}/missing"),
    (["gradebook", "{tmp}/empty", "--out", "{tmp}/o"], "{tmp}/empty holds no submissions"),
    (["gradebook", "{tmp}/subs", "--out", "{tmp}/o", "--exercises", "abc"], "'abc'"),
    (["gradebook", "{tmp}/subs", "--out", "{tmp}/o", "--exercises", "9.9"], "--exercises"),
    (["gradebook", "{tmp}/subs", "--out", "{tmp}/o", "--weights", "{tmp}/nowhere.json"], "{tmp}/nowhere.json"),
    (["gradebook", "{tmp}/subs", "--out", "{tmp}/o", "--weights", "{tmp}/bad.json"], "{tmp}/bad.json"),
    (["gradebook", "{tmp}/subs", "--out", "{tmp}/o", "-j", "0"], "-j/--jobs"),
    (["gradebook", "{tmp}/subs"], "--out"),
    (["release", "{tmp}/full"], "{tmp}/full"),
    (["release", "{tmp}/new", "--keep", "abc"], "--keep 'abc'"),
    (["lab", "--port", "99999"], "99999"),
    (["lab", "--port", "{port}"], "port {port} is in use"),
    (["dashboard", "--port", "abc"], "'abc'"),
    (["dashboard", "--port", "{port}"], "port {port} is in use"),
    (["tensorboard", "--port", "-1"], "-1"),
    (["notebooks", "99"], "'99'"),
    (["frobnicate"], "'frobnicate'"),
]


@pytest.mark.parametrize("args, named", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input_is_named_in_one_line(args, named, places, busy_port):
    fill = {"tmp": str(places), "port": busy_port}
    args = [a.format(**fill) for a in args]
    named = named.format(**fill)
    env = {k: v for k, v in os.environ.items() if k != "MINIKERNEL_SOLUTIONS"}
    proc = subprocess.run([sys.executable, "-m", "minikernel", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"exit status 0 for bad input:\n{output}"
    assert "Traceback" not in output, output
    assert any(named in line for line in output.splitlines()), f"no line names {named!r}:\n{output}"


def test_bench_without_a_matching_row_ends_without_a_traceback():
    proc = subprocess.run([sys.executable, "-m", "minikernel", "bench", "--quick", "-k", "no such row"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output, output
