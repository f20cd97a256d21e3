"""Chapter 10's measuring tools (not exercises): SavedTensorMeter and OpTrace.

Oracle: what torch's own saved_tensors_hooks are handed (counted independently
here), the tensors' own sizes, and the calls' real results.
"""
from __future__ import annotations

import torch

from minikernel.utils.op_trace import OpTrace
from minikernel.utils.saved_tensors import SavedTensorMeter, saved_bytes_per_module


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))


def test_meter_counts_each_saved_storage_once_and_skips_parameters():
    model = _model()
    x = torch.randn(16, 8)
    seen = {}
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(t):
        key = t.untyped_storage().data_ptr()
        if key not in params:
            seen[key] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x).sum()
    with SavedTensorMeter(exclude=model.parameters()) as meter:
        out = model(x).sum()
        assert meter.live_bytes == sum(seen.values()) == meter.peak_bytes
        del out
        assert meter.live_bytes == 0, "dropping the output frees the whole graph (no cycle keeps it)"
    assert meter.peak_bytes == x.numel() * 4 + 16 * 32 * 4


def test_backward_releases_what_was_saved():
    model = _model()
    with SavedTensorMeter(exclude=model.parameters()) as meter:
        loss = model(torch.randn(4, 8)).pow(2).sum()
        assert meter.live_bytes > 0
        loss.backward()
        assert meter.live_bytes == 0, "backward frees each node's saved tensors (retain_graph=False)"


def test_meter_leaves_gradients_unchanged():
    model = _model()
    x = torch.randn(5, 8)
    model(x).tanh().sum().backward()
    plain = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with SavedTensorMeter(exclude=model.parameters()):
        model(x).tanh().sum().backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(plain, model.parameters()))


def test_bytes_per_module():
    model = _model()
    x = torch.randn(32, 8)
    assert saved_bytes_per_module(model, x) == {"0": 32 * 8 * 4, "1": 32 * 32 * 4, "2": 0}


def test_op_trace_records_calls_with_their_shapes_and_dtypes():
    model = _model()
    x = torch.randn(4, 8)
    with OpTrace() as trace:
        out = model(x)
        total = out.double().sum()
    names = [c.name for c in trace.calls]
    assert names == ["linear", "relu", "linear", "double", "sum"]
    assert trace.calls[0].args == ["float32[4, 8]", "float32[32, 8]", "float32[32]"]
    assert trace.calls[2].result == f"float32{list(out.shape)}"
    assert trace.calls[-1].result == f"{str(total.dtype).removeprefix('torch.')}[]"
    assert str(trace).splitlines()[1] == "relu(float32[4, 32]) -> float32[4, 32]"
