"""ExponentialLR, MultiStepLR and ReduceLROnPlateau against torch's (cases from torch's test_lrscheduler).

The schedulers only touch ``param_groups``, so they drive a torch optimizer here and
need no exercise."""
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


def _run(cls, n_steps, *args, metrics=None, epochs=None, **kwargs):
    optimizer = _optimizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no optimizer.step(): torch warns about the order
        sched = cls(optimizer, *args, **kwargs)
        seen = [list(sched.get_last_lr())]
        for i in range(n_steps):
            if metrics is not None:
                sched.step(metrics[i])
            elif epochs is not None:
                sched.step(epochs[i])
            else:
                sched.step()
            seen.append(list(sched.get_last_lr()))
    return seen, [g["lr"] for g in optimizer.param_groups], sched


@pytest.mark.parametrize("name, args, kwargs", [
    ("ExponentialLR", (0.9,), {}),
    ("ExponentialLR", (), {"gamma": 0.5}),
    ("MultiStepLR", ([2, 5, 9],), {"gamma": 0.1}),
    ("MultiStepLR", ([6, 2, 2],), {"gamma": 0.5}),  # unsorted, repeated: gamma ** 2 at epoch 2
])
def test_epoch_schedulers_match_torch(name, args, kwargs):
    mine = _run(getattr(mk_optim, name), 12, *args, **kwargs)
    theirs = _run(getattr(torch.optim.lr_scheduler, name), 12, *args, **kwargs)
    assert _flat(mine[0]) == pytest.approx(_flat(theirs[0])) and mine[1] == pytest.approx(theirs[1])


@pytest.mark.parametrize("name, args", [("ExponentialLR", (0.9,)), ("MultiStepLR", ([2, 5, 9], 0.3))])
def test_stepping_to_an_epoch_uses_the_closed_form(name, args):
    epochs = [3, 7, 1, 10]
    mine = _run(getattr(mk_optim, name), 4, *args, epochs=epochs)
    theirs = _run(getattr(torch.optim.lr_scheduler, name), 4, *args, epochs=epochs)
    assert _flat(mine[0]) == pytest.approx(_flat(theirs[0]))


METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.8, 0.8, 0.81, 0.82, 0.83, 0.84, 0.85, 0.7, 0.7, 0.71]


@pytest.mark.parametrize("kwargs", [
    {"patience": 2},
    {"patience": 1, "factor": 0.5, "cooldown": 2},
    {"mode": "max", "patience": 1},
    {"patience": 0, "threshold": 0.1, "threshold_mode": "abs"},
    {"patience": 1, "min_lr": [0.02, 0.04]},
    {"patience": 0, "min_lr": 0.01, "eps": 0.05},
])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    mine = _run(mk_optim.ReduceLROnPlateau, len(METRICS), metrics=METRICS, **kwargs)
    theirs = _run(torch.optim.lr_scheduler.ReduceLROnPlateau, len(METRICS), metrics=METRICS, **kwargs)
    assert _flat(mine[0]) == pytest.approx(_flat(theirs[0])) and mine[1] == pytest.approx(theirs[1])
    for attr in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
        assert getattr(mine[2], attr) == getattr(theirs[2], attr), attr


@pytest.mark.parametrize("kwargs", [{"factor": 1.0}, {"mode": "middle"}, {"threshold_mode": "pct"},
                                    {"min_lr": [0.1]}])
def test_reduce_lr_on_plateau_refuses_bad_arguments(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(), **kwargs)
    with pytest.raises(ValueError) as mine:
        mk_optim.ReduceLROnPlateau(_optimizer(), **kwargs)
    assert str(mine.value) == str(theirs.value)


def test_reduce_lr_on_plateau_state_dict_round_trip():
    _, _, sched = _run(mk_optim.ReduceLROnPlateau, 5, metrics=METRICS, patience=1)
    fresh = mk_optim.ReduceLROnPlateau(_optimizer(), patience=1)
    fresh.load_state_dict({k: v for k, v in sched.__dict__.items() if k != "optimizer"})
    assert (fresh.best, fresh.num_bad_epochs, fresh.last_epoch) == (sched.best, sched.num_bad_epochs,
                                                                     sched.last_epoch)
