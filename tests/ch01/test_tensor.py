"""minikernel.Tensor against torch.Tensor: the same call on both, compared by one helper."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, strategies as st

import minikernel as mk
from minikernel import Tensor
from tests.helpers import assert_same_as_torch, shapes, strided_tensors


# ----------------------------------------------------------- no exercise needed
@given(strided_tensors())
def test_from_torch_keeps_header_and_memory(t):
    m = Tensor.from_torch(t)
    assert (m.shape, m.stride(), m.storage_offset()) == (tuple(t.shape), t.stride(), t.storage_offset())
    assert m.data_ptr() == t.data_ptr()
    assert m.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    back = m.to_torch()
    assert back.stride() == t.stride() and torch.equal(back, t)
    if t.untyped_storage().nbytes():  # an empty storage has no address to compare
        assert back.data_ptr() == t.data_ptr()
    assert repr(m) == repr(t)


def test_memory_is_shared_both_ways():
    t = torch.zeros(2, 3)
    m = Tensor.from_torch(t)
    t[1, 2] = 5.0
    assert m.to_torch()[1, 2].item() == 5.0
    m.to_torch()[0, 0] = 7.0
    assert t[0, 0].item() == 7.0


def test_header_queries_match_torch():
    t = torch.arange(24, dtype=torch.float64).view(2, 3, 4)[:, 1:, ::2]
    m = Tensor.from_torch(t)
    assert m.size() == t.size() and m.size(-1) == t.size(-1) and m.stride(1) == t.stride(1)
    assert (m.dim(), m.ndim, m.numel(), m.element_size()) == (t.dim(), t.ndim, t.numel(), t.element_size())
    assert str(m.dtype) == "float64" and len(m) == len(t)
    with pytest.raises(IndexError):
        m.size(3)
    with pytest.raises(IndexError):
        t.size(3)


def test_bad_input_is_refused_clearly():
    with pytest.raises(TypeError, match="dense CPU|unsupported dtype"):
        Tensor.from_torch(torch.zeros(2, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="storage"):
        Tensor(torch.arange(4).numpy(), (3,), (2,), 0)  # reaches position 4 of 4
    with pytest.raises(RuntimeError, match="length of strides and shape"):
        Tensor(torch.arange(4).numpy(), (2, 2), (1,), 0)
    with pytest.raises(ValueError):
        mk.tensor([[1], [2, 3]])  # ragged, as torch.tensor refuses
    with pytest.raises(TypeError, match="ints and slices"):
        Tensor.from_torch(torch.arange(4))["a"]


@given(shapes(max_dims=3), st.sampled_from([int, float]))
def test_tensor_from_data(shape, kind):
    """``minikernel.tensor`` is complete code (autograd needs it in every mode)."""
    data = torch.arange(math.prod(shape)).view(shape).tolist()
    data = data if kind is int else torch.tensor(data, dtype=torch.float64).tolist()
    m, t = mk.tensor(data), torch.tensor(data)
    assert (m.shape, m.stride(), m.storage_offset()) == (tuple(t.shape), t.stride(), 0)
    assert torch.equal(m.to_torch(), t)


def test_tensor_default_dtypes_like_torch():
    assert str(mk.tensor([1.5, 2.0]).dtype) == str(torch.tensor([1.5, 2.0]).dtype).removeprefix("torch.")
    assert str(mk.tensor([[1, 2]]).dtype) == str(torch.tensor([[1, 2]]).dtype).removeprefix("torch.")


# ------------------------------------------------------------------- exercises
@pytest.mark.exercise("1.2")
@given(strided_tensors(), st.data())
def test_getitem(t, data):
    key = []
    for n in t.shape[: data.draw(st.integers(0, t.dim()))]:
        if n and data.draw(st.booleans()):
            key.append(data.draw(st.integers(-n, n - 1)))
        else:
            key.append(slice(data.draw(st.none() | st.integers(0, n + 1)), data.draw(st.none() | st.integers(0, n + 1)),
                             data.draw(st.none() | st.integers(1, 3))))
    assert_same_as_torch(lambda x: x[tuple(key)], t, shares_storage=True)


@pytest.mark.parametrize("key", [2, -3, (0, 0, 0), (slice(None), 3), (slice(None, None, -1),)])
def test_getitem_errors_like_torch(key):  # checked before any exercise runs
    assert_same_as_torch(lambda x: x[key], torch.arange(6).view(2, 3), check_message=True)


@pytest.mark.exercise("1.2")
def test_seed_example_slice_shares_storage():
    a = mk.Tensor.from_torch(torch.arange(6))
    b = a[2:]
    b[1] = 0
    assert a.tolist() == [0, 1, 2, 0, 4, 5]
    assert b.storage_offset() == 2 and b.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()


@pytest.mark.exercise("1.5")
@given(strided_tensors(), st.data())
def test_view(t, data):
    n = t.numel()
    new_shape = data.draw(st.sampled_from([(-1,), (n,), (1, -1), (-1, 1), (2, -1), (-1, 2), (3, -1), (4, 2, -1)]))
    assert_same_as_torch(lambda x: x.view(new_shape), t, check_message=True)


@pytest.mark.exercise("1.5")
def test_view_of_transposed_is_refused_like_torch():
    assert_same_as_torch(lambda x: x.view(3, 4), torch.arange(12).view(2, 6).t(), check_message=True)


# reshape copies (contiguous(): 1.6's is_contiguous, then 1.7) when view (1.5) cannot
# serve it, so it belongs to the last of them: marked 1.7 only, 1.5 and 1.6 grade alone.
@pytest.mark.exercise("1.7")
@given(strided_tensors(), st.sampled_from([(-1,), (1, -1), (-1, 2), (2, -1, 1)]))
def test_reshape(t, new_shape):
    assert_same_as_torch(lambda x: x.reshape(new_shape), t)


@pytest.mark.exercise("1.6")
@given(strided_tensors(), st.data())
def test_permute_transpose_t(t, data):
    dims = data.draw(st.permutations(range(t.dim())))
    assert_same_as_torch(lambda x: x.permute(tuple(dims)), t)
    if t.dim():
        d0, d1 = data.draw(st.integers(-t.dim(), t.dim() - 1)), data.draw(st.integers(-t.dim(), t.dim() - 1))
        assert_same_as_torch(lambda x: x.transpose(d0, d1), t)
    assert_same_as_torch(lambda x: x.t(), t, check_message=True)


@pytest.mark.parametrize("dims", [(0, 0), (0,), (0, 2), (1, -3)])
def test_permute_errors_like_torch(dims):  # checked before any exercise runs
    assert_same_as_torch(lambda x: x.permute(*dims), torch.arange(6).view(2, 3))


@pytest.mark.exercise("1.6")
@given(strided_tensors(max_dims=3), st.data())
def test_expand(t, data):
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    tail = [data.draw(st.sampled_from([n, -1, 3] if n == 1 else [n, -1, n + 1])) for n in t.shape]
    assert_same_as_torch(lambda x: x.expand((*lead, *tail)), t)


@pytest.mark.exercise("1.6")
@given(strided_tensors())
def test_is_contiguous_method(t):
    assert Tensor.from_torch(t).is_contiguous() == t.is_contiguous()


@pytest.mark.exercise("1.7")  # needs 1.6's is_contiguous too: graded with the later one
@given(strided_tensors(dtype=torch.float32))
def test_contiguous_method(t):
    assert_same_as_torch(lambda x: x.contiguous(), t)
