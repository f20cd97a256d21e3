"""Exercise 9.4: a backward that returns a list of gradients for a two-input custom op.

torch's ``register_autograd`` takes a single tensor (one input) or a tuple; a list is one
value, so for two inputs it is not two gradients, and torch refuses it (a RuntimeError: "the same
structure as the inputs", or, in other versions, "an incorrect number of gradients").

Oracle: ``torch.library.custom_op`` with the same backward.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import minikernel as mk
from minikernel import library
from minikernel.course.exercise import stub_exercise_id


def _t_pair(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


_T_LIST = torch.library.custom_op("test09thin::tlist", mutates_args=())(_t_pair)
_T_LIST.register_autograd(lambda ctx, g: [g, g])


@pytest.fixture
def pair_op():
    name = "test09thin::mklist"
    op = library.custom_op(name, lambda x, y: mk.tensor(x.to_numpy() + y.to_numpy()),
                           schema="(Tensor x, Tensor y) -> Tensor")
    yield op
    mk.dispatch.registry.undefine(name)


@pytest.mark.exercise("9.4")
def test_a_list_of_gradients_for_two_inputs_is_refused_like_torch(pair_op):
    """Only a tuple holds one gradient per input: a list counts as one gradient."""
    with pytest.raises(RuntimeError, match="same structure as the inputs|incorrect number of gradients"):
        _T_LIST(torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)).sum().backward()
    library.register_autograd(pair_op, lambda ctx, g: [g, g])
    x, y = mk.tensor(np.ones(2), requires_grad=True), mk.tensor(np.ones(2), requires_grad=True)
    out = pair_op(x, y).sum()
    try:
        out.backward()
    except RuntimeError as err:
        if stub_exercise_id(err):
            raise
        assert re.search(r"(?<![\d.])2(?![\d.])", str(err)), f"say how many gradients backward must return (2): {err}"
        return
    raise AssertionError("a list of two gradients was taken as two: torch refuses it (a list is one value)")
