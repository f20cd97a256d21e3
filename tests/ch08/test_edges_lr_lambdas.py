"""Exercise 8.4 at its edges: what counts as "one lambda per group". Only a list or a tuple does;
anything else — a callable schedule object that can also be iterated over — is one lambda for
every group.

Oracle: ``torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda).lr_lambdas`` and the learning
rates it sets.
"""
from __future__ import annotations

import pytest
import torch

import minikernel.optim as mk_optim
from minikernel.optim import lr_scheduler as mk_sched
from tests.ch08.twins import leaves


class _Milestones:
    """A warm-up schedule: callable with the epoch, iterable over its milestones."""

    def __init__(self, *milestones):
        self.milestones = milestones

    def __call__(self, epoch):
        return 0.5 ** sum(epoch >= m for m in self.milestones)

    def __iter__(self):
        return iter(self.milestones)

    def __len__(self):
        return len(self.milestones)


class _PerGroupLooking(_Milestones):
    """Iterating over it yields callables, one per group: still a single lambda for torch."""

    def __iter__(self):
        return iter([lambda e: 1.0, lambda e: 2.0])


@pytest.mark.exercise("8.4")
@pytest.mark.parametrize("make", [lambda: _Milestones(2, 4), lambda: _Milestones(1), lambda: _PerGroupLooking(3)],
                         ids=["two milestones", "one milestone", "iterates over two callables"])
def test_a_callable_that_can_be_iterated_is_one_lambda_for_every_group(make):
    """Not a list or tuple: ``[lr_lambda] * num_groups``, the object itself for each group."""
    schedule = make()
    tparams, mparams = leaves([(2,), (3,)])
    theirs = torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([{"params": [p]} for p in tparams], lr=0.1),
                                               schedule)
    assert theirs.lr_lambdas == [schedule, schedule]  # the oracle
    got = mk_sched.expand_lr_lambdas(schedule, 2)
    assert isinstance(got, list) and len(got) == 2 and all(f is schedule for f in got), (
        f"expand_lr_lambdas({type(schedule).__name__}(...), 2) gave {got!r}; torch uses the object for both groups")
    ours = mk_optim.lr_scheduler.LambdaLR(mk_optim.SGD([{"params": [p]} for p in mparams], lr=0.1), schedule)
    for _ in range(5):
        theirs.optimizer.step()
        ours.optimizer.step()
        theirs.step()
        ours.step()
        assert ours.get_last_lr() == theirs.get_last_lr()
