"""Chapter 01 §8: a tensor's header, and its autograd part, read from torch and minikernel.

Torch is the oracle: each header field of a minikernel view is compared with the
same view of a torch tensor; the C++ members the chapter lists are read from the
installed torch's headers and checked against the Python calls that report them."""
from __future__ import annotations

import pytest
import torch
from torch.autograd import Variable

import minikernel as mk
from minikernel.course import tensor_header, torch_source

VIEWS = {"t()": lambda b: b.t(), "[1:, ::2]": lambda b: b[1:, ::2], "view(2, 6)": lambda b: b.view(2, 6),
         "[:, 1]": lambda b: b[:, 1], "[1].expand(2, 4)": lambda b: b[1].expand(2, 4),
         "permute(1, 0)[2:]": lambda b: b.permute(1, 0)[2:], "itself": lambda b: b}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
@pytest.mark.parametrize("writes", [0, 1, 2])
@pytest.mark.parametrize("name", VIEWS)
def test_view_headers_agree_with_torch(name, writes, dtype):
    sides = []
    for wrap in (lambda t: t, mk.Tensor.from_torch):
        base = wrap(torch.zeros(3, 4, dtype=dtype))
        view = VIEWS[name](base)
        for _ in range(writes):
            base.fill_(1)
        sides.append(tensor_header.header(view, base))
    assert sides[0] == sides[1]
    assert sides[0]["_version"] == writes and sides[0]["storage"] == "base's"


def test_header_reads_the_python_calls():
    t = torch.arange(24.0).view(2, 3, 4).transpose(0, 2)[1:]
    h = tensor_header.header(t)
    assert (h["size"], h["stride"], h["storage_offset"]) == ((3, 3, 2), (1, 4, 12), 1)
    assert h["storage"] == t.untyped_storage().data_ptr() and h["_base"] is True
    assert (h["dtype"], h["device"]) == ("float32", "cpu")
    m = mk.Tensor.from_torch(t)
    assert tensor_header.header(m)["storage"] == h["storage"]  # from_torch shares torch's memory
    assert "own" in tensor_header.summary(t.clone(), t) and "base's" in tensor_header.summary(t[0], t)


def test_tensorimpl_members_hold_the_header():
    members = torch_source.data_members("c10/core/TensorImpl.h", "TensorImpl")
    for field in ("storage_", "autograd_meta_", "version_counter_", "sizes_and_strides_", "storage_offset_",
                  "numel_", "data_type_", "device_opt_", "key_set_"):
        assert field in members
    assert "layout_" not in members  # layout() is derived from key_set_
    assert members.index("storage_") < members.index("sizes_and_strides_") < members.index("key_set_")
    sparse = torch.arange(4.0).to_sparse()
    assert sparse.layout == torch.sparse_coo and "SparseCPU" in str(torch._C._dispatch_keys(sparse))
    assert torch.ones(2).layout == torch.strided and "Sparse" not in str(torch._C._dispatch_keys(torch.ones(2)))
    assert {"indices_", "values_"} <= set(torch_source.data_members("ATen/SparseTensorImpl.h", "SparseTensorImpl"))


def test_autograd_meta_members():
    meta = torch_source.data_members("torch/csrc/autograd/variable.h", "AutogradMeta")
    assert {"grad_", "grad_fn_", "requires_grad_", "output_nr_", "is_view_"} <= set(meta)
    view_meta = torch_source.data_members("torch/csrc/autograd/variable.h", "DifferentiableViewMeta")
    assert "backward_info_" in view_meta and "grad_fn_" not in view_meta
    with pytest.raises(ValueError):
        torch_source.data_members("torch/csrc/autograd/variable.h", "NoSuchStruct")


def test_data_members_parser(tmp_path, monkeypatch):
    (tmp_path / "x.h").write_text(
        "struct API Thing : public Base {\n public:\n  int size() const { return size_; }\n"
        "  // int commented_;\n  static int count_;\n  using T = int;\n"
        "  bool flag_{false};\n private:\n  int64_t size_ = 0;\n  bool bit_ : 1;\n"
        "  std::unique_ptr<Meta> meta_ = nullptr;\n  void f(int a_);\n};\nstruct Other { int other_; };\n")
    monkeypatch.setattr(torch_source, "include_dir", lambda: str(tmp_path))
    assert torch_source.data_members("x.h", "Thing") == ["flag_", "size_", "bit_", "meta_"]
    assert torch_source.data_members("x.h", "Other") == ["other_"]


def test_autograd_part_defaults_inference_and_variable():
    plain = torch.ones(4)
    assert (plain.requires_grad, plain.grad_fn, plain.grad, plain.is_leaf, plain._base) == (False, None, None, True, None)
    assert plain[1:]._base is plain
    with torch.inference_mode():
        frozen_view = torch.ones(4)[1:]
    assert frozen_view._base is None and frozen_view.is_inference()
    wrapped = Variable(plain)
    assert type(wrapped) is torch.Tensor and wrapped.data_ptr() == plain.data_ptr()
    assert isinstance(plain, Variable)


AUTOGRAD_VIEWS = {"plain": lambda b: b, "leaf": lambda b: b.requires_grad_(),
                  "leaf.t()": lambda b: b.requires_grad_().t(), "leaf.detach()": lambda b: b.requires_grad_().detach(),
                  "leaf[1:]": lambda b: b.requires_grad_()[1:]}


@pytest.mark.parametrize("name", AUTOGRAD_VIEWS)
def test_autograd_fields_agree_with_torch(name):
    sides = []
    for wrap in (lambda t: t, mk.Tensor.from_torch):
        base = wrap(torch.ones(2, 3))
        h = tensor_header.header(AUTOGRAD_VIEWS[name](base), base)
        sides.append((h["requires_grad"], h["grad_fn"], h["is_leaf"], h["_base"]))
    assert sides[0] == sides[1]


def test_tensorimpl_says_autograd_meta_may_be_null():
    lines = torch_source.header_lines("c10/core/TensorImpl.h", r"autograd_meta_ can be nullptr|field set to null")
    assert len(lines) == 2 and "std::unique_ptr<c10::AutogradMetaInterface> autograd_meta_" in "\n".join(
        torch_source.header_lines("c10/core/TensorImpl.h", r"autograd_meta_ = nullptr;"))
