"""One compute path per op, and what stands in for unfinished exercises.

Every Tensor operator goes through the dispatcher to the CPU backend. There an unfinished
chapter 02 kernel (or chapter 01 stride function, for a view) is replaced by the library's
numpy stand-in, so later chapters run without chapters 01-02; a direct call of
an operator's kernel in ``minikernel.aten`` stays strict, and ``launch.set_reference_fallback(False)`` (chapters 01
and 02) turns the stand-in off. Unfinished exercises are simulated with stubs written here,
so these tests check the same thing in both modes (no ``exercise`` marker).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from minikernel import Tensor, strides
from minikernel.aten import binary_ops
from minikernel.dispatch import trace
from minikernel.kernels import cpu, launch


def unfinished_zip(op, out, out_shape, out_strides, out_offset, a, a_strides, a_offset, b, b_strides, b_offset):
    raise NotImplementedError("exercise 2.3 (cpu_zip) is not implemented yet")


def unfinished_permute_strides(shape, strides, dims):
    raise NotImplementedError("exercise 1.6 (permute_strides) is not implemented yet")


@pytest.fixture
def stand_in_off():
    before = launch.set_reference_fallback(False)
    yield
    launch.set_reference_fallback(before)


def test_an_unfinished_kernel_is_replaced_by_numpy_only_inside_the_dispatcher(monkeypatch):
    monkeypatch.setattr(cpu, "cpu_zip", unfinished_zip)
    t, u = torch.randn(3, 4), torch.randn(4)
    m, v = Tensor.from_torch(t), Tensor.from_torch(u)
    np.testing.assert_allclose((m * v - 2).to_numpy(), (t * u - 2).numpy(), rtol=1e-6)
    w = torch.randn(3)
    assert (Tensor.from_torch(t.T) + Tensor.from_torch(w)).stride() == (t.T + w).stride()  # torch's layout
    with pytest.raises(NotImplementedError, match=r"exercise 2\.3"):
        binary_ops.mul(m, v)  # the kernel path itself stays strict
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        m + Tensor.from_torch(torch.ones(5))  # the same shape error on every path


def test_autograd_computes_through_the_same_backend(monkeypatch):
    monkeypatch.setattr(cpu, "cpu_zip", unfinished_zip)
    t = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    x = Tensor.from_torch(t.detach()).requires_grad_()
    with trace() as steps:
        y = x * x
    assert [(s.op, s.key) for s in steps] == [("aten::mul", "Autograd"), ("aten::mul", "CPU")]
    np.testing.assert_allclose(y.detach().to_numpy(), (t * t).detach().numpy())


def test_chapters_01_02_switch_the_stand_in_off(monkeypatch, stand_in_off):
    monkeypatch.setattr(cpu, "cpu_zip", unfinished_zip)
    monkeypatch.setattr(strides, "permute_strides", unfinished_permute_strides)
    m = Tensor.from_torch(torch.randn(3, 4))
    with pytest.raises(NotImplementedError, match=r"exercise 2\.3"):
        m + m
    with pytest.raises(NotImplementedError, match=r"exercise 1\.6"):
        m.permute(1, 0)


def test_an_unfinished_view_is_computed_by_numpy_with_torchs_header(monkeypatch):
    monkeypatch.setattr(strides, "permute_strides", unfinished_permute_strides)
    t = torch.arange(24.0).reshape(2, 3, 4)[:, 1:, ::2]
    m = Tensor.from_torch(t)
    p, q = m.permute(2, 0, 1), t.permute(2, 0, 1)
    assert (p.shape, p.stride(), p.storage_offset()) == (tuple(q.shape), q.stride(), q.storage_offset())
    assert p._base is m._base or p._base is m  # a view: same memory, same version counter
    assert p._version == m._version
    np.testing.assert_array_equal(p.to_numpy(), q.numpy())


def test_dtypes_no_kernel_takes_use_numpy_in_both_modes():
    t = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    m = Tensor.from_torch(t)
    for mine, theirs in ((m * 3, t * 3), (m.sum(0), t.sum(0)), (m.max(1).values, t.max(1).values)):
        assert mine.to_numpy().tolist() == theirs.tolist()
        assert str(mine.dtype) == str(theirs.dtype).replace("torch.", "")
