"""ConstantLR, LinearLR, SequentialLR and ChainedScheduler against torch's (cases after torch's
test_lrscheduler), driving a torch optimizer's param groups (no exercise needed)."""
from __future__ import annotations

import warnings

import pytest
import torch

import minikernel.optim as mk_optim


def _flat(trajectory):
    return [lr for lrs in trajectory for lr in lrs]


def _optimizer(lrs=(0.1, 0.05)):
    params = [torch.zeros(1, requires_grad=True) for _ in lrs]
    return torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)], lr=0.1)


CASES = {
    "constant": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=4),
    "constant default": lambda L, o: L.ConstantLR(o),
    "linear": lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=6),
    "linear default": lambda L, o: L.LinearLR(o),
    "sequential warm-up then exponential": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=3), L.ExponentialLR(o, gamma=0.9)], milestones=[3]),
    "sequential three": lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, factor=0.1, total_iters=2), L.StepLR(o, 2, gamma=0.5),
            L.ExponentialLR(o, gamma=0.8)], milestones=[2, 7]),
    "chained": lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, factor=0.1, total_iters=2), L.ExponentialLR(o, gamma=0.9)]),
    "chained warm-up and steps": lambda L, o: L.ChainedScheduler(
        [L.LinearLR(o, start_factor=0.5, total_iters=4), L.StepLR(o, 3, gamma=0.1)], optimizer=o),
}


def _trajectory(lib, case, steps=12):
    optimizer = _optimizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # stepping without optimizer.step(); SequentialLR's step(0)
        sched = case(lib, optimizer)
        seen = [list(sched.get_last_lr())]
        for _ in range(steps):
            optimizer.step()
            sched.step()
            seen.append(list(sched.get_last_lr()))
    return seen, [g["lr"] for g in optimizer.param_groups], sched


@pytest.mark.parametrize("name", list(CASES))
def test_lrs_like_torch(name):
    expected, expected_groups, theirs = _trajectory(torch.optim.lr_scheduler, CASES[name])
    got, got_groups, mine = _trajectory(mk_optim, CASES[name])
    assert _flat(got) == pytest.approx(_flat(expected), rel=1e-12), f"{name}: {got} vs torch's {expected}"
    assert got_groups == pytest.approx(expected_groups, rel=1e-12)
    assert hasattr(mine, "last_epoch") == hasattr(theirs, "last_epoch")  # (ChainedScheduler has none)
    assert getattr(mine, "last_epoch", None) == getattr(theirs, "last_epoch", None)


@pytest.mark.parametrize("name", ["sequential warm-up then exponential", "chained"])
def test_state_dict_round_trip_resumes_the_same_lrs(name):
    optimizer = _optimizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = CASES[name](mk_optim, optimizer)
        for _ in range(4):
            sched.step()
        saved = sched.state_dict()
        ahead = [(sched.step(), list(sched.get_last_lr()))[1] for _ in range(3)]
        sched.load_state_dict(saved)
        for group, lr in zip(optimizer.param_groups, saved["_last_lr"]):
            group["lr"] = lr
        again = [(sched.step(), list(sched.get_last_lr()))[1] for _ in range(3)]
    assert _flat(again) == pytest.approx(_flat(ahead))


BAD = {
    "constant factor > 1": (lambda L, o: L.ConstantLR(o, factor=1.5), ValueError),
    "linear start 0": (lambda L, o: L.LinearLR(o, start_factor=0), ValueError),
    "linear end > 1": (lambda L, o: L.LinearLR(o, end_factor=2.0), ValueError),
    "sequential no schedulers": (lambda L, o: L.SequentialLR(o, [], milestones=[]), ValueError),
    "sequential milestones": (lambda L, o: L.SequentialLR(o, [L.ConstantLR(o), L.ConstantLR(o)], milestones=[]),
                              ValueError),
    "sequential plateau": (lambda L, o: L.SequentialLR(o, [L.ConstantLR(o), L.ReduceLROnPlateau(o)],
                                                       milestones=[2]), ValueError),
    "chained two optimizers": (lambda L, o: L.ChainedScheduler([L.ConstantLR(o), L.ConstantLR(_optimizer())]),
                               ValueError),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_arguments_raise_like_torch(name):
    case, error = BAD[name]
    with pytest.raises(error):
        case(torch.optim.lr_scheduler, _optimizer())
    with pytest.raises(error):
        case(mk_optim, _optimizer())
