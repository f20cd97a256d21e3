"""Exercise 5.1 (two-pass variance) through var/std/var_mean/std_mean, against torch.

The argument handling around the exercise (dims, the legacy ``unbiased`` form,
dtype refusals, the degrees-of-freedom warning) is complete code: those tests have
no exercise marker and pass in both modes.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from minikernel import Tensor
from minikernel.norm import stats, std, std_mean, var, var_mean
from tests.ch05.strategies import float_tensors, randn, reductions, tolerance

CORRECTIONS = [0, 1, 2, 0.5]


def _close(got: Tensor, expected: torch.Tensor) -> None:
    assert isinstance(got, Tensor), f"expected a minikernel Tensor, got {type(got).__name__}"
    assert got.shape == tuple(expected.shape), f"shape {got.shape} != torch's {tuple(expected.shape)}"
    assert str(got.dtype) == str(expected.dtype).removeprefix("torch.")
    torch.testing.assert_close(got.to_torch(), expected, equal_nan=True, **tolerance(expected.dtype, 64))


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


@pytest.mark.exercise("5.1")
@given(float_tensors(), st.data(), st.sampled_from(CORRECTIONS), st.booleans())
def test_var_matches_torch(t, data, correction, keepdim):
    dim = data.draw(reductions(t.dim()))
    got = _quiet(var, Tensor.from_torch(t), dim, correction=correction, keepdim=keepdim)
    _close(got, _quiet(torch.var, t, dim, correction=correction, keepdim=keepdim))


@pytest.mark.exercise("5.1")
@given(float_tensors(max_dims=3), st.data(), st.sampled_from(CORRECTIONS), st.booleans())
def test_std_var_mean_std_mean_match_torch(t, data, correction, keepdim):
    dim = data.draw(reductions(t.dim()))
    m = Tensor.from_torch(t)
    _close(_quiet(std, m, dim, correction=correction, keepdim=keepdim),
           _quiet(torch.std, t, dim, correction=correction, keepdim=keepdim))
    for mine, theirs in ((var_mean, torch.var_mean), (std_mean, torch.std_mean)):
        got = _quiet(mine, m, dim, correction=correction, keepdim=keepdim)
        expected = _quiet(theirs, t, dim, correction=correction, keepdim=keepdim)
        _close(got[0], expected[0])
        _close(got[1], expected[1])


@pytest.mark.exercise("5.1")
def test_defaults_are_unbiased_and_the_legacy_forms_work():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 8.0, 16.0]], dtype=torch.float64)
    m = Tensor.from_torch(x)
    _close(var(m), x.var())  # all elements, correction=1
    _close(var(m, 1), x.var(1))
    _close(var(m, 1, False), torch.var(x, 1, False))  # (input, dim, unbiased)
    _close(var(m, False), torch.var(x, False))  # (input, unbiased)
    _close(var(m, 1, unbiased=False), x.var(1, correction=0))
    _close(std(m, (0, 1), keepdim=True), x.std((0, 1), keepdim=True))
    _close(var(m, [], correction=0), x.var([], correction=0))  # an empty list: every dimension


@pytest.mark.exercise("5.1")
def test_the_seed_example_and_bessel_by_hand():
    x = torch.tensor([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    m = Tensor.from_torch(x)
    assert var(m, correction=0).item() == pytest.approx(4.0)  # the population variance
    assert var(m).item() == pytest.approx(32.0 / 7.0)  # Bessel: n - 1 = 7
    assert std(m, correction=0).item() == pytest.approx(2.0)
    _close(var(m), x.var())


@pytest.mark.exercise("5.1")
@pytest.mark.parametrize("call", ["var", "std"])
def test_too_few_degrees_of_freedom_warn_and_give_nan_or_inf(call):
    one, two = torch.tensor([3.0]), torch.tensor([1.0, 2.0])
    for x, kwargs in ((one, {}), (two, {"correction": 3}), (torch.ones(2, 0), {"dim": 1})):
        with pytest.warns(UserWarning, match=rf"{call}\(\): degrees of freedom is <= 0"):
            got = getattr(stats, call)(Tensor.from_torch(x), **kwargs)
        _close(got, _quiet(getattr(torch, call), x, **kwargs))


@pytest.mark.exercise("5.1")
def test_float32_stays_float32_and_two_passes_do_not_cancel():
    x = randn((4096,), torch.float32, seed=1, scale=1e-2, shift=1e4)
    got = var(Tensor.from_torch(x))
    assert got.dtype == np.float32
    truth = x.double().var().item()
    assert abs(got.item() - truth) < 0.01 * truth, f"{got.item()} vs {truth}"


@pytest.mark.exercise("5.1")
def test_cuda_input_gives_a_cuda_result():
    x = randn((3, 5), torch.float64, seed=2)
    got = var(Tensor.from_torch(x).cuda(), 1)
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu().to_torch(), x.var(1))


@pytest.mark.exercise("5.1")
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.data())
def test_two_pass_var_on_numpy_arrays(shape, data):
    x = randn(shape, torch.float64, seed=len(shape))
    dims = tuple(sorted(data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))))
    keepdim = data.draw(st.booleans())
    with np.errstate(divide="ignore", invalid="ignore"):
        got = np.asarray(stats.two_pass_var(x.numpy(), dims, 1, keepdim))
    expected = _quiet(torch.var, x, dims, keepdim=keepdim)
    torch.testing.assert_close(torch.from_numpy(np.array(got)), expected, equal_nan=True)


# ------------------------------------------------------------------ plumbing
def _error(fn):
    try:
        fn()
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 - the error is the result
        return err
    return None


@pytest.mark.parametrize("x, args", [
    (torch.arange(6).view(2, 3), ()),  # integer input
    (torch.ones(2, 3, 4), (3,)),  # dim out of range
    (torch.ones(2, 3, 4), ((0, 0),)),  # a repeated dim
    (torch.ones(2, 3, 4), ((1, -2),)),  # the same dim twice, once negative
    (torch.tensor(1.0), (1,)),  # a 0-d tensor has dims 0 and -1 only
])
def test_refusals_match_torch(x, args):
    expected, err = _error(lambda: torch.var(x, *args)), _error(lambda: var(Tensor.from_torch(x), *args))
    assert expected is not None, "torch accepts this; the test is wrong"
    assert type(err) is type(expected), f"torch raised {expected!r}, minikernel {err!r}"
    assert str(err) == str(expected)


def test_unbiased_and_correction_together_is_a_type_error():
    with pytest.raises(TypeError, match="either unbiased"):
        var(Tensor.from_torch(torch.ones(3)), 0, True, correction=0)
    with pytest.raises(TypeError, match="minikernel Tensor"):
        var(torch.ones(3))


def test_reduced_dims_reads_dim_like_torch():
    assert stats.reduced_dims(None, 3) == (0, 1, 2)
    assert stats.reduced_dims((), 3) == (0, 1, 2)
    assert stats.reduced_dims(-1, 3) == (2,)
    assert stats.reduced_dims([2, -3], 3) == (0, 2)
    assert stats.reduced_dims(0, 0) == () and stats.reduced_dims(-1, 0) == ()
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got 1"):
        stats.reduced_dims(1, 0)
