"""Set-up shows progress while pip downloads (tools/setup_steps.py's ``Progress``)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import setup_steps  # noqa: E402


def test_a_download_step_reports_the_bytes_pip_writes(monkeypatch, capsys):
    monkeypatch.setattr(setup_steps.Progress, "every_log", 0.2)
    # a stand-in for pip: writes 3 MB into a pip-unpack- folder of its TMPDIR, a while apart, then removes it
    fake_pip = ("import os, shutil, tempfile, time\n"
                "d = tempfile.mkdtemp(prefix='pip-unpack-')\n"
                "with open(os.path.join(d, 'torch.whl'), 'wb') as f:\n"
                "    for _ in range(3):\n        f.write(b'x' * 1_000_000); f.flush(); time.sleep(0.5)\n"
                "shutil.rmtree(d)\n"
                "os.makedirs(os.path.join(tempfile.gettempdir(), 'pip-build-1'))\n"
                "open(os.path.join(tempfile.gettempdir(), 'pip-build-1', 'big'), 'wb').write(b'y' * 5_000_000)\n"
                "time.sleep(0.5)\n")
    setup_steps.run("step 2/4 (torch)", [sys.executable, "-c", fake_pip], "hint", progress=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if "MB downloaded" in line]
    assert lines and all(line.startswith("[setup]   step 2/4: ") for line in lines), lines
    assert lines[-1].startswith("[setup]   step 2/4: 3 MB downloaded"), lines  # removed file counted, build not
