"""Exercise 4.2: pre-hook results that are lists. Only a tuple is the new args: a plain pre-hook's
list is one argument (wrapped into a 1-tuple), and a with-kwargs pre-hook's ``[args, kwargs]``
is refused.

Oracle: the same modules and hooks on ``torch.nn.Module``.
"""
from __future__ import annotations

import pytest
import torch

from tests.ch04.twins import FRAMEWORKS, WIDTH, outcome


def _echo(fw):
    class Echo(fw.nn.Module):
        """Returns what forward received: the args the pre-hooks left."""

        def forward(self, *args, **kwargs):
            return args, kwargs

    return Echo()


def _input(fw):
    return fw.tensor(torch.randn(2, WIDTH, dtype=torch.float64, generator=torch.Generator().manual_seed(0)))


@pytest.mark.exercise("4.2")
def test_a_pre_hooks_list_is_one_argument_like_torch():
    received = {}
    for fw in FRAMEWORKS:
        module = _echo(fw)
        module.register_forward_pre_hook(lambda m, args: [args[0], args[0]])
        kind, (args, kwargs) = outcome(module, _input(fw))
        received[fw.name] = (kind, [type(a).__name__ for a in args], len(args[0]), kwargs)
    assert received["torch"] == ("ok", ["list"], 2, {})
    assert received["minikernel"] == received["torch"], "only a tuple replaces the args; wrap anything else"


@pytest.mark.exercise("4.2")
def test_a_with_kwargs_pre_hooks_list_pair_is_refused_like_torch():
    outcomes = {}
    for fw in FRAMEWORKS:
        module = _echo(fw)
        module.register_forward_pre_hook(lambda m, args, kwargs: [args, kwargs], with_kwargs=True)
        kind, result = outcome(module, _input(fw))
        outcomes[fw.name] = (kind, result[0] if kind == "raised" else None,
                             str(result[1]).split(", but got")[0] if kind == "raised" else None)
    assert outcomes["torch"] == ("raised", "RuntimeError",
                                 "forward pre-hook must return None or a tuple of (new_args, new_kwargs)")
    assert outcomes["minikernel"] == outcomes["torch"]
