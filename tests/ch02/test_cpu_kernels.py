"""Exercises 2.2–2.5: the CPU kernels, called directly on raw strided headers and
through minikernel's Tensor operations, each compared with the same torch call."""
from __future__ import annotations

import pytest
import torch
from hypothesis import assume, example, given, settings, strategies as st

from minikernel import Tensor
from minikernel.aten import binary_ops, reduce_ops, unary_ops
from minikernel.kernels import launch
from minikernel.kernels.scalar_ops import BINARY, MAX, SUM, UNARY
from tests.ch02.strategies import (
    assert_values,
    blank_like_contiguous,
    broadcastable_pair,
    kernel_args,
    laid_out,
    tensors,
)

UNARY_NAMES = ["neg", "exp", "log", "relu", "sigmoid"]
BINARY_NAMES = ["add", "sub", "mul", "div"]
DTYPE_PAIRS = [(torch.float32, torch.float32), (torch.float64, torch.float64), (torch.int64, torch.int64),
               (torch.int64, torch.float32), (torch.float32, torch.float64)]


def _unary_dtype(name: str, dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if name in ("exp", "log", "sigmoid") and not dtype.is_floating_point else dtype


def _random(shape, dtype, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return torch.randint(-9, 10, shape, generator=g, dtype=dtype)


def _raises(fn, *args, **kwargs):
    """The exception fn raises (None if none), letting stubs through."""
    try:
        fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 - the error is the result being compared
        return err
    return None


def assert_same_error(mine, theirs, message: bool = True):
    err, expected = _raises(mine), _raises(theirs)
    assert expected is not None, "torch accepted this; the test is wrong"
    assert type(err) is type(expected), f"torch raised {expected!r}, minikernel raised {err!r}"
    if message:
        assert str(err) == str(expected)


# ------------------------------------------------------------------ 2.2 map
@pytest.mark.exercise("2.2")
@settings(max_examples=40)
@given(tensors(nonempty=True), st.sampled_from(UNARY_NAMES), st.data())
def test_cpu_map_kernel_on_raw_headers(t, name, data):
    assume(t.dim() >= 1)
    expected = getattr(torch, name)(t)
    out = laid_out(blank_like_contiguous(t.shape, _unary_dtype(name, t.dtype)), data)
    o_storage, shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(t)
    launch.kernel("cpu", "map")(UNARY[name], o_storage, shape, o_strides, o_offset, a_storage, a_strides, a_offset)
    assert_values(out, expected)


@pytest.mark.exercise("2.2")
@settings(max_examples=60)
@given(tensors(), st.sampled_from(UNARY_NAMES))
def test_unary_ops_match_torch(t, name):
    got = getattr(Tensor.from_torch(t), name)()
    expected = getattr(t, name)()
    assert_values(got.to_torch(), expected)
    assert got.stride() == expected.stride(), f"output strides {got.stride()} != torch's {expected.stride()}"


@pytest.mark.exercise("2.2")
def test_unary_out_and_inplace_variants():
    x = torch.tensor([[-1.5, 0.0, 2.0], [3.0, -0.5, 1.0]])
    m = Tensor.from_torch(x.clone())
    out = Tensor.from_torch(torch.empty(2, 3, dtype=torch.float64))
    assert unary_ops.exp(m, out=out) is out  # out=: written in place and returned
    assert_values(out.to_torch(), torch.exp(x, out=torch.empty(2, 3, dtype=torch.float64)))
    same = m.relu_()
    assert same is m and torch.equal(m.to_torch(), x.relu())  # in-place: the memory changed
    assert_same_error(lambda: Tensor.from_torch(torch.arange(3)).exp_(), lambda: torch.arange(3).exp_())
    assert (-m).to_torch().equal(-(x.relu()))


@pytest.mark.exercise("2.2")
def test_unary_special_values_like_torch():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 100.0, -100.0])
    for name in UNARY_NAMES:
        assert_values(getattr(Tensor.from_torch(x), name)().to_torch(), getattr(x, name)())


@pytest.mark.exercise("2.2")
def test_unary_out_overlap_refused_like_torch():
    x = torch.arange(6.0)
    F = Tensor.from_torch  # views are made by torch: from_torch keeps their memory and header
    assert_same_error(lambda: unary_ops.neg(F(x[0:4]), out=F(x[2:6])), lambda: torch.neg(x[0:4], out=x[2:6]))
    wide = torch.zeros(3)
    assert_same_error(lambda: unary_ops.neg(F(torch.ones(2, 3)), out=F(wide.expand(2, 3))),
                      lambda: torch.neg(torch.ones(2, 3), out=wide.expand(2, 3)))


# ------------------------------------------------------------------ 2.3 zip
@pytest.mark.exercise("2.3")
@settings(max_examples=40)
@given(broadcastable_pair(), st.sampled_from(BINARY_NAMES), st.sampled_from(DTYPE_PAIRS[:3]), st.data())
def test_cpu_zip_kernel_on_raw_headers(shapes, name, dtypes, data):
    x = laid_out(_random(shapes[0], dtypes[0], 1), data)
    y = laid_out(_random(shapes[1], dtypes[1], 2), data)
    expected = getattr(torch, name)(x, y)
    assume(expected.dim() >= 1 and expected.numel() > 0)
    out = laid_out(blank_like_contiguous(expected.shape, expected.dtype), data)
    o_storage, shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(torch.broadcast_to(x, expected.shape))  # stride 0: broadcast
    b_storage, _, b_strides, b_offset = kernel_args(torch.broadcast_to(y, expected.shape))
    launch.kernel("cpu", "zip")(BINARY[name], o_storage, shape, o_strides, o_offset,
                                a_storage, a_strides, a_offset, b_storage, b_strides, b_offset)
    assert_values(out, expected)


@pytest.mark.exercise("2.3")
@settings(max_examples=60)
@given(broadcastable_pair(), st.sampled_from(BINARY_NAMES), st.sampled_from(DTYPE_PAIRS), st.data())
def test_binary_ops_match_torch(shapes, name, dtypes, data):
    x = laid_out(_random(shapes[0], dtypes[0], 1), data)
    y = laid_out(_random(shapes[1], dtypes[1], 2), data)
    if data.draw(st.booleans()):
        x, y = y, x
    symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[name]
    got = eval(f"a {symbol} b", {"a": Tensor.from_torch(x), "b": Tensor.from_torch(y)})
    expected = eval(f"a {symbol} b", {"a": x, "b": y})
    assert_values(got.to_torch(), expected)
    assert got.stride() == expected.stride(), f"output strides {got.stride()} != torch's {expected.stride()}"


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
@pytest.mark.parametrize("scalar", [2, -3, 0.5, 0])
def test_python_numbers_promote_like_torch(dtype, scalar):
    x = _random((2, 3), dtype, 3)
    m = Tensor.from_torch(x)
    for mine, theirs in [(m + scalar, x + scalar), (scalar - m, scalar - x), (m * scalar, x * scalar),
                         (scalar / m, scalar / x), (m / scalar, x / scalar)]:
        assert_values(mine.to_torch(), theirs)


@pytest.mark.exercise("2.3")
def test_binary_out_and_inplace_variants():
    x, y = torch.arange(6.0).view(2, 3), torch.tensor([10.0, 20.0, 30.0])
    m = Tensor.from_torch(x.clone())
    out = Tensor.from_torch(torch.empty(2, 3))
    assert binary_ops.add(m, Tensor.from_torch(y), out=out) is out
    assert torch.equal(out.to_torch(), x + y)
    m += Tensor.from_torch(y)  # __iadd__ is add_: the same memory
    assert torch.equal(m.to_torch(), x + y)
    m.mul_(2).sub_(1).div_(4)
    assert torch.equal(m.to_torch(), ((x + y) * 2 - 1) / 4)


@pytest.mark.exercise("2.3")
def test_binary_errors_like_torch():
    a, b = torch.ones(2, 3), torch.ones(4)
    assert_same_error(lambda: Tensor.from_torch(a) + Tensor.from_torch(b), lambda: a + b, message=False)
    small = torch.ones(3)
    assert_same_error(lambda: Tensor.from_torch(small).add_(Tensor.from_torch(torch.ones(2, 3))),
                      lambda: small.add_(torch.ones(2, 3)))
    ints = torch.arange(3)
    assert_same_error(lambda: Tensor.from_torch(ints).add_(0.5), lambda: ints.add_(0.5))
    assert_same_error(lambda: Tensor.from_torch(ints).div_(2), lambda: ints.div_(2))
    row = torch.zeros(3)
    assert_same_error(lambda: Tensor.from_torch(row.expand(2, 3)).add_(1), lambda: row.expand(2, 3).add_(1))
    sq = torch.ones(3, 3)
    assert_same_error(lambda: Tensor.from_torch(sq).add_(Tensor.from_torch(sq.t())), lambda: sq.add_(sq.t()))


@pytest.mark.exercise("2.3")
def test_division_by_zero_like_torch():
    x = torch.tensor([1.0, -1.0, 0.0])
    assert_values((Tensor.from_torch(x) / 0.0).to_torch(), x / 0.0)
    i = torch.tensor([1, -1, 0])
    assert_values((Tensor.from_torch(i) / Tensor.from_torch(torch.zeros(3, dtype=torch.int64))).to_torch(),
                  i / torch.zeros(3, dtype=torch.int64))


# --------------------------------------------------------------- 2.4 reduce
@pytest.mark.exercise("2.4")
@settings(max_examples=40)
@given(tensors(nonempty=True), st.sampled_from(["sum", "amax"]), st.data())
def test_cpu_reduce_kernel_on_raw_headers(t, name, data):
    assume(t.dim() >= 1)
    dim = data.draw(st.integers(0, t.dim() - 1))
    assume(name == "sum" or t.shape[dim] > 0)
    expected = getattr(torch, name)(t, dim, keepdim=True)
    out = laid_out(blank_like_contiguous(expected.shape, t.dtype), data)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, a_shape, a_strides, a_offset = kernel_args(t)
    op = SUM if name == "sum" else MAX
    identity = reduce_ops._identity(op, a_storage.dtype)
    launch.kernel("cpu", "reduce")(op, identity, o_storage, o_shape, o_strides, o_offset,
                                   a_storage, a_shape, a_strides, a_offset, dim)
    assert_values(out, expected)


@pytest.mark.exercise("2.4")
@settings(max_examples=60)
@given(tensors(), st.data())
def test_reductions_along_a_dim_match_torch(t, data):
    dim = data.draw(st.integers(-max(t.dim(), 1), max(t.dim(), 1) - 1))
    keepdim = data.draw(st.booleans())
    m = Tensor.from_torch(t)
    assert_values(m.sum(dim, keepdim).to_torch(), t.sum(dim, keepdim))
    if t.dim() == 0 or t.shape[dim] > 0:
        assert_values(m.amax(dim, keepdim).to_torch(), t.amax(dim, keepdim))
    else:
        assert_same_error(lambda: m.amax(dim, keepdim), lambda: t.amax(dim, keepdim))


# Whole-tensor reductions copy a view that does not flatten with the map kernel (2.2)
# first: graded with 2.4, the later of the two, so that 2.2 grades without 2.4.
@pytest.mark.exercise("2.4")
@settings(max_examples=40)
@given(tensors())
def test_reductions_of_everything_match_torch(t):
    m = Tensor.from_torch(t)  # a view that does not flatten gets copied by the map kernel first
    assert_values(m.sum().to_torch(), t.sum())
    if t.numel():
        assert_values(m.max().to_torch(), t.max())
        assert_values(m.amax().to_torch(), t.amax())
    else:
        assert_same_error(lambda: m.max(), lambda: t.max())


@pytest.mark.exercise("2.4")  # mean divides with the zip kernel (2.3): graded with the later one
@settings(max_examples=30)
@given(tensors(dtype=torch.float64), st.data())
def test_mean_matches_torch(t, data):
    m = Tensor.from_torch(t)
    if data.draw(st.booleans()) or t.dim() == 0:
        assert_values(m.mean().to_torch(), t.mean())
    else:
        dim, keepdim = data.draw(st.integers(0, t.dim() - 1)), data.draw(st.booleans())
        assert_values(m.mean(dim, keepdim).to_torch(), t.mean(dim, keepdim))


@pytest.mark.exercise("2.4")
def test_max_propagates_nan_like_torch():
    x = torch.tensor([[1.0, float("nan"), 3.0], [-float("inf"), -1.0, -2.0]])
    m = Tensor.from_torch(x)
    assert_values(m.amax(1).to_torch(), x.amax(1))
    assert_values(m.amax(0).to_torch(), x.amax(0))
    assert_values(m.max().to_torch(), x.max())
    assert_same_error(lambda: m.sum(2), lambda: x.sum(2))


# --------------------------------------------------------------- 2.5 matmul
@st.composite
def matmul_shapes(draw, max_side: int = 7, max_batch: int = 2):
    """Shapes torch.matmul accepts: 1-D to 4-D, batch dimensions that broadcast."""
    n, k, m = (draw(st.integers(0, max_side)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=max_batch)))
    a_batch = tuple(draw(st.sampled_from([s, 1])) for s in batch)[draw(st.integers(0, len(batch))):]
    b_batch = tuple(draw(st.sampled_from([s, 1])) for s in batch)[draw(st.integers(0, len(batch))):]
    a = (k,) if draw(st.integers(0, 4)) == 0 else (*a_batch, n, k)
    b = (k,) if draw(st.integers(0, 4)) == 0 else (*b_batch, k, m)
    return a, b


@pytest.mark.exercise("2.5")
@settings(max_examples=30)
@given(st.integers(1, 2), st.integers(1, 70), st.integers(0, 70), st.integers(1, 70),
       st.sampled_from([torch.float64, torch.int64]), st.data())
@example(1, 65, 130, 67, torch.int64, None).via("crosses every tile boundary")
def test_cpu_matmul_kernel_on_raw_headers(batch, n, k, m, dtype, data):
    x = _random((batch, n, k), dtype, 4)
    y = _random((1, k, m), dtype, 5)
    if data is not None:
        x, y = laid_out(x, data), laid_out(y, data)
    expected = torch.matmul(x, y)
    out = blank_like_contiguous(expected.shape, dtype)
    o_storage, shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(x)
    b_storage, _, b_strides, b_offset = kernel_args(y.expand(batch, k, m))  # batch stride 0
    launch.kernel("cpu", "matmul")(o_storage, shape, o_strides, o_offset, a_storage, a_strides, a_offset,
                                   b_storage, b_strides, b_offset, k)
    assert_values(out, expected)


@pytest.mark.exercise("2.5")
@settings(max_examples=50)
@given(matmul_shapes(), st.sampled_from([torch.int64, torch.float64, torch.float32]), st.data())
def test_matmul_matches_torch(shapes, dtype, data):
    x = laid_out(_random(shapes[0], dtype, 6), data)
    y = laid_out(_random(shapes[1], dtype, 7), data)
    got = Tensor.from_torch(x) @ Tensor.from_torch(y)
    expected = x @ y
    if dtype == torch.float32:  # a different summation order: compare loosely
        assert got.shape == tuple(expected.shape) and str(got.dtype) == "float32"
        torch.testing.assert_close(got.to_torch(), expected, rtol=1e-4, atol=1e-4)
    else:
        assert_values(got.to_torch(), expected)
    assert got.stride() == expected.stride()


@pytest.mark.exercise("2.5")
def test_matmul_errors_like_torch():
    a, b = torch.ones(2, 3), torch.ones(4, 5)
    assert_same_error(lambda: Tensor.from_torch(a) @ Tensor.from_torch(b), lambda: a @ b)
    a3, b3 = torch.ones(2, 2, 3), torch.ones(3, 4, 5)
    assert_same_error(lambda: Tensor.from_torch(a3) @ Tensor.from_torch(b3), lambda: a3 @ b3, message=False)
