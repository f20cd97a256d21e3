"""Chapter 01 exercises (minikernel/strides.py), each checked against torch."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given, strategies as st

from minikernel import strides as S
from tests.helpers import as_strided, headers, shapes
from tests.torch_versions import quoted_since


def _raises(fn, *args):
    """(result, exception type) of fn(*args), letting stubs through."""
    try:
        return fn(*args), None
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001
        return None, err


@pytest.mark.exercise("1.1")
@given(shapes())
def test_contiguous_strides(shape):
    assert S.contiguous_strides(shape) == torch.empty(shape).stride()


@pytest.mark.exercise("1.1")
def test_contiguous_strides_examples():
    assert S.contiguous_strides((2, 3)) == torch.arange(6).reshape(2, 3).stride()
    assert S.contiguous_strides(()) == torch.tensor(1.0).stride()
    assert S.contiguous_strides((2, 0, 3)) == torch.empty(2, 0, 3).stride()


@pytest.mark.exercise("1.2")
@given(headers(nonempty=True), st.data())
def test_index_to_position(header, data):
    shape, strides, offset = header
    index = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    t = as_strided(shape, strides, offset)  # every value is its own storage position
    assert S.index_to_position(index, strides, offset) == t[index].item()


@pytest.mark.exercise("1.2")
def test_index_to_position_default_offset():
    assert S.index_to_position((1, 2), (3, 1)) == torch.arange(6).view(2, 3)[1, 2].item()


@pytest.mark.exercise("1.3")
@given(shapes().filter(lambda s: math.prod(s) > 0), st.data())
def test_to_index(shape, data):
    ordinal = data.draw(st.integers(0, math.prod(shape) - 1))
    expected = tuple(int(i) for i in torch.unravel_index(torch.tensor(ordinal), shape))
    assert tuple(S.to_index(ordinal, shape)) == expected


@pytest.mark.exercise("1.3")
@pytest.mark.parametrize("ordinal", [-1, 6, 100])
def test_to_index_out_of_range(ordinal):
    with pytest.raises(IndexError):
        S.to_index(ordinal, (2, 3))


@pytest.mark.exercise("1.4")
@given(shapes(), shapes())
def test_broadcast_shape(a, b):
    expected, torch_error = _raises(torch.broadcast_shapes, a, b)
    got, error = _raises(S.broadcast_shape, a, b)
    if torch_error is not None:
        assert isinstance(error, RuntimeError), f"torch refuses {a} and {b}; got {got!r}"
        message = str(error)
        assert str(a) in message and str(b) in message, f"name both shapes in the message: {message!r}"
    else:
        assert error is None, f"torch broadcasts {a} and {b} to {tuple(expected)}, you raised {error!r}"
        assert tuple(got) == tuple(expected)


@pytest.mark.exercise("1.4")
@given(shapes(max_side=3), st.data())
def test_broadcast_index(big_shape, data):
    # a smaller shape that broadcasts to big_shape: drop leading dims, set some to 1
    keep = data.draw(st.integers(0, len(big_shape)))
    shape = tuple(data.draw(st.sampled_from([n, 1])) for n in big_shape[len(big_shape) - keep:])
    x = torch.arange(math.prod(shape)).view(shape)
    big = torch.broadcast_to(x, big_shape)
    assume(big.numel() > 0)
    big_index = tuple(data.draw(st.integers(0, n - 1)) for n in big_shape)
    small_index = tuple(S.broadcast_index(big_index, big_shape, shape))
    assert len(small_index) == len(shape)
    assert x[small_index].item() == big[big_index].item()


def _says_where(shape, message):
    """The docstring's words for a size below -1 (torch's from 2.11 on): torch before 2.11
    says only "invalid shape dimension -2", without "at index 0 of shape [-2]"."""
    bad = [d for d, size in enumerate(shape) if size < -1]
    if bad and message == f"invalid shape dimension {shape[bad[0]]}":
        return f"{message} at index {bad[0]} of shape [{', '.join(str(s) for s in shape)}]"
    return message


@pytest.mark.exercise("1.5")
@given(st.integers(0, 24), st.lists(st.integers(-2, 6), max_size=4).map(tuple))
def test_infer_size(numel, shape):
    expected, torch_error = _raises(lambda: torch.empty(numel).view(shape).shape)
    got, error = _raises(S.infer_size, shape, numel)
    if torch_error is not None:
        assert type(error) is type(torch_error), f"torch raised {torch_error!r}, you {error!r}"
        assert str(error) == quoted_since("2.11", str(torch_error), _says_where(shape, str(torch_error)))
    else:
        assert error is None, f"torch accepts {shape} for {numel} elements; you raised {error!r}"
        assert tuple(got) == tuple(expected)


@pytest.mark.exercise("1.5")
@given(headers(), st.data())
def test_view_strides(header, data):
    shape, strides, offset = header
    t = as_strided(shape, strides, offset)
    numel = t.numel()
    # a new shape with the same number of elements, sometimes with a -1
    factors = data.draw(st.lists(st.integers(1, 4), max_size=3))
    new_shape = list(factors)
    rest = numel // math.prod(factors) if numel and numel % math.prod(factors) == 0 else None
    if rest is None:
        new_shape = data.draw(st.sampled_from([[numel], [1, numel], [numel, 1]]))
    else:
        new_shape.insert(data.draw(st.integers(0, len(new_shape))), rest)
        new_shape = data.draw(st.permutations(new_shape)).copy()
        if data.draw(st.booleans()) and 0 not in new_shape:
            new_shape[data.draw(st.integers(0, len(new_shape) - 1))] = -1
    try:
        expected = t.view(new_shape).stride()
    except RuntimeError:
        expected = None
    got = S.view_strides(shape, strides, new_shape)
    assert (None if got is None else tuple(got)) == expected, (
        f"view{tuple(new_shape)} of shape {shape} strides {strides}")


@pytest.mark.exercise("1.5")
def test_view_strides_seed_examples():
    t = torch.arange(12).view(2, 6).t()  # not contiguous: view(3, 4) must be refused
    assert S.view_strides(t.shape, t.stride(), (3, 4)) is None
    assert S.view_strides((2, 3), (3, 1), (3, 2)) == torch.arange(6).view(2, 3).view(3, 2).stride()
    assert S.view_strides((2, 3), (3, 1), (-1,)) == (1,)


@pytest.mark.exercise("1.6")
@given(headers(), st.data())
def test_permute_strides(header, data):
    shape, strides, offset = header
    dims = data.draw(st.permutations(range(len(shape))))
    t = as_strided(shape, strides, offset).permute(tuple(dims))
    got_shape, got_strides = S.permute_strides(shape, strides, tuple(dims))
    assert (tuple(got_shape), tuple(got_strides)) == (tuple(t.shape), t.stride())


@pytest.mark.exercise("1.6")
@given(headers(max_dims=3), st.data())
def test_expand_strides(header, data):
    shape, strides, offset = header
    t = as_strided(shape, strides, offset)
    # torch lets a 0-d tensor "expand" to size -1 (a negative size); don't ask for that
    lead = data.draw(st.lists(st.integers(-1 if shape else 0, 3), max_size=2))
    tail = [data.draw(st.sampled_from([n, -1, 2, 3] if n == 1 else [n, -1, n + 1])) for n in shape]
    new_shape = tuple(lead + tail)
    expected, torch_error = _raises(lambda: t.expand(new_shape).stride())
    got, error = _raises(S.expand_strides, shape, strides, new_shape)
    if torch_error is not None:
        assert isinstance(error, RuntimeError), f"torch refuses expand{new_shape} of {shape}; got {got!r}"
    else:
        assert error is None, f"torch allows expand{new_shape} of {shape}; you raised {error!r}"
        assert tuple(got) == expected


@pytest.mark.exercise("1.6")
def test_expand_strides_too_few_sizes():
    _, error = _raises(S.expand_strides, (2, 3), (3, 1), (3,))  # NotImplementedError is a RuntimeError
    assert type(error) is RuntimeError


@pytest.mark.exercise("1.6")
@given(headers())
def test_is_contiguous(header):
    shape, strides, offset = header
    assert S.is_contiguous(shape, strides) == as_strided(shape, strides, offset).is_contiguous()


@pytest.mark.exercise("1.6")
@given(shapes())
def test_is_contiguous_of_contiguous_and_transposed(shape):
    t = torch.empty(shape)
    assert S.is_contiguous(shape, t.stride())
    if t.dim() >= 2:
        u = t.transpose(0, -1)
        assert S.is_contiguous(u.shape, u.stride()) == u.is_contiguous()


@pytest.mark.exercise("1.7")
@given(headers(max_side=3), st.sampled_from([torch.int64, torch.float32, torch.float64]))
def test_contiguous(header, dtype):
    shape, strides, offset = header
    t = as_strided(shape, strides, offset, dtype)
    storage = t.untyped_storage()
    flat = torch.empty(0, dtype=dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))
    out = S.contiguous(flat.numpy(), shape, strides, offset)
    assert out.dtype == flat.numpy().dtype
    assert out.shape == (t.numel(),)
    assert torch.equal(torch.from_numpy(out), t.contiguous().flatten())
