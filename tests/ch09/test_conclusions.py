"""Chapter 09's reading of the dispatcher's registrations for ``aten::add.Tensor``: the
autograd kernel is registered at the alias key ``Autograd`` and reaches ``AutogradCPU``
only through the computed dispatch table."""
from __future__ import annotations

import re

import torch


def _registered_keys(op: str) -> dict[str, str]:
    dump = torch._C._dispatch_dump(op)
    return dict(re.findall(r"^(\w+(?:\[alias\])?): registered at (\S+?):\d+", dump, re.M))


def test_autograd_kernel_is_registered_at_the_alias_key():
    keys = _registered_keys("aten::add.Tensor")
    assert "Autograd[alias]" in keys and "VariableType" in keys["Autograd[alias]"]
    assert "AutogradCPU" not in keys
    assert "RegisterCPU" in keys["CPU"]


def test_the_computed_table_copies_it_into_autograd_cpu():
    where = _registered_keys("aten::add.Tensor")["Autograd[alias]"]
    table = torch._C._dispatch_dump_table("aten::add.Tensor")
    (line,) = [line for line in table.splitlines() if line.startswith("AutogradCPU:")]
    assert where in line and "[autograd kernel]" in line
