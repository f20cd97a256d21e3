"""What surrounds the kernels, checked against torch without any exercise: the two
dispatches, type promotion, output strides, loop order, devices and error checks.
These tests pass in both modes (no ``exercise`` marker)."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minikernel as mk
from minikernel import Tensor, device as dev
from minikernel.aten import binary_ops, linalg, reduce_ops, tensor_iterator, unary_ops
from minikernel.kernels import layout
from tests.ch02.strategies import laid_out, tensors
from tests.helpers import headers, strided_tensors

DT = {torch.float32: mk.float32, torch.float64: mk.float64, torch.int64: mk.int64}


# ------------------------------------------------------------- dtype rules
@st.composite
def operands(draw):
    """A torch operand (tensor with 0 or 1 dims, or a Python number) and its minikernel twin."""
    kind = draw(st.sampled_from(["tensor", "zero-d", "int", "float"]))
    if kind == "int":
        value = draw(st.integers(-3, 3))
        return value, value
    if kind == "float":
        value = draw(st.sampled_from([0.5, -2.0, 3.25]))
        return value, value
    dtype = draw(st.sampled_from(list(DT)))
    t = torch.ones(2, dtype=dtype) if kind == "tensor" else torch.tensor(1, dtype=dtype)
    return t, Tensor.from_torch(t)


@given(operands(), operands())
def test_result_type_matches_torch(x, y):
    if not any(isinstance(o[0], torch.Tensor) for o in (x, y)):
        return
    expected = torch.result_type(x[0], y[0])
    assert tensor_iterator.result_type(x[1], y[1]) == DT[expected]


# ----------------------------------------------------------- output layout
@given(strided_tensors(max_dims=4, max_side=3))
def test_unary_output_strides_match_torch(t):
    assert layout.output_strides(t.shape, [(t.shape, t.stride())]) == torch.neg(t).stride()


@given(strided_tensors(max_dims=3, max_side=3), st.data())
def test_binary_output_strides_match_torch(t, data):
    # the other operand: a shape that broadcasts with t's, in a random layout
    shape = [data.draw(st.sampled_from([n, 1])) for n in t.shape][data.draw(st.integers(0, t.dim())):]
    u = laid_out(torch.zeros(shape, dtype=t.dtype), data)
    x, y = (t, u) if data.draw(st.booleans()) else (u, t)
    out_shape = torch.broadcast_shapes(x.shape, y.shape)
    expected = (x + y).stride()
    assert layout.output_strides(out_shape, [(x.shape, x.stride()), (y.shape, y.stride())]) == expected


@given(headers(max_dims=4, max_side=3), st.data())
def test_iteration_layout_visits_the_same_positions(header, data):
    """Reordering and merging dimensions must pair the same output and input positions."""
    shape, in_strides, in_offset = header
    out_strides = data.draw(st.sampled_from([layout.contiguous_strides(shape),
                                             layout.output_strides(shape, [(shape, in_strides)])]))

    def pairs(shape_, a, b, offset_b):
        return sorted((sum(i * s for i, s in zip(idx, a)), offset_b + sum(i * s for i, s in zip(idx, b)))
                      for idx in itertools.product(*map(range, shape_)))

    new_shape, (new_out, new_in) = layout.iteration_layout(shape, out_strides, in_strides)
    assert len(new_shape) >= 1 and len(new_shape) <= max(len(shape), 1)
    if 0 not in shape:
        assert pairs(new_shape, new_out, new_in, in_offset) == pairs(shape, out_strides, in_strides, in_offset)
    assert list(new_out) == sorted(new_out, reverse=True), "the output's fastest dimension must come last"


def test_iteration_layout_flattens_what_it_can():
    assert layout.iteration_layout((3, 4), (4, 1), (4, 1)) == ((12,), [(1,), (1,)])
    assert layout.iteration_layout((3, 4), (1, 3), (1, 3)) == ((12,), [(1,), (1,)])  # x.t().exp()
    assert layout.iteration_layout((3, 4), (4, 1), (1, 3)) == ((3, 4), [(4, 1), (1, 3)])
    assert layout.iteration_layout((), (), ()) == ((1,), [(0,), (0,)])


# ------------------------------------------------------------------ devices
def test_backend_was_chosen_before_numba():
    assert dev.CUDA_BACKEND in ("gpu", "simulator")
    if dev.cuda_device_count() == 0 and os.environ.get("NUMBA_ENABLE_CUDASIM", "") != "0":
        assert dev.SIMULATOR and os.environ["NUMBA_ENABLE_CUDASIM"] == "1"
    from numba import config

    assert bool(config.ENABLE_CUDASIM) == dev.SIMULATOR
    assert dev.is_available()


def test_device_parsing_like_torch():
    assert dev.device("cuda:0") == dev.Device("cuda", 0) and str(dev.device("cuda")) == "cuda"
    assert repr(dev.device("cpu")) == repr(torch.device("cpu"))
    assert repr(dev.device("cuda:0")) == repr(torch.device("cuda:0"))
    with pytest.raises(RuntimeError):
        dev.device("tpu")
    with pytest.raises(RuntimeError):
        dev.device("cuda:x")


@given(tensors(max_dims=3, max_side=3))
def test_to_cuda_and_back_keeps_values_and_torchs_strides(t):
    m = Tensor.from_torch(t)
    g = m.to("cuda")
    assert g.device == dev.Device("cuda", 0) and m.device == dev.Device("cpu")
    assert g.shape == tuple(t.shape) and g.dtype == m.dtype
    assert g.stride() == torch.empty_like(t).stride(), "a copy keeps the layout like torch's .to()"
    back = g.cpu()
    assert back.device.type == "cpu" and torch.equal(back.to_torch(), t)
    assert back.to_torch().data_ptr() != t.data_ptr() or t.numel() == 0  # copies, not views
    assert m.to("cpu") is m and g.cuda() is g
    assert g.tolist() == t.tolist()


def test_cuda_tensors_print_and_refuse_host_access():
    g = Tensor.from_torch(torch.tensor([[1.0, 2.0]])).cuda()
    assert repr(g) == "tensor([[1., 2.]], device='cuda:0')"
    assert repr(Tensor.from_torch(torch.tensor([1, 2], dtype=torch.int32)).cuda()) == \
        "tensor([1, 2], device='cuda:0', dtype=torch.int32)"
    with pytest.raises(TypeError, match="cpu"):
        g.to_torch()
    with pytest.raises(TypeError, match="cpu"):
        g._numpy_view()
    assert g.item() if g.numel() == 1 else g.cpu().to_torch().sum().item() == 3.0


# ------------------------------------------------- errors before any kernel
def _same(mine, theirs, message=True):
    try:
        theirs()
    except Exception as expected:  # noqa: BLE001
        with pytest.raises(type(expected)) as got:
            mine()
        if message:
            assert str(got.value) == str(expected)
        return
    raise AssertionError("torch accepted this")


def test_mixed_devices_are_refused():
    a = Tensor.from_torch(torch.ones(2))
    with pytest.raises(RuntimeError, match="same device.*cpu and cuda:0"):
        a + a.cuda()
    with pytest.raises(RuntimeError, match="same device"):
        a.cuda() @ Tensor.from_torch(torch.ones(2))


def test_dtypes_no_kernel_takes_are_refused_by_the_kernel_path_and_computed_by_the_reference_backend():
    t = torch.arange(1, 7, dtype=torch.int32).reshape(2, 3)
    i, it = Tensor.from_torch(t), Tensor.from_torch(t.T.contiguous())
    for call in (lambda: binary_ops.add(i, i), lambda: unary_ops.exp(i), lambda: reduce_ops.sum(i), lambda: linalg.matmul(i, it)):
        with pytest.raises(RuntimeError, match="not implemented for 'Int'.*float32, float64 and int64"):
            call()
    # through the dispatcher (Tensor operators) the numpy reference backend takes them, as torch does
    for mine, theirs in ((i + i, t + t), (i.exp(), t.exp()), (i.sum(), t.sum()), (i.sum(1), t.sum(1)),
                         (i @ it, t @ t.T), (i > 2, t > 2)):
        assert mine.dtype == Tensor.from_torch(theirs).dtype
        np.testing.assert_allclose(mine.to_numpy(), theirs.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="Tensors or Python int/float"):
        Tensor.from_torch(torch.ones(2)) + True
    with pytest.raises(TypeError, match="Tensors or Python int/float"):
        binary_ops.add(Tensor.from_torch(torch.ones(2)), "1")


def test_matmul_and_mean_refusals_match_torch():
    a, d = torch.ones(2, 2), torch.ones(2, 2, dtype=torch.float64)
    _same(lambda: Tensor.from_torch(a) @ Tensor.from_torch(d), lambda: a @ d)
    s, v = torch.tensor(1.0), torch.ones(3)
    _same(lambda: Tensor.from_torch(s) @ Tensor.from_torch(v), lambda: s @ v)
    n = torch.ones(3, dtype=torch.int64)
    _same(lambda: Tensor.from_torch(n).mean(), lambda: n.mean())


def test_max_along_a_dim_and_sums_over_several_dims_match_torch():
    t = torch.tensor([[1.0, 5.0, 5.0], [float("nan"), 0.0, 2.0]])
    m = Tensor.from_torch(t)
    for keepdim in (False, True):
        mine, theirs = m.max(1, keepdim), t.max(1, keepdim)
        assert np.array_equal(mine.values.to_numpy(), theirs.values.numpy(), equal_nan=True)
        assert mine.indices.to_numpy().tolist() == theirs.indices.tolist()
        assert mine.values.shape == tuple(theirs.values.shape)
        x = torch.arange(24.0).reshape(2, 3, 4)
        for dims in ((0, 2), (-1, 0), (1,)):
            got = Tensor.from_torch(x).sum(dims, keepdim)
            assert got.shape == tuple(x.sum(dims, keepdim).shape)
            assert got.to_numpy().tolist() == x.sum(dims, keepdim).tolist()
    with pytest.raises(TypeError, match="dim must be an int"):
        m.max(1.5)
