"""Chapter 08 at its edges: parameters and gradients that are not contiguous (transposed, or every
other column of a larger buffer), frozen parameters and non-leaves that retain their gradient in a
group, and clipping factors of exactly 1, inf and NaN.

Oracle: ``torch.optim.SGD`` / ``Adam`` / ``AdamW`` / ``Optimizer.add_param_group`` and
``torch.nn.utils.clip_grads_with_norm_`` / ``get_total_norm`` on the same values and layouts.
An update must land in the parameter's (or gradient's) own elements, whatever its strides.
"""
from __future__ import annotations

import pytest
import torch

import minikernel.autograd.functions as F
import minikernel.optim as mk_optim
from minikernel import clip_grad as C
from minikernel.tensor import Tensor
from tests.ch08.twins import as_torch, leaves

LAYOUTS = ["contiguous", "transposed", "every other column"]
SHAPE = (3, 4)


def _laid_out(values: torch.Tensor, layout: str) -> torch.Tensor:
    """A fresh tensor equal to ``values`` (2-D) with the given memory layout."""
    if layout == "contiguous":
        return values.clone()
    if layout == "transposed":
        return values.t().contiguous().t()  # dense, column-major: clone() would keep these strides
    wide = torch.full((values.shape[0], 2 * values.shape[1]), 99.0, dtype=values.dtype)
    out = wide[:, ::2]  # not dense: 99s between the elements
    out.copy_(values)
    return out


def _params(layout: str, seed: int):
    base = torch.randn(SHAPE, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    tparam = _laid_out(base, layout).requires_grad_()
    mparam = Tensor.from_torch(_laid_out(base, layout)).requires_grad_()
    assert tparam.is_leaf and tparam.stride() == tuple(mparam.stride())
    return tparam, mparam


def _run(optimizers, param_layout: str, grad_layout: str, steps: int = 3):
    tparam, mparam = _params(param_layout, seed=1)
    topt, mopt = optimizers[0]([tparam]), optimizers[1]([mparam])
    g = torch.Generator().manual_seed(2)
    for _ in range(steps):
        grad = torch.randn(SHAPE, generator=g, dtype=torch.float64)
        tparam.grad = _laid_out(grad, grad_layout)
        mparam.grad = Tensor.from_torch(_laid_out(grad, grad_layout))
        topt.step()
        mopt.step()
    got, expected = as_torch(mparam), tparam.detach()
    assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12), (
        f"{param_layout} parameter, {grad_layout} gradient: the parameter after {steps} steps differs from "
        f"torch's (largest difference {(got - expected).abs().max().item():.3g}); write the update into the "
        "parameter's own elements")


SGD_OPTIONS = [dict(lr=0.1), dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
               dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True)]
ADAM_OPTIONS = [("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
                ("AdamW", dict(lr=0.01, weight_decay=0.1))]


@pytest.mark.exercise("8.2")
@pytest.mark.parametrize("options", SGD_OPTIONS, ids=str)
@pytest.mark.parametrize("grad_layout", LAYOUTS)
@pytest.mark.parametrize("param_layout", LAYOUTS)
def test_sgd_updates_strided_parameters_like_torch(param_layout, grad_layout, options):
    _run((lambda ps: torch.optim.SGD(ps, **options), lambda ps: mk_optim.SGD(ps, **options)),
         param_layout, grad_layout)


@pytest.mark.exercise("8.3")
@pytest.mark.parametrize("name,options", ADAM_OPTIONS, ids=str)
@pytest.mark.parametrize("grad_layout", LAYOUTS)
@pytest.mark.parametrize("param_layout", LAYOUTS)
def test_adam_updates_strided_parameters_like_torch(param_layout, grad_layout, name, options):
    _run((lambda ps: getattr(torch.optim, name)(ps, **options), lambda ps: getattr(mk_optim, name)(ps, **options)),
         param_layout, grad_layout)


# ------------------------------------------------------------------ 8.1
def _group_members(kind: str, params, mul):
    a, b = params
    if kind == "frozen leaf":
        return [a.requires_grad_(False)]
    if kind == "frozen and trainable":
        return [a.requires_grad_(False), b]
    if kind == "non-leaf that retains its gradient":
        c = mul(a, 2.0)
        c.retain_grad()
        return [c, b]
    raise AssertionError(kind)


@pytest.mark.exercise("8.1")
@pytest.mark.parametrize("kind", ["frozen leaf", "frozen and trainable", "non-leaf that retains its gradient"])
@pytest.mark.parametrize("how", ["constructor", "add_param_group"])
def test_frozen_and_retained_parameters_are_accepted_like_torch(kind, how):
    """A leaf is a leaf whether or not it requires a gradient (a frozen parameter may be in an
    optimizer; its step skips it while ``.grad`` is None), and a non-leaf that ``retains_grad`` is
    accepted too: torch refuses only ``not (param.is_leaf or param.retains_grad)``."""
    tparams, mparams = leaves([(2,), (3,)])
    results = {}
    for side, optim, params, mul in (("torch", torch.optim, tparams, torch.mul), ("mine", mk_optim, mparams, F.mul)):
        members = _group_members(kind, params, mul)
        try:
            if how == "constructor":
                opt = optim.SGD(members, lr=0.1)
            else:
                opt = optim.SGD([_extra(side)], lr=0.1)
                opt.add_param_group({"params": members})
            results[side] = ("ok", [len(g["params"]) for g in opt.param_groups],
                             [p is m for p, m in zip(opt.param_groups[-1]["params"], members)])
        except (TypeError, ValueError) as err:
            results[side] = (type(err).__name__, str(err))
    assert results["torch"][0] == "ok"  # the oracle accepts them
    assert results["mine"] == results["torch"], f"{kind}: you {results['mine']}, torch {results['torch']}"


def _extra(side):
    t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    return t if side == "torch" else Tensor.from_torch(t.detach().clone()).requires_grad_()


# ------------------------------------------------------------------ 8.5
@pytest.mark.exercise("8.5")
@pytest.mark.parametrize("total", [0.5, 2.0, 1.0 - 1e-6, float("inf"), float("nan"), 0.0])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_clipping_writes_every_gradient_like_torch(layout, total):
    """Every gradient is multiplied by ``min(max_norm / (total + 1e-6), 1)`` in its own elements
    (whatever its strides), also when the factor is exactly 1 and when it is NaN (a NaN total turns
    the gradients to NaN, as in torch), and each gradient's version is bumped."""
    max_norm = 1.0
    g = torch.Generator().manual_seed(3)
    grads = [torch.randn(SHAPE, generator=g, dtype=torch.float64), torch.randn((2, 5), generator=g, dtype=torch.float64)]
    tparams, mparams = leaves([SHAPE, (2, 5)])
    for tp, mp, grad in zip(tparams, mparams, grads):
        tp.grad = _laid_out(grad, layout)
        mp.grad = Tensor.from_torch(_laid_out(grad, layout))
    versions = [mp.grad._version for mp in mparams]
    torch.nn.utils.clip_grads_with_norm_(tparams, max_norm, torch.tensor(total, dtype=torch.float64))
    C.clip_grads_with_norm_(mparams, max_norm, Tensor.from_torch(torch.tensor(total, dtype=torch.float64)))
    for i, (tp, mp) in enumerate(zip(tparams, mparams)):
        got = as_torch(mp.grad)
        assert torch.allclose(got, tp.grad, rtol=1e-12, atol=0, equal_nan=True), (
            f"{layout} gradient {i}, total norm {total}: {got} vs torch's {tp.grad}")
        assert mp.grad._version > versions[i], (
            f"total norm {total}: torch multiplies every gradient (no branch on the factor); bump each version")


@pytest.mark.exercise("8.5")
@pytest.mark.parametrize("norm_type", [0.0, 1.0, 2.0, 3.0, float("inf"), float("-inf")])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_total_norm_of_strided_gradients_like_torch(layout, norm_type):
    """The norm reads each tensor's own elements: the 99s between every other column do not count."""
    g = torch.Generator().manual_seed(4)
    grads = [_laid_out(torch.randn(SHAPE, generator=g, dtype=torch.float64), layout) for _ in range(2)]
    expected = torch.nn.utils.get_total_norm(grads, norm_type)
    got = as_torch(C.get_total_norm([Tensor.from_torch(_laid_out(t, layout)) for t in grads], norm_type))
    assert torch.allclose(got, expected, rtol=1e-12, atol=0), f"{layout}: {got} vs torch's {expected}"
