"""Chapter 06 exercises (minikernel/amp/scaling.py), each against the torch piece it rebuilds."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, strategies as st

import minikernel.amp as mk_amp
from minikernel.amp import OptState
from minikernel.amp import scaling as S
from tests.ch06.twins import bits, outcome

INF, NAN = float("inf"), float("nan")
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


# ------------------------------------------------------------------ 6.1 scale_outputs
@st.composite
def nested_outputs(draw, depth: int = 3):
    """A tensor, or lists/tuples of them (nested, possibly empty)."""
    if depth == 0 or draw(st.booleans()):
        dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64]))
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        t = (torch.randn(shape) * 10).to(dtype)
        return t.requires_grad_() if dtype.is_floating_point and draw(st.booleans()) else t
    kind = draw(st.sampled_from([list, tuple]))
    return kind(draw(st.lists(nested_outputs(depth - 1), max_size=3)))


def _shape_of(value):
    """Structure, types, dtypes, requires_grad and bits of a (nested) result."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.requires_grad, bits(value))
    return (type(value).__name__, [_shape_of(v) for v in value])


@pytest.mark.exercise("6.1")
@given(nested_outputs(), st.sampled_from([2.0**16, 1.0, 3.0, 0.1, 2.0**-20, 1e30]))
def test_scale_outputs_matches_torch_scale(outputs, init_scale):
    torch_scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    mine = mk_amp.GradScaler("cpu", init_scale=init_scale)
    got = mine.scale(outputs)
    expected = torch_scaler.scale(outputs)
    assert _shape_of(got) == _shape_of(expected)
    # the scale exists exactly when a tensor was met (an empty list creates none)
    assert (mine._scale is None) == (torch_scaler._scale is None)


@pytest.mark.exercise("6.1")
def test_scale_outputs_direct_call_uses_scale_on_per_tensor_device():
    asked = []
    scale = torch.tensor(4.0)
    got = S.scale_outputs([torch.ones(2), (torch.full((1,), 2.0),)], lambda d: asked.append(d) or scale)
    assert [t.tolist() for t in (got[0], got[1][0])] == [[4.0, 4.0], [8.0]]
    assert isinstance(got, list) and isinstance(got[1], tuple)
    assert asked and all(d == torch.device("cpu") for d in asked)


@pytest.mark.exercise("6.1")
def test_scale_outputs_other_iterables_stay_lazy_like_torch():
    t = torch.arange(3.0)
    torch_scaler, mine = torch.amp.GradScaler("cpu"), mk_amp.GradScaler("cpu")
    got, expected = mine.scale(iter([t, t * 2])), torch_scaler.scale(iter([t, t * 2]))
    assert not isinstance(got, (list, tuple, torch.Tensor))
    assert mine._scale is None and torch_scaler._scale is None, "nothing is scaled before it is consumed"
    assert [bits(v) for v in got] == [bits(v) for v in expected]
    assert mine.get_scale() == torch_scaler.get_scale() == 2.0**16


@pytest.mark.exercise("6.1")
@pytest.mark.parametrize("outputs", [3.0, None, [torch.ones(1), 5], (torch.ones(1), [None])])
def test_scale_outputs_refuses_non_tensors_like_torch(outputs):
    got = outcome(mk_amp.GradScaler("cpu").scale, outputs)
    expected = outcome(torch.amp.GradScaler("cpu").scale, outputs)
    assert got[0] == expected[0] == "raised"
    assert got[1] == expected[1]  # ValueError("outputs must be a Tensor or an iterable of Tensors")


# ------------------------------------------------------------------ 6.2 transition
def _torch_stage_after(stage: OptState, method: str):
    """Drive torch's GradScaler to ``stage`` for one optimizer, call ``method``: (new stage | error).

    A second optimizer has stepped already, so that update() has inf checks to use.
    """
    p, q = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(3))
    opt, other = torch.optim.SGD([p], lr=0.1), torch.optim.SGD([q], lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(p.sum() + q.sum()).backward()
    scaler.step(other)
    if stage is OptState.UNSCALED:
        scaler.unscale_(opt)
    elif stage is OptState.STEPPED:
        scaler.step(opt)
    call = {"unscale_": lambda: scaler.unscale_(opt), "step": lambda: scaler.step(opt),
            "update": scaler.update}[method]
    kind, value = outcome(call)
    if kind == "raised":
        return value
    return OptState[scaler._per_optimizer_states[id(opt)]["stage"].name]


@pytest.mark.exercise("6.2")
@pytest.mark.parametrize("method", S.METHODS)
@pytest.mark.parametrize("stage", list(OptState), ids=lambda s: s.name)
def test_transition_matches_torch(stage, method):
    expected = _torch_stage_after(stage, method)
    kind, got = outcome(S.transition, stage, method)
    if isinstance(expected, OptState):
        assert kind == "ok", f"torch allows {method}() in {stage.name} (-> {expected.name}); you raised {got}"
        assert got is expected, f"{method}() in {stage.name}: torch goes to {expected.name}, you to {got}"
    else:
        assert kind == "raised", f"torch refuses {method}() in {stage.name} with {expected}; you returned {got}"
        assert got == expected, f"{method}() in {stage.name}: torch raises {expected}, you {got}"


@pytest.mark.exercise("6.2")
@pytest.mark.parametrize("method", ["scale", "zero_grad", "", "STEP"])
def test_transition_refuses_unknown_methods(method):
    kind, got = outcome(S.transition, OptState.READY, method)
    assert kind == "raised" and got[0] is ValueError, f"transition(READY, {method!r}) should raise ValueError"
    assert repr(method) in got[1], f"name the method in the message: {got[1]!r}"


# ------------------------------------------------------------------ 6.3 unscale
@st.composite
def gradients(draw, dtypes=FLOATS[:3]):
    """A few tensors: random shapes (0-d, empty, transposed), dtypes, and some inf/-inf/nan."""
    out = []
    for _ in range(draw(st.integers(0, 4))):
        dtype = draw(st.sampled_from(dtypes))
        shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
        t = (torch.randn(shape, dtype=torch.float64) * 10 ** draw(st.integers(-6, 6))).to(dtype)
        if t.dim() >= 2 and draw(st.booleans()):
            t = t.transpose(0, 1)  # gradients need not be contiguous
        for _ in range(draw(st.integers(0, 2)) if t.numel() else 0):
            index = torch.unravel_index(torch.tensor(draw(st.integers(0, t.numel() - 1))), t.shape)
            t[tuple(int(i) for i in index)] = draw(st.sampled_from([INF, -INF, NAN]))
        out.append(t)
    return out


inv_scales = st.one_of(st.sampled_from([1.0, 2.0**-16, 0.5, 1 / 3, 1e-30, 3.0]),
                       st.floats(1e-30, 1e3, allow_nan=False))


@pytest.mark.exercise("6.3")
@given(gradients(FLOATS), inv_scales, st.sampled_from([0.0, 1.0]))
def test_non_finite_check_and_unscale_matches_torch(grads, inv, found_before):
    inv_scale = torch.tensor(inv, dtype=torch.float32)
    mine, theirs = [g.clone() for g in grads], [g.clone() for g in grads]  # clone keeps the strides
    found_mine, found_theirs = torch.full((1,), found_before), torch.full((1,), found_before)
    S.non_finite_check_and_unscale_(mine, found_mine, inv_scale)
    torch._amp_foreach_non_finite_check_and_unscale_(theirs, found_theirs, inv_scale)
    assert found_mine.item() == found_theirs.item(), (
        f"found_inf {found_mine.item()} != torch's {found_theirs.item()}")
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert bits(a) == bits(b), f"gradient {i} ({b.dtype}) differs from torch's:\n{a}\nvs\n{b}"


@pytest.mark.exercise("6.3")
def test_non_finite_check_never_clears_found_inf():
    found = torch.ones(1)
    S.non_finite_check_and_unscale_([torch.ones(3)], found, torch.tensor(0.5))
    expected = torch.ones(1)
    torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(3)], expected, torch.tensor(0.5))
    assert found.item() == expected.item() == 1.0


def _optimizer_with_grads(grads_per_group: list[list[torch.Tensor | None]]):
    params_per_group = []
    for grads in grads_per_group:
        params = []
        for g in grads:
            p = torch.nn.Parameter(torch.zeros(g.shape if g is not None else (2,), dtype=g.dtype if g is not None
                                               else torch.float32))
            p.grad = None if g is None else g.clone()
            params.append(p)
        params_per_group.append({"params": params})
    return torch.optim.SGD(params_per_group, lr=0.1)


@pytest.mark.exercise("6.3")
@given(st.lists(st.lists(st.one_of(st.none(), gradients(FLOATS).map(lambda gs: gs[0] if gs else None)),
                         max_size=3), min_size=1, max_size=3),
       inv_scales, st.booleans())
def test_unscale_grads_matches_torch(grads_per_group, inv, allow_fp16):
    mine, theirs = _optimizer_with_grads(grads_per_group), _optimizer_with_grads(grads_per_group)
    inv_scale = torch.tensor(inv, dtype=torch.float32)
    got = outcome(S.unscale_grads_, mine, inv_scale, torch.zeros(()), allow_fp16)
    expected = outcome(torch.amp.GradScaler("cpu")._unscale_grads_, theirs, inv_scale, torch.zeros(()), allow_fp16)
    if expected[0] == "raised":
        assert got == expected, f"torch raised {expected[1]}; you {got}"
    else:
        assert got[0] == "ok", f"you raised {got[1]}"
        assert {str(d): bits(t) for d, t in got[1].items()} == {str(d): bits(t) for d, t in expected[1].items()}
    for pm, pt in zip((p for g in mine.param_groups for p in g["params"]),
                      (p for g in theirs.param_groups for p in g["params"])):
        assert bits(pm.grad) == bits(pt.grad), "a gradient differs from torch's (none may change on an error)"


@pytest.mark.exercise("6.3")
def test_unscale_grads_fp16_refused_before_anything_changes():
    first, half = torch.full((2,), 4.0), torch.ones(2, dtype=torch.float16)
    opt = _optimizer_with_grads([[first, half]])
    with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
        try:
            S.unscale_grads_(opt, torch.tensor(0.25), torch.zeros(()), False)
        except NotImplementedError:
            raise
    assert opt.param_groups[0]["params"][0].grad.tolist() == [4.0, 4.0], "the float32 gradient was changed"


@pytest.mark.exercise("6.3")
def test_unscale_grads_returns_empty_dict_without_gradients():
    opt = _optimizer_with_grads([[None, None]])
    assert S.unscale_grads_(opt, torch.tensor(0.5), torch.zeros(()), False) == {}


# ------------------------------------------------------------------ 6.4 maybe_opt_step
class CountingSGD(torch.optim.SGD):
    """SGD that records each step() call and returns a marker."""

    def __init__(self, params):
        super().__init__(params, lr=0.5)
        self.calls = []

    def step(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        super().step()
        return "stepped"


def _torch_maybe_step(opt, found, *args, **kwargs):
    scaler = torch.amp.GradScaler("cpu")
    if len(found) == 0:  # torch checks this in step(), just before _maybe_opt_step
        raise AssertionError("No inf checks were recorded for this optimizer.")
    return scaler._maybe_opt_step(opt, {"found_inf_per_device": found}, *args, **kwargs)


@pytest.mark.exercise("6.4")
@given(st.lists(st.sampled_from([0.0, 1.0, 2.0]), max_size=3), st.lists(st.integers(), max_size=2),
       st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=2))
def test_maybe_opt_step_matches_torch(found_values, args, kwargs):
    found = {torch.device("cpu", i) if i else torch.device("cpu"): torch.tensor(v) for i, v in enumerate(found_values)}
    sides = []
    for fn in (S.maybe_opt_step, _torch_maybe_step):
        p = torch.nn.Parameter(torch.ones(2))
        p.grad = torch.full((2,), 2.0)
        opt = CountingSGD([p])
        sides.append((outcome(fn, opt, found, *args, **kwargs), opt.calls, p.tolist()))
    (got, calls, param), (expected, expected_calls, expected_param) = sides
    assert got == expected, f"returned/raised {got}; torch {expected}"
    assert calls == expected_calls, f"optimizer.step calls {calls}; torch made {expected_calls}"
    assert param == expected_param


@pytest.mark.exercise("6.4")
def test_maybe_opt_step_skips_on_inf_and_steps_otherwise():
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    opt = CountingSGD([p])
    assert S.maybe_opt_step(opt, {torch.device("cpu"): torch.tensor(1.0)}) is None
    assert opt.calls == [] and p.tolist() == [1.0, 1.0], "a step with inf/NaN gradients must be skipped"
    assert S.maybe_opt_step(opt, {torch.device("cpu"): torch.tensor(0.0)}, 7, k=1) == "stepped"
    assert opt.calls == [((7,), {"k": 1})] and p.tolist() == [0.5, 0.5]


# ------------------------------------------------------------------ 6.5 update_scale_
float32s = st.one_of(
    st.sampled_from([2.0**16, 1.0, 2.0**127, 3.4e38, 1e-45, 2.0**-126, 3.0, 0.1]),
    st.floats(2.0**-126, 2.0**127, width=32))


@pytest.mark.exercise("6.5")
@given(float32s, st.integers(0, 7), st.sampled_from([0.0, 1.0, 2.0, 3.0]),
       st.one_of(st.sampled_from([2.0, 1.5, 4.0]), st.floats(1.0001, 10)),
       st.one_of(st.sampled_from([0.5, 0.25, 0.0]), st.floats(0, 0.9999)), st.integers(1, 6))
def test_update_scale_matches_torch(scale, tracker, found, growth, backoff, interval):
    mine = (torch.tensor(scale), torch.tensor(tracker, dtype=torch.int32), torch.tensor(found))
    theirs = (torch.tensor(scale), torch.tensor(tracker, dtype=torch.int32), torch.tensor(found))
    returned = S.update_scale_(*mine, growth, backoff, interval)
    torch._amp_update_scale_(*theirs, growth, backoff, interval)
    assert returned is mine[0], "return the scale tensor you updated in place"
    assert bits(mine[0]) == bits(theirs[0]), f"scale {mine[0].item()!r}, torch's {theirs[0].item()!r}"
    assert mine[1].item() == theirs[1].item(), f"growth_tracker {mine[1].item()}, torch's {theirs[1].item()}"
    assert mine[1].dtype == torch.int32 and mine[0].dtype == torch.float32


@pytest.mark.exercise("6.5")
def test_update_scale_sequence_with_one_overflow():
    """init 2**16, growth_interval 2, inf at iteration 3 (the scale after each update)."""
    ours = [torch.tensor(2.0**16), torch.tensor(0, dtype=torch.int32)]
    theirs = [torch.tensor(2.0**16), torch.tensor(0, dtype=torch.int32)]
    got, expected = [], []
    for i in range(1, 11):
        found = torch.tensor(1.0 if i == 3 else 0.0)
        S.update_scale_(*ours, found, 2.0, 0.5, 2)
        torch._amp_update_scale_(*theirs, found.clone(), 2.0, 0.5, 2)
        got.append(ours[0].item())
        expected.append(theirs[0].item())
    assert got == expected == [65536, 131072, 65536, 65536, 131072, 131072, 262144, 262144, 524288, 524288]


@pytest.mark.exercise("6.5")
def test_update_scale_never_grows_to_inf():
    scale, tracker = torch.tensor(2.0**127), torch.tensor(0, dtype=torch.int32)
    S.update_scale_(scale, tracker, torch.tensor(0.0), 2.0, 0.5, 1)
    assert scale.item() == 2.0**127 and math.isfinite(scale.item()) and tracker.item() == 0
