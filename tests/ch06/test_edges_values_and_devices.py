"""Chapter 06 at its edges: outputs on two devices at once, names close to the three methods,
frozen parameters that hold a gradient, and every value a ``found_inf`` can hold (NaN and
negative sums included).

Oracles: ``torch.amp.GradScaler("cpu")`` (its ``scale``, ``_unscale_grads_``,
``_maybe_opt_step``) and ``torch._amp_update_scale_``, on the same inputs. Meta tensors
stand in for a second device: they have a device and no data.
"""
from __future__ import annotations

import collections

import pytest
import torch

import minikernel.amp as mk_amp
from minikernel.amp import OptState, scaling as S
from tests.ch06.twins import bits, outcome

CPU, META = torch.device("cpu"), torch.device("meta")


# ------------------------------------------------------------------ 6.1 scale_outputs
def _mixed(order):
    """Tensors on cpu and meta, nested, in the given device order."""
    made = {"cpu": lambda: torch.arange(3.0), "meta": lambda: torch.ones(2, 2, device=META)}
    a, b = (made[d]() for d in order)
    return [a, (b, [a * 2, b]), b * 3]


def _flat(value):
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in _flat(v)]


@pytest.mark.exercise("6.1")
@pytest.mark.parametrize("order", [("cpu", "meta"), ("meta", "cpu")])
def test_each_tensor_is_scaled_by_the_scale_on_its_own_device(order):
    """``t * scale_on(t.device)`` for every tensor: with outputs on two devices the scale is asked
    for on each of them (as torch's per-device replicator does), never one device's scale reused
    for another's tensors."""
    outputs = _mixed(order)
    asked = []

    def scale_on(device):
        asked.append(torch.device(device))
        return torch.full((), 4.0, device=device)

    got = S.scale_outputs(outputs, scale_on)
    pairs = list(zip(_flat(got), _flat(outputs)))
    assert sorted({str(d) for d in asked}) == sorted({str(t.device) for _, t in pairs}), (
        f"scale_on was asked for {[str(d) for d in asked]}; the outputs are on "
        f"{sorted({str(t.device) for _, t in pairs})}: ask for the scale on each tensor's own device")
    for result, given in pairs:
        assert (result.device, result.shape, result.dtype) == (given.device, given.shape, given.dtype)
        if given.device == CPU:
            assert torch.equal(result, given * 4.0)


@pytest.mark.exercise("6.1")
def test_two_devices_through_the_class_match_torch():
    """``GradScaler("cpu").scale([cpu tensor, meta tensor])`` gives what torch's gives: each result
    on its tensor's device, the cpu values bit for bit."""
    outputs = _mixed(("cpu", "meta"))
    got = _flat(mk_amp.GradScaler("cpu", init_scale=3.0).scale(outputs))
    expected = _flat(torch.amp.GradScaler("cpu", init_scale=3.0).scale(outputs))
    assert [(t.device, t.shape, t.dtype) for t in got] == [(t.device, t.shape, t.dtype) for t in expected]
    assert [bits(t) for t in got if t.device == CPU] == [bits(t) for t in expected if t.device == CPU]


@pytest.mark.exercise("6.1")
@pytest.mark.parametrize("make", [lambda: {0: torch.ones(2), 1: torch.full((1,), 3.0)},
                                  lambda: {torch.ones(1): "a tensor key"},
                                  lambda: collections.deque([torch.ones(2), (torch.arange(2.0),)]),
                                  lambda: range(2), lambda: "ab"],
                         ids=["dict of tensors", "dict with a tensor key", "deque", "range", "str"])
def test_any_other_iterable_is_a_lazy_map_over_its_items_like_torch(make):
    """Only lists and tuples keep their type; any other iterable (a dict, whose items are its keys,
    a deque, a range, a string) becomes a lazy map over its items, and consuming it scales each
    item or raises ValueError exactly where torch's does."""
    got = mk_amp.GradScaler("cpu", init_scale=3.0).scale(make())
    expected = torch.amp.GradScaler("cpu", init_scale=3.0).scale(make())
    assert not isinstance(got, (dict, list, tuple, collections.deque, torch.Tensor)), (
        f"scale() returned a {type(got).__name__}; torch returns a lazy map for this iterable")

    def consumed(result):
        items = []
        try:
            for item in result:
                items.append([bits(t) for t in _flat(item)])
        except (ValueError, RecursionError) as err:  # a str's items are strs, to no end: torch recurses too
            items.append((type(err).__name__, str(err) if isinstance(err, ValueError) else ""))
        return items

    assert consumed(got) == consumed(expected)


# ------------------------------------------------------------------ 6.2 transition
@pytest.mark.exercise("6.2")
@pytest.mark.parametrize("method", ["unscale", "unscale_()", "step_", "steps", " update", "Update", "update_",
                                    "unscale_ "])
@pytest.mark.parametrize("stage", list(OptState), ids=lambda s: s.name)
def test_names_close_to_the_three_methods_are_refused(stage, method):
    """Only the exact names ``unscale_``, ``step`` and ``update`` move a stage: torch's GradScaler has
    no method by any of these near-miss names, so each raises ValueError naming it."""
    assert not hasattr(torch.amp.GradScaler, method), "the oracle: torch's GradScaler has no such method"
    kind, got = outcome(S.transition, stage, method)
    assert kind == "raised" and got[0] is ValueError, (
        f"transition({stage.name}, {method!r}) returned {got}; only {S.METHODS} are methods: raise ValueError")
    assert repr(method) in got[1], f"name the method in the message: {got[1]!r}"


# ------------------------------------------------------------------ 6.3 unscale_grads_
def _sgd_with(grads, requires_grad):
    params = []
    for g, rg in zip(grads, requires_grad):
        p = torch.nn.Parameter(torch.zeros_like(g), requires_grad=rg)
        p.grad = g.clone()
        params.append(p)
    return torch.optim.SGD(params, lr=0.1)


@pytest.mark.exercise("6.3")
@pytest.mark.parametrize("requires_grad", [(False,), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("bad", [None, 0, -1])
def test_frozen_parameters_with_a_gradient_are_unscaled_too(requires_grad, bad):
    """Every ``p.grad`` that is not None is collected, whatever ``p.requires_grad`` says (a frozen
    parameter may still hold one): it is unscaled and its inf/NaN recorded, as torch does."""
    grads = [torch.tensor([4.0, -8.0, 2.0]), torch.tensor([[6.0, 1.0], [0.5, 3.0]])][:len(requires_grad)]
    if bad is not None:
        grads[bad] = grads[bad].clone().view(-1).index_fill(0, torch.tensor([1]), float("inf")).view_as(grads[bad])
    mine, theirs = _sgd_with(grads, requires_grad), _sgd_with(grads, requires_grad)
    inv = torch.tensor(0.25)
    got = outcome(S.unscale_grads_, mine, inv, torch.zeros(()), False)
    expected = outcome(torch.amp.GradScaler("cpu")._unscale_grads_, theirs, inv, torch.zeros(()), False)
    assert got[0] == expected[0] == "ok", f"you: {got}; torch: {expected}"
    assert {str(d): bits(t) for d, t in got[1].items()} == {str(d): bits(t) for d, t in expected[1].items()}, (
        f"found_inf per device {got[1]}; torch's {expected[1]}")
    for pm, pt in zip(mine.param_groups[0]["params"], theirs.param_groups[0]["params"]):
        assert bits(pm.grad) == bits(pt.grad), (
            f"gradient of a parameter with requires_grad={pm.requires_grad}: {pm.grad} vs torch's {pt.grad}")


# ------------------------------------------------------------------ 6.4 maybe_opt_step
class _Counting(torch.optim.SGD):
    def __init__(self, params):
        super().__init__(params, lr=0.5)
        self.calls = 0

    def step(self, closure=None):
        self.calls += 1
        return super().step(closure)


@pytest.mark.exercise("6.4")
@pytest.mark.parametrize("found_values", [[float("nan")], [0.0, float("nan")], [-1.0], [1.0, -1.0], [-0.0],
                                          [0.0, -0.0], [float("inf")], [float("-inf"), 0.0], [0.5]])
def test_every_found_inf_value_decides_like_torch(found_values):
    """The step runs exactly when the values' sum is zero: a NaN or negative sum is not zero and
    skips the step, values that cancel out step, as torch's ``_maybe_opt_step`` decides."""
    found = {torch.device("cpu", i): torch.tensor([v]) for i, v in enumerate(found_values)}
    runs = []
    for fn in ("mine", "torch"):
        p = torch.nn.Parameter(torch.ones(2))
        p.grad = torch.full((2,), 2.0)
        opt = _Counting([p])
        if fn == "mine":
            S.maybe_opt_step(opt, found)
        else:
            torch.amp.GradScaler("cpu")._maybe_opt_step(opt, {"found_inf_per_device": found})
        runs.append((opt.calls, p.tolist()))
    assert runs[0] == runs[1], f"found_inf {found_values}: (steps, parameter) {runs[0]}; torch's {runs[1]}"


# ------------------------------------------------------------------ 6.5 update_scale_
@pytest.mark.exercise("6.5")
@pytest.mark.parametrize("found", [float("nan"), -1.0, -0.0, 0.0, float("inf"), 1e-30, -2.0])
@pytest.mark.parametrize("tracker,interval", [(0, 1), (2, 3), (0, 5), (9, 3)])
def test_every_found_inf_value_updates_like_torch(found, tracker, interval):
    """Any nonzero ``found_inf`` (NaN and negative values included) backs off and resets the
    tracker; zero (either sign) counts a clean step — as torch's kernel, which tests ``if (*found_inf)``."""
    mine = (torch.tensor(1024.0), torch.tensor(tracker, dtype=torch.int32), torch.tensor([found]))
    theirs = (torch.tensor(1024.0), torch.tensor(tracker, dtype=torch.int32), torch.tensor([found]))
    S.update_scale_(*mine, 2.0, 0.5, interval)
    torch._amp_update_scale_(*theirs, 2.0, 0.5, interval)
    assert (mine[0].item(), mine[1].item()) == (theirs[0].item(), theirs[1].item()), (
        f"found_inf={found}: (scale, tracker) ({mine[0].item()}, {mine[1].item()}); "
        f"torch's ({theirs[0].item()}, {theirs[1].item()})")


# ------------------------------------------------------------------ 6.3 two devices
def _record_calls(calls):
    def record(grads, found_inf, inv_scale):
        calls.append((sorted({str(g.device) for g in grads}), sorted({str(g.dtype) for g in grads}), len(grads),
                      str(found_inf.device), str(inv_scale.device)))
    return record


@pytest.mark.exercise("6.3")
@pytest.mark.parametrize("layout", [[("cpu", torch.float32), ("meta", torch.float32)],
                                    [("meta", torch.float32), ("cpu", torch.float64), ("cpu", torch.float32),
                                     ("meta", torch.float64), ("meta", torch.float32)],
                                    [("meta", torch.bfloat16), ("cpu", torch.bfloat16)]],
                         ids=["cpu+meta", "two devices two dtypes", "meta first"])
def test_gradients_on_two_devices_are_grouped_by_device_and_dtype(layout, monkeypatch):
    """One ``non_finite_check_and_unscale_`` per (device, dtype), with ``found_inf`` and
    ``inv_scale`` copied to that device, and one ``found_inf`` per device returned — what torch's
    ``_unscale_grads_`` passes to its kernel (both sides' kernels are replaced by a recorder, so
    meta tensors, which hold no values, can stand in for a second device)."""
    def optimizer():
        params = []
        for device, dtype in layout:
            p = torch.nn.Parameter(torch.zeros(2, dtype=dtype, device=device))
            p.grad = torch.ones(2, dtype=dtype, device=device)
            params.append(p)
        return torch.optim.SGD(params, lr=0.1)

    expected_calls, got_calls = [], []
    monkeypatch.setattr(torch, "_amp_foreach_non_finite_check_and_unscale_", _record_calls(expected_calls))
    expected = torch.amp.GradScaler("cpu")._unscale_grads_(optimizer(), torch.tensor(0.5), torch.zeros(()), True)
    monkeypatch.setattr(S, "non_finite_check_and_unscale_", _record_calls(got_calls))
    got = S.unscale_grads_(optimizer(), torch.tensor(0.5), torch.zeros(()), True)
    assert sorted(got_calls) == sorted(expected_calls), (
        f"(devices, dtypes, count, found_inf's device, inv_scale's device) per call: {sorted(got_calls)}; "
        f"torch's {sorted(expected_calls)}")
    assert sorted(str(d) for d in got) == sorted(str(d) for d in expected), "one found_inf per device"
    assert all(str(t.device) == str(d) for d, t in got.items()), "each device's found_inf lives on that device"
