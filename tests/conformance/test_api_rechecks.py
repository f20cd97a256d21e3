"""Small API behaviours, each run through torch and minikernel: assigning ``.grad``, a transposed
leaf's gradient layout, whether a copying ``reshape`` is a view, in-place writes into a view of a
multi-output view, a 0-d tensor as a Python number, ``permute()``/``expand()`` without sizes."""
from __future__ import annotations

import pytest
import torch

import minikernel as mk


def _outcome(lib, fn):
    try:
        return ("gave", fn(lib))
    except NotImplementedError:
        raise  # an exercise's stub: the test reports TODO
    except (RuntimeError, TypeError, ValueError) as err:
        return ("raised", type(err).__name__, str(err).split(".")[0][:60])


def _grad_of_another_dtype(L):
    x = L.ones(3, dtype=L.float32, requires_grad=True)
    x.grad = L.ones(3, dtype=L.float64)


def _grad_is_itself(L):
    x = L.ones(3, requires_grad=True)
    x.grad = x


def _transposed_leaf_grad_strides(L):
    leaf = L.ones(3, 2).t().detach().requires_grad_()
    (leaf * 2).sum().backward()
    return leaf.grad.stride(), leaf.grad.tolist()


def _view_of_a_split_written(L):
    a, _ = (L.ones(4, requires_grad=True) * 1).split(2)
    a[0:].mul_(2)


CASES = {
    ".grad of another dtype": _grad_of_another_dtype,
    ".grad = the tensor itself": _grad_is_itself,
    "a view of a split output written in place": _view_of_a_split_written,
    "0-d float/int, 1-element float": lambda L: (float(L.tensor(2.5)), int(L.tensor(3)), float(L.tensor([2.5]))),
    "float of 2 elements": lambda L: float(L.tensor([1.0, 2.0])),
    "permute() on 0-d": lambda L: L.tensor(1.0).permute(),
    "expand() on 0-d": lambda L: L.tensor(1.0).expand(),
    "permute() on 1-d": lambda L: L.ones(2).permute(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_api_behaviour_like_torch(case):
    assert _outcome(mk, CASES[case]) == _outcome(torch, CASES[case])


@pytest.mark.exercise("3.3")
def test_a_transposed_leafs_grad_keeps_its_strides_like_torch():
    assert _outcome(mk, _transposed_leaf_grad_strides) == _outcome(torch, _transposed_leaf_grad_strides)


@pytest.mark.exercise("1.6")  # reshape asks whether the memory is contiguous
def test_a_copying_reshape_is_no_view_like_torch():
    def views(L):
        return L.ones(2, 3).t().reshape(6)._is_view(), L.ones(2, 3).reshape(6)._is_view()
    assert _outcome(mk, views) == _outcome(torch, views)
