"""Exercise 10.1 (minikernel/utils/checkpoint.py): checkpointing as a recomputing Function.

Oracle: ``torch.utils.checkpoint`` (both variants) and the same network without
checkpointing: values and gradients bit for bit, what autograd saves (measured with
saved_tensors_hooks), the generator state after backward, and the errors.
"""
from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils import checkpoint as torch_ckpt

from minikernel.utils import checkpoint as mk_ckpt
from minikernel.utils.saved_tensors import SavedTensorMeter


def _net(seed: int, depth: int = 4, width: int = 12, dropout: float = 0.3) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.Tanh(), torch.nn.Dropout(dropout)]
    return torch.nn.Sequential(*layers)


def _grads(net: torch.nn.Module, run, x: torch.Tensor, seed: int = 7):
    """(output, parameter grads, input grad, RNG state after backward) of run(x)."""
    net.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_()
    torch.manual_seed(seed)
    out = run(x)
    torch.rand(5)  # other random draws between forward and backward (the generator moves on)
    (out.sin() * torch.arange(out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
    return out.detach(), [p.grad for p in net.parameters()], x.grad, torch.get_rng_state()


def _equal(a, b) -> bool:
    return all(torch.equal(u, v) for u, v in zip(a, b, strict=True))


@pytest.mark.exercise("10.1")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("segments", [2, 3, 5])  # 1 segment checkpoints nothing
def test_checkpoint_sequential_gives_torchs_values_and_gradients(seed, segments):
    net = _net(seed, depth=5)
    x = torch.randn(6, 12, generator=torch.Generator().manual_seed(seed))
    plain = _grads(net, net, x)
    ours = _grads(net, lambda t: mk_ckpt.checkpoint_sequential(net, segments, t, use_reentrant=True), x)
    for reentrant in (True, False):
        theirs = _grads(net, lambda t, r=reentrant: torch_ckpt.checkpoint_sequential(net, segments, t, use_reentrant=r), x)
        assert torch.equal(ours[0], theirs[0]), "forward values differ from torch's checkpoint_sequential"
        assert _equal(ours[1], theirs[1]), f"parameter gradients differ (use_reentrant={reentrant})"
        assert torch.equal(ours[2], theirs[2]), f"input gradient differs (use_reentrant={reentrant})"
    assert torch.equal(ours[0], plain[0]) and _equal(ours[1], plain[1]) and torch.equal(ours[2], plain[2]), (
        "checkpointing must not change values or gradients (is the dropout mask redrawn in the recomputation?)")


@pytest.mark.exercise("10.1")
def test_the_generator_state_after_backward_is_as_without_recomputing():
    net = _net(3)
    x = torch.randn(4, 12)
    ours = _grads(net, lambda t: mk_ckpt.checkpoint(net, t, use_reentrant=True), x)
    theirs = _grads(net, lambda t: torch_ckpt.checkpoint(net, t, use_reentrant=True), x)
    plain = _grads(net, net, x)
    assert torch.equal(ours[3], plain[3]) and torch.equal(ours[3], theirs[3]), (
        "after backward the CPU generator must be where the forward left it: restore it after rerunning")


@pytest.mark.exercise("10.1")
def test_without_preserving_the_rng_state_dropout_differs_like_torchs():
    net = _net(5, dropout=0.5)
    x = torch.randn(4, 12)
    ours = _grads(net, lambda t: mk_ckpt.checkpoint(net, t, use_reentrant=True, preserve_rng_state=False), x)
    theirs = _grads(net, lambda t: torch_ckpt.checkpoint(net, t, use_reentrant=True, preserve_rng_state=False), x)
    assert _equal(ours[1], theirs[1]), "with preserve_rng_state=False the recomputation draws on from the current state"


@pytest.mark.exercise("10.1")
def test_several_inputs_non_tensor_arguments_and_outputs():
    g = torch.Generator().manual_seed(0)
    a0, b0, w0 = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g), torch.randn(4, 4, generator=g)

    def f(a, k, b, w, tag):
        assert tag == "tag" and k == 3
        return (a @ w).tanh() * k, (b * a).exp()

    results = []
    for ckpt in (mk_ckpt.checkpoint, torch_ckpt.checkpoint):
        a, b, w = a0.clone().requires_grad_(), b0.clone(), w0.clone().requires_grad_()
        u, v = ckpt(f, a, 3, b, w, "tag", use_reentrant=True)
        (u.sum() + (v * v).sum()).backward()
        results.append((u.detach(), v.detach(), a.grad, w.grad, b.grad))
    ours, theirs = results
    assert _equal(ours[:4], theirs[:4])
    assert ours[4] is None and theirs[4] is None, "an input that needs no gradient gets none"


@pytest.mark.exercise("10.1")
def test_an_unused_output_gets_a_zero_gradient():
    x0 = torch.randn(5)
    grads = []
    for ckpt in (mk_ckpt.checkpoint, torch_ckpt.checkpoint):
        x = x0.clone().requires_grad_()
        u, v = ckpt(lambda t: (t.sin(), t.cos()), x, use_reentrant=True)
        u.sum().backward()
        grads.append(x.grad)
    assert torch.equal(grads[0], grads[1])


@pytest.mark.exercise("10.1")
def test_forward_saves_only_the_inputs():
    net = _net(1, depth=6, dropout=0.0)
    x = torch.randn(16, 12, requires_grad=True)
    sizes = {}
    for name, run in (("ours", lambda: mk_ckpt.checkpoint(net, x, use_reentrant=True)),
                      ("torch", lambda: torch_ckpt.checkpoint(net, x, use_reentrant=True)),
                      ("plain", lambda: net(x))):
        with SavedTensorMeter(exclude=net.parameters()) as meter:
            out = run()
            sizes[name] = meter.live_bytes
            out.sum().backward()
        sizes[name + " peak"] = meter.peak_bytes
    assert sizes["ours"] == sizes["torch"] == x.numel() * 4, (
        f"after a checkpointed forward only the input may stay saved: {sizes}")
    assert sizes["plain"] > 6 * sizes["ours"]
    assert sizes["ours peak"] == sizes["torch peak"], f"the recomputation holds more than torch's: {sizes}"


@pytest.mark.exercise("10.1")
def test_checkpoint_sequential_peak_memory_matches_torch_reentrant():
    net = _net(2, depth=8, dropout=0.0)
    x = torch.randn(32, 12, requires_grad=True)
    for segments in (2, 4, 8):
        peaks = []
        for impl in (mk_ckpt, torch_ckpt):
            with SavedTensorMeter(exclude=net.parameters()) as meter:
                impl.checkpoint_sequential(net, segments, x, use_reentrant=True).sum().backward()
            peaks.append(meter.peak_bytes)
        assert peaks[0] == peaks[1], f"{segments} segments: peak saved bytes {peaks[0]} vs torch's {peaks[1]}"


@pytest.mark.exercise("10.1")
def test_no_output_requiring_grad_is_torchs_error():
    errors = []
    for ckpt in (mk_ckpt.checkpoint, torch_ckpt.checkpoint):
        x = torch.randn(3, requires_grad=True)
        out = ckpt(lambda t: t.detach() * 2, x, use_reentrant=True)
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_no_input_requiring_grad_warns_like_torch():
    for ckpt in (mk_ckpt.checkpoint, torch_ckpt.checkpoint):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                ckpt(torch.sin, torch.randn(3), use_reentrant=True)
            except NotImplementedError:
                pass  # the stub of 10.1: the warning comes first
        assert "None of the inputs have requires_grad=True. Gradients will be None" in [str(w.message) for w in caught]


def test_use_reentrant_false_is_refused_with_a_pointer_to_torch():
    with pytest.raises(ValueError, match="use_reentrant=False"):
        mk_ckpt.checkpoint(torch.sin, torch.randn(3), use_reentrant=False)


def test_checkpoint_sequential_refuses_a_bad_segment_count():
    with pytest.raises(ValueError, match="segments must be between 1 and"):
        mk_ckpt.checkpoint_sequential(_net(0, depth=1), 7, torch.randn(2, 12))
