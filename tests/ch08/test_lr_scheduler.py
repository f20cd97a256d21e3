"""Exercise 8.4 (LambdaLR) and the complete StepLR / CosineAnnealingLR, against torch's schedulers.

minikernel's schedulers drive torch optimizers too (they only touch param_groups),
so these tests need no other exercise."""
from __future__ import annotations

import math
import warnings

import pytest
import torch
from hypothesis import given, strategies as st

import minikernel as mk
import minikernel.optim as mk_optim
from minikernel.optim import lr_scheduler as mk_sched
from tests.ch08.twins import leaves, mk_tensor

LAMBDAS = [lambda e: (e + 1) ** 2, lambda e: e + 1, lambda e: 0.95 ** e, lambda e: 1 / (e + 1),
           lambda e: min(1.0, (e + 1) / 3), lambda e: 0.0 if e % 2 else 1.0]


def _torch_optimizer(lrs):
    params = [torch.zeros(1, requires_grad=True) for _ in lrs]
    return torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)], lr=0.1)


def _trajectory(scheduler_cls, optimizer, n_steps, *args, **kwargs):
    """get_last_lr() after construction and after each step, and the groups' lrs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no optimizer.step() here: torch warns about the order
        sched = scheduler_cls(optimizer, *args, **kwargs)
        seen = [list(sched.get_last_lr())]
        for _ in range(n_steps):
            sched.step()
            seen.append(list(sched.get_last_lr()))
    assert seen[-1] == [g["lr"] for g in optimizer.param_groups]
    return seen


@st.composite
def lambda_cases(draw):
    lrs = draw(st.lists(st.sampled_from([0.1, 1.0, 2.0, 0.05]), min_size=1, max_size=3))
    if draw(st.booleans()):
        lr_lambda = LAMBDAS[draw(st.integers(0, len(LAMBDAS) - 1))]
    else:
        lr_lambda = [LAMBDAS[i] for i in draw(st.lists(st.integers(0, len(LAMBDAS) - 1),
                                                       min_size=len(lrs), max_size=len(lrs)))]
        lr_lambda = tuple(lr_lambda) if draw(st.booleans()) else lr_lambda
    return lrs, lr_lambda, draw(st.integers(0, 12))


@pytest.mark.exercise("8.4")
@given(lambda_cases())
def test_lambda_lr_trajectory_matches_torch(case):
    lrs, lr_lambda, n = case
    mine = _trajectory(mk_sched.LambdaLR, _torch_optimizer(lrs), n, lr_lambda)
    theirs = _trajectory(torch.optim.lr_scheduler.LambdaLR, _torch_optimizer(lrs), n, lr_lambda)
    assert mine == theirs


@pytest.mark.exercise("8.4")
@pytest.mark.parametrize("count", [0, 1, 3])
def test_wrong_number_of_lambdas_is_torchs_value_error(count):
    lambdas = [LAMBDAS[0]] * count
    with pytest.raises(ValueError) as theirs:
        torch.optim.lr_scheduler.LambdaLR(_torch_optimizer([0.1, 0.2]), lambdas)
    with pytest.raises(ValueError) as mine:
        mk_sched.LambdaLR(_torch_optimizer([0.1, 0.2]), lambdas)
    assert str(mine.value) == str(theirs.value)


@pytest.mark.exercise("8.4")
def test_lambda_lrs_multiplies_the_base_lr_not_the_current_one():
    assert mk_sched.lambda_lrs([0.1, 2.0], [LAMBDAS[0], LAMBDAS[1]], 2) == [0.1 * 9, 2.0 * 3]
    assert mk_sched.expand_lr_lambdas(LAMBDAS[2], 3) == [LAMBDAS[2]] * 3


@pytest.mark.exercise("8.4")
@pytest.mark.parametrize("container", [list, tuple])
def test_lr_lambdas_is_a_new_list_like_torchs(container):
    """torch keeps its own list: editing the caller's list later changes neither scheduler."""
    given_lambdas = container([LAMBDAS[0], LAMBDAS[1]])
    theirs = torch.optim.lr_scheduler.LambdaLR(_torch_optimizer([0.1, 0.2]), given_lambdas).lr_lambdas
    mine = mk_sched.LambdaLR(_torch_optimizer([0.1, 0.2]), given_lambdas).lr_lambdas
    assert type(mine) is type(theirs) and (mine is given_lambdas) == (theirs is given_lambdas)
    assert mine == theirs


@pytest.mark.exercise("8.4")
def test_lambda_lr_state_dict_keeps_callable_objects_state_like_torch():
    class Warmup:
        def __init__(self):
            self.factor = 2.0

        def __call__(self, epoch):
            return self.factor * (epoch + 1)

    mine = mk_sched.LambdaLR(_torch_optimizer([0.1]), [Warmup()])
    theirs = torch.optim.lr_scheduler.LambdaLR(_torch_optimizer([0.1]), [Warmup()])
    a, b = mine.state_dict(), theirs.state_dict()
    assert a["lr_lambdas"] == b["lr_lambdas"] == [{"factor": 2.0}]
    assert {k: a[k] for k in ("base_lrs", "last_epoch", "_last_lr", "_step_count")} == \
        {k: b[k] for k in ("base_lrs", "last_epoch", "_last_lr", "_step_count")}


# Schedulers on minikernel's optimizers need 8.1 (param groups) and 8.2 (SGD) too:
# graded with 8.4, the last of them, so that 8.1 and 8.2 grade without 8.4.
@pytest.mark.exercise("8.4")
def test_the_notes_lambda_lr_run_on_minikernel_optimizer():
    """x = [1, 2], SGD lr 0.1, lambda (e+1)**2, gradient of sum(x) = ones:
    x goes [1, 2] -> [0.9, 1.9] -> [0.5, 1.5] -> [-0.4, 0.6]; lrs 0.4, 0.9, 1.6."""
    runs = {}
    for name, x, optim, sched in (("torch", torch.tensor([1.0, 2.0], requires_grad=True), torch.optim,
                                   torch.optim.lr_scheduler),
                                  ("minikernel", mk.tensor([1.0, 2.0], requires_grad=True), mk_optim, mk_sched)):
        opt = optim.SGD([x], 0.1)
        scheduler = sched.LambdaLR(opt, lambda e: (e + 1) ** 2)
        trace = []
        for _ in range(3):
            opt.zero_grad()
            x.grad = mk_tensor(torch.ones(2)) if name == "minikernel" else torch.ones(2)  # d sum(x) / dx
            opt.step()
            scheduler.step()
            trace.append(([round(v, 4) for v in x.detach().tolist()], [round(v, 4) for v in scheduler.get_last_lr()]))
        runs[name] = trace
    assert runs["minikernel"] == runs["torch"] == [([0.9, 1.9], [0.4]), ([0.5, 1.5], [0.9]), ([-0.4, 0.6], [1.6])]


@pytest.mark.exercise("8.4")  # on an 8.1 optimizer: graded with the later exercise
def test_scheduler_on_minikernel_optimizer_and_step_order_warning():
    _, mparams = leaves([(2,), (1,)])
    opt = mk_optim.SGD([{"params": [mparams[0]], "lr": 1}, {"params": [mparams[1]], "lr": 2}])
    scheduler = mk_sched.LambdaLR(opt, [lambda e: (e + 1) ** 2, lambda e: e + 1])
    assert scheduler.get_last_lr() == [1, 2]
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        scheduler.step()
    scheduler.step()
    assert scheduler.get_last_lr() == [9, 6] == [g["lr"] for g in opt.param_groups]
    assert [g["initial_lr"] for g in opt.param_groups] == [1, 2]
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        assert scheduler.get_lr() == [9, 6]


# --------------------------------------------------- complete schedulers (no exercise)
@given(st.lists(st.sampled_from([0.1, 1.0, 0.3]), min_size=1, max_size=2), st.integers(1, 4),
       st.sampled_from([0.1, 0.5]), st.integers(0, 14))
def test_step_lr_matches_torch(lrs, step_size, gamma, n):
    mine = _trajectory(mk_sched.StepLR, _torch_optimizer(lrs), n, step_size, gamma)
    theirs = _trajectory(torch.optim.lr_scheduler.StepLR, _torch_optimizer(lrs), n, step_size, gamma)
    assert mine == theirs


@given(st.lists(st.sampled_from([0.1, 1.0, 0.3]), min_size=1, max_size=2), st.integers(1, 6),
       st.sampled_from([0.0, 0.01]), st.integers(0, 20))
def test_cosine_annealing_lr_matches_torch(lrs, t_max, eta_min, n):
    mine = _trajectory(mk_sched.CosineAnnealingLR, _torch_optimizer(lrs), n, t_max, eta_min)
    theirs = _trajectory(torch.optim.lr_scheduler.CosineAnnealingLR, _torch_optimizer(lrs), n, t_max, eta_min)
    assert all(math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) for x, y in zip(mine, theirs) for a, b in zip(x, y))
    assert len(mine) == len(theirs)


def test_closed_form_epoch_argument_warns_and_resuming_needs_initial_lr():
    for sched in (mk_sched, torch.optim.lr_scheduler):
        opt = _torch_optimizer([1.0])
        s = sched.StepLR(opt, 2, 0.5)
        opt.step()
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
            s.step(5)
        assert s.get_last_lr() == [0.25]
        with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
            sched.StepLR(_torch_optimizer([1.0]), 2, last_epoch=3)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        mk_sched.StepLR([], 2)
