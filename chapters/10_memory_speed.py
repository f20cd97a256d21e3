# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 10 — Memory, speed and debugging: saved tensors, checkpointing, the input pipeline, profiling, quantization
#
# Training fits in memory, runs fast and gives the right numbers only when you know
# where memory and time go. This chapter measures them on PyTorch itself: what
# **autograd keeps** for backward (with `saved_tensors_hooks`) and how
# **checkpointing** trades it for recomputation; **gradient accumulation**; how the
# **DataLoader**'s workers, queues and prefetching fit together and what
# `pin_memory` really does; **profiling** (`torch.profiler`, `cProfile`) and
# **debugging** (anomaly detection, a per-op shape trace); and **quantization**
# (scale and zero point, per tensor and per channel, dynamic and static
# post-training quantization) with **Conv/Linear+BatchNorm folding**; and **CUDA in
# practice** (streams, events, the caching allocator, pinned copies, cuDNN flags),
# which runs on a GPU when there is one and otherwise shows its code; and the notes'
# **rules of thumb**, measured (ShuffleNetV2's guidelines, BPTT memory, 1-D tensors,
# reproducibility across hardware).
#
# You rebuild six pieces: checkpointing as a recomputing `torch.autograd.Function`
# (`minikernel/utils/checkpoint.py`), a DataLoader worker's loop and the in-order
# delivery of batches (`minikernel/utils/data/`), quantize/dequantize per tensor and
# per channel bit for bit as PyTorch (`minikernel/ao/quantization/quantize.py`), and
# BatchNorm folding (`minikernel/ao/quantization/fuse.py`). These exercises work on
# **torch tensors**: the memory and time being studied are PyTorch's.
#
# **How each exercise goes.** PyTorch first, then your function on the same input,
# then a check printed beside PyTorch's answer. Until you write a function, its cells
# print `Finish exercise 10.k (...)` and the rest of the notebook still runs.
#
# **Stuck?** The references are under `solutions/utils/` and `solutions/ao/`. Set
# `MINIKERNEL_SOLUTIONS` before starting JupyterLab (`MINIKERNEL_SOLUTIONS=10.4 make
# lab`, or `10.*`, or `all`) and restart the kernel after changing it: it is read once,
# when `minikernel` is imported.
#
# **Grading.** The last cell runs `minikernel.grade("10.*")`; from a terminal,
# `make grade ARGS="'10.*'"` or `python -m minikernel grade 10.4`.

# %%
# Is the course's package installed in this kernel? If not, this says what to run.
import importlib.util

if missing := [m for m in ("minikernel", "torch", "numba", "ipywidgets") if importlib.util.find_spec(m) is None]:
    raise ModuleNotFoundError(
        f"this kernel cannot import {', '.join(missing)}. On your machine: run `make lab` in the course's "
        "folder and open the chapter from the lab it starts (its kernel has everything). In a hosted "
        "notebook (Colab, Kaggle, JupyterHub): run `%pip install -e ..` in a cell (`..` is the course's "
        "folder, the one with pyproject.toml), then restart the kernel.")

# %%
import cProfile
import gc
import inspect
import io
import pstats
import queue
import statistics
import subprocess
import sys
import time
import warnings

import matplotlib.pyplot as plt
import torch
import torch.utils.checkpoint as torch_ckpt
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

import minikernel as mk
from minikernel.ao.quantization import fuse as mk_fuse
from minikernel.ao.quantization import quantize as mk_quant
from minikernel.course import notebook_display
from minikernel.course.bench.timing import median_ms
from minikernel.course.exercise import finish_message
from minikernel.memory_pool import BlockPool
from minikernel.utils import checkpoint as mk_ckpt
from minikernel.utils import data as mk_data
from minikernel.utils.data.examples import BrokenAt, SlowSquares
from minikernel.utils.op_trace import OpTrace
from minikernel.utils.saved_tensors import SavedTensorMeter, saved_bytes_per_module

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__, "| minikernel from", mk.__name__)


def chapter08_model() -> torch.nn.Sequential:
    """Chapter 08's regression network: Linear(8, 32) → ReLU → Linear(32, 1)."""
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))


# %% [markdown]
# ## 1. What autograd keeps for backward
#
# Every op that needs its inputs (or output) for the backward formula *saves* them in
# its graph node: `linear` saves its input (dW = gᵀ·x) and, when the gradient must go
# on to that input, its weight (dx = g·W: below, the first Linear's input needs no
# gradient and only the second saves a parameter), `relu` its output (the mask y > 0),
# `sin` its input. These saved tensors are the **activation
# memory**: they live from the forward until the node runs in backward, and they grow
# with batch size × depth — often far more than the parameters.
#
# `torch.autograd.graph.saved_tensors_hooks(pack, unpack)` shows them: `pack(t)` is
# called for each tensor an op saves, and what it returns is stored instead. Chapter
# 08's model on a batch of 32:

# %%
model = chapter08_model()
x = torch.randn(32, 8)
y = torch.randn(32, 1)


def pack(t):
    kind = "parameter" if any(t.untyped_storage().data_ptr() == p.untyped_storage().data_ptr()
                              for p in model.parameters()) else "activation"
    print(f"  saved {kind:10} {tuple(t.shape)} {t.dtype}")
    return t


with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    loss = torch.nn.functional.mse_loss(model(x), y)

# %% [markdown]
# `SavedTensorMeter` (`minikernel/utils/saved_tensors.py`) turns this into bytes: the
# pack hook returns a small handle and a weak-reference finalizer notices when the
# graph lets go of it. Storages are counted once (ReLU's output *is* the second
# Linear's input) and parameters not at all. Per layer of the model:

# %%
per_layer = saved_bytes_per_module(model, x)
for name, nbytes in per_layer.items():
    print(f"layer {name} ({type(model[int(name)]).__name__:6}): {nbytes:5} bytes of activations saved")
print("the first Linear keeps its input x:", per_layer["0"] == x.numel() * 4)
print("the second Linear adds nothing: it saves the tensor ReLU already saved:", per_layer["2"] == 0)

# %% [markdown]
# The notes advise `del`-ing intermediate results and the loss to free memory. What
# frees the saved tensors is dropping the **last reference to the graph** — the
# output and the loss hold it through `grad_fn` — or running backward, which frees
# each node's saved tensors as it goes (unless `retain_graph=True`):

# %%
with SavedTensorMeter(exclude=model.parameters()) as meter:
    out = model(x)
    loss = torch.nn.functional.mse_loss(out, y)
    print("after forward:            ", meter.live_bytes, "bytes held")
    del out
    print("del out (loss still holds the graph):", meter.live_bytes, "bytes held")
    del loss
    print("del loss:                 ", meter.live_bytes, "bytes held")
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    print("after backward:           ", meter.live_bytes, "bytes held; peak was", meter.peak_bytes)

# %% [markdown]
# A deeper and wider model shows the scale: 16 blocks of Linear(256, 256) + Tanh on
# a batch of 64 save one activation per *block*, not per op. A Linear saves its input
# and a Tanh its output, and each Tanh's output is the next Linear's input: one tensor
# saved twice and stored once. So 32 ops save 32 activations but hold 17 tensors (the
# 16 Linear inputs and the last Tanh's output). The parameters of a block take
# 256·257·4 bytes whatever the batch. (The notes' other rule of thumb: a Linear's
# parameters are O(in·out), an RNN unrolled over T steps keeps T steps of activations.)

# %%
torch.manual_seed(0)
deep = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh()) for _ in range(16)])
x_deep = torch.randn(64, 256, requires_grad=True)
with SavedTensorMeter(exclude=deep.parameters()) as meter:
    deep(x_deep).sum().backward()
param_bytes = sum(p.numel() * 4 for p in deep.parameters())
print(f"activations saved at the peak: {meter.peak_bytes / 2**20:.2f} MiB "
      f"({meter.peak_bytes // (64 * 256 * 4)} tensors of 64×256), parameters: {param_bytes / 2**20:.2f} MiB")

# %% [markdown]
# ### In-place activations and in-place ABN
#
# The notes save memory with in-place ReLUs, `model.apply(inplace_relu)`. An
# in-place ReLU writes its result over its input instead of allocating a new
# tensor; ReLU's backward needs only its output (the mask y > 0), so the graph
# saves the same bytes either way — what goes is the second activation-sized
# tensor alive during the forward pass (chapter 03 §7 shows when in-place is safe):

# %%
def inplace_relu(m):
    if isinstance(m, torch.nn.ReLU):
        m.inplace = True


relu_net = chapter08_model()
x_relu = torch.randn(32, 8)
hidden = relu_net[0](x_relu)
print("out-of-place: ReLU's output is a new tensor:", relu_net[1](hidden).data_ptr() != hidden.data_ptr())
before = saved_bytes_per_module(relu_net, x_relu)
relu_net.apply(inplace_relu)
print("after model.apply(inplace_relu):", relu_net[1])
print("in place: ReLU's output is its input's memory:", relu_net[1](hidden).data_ptr() == hidden.data_ptr())
print("saved bytes per layer unchanged:", saved_bytes_per_module(relu_net, x_relu) == before)

# %% [markdown]
# **In-place activated BatchNorm** (InPlace-ABN, Rota Bulò et al.) goes further. In
# training mode BatchNorm saves its input x and the activation after it saves one
# more tensor (an out-of-place LeakyReLU its input, BN's output; an in-place one its
# output y): two activation-sized tensors per BN+activation pair. InPlace-ABN
# computes y = leaky_relu(BN(x)) in x's memory and saves only y; backward
# **recomputes** BN's normalized input by inverting both steps — z = y where y ≥ 0,
# y/slope elsewhere (a leaky ReLU is invertible, a plain ReLU is not), then
# x̂ = (z − β)/γ — and runs BatchNorm's usual backward from x̂. The same
# recompute-instead-of-save trade as checkpointing in §2, inside one layer.
# `minikernel.utils.inplace_abn.InPlaceABN` implements it as an
# `autograd.Function`; against `BatchNorm2d` + `LeakyReLU` in float64:

# %%
from minikernel.utils.inplace_abn import InPlaceABN

torch.manual_seed(0)
conv_in = torch.nn.Conv2d(8, 8, 3, padding=1).double()
bn_act = torch.nn.Sequential(torch.nn.BatchNorm2d(8), torch.nn.LeakyReLU(0.1)).double()
with torch.no_grad():
    bn_act[0].weight.uniform_(0.5, 1.5)
    bn_act[0].bias.uniform_(-0.5, 0.5)
abn = InPlaceABN(8, slope=0.1).double()
abn.load_state_dict(bn_act[0].state_dict())
image = torch.randn(4, 8, 6, 6, dtype=torch.float64)
y_ref, y_abn = bn_act(conv_in(image)), abn(conv_in(image))
upstream = torch.randn_like(y_ref)
g_ref = torch.autograd.grad(y_ref, [conv_in.weight, bn_act[0].weight, bn_act[0].bias], upstream)
g_abn = torch.autograd.grad(y_abn, [conv_in.weight, abn.weight, abn.bias], upstream)
print("output equal:", torch.allclose(y_ref, y_abn), "| gradients equal (conv weight, γ, β):",
      [torch.allclose(a, b) for a, b in zip(g_ref, g_abn)])
print("running statistics equal:", torch.allclose(bn_act[0].running_var, abn.running_var))

big = torch.randn(32, 16, 32, 32)
shared_conv = torch.nn.Conv2d(16, 16, 3, padding=1)
for name, tail in (("Conv + BatchNorm2d + LeakyReLU", [torch.nn.BatchNorm2d(16), torch.nn.LeakyReLU(0.01)]),
                   ("Conv + InPlaceABN", [InPlaceABN(16)])):
    block = torch.nn.Sequential(shared_conv, *tail)
    with SavedTensorMeter(exclude=block.parameters()) as meter:
        block(big).sum().backward()
    print(f"{name:32} saves {meter.peak_bytes / 2**20:.2f} MiB (one activation is {big.numel() * 4 / 2**20:.0f} MiB)")

# %% [markdown]
# ## 2. Checkpointing: recompute instead of saving
#
# `torch.utils.checkpoint.checkpoint(f, x)` runs `f` without keeping its insides and
# saves only `x`; in backward it reruns `f(x)` with the graph on and backpropagates
# through that. Cost: one more forward of the segment. Two implementations:
#
# * `use_reentrant=True` (the original): a custom `autograd.Function` whose backward
#   **re-enters** the autograd engine on the recomputed graph. It only works with
#   `.backward()` (not `torch.autograd.grad`), needs an input that requires grad, and
#   keyword arguments are refused.
# * `use_reentrant=False` (recommended): runs `f` with the graph on but under
#   `saved_tensors_hooks` that drop each saved tensor and recompute it on first use in
#   backward — works with `autograd.grad`, any inputs, keyword arguments, and stops
#   recomputing early once the needed tensors are back.
#
# Both save and restore the generator state (`preserve_rng_state=True`) so that a
# dropout inside draws the same mask twice. Torch warns if you do not choose (the message
# still promises an exception from 2.9 on; 2.13 warns):

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch_ckpt.checkpoint(torch.sin, torch.randn(3, requires_grad=True))
print(str(caught[0].message).split(". ")[0] + ".")

# %% [markdown]
# The same gradients, far fewer bytes kept after the forward (the meter's hooks are
# the outer ones; `use_reentrant=False` keeps the segment's tensors under its own
# inner hooks, so the meter sees only what stays outside them):

# %%
def grads_of(run):
    deep.zero_grad(set_to_none=True)
    x = x_deep.detach().clone().requires_grad_()
    with SavedTensorMeter(exclude=deep.parameters()) as meter:
        out = run(x)
        after_forward = meter.live_bytes
        out.pow(2).sum().backward()
    return [p.grad for p in deep.parameters()] + [x.grad], after_forward, meter.peak_bytes


plain = grads_of(deep)
for reentrant in (True, False):
    ckpt = grads_of(lambda t: torch_ckpt.checkpoint(deep, t, use_reentrant=reentrant))
    print(f"use_reentrant={reentrant!s:5}: gradients identical: "
          f"{all(torch.equal(a, b) for a, b in zip(plain[0], ckpt[0]))}; bytes after forward "
          f"{ckpt[1]} vs {plain[1]} without checkpointing")

# %% [markdown]
# ## Exercise 10.1 — checkpoint_forward, checkpoint_backward
#
# `minikernel.utils.checkpoint.CheckpointFunction` is the reentrant design: its
# `forward(ctx, run_function, preserve_rng_state, *args)` and `backward(ctx,
# *grad_outputs)` call your `checkpoint_forward` and `checkpoint_backward`. Forward:
# keep the function, the generator state and the tensor inputs
# (`ctx.save_for_backward`), run under `no_grad`. Backward: detach the saved inputs
# into fresh leaves, restore the generator state inside `torch.random.fork_rng`, rerun
# under `enable_grad`, `torch.autograd.backward` the outputs, return `(None, None,
# *input grads)`. `checkpoint` and `checkpoint_sequential` around it are given.
#
# The check: a network with dropout, run plain, through torch's checkpoint and through
# yours, from the same seed:

# %%
torch.manual_seed(3)
dropnet = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                                              torch.nn.Dropout(0.3))])
x_drop = torch.randn(8, 16)


def run_with(fn):
    dropnet.zero_grad(set_to_none=True)
    x = x_drop.clone().requires_grad_()
    torch.manual_seed(7)
    out = fn(x)
    out.sin().sum().backward()
    return [out.detach(), x.grad] + [p.grad for p in dropnet.parameters()], torch.get_rng_state()


reference, rng_plain = run_with(dropnet)
torch_result, _ = run_with(lambda t: torch_ckpt.checkpoint_sequential(dropnet, 3, t, use_reentrant=False))
try:
    yours, rng_yours = run_with(lambda t: mk_ckpt.checkpoint_sequential(dropnet, 3, t, use_reentrant=True))
    print("torch's checkpoint == no checkpoint:", all(torch.equal(a, b) for a, b in zip(torch_result, reference)))
    print("your checkpoint == torch's (values, input and parameter gradients, bit for bit):",
          all(torch.equal(a, b) for a, b in zip(yours, torch_result)))
    print("generator state after backward as without checkpointing:", torch.equal(rng_yours, rng_plain))
except NotImplementedError as err:
    print(finish_message(err, "to checkpoint the network"))
    notebook_display.show_todo(err)

# %% [markdown]
# ### Peak memory against the number of segments: the O(√N) claim
#
# `checkpoint_sequential(functions, k, x)` cuts N layers into k segments and
# checkpoints all but the last. At the peak it holds the k segment inputs plus the
# insides of one segment being recomputed (N/k layers): about k + N/k activations,
# least at k ≈ √N — the notes' "sublinear memory". Measured with the meter on the
# 16-block model, through torch's reentrant checkpoint and through yours (one
# activation = 64×256 float32 = 64 KiB):

# %%
segment_counts = [1, 2, 3, 4, 6, 8, 16]
peaks = {"torch": [], "yours": []}
for k in segment_counts:
    for name, impl in (("torch", torch_ckpt), ("yours", mk_ckpt)):
        x = x_deep.detach().clone().requires_grad_()
        try:
            with SavedTensorMeter(exclude=deep.parameters()) as meter:
                impl.checkpoint_sequential(deep, k, x, use_reentrant=True).sum().backward()
            peaks[name].append(meter.peak_bytes // (64 * 256 * 4))
        except NotImplementedError as err:
            peaks[name].append(None)
            todo = finish_message(err, "to measure your checkpoint")
            todo_id = notebook_display.stub_id_in(err)
print("segments:             ", segment_counts)
print("peak, torch (tensors):", peaks["torch"])
if None in peaks["yours"]:
    print(todo)
    notebook_display.show_todo(todo_id)
else:
    print("peak, yours (tensors):", peaks["yours"], "| equal to torch's:", peaks["yours"] == peaks["torch"])
print("fewest at k =", segment_counts[peaks["torch"].index(min(peaks["torch"]))], "; √16 =", 16 ** 0.5)

# %%
figure, ax = plt.subplots(figsize=(6, 3))
_ = ax.plot(segment_counts, peaks["torch"], "o-", label="torch checkpoint_sequential (measured)")
if None not in peaks["yours"]:
    _ = ax.plot(segment_counts, peaks["yours"], "x--", label="yours (measured)")
_ = ax.plot(segment_counts, [2 * (k + 16 / k) for k in segment_counts], ":", label="2·(k + N/k)")
ax.set_xlabel("segments k (N = 16 blocks)")
ax.set_ylabel("peak saved tensors (64×256)")
_ = ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ### Gradient accumulation
#
# A batch of 64 that does not fit can be run as 2 × 32: call `backward()` on each
# half (gradients **add** into `.grad`) and step once. With a mean loss, divide each
# half's loss by the number of halves, and the gradients equal the big batch's (up to
# float rounding: the sums are ordered differently). With **BatchNorm** in training
# mode they do not: each half is normalized by its own mean and variance, and the
# running statistics get two updates instead of one. (With AMP, scale every half's
# loss and `unscale_`/`step`/`update` once per accumulated step.)

# %%
def accumulation_gap(make_model):
    torch.manual_seed(0)
    net = make_model()
    xb, yb = torch.randn(64, 8), torch.randn(64, 1)
    net.zero_grad()
    torch.nn.functional.mse_loss(net(xb), yb).backward()
    big = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    for half in (slice(0, 32), slice(32, 64)):
        (torch.nn.functional.mse_loss(net(xb[half]), yb[half]) / 2).backward()
    return max((a - b).abs().max().item() for a, b in zip(big, (p.grad for p in net.parameters())))


gap_plain = accumulation_gap(chapter08_model)
gap_bn = accumulation_gap(lambda: torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.BatchNorm1d(32),
                                                      torch.nn.ReLU(), torch.nn.Linear(32, 1)))
print("without BatchNorm, 2×32 equals 64 up to rounding:", gap_plain < 1e-6)
print("with BatchNorm, the gradients differ by up to", f"{gap_bn:.3f}", "| more than rounding:", gap_bn > 1e-3)

# %% [markdown]
# ## 3. The input pipeline
#
# `torch.utils.data.DataLoader(num_workers=n)` starts n worker **processes** (not
# threads, as the notes say). Each has its own **index queue**; all share one **data
# queue**. The main process sends batch i's indices to worker i mod n, keeping
# `prefetch_factor × n` batches in flight (default 2 × n); a worker loads the samples,
# collates them and puts `(i, batch)` on the data queue; the main process hands
# batches out **in order**, stashing early arrivals. A worker's exception travels back
# as an `ExceptionWrapper` (the traceback as text) and is raised in the main process.
# At the end of an epoch the workers are stopped — unless `persistent_workers=True`,
# which keeps them (and their copy of the dataset) for the next epoch.
#
# Torch's iterator shows the pieces:

# %%
loader = torch.utils.data.DataLoader(SlowSquares(20), batch_size=4, num_workers=2)
it = iter(loader)
print(type(it).__name__, "| index queues:", len(it._index_queues), "| prefetch_factor:", it._prefetch_factor,
      "| batches in flight:", it._tasks_outstanding, "| worker processes:", len(it._workers))
print("first batch:", next(it).tolist())
del it
print("persistent_workers needs workers:", end=" ")
try:
    torch.utils.data.DataLoader(SlowSquares(4), persistent_workers=True)
except ValueError as err:
    print(err)

# %% [markdown]
# **`pin_memory` puts nothing on the GPU** (the notes say it does). It copies each
# batch into **page-locked host memory** in a thread of the main process. The GPU's
# DMA engine can read such memory directly, so `batch.to("cuda", non_blocking=True)`
# becomes an asynchronous copy that overlaps the compute; from ordinary pageable
# memory the driver first copies into a pinned staging buffer, synchronously. Pinning
# needs an accelerator — on this machine:

# %%
print("accelerator available:", torch.accelerator.is_available())
try:
    torch.empty(3).pin_memory()
except RuntimeError as err:
    print("pin_memory() -> RuntimeError:", err)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    batch = next(iter(torch.utils.data.DataLoader(SlowSquares(4), batch_size=2, pin_memory=True)))
print("DataLoader(pin_memory=True) warns:", caught[0].message)
print("the batch stays in ordinary memory:", batch.is_pinned() if torch.accelerator.is_available() else "no pinning here")

# %% [markdown]
# ## Exercise 10.2 — worker_loop
#
# `minikernel.utils.data.DataLoader` is built like torch's
# (`minikernel/utils/data/dataloader.py`). Its worker processes run your `worker_loop(dataset,
# index_queue, data_queue, collate_fn, worker_id)`: take `(idx, indices)` tasks until
# `None`, put `(idx, collate_fn([dataset[i] for i in indices]))` on the data queue —
# or `(idx, ExceptionWrapper(where=f"in DataLoader worker process {worker_id}"))` when
# loading fails — and go on. Tested here in this process with `queue.Queue`s:

# %%
index_q, data_q = queue.Queue(), queue.Queue()
for task in [(0, [0, 1]), (1, [2, 3]), (2, [4, 5])]:
    index_q.put(task)
index_q.put(None)
try:
    mk_data.worker_loop(BrokenAt(6, bad=3), index_q, data_q, torch.utils.data.default_collate, 0)
    answers = [data_q.get() for _ in range(data_q.qsize())]
    for idx, batch in answers:
        shown = batch.tolist() if torch.is_tensor(batch) else type(batch).__name__
        print(f"task {idx}: {shown}")
    print("the error's message starts:", answers[1][1].exc_msg.strip().splitlines()[-1])
except NotImplementedError as err:
    print(finish_message(err, "to run the worker's loop"))
    notebook_display.show_todo(err)

# %% [markdown]
# ## Exercise 10.3 — next_in_order
#
# The main process calls your `next_in_order(rcvd_idx, reorder, receive)`: return
# batch `rcvd_idx` — from the `reorder` dict if it came early, else `receive()`
# arrivals (stashing the others) until it comes — and re-raise it if it is an
# `ExceptionWrapper`. Arrivals in a scrambled order:

# %%
arrivals = [(2, "batch 2"), (0, "batch 0"), (3, "batch 3"), (1, "batch 1")]
reorder = {}
try:
    for want in range(4):
        got = mk_data.next_in_order(want, reorder, lambda: arrivals.pop(0))
        print(f"wanted {want}: got {got!r}; waiting in reorder: {sorted(reorder)}")
except NotImplementedError as err:
    print(finish_message(err, "to deliver batches in order"))
    notebook_display.show_todo(err)

# %% [markdown]
# With both, your loader gives torch's batches, shuffled with the same generator, and
# a corrupt sample raises in the main process with the worker's traceback — the same
# first line as torch's:

# %%
try:
    for workers in (1, 2, 3):
        ours = list(mk_data.DataLoader(SlowSquares(23), batch_size=4, shuffle=True, num_workers=workers,
                                       generator=torch.Generator().manual_seed(1)))
        theirs = list(torch.utils.data.DataLoader(SlowSquares(23), batch_size=4, shuffle=True,
                                                  generator=torch.Generator().manual_seed(1)))
        print(f"{workers} worker(s): the same {len(ours)} batches as torch's:",
              all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True)))
    for loader_class in (mk_data.DataLoader, torch.utils.data.DataLoader):
        try:
            list(loader_class(BrokenAt(12, bad=5), batch_size=2, num_workers=2))
        except ValueError as err:
            lines = str(err).splitlines()
            print(f"{loader_class.__module__.split('.')[0]:10} ValueError: {lines[0]} ... {lines[-1]}")
except NotImplementedError as err:
    print(finish_message(err, "to load with worker processes"))
    notebook_display.show_todo(err)

# %% [markdown]
# ### Throughput against `num_workers`
#
# Workers help when loading a sample takes time the main process would otherwise
# wait for — reading and decoding files. Here each sample "decodes" for 5 ms; 96
# samples in batches of 8. On this 2-core machine the decoding is a sleep, so more
# workers than cores still help; with CPU-bound decoding the gain stops near the
# core count (and each worker costs a process start and a copy of the dataset; torch
# warns when you ask for more workers than cores). The
# notes' other advice — decode once offline, pack small files into one (RecordIO,
# LMDB, HDF5), keep data in RAM or on NVMe, use a faster decoder — all shortens this
# per-sample time.
#
# **Measuring it honestly.** An earlier version of this figure showed torch with one
# worker at 9 samples/s against 188 with none: a 20× dip that was not the loader's.
# The corrupt-sample cell above leaves torch's iterator alive in a reference cycle (the
# exception's traceback holds the frame that holds it). The garbage collector frees it
# whenever its next full collection runs — that time, inside the 1-worker measurement —
# and the iterator's shutdown then waits out `join(timeout=MP_STATUS_CHECK_INTERVAL)`,
# 5 s, for each of its 2 workers (measured here: 5.6, 10.4, 15.5 s for 1, 2, 3
# workers). So the cell collects garbage *before* each timed run, starts the workers
# before the clock (`persistent_workers=True` and one untimed epoch: a process start
# costs tens of milliseconds, more on a busy machine, and would blur the overlap being
# measured), and reports the median of 3 timed epochs. Timings change from run to run:

# %% tags=["nbval-ignore-output"]
worker_counts = [0, 1, 2, 4]
rates = {"torch": [], "minikernel": []}
warnings.filterwarnings("ignore", message="This DataLoader will create")  # torch: more workers than cores
start = time.perf_counter()
gc.collect()
print(f"garbage left by earlier cells, collected before timing: {time.perf_counter() - start:.1f} s")
print("main-process threads:", torch.get_num_threads(), "(each worker process runs torch on 1 thread)")


def samples_per_s(loader):
    gc.collect()  # outside the timed part: a collection can run a dead iterator's shutdown
    start = time.perf_counter()
    n = sum(len(b) for b in loader)
    return n / (time.perf_counter() - start)


for workers in worker_counts:
    for name, loader_class in (("torch", torch.utils.data.DataLoader), ("minikernel", mk_data.DataLoader)):
        try:
            loader = loader_class(SlowSquares(96, delay_s=0.005), batch_size=8, num_workers=workers,
                                  persistent_workers=workers > 0)
            sum(len(b) for b in loader)  # untimed: starts the workers
            rates[name].append(statistics.median(samples_per_s(loader) for _ in range(3)))
            del loader
        except NotImplementedError:
            rates[name].append(float("nan"))
figure, ax = plt.subplots(figsize=(6, 3))
for name, values in rates.items():
    _ = ax.plot(worker_counts, values, "o-", label=name)
ax.set_xlabel("num_workers")
ax.set_ylabel("samples / s")
_ = ax.legend()
plt.show()
print({name: [round(v) if v == v else None for v in values] for name, values in rates.items()})

# %% [markdown]
# ### Decoders and file formats, measured
#
# What does the notes' advice buy on real files? 200 synthetic 128×128 RGB images
# (`minikernel.utils.data.formats`), written as PNG (lossless, compressed), JPEG
# (lossy, quality 90), BMP (uncompressed) and `.npy` (a raw array), read back one
# file per sample; then JPEG decoded at half size with PIL's `draft` (the decoder
# skips detail while decoding — what jpeg4py/DALI-style fast paths exploit), and
# all files **packed into one** indexed file — the layout of MXNet's RecordIO, a
# `.rec` of concatenated records and an `.idx` of offsets; TFRecord, LMDB and HDF5 do
# the same — read through one memory map instead of one `open` per sample. The
# decoder here is PIL; opencv, jpeg4py and DALI are not installed. PIL's `open`
# is lazy: it reads the header, and decodes pixels only when they are used:

# %%
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from minikernel.utils.data import formats

image_dir = Path(tempfile.mkdtemp(prefix="minikernel-ch10-"))
files = {fmt: formats.write_images(image_dir / fmt, 200, fmt) for fmt in formats.FORMATS}
lazy = Image.open(files["png"][0])
print("after Image.open:", lazy.format, lazy.size, "| compressed tiles still to decode:", len(lazy.tile))
lazy.load()
print("after load():     compressed tiles still to decode:", len(lazy.tile))
rec, idx = formats.pack(files["png"], image_dir / "all_png")
packed = formats.PackedImages(rec, "png")
one_by_one = formats.ImageFiles(files["png"])
print(f"packed: {len(packed)} records in one {rec.stat().st_size // 1024} KiB file; "
      f"record 7 equals file 7: {torch.equal(packed[7], one_by_one[7])}")
print("BMP and .npy give back the exact pixels:",
      all(torch.equal(formats.ImageFiles(files[f])[3], torch.from_numpy(formats.synthetic_image(3)))
          for f in ("bmp", "npy")))

# %% tags=["nbval-ignore-output"]
def samples_per_second(dataset):
    """Median of 3 passes over the dataset (the first pass also warms the page cache)."""
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        for i in range(len(dataset)):
            dataset[i]
        rates.append(len(dataset) / (time.perf_counter() - start))
    return statistics.median(rates)


readers = {f"{fmt} files": formats.ImageFiles(paths) for fmt, paths in files.items()}
readers["jpeg, draft 1/2"] = formats.ImageFiles(files["jpeg"], draft=2)
readers["png, packed"] = packed
readers["npy, packed"] = formats.PackedImages(formats.pack(files["npy"], image_dir / "all_npy")[0], "npy")
for name, dataset in readers.items():
    size = sum(p.stat().st_size for p in files[name.split(",")[0].split()[0]]) // len(dataset)
    print(f"{name:18} {samples_per_second(dataset):7.0f} samples/s   ({size // 1024} KiB per image on disk)")

# %% [markdown]
# A decoded image is an (H, W, 3) uint8 array; models want (3, H, W) floats in
# [0, 1]. That is what torchvision's `to_tensor` does (`permute(2, 0, 1)` then
# `/ 255`), and `to_pil_image` undoes it. torchvision decodes with PIL by default
# — a plain pip dependency that returns RGB, where opencv returns BGR and is a large
# binary — and `torchvision.set_image_backend("accimage")` swaps in Intel's faster
# accimage decoder where it is installed (torchvision and accimage are not, here):

# %%
hwc = formats.ImageFiles(files["png"])[0]
chw = hwc.permute(2, 0, 1).float() / 255
print("HWC uint8", tuple(hwc.shape), "-> CHW float", tuple(chw.shape), f"in [{chw.min():.2f}, {chw.max():.2f}]")
back = Image.fromarray((chw * 255).round().byte().permute(1, 2, 0).numpy())
print("back to a PIL image:", back.mode, back.size, "| same pixels:", torch.equal(torch.from_numpy(np.array(back)), hwc))

# %% [markdown]
# The pattern, which the numbers above show on this machine: decoding dominates
# (PNG's inflate is slower than JPEG's DCT here, and both far slower than reading
# raw pixels), so an uncompressed or pre-decoded format trades disk space for
# speed, reduced-size decoding helps when the model wants small inputs anyway, and
# packing matters most when the per-file cost (open, a metadata lookup on a network
# file system, a seek on a hard disk) is large next to decoding — here, with small
# files in the page cache, it gains most for the raw arrays, which have no decoding to
# hide the per-file cost behind.

# %% [markdown]
# ## 4. Profiling and debugging
#
# ### torch.profiler: where the time goes
#
# The notes use `torch.autograd.profiler.profile(use_cuda=...)`. That is the legacy
# profiler; on 2.13 `use_cuda` is deprecated for `use_device`, and the current API is
# `torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])`
# (Kineto: CPU ops and GPU kernels on one timeline, `record_shapes`,
# `profile_memory`, schedules, TensorBoard/Chrome traces). The old call today:

# %% tags=["nbval-ignore-output"]
with warnings.catch_warnings(record=True) as legacy_warnings:  # the profiler also logs its start and stop
    warnings.simplefilter("always")
    with torch.autograd.profiler.profile(use_cuda=True):
        torch.ones(2) + 1

# %%
for w in legacy_warnings:
    print(f"{w.category.__name__}: {w.message}")

# %% [markdown]
# Chapter 08's training loop under the profiler, 8 steps of Adam on batches of 32.
# The op table (times vary between runs; on a busy machine the op that is running when
# the process loses its core collects the wait, so one op at milliseconds per call
# heading a table of microsecond ops is such a pause, not that op's cost) and then
# the counts, which do not vary:

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
net = chapter08_model()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
X, Y = torch.randn(256, 8), torch.randn(256, 1)
threads = torch.get_num_threads()
torch.set_num_threads(1)  # the times below depend on it; the op counts do not
print("torch threads while profiling:", torch.get_num_threads())
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for step in range(8):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(X[32 * step:32 * step + 32]), Y[32 * step:32 * step + 32])
        loss.backward()
        opt.step()
torch.set_num_threads(threads)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

# %%
counts = {e.key: e.count for e in prof.key_averages()}
for op in ("aten::linear", "aten::addmm", "aten::relu", "aten::mse_loss", "autograd::engine::evaluate_function: "
           "AddmmBackward0", "Optimizer.step#Adam.step"):
    print(f"{op:60} called {counts.get(op)} times")

# %% [markdown]
# ### Anomaly detection beside a NaN-finding hook
#
# Chapter 04 found the first module whose forward output is not finite with a global
# forward hook. `torch.autograd.detect_anomaly()` watches the **backward**: every
# node's gradient is checked, the first NaN raises, and the warning carries the
# traceback of the *forward* call that created the node (recorded during the forward,
# which is why it is slow — for debugging only). A square root of a negative number:

# %%
w = torch.tensor([4.0, -1.0], requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        with torch.autograd.detect_anomaly():
            torch.sqrt(w).sum().backward()
    except RuntimeError as err:
        print("RuntimeError:", err)
for message in (str(c.message) for c in caught):
    print("warning:", message.splitlines()[0])

# %%
first_bad = []
watch = torch.nn.modules.module.register_module_forward_hook(
    lambda module, args, out: first_bad.append(type(module).__name__)
    if not first_bad and not torch.isfinite(out).all() else None)
net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
with torch.no_grad():
    net[0].weight.fill_(float("inf"))
net(torch.ones(1, 2))
watch.remove()
print("the forward hook names the first module with a non-finite output:", first_bad[0])

# %% [markdown]
# ### A per-op shape and dtype trace (what TorchSnooper printed)
#
# TorchSnooper printed every line's tensors' shapes and dtypes. Today a
# `TorchFunctionMode` does it without touching the code: every torch call — in your
# code and inside `nn` modules — passes through its `__torch_function__`. `OpTrace`
# (`minikernel/utils/op_trace.py`) records them; a dtype bug shows at once:

# %%
net = chapter08_model()
with OpTrace() as trace:
    out = net(torch.randn(4, 8))
    loss = torch.nn.functional.mse_loss(out, torch.zeros(4, 1, dtype=torch.float64).float())
    loss.backward()
print(trace)

# %% [markdown]
# ### cProfile for the Python side
#
# `torch.profiler` sees ops; `cProfile` sees Python functions — data loading, logging,
# your own glue. (`python -m torch.utils.bottleneck script.py`, which the notes
# mention, runs both.) The top of the profile of 20 steps, after 3 untimed warm-up
# steps, on one thread (pinned and printed: with more threads than free cores the
# seconds grow many times over on a busy machine; which functions lead does not
# change, and that is what to read):

# %% tags=["nbval-ignore-output"]
threads = torch.get_num_threads()
torch.set_num_threads(1)
print("torch threads while profiling:", torch.get_num_threads())


def train_step():
    opt.zero_grad()
    torch.nn.functional.mse_loss(net(X[:32]), Y[:32]).backward()
    opt.step()


for _ in range(3):
    train_step()  # warm-up: first calls do one-off set-up
profiler = cProfile.Profile()
profiler.enable()
for step in range(20):
    train_step()
profiler.disable()
torch.set_num_threads(threads)
stream = io.StringIO()
pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(8)
print("\n".join(stream.getvalue().splitlines()[:22]))

# %% [markdown]
# ## 5. Quantization
#
# **Affine quantization** maps floats in a range [lo, hi] onto the integers
# [qmin, qmax] of an 8-bit type by a line: x ≈ scale·(q − zero_point), so
#
# q = clamp(round(x / scale) + zero_point, qmin, qmax),  x̂ = scale·(q − zero_point).
#
# To fit [lo, hi]: scale = (hi − lo)/(qmax − qmin) and zero_point = qmin − round(lo/scale),
# the integer that stands for 0.0 exactly (zero padding and ReLU zeros stay exact).
# Rounding costs at most scale/2 inside the range; clamping saturates outside. A
# MinMax observer from `torch.ao.quantization` computes exactly this (it first widens
# the range to include 0):

# %%
# torch warns once per process that quantized dtypes are deprecated; the cell after the
# next runs a fresh interpreter to show it with the other deprecation warnings.
warnings.filterwarnings("ignore", message=".*quantized tensor creation functions")
x_q = torch.tensor([-1.0, -0.2, 0.0, 0.3, 2.0, 3.0])
observer = torch.ao.quantization.MinMaxObserver(dtype=torch.quint8)
observer(x_q)
scale, zero_point = observer.calculate_qparams()
lo, hi = min(x_q.min().item(), 0.0), max(x_q.max().item(), 0.0)
by_hand = (hi - lo) / (255 - 0)
print(f"observer: scale {scale.item():.6f}, zero_point {zero_point.item()}; by hand: scale {by_hand:.6f}, "
      f"zero_point {0 - round(lo / by_hand)}")
q = torch.quantize_per_tensor(x_q, scale.item(), int(zero_point), torch.quint8)
print("q (integers):", q.int_repr().tolist())
print("dequantized: ", [round(v, 4) for v in q.dequantize().tolist()])
print("largest error ≤ scale/2 (2.0 sits half-way between two levels):",
      (q.dequantize() - x_q).abs().max().item() <= scale.item() / 2 + 1e-6)

# %% [markdown]
# **Where things live now.** The notes import from `torch.quantization`; that module
# is an alias of `torch.ao.quantization` (AO: architecture optimization). In PyTorch
# 2.13 both, and the quantized dtypes themselves, are **deprecated** in favour of the
# separate `torchao` package. The dtype warning is issued once per process (this kernel
# has used it already), so a fresh interpreter shows both. Note the date in the second:
# "will be removed in 2.10", printed by 2.13, which still ships the module — the
# removal slipped, the deprecation stands; new code uses `torchao`:

# %%
print("torch.quantization.fuse_modules is torch.ao.quantization.fuse_modules:",
      torch.quantization.fuse_modules is torch.ao.quantization.fuse_modules)
show_warnings = """
import warnings, torch
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)
    torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(2, 2)), {torch.nn.Linear})
print("torch", torch.__version__.split("+")[0])
for message in dict.fromkeys(str(c.message).splitlines()[0] for c in caught):
    print(message)
"""
child = subprocess.run([sys.executable, "-c", show_warnings], capture_output=True, text=True, check=True)
version, *messages = child.stdout.splitlines()
print("a fresh interpreter,", version)
for message in messages:
    print("warning:", message[:110] + ("…" if len(message) > 110 else ""))

# %% [markdown]
# ## Exercise 10.4 — quantize_per_tensor, dequantize_per_tensor
#
# Write `quantize_per_tensor(input, scale, zero_point, dtype)` returning the integer
# tensor that `torch.quantize_per_tensor(...).int_repr()` holds, and
# `dequantize_per_tensor(input, scale, zero_point)`. To be **bit-identical** you need
# torch's exact float steps (x86, measured): the reciprocal 1/scale in float32, then
# x·inv + zero_point — as one *fused multiply-add* (rounded once) for quint8/qint8,
# as a float32 product then a float32 sum for qint32 — then round half to even and
# clamp. The check uses values exactly half-way between two levels, where the steps
# matter:

# %%
torch.manual_seed(0)
levels = torch.randint(-200, 200, (20000,)).float()
x_half = ((levels + 0.5) * 0.0123).float()  # half-way, up to float rounding
x_test = torch.cat([torch.randn(20000) * 3, x_half, torch.tensor([1e9, -1e9, 0.0])])
try:
    for dtype, zp in ((torch.quint8, 128), (torch.qint8, -3), (torch.qint32, 0)):
        theirs = torch.quantize_per_tensor(x_test, 0.0123, zp, dtype)
        ours = mk_quant.quantize_per_tensor(x_test, 0.0123, zp, dtype)
        print(f"{str(dtype):13} integers equal: {torch.equal(ours, theirs.int_repr())}, dequantized equal: "
              f"{torch.equal(mk_quant.dequantize_per_tensor(ours, 0.0123, zp), theirs.dequantize())}")
    naive = (torch.round(x_test / 0.0123) + 128).clamp(0, 255)
    print("plain x / scale, rounded, differs from torch's quint8 at",
          int((naive != torch.quantize_per_tensor(x_test, 0.0123, 128, torch.quint8).int_repr()).sum()),
          "of", x_test.numel(), "values")
except NotImplementedError as err:
    print(finish_message(err, "to quantize per tensor"))
    notebook_display.show_todo(err)

# %% [markdown]
# ## Exercise 10.5 — quantize_per_channel, dequantize_per_channel
#
# A weight's rows (output channels) differ in range, often by orders of magnitude;
# one scale for the whole tensor leaves the small rows a handful of levels.
# **Per-channel** quantization gives each index along `axis` its own scale and zero
# point. Torch computes it with a float32 product and sum (no fused multiply-add),
# and dequantizes in float64 (its per-channel scales are float64). A weight with rows
# of very different sizes, quantized both ways:

# %%
torch.manual_seed(0)
weight = torch.randn(4, 64) * torch.tensor([[0.01], [0.1], [1.0], [10.0]])
per_tensor = torch.quantize_per_tensor(weight, weight.abs().max().item() / 127, 0, torch.qint8)
scales = (weight.abs().amax(dim=1) / 127).double()
zero_points = torch.zeros(4, dtype=torch.int64)
per_channel = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
for name, qw in (("per tensor ", per_tensor), ("per channel", per_channel)):
    rel = ((qw.dequantize() - weight).norm(dim=1) / weight.norm(dim=1)).tolist()
    print(f"{name}: relative error per row", [f"{r:.1e}" for r in rel], "levels used in row 0:",
          qw.int_repr()[0].unique().numel())
try:
    ours = mk_quant.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
    print("yours, integers equal to torch's:", torch.equal(ours, per_channel.int_repr()),
          "| dequantized equal:", torch.equal(mk_quant.dequantize_per_channel(ours, scales, zero_points, 0),
                                              per_channel.dequantize()))
    x3 = torch.randn(3, 5, 7)
    s3, z3 = torch.rand(5, dtype=torch.float64) * 0.05 + 0.01, torch.randint(0, 20, (5,))
    print("axis=1 of a 3-d tensor, quint8:", torch.equal(mk_quant.quantize_per_channel(x3, s3, z3, 1, torch.quint8),
                                                         torch.quantize_per_channel(x3, s3, z3, 1, torch.quint8)
                                                         .int_repr()))
except NotImplementedError as err:
    print(finish_message(err, "to quantize per channel"))
    notebook_display.show_todo(err)

# %% [markdown]
# ### Dynamic quantization of a Linear, on the CPU
#
# `quantize_dynamic` replaces each `nn.Linear` by one with **int8 weights**
# (quantized once, per tensor) whose **activations are quantized on the fly**, batch
# by batch, from their observed range; the matmul runs in int8 with int32
# accumulation (fbgemm/x86 kernels) and the result is dequantized. No calibration
# data is needed — it suits Linear/LSTM-heavy models whose time goes to loading
# weights. Accuracy and size are stable; the speed depends on the machine (this one
# is small and shared):

# %%
torch.manual_seed(0)
mlp = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).eval()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    qmlp = torch.ao.quantization.quantize_dynamic(mlp, {torch.nn.Linear}, dtype=torch.qint8)
print(qmlp)
batch = torch.randn(64, 512)
with torch.no_grad():
    rel = ((qmlp(batch) - mlp(batch)).norm() / mlp(batch).norm()).item()
print(f"relative error of the output: {rel:.0%}")


def saved_size(module):
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getbuffer().nbytes


print(f"state_dict size: float32 {saved_size(mlp) / 2**20:.2f} MiB, int8 {saved_size(qmlp) / 2**20:.2f} MiB")

# %% [markdown]
# The speed-up depends on the machine and, most, on the thread count: with more threads
# than free cores both times grow tens of times over and their ratio means nothing. So
# one thread, pinned and printed, 5 warm-up calls, then the median of 31 calls, each
# timed in this thread's CPU time (`time.thread_time`): the wall clock also counts the
# time the process waits for a core, and on a busy machine that wait can inflate one
# side many times over (the float32 side here, whose calls are longer, most), while
# the CPU time stays put:

# %% tags=["nbval-ignore-output"]
def thread_cpu_ms(fn, warmup=5, repeat=31):
    """Median CPU time of this thread per call of ``fn``, in ms (time waiting for a core not counted)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        samples.append((time.thread_time() - start) * 1e3)
    return statistics.median(samples)


threads = torch.get_num_threads()
torch.set_num_threads(1)
with torch.no_grad():
    float_ms, int8_ms = (thread_cpu_ms(lambda m=m: m(batch)) for m in (mlp, qmlp))
    float_wall = median_ms(lambda: mlp(batch), warmup=5, repeat=31)
print(f"float32: {float_ms:.2f} ms, dynamic int8: {int8_ms:.2f} ms of CPU time per call, {float_ms / int8_ms:.1f}× "
      f"(median of 31, batch 64, {torch.get_num_threads()} thread); float32 by the wall clock: {float_wall:.2f} ms")
torch.set_num_threads(threads)

# %% [markdown]
# ### Static post-training quantization: prepare, calibrate, convert
#
# Dynamic quantization computes the activations' ranges batch by batch. **Static**
# post-training quantization (PTQ) fixes them in advance, so activations stay int8
# from layer to layer: `QuantStub`/`DeQuantStub` mark where tensors enter and leave
# the quantized region, `fuse_modules` folds Conv+BN(+ReLU) (§6), `prepare` inserts
# an **observer** after each layer, a few **calibration** batches let the observers
# record ranges, and `convert` replaces each layer by its int8 version with the
# scale and zero point computed from those ranges (the formulas above). The qconfig
# `"x86"` (fbgemm's successor) observes activations with a histogram and weights per
# channel. Quantization-aware training (QAT) is the same with `prepare_qat`: fake
# quantization in the forward pass while training, so the model learns around the
# rounding. (The notes also list TensorRT INT8, Distiller and NNI: separate tools,
# not run here.)

# %%
class SmallConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv, self.bn, self.relu = torch.nn.Conv2d(3, 16, 3), torch.nn.BatchNorm2d(16), torch.nn.ReLU()
        self.pool, self.fc = torch.nn.AdaptiveAvgPool2d(1), torch.nn.Linear(16, 10)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.relu(self.bn(self.conv(self.quant(x))))
        return self.dequant(self.fc(self.pool(x).flatten(1)))


torch.manual_seed(0)
float_net = SmallConvNet().eval()
calibration, test_images = torch.randn(64, 3, 32, 32), torch.randn(64, 3, 32, 32)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the module's deprecation notices, shown once above
    float_net.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    fused = torch.ao.quantization.fuse_modules(float_net, [["conv", "bn", "relu"]])
    prepared = torch.ao.quantization.prepare(fused)
    print("after prepare, the fused conv carries an observer:",
          type(prepared.conv.activation_post_process).__name__)
    with torch.no_grad():
        prepared(calibration)  # calibrate: the observers record ranges
    int8_net = torch.ao.quantization.convert(prepared)
    print("after convert:", int8_net.conv, int8_net.fc, sep="\n  ")
    print("input quantized with scale", round(int8_net.quant.scale.item(), 5), "zero_point",
          int8_net.quant.zero_point.item())
    with torch.no_grad():
        ref_out, q_out = float_net(test_images), int8_net(test_images)
    print(f"relative error on unseen images: {((q_out - ref_out).norm() / ref_out.norm()).item():.1%}; "
          f"same top class: {(q_out.argmax(1) == ref_out.argmax(1)).float().mean().item():.0%}")
    qat_net = SmallConvNet().train()
    qat_net.qconfig = torch.ao.quantization.get_default_qat_qconfig("x86")
    qat_ready = torch.ao.quantization.prepare_qat(qat_net)
    print("prepare_qat: the conv becomes", f"{type(qat_ready.conv).__module__}.{type(qat_ready.conv).__name__}",
          "with a", type(qat_ready.conv.weight_fake_quant).__name__, "on its weight")

# %% [markdown]
# ## 6. Folding BatchNorm into the layer before it
#
# In eval mode BatchNorm is a fixed per-channel affine map of the previous layer's
# output z = W·x + b: BN(z) = γ·(z − μ)/√(σ² + ε) + β. With s = γ/√(σ² + ε) that is
# one layer with **W' = s·W** (output channel c's weights times s[c]) and
# **b' = s·(b − μ) + β** — one op fewer at inference, and the first step of quantized
# inference (`torch.ao.quantization.fuse_modules(model, [["conv", "bn"]])`; the notes'
# path `torch.quantization.fuse_modules` is the alias seen above). In training mode BN
# uses each batch's own statistics, so there is nothing fixed to fold:

# %%
conv, bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)
try:
    torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
except AssertionError as err:
    print("AssertionError:", err)

# %% [markdown]
# ## Exercise 10.6 — fuse_conv_bn_weights, fuse_linear_bn_weights
#
# Write the folding for a conv weight (output channels on dim 0, or dim 1 for a
# ConvTranspose with `transpose=True`) and for a Linear weight; missing biases and BN
# affine parameters count as zeros and ones; return `torch.nn.Parameter`s in the
# layer's dtypes. `fuse_conv_bn_eval`/`fuse_linear_bn_eval` around them are given. A
# conv and a BN with trained-looking statistics, then the fused layer against
# eval-mode `bn(conv(x))`:

# %%
torch.manual_seed(0)
conv, bn = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
bn.train()
for _ in range(20):  # a few training batches fill the running statistics
    bn(conv(torch.randn(8, 3, 10, 10) * 2 + 1))
conv.eval(), bn.eval()
image = torch.randn(2, 3, 10, 10)
try:
    fused = mk_fuse.fuse_conv_bn_eval(conv, bn)
    theirs = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    with torch.no_grad():
        print("fused conv == bn(conv(x)) in eval mode (float tolerance):",
              torch.allclose(fused(image), bn(conv(image)), atol=1e-5))
        print("weights equal to torch.nn.utils.fusion's:", torch.allclose(fused.weight, theirs.weight, atol=1e-7),
              "| biases:", torch.allclose(fused.bias, theirs.bias, atol=1e-6))
    linear, bn1 = torch.nn.Linear(6, 3, bias=False).eval(), torch.nn.BatchNorm1d(3).eval()
    bn1.running_mean.uniform_(-1, 1)
    bn1.running_var.uniform_(0.5, 2)
    flinear = mk_fuse.fuse_linear_bn_eval(linear, bn1)
    features = torch.randn(5, 6)
    with torch.no_grad():
        print("fused Linear (no bias) == bn(linear(x)):", torch.allclose(flinear(features), bn1(linear(features)),
                                                                           atol=1e-6))
except NotImplementedError as err:
    print(finish_message(err, "to fold BatchNorm"))
    notebook_display.show_todo(err)

# %% [markdown]
# ### Merging parallel branches (RepVGG)
#
# The notes also mention re-parameterizing a multi-branch block into a single conv
# (ACNet, RepVGG). Convolution is linear, so parallel branches whose outputs are
# added are one convolution whose kernel is the sum of theirs: a 1×1 kernel
# zero-padded to 3×3, and the identity as a 3×3 kernel with a 1 at the centre from
# channel c to channel c. (Each branch's BatchNorm is folded into its conv first, as
# above.) Train with three branches, infer with one:

# %%
torch.manual_seed(0)
c = 4
k3, k1 = torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.Conv2d(c, c, 1)
identity = torch.zeros(c, c, 3, 3)
identity[range(c), range(c), 1, 1] = 1.0
merged = torch.nn.Conv2d(c, c, 3, padding=1)
with torch.no_grad():
    merged.weight.copy_(k3.weight + torch.nn.functional.pad(k1.weight, [1, 1, 1, 1]) + identity)
    merged.bias.copy_(k3.bias + k1.bias)
    feature_map = torch.randn(2, c, 8, 8)
    print("3×3 + 1×1 + identity == one 3×3 conv:",
          torch.allclose(k3(feature_map) + k1(feature_map) + feature_map, merged(feature_map), atol=1e-5))

# %% [markdown]
# ## 7. CUDA in practice
#
# The notes' GPU advice: streams and their races, timing with events, the caching
# allocator, pinned memory with `non_blocking`, cuDNN's flags, choosing devices
# with `CUDA_VISIBLE_DEVICES`. Each experiment is a function in
# `minikernel/utils/cuda_tour.py` that runs on `cuda:0`. **When this notebook runs
# with a CUDA GPU, the cells run them and print what they measure on it, with the
# device's name. Without one, each cell says that it is skipped and prints the code
# that would run** — no GPU number is shown that was not measured. What a CPU-only
# build can check, it checks.
#
# First, what this build knows. The notes read `torch.version.cuda` (None on a
# CPU-only build), and two of their claims are outdated here: `cudnn.benchmark` is
# **off** by default (PyTorch does not auto-tune convolutions unless asked, unlike
# what the notes say of it and MXNet), and matmul TF32 is off too (chapter 02). The
# cells of this section print what the machine has, so their outputs are not
# compared by the notebook checks:

# %% tags=["nbval-ignore-output"]
from minikernel.utils import cuda_tour

for key, value in cuda_tour.build_facts().items():
    print(f"{key:34} {value}")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # the usual choice
print("device chosen:", device, "| a tensor moved there:", torch.ones(2).to(device).device)

# %% [markdown]
# **Streams.** Kernels are queued on a *stream* and run in order within it; the
# host does not wait. Everything on the default stream is ordered, so the usual
# code never sees a race. The notes' example puts `B = sum(A)` on a side stream
# while the kernel writing A is still queued on the default stream: the side stream
# may run first and read stale A. Three fixes: `torch.cuda.synchronize()` (the host
# waits for every stream), `side.wait_stream(default)` (the side stream waits for
# what is queued so far), or recording an **event** on the default stream and
# `side.wait_event(event)` (waits only up to that point). `A.record_stream(side)`
# tells the caching allocator that A is in use on `side`, so its memory is not
# handed out again before that stream is done with it.

# %% tags=["nbval-ignore-output"]
race = cuda_tour.run_or_show(cuda_tour.demo_stream_race)

# %% [markdown]
# **Timing with events.** Because launches return at once, a host clock around a
# GPU op measures the launch, not the work. `torch.cuda.Event(enable_timing=True)`
# records a timestamp on the stream; `elapsed_time` is the GPU time between two.

# %% tags=["nbval-ignore-output"]
timing = cuda_tour.run_or_show(cuda_tour.demo_event_timing)

# %% [markdown]
# **The caching allocator.** Freed GPU memory goes back to PyTorch's cache, not to
# the driver: `memory_allocated` drops after `del`, `memory_reserved` (what
# `nvidia-smi` shows) does not; `empty_cache()` returns the cached blocks to the
# driver (useful to other processes, not to this one); `max_memory_allocated` is the
# peak since `reset_peak_memory_stats()`. The notes' `reset_max_memory_allocated()`
# now only warns and calls `reset_peak_memory_stats()` — which resets *every* peak
# statistic — as a call on this machine shows (on a CPU build the forwarded call then
# fails for lack of CUDA). Tools such as gpustat and Pytorch-Memory-Utils read the
# same counters (or `nvidia-smi`'s) from outside; `torch.cuda.memory_summary()` prints
# them all.

# %% tags=["nbval-ignore-output"]
message, outcome = cuda_tour.reset_max_memory_allocated_forwarding()
print("FutureWarning:", message)
print("then:", outcome)
allocator = cuda_tour.run_or_show(cuda_tour.demo_caching_allocator)

# %% [markdown]
# minikernel's own `"cuda"` tensors keep freed blocks the same way: on a GPU, numba's
# memory manager is replaced by one (`minikernel/cuda_allocator.py`) that puts a
# `BlockPool` (`minikernel/memory_pool.py`) in front of the driver, because asking the
# driver for 256 MiB took longer than a LayerNorm kernel takes to write them (docs/benchmarks.md,
# *On a GPU*). The pool's bookkeeping needs no GPU; here it is on its own, with names
# standing in for the device pointers:

# %%
pool = BlockPool()
size, block = pool.take(100 * 2**20)  # nothing cached: the allocator asks the driver for `size` bytes
print("first request: block", block, "| allocated, reserved MiB:", pool.allocated >> 20, pool.reserved >> 20)
pool.give(size, "block A")  # the tensor is freed: allocated drops, reserved does not
print("after the free:          allocated, reserved MiB:", pool.allocated >> 20, pool.reserved >> 20)
size, block = pool.take(99 * 2**20)  # rounded to the same 2 MiB class: the cached block again
print("next request: block", repr(block), "| allocated, reserved MiB:", pool.allocated >> 20, pool.reserved >> 20)
pool.give(size, block)
print("empty_cache frees", pool.drain(), "| allocated, reserved MiB:", pool.allocated >> 20, pool.reserved >> 20)

# %% [markdown]
# **Pinned memory and `non_blocking`.** §3 showed that `pin_memory` allocates
# page-locked *host* memory (and that a CPU build refuses it). From pinned memory a
# host-to-device copy is a DMA transfer that can run asynchronously:
# `x.to("cuda", non_blocking=True)` returns before the copy ends and overlaps
# the compute queued after it. From pageable memory the driver first copies into a
# pinned staging buffer, and the call blocks. Copy as few times as possible — keep
# metrics on the GPU and call `.item()` once per logging step, since every `.item()`
# or `.cpu()` waits for the GPU.

# %% tags=["nbval-ignore-output"]
copies = cuda_tour.run_or_show(cuda_tour.demo_pinned_copies)

# %% [markdown]
# **cuDNN's flags.** `torch.backends.cudnn.benchmark = True` makes cuDNN time
# several convolution algorithms the first time it meets a shape and keep the
# fastest: a slow first call, then faster calls while shapes stay fixed (with
# changing shapes it re-tunes each time). `cudnn.deterministic = True` restricts it
# to deterministic algorithms, so two backward passes give bitwise equal
# gradients.

# %% tags=["nbval-ignore-output"]
cudnn = cuda_tour.run_or_show(cuda_tour.demo_cudnn_flags)

# %% [markdown]
# **Reproducibility.** The notes' `torch.set_deterministic(True)` (1.7) is gone;
# today's switch is `torch.use_deterministic_algorithms(True)`, which makes ops
# without a deterministic implementation raise instead of silently varying (on CUDA
# it also needs `CUBLAS_WORKSPACE_CONFIG=:4096:8` set before cuBLAS starts). The
# full recipe:

# %%
import os
import random

import numpy as np

print("torch.set_deterministic exists:", hasattr(torch, "set_deterministic"))


def seed_everything(seed):
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # only affects Python processes started after this
    np.random.seed(seed)
    torch.manual_seed(seed)                  # seeds the CPU and every CUDA device
    torch.cuda.manual_seed_all(seed)         # the same, explicitly (a no-op without CUDA)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


seed_everything(0)
first = (random.random(), np.random.rand(), torch.rand(1).item())
seed_everything(0)
print("same draws after reseeding:", first == (random.random(), np.random.rand(), torch.rand(1).item()))
torch.use_deterministic_algorithms(True)
print("deterministic algorithms only:", torch.are_deterministic_algorithms_enabled())
torch.use_deterministic_algorithms(False)
torch.backends.cudnn.deterministic = False

# %% [markdown]
# **Choosing devices.** `CUDA_VISIBLE_DEVICES=1,3` (with
# `CUDA_DEVICE_ORDER=PCI_BUS_ID`, so numbers match `nvidia-smi`'s) hides the other
# GPUs from a process; the visible ones are renumbered from 0. It is read **once**,
# when CUDA initializes (the first `device_count()`, tensor on a GPU, ...), so it
# must be set before that — on the command line (`CUDA_VISIBLE_DEVICES=0 python
# train.py`) or in `os.environ` before the first CUDA call. Two child processes
# show it: each counts its devices, then sets the variable to "" and counts again.

# %% tags=["nbval-ignore-output"]
for value in ("0", ""):
    seen, after = cuda_tour.visible_devices_in_subprocess(value)
    print(f"CUDA_VISIBLE_DEVICES={value!r}: {seen} device(s) seen; after changing it in-process: {after}")
if not cuda_tour.available():
    print("(a CPU-only build sees 0 devices either way; on a GPU machine the first line shows 1, and the")
    print(" second 0, and changing the variable after initialization changes nothing)")

# %% [markdown]
# ## 8. Rules of thumb, measured
#
# The notes end with rules of thumb for fast, lean and correct models. Four of them
# are checked here on the CPU: ShuffleNetV2's four speed guidelines, the memory of
# backpropagation through time, what 1-D tensors do in a loss, and why the same
# seed does not give the same bits on different hardware.
#
# ### ShuffleNetV2's four guidelines
#
# FLOPs do not predict speed: a layer also pays for its **memory access cost**
# (MAC), the bytes it reads and writes — input, output and weights. ShuffleNetV2
# (Ma et al., 2018) derived four guidelines from it, measured on a GPU and an ARM
# CPU. Here each pair of variants has the **same FLOPs** (counted by
# `torch.utils.flop_counter.FlopCounterMode`) and a different MAC (float32 bytes,
# counted from the shapes). For a 1×1 convolution from c₁ to c₂ channels on an
# h×w image, FLOPs ∝ hw·c₁·c₂ and MAC = hw·(c₁ + c₂) + c₁·c₂ (times the batch and
# 4 bytes), which for a fixed product c₁·c₂ is smallest when c₁ = c₂.
#
# 1. **Equal input and output channels** — a 1×1 convolution with c₁·c₂ fixed.
# 2. **Fewer groups** — a grouped 1×1 convolution with c²/g fixed: more groups means
#    more channels for the same FLOPs, so more bytes moved.
# 3. **Fewer branches** — one convolution against the same work split into parallel
#    branches whose outputs are concatenated: same FLOPs, same weights, but more
#    small kernels and a copy into the concatenated output.
# 4. **Fewer element-wise ops** — a ReLU and a residual add cost no FLOPs in the
#    counter (it counts only matrix products and convolutions) but read and write
#    whole activations.
#
# Times are medians of 31 calls after warm-up, in this thread's CPU time (§5's
# `thread_cpu_ms`, so waiting for a core does not count), on one pinned thread
# (printed). Each group ends by saying whether its guideline held in this run: the
# variant that moves the most bytes took longer than the one that moves the fewest.

# %% tags=["nbval-ignore-output"]
def count_flops(fn, x):
    with FlopCounterMode(display=False) as counter:
        fn(x)
    return counter.get_total_flops()


def report(label, fn, x, mac=None):
    ms = thread_cpu_ms(lambda: fn(x))
    print(f"   {label}: {count_flops(fn, x) / 1e6:5.0f} MFLOP, "
          + (f"MAC {mac / 2**20:5.1f} MiB, " if mac is not None else "") + f"{ms:5.2f} ms")
    return ms


threads = torch.get_num_threads()
torch.set_num_threads(1)
print("torch threads while timing:", torch.get_num_threads())
torch.manual_seed(0)
batch, side = 8, 28
pixels = batch * side * side
with torch.no_grad():
    print("1. equal channels: 1×1 conv, c1·c2 = 128·128")
    times = [report(f"c1={c1:4} c2={c2:4}", torch.nn.Conv2d(c1, c2, 1, bias=False), torch.randn(batch, c1, side, side),
                    4 * (pixels * (c1 + c2) + c1 * c2)) for c1, c2 in ((128, 128), (64, 256), (32, 512), (16, 1024))]
    print(f"   held: {times[-1] > times[0]} (16→1024 takes {times[-1] / times[0]:.1f}× the time of 128→128)")
    print("2. fewer groups: 1×1 conv, c²/g = 64²")
    times = [report(f"g={groups:2} c={c:3}", torch.nn.Conv2d(c, c, 1, groups=groups, bias=False),
                    torch.randn(batch, c, side, side), 4 * (pixels * 2 * c + c * c // groups))
             for groups, c in ((1, 64), (4, 128), (16, 256))]
    print(f"   held: {times[-1] > times[0]} (16 groups take {times[-1] / times[0]:.1f}× the time of one)")
    print("3. fewer branches: 128 → 128 channels as one conv or as parallel branches + cat")
    x = torch.randn(batch, 128, side, side)
    times = []
    for n_branches in (1, 4, 8):
        branches = [torch.nn.Conv2d(128, 128 // n_branches, 1, bias=False) for _ in range(n_branches)]

        def run(t, branches=branches):
            return torch.cat([b(t) for b in branches], 1)
        times.append(report(f"{n_branches} branch(es)", run, x))
    print(f"   held: {times[-1] > times[0]} (8 branches take {times[-1] / times[0]:.1f}× the time of one conv)")
    print("4. fewer element-wise ops: conv, then conv + ReLU + residual add")
    conv = torch.nn.Conv2d(128, 128, 1, bias=False)
    times = [report("conv            ", conv, x), report("relu(conv) + x  ", lambda t: torch.relu(conv(t)) + t, x)]
    print(f"   held: {times[1] > times[0]} (the ReLU and the add take {times[1] / times[0]:.1f}× the conv's time)")
torch.set_num_threads(threads)

# %% [markdown]
# In each group the FLOPs are identical and only the bytes differ. How much the
# bytes cost depends on the machine (its caches and memory bandwidth), and a busy
# machine slows the byte-heavy variants more (other processes evict the caches), so
# the ratios change from run to run; the smaller differences can drown in the noise
# or even reverse, which the `held` lines would show. The FLOPs and bytes do not change.
# (Chapter 02 showed the root cause: an element-wise op
# is bound by memory bandwidth, a large convolution or matmul by arithmetic.)
#
# ### Backpropagation through time: memory grows with the sequence
#
# The notes warn against running an RNN over very long sequences: backward through
# time (BPTT) needs every step's activations, so memory grows linearly with the
# length. `SavedTensorMeter` (§1) counts what `nn.RNN(32, 64)` keeps for backward
# on a batch of 4, for sequences of 8 to 64 steps:

# %%
torch.manual_seed(0)
rnn = torch.nn.RNN(32, 64, batch_first=True)
saved_by_length = {}
for steps in (8, 16, 32, 64):
    with SavedTensorMeter(exclude=rnn.parameters()) as meter:
        out, h_last = rnn(torch.randn(4, steps, 32))
        saved_by_length[steps] = meter.live_bytes
        out.sum().backward()
    print(f"{steps:3} steps: {saved_by_length[steps]:6} bytes saved for backward; after backward: {meter.live_bytes}")
per_step = (saved_by_length[64] - saved_by_length[8]) // (64 - 8)
print("bytes per step:", per_step, "= x_t (4×32) + h_t (4×64) in float32:", per_step == 4 * (4 * 32 + 4 * 64))
print("linear in the length:", all(saved_by_length[t] == saved_by_length[8] + per_step * (t - 8)
                                   for t in saved_by_length))

# %% [markdown]
# The usual remedy is **truncated BPTT**: run backward every k steps and `detach()`
# the hidden state carried into the next chunk, so the graph — and the memory —
# never spans more than k steps (gradients then flow back at most k steps). The 64
# steps in chunks of 16 peak at what 16 steps hold:

# %%
sequence = torch.randn(4, 64, 32)
with SavedTensorMeter(exclude=rnn.parameters()) as meter:
    hidden = None
    for chunk in sequence.split(16, dim=1):
        out, hidden = rnn(chunk, hidden)
        out.sum().backward()
        hidden = hidden.detach()  # cut the graph: the next chunk does not backpropagate into this one
print("peak over 64 steps in chunks of 16:", meter.peak_bytes, "bytes;",
      "the same as 16 steps at once:", meter.peak_bytes == saved_by_length[16])

# %% [markdown]
# ### 1-D tensors in a loss
#
# The notes advise using N×1 tensors rather than 1-D ones, except for labels, to
# avoid surprising results. The classic surprise: a model outputs predictions of
# shape (N, 1), the targets are a 1-D tensor of shape (N,), and broadcasting (chapter
# 01) lines up the trailing dimensions, so `pred - target` is **N×N** — every
# prediction minus every target. The loss is a number either way, so nothing fails;
# `mse_loss` at least warns:

# %%
torch.manual_seed(0)
n = 4
pred = torch.randn(n, 1)  # what Linear(..., 1) returns
target = torch.randn(n)   # labels read as a 1-D tensor
print("(N, 1) - (N,) has shape", tuple((pred - target).shape))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    wrong = torch.nn.functional.mse_loss(pred, target)
print("warning:", caught[0].message)
right = torch.nn.functional.mse_loss(pred.squeeze(1), target)
print(f"mse over the N×N pairs: {wrong.item():.4f}; over the N pairs: {right.item():.4f}")
print("the same as the mean of the N×N matrix:", torch.equal(wrong, ((pred - target) ** 2).mean()))

# %% [markdown]
# ### The same seed, different bits on different hardware
#
# The notes: full reproducibility is not guaranteed across devices (CPU, GPU) even
# with the same seed, only on one device. The reason is that floating-point addition
# is not associative, and devices sum in different orders — a GPU in thousands of
# blocks, a CPU in as many chunks as it has threads. A CPU shows it alone: the same
# ten million float32 numbers summed with 1 thread and with 2 threads, and summed
# with 1 thread in another order:

# %%
torch.manual_seed(0)
values = torch.randn(10_000_000)
threads = torch.get_num_threads()
sums = {}
for n_threads in (1, 2):
    torch.set_num_threads(n_threads)
    sums[n_threads] = values.sum()
torch.set_num_threads(1)
shuffled = values[torch.randperm(values.numel())].sum()
torch.set_num_threads(threads)
exact = values.double().sum()
print(f"1 thread:  {sums[1].item():.6f}\n2 threads: {sums[2].item():.6f}\nshuffled:  {shuffled.item():.6f}\n"
      f"float64:   {exact.item():.6f}")
print("1 and 2 threads bitwise equal:", torch.equal(sums[1], sums[2]))
print("original and shuffled order bitwise equal:", torch.equal(sums[1], shuffled))

# %% [markdown]
# On this build (ATen parallelized with OpenMP) the thread count changes the
# last bits of a float32 sum: each thread sums its own chunk and the partial sums
# are added at the end. None of the three float32 answers is wrong — they differ
# from the float64 sum by rounding. So the seed fixes the *inputs*, and
# `torch.use_deterministic_algorithms(True)` (§7) fixes the *algorithm* on one
# machine, but another device, another thread count or another library version may
# sum in another order: compare results across machines with a tolerance
# (`torch.testing.assert_close`), not bit for bit.

# %% [markdown]
# ## Grade chapter 10
#
# Runs the tests of every exercise 10.x against PyTorch: checkpointed gradients,
# saved bytes and generator state against `torch.utils.checkpoint`; the worker loop
# and in-order delivery against torch's DataLoader (batches, errors, persistent
# workers); quantization bit for bit against `torch.quantize_per_tensor`/`per_channel`
# over generated shapes, scales and half-way values; folding against
# `torch.nn.utils.fusion` and eval-mode BatchNorm.

# %%
mk.grade("10.*")
