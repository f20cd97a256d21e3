"""Chapter 10's printed conclusions, recomputed: what autograd saves for the 16-block
model, checkpointing's bytes and the O(√N) minimum, the input pipeline's gain from
workers, dynamic int8's size and speed, and the deprecation warnings a fresh
interpreter shows; and §8's rules of thumb (equal FLOPs, growing bytes moved; BPTT
memory linear in the length; the (N, 1) - (N,) matrix; float32 sums whose bits change
with the thread count). The saved-tensor counts come from a counter written here on
``saved_tensors_hooks`` (not the chapter's meter); timings use wide margins."""
from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import time
import warnings
import weakref

import torch
import torch.utils.checkpoint as torch_ckpt
from torch.utils.data import _utils
from torch.utils.flop_counter import FlopCounterMode

from minikernel.utils.data.examples import BrokenAt

ACTIVATION = 64 * 256 * 4  # one 64×256 float32 tensor, in bytes


class _Handle:
    __slots__ = ("__weakref__", "ptr")


class LiveSavedStorages:
    """Distinct storages autograd holds for backward (parameters excluded): now and at the peak."""

    def __init__(self, exclude):
        self.exclude = {p.untyped_storage().data_ptr() for p in exclude}
        self.refs: dict[int, int] = {}
        self.peak = 0

    def _pack(self, t):
        ptr = t.untyped_storage().data_ptr()
        handle = _Handle()
        handle.ptr = ptr
        if ptr not in self.exclude:
            self.refs[ptr] = self.refs.get(ptr, 0) + 1
            self.peak = max(self.peak, len(self.refs))
            weakref.finalize(handle, self._release, ptr)
        return handle, t

    def _release(self, ptr):
        self.refs[ptr] -= 1
        if not self.refs[ptr]:
            del self.refs[ptr]

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda packed: packed[1])
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)


def _deep():
    torch.manual_seed(0)
    blocks = [torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh()) for _ in range(16)]
    return torch.nn.Sequential(*blocks), torch.randn(64, 256, requires_grad=True)


def test_32_ops_save_32_activations_in_17_tensors():
    deep, x = _deep()
    params = {p.untyped_storage().data_ptr() for p in deep.parameters()}
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = deep(x)
    activations = [t for t in saved if t.untyped_storage().data_ptr() not in params]
    assert len(activations) == 32 and all(t.shape == (64, 256) for t in activations)
    assert len({t.untyped_storage().data_ptr() for t in activations}) == 17
    del out


def test_checkpointing_keeps_only_the_input_after_forward():
    deep, x = _deep()
    for checkpointed in (False, True):
        with LiveSavedStorages(deep.parameters()) as live:
            out = torch_ckpt.checkpoint(deep, x, use_reentrant=True) if checkpointed else deep(x)
            after_forward = len(live.refs)
            out.pow(2).sum().backward()
        assert after_forward == (1 if checkpointed else 17)
    # the chapter prints bytes: 65536 vs 1114112
    assert (1 * ACTIVATION, 17 * ACTIVATION) == (65536, 1114112)


def test_fewest_saved_tensors_at_k_near_sqrt_n():
    deep, x0 = _deep()
    peaks = {}
    for k in (1, 2, 3, 4, 6, 8, 16):
        x = x0.detach().clone().requires_grad_()
        with LiveSavedStorages(deep.parameters()) as live:
            torch_ckpt.checkpoint_sequential(deep, k, x, use_reentrant=True).sum().backward()
        peaks[k] = live.peak
    assert min(peaks, key=peaks.get) == 4 == int(16 ** 0.5)
    assert peaks[1] == peaks[16] == 17 and peaks[4] < peaks[2] and peaks[4] < peaks[8]


class _Stamped(torch.utils.data.Dataset):
    """Each sample waits 50 ms and says which process loaded it, and when it started and ended."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int):
        start = time.monotonic()
        time.sleep(0.05)
        return os.getpid(), start, time.monotonic()


def _intervals(workers: int) -> list:
    loader = torch.utils.data.DataLoader(_Stamped(), batch_size=None, num_workers=workers)
    return list(loader)


def test_workers_load_samples_at_the_same_time():
    """The figure's point without a clock comparison: with two workers, samples from two
    processes are loaded at the same moment (their waits overlap); without workers never."""
    def overlapping(intervals):
        return any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2] for a in intervals for b in intervals)

    alone, two = _intervals(0), _intervals(2)
    assert len({pid for pid, _, _ in alone}) == 1 and not any(
        a is not b and a[1] < b[2] and b[1] < a[2] for a in alone for b in alone)
    assert len({pid for pid, _, _ in two}) == 2 and overlapping(two)


def _mlps():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qmlp = torch.ao.quantization.quantize_dynamic(mlp, {torch.nn.Linear}, dtype=torch.qint8)
    return mlp, qmlp


def _state_bytes(module) -> int:
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getbuffer().nbytes


def test_dynamic_int8_is_about_a_quarter_of_the_size_and_close():
    mlp, qmlp = _mlps()
    float_bytes, int8_bytes = _state_bytes(mlp), _state_bytes(qmlp)
    weights = 512 * 1024 * 2  # both layers' weight elements
    assert float_bytes >= 4 * weights and weights <= int8_bytes < 0.3 * float_bytes
    batch = torch.randn(64, 512)
    with torch.no_grad():
        rel = ((qmlp(batch) - mlp(batch)).norm() / mlp(batch).norm()).item()
    assert rel < 0.05


def test_a_fresh_interpreter_shows_both_quantization_deprecations():
    code = ("import warnings, torch\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)\n"
            "    torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)\n"
            "    torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(2, 2)),"
            " {torch.nn.Linear})\n"
            "for c in caught: print(str(c.message).splitlines()[0])\n")
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    creation = [line for line in lines if "quantized tensor creation functions" in line]
    assert len(creation) == 1, "the dtype warning is issued once per process"
    assert any("torch.ao.quantization is deprecated and will be removed in 2.10" in line for line in lines)
    assert torch.__version__.startswith("2.13"), "the chapter comments on this text as printed by 2.13"


def test_an_errored_loader_collected_later_waits_per_worker():
    """The artifact behind the old figure: freeing an iterator whose worker raised waits
    out the shutdown's join timeout, 5 s per worker (one worker here)."""
    gc.collect()
    gc.disable()
    try:
        try:
            list(torch.utils.data.DataLoader(BrokenAt(12, bad=5), batch_size=2, num_workers=1))
        except ValueError:
            pass
        start = time.perf_counter()
        gc.collect()
        waited = time.perf_counter() - start
    finally:
        gc.enable()
    assert waited > 0.8 * _utils.MP_STATUS_CHECK_INTERVAL


# §8 Rules of thumb -------------------------------------------------------------------------


def _flops_and_bytes(fn, x, weights):
    """FLOPs as torch's counter sees them, and the bytes read and written: input, output, weights."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = fn(x)
    return counter.get_total_flops(), 4 * (x.numel() + out.numel() + sum(w.numel() for w in weights))


def test_shufflenet_pairs_have_equal_flops_and_growing_memory_access():
    torch.manual_seed(0)
    channel_pairs = [torch.nn.Conv2d(c1, c2, 1, bias=False) for c1, c2 in ((128, 128), (64, 256), (32, 512),
                                                                          (16, 1024))]
    g1 = [_flops_and_bytes(conv, torch.randn(8, conv.in_channels, 28, 28), [conv.weight]) for conv in channel_pairs]
    grouped = [torch.nn.Conv2d(c, c, 1, groups=g, bias=False) for g, c in ((1, 64), (4, 128), (16, 256))]
    g2 = [_flops_and_bytes(conv, torch.randn(8, conv.in_channels, 28, 28), [conv.weight]) for conv in grouped]
    for rows in (g1, g2):
        flops = [f for f, _ in rows]
        moved = [b for _, b in rows]
        assert len(set(flops)) == 1 and flops[0] > 0
        assert moved == sorted(moved) and len(set(moved)) == len(moved)
    # the chapter's formula for a 1×1 convolution: MAC = 4·(hw·(c1 + c2) + c1·c2), batch 8, 28×28
    assert [b for _, b in g1] == [4 * (8 * 28 * 28 * (c1 + c2) + c1 * c2)
                                  for c1, c2 in ((128, 128), (64, 256), (32, 512), (16, 1024))]


def test_branches_and_element_wise_ops_add_no_counted_flops():
    torch.manual_seed(0)
    x = torch.randn(8, 128, 28, 28)
    counted = set()
    for n in (1, 4, 8):
        branches = [torch.nn.Conv2d(128, 128 // n, 1, bias=False) for _ in range(n)]
        counted.add(_flops_and_bytes(lambda t, bs=branches: torch.cat([b(t) for b in bs], 1), x, [])[0])
    conv = torch.nn.Conv2d(128, 128, 1, bias=False)
    counted.add(_flops_and_bytes(conv, x, [])[0])
    counted.add(_flops_and_bytes(lambda t: torch.relu(conv(t)) + t, x, [])[0])
    assert counted == {2 * 8 * 28 * 28 * 128 * 128}


class SavedBytes:
    """Bytes of the distinct storages autograd holds for backward (parameters excluded), now and at the peak."""

    def __init__(self, exclude):
        self.counter = LiveSavedStorages(exclude)
        self.sizes: dict[int, int] = {}
        self.peak = 0

    def _pack(self, t):
        self.sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        packed = self.counter._pack(t)
        self.peak = max(self.peak, self.live)
        return packed

    @property
    def live(self) -> int:
        return sum(self.sizes[p] for p in self.counter.refs)

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda packed: packed[1])
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)


def test_rnn_saved_bytes_grow_linearly_with_the_sequence():
    torch.manual_seed(0)
    rnn = torch.nn.RNN(32, 64, batch_first=True)
    held = {}
    for steps in (8, 16, 32, 64):
        with SavedBytes(rnn.parameters()) as meter:
            out, _ = rnn(torch.randn(4, steps, 32))
            held[steps] = meter.live
            out.sum().backward()
            assert meter.live == 0
    per_step = 4 * (4 * 32 + 4 * 64)  # x_t and h_t, float32
    assert all(held[t] - held[8] == per_step * (t - 8) for t in held)
    assert held[64] > 7 * held[8]


def test_truncated_bptt_peaks_at_one_chunk():
    torch.manual_seed(0)
    rnn = torch.nn.RNN(32, 64, batch_first=True)
    sequence = torch.randn(4, 64, 32)
    with SavedBytes(rnn.parameters()) as whole:
        out, _ = rnn(sequence[:, :16])
        out.sum().backward()
    with SavedBytes(rnn.parameters()) as chunked:
        hidden = None
        for chunk in sequence.split(16, dim=1):
            out, hidden = rnn(chunk, hidden)
            out.sum().backward()
            hidden = hidden.detach()
    with SavedBytes(rnn.parameters()) as untruncated:
        out, _ = rnn(sequence)
        out.sum().backward()
    assert chunked.peak == whole.peak and untruncated.peak > 3 * chunked.peak


def test_a_column_minus_a_1d_tensor_is_a_matrix():
    torch.manual_seed(0)
    pred, target = torch.randn(4, 1), torch.randn(4)
    assert (pred - target).shape == (4, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrong = torch.nn.functional.mse_loss(pred, target)
    assert any("different to the input size" in str(w.message) for w in caught)
    assert torch.equal(wrong, ((pred - target) ** 2).mean())
    assert not torch.allclose(wrong, torch.nn.functional.mse_loss(pred.squeeze(1), target))


def test_float32_sum_bits_depend_on_threads_and_order():
    torch.manual_seed(0)
    values = torch.randn(10_000_000)
    threads = torch.get_num_threads()
    try:
        sums = {}
        for n in (1, 2):
            torch.set_num_threads(n)
            sums[n] = values.sum()
        again = values.sum()
        torch.set_num_threads(1)
        shuffled = values[torch.randperm(values.numel())].sum()
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(again, sums[2]), "one thread count, one answer"
    assert not torch.equal(sums[1], sums[2]), "this build splits a float32 sum by thread"
    assert not torch.equal(sums[1], shuffled)
    exact = values.double().sum()
    assert all(abs(s.double() - exact) < 1e-2 for s in (sums[1], sums[2], shuffled))
