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
# # Chapter 02 — Kernels: map, zip, reduce and matmul on the CPU and the GPU
#
# Chapter 01 built the *header* of a tensor. This chapter writes the code that
# touches its elements: **kernels**. Four shapes of loop cover most of what a tensor
# library computes — **map** (one input, `x.exp()`), **zip** (two inputs with
# broadcasting, `x + y`), **reduce** (fold one dimension, `x.sum(1)`) and **matmul** —
# and you write each twice: for the CPU with numba's `njit(parallel=True)`, and for
# the GPU with numba's `cuda.jit`. Every kernel reads and writes through your
# chapter-01 `index_to_position`, compiled, so strides, offsets and broadcasting
# work everywhere.
#
# **Where you work.** `minikernel/kernels/index.py` (2.1), `minikernel/kernels/cpu.py`
# (2.2–2.5), `minikernel/kernels/gpu.py` (2.6–2.9). Each stub's docstring states the
# loop it must run and the PyTorch call it must match. Everything around the kernels
# — dispatch, checks, output allocation, launching — is complete code in
# `minikernel/aten/` (`tensor_iterator.py`: the steps every operator shares; `binary_ops.py`,
# `unary_ops.py`, `reduce_ops.py`, `linalg.py`: the operators that call your kernels) and
# `minikernel/kernels/launch.py`; read them when a cell below points there.
#
# **No GPU?** Then the GPU kernels run on numba's **CUDA simulator**, which runs each
# CUDA thread as a Python thread: the same source, the same `threadIdx`, shared
# memory and `syncthreads`, only slow — so the GPU examples here are tiny. minikernel
# switches the simulator on by itself when it finds no CUDA device (it has to happen
# before numba is imported). On a machine with an NVIDIA GPU the same kernels compile
# to native code.
#
# **How each exercise goes**, as in chapter 01: PyTorch first, then your kernel on
# the same input, then a check cell. Until you write a kernel, the cells that need it
# show a short box ("Exercise 2.2 (cpu_map) is not written yet", where and how to
# grade it) and Run All goes on.
# **Stuck?** `MINIKERNEL_SOLUTIONS=2.2 make lab` (or `2.*`, or `all`) switches on a
# reference; restart the kernel after changing it. **Grading:** the last cell, or
# `make grade ARGS="'2.*'"`.

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
import numpy as np
import torch

import minikernel as mk
from minikernel import Tensor
from minikernel.aten import binary_ops, tensor_iterator
from minikernel.course import notebook_display
from minikernel.kernels import launch, layout, sizes

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
launch.set_reference_fallback(False)  # every op here runs your kernels; later chapters let numpy stand in
torch.manual_seed(0)
print(torch.__version__, "| minikernel's cuda device usable:", mk.device.is_available())

# %% [markdown]
# ## 1. What writing a kernel involves
#
# A PyTorch operator reaches its kernel after **two dispatches**: first on the
# *device* (CPU and CUDA kernels are different code, often in different libraries),
# then on the *dtype* (a `switch` that picks the float, double or int64 version of
# the same template). (Above both, autograd, autocast and Python modes get their turn:
# the dispatcher's keys, chapter 09.) Once there, a kernel author writes, in this order:
#
# 1. **error checks** on the inputs (dimensions, shapes, devices);
# 2. **allocate the output** (unless the caller passed `out=`);
# 3. the **dtype dispatch** (`AT_DISPATCH_ALL_TYPES`), which also fixes the dtypes supported;
# 4. **parallelize**: explicitly on the CPU (OpenMP, `at::parallel_for`), implicitly
#    on the GPU, whose programming model *is* parallel;
# 5. **read and write the data** through accessors that respect strides (not raw
#    pointers that assume contiguity) — or, for element-wise ops, `TensorIterator`,
#    which also handles broadcasting and type promotion;
# 6. often **three variants**: `abs_out` (writes into a given tensor: the workhorse),
#    `abs_` (in place) and `abs` (allocates); and, for speed on CPUs, **vectorized** loops.
#
# Each step, seen from Python. Error checks come first — the message names both sizes:

# %%
try:
    torch.ones(2, 3) + torch.ones(4)
except RuntimeError as err:
    print("RuntimeError:", err)

# %% [markdown]
# The output is allocated by the operator, and not always contiguous: an element-wise
# op on a transposed input returns a transposed result, so it can walk both in
# memory order. Integer inputs of `exp` get a float32 output — the dtype step:

# %%
x = torch.randn(3, 4)
print("x.t().exp() strides:", x.t().exp().stride(), " x.t() strides:", x.t().stride())
print("exp of int64:", torch.arange(3).exp().dtype, " int64 / int64:", (torch.arange(3) / 2).dtype)
print("float32 + float64 0-d:", (x + torch.tensor(1.0, dtype=torch.float64)).dtype,
      " int64 + 2.5:", (torch.arange(3) + 2.5).dtype)

# %% [markdown]
# The three variants: `out=` writes into memory you own, the `_` method writes into
# `self`, the plain call allocates. An in-place op may not lose information:

# %%
a, b, c = torch.ones(2, 3), torch.arange(3.0), torch.empty(2, 3)
r = torch.add(a, b, out=c)
print("out= returns out:", r is c, "| same memory:", r.data_ptr() == c.data_ptr())
print("add_ returns self:", a.add_(b) is a, "| a now:", a[0].tolist())
try:
    torch.arange(3).add_(0.5)
except RuntimeError as err:
    print("RuntimeError:", err)

# %% [markdown]
# ## 2. The same steps in minikernel
#
# `x + y` on a minikernel Tensor calls the operator `aten::add`, whose CPU and CUDA kernel is
# `minikernel.aten.binary_ops.add` (chapter 09 follows the way there). It does the steps in
# PyTorch's order: **device dispatch** (all operands on one device, pick that device's
# kernel), **dtype dispatch** (result dtype by PyTorch's promotion rules; the kernels
# take float32, float64 and int64), **error checks**, **allocate** the output with the
# strides PyTorch would give it, and only then **your kernel**. The registered kernels,
# by device and operation:

# %%
for device_type, table in launch.KERNELS.items():
    print(f"{device_type:5}", "  ".join(f"{op}: {k.name} ({k.exercise_id})" for op, k in table.items()))

# %% [markdown]
# Both dispatches run before any kernel, so these refusals work even before you have
# written one — PyTorch's messages where PyTorch has one:

# %%
m = Tensor.from_torch(torch.ones(2, 3))
for call in (lambda: m + m.cuda(), lambda: Tensor.from_torch(torch.ones(2, dtype=torch.int32)).exp(),
             lambda: m @ Tensor.from_torch(torch.ones(3, 2, dtype=torch.float64))):
    try:
        call()
    except RuntimeError as err:
        print("RuntimeError:", err)
print("result_type(int64 tensor, 2.5):", tensor_iterator.result_type(Tensor.from_torch(torch.arange(3)), 2.5),
      "| torch:", torch.result_type(torch.arange(3), 2.5))

# %% [markdown]
# And the output's strides follow PyTorch's rule (ported from `TensorIterator` in
# `minikernel/kernels/layout.py`), before a single element is computed:

# %%
for t in (x, x.t(), x.t()[:, ::2], x[:1].expand(3, 4)):
    print(f"input strides {str(t.stride()):8}  torch's output {str(t.neg().stride()):8}  "
          f"minikernel's {layout.output_strides(t.shape, [(t.shape, t.stride())])}")

# %% [markdown]
# ## Exercise 2.1 — to_index_into
#
# Kernels run your index helpers once per element, compiled by numba.
# `index_to_position` (1.2) compiles as it is: it reads two arrays and returns an
# int. `to_index` (1.3) cannot: it builds a **new tuple** whose length depends on the
# shape, and compiled code has no variable-length tuples — numba must know every
# tuple's length when it compiles. (GPU code cannot even allocate.) Ask numba to
# compile chapter 01's `to_index` and it refuses:

# %%
import numba

try:
    numba.njit(mk.strides.to_index)(7, np.array([2, 3, 4]))
except numba.core.errors.TypingError as err:
    print("numba cannot compile to_index:", type(err).__name__)

# %% [markdown]
# So kernels allocate an **index buffer** once and a helper *writes* the index into
# it: `to_index_into(ordinal, shape, out_index)`. PyTorch's answer, then yours:

# %%
print([int(i) for i in torch.unravel_index(torch.tensor(7), (2, 3, 4))])

# %%
buffer = np.zeros(3, dtype=np.int64)
mk.kernels.index.to_index_into(7, np.array([2, 3, 4]), buffer)
buffer

# %% [markdown]
# Compiled, as the kernels call it (`minikernel.kernels.cpu.to_index_into` is your
# function after `numba.njit`), on a few ordinals:

# %%
for ordinal, shape in [(0, (2, 3, 4)), (7, (2, 3, 4)), (23, (2, 3, 4)), (5, (6,)), (3, (2, 1, 2))]:
    out = np.zeros(len(shape), dtype=np.int64)
    mk.kernels.cpu.to_index_into(ordinal, np.array(shape), out)
    theirs = [int(i) for i in torch.unravel_index(torch.tensor(ordinal), shape)]
    print(f"{ordinal:2} in {str(shape):9} yours: {out.tolist()}  torch: {theirs}  {'ok' if out.tolist() == theirs else 'DIFFERENT'}")

# %% [markdown]
# ## Parallel loops on the CPU
#
# `numba.njit(parallel=True)` compiles a Python function to machine code, and
# `for t in numba.prange(n):` splits the iterations across the CPU's cores — the
# explicit parallelism of step 4. Iterations must be independent, and anything an
# iteration allocates costs time per iteration; so the CPU kernels split the work into
# **tasks** of `CPU_CHUNK` elements, allocate one index buffer per task, and do the
# index arithmetic once per *row segment* instead of once per element. Two traps,
# both handled for you: an exception raised by a function called inside a `prange`
# loop does not reach the caller (so all checks happen on the host, before the
# kernel), and numba compiles on first call (minikernel caches the compiled kernels
# on disk, so it happens once).
#
# Before your kernel runs, the host code (`kernels/launch.py`) also reorders and
# merges dimensions so the kernel's last dimension is the fastest in memory. A
# transposed matrix becomes one flat loop — it is contiguous in *memory* order:

# %%
print(layout.iteration_layout(x.t().shape, x.t().stride(), x.t().stride()))
print(layout.iteration_layout((3, 4), (4, 1), (1, 3)))  # output row-major, input transposed: stays 2-D

# %% [markdown]
# ## Exercise 2.2 — cpu_map
#
# One input, one output: `out[i] = f(a[i])` for every index `i`, with `f` chosen by an
# op code (`neg`, `exp`, `log`, `relu`, `sigmoid`). PyTorch, on a transposed input:

# %%
xt = x.t()
for name in ("neg", "exp", "relu", "sigmoid"):
    print(f"{name:8}", [round(v, 6) for v in getattr(xt, name)()[0, :3].tolist()])

# %% [markdown]
# The same through minikernel — your `cpu_map` does the loop:

# %%
mxt = Tensor.from_torch(xt)
mxt.exp()

# %%
for name in ("neg", "exp", "log", "relu", "sigmoid"):
    mine, theirs = getattr(mxt, name)(), getattr(xt, name)()
    same = torch.allclose(mine.to_torch(), theirs, rtol=1e-5, equal_nan=True)
    print(f"{name:8} strides {mine.stride()} vs torch {theirs.stride()}  values {'ok' if same else 'DIFFERENT'}")

# %% [markdown]
# ## Exercise 2.3 — cpu_zip
#
# Two inputs, broadcast together: the host expands both to the output's shape with
# your `expand` (1.6), so a broadcast dimension arrives with stride 0 and the kernel
# needs no special case. PyTorch:

# %%
col, row = torch.tensor([[1.0], [2.0], [3.0]]), torch.tensor([10.0, 20.0, 30.0, 40.0])
print(col + row)
print("expanded strides:", col.expand(3, 4).stride(), row.expand(3, 4).stride())

# %%
Tensor.from_torch(col) + Tensor.from_torch(row)

# %%
mcol, mrow = Tensor.from_torch(col), Tensor.from_torch(row)
for mine, theirs, text in [(mcol + mrow, col + row, "col + row"), (mrow * 2 - mcol, row * 2 - col, "row * 2 - col"),
                           (1 / mcol, 1 / col, "1 / col"), (Tensor.from_torch(torch.arange(3)) / 2, torch.arange(3) / 2,
                                                            "int64 / 2")]:
    same = torch.equal(mine.to_torch(), theirs)
    print(f"{text:14} dtype {str(mine.dtype):8} shape {mine.shape}  {'ok' if same else 'DIFFERENT'}")

# %% [markdown]
# The three variants in minikernel: `binary_ops.add(a, b, out=c)` is the workhorse, `a.add_(b)`
# calls it with `out=a`, and `a + b` allocates. `out=` is checked like PyTorch checks
# it — a float result may not go into an int64 tensor:

# %%
ma, mc = Tensor.from_torch(torch.ones(2, 3)), Tensor.from_torch(torch.empty(2, 3))
print("out= returns out:", binary_ops.add(ma, Tensor.from_torch(b), out=mc) is mc, "| values:", mc.tolist()[0])
print("add_ returns self:", ma.add_(Tensor.from_torch(b)) is ma, "| a now:", ma.tolist()[0])
try:
    Tensor.from_torch(torch.arange(3)).add_(0.5)
except RuntimeError as err:
    print("RuntimeError:", err)

# %% [markdown]
# ## Exercise 2.4 — cpu_reduce
#
# Fold one dimension: `sum` adds, `amax` keeps the largest (NaN wins, as in PyTorch).
# The output has the input's shape with 1 at `dim` (`keepdim=True`); without keepdim
# that dimension is dropped afterwards. `mean` is the sum divided by the count (your
# zip kernel does the division).

# %%
s = torch.tensor([[1.0, 5.0, 2.0], [float("nan"), 0.0, -1.0]])
ms = Tensor.from_torch(s)
print(s.sum(1), s.sum(0, keepdim=True), s.amax(1), s.max(), s.mean(0), sep="\n")

# %%
ms.sum(1)

# %%
for text, mine, theirs in [("sum(1)", ms.sum(1), s.sum(1)), ("sum(0, keepdim)", ms.sum(0, keepdim=True), s.sum(0, True)),
                           ("amax(1)", ms.amax(1), s.amax(1)), ("max()", ms.max(), s.max()),
                           ("mean(0)", ms.mean(0), s.mean(0)), ("sum()", ms.sum(), s.sum())]:
    same = torch.equal(mine.to_torch(), theirs) or torch.allclose(mine.to_torch(), theirs, equal_nan=True)
    print(f"{text:16} {str(mine.tolist()):26} {'ok' if same else 'DIFFERENT'}")

# %% [markdown]
# One difference from PyTorch: `x.max(dim)` returns values *and* indices there; the
# reduce kernel computes values only, so minikernel asks for `amax` (PyTorch's
# values-only reduction) instead of returning something different:

# %%
try:
    ms.max(1)
except TypeError as err:
    print("TypeError:", err)

# %% [markdown]
# ## Exercise 2.5 — cpu_matmul
#
# `out[..., i, j] = Σ_k a[..., i, k] · b[..., k, j]`, with batch dimensions that
# broadcast like element-wise ones. A naive triple loop reads each element of `a` and
# `b` many times from main memory. A **blocked** kernel computes one tile of the
# output at a time and copies the blocks of `a` and `b` it needs into small local
# arrays, which stay in cache while they are reused — and, stored so that the inner
# loop reads both contiguously, numba vectorizes that loop. PyTorch:

# %%
p, q = torch.randn(2, 1, 3, 4), torch.randn(5, 4, 2)
print((p @ q).shape, (p @ q).stride())

# %%
(Tensor.from_torch(p) @ Tensor.from_torch(q)).shape

# %%
for left, right in [(p, q), (torch.randn(70, 65), torch.randn(65, 130)), (torch.randn(4), torch.randn(4, 3)),
                    (torch.randn(3, 4), torch.randn(4)), (torch.arange(6).view(2, 3), torch.arange(12).view(3, 4))]:
    mine, theirs = Tensor.from_torch(left) @ Tensor.from_torch(right), left @ right
    same = torch.allclose(mine.to_torch(), theirs, rtol=1e-4, atol=1e-4)
    print(f"{str(tuple(left.shape)):13} @ {str(tuple(right.shape)):10} -> {str(mine.shape):13} {'ok' if same else 'DIFFERENT'}")

# %% [markdown]
# ## The GPU: threads, blocks, shared memory
#
# A CUDA kernel is one function that **every thread runs**. The host launches a
# *grid* of *blocks*, each of so many threads: `kernel[blocks, threads_per_block](args)`.
# A thread finds its work from `cuda.blockIdx`, `cuda.threadIdx` and `cuda.blockDim` —
# the parallelism is implicit. Threads of one block can share fast on-chip memory
# (`cuda.shared.array`) and wait for each other (`cuda.syncthreads()`); blocks cannot.
# GPU code cannot allocate memory (index buffers are `cuda.local.array(MAX_DIMS, ...)`),
# and cannot raise exceptions, so again the host checks everything first.
#
# minikernel's `"cuda"` tensors keep their storage in a numba device array;
# `.cuda()` and `.cpu()` copy, keeping the layout like `torch.Tensor.to`:

# %%
g = Tensor.from_torch(x.t()).cuda()
print(g.device, g.shape, g.stride(), "| back on the cpu equals x.t():", torch.equal(g.cpu().to_torch(), x.t()))

# %% [markdown]
# ## Exercise 2.6 — gpu_map
#
# **One thread per output element**: thread `i = blockIdx.x · blockDim.x + threadIdx.x`
# computes `out[i]` if `i < n`. Consecutive threads take consecutive elements, and the
# host orders dimensions so those are adjacent in memory — then a *warp* (32 threads
# that execute together) reads one contiguous block of memory: **coalesced** access.

# %%
print(x.t().sigmoid()[0].tolist())

# %%
Tensor.from_torch(x.t()).cuda().sigmoid()

# %%
gt = Tensor.from_torch(x.t()).cuda()
for name in ("neg", "exp", "log", "relu", "sigmoid"):
    mine, theirs = getattr(gt, name)(), getattr(x.t(), name)()
    same = torch.allclose(mine.cpu().to_torch(), theirs, rtol=1e-5, equal_nan=True)
    print(f"{name:8} on {mine.device}: strides {mine.stride()}  values {'ok' if same else 'DIFFERENT'}")

# %% [markdown]
# The **kernel trace** shows a tiny launch thread by thread: every read and write is
# recorded with the block and thread that made it. Pick "map, contiguous input" and
# "map, transposed input": in the second, the output is contiguous but the input is
# not (the host's reordering bypassed on purpose), so the first warp's reads scatter
# across memory and need more 32-byte memory segments.

# %% tags=["nbval-ignore-output"]
from widgets import kernel_trace

kernel_trace("map, transposed input")

# %% [markdown]
# ## Exercise 2.7 — gpu_zip
#
# Exercise 2.6 with two inputs, already broadcast by the host.

# %%
print((col + row)[2].tolist())

# %%
Tensor.from_torch(col).cuda() + Tensor.from_torch(row).cuda()

# %%
gcol, grow = Tensor.from_torch(col).cuda(), Tensor.from_torch(row).cuda()
for text, mine, theirs in [("col + row", gcol + grow, col + row), ("row / col", grow / gcol, row / col),
                           ("2 * col - 1", 2 * gcol - 1, 2 * col - 1)]:
    print(f"{text:12} {'ok' if torch.equal(mine.cpu().to_torch(), theirs) else 'DIFFERENT'}")

# %% [markdown]
# ## Exercise 2.8 — gpu_reduce
#
# **One block per output element**, and a **tree** in shared memory: each of the
# block's `REDUCE_THREADS` threads folds every `REDUCE_THREADS`-th element of the row,
# stores its partial result in `cuda.shared.array`, and then the block halves the
# partial results step by step (`partial[t] += partial[t + s]` for `s = T/2, T/4, …, 1`)
# with a `cuda.syncthreads()` after every step — which *every* thread must reach.

# %%
w = torch.randn(3, 19, dtype=torch.float64)
print(w.sum(1).tolist())

# %%
Tensor.from_torch(w).cuda().sum(1)

# %%
gw = Tensor.from_torch(w).cuda()
for text, mine, theirs in [("sum(1)", gw.sum(1), w.sum(1)), ("amax(0)", gw.amax(0), w.amax(0)),
                           ("mean(1)", gw.mean(1), w.mean(1)), ("max()", gw.max(), w.max())]:
    print(f"{text:8} {'ok' if torch.allclose(mine.cpu().to_torch(), theirs) else 'DIFFERENT'}")

# %% [markdown]
# ## Exercise 2.9 — gpu_matmul
#
# A block of `TILE × TILE` threads computes a `TILE × TILE` tile of the output. At each
# step along `k`, every thread loads **one** element of `a` and one of `b` into two
# shared tiles, the block synchronizes, and each thread adds `TILE` products read from
# shared memory; a second `syncthreads` keeps the next step from overwriting tiles
# still in use. Each global element is then read `TILE` times less often than by a
# naive kernel where every thread reads a whole row and column itself.

# %%
u, v = torch.randn(6, 9, dtype=torch.float64), torch.randn(9, 5, dtype=torch.float64)
print((u @ v).shape)

# %%
Tensor.from_torch(u).cuda() @ Tensor.from_torch(v).cuda()

# %%
gu, gv = Tensor.from_torch(u).cuda(), Tensor.from_torch(v).cuda()
print("(6, 9) @ (9, 5):", "ok" if torch.allclose((gu @ gv).cpu().to_torch(), u @ v) else "DIFFERENT")
gp, gq = Tensor.from_torch(p.double()).cuda(), Tensor.from_torch(q.double()).cuda()
print("batched (2, 1, 3, 4) @ (5, 4, 2):", "ok" if torch.allclose((gp @ gq).cpu().to_torch(), p.double() @ q.double())
      else "DIFFERENT")

# %% [markdown]
# The trace of both matmuls on `2·TILE × 2·TILE` matrices: compare the read counts in
# the cells of `a` and `b`, and the totals of global and shared reads.

# %% tags=["nbval-ignore-output"]
kernel_trace("matmul, tiled")

# %%
from widgets.kernel_trace import trace

naive, tiled = trace("matmul, naive"), trace("matmul, tiled")
print("naive: each element of a read", set(naive.per_cell("a").values()), "time(s) from global memory")
print("tiled: each element of a read", set(tiled.per_cell("a").values()), "time(s) from global memory")
print("global reads, naive = TILE x tiled:", naive.counts()["global reads"] == sizes.TILE * tiled.counts()["global reads"])
print("shared reads of the tiled kernel = global reads of the naive one:",
      tiled.counts()["shared reads"] == naive.counts()["global reads"])

# %% [markdown]
# ## CUDA streams: why `synchronize` matters
#
# A kernel launch only *queues* work on a **stream** and returns at once; the GPU runs
# the stream's work in order, while the CPU goes on. PyTorch gives each GPU a default
# stream that synchronizes with the others where needed. Work put on a stream you
# create is on its own: the notes' example launches a convolution on the default
# stream and then `B = torch.sum(A)` on a side stream, which **may start before the
# convolution has finished** and sum the wrong data. The fixes: `torch.cuda.synchronize()`
# (wait for all work), `stream.synchronize()` (for one stream), or
# `s.wait_stream(torch.cuda.current_stream())` (order the side stream after the default
# one, without blocking the CPU). This course's PyTorch is a CPU build, so the PyTorch
# side cannot run here:

# %%
print("torch sees a GPU:", torch.cuda.is_available())

# %% [markdown]
# numba has the same model — `cuda.stream()`, launches with `kernel[grid, block, stream]`,
# `stream.synchronize()` — and minikernel's `mk.device.synchronize()` waits for
# everything, like `torch.cuda.synchronize()`. On the simulator every launch runs to
# completion before it returns, so no race can be *shown* here; on a GPU the same calls
# order real asynchronous work:

# %%
from numba import cuda

side = cuda.stream()
data = cuda.to_device(np.arange(8.0), stream=side)  # a copy queued on the side stream
side.synchronize()  # wait for that stream only
mk.device.synchronize()  # wait for all GPU work
print(data.copy_to_host().tolist())

# %% [markdown]
# ## Timing honestly
#
# 1. **Warm up**: the first call pays for compilation and caches.
# 2. **Synchronize**: time GPU work only after it has finished. Timing a launch without
#    it measures only the queueing — the classic mistake.
# 3. **Repeat and take the median**: one run is noise.
# 4. **Compare in turns**: when two calls are compared, take their samples alternately.
#    A shared machine's memory bandwidth drifts by tens of percent within seconds;
#    timing all of one side's samples before all of the other's puts that drift into
#    the ratio.
#
# The first point, on the CPU: the first float64 `relu` of this session compiles the
# map kernel for float64 (or loads it from numba's on-disk cache, if an earlier run
# compiled it); the second call only runs it. (Outputs of timing cells are not
# compared by the notebook checks: timings vary.)

# %% tags=["nbval-ignore-output"]
import time

big = Tensor.from_torch(torch.randn(1024, 1024, dtype=torch.float64))
for attempt in ("first call", "second call"):
    start = time.perf_counter()
    big.relu()
    print(f"{attempt}: {1e3 * (time.perf_counter() - start):.2f} ms")

# %% [markdown]
# The second point, with the code that is right on a GPU. On a real GPU the first
# number is the launch alone (microseconds, however big the work) and the second the
# kernel's time; on the simulator both include the whole run, because a simulated
# launch returns only when it is done.

# %% tags=["nbval-ignore-output"]
small = Tensor.from_torch(torch.randn(8, 8)).cuda()
small.exp()  # warm-up
mk.device.synchronize()
start = time.perf_counter()
small.exp()
queued = time.perf_counter() - start  # WRONG on a GPU: the kernel may still be running
mk.device.synchronize()
start = time.perf_counter()
small.exp()
mk.device.synchronize()
finished = time.perf_counter() - start  # right: wait, then read the clock
print(f"without synchronize: {1e3 * queued:.3f} ms   with synchronize: {1e3 * finished:.3f} ms")

# %% [markdown]
# All four points are built into `python -m minikernel bench` (`make bench`), which
# times the reference kernels against PyTorch on the same inputs in one process. The
# harness's `paired_samples_ms` on one row — your kernel and PyTorch's on a 1024 × 1024 map,
# warmed up first, then 15 samples each, taken in turns:

# %% tags=["nbval-ignore-output"]
import statistics

from minikernel.course.bench.timing import median_ms, paired_samples_ms

t1024 = torch.randn(1024, 1024)
m1024 = Tensor.from_torch(t1024)
for _ in range(3):  # warm-up: compiled, inputs read, outputs' pages touched
    m1024.relu(), t1024.relu()
my_samples, their_samples = paired_samples_ms(lambda: m1024.relu(), lambda: t1024.relu())
mine, theirs = statistics.median(my_samples), statistics.median(their_samples)
print(f"relu 1024x1024: minikernel {mine:.3f} ms, torch {theirs:.3f} ms, ratio {mine / theirs:.2f}x")

# %% [markdown]
# ### From the textbook loop to your kernel
#
# The same 512 × 512 float32 product, one step at a time
# (`minikernel/kernels/matmul_steps.py` says what each step changes), then your
# `cpu_matmul` and `torch.mm`, all with every thread: the median time, the rate
# (2·n³ operations) and the share of torch's rate. Each result is checked against
# torch before it is timed — a fast wrong kernel is not a result.

# %% tags=["nbval-ignore-output"]
from minikernel.kernels import matmul_steps

n = 512
ta, tb = torch.randn(n, n), torch.randn(n, n)
ma, mb = Tensor.from_torch(ta), Tensor.from_torch(tb)
expected = (ta.double() @ tb.double()).numpy()
torch_ms = median_ms(lambda: ta @ tb)
steps = {name: (lambda s=step: matmul_steps.run(s, ta.numpy(), tb.numpy())) for name, step in matmul_steps.STEPS.items()}
steps["3. your cpu_matmul (2.5)"] = lambda: ma @ mb
for name, call in steps.items():
    try:
        result = call()
    except NotImplementedError as err:
        print(f"{name:32} not measured: exercise {notebook_display.stub_id_in(err)} is not written yet")
        continue
    values = result.to_numpy() if isinstance(result, Tensor) else result
    if not np.allclose(values, expected, rtol=1e-4, atol=1e-3):
        print(f"{name:32} not measured: its result differs from torch's")
        continue
    ms = median_ms(call, warmup=1, repeat=5)
    print(f"{name:32} {ms:8.2f} ms {2 * n**3 / ms / 1e6:7.1f} GFLOP/s {100 * torch_ms / ms:6.1f}% of torch.mm")
print(f"{'torch.mm':32} {torch_ms:8.2f} ms {2 * n**3 / torch_ms / 1e6:7.1f} GFLOP/s")

# %% [markdown]
# ## TF32: fast float32 matmuls, and today's defaults
#
# NVIDIA's Ampere and later GPUs can run float32 matmuls and convolutions in
# **TensorFloat-32** (a 10-bit mantissa inside the tensor cores): much faster, less
# precise. Older notes say both flags default to `True`; since PyTorch 1.12 the matmul
# flag defaults to **`False`** (float32 matmuls stay full precision), while cuDNN
# convolutions still default to TF32. `torch.set_float32_matmul_precision("high")`
# opts matmuls in. The flags are readable without a GPU — the values here are the
# current defaults:

# %%
print("torch.backends.cuda.matmul.allow_tf32 =", torch.backends.cuda.matmul.allow_tf32)
print("torch.backends.cudnn.allow_tf32       =", torch.backends.cudnn.allow_tf32)
print("torch.get_float32_matmul_precision()  =", torch.get_float32_matmul_precision())

# %% [markdown]
# ## Vectorized CPU kernels and runtime dispatch
#
# ezyang's notes: PyTorch's CPU kernels are written once with `Vectorized<T>`
# (formerly `Vec256`) and **compiled several times**, for several instruction sets
# (plain, AVX2, AVX-512 on x86); at start-up PyTorch asks the CPU what it supports
# and picks the best build of each kernel. The choice is visible, and the
# environment variable `ATEN_CPU_CAPABILITY` forces a lower one — read once, when
# torch is imported, so here in fresh processes (the answer depends on the machine's
# CPU, so the output is not compared):

# %% tags=["nbval-ignore-output"]
import os
import subprocess
import sys

probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
print("this process:", torch.backends.cpu.get_cpu_capability())
for forced in ("default", "avx2"):
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "ATEN_CPU_CAPABILITY": forced},
                         capture_output=True, text=True, check=True).stdout.strip()
    print(f"ATEN_CPU_CAPABILITY={forced}:", out)

# %% [markdown]
# The same ops over 4 M floats with each build (one thread, pinned in each child and
# printed; median of 9 after a warm-up; timings vary, so the output is not compared).
# The vector builds process 8 (AVX2) or 16 (AVX-512) floats per instruction, and
# `sigmoid`, compiled once per build, shows it. `exp` does not: in a wheel built with
# MKL (`torch.backends.mkl.is_available()`), ATen's `cpu/vml.h` hands `exp`, `log`,
# `sin`, `tanh` and a few more to MKL's vector math library, which picks its own
# instructions whatever `ATEN_CPU_CAPABILITY` says:

# %% tags=["nbval-ignore-output"]
timer = ("import torch, time; torch.set_num_threads(1); x = torch.randn(1 << 22); r = []\n"
         "for op in (torch.exp, torch.sigmoid):\n"
         " op(x); t = []\n"
         " for _ in range(9):\n  s = time.perf_counter(); op(x); t.append(time.perf_counter() - s)\n"
         " r.append(f'{sorted(t)[4] * 1e3:6.2f}')\n"
         "print(torch.get_num_threads(), *r)")
print("MKL in this build:", torch.backends.mkl.is_available())
print("capability  threads  exp (ms)  sigmoid (ms)")
for forced in ("default", "avx2", "avx512"):
    threads_used, exp_ms, sigmoid_ms = subprocess.run(
        [sys.executable, "-c", timer], env={**os.environ, "ATEN_CPU_CAPABILITY": forced},
        capture_output=True, text=True, check=True).stdout.split()
    print(f"{forced:10} {threads_used:>8} {exp_ms:>9} {sigmoid_ms:>13}")

# %% [markdown]
# ## Memory-bound element-wise ops
#
# An element-wise op does one arithmetic operation per element and moves 8–12 bytes
# for it; an n×n matmul reads 2n² elements and does 2n³ operations: n per element it
# reads, 2n per element it writes. So element-wise ops are
# limited by **memory bandwidth**, matmuls by arithmetic. That is the core of the
# ShuffleNetV2 rules the notes quote (count memory access, not only FLOPs: equal
# channel widths, few groups, few branches, few element-wise ops). On this machine
# (one thread; not compared):

# %% tags=["nbval-ignore-output"]
threads = torch.get_num_threads()
print(f"torch runs CPU kernels on {threads} threads here; measured on one:")
torch.set_num_threads(1)
n = 1 << 22
a, b = torch.randn(n), torch.randn(n)
square = torch.randn(512, 512)
add_s = median_ms(lambda: torch.add(a, b)) / 1e3
mm_s = median_ms(lambda: square @ square) / 1e3
print(f"add: {n / add_s / 1e9:6.2f} GFLOP/s, moving {3 * 4 * n / add_s / 1e9:.1f} GB/s")
print(f"matmul 512³: {2 * 512**3 / mm_s / 1e9:6.2f} GFLOP/s")
torch.set_num_threads(threads)

# %% [markdown]
# ## Where PyTorch's kernels come from, and what became of TH
#
# ezyang's notes walk the source tree: `torch/` (the Python package), `torch/csrc/`
# (the C++ behind `torch._C`: bindings, the autograd engine), `aten/src/ATen/native/`
# (the operators' kernels), `c10/` (the core: `TensorImpl`, the dispatcher), and two
# legacy C libraries, `TH` and `THC` (CPU and CUDA), whose kernels were being ported
# to ATen (C-style code with manual reference counts, one `generic/` file instantiated
# per dtype by the preprocessor). Chapter 09 §5 has the tree as a table. The installed
# torch says where each of its kernels was registered from: `torch._C._dispatch_dump`
# names the file of every kernel of an operator, and `minikernel/course/torch_source.py`
# groups them, for every operator the dispatcher knows:

# %%
from minikernel.course import torch_source

origins = torch_source.registration_origins()
print(len(torch._C._dispatch_get_all_op_names()), "operators,", sum(origins.values()), "kernel registrations:")
for origin, count in origins.most_common():
    print(f"{count:7}  {origin}")
print("what is left of TH/THC:", torch_source.legacy_th_names())

# %% [markdown]
# The generated `Register*.cpp` files are made from `native_functions.yaml`: most of
# their kernels wrap one written by hand in `aten/src/ATen/native/` (the entry's
# `dispatch:` names it; `add`'s CPU kernel is the structured `add.out` on
# `TensorIterator`), so the first line is the bulk of ATen's native kernels; the line
# for `aten/src/ATen/native/` counts only the kernels registered there by hand. The
# autograd kernels are generated from `derivatives.yaml`; the Python ones are meta
# functions (`torch/_meta_registrations.py`: shapes and dtypes without data), custom
# ops and primitives. No kernel comes from a TH file, `torch._C` has no name with
# `TH` in it, and the wheel ships no `TH`/`THC` headers: the port the notes describe is
# finished, and the libraries are gone.
#
# ## 32-bit or 64-bit index arithmetic
#
# A kernel reads strided memory through an **accessor**: `t.accessor<float, 2>()` on
# the CPU (`TensorAccessor`), and on the GPU a `PackedTensorAccessor`, which copies
# sizes and strides into the kernel's arguments. Their last template argument is the
# integer type of the index arithmetic: 64 bits unless you ask (the notes warn that this
# default is much slower than 32 bits in CUDA kernels), and PyTorch names both widths. CUDA kernels
# ask `canUse32BitIndexMath` and take 32 bits when the tensor allows it; `TensorIterator`
# splits a bigger problem into pieces that do (`with_32bit_indexing`), and its GPU
# `OffsetCalculator` defaults to `uint32_t`, dividing by the sizes with a
# multiply-and-shift (`IntDivider`) that exists only for 32 bits. From the wheel's headers:

# %%
print("ATen/core/TensorAccessor.h:", *torch_source.header_lines("ATen/core/TensorAccessor.h", r"^using TensorAccessor =", 1),
      sep="\n    ")
for header, pattern in [("ATen/core/TensorAccessor.h", r"^using PackedTensorAccessor(32|64)"),
                        ("ATen/native/CanUse32BitIndexMath.h", r"canUse32BitIndexMath"),
                        ("ATen/TensorIterator.h", r"(can_use|with)_32bit_indexing\(\) const"),
                        ("ATen/cuda/detail/OffsetCalculator.cuh", r"^template <int NARGS, typename index_t = uint32_t, bool"),
                        ("ATen/cuda/detail/IntegerDivider.cuh", r"WARNING: The fast divider")]:
    print(f"{header}:", *torch_source.header_lines(header, pattern), sep="\n    ")

# %% [markdown]
# What does the width cost? `minikernel/kernels/index_width.py` compiles one kernel
# twice: a strided gather (`out[i] = storage[position(i)]`, the copy behind
# `contiguous()`), which splits each linear index into a multi-index by dividing by the
# sizes and then multiplies by the strides — the arithmetic of exercises 1.2 and 2.1.
# One build does it in 64-bit integers (numba's own: it widens every integer
# operation to 64 bits, even on `int32` inputs), the other with 32-bit instructions
# emitted directly. Both must give torch's answer, and the 32-bit one must refuse a
# view whose positions do not fit:

# %%
from minikernel.kernels import index_width

source = torch.arange(60, dtype=torch.float32)
for shape, strides, offset in [((3, 4), (1, 5), 2), ((2, 3, 4), (1, 8, 2), 0), ((4, 0), (1, 4), 0), ((), (), 7)]:
    expected = torch.as_strided(source, shape, strides, offset).contiguous().numpy()
    print(f"{str(shape):10} strides {str(strides):10} offset {offset}: same as torch:",
          all(np.array_equal(index_width.run(w, source.numpy(), shape, strides, offset), expected) for w in (32, 64)))
print("fits 32 bits: 2**31 - 1 elements", index_width.fits_int32((2**31 - 1,), (1,)),
      "| 2**31 elements", index_width.fits_int32((2**31,), (1,)),
      "| 2 x 2**30 at stride 2**30 + 1", index_width.fits_int32((2, 2**30), (2**30 + 1, 1)))
try:
    index_width.run(32, source.numpy(), (2**31,), (1,))
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# Timed on a transposed 1024 × 1024 float32 view (two divisions and two
# multiply-adds per element), one thread, median of 15 after a warm-up; beside the
# times, the integer divisions in each build's compiled code (LLVM IR). The output is
# not compared by the notebook checks: timings and the compiled code depend on the CPU.

# %% tags=["nbval-ignore-output"]
n = 1024
grid = np.random.default_rng(0).random(n * n, dtype=np.float32)
buffer = np.empty(n * n, dtype=np.float32)
ms = {w: median_ms(lambda w=w: index_width.run(w, grid, (n, n), (1, n), 0, out=buffer), warmup=2, repeat=15)
      for w in (32, 64)}
for w in (32, 64):
    print(f"{w}-bit indices: {ms[w]:7.2f} ms  {1e6 * ms[w] / (n * n):5.2f} ns per element  "
          f"divisions in the code: {index_width.instruction_counts(w)}")
print(f"64-bit / 32-bit time: {ms[64] / ms[32]:.2f}")

# %% [markdown]
# On the CPU this section was written on (an AMD EPYC, one thread), the 64-bit build
# took between 1.3 and 2.1 times as long as the 32-bit one over seven runs of this
# measurement on a shared, busy machine (the ratio moved with the load). Of the
# instructions involved, only the divide depends on the width: x86-64 multiplies and
# adds 64-bit integers as fast as 32-bit ones, but its 64-bit divide is slower (stated:
# instruction latency tables such as Agner Fog's). LLVM knows this: the 64-bit build
# above holds 32-bit divisions too, behind a run-time test that both operands fit in 32
# bits (the bypass it inserts for CPUs with a slow 64-bit divide), so even the 64-bit
# build divides in 32 bits here, and pays for the test and the branch around each
# division (the gap was not broken down further). On an NVIDIA GPU the difference is
# larger: its integer units are 32 bits wide, so a 64-bit multiply-add takes several
# instructions and every 64-bit index occupies two registers (fewer threads fit on a
# multiprocessor), and it has no integer divide instruction at all — the compiler emits
# a routine, much longer for 64 bits. That is why PyTorch's CUDA code goes to the
# trouble shown in the headers above. (Stated, not run here: this machine has no GPU.)

# %% [markdown]
# ## Grade chapter 02
#
# Runs the tests of every exercise 2.x against PyTorch: each kernel on raw strided
# headers (hypothesis draws shapes, strides, offsets, broadcasts and layouts) and
# through the Tensor operations, the GPU ones on tiny sizes on the simulator.

# %%
mk.grade("2.*")
