"""Chapter 02: where the installed torch's kernels were registered from, and that nothing
of the legacy TH/THC libraries is left. Each count is recomputed here from
``torch._C._dispatch_dump`` and the wheel's files, independently of the helper."""
from __future__ import annotations

import os
import re

import pytest
import torch

from minikernel.course import torch_source


def _registered_paths(op):
    return re.findall(r"registered at (\S+?):\d+", torch._C._dispatch_dump(op))


def test_every_registration_is_counted_once():
    ops = torch._C._dispatch_get_all_op_names()
    counts = torch_source.registration_origins()
    assert sum(counts.values()) == sum(len(_registered_paths(op)) for op in ops)
    assert counts.most_common(1)[0][0] == torch_source.ORIGINS[0][1]  # the generated Register*.cpp lead


def test_no_kernel_comes_from_th():
    ops = torch._C._dispatch_get_all_op_names()
    paths = [p for op in ops for p in _registered_paths(op)]
    assert paths and not any(re.search(r"aten/src/THC?(UNN|NN)?/", p) for p in paths)
    assert torch_source.registration_origins()[torch_source.ORIGINS[-1][1]] == 0


def test_torch_has_no_th_names_or_headers():
    assert [n for n in dir(torch._C) if "TH" in n] == []
    include = os.path.join(os.path.dirname(torch.__file__), "include")
    assert os.path.isdir(os.path.join(include, "ATen")) and os.path.isdir(os.path.join(include, "c10"))
    assert not any(os.path.isdir(os.path.join(include, d)) for d in ("TH", "THC", "THNN", "THCUNN"))
    assert torch_source.legacy_th_names() == {"torch._C": [], "include": []}


@pytest.mark.parametrize("path, origin", [
    ("/__w/pytorch/pytorch/build/aten/src/ATen/RegisterCPU_0.cpp", 0),
    ("/__w/pytorch/pytorch/torch/csrc/autograd/generated/VariableType_2.cpp", 1),
    ("/__w/pytorch/pytorch/aten/src/ATen/native/cpu/BinaryOpsKernel.cpp", 2),
    ("/__w/pytorch/pytorch/aten/src/ATen/functorch/BatchRulesBinaryOps.cpp", 3),
    ("/__w/pytorch/pytorch/aten/src/ATen/autocast_mode.cpp", 4),
    ("/__w/pytorch/pytorch/torch/csrc/distributed/c10d/Ops.cpp", 5),
    ("/old/pytorch/aten/src/TH/generic/THTensor.cpp", 6)])
def test_origin_groups(path, origin):
    assert torch_source._origin(path) == torch_source.ORIGINS[origin][1]


def test_python_and_other_origins():
    assert torch_source._origin("/x/site-packages/torch/_meta_registrations.py") == torch_source.PYTHON_ORIGIN
    assert torch_source._origin("/somewhere/else.cpp") == torch_source.OTHER_ORIGIN


def test_add_cpu_kernel_is_generated():
    dump = torch._C._dispatch_dump("aten::add.Tensor")
    cpu = re.search(r"^CPU: registered at (\S+?):\d+", dump, re.M).group(1)
    assert "build/aten/src/ATen/RegisterCPU" in cpu
    assert torch_source.registration_origins(["aten::add.Tensor"])[torch_source.ORIGINS[0][1]] >= 1


def test_header_lines_name_both_accessor_widths():
    lines = torch_source.header_lines("ATen/core/TensorAccessor.h", r"^using PackedTensorAccessor(32|64)")
    assert len(lines) == 2 and "int32_t" in lines[0] and "int64_t" in lines[1]
    assert torch_source.header_lines("ATen/cuda/detail/OffsetCalculator.cuh", r"typename index_t = uint32_t")


def test_tensor_accessor_defaults_to_64_bit_indices():
    lines = torch_source.header_lines("ATen/core/TensorAccessor.h", r"^using TensorAccessor =", 1)
    assert len(lines) == 2 and lines[0].endswith("typename index_t = int64_t>")
    assert lines[1].startswith("using TensorAccessor =") and lines[1].rstrip(";").endswith("index_t>")
