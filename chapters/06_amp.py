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
# # Chapter 06 — Mixed precision: autocast and the GradScaler
#
# Training in 16-bit floats halves memory traffic and, on hardware built for it,
# multiplies matmul throughput. The price: float16 has a tiny range and bfloat16 a
# coarse precision. PyTorch's answer has two parts. **Autocast** runs each op in the
# dtype that suits it — matmuls in 16 bits, losses and reductions in float32. The
# **GradScaler** keeps small float16 gradients from rounding to zero by scaling the
# loss up before `backward()` and the gradients down before the optimizer step,
# skipping steps whose gradients overflowed.
#
# This chapter measures both in PyTorch, then has you rebuild the GradScaler's
# pieces in `minikernel/amp/scaling.py`. `minikernel.amp.GradScaler` is complete
# code with torch's API; it calls your functions for the arithmetic and the state
# machine, and is checked against `torch.amp.GradScaler` call for call.
#
# **How each exercise goes.** First PyTorch's behaviour, then your function on the
# same input, then a check cell that prints your answer beside PyTorch's. Until you
# write a function, the cells that need it show a short box ("Exercise 6.2
# (transition) is not written yet", where and how to grade it) — that is expected;
# Run All goes on and every other cell runs.
#
# **Stuck?** Each exercise has a reference in `solutions/amp/scaling.py`. To use it
# and go on, set `MINIKERNEL_SOLUTIONS` before starting JupyterLab
# (`MINIKERNEL_SOLUTIONS=6.3 make lab`, or `6.*` for the whole chapter, or `all`) —
# it is read once when `minikernel` is imported, so after changing it restart the
# kernel.
#
# **Grading.** The last cell runs `minikernel.grade("6.*")`; from a terminal,
# `make grade ARGS="'6.*'"` or `python -m minikernel grade 6.3`.

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
import copy
import warnings

import torch

import minikernel as mk
import minikernel.amp as mk_amp
from minikernel.amp import OptState
from minikernel.amp import scaling as S
from minikernel.course import notebook_display
from minikernel.course.checking import agree

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__)

# %% [markdown]
# ## 1. float16 and bfloat16 in numbers
#
# Both use 16 bits; they split them differently. float16 keeps 10 mantissa bits and
# 5 exponent bits: fine precision, tiny range. bfloat16 keeps float32's 8 exponent
# bits and only 7 mantissa bits: float32's range, about 3 significant digits.
# `torch.finfo` gives the numbers; *subnormal* is the smallest positive value at all
# (below the smallest normal number, precision fades bit by bit).

# %%
print(f"{'dtype':<9} {'bits':>4} {'max':>12} {'smallest normal':>16} {'smallest subnormal':>19} {'eps':>10}")
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    info = torch.finfo(dtype)
    subnormal = info.smallest_normal * info.eps
    assert torch.tensor(subnormal, dtype=dtype).item() > 0 and torch.tensor(subnormal / 2, dtype=dtype).item() == 0
    print(f"{str(dtype)[6:]:<9} {info.bits:>4} {info.max:>12.4g} {info.smallest_normal:>16.4g} {subnormal:>19.4g} "
          f"{info.eps:>10.3g}")

# %% [markdown]
# **Range.** float16 overflows just above 65504; bfloat16 holds float32-sized
# numbers. **Precision.** Between 2048 and 4096 float16 can only count in steps of
# 2, bfloat16 already above 256; `1 + eps/2` rounds back to 1.

# %%
big = torch.tensor([65504.0, 65519.0, 65520.0, 1e5, 3e38])
print("float16: ", big.half().tolist())
print("bfloat16:", big.bfloat16().tolist())
print("2049 ->", torch.tensor(2049.0).half().item(), "in float16;", " 257 ->", torch.tensor(257.0).bfloat16().item(),
      "in bfloat16")
for dtype in (torch.float16, torch.bfloat16):
    eps = torch.finfo(dtype).eps
    print(f"{str(dtype)[6:]}: 1 + eps = {torch.tensor(1 + eps, dtype=dtype).item()},"
          f" 1 + eps/2 = {torch.tensor(1 + eps / 2, dtype=dtype).item()}")

# %% [markdown]
# **Underflow.** Gradients are often tiny: 1e-5 and below is common deep in a
# network. In float16 anything below 3e-8 (half the smallest subnormal) becomes 0,
# and below 6e-5 (the subnormals) precision drains away digit by digit. Multiply by 65536 = 2¹⁶ first and they all
# survive; dividing by 2¹⁶ afterwards, in float32, recovers them. bfloat16 keeps the
# small values (float32's exponent) but only to 3 digits.

# %%
grads = torch.tensor([1e-3, 1e-5, 1e-6, 1e-7, 3e-8, 1e-8, 1e-9])
print("float32:          ", [f"{g:.3g}" for g in grads.tolist()])
print("float16:          ", [f"{g:.3g}" for g in grads.half().tolist()])
print("x 2^16 in float16:", [f"{g:.3g}" for g in (grads * 65536).half().tolist()])
print("... back / 2^16:  ", [f"{g:.3g}" for g in ((grads * 65536).half().float() / 65536).tolist()])
print("bfloat16:         ", [f"{g:.3g}" for g in grads.bfloat16().tolist()])

# %% [markdown]
# Why a power of two? Multiplying by 2ᵏ only changes the exponent, so scaling and
# unscaling is exact — unless it overflows or underflows. Scaling by 3 instead
# rounds:

# %%
g = torch.randn(100_000)
print("x * 65536 / 65536 == x for every x:", torch.equal(g * 65536 / 65536, g))
print("x * 3 / 3 == x for", int((g * 3 / 3 == g).sum()), "of", g.numel())

# %% [markdown]
# ## 2. Autocast: which dtype each op runs in
#
# Under `torch.autocast(device_type, dtype)` each op follows a rule of its device
# type's autocast: run in the low-precision dtype, run in float32, or no rule (run
# in whatever dtype arrives). The parameters stay float32 — autocast casts *copies*
# for the ops that want 16 bits — so their gradients are float32 too. (The notes ask
# whether model parameters are float32 under mixed precision: they are.)
#
# *The notes say mixed precision runs only on a GPU. Not any more: CPU autocast
# exists (bfloat16 by default, float16 too) and so does `torch.amp.GradScaler("cpu")`.*

# %%
print("CPU autocast's default dtype:", torch.get_autocast_dtype("cpu"))
layer = torch.nn.Linear(8, 4)
x = torch.randn(16, 8)
with torch.autocast("cpu"):  # dtype=torch.bfloat16 by default on CPU
    out = layer(x)
    loss = torch.nn.functional.mse_loss(out, torch.zeros_like(out))
loss.backward()
print("output:", out.dtype, " loss:", loss.dtype, " weight:", layer.weight.dtype, " weight.grad:",
      layer.weight.grad.dtype)

# %% [markdown]
# Which op follows which rule is a list in PyTorch's C++ sources, per device type.
# Rather than copy the lists, we measure: `autocast_table` runs each op under
# autocast twice — on float32 inputs and on 16-bit inputs — and reads the output
# dtypes. "lower precision" means float32 in, 16-bit out; "float32" means 16-bit in,
# float32 out; "input dtype" means no rule. The CUDA column is measured too, on this
# machine, without a GPU: *fake tensors* (`FakeTensorMode`) carry a device and a
# dtype but no memory, and autocast decides its casts from the device alone.

# %%
table = mk_amp.autocast_table()
print(mk_amp.format_table(table))

# %% [markdown]
# What the table says: the matmul family runs in 16 bits everywhere; losses and
# `prod` run in float32 everywhere. The difference is the middle: CUDA autocast forces
# softmax, log_softmax, the norms, `sum`, `cumsum`, `exp`, `log` and `pow` into
# float32, while CPU autocast has no rule for them — on bfloat16 inputs they run in
# bfloat16. (`mean` and `var` have no rule on either.) The rows that differ:

# %%
for name, (cpu_bf16, cpu_fp16, cuda_fp16) in table.items():
    if cpu_bf16 != cuda_fp16:
        print(f"{name:<12} cpu: {cpu_bf16:<12} cuda: {cuda_fp16}")

# %% [markdown]
# The same lists are visible in the dispatcher: an op with an autocast rule has a
# kernel registered under the `AutocastCPU` / `AutocastCUDA` dispatch key, and one
# without falls through to the normal kernel.

# %%
for op in ("aten::mm", "aten::softmax.int", "aten::layer_norm", "aten::sum", "aten::mse_loss", "aten::gelu"):
    print(f"{op:<18}", {key: torch._C._dispatch_has_kernel_for_dispatch_key(op, key)
                         for key in ("AutocastCPU", "AutocastCUDA")})

# %% [markdown]
# Does it pay? On a GPU with tensor cores, usually. On a CPU it depends on the
# instruction set: a 16-bit matmul is fast where the CPU has instructions for that
# dtype, and takes a much slower path where it has none. The cell lists the CPU's
# 16-bit instruction flags (from `/proc/cpuinfo`, on Linux) and times the first
# layer's matmul alone beside each whole step: in a dtype the CPU has no instructions
# for, that matmul alone is already many times slower than in float32 (the notes
# observed on GPU too that mixed precision "is not necessarily faster"). One thread,
# pinned, and CPU time (`time.process_time`), so that waiting for a core on a busy
# machine does not count; the times still vary from machine to machine and run to
# run, so this cell's output is not checked:

# %% tags=["nbval-ignore-output"]
import os
import statistics
import time


def cpu_ms(fn, warmup=2, repeat=7):
    """Median CPU time of this process per call of ``fn``, in ms."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        samples.append((time.process_time() - start) * 1e3)
    return statistics.median(samples)


mlp = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
batch = torch.randn(128, 256)
flags = set(open("/proc/cpuinfo").read().split()) if os.path.exists("/proc/cpuinfo") else set()
threads = torch.get_num_threads()
torch.set_num_threads(1)
print("threads:", torch.get_num_threads(), "| 16-bit instruction flags:",
      sorted(flags & {"avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16"}) or "none listed")
for label, dtype in (("float32", None), ("autocast bfloat16", torch.bfloat16), ("autocast float16", torch.float16)):
    # torch.autocast also works as a decorator: the whole step runs inside it
    step = torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None)(
        lambda: (mlp.zero_grad(), mlp(batch).float().pow(2).mean().backward()))
    a, wt = batch.to(dtype or torch.float32), mlp[0].weight.detach().t().to(dtype or torch.float32)
    print(f"{label:<18} {cpu_ms(step):8.2f} ms per forward+backward | the 128x256 @ 256x256 "
          f"matmul alone: {cpu_ms(lambda a=a, wt=wt: a @ wt):7.3f} ms")
torch.set_num_threads(threads)

# %% [markdown]
# **Is it lighter on memory?** What autograd saves for backward (chapter 10's
# `SavedTensorMeter`, which counts each saved storage once and skips the
# parameters) tells. Under autocast a Linear saves its *bfloat16* input and, when
# the gradient must go on to that input, a bfloat16 **copy of its weight** (the first
# layer, whose input needs no gradient, saves none): activations shrink by half, but
# each such weight copy is new memory. With a large batch the activations dominate and memory
# drops; with a small batch and wide layers the copies can make it grow — the
# notes' "not necessarily lighter on memory":

# %%
from minikernel.utils.saved_tensors import SavedTensorMeter

wide = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024))
for rows in (4096, 8):
    sizes = {}
    for label, enabled in (("float32", False), ("autocast bfloat16", True)):
        with SavedTensorMeter(exclude=wide.parameters()) as meter, torch.autocast("cpu", torch.bfloat16,
                                                                                  enabled=enabled):
            out = wide(torch.randn(rows, 1024)).float().sum()
        sizes[label] = meter.peak_bytes / 2**20
        del out
    print(f"batch {rows:4}: saved for backward {sizes['float32']:6.2f} MiB in float32, "
          f"{sizes['autocast bfloat16']:6.2f} MiB under autocast")

# %% [markdown]
# **Apex, and what replaced it.** The notes' other route is NVIDIA Apex:
# `model, optimizer = amp.initialize(model, optimizer, opt_level="O1")`, then
# `apex.parallel.DistributedDataParallel(model, delay_allreduce=True)` and
# `apex.parallel.convert_syncbn_model(model)`, 'needing a Volta GPU (V100, TITAN V)'.
# Apex itself now sends its users to PyTorch: its README
# ([github.com/NVIDIA/apex](https://github.com/NVIDIA/apex#readme), section *Contents*)
# heads the Amp section with "**Deprecated. Use PyTorch AMP**" (linking `torch.amp`),
# the distributed section with "`apex.parallel.DistributedDataParallel` is deprecated.
# Use `torch.nn.parallel.DistributedDataParallel`", and *Synchronized Batch
# Normalization* with "Deprecated. Use `torch.nn.SyncBatchNorm`".
# Apex is not installed here, so each piece is shown through its replacement. The
# opt levels, as the notes describe them, and their counterparts:
#
# | Apex | what it did | today |
# |---|---|---|
# | O0 | pure float32 (the accuracy baseline) | no autocast |
# | O1 | per-op white/black lists: GEMMs and convolutions in float16, softmax and the like in float32 | `torch.autocast` + `GradScaler` — this chapter |
# | O2 | "almost float16": the model cast to float16 except BatchNorm, float32 master weights for the optimizer | no one-call API; by hand below |
# | O3 | pure float16 (unstable; the speed baseline) | `model.to(torch.float16)` |
#
# The four on the CPU, with bfloat16, one SGD step each on a small model with a
# BatchNorm: which dtype the weights, the output and the gradients end up in.

# %%
def small_bn_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 4))


x_amp, y_amp = torch.randn(32, 8), torch.randn(32, 4)
for level in ("O0", "O1", "O2", "O3"):
    net = small_bn_model()
    if level in ("O2", "O3"):
        net.to(torch.bfloat16)
        if level == "O2":  # BatchNorm back to float32 (it normalizes its bfloat16 input in float32)
            net[1].float()
    params = list(net.parameters())
    # O2 keeps float32 master copies; the optimizer updates those and they are copied back into the model
    master = [p.detach().float().requires_grad_() for p in params] if level == "O2" else params
    opt = torch.optim.SGD(master, lr=0.1)
    with torch.autocast("cpu", torch.bfloat16, enabled=level == "O1"):
        out = net(x_amp.to(params[0].dtype))
        loss = torch.nn.functional.mse_loss(out.float(), y_amp)
    loss.backward()
    if level == "O2":
        for m, p in zip(master, params):
            m.grad = p.grad.float()
    opt.step()
    if level == "O2":
        with torch.no_grad():
            for m, p in zip(master, params):
                p.copy_(m)
    print(f"{level}: Linear weight {str(net[0].weight.dtype):15} BatchNorm weight {str(net[1].weight.dtype):15} "
          f"output {str(out.dtype):15} optimizer updates {master[0].dtype}")

# %% [markdown]
# Why O2 needed master weights: a 16-bit weight cannot take a small update. A
# bfloat16 keeps 8 significant bits, so just below 1.0 its neighbouring values are
# 2⁻⁸ ≈ 0.0039 apart; an update of 0.001 rounds away, step after step, while a
# float32 copy accumulates it. (float16 keeps 11 bits: its limit is eight times
# smaller, but it exists too.) Autocast sidesteps this by keeping the weights
# float32 (§2).

# %%
w16, w32 = torch.tensor(1.0, dtype=torch.bfloat16), torch.tensor(1.0)
for _ in range(100):
    w16 -= 0.001
    w32 -= 0.001
print(f"100 updates of -0.001 from 1.0: bfloat16 weight {w16.item()}, float32 weight {w32.item():.4f}")

# %% [markdown]
# `convert_syncbn_model` became `torch.nn.SyncBatchNorm.convert_sync_batchnorm`
# (chapter 05 builds SyncBatchNorm's statistics): it walks the model and swaps every
# BatchNorm for a SyncBatchNorm with the same parameters and running statistics. The
# conversion runs anywhere; in evaluation mode the layer is an ordinary BatchNorm:

# %%
bn_model = small_bn_model()
for _ in range(3):
    bn_model(torch.randn(32, 8))  # training-mode passes give the running statistics some values
synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(bn_model))
print("layers after conversion:", [type(m).__name__ for m in synced])
print("same parameters and running statistics:",
      all(torch.equal(a, b) for a, b in zip(bn_model.state_dict().values(), synced.state_dict().values())))
bn_model.eval()
synced.eval()
print("same output in eval mode:", torch.equal(bn_model(x_amp), synced(x_amp)))

# %% [markdown]
# Apex's `delay_allreduce=True` held every gradient all-reduce until the end of
# backward. Torch's `DistributedDataParallel` overlaps instead: gradients are grouped
# in buckets (25 MiB by default, `bucket_cap_mb`) and each bucket's all-reduce starts
# as soon as its gradients are ready, during backward (chapter 07 builds this
# reducer). The nearest thing to Apex's delay is the `delay_all_reduce_named_params`
# argument: the listed parameters are left out of the buckets and reduced together
# when the gradient of `param_to_hook_all_reduce` is ready — with the first layer's
# weight, whose gradient comes last, that is the end of backward. A one-process
# group (gloo, world size 1) is enough to build it and run an autocast step through
# it; and it shows one limit of the CPU: DDP accepts SyncBatchNorm only on GPU
# modules.

# %%
import os
import tempfile

import torch.distributed as dist

store_dir = tempfile.mkdtemp(prefix="minikernel-ch06-")
dist.init_process_group("gloo", store=dist.FileStore(os.path.join(store_dir, "store"), 1), rank=0, world_size=1)
try:
    torch.nn.parallel.DistributedDataParallel(synced)
except ValueError as err:
    print("DDP with SyncBatchNorm on the CPU: ValueError:", err)
net, plain = small_bn_model(), small_bn_model()
delayed = [(name, p) for name, p in net.named_parameters() if name != "0.weight"]
ddp = torch.nn.parallel.DistributedDataParallel(net, delay_all_reduce_named_params=delayed,
                                                param_to_hook_all_reduce=net[0].weight)
print("bucket cap:", ddp.bucket_bytes_cap // 2**20, "MiB | left to the delayed all-reduce:",
      sorted(ddp.parameters_to_ignore))
scaler = torch.amp.GradScaler("cpu")
for wrapped in (ddp, plain):
    with torch.autocast("cpu", torch.bfloat16):
        out = wrapped(x_amp)
    scaler.scale(torch.nn.functional.mse_loss(out.float(), y_amp)).backward()
print("output under autocast:", out.dtype, "| gradients equal to the model without DDP:",
      all(torch.equal(a.grad, b.grad) for a, b in zip(net.parameters(), plain.parameters())))
dist.destroy_process_group()

# %% [markdown]
# ## 3. The GradScaler in PyTorch
#
# The notes' example, on today's API: `torch.amp.GradScaler("cpu")` (the notes
# used `torch.cuda.amp.GradScaler()`, which now warns that it is deprecated).
# `scale(y)` is `y * 65536`, so every gradient comes out 65536 times too large:

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
z = torch.tensor([2.0, 3.0], requires_grad=True)
y = torch.sum(x) + torch.sum(z)
opt = torch.optim.SGD([x, z], lr=0.001)
scaler = torch.amp.GradScaler("cpu")
scaler.scale(y).backward()
print("x.grad:", x.grad, " y:", y.item())
print("the same as differentiating y * get_scale():",
      torch.equal(x.grad, torch.autograd.grad((torch.sum(x) + torch.sum(z)) * scaler.get_scale(), x)[0]))

# %% [markdown]
# `unscale_` divides the gradients back, in place. The scale is 65536 — the notes
# print 65535, a typo. Clipping now works on the true gradients: each of `x` and `z`
# has norm √2, so clipping each to norm 1 gives 1/√2 = 0.7071 per element (the notes
# round it to 0.7); clipping them *together* (total norm 2) gives 0.5.

# %%
scaler.unscale_(opt)
print("after unscale_:", x.grad, " scale:", scaler.get_scale())
x2, z2 = x.detach().clone().requires_grad_(), z.detach().clone().requires_grad_()
x2.grad, z2.grad = x.grad.clone(), z.grad.clone()
torch.nn.utils.clip_grad_norm_([x2, z2], 1.0)  # together (on copies)
print("x.grad clipped together with z:", x2.grad)
torch.nn.utils.clip_grad_norm_(x, 1.0)
torch.nn.utils.clip_grad_norm_(z, 1.0)
print("x.grad clipped on its own:     ", x.grad)

# %% [markdown]
# `step` then calls `opt.step()` with the clipped true gradients, and `update` ends
# the iteration:

# %%
scaler.step(opt)
scaler.update()
print("x:", x.detach(), " z:", z.detach(), " scale:", scaler.get_scale())

# %% [markdown]
# Calling `opt.step()` directly on the scaled gradients would be like multiplying
# the learning rate by 65536:

# %%
w = torch.tensor([1.0, 2.0], requires_grad=True)
wrong = torch.optim.SGD([w], lr=0.001)
torch.amp.GradScaler("cpu").scale(w.sum()).backward()
wrong.step()
print("w after opt.step() on scaled gradients:", w.detach(), " w.grad still:", w.grad)

# %% [markdown]
# Two more corrections to older code. `torch.cuda.amp.*` still works but warns; and a
# plain `GradScaler()` means `GradScaler("cuda")`, which on a machine without CUDA
# warns and **disables itself**: scale 1.0, `scale(loss)` returns the loss
# unchanged — training runs, silently without loss scaling. Say `"cpu"` on a CPU.
# `enabled=False` gives the same pass-through on purpose (the notes' `use_amp` switch).

# %%
for make in (lambda: torch.cuda.amp.GradScaler(), lambda: torch.amp.GradScaler(),
             lambda: torch.amp.GradScaler("cpu", enabled=False)):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = make()
    loss = torch.tensor(2.0)
    print([f"{w.category.__name__}: {w.message}" for w in caught])
    print("   enabled:", s.is_enabled(), " scale:", s.get_scale(), " scale(loss) is loss:", s.scale(loss) is loss)

# %% [markdown]
# ### The state machine
#
# The notes asked how `step` knows whether `unscale_` already ran. The scaler keeps a
# stage per optimizer (`OptState`: READY = 0, UNSCALED = 1, STEPPED = 2):
#
# ```text
# __init__, update():   -> READY          (for every optimizer)
# unscale_(opt):        READY -> UNSCALED
# step(opt):            READY or UNSCALED -> STEPPED   (from READY it calls unscale_ itself)
# ```
#
# torch keeps it in `scaler._per_optimizer_states[id(opt)]["stage"]`. Every other
# order is an error. `play` replays a list of calls on a fresh scaler and reports the
# optimizer's stage, or the first error:

# %%
print([s.name + "=" + str(s.value) for s in torch.amp.grad_scaler.OptState])
for calls in (["backward", "unscale_"], ["backward", "step"], ["backward", "unscale_", "step"],
              ["backward", "unscale_", "step", "update"],
              ["backward", "unscale_", "unscale_"], ["backward", "step", "unscale_"], ["backward", "step", "step"],
              ["backward", "update"], ["unscale_"], ["backward fp16", "step"]):
    print(f"{' -> '.join(calls):<36} {mk_amp.play(torch.amp.GradScaler, calls)}")

# %% [markdown]
# The last three: `update()` needs at least one optimizer's inf check (here none
# was unscaled or stepped); nothing works before the first `scale()` created the
# scale; and float16 *gradients* are refused — gradient scaling exists for float16
# activations, while the parameters (and so their gradients) stay float32.

# %% [markdown]
# ## Exercise 6.1 — scale_outputs
#
# `scale(outputs)` multiplies a tensor by the scale, or every tensor in (nested)
# lists and tuples, keeping the structure; other iterables come back as a lazy
# iterator; anything else is a `ValueError`. The scale itself is created on the
# first tensor's device the first time a tensor is scaled.

# %%
t = torch.tensor([1.0, 2.0])
ts = torch.amp.GradScaler("cpu", init_scale=4.0)
print(ts.scale([t, (t * 10, [t.half()])]))
lazy = ts.scale(iter([t]))
print(type(lazy).__name__, [v.tolist() for v in lazy])
try:
    ts.scale(3.0)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# `minikernel.amp.GradScaler.scale` calls your `scale_outputs(outputs, scale_on)`,
# where `scale_on(device)` hands you the scale on that device:

# %%
S.scale_outputs([t, (t * 10, [t.half()])], lambda device: torch.tensor(4.0))

# %%
agree(lambda outputs: mk_amp.GradScaler("cpu", init_scale=4.0).scale(outputs),
      lambda outputs: torch.amp.GradScaler("cpu", init_scale=4.0).scale(outputs),
      [(t,), ([t, (t * 10,)],), ((t.half(), [t.bfloat16()]),), ([],), (3.0,), ([t, None],)])

# %% [markdown]
# ## Exercise 6.2 — transition
#
# The stage machine as a function: `transition(stage, method)` returns the stage an
# optimizer moves to, or raises torch's `RuntimeError` for an illegal call. Here is
# torch's answer for every stage and method (`torch_transition` drives a real
# `torch.amp.GradScaler` there):

# %%
for stage in OptState:
    for method in S.METHODS:
        try:
            print(f"{method:>8}() in {stage.name:<8} -> {mk_amp.torch_transition(stage, method).name}")
        except RuntimeError as err:
            print(f"{method:>8}() in {stage.name:<8} -> RuntimeError: {err}")

# %%
S.transition(OptState.READY, "unscale_")

# %%
agree(S.transition, mk_amp.torch_transition, [(stage, method) for stage in OptState for method in S.METHODS])

# %% [markdown]
# The state diagram below is drawn from **your** `transition`: an arrow for every
# legal move, and the error for every illegal one. The highlighted box is where each
# optimizer of a live `minikernel.amp.GradScaler` is; press the buttons to make
# calls (on optimizer `opt0` or `opt1`, sharing one scaler) and watch it move. A
# torch GradScaler twin gets the same calls; the widget says so if the two disagree.
# Until exercise 6.2 is done it names the exercise instead of drawing arrows, and the
# buttons need the other exercises too.

# %% tags=["nbval-ignore-output"]
from widgets import scaler_diagram

scaler_diagram(n_optimizers=2)

# %% [markdown]
# ## Exercise 6.3 — non_finite_check_and_unscale_, unscale_grads_
#
# `unscale_` multiplies every gradient by `1/scale` (computed in float64, rounded to
# float32) and sets a `found_inf` flag if any element is inf or NaN. torch's kernel
# for it, `torch._amp_foreach_non_finite_check_and_unscale_`, still multiplies the
# gradients that contain an inf (the step will be skipped anyway), and never clears
# the flag. (The notes name `_amp_non_finite_check_and_unscale_`, the single-tensor
# kernel it replaced; that one is gone.)

# %%
print("old kernel still there:", hasattr(torch, "_amp_non_finite_check_and_unscale_"))
inv_scale = torch.tensor(2.0**16).double().reciprocal().float()
grads = [torch.tensor([65536.0, 131072.0]), torch.tensor([float("nan"), 2.0**16]), torch.tensor([3.0]).bfloat16()]
theirs, found_theirs = [g.clone() for g in grads], torch.zeros(1)
torch._amp_foreach_non_finite_check_and_unscale_(theirs, found_theirs, inv_scale)
print(theirs, " found_inf:", found_theirs)

# %%
mine, found_mine = [g.clone() for g in grads], torch.zeros(1)
S.non_finite_check_and_unscale_(mine, found_mine, inv_scale)
print(mine, " found_inf:", found_mine)

# %%
agree(lambda *grads: mk_amp.run_unscale(S.non_finite_check_and_unscale_, grads, inv_scale),
      lambda *grads: mk_amp.run_unscale(torch._amp_foreach_non_finite_check_and_unscale_, grads, inv_scale),
      [tuple(grads), (torch.tensor([2.0**16, 2.0**-8]),), (torch.tensor([float("-inf")]), torch.ones(2)),
       (torch.tensor([3.0, 5.0]).half(),), ()])

# %% [markdown]
# `unscale_grads_` applies it to everything an optimizer holds: walk its param
# groups, skip parameters without a gradient, refuse float16 gradients *before*
# touching any, group by device and dtype, and return the `found_inf` of each
# device. torch's version is `GradScaler._unscale_grads_`:

# %%
params = [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3, dtype=torch.float64)),
          torch.nn.Parameter(torch.ones(1))]
params[0].grad, params[1].grad = torch.tensor([65536.0, float("inf")]), torch.full((3,), 2.0**17, dtype=torch.float64)
twins = [torch.nn.Parameter(p.detach().clone()) for p in params]
for p, twin in zip(params, twins):
    twin.grad = None if p.grad is None else p.grad.clone()  # deepcopy would not copy .grad
print(torch.amp.GradScaler("cpu")._unscale_grads_(torch.optim.SGD(params, lr=0.1), inv_scale, torch.zeros(()), False))
print([p.grad for p in params])

# %%
S.unscale_grads_(torch.optim.SGD(twins, lr=0.1), inv_scale, torch.zeros(()), False)

# %%
print("gradients equal to torch's:", [p.grad is q.grad is None or torch.equal(p.grad, q.grad)
                                      for p, q in zip(params, twins)])
agree(lambda calls: mk_amp.play(mk_amp.GradScaler, calls), lambda calls: mk_amp.play(torch.amp.GradScaler, calls),
      [(["backward", "unscale_"],), (["backward", "unscale_", "unscale_"],), (["backward fp16", "unscale_"],)])

# %% [markdown]
# ## Exercise 6.4 — maybe_opt_step
#
# `step` runs `optimizer.step()` only when no device found an inf/NaN; otherwise it
# skips it and the parameters keep their values. With no inf check at all (no
# parameter had a gradient) it is an `AssertionError`:

# %%
for value in (0.0, 1.0):
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    found = {"found_inf_per_device": {torch.device("cpu"): torch.tensor(value)}}
    torch.amp.GradScaler("cpu")._maybe_opt_step(torch.optim.SGD([p], lr=0.5), found)
    print(f"found_inf {value}: p = {p.tolist()}")
print(mk_amp.play(torch.amp.GradScaler, ["backward", "zero_grad", "step"]))

# %%
p = torch.nn.Parameter(torch.ones(2))
p.grad = torch.ones(2)
print(S.maybe_opt_step(torch.optim.SGD([p], lr=0.5), {torch.device("cpu"): torch.tensor(1.0)}), p.tolist())

# %%
agree(lambda calls: mk_amp.play(mk_amp.GradScaler, calls), lambda calls: mk_amp.play(torch.amp.GradScaler, calls),
      [(["backward", "step"],), (["backward", "unscale_", "step"],), (["backward", "step", "step"],),
       (["zero_grad", "backward", "zero_grad", "step"],)])

# %% [markdown]
# ## Exercise 6.5 — update_scale_
#
# `update()` combines the inf flags of all optimizers and calls
# `torch._amp_update_scale_`: after an inf/NaN the scale is multiplied by
# `backoff_factor` (0.5) and the count of clean iterations restarts; after
# `growth_interval` clean iterations in a row it is multiplied by `growth_factor`
# (2.0) — unless that would overflow float32. With `growth_interval=2` and an inf in
# iteration 3:

# %%
scale, tracker = torch.tensor(2.0**16), torch.tensor(0, dtype=torch.int32)
for i in range(1, 11):
    torch._amp_update_scale_(scale, tracker, torch.tensor(1.0 if i == 3 else 0.0), 2.0, 0.5, 2)
    print(f"iteration {i:>2}: {'inf' if i == 3 else 'ok ':<3}  scale {int(scale.item()):>6}  tracker {tracker.item()}")

# %%
scale, tracker = torch.tensor(2.0**16), torch.tensor(0, dtype=torch.int32)
S.update_scale_(scale, tracker, torch.tensor(0.0), 2.0, 0.5, 1)
print(scale.item(), tracker.item())

# %%
# (scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval)
agree(lambda *case: mk_amp.run_update(S.update_scale_, *case),
      lambda *case: mk_amp.run_update(torch._amp_update_scale_, *case),
      [(65536.0, 0, 1.0, 2.0, 0.5, 2), (65536.0, 1, 0.0, 2.0, 0.5, 2), (65536.0, 0, 0.0, 2.0, 0.5, 2),
       (3.0, 4, 2.0, 1.5, 0.3, 5), (2.0**127, 0, 0.0, 2.0, 0.5, 1), (0.1, 2, 0.0, 1.0001, 0.5, 3)])

# %% [markdown]
# ## Your GradScaler, whole
#
# With all five done, `minikernel.amp.GradScaler` runs the notes' example to the
# same numbers:

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
z = torch.tensor([2.0, 3.0], requires_grad=True)
opt = torch.optim.SGD([x, z], lr=0.001)
scaler = mk_amp.GradScaler("cpu")
scaler.scale(torch.sum(x) + torch.sum(z)).backward()
print("scaled:", x.grad, scaler)
scaler.unscale_(opt)
print("unscaled:", x.grad, scaler)
torch.nn.utils.clip_grad_norm_(x, 1.0)
torch.nn.utils.clip_grad_norm_(z, 1.0)
scaler.step(opt)
print("stepped:", x.detach(), scaler)
scaler.update()
print(scaler)

# %% [markdown]
# ## A mixed-precision training loop
#
# A small regression network trained on the CPU with float16 autocast and a
# GradScaler — twice, once with torch's scaler and once with yours, from the same
# initial weights. The scale starts too high on purpose (2²⁴): the first iterations
# overflow in float16 and are skipped while the scale backs off; then it grows
# every 10 clean iterations. At iteration 40 the loss is multiplied by 10⁴ to force
# one overflow. Each iteration records the loss, the scale and whether the step
# was skipped, and sends them to chapter 04's live dashboard (`widgets.Dashboard`,
# visdom env `ch06`, a line per scaler): with `make dashboard` or `make lab`
# running, open http://127.0.0.1:8097/env/ch06 and watch them arrive. Without a
# visdom server the dashboard says so and draws the same plots here, after the loop.

# %%
torch.manual_seed(0)
data = torch.randn(256, 16)
target = data @ torch.randn(16, 1) + 0.1 * torch.randn(256, 1)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
histories, final_weights = {}, {}

# %% tags=["nbval-ignore-output"]
from widgets import Dashboard

dashboard = Dashboard(env="ch06", log_y=("loss", "scale"), live=False)

# %%
for name, make_scaler in (("torch", torch.amp.GradScaler), ("minikernel", mk_amp.GradScaler)):
    model = copy.deepcopy(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    scaler = make_scaler("cpu", init_scale=2.0**24, growth_interval=10)
    history = histories[name] = mk_amp.AmpHistory()
    for step in range(60):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(data), target)
        scaler.scale(loss * (1e4 if step == 40 else 1.0)).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        scale = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        skipped = scaler.get_scale() < scale
        history.record(loss.item(), scale, skipped=skipped)
        dashboard.log(step, run=name, loss=loss.item(), scale=scale, skipped=float(skipped))
    final_weights[name] = [p.detach().clone() for p in model.parameters()]
    print(f"{name}: {history.summary()}\n")
print("same losses, scales and skipped steps as torch:", histories["minikernel"] == histories["torch"])
print("same final weights, bit for bit:",
      all(torch.equal(a, b) for a, b in zip(final_weights["minikernel"], final_weights["torch"])))

# %% tags=["nbval-ignore-output"]
dashboard.show()

# %% [markdown]
# The `skipped` plot is 1 at the skipped iterations: first the calibration (the
# scale halves each time until the float16 gradients fit), a few more while the
# loss is still large, then the forced overflow at iteration 40 — one skipped step,
# the scale halves and later grows back. The torch and minikernel lines lie on top
# of each other, as the check above says they must.
#
# ## Grade chapter 06
#
# Runs the tests of every exercise 6.x against PyTorch — each function against the
# torch kernel it rebuilds, then whole training runs and random call orders
# (hypothesis: several optimizers sharing one scaler, clipping, inf/NaN injected,
# several growth intervals) driven through both GradScalers, comparing scales,
# skipped steps, parameters bit for bit and every error.

# %%
mk.grade("6.*")
