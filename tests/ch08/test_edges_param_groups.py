"""Exercise 8.1 at its edges: the names a named group keeps, and where the duplicate warning points."""
from __future__ import annotations

import inspect
import warnings

import pytest
import torch

import minikernel.optim as mk_optim
from minikernel.optim import optimizer as mk_optimizer
from tests.ch08.twins import leaves


@pytest.mark.exercise("8.1")
def test_named_parameters_keep_their_names_in_order():
    tparams, mparams = leaves([(2,), (3,), (1,)])
    names = ["weight", "bias", "scale"]
    theirs = torch.optim.SGD(list(zip(names, tparams)), lr=0.1).param_groups[0]
    ours = mk_optim.SGD(list(zip(names, mparams)), lr=0.1).param_groups[0]
    assert theirs["param_names"] == names  # the oracle
    assert ours["param_names"] == theirs["param_names"], f"param_names {ours['param_names']!r} vs torch's"
    assert all(o is p for o, p in zip(ours["params"], mparams)), "params keeps the tensors, in order"


def _middle(groups, group):
    mk_optimizer.add_param_group(groups, group, {"lr": 0.1})


def _caller(groups, group):
    _middle(groups, group)  # stacklevel=3 from add_param_group points here


@pytest.mark.exercise("8.1")
def test_the_duplicate_warning_points_three_frames_up():
    """``warnings.warn(DUPLICATE_WARNING, stacklevel=3)``: the warning names the frame that called
    the caller of ``add_param_group`` (for an optimizer, the code that built it)."""
    (p,) = leaves([(2,)])[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _caller([], {"params": [p, p]})
    found = [w for w in caught if str(w.message) == mk_optimizer.DUPLICATE_WARNING]
    assert len(found) == 1 and issubclass(found[0].category, UserWarning), [str(w.message) for w in caught]
    line = inspect.getsourcelines(_caller)[1] + 1
    assert (found[0].filename, found[0].lineno) == (__file__, line), (
        f"the warning points at {found[0].filename}:{found[0].lineno}, not at the caller's caller ({__file__}:{line})")
