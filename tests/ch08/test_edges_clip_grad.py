"""Exercise 8.5 at its edges: a lone Tensor or a generator in place of a list, and every kind
of norm (0, 1, fractional, 2, inf, -inf), against ``torch.nn.utils``."""
from __future__ import annotations

import pytest
import torch

from minikernel import clip_grad as C
from tests.ch08.twins import as_torch, leaves, mk_tensor, set_grads

NORMS = [0.0, 0.5, 1.0, 2.0, 3.0, float("inf"), float("-inf")]


def _values(shape, seed=3):
    t = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return t.masked_fill(t.abs() < 0.3, 0.0)  # some zeros, so that the 0-"norm" counts


@pytest.mark.exercise("8.5")
@pytest.mark.parametrize("norm_type", NORMS)
@pytest.mark.parametrize("shape", [(), (3, 4)])
def test_get_total_norm_of_a_lone_tensor(shape, norm_type):
    """A Tensor is one tensor (``[tensors]``), not an iterable of its rows."""
    t = _values(shape)
    expected = torch.nn.utils.get_total_norm(t, norm_type)
    got = as_torch(C.get_total_norm(mk_tensor(t), norm_type))
    assert got.shape == () and torch.allclose(got, expected, rtol=1e-12, atol=0), f"{got} vs torch's {expected}"


@pytest.mark.exercise("8.5")
@pytest.mark.parametrize("norm_type", NORMS)
def test_get_total_norm_of_a_generator(norm_type):
    """An iterable that can be read once (``p.grad for p in ...``) gives the norm of all of it."""
    made = [_values(s, seed=i) for i, s in enumerate([(2, 3), (4,), ()])]
    expected = torch.nn.utils.get_total_norm((t for t in made), norm_type)
    got = as_torch(C.get_total_norm((mk_tensor(t) for t in made), norm_type))
    assert torch.allclose(got, expected, rtol=1e-12, atol=0), f"{got} vs torch's {expected}"


@pytest.mark.exercise("8.5")
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grads_with_norm_of_a_lone_parameter(max_norm):
    """A Tensor parameter is one parameter: its gradient is scaled as torch scales it."""
    (tparam,), (mparam,) = leaves([(3, 4)], seed=2)
    set_grads([tparam], [mparam], [_values((3, 4), seed=4)])
    total = torch.nn.utils.get_total_norm([tparam.grad])
    torch.nn.utils.clip_grads_with_norm_(tparam, max_norm, total)
    C.clip_grads_with_norm_(mparam, max_norm, mk_tensor(total))
    assert torch.allclose(as_torch(mparam.grad), tparam.grad, rtol=1e-12, atol=0), "the gradient differs from torch's"


@pytest.mark.exercise("8.5")
@pytest.mark.parametrize("norm_type", [float("inf"), float("-inf")])
@pytest.mark.parametrize("shapes", [[(0,)], [(0, 3), (2,)], [(2,), (0,)]])
def test_get_total_norm_refuses_an_infinite_order_over_an_empty_tensor(shapes, norm_type):
    """The largest (``inf``) or smallest (``-inf``) of no numbers does not exist: torch raises a
    RuntimeError when any tensor is empty, rather than return 0 (``max(initial=0)``) or let a
    numpy ``ValueError`` through."""
    made = [torch.ones(s, dtype=torch.float64) for s in shapes]
    with pytest.raises(RuntimeError) as expected:
        torch.nn.utils.get_total_norm(made, norm_type)
    try:
        got = C.get_total_norm([mk_tensor(t) for t in made], norm_type)
    except NotImplementedError:  # the stub (a subclass of RuntimeError): the exercise is not written
        raise
    except RuntimeError as err:
        assert "empty" in str(expected.value) and "empty" in str(err), (
            f"the error should say the tensor is empty, as torch's does ({expected.value}); got: {err}")
    else:
        pytest.fail(f"torch raises ({expected.value}); minikernel returned {got}")
