"""Chapter 09's quotes of ``native_functions.yaml`` and ``derivatives.yaml``, checked against
the copies the installed torch ships (inside ``torchgen``, which the torch wheel installs).

Oracle: the files themselves, and the wheel's RECORD that lists them.
"""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import torchgen

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = Path(torchgen.__file__).parent / "packaged"


def _quoted_yaml_blocks() -> list[str]:
    text = (ROOT / "chapters" / "09_dispatcher.py").read_text()
    blocks = re.findall(r"# ```yaml\n(.*?)# ```", text, re.S)
    return ["\n".join(line[2:] for line in block.splitlines()) for block in blocks]


def test_the_torch_wheel_ships_both_yaml_files():
    files = {str(f) for f in metadata.files("torch")}
    assert "torchgen/packaged/ATen/native/native_functions.yaml" in files
    assert "torchgen/packaged/autograd/derivatives.yaml" in files


def test_the_chapter_quotes_the_installed_entries_verbatim():
    native, derivatives = _quoted_yaml_blocks()[:2]
    assert native.startswith("- func: add.Tensor(") and derivatives.startswith("- name: add.Tensor(")
    assert native in (PACKAGED / "ATen" / "native" / "native_functions.yaml").read_text()
    assert derivatives in (PACKAGED / "autograd" / "derivatives.yaml").read_text()
