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
# # Chapter 07 — Ring allreduce: how many machines add up one gradient
#
# Data-parallel training runs the same model on several machines (or GPUs, or
# processes), each on its own slice of the batch. After every backward pass each
# one holds *its* gradient; before the optimizer step, all of them need the *sum*
# (or mean) of all gradients. That operation is an **allreduce**, and the way
# PyTorch's backends do it for large tensors is a **ring**.
#
# This chapter first simulates the ring in one process with the numbers of the
# original notes, then runs it for real: several processes talking over
# `torch.distributed` (gloo backend, TCP), checked against `dist.all_reduce`. Then a
# cost model says why the ring wins, and three things built on allreduce —
# SyncBatchNorm, DistributedDataParallel and `torchrun` — are run and checked.
#
# You write four pieces in `minikernel/distributed/`:
#
# | exercise | function | file |
# |---|---|---|
# | 7.1 | `scatter_reduce_step` — one step of the first phase, every rank at once | `simulate.py` |
# | 7.2 | `allgather_step` — one step of the second phase | `simulate.py` |
# | 7.3 | `ring_allreduce_chunks` — the ring in one real process, over `Ring.exchange` | `ring.py` |
# | 7.4 | `ring_cost`, `naive_cost`, `fit_alpha_beta` — the alpha-beta cost model | `cost.py` |
#
# **How each exercise goes.** PyTorch's behaviour first, then your function on the
# same input, then a check. Until you write a function, the cells that need it show
# a short box ("Exercise 7.1 (scatter_reduce_step) is not written yet", where and
# how to grade it); Run All goes on and every other cell runs.
#
# **Real processes.** Cells that say `run_ranks(fn, 4)` fork four processes from this
# kernel; each joins a gloo process group, runs `fn`, and sends its result back (in
# rank order). An error in a rank comes back here as an exception — an unfinished
# exercise as its own `NotImplementedError`. Each wait has a timeout of a few
# seconds, so nothing hangs.
#
# **Stuck?** The references are in `solutions/distributed/`. Start JupyterLab with
# `MINIKERNEL_SOLUTIONS=7.1` (or `7.*`, or `all`) to use them; it is read when
# `minikernel` is imported, so restart the kernel after changing it.
#
# **Grading.** The last cell runs `minikernel.grade("7.*")`; from a terminal,
# `python -m minikernel grade '7.*'`.

# %%
import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

import minikernel as mk
from minikernel import distributed as D
from minikernel.course import notebook_display
from minikernel.distributed import examples as ex
from minikernel.distributed import run_ranks

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__, "| gloo available:", dist.is_gloo_available())

# %% [markdown]
# ## 1. Reduce and allreduce
#
# To **reduce** is to fold many values into one: a sum, a mean, a maximum. An
# **allreduce** reduces across machines and leaves the result on *every* machine.
# The notes' example: four machines hold four numbers each, and each should end
# with the column sums.

# %%
data = D.NOTES_EXAMPLE
for machine, row in enumerate(data, start=1):
    print(f"machine {machine} (rank {machine - 1}): {row}")
print("goal on every machine:", torch.tensor(data).sum(0).tolist())

# %% [markdown]
# The same with real processes. `dist.reduce` sends the result to one rank
# (`dst=0`); `dist.all_reduce` to all. Both work in place. Note what the *other*
# ranks hold after `reduce`: gloo leaves intermediate sums there — PyTorch documents
# those tensors as undefined, so never read them.

# %%
for rank, (reduced, allreduced) in enumerate(run_ranks(ex.reduce_and_allreduce, 4)):
    print(f"rank {rank}: after reduce(dst=0) {reduced}   after all_reduce {allreduced}")

# %% [markdown]
# ## 2. The naive way and the ring
#
# **Naive**: machine 1 receives everybody's numbers, adds them up and sends the
# result back. `simulate_naive` does exactly that in one process and counts, per
# rank, the values sent and received and the additions. The notes' figures: the
# root receives 12 values, sends 12 and adds 12 times; the others send and receive 4.

# %%
naive = D.simulate_naive(data)
for rank, c in enumerate(naive.counters):
    print(f"rank {rank}: sent {c.sent:2}  received {c.received:2}  additions {c.additions:2}")
print("result on every rank:", naive.buffers[0].tolist())

# %% [markdown]
# The root's load grows with the number of machines: with N machines of S values
# it moves `2 (N - 1) S` values while the others wait. The **ring** spreads the work.
# Each rank cuts its buffer into N chunks and talks only to its neighbours: it sends
# to rank `r + 1` and receives from rank `r - 1`, all ranks at the same time.
#
# 1. **Scatter-reduce**, N - 1 steps. In step `s`, rank `r` sends chunk `(r - s) % N`
#    and *adds* the chunk it receives to its own copy. After N - 1 steps, rank `r`
#    owns chunk `(r + 1) % N` fully reduced.
# 2. **Allgather**, N - 1 steps. The finished chunks go round once more; a received
#    chunk *overwrites* the stale copy.
#
# PyTorch has both halves as collectives of their own: `reduce_scatter_single` gives
# rank `r` chunk `r` of the sum, and `all_gather_single` gives every rank everybody's
# piece. (The older names `reduce_scatter_tensor` and `all_gather_into_tensor` are
# deprecated in PyTorch 2.13.)

# %%
for rank, (mine, everything) in enumerate(run_ranks(ex.reduce_scatter_and_all_gather, 4)):
    print(f"rank {rank}: reduce_scatter_single -> {mine}   all_gather_single -> {everything}")

# %% [markdown]
# ## Exercise 7.1 — scatter_reduce_step
#
# Write `scatter_reduce_step(buffers, step, op)` in `minikernel/distributed/simulate.py`:
# one step for all ranks at once, in place. `buffers[r]` is rank `r`'s list of chunk
# tensors. Every rank `r` sends its chunk `(r - step) % N` to rank `(r + 1) % N`, which
# folds it in with `combine_(mine, incoming, op)`. All sends happen at the same
# moment: copy every outgoing chunk before changing any. Return the messages as
# `Send(src, dst, chunk, values)` in rank order.
#
# What it must reproduce, from the notes, machine k being rank k - 1 (`->` sent,
# `<-` received):
#
# ```
# step 1   machine 1: [1, 2, 3, 4] (-> 1) (<- 16) (add)  => [1, 2, 3, 20]
#          machine 2: [5, 6, 7, 8] (-> 6) (<- 1) (add)   => [6, 6, 7, 8]
#          machine 3: [9, 10, 11, 12] (-> 11) (<- 6) (add)  => [9, 16, 11, 12]
#          machine 4: [13, 14, 15, 16] (-> 16) (<- 11) (add)  => [13, 14, 26, 16]
# step 3   ... machine 1 owns 32 (index 1), machine 2 owns 36, machine 3 owns 40, machine 4 owns 28
# ```
#
# Your function, on step 0 of the notes' example:

# %%
buffers = [list(torch.tensor(row).tensor_split(4)) for row in data]
sends = D.scatter_reduce_step(buffers, 0, ReduceOp.SUM)
for s in sends:
    print(f"rank {s.src} -> rank {s.dst}: chunk {s.chunk} = {s.values.tolist()}")
print([torch.cat(b).tolist() for b in buffers])

# %% [markdown]
# `SimulatedRing` runs your step function and records every step in the notes'
# notation. The whole scatter-reduce:

# %%
ring = D.SimulatedRing(data)
for _ in range(3):
    ring.step()
print(ring.table("scatter-reduce"))

# %% [markdown]
# The check: each rank's owned chunk must be that chunk of `torch.stack(rows).sum(0)`,
# and the tables above must be the notes' tables.

# %%
ring = D.SimulatedRing(data)
for _ in range(3):
    ring.step()
full = torch.tensor(data).sum(0)
for r in range(4):
    owned = (r + 1) % 4
    print(f"rank {r} owns chunk {owned}: yours {ring.chunks[r][owned].tolist()}  torch {full[owned:owned + 1].tolist()}")
print("notes' tables reproduced:", [b.tolist() for b in ring.history[0].after] ==
      [[1, 2, 3, 20], [6, 6, 7, 8], [9, 16, 11, 12], [13, 14, 26, 16]] and
      [b.tolist() for b in ring.history[2].after] ==
      [[1, 32, 29, 20], [6, 6, 36, 28], [15, 16, 11, 40], [28, 30, 26, 16]])

# %% [markdown]
# ## Exercise 7.2 — allgather_step
#
# Write `allgather_step(buffers, step)`: rank `r` sends its chunk `(r + 1 - step) % N`
# to rank `(r + 1) % N`, which overwrites its copy (`mine.copy_(incoming)`). The notes:
# "like the first phase, but on receipt no arithmetic, only an overwrite".
#
# Its PyTorch counterpart is `all_gather_single` (above). Your function, from the
# state the scatter-reduce leaves (built here with torch, so it does not need 7.1):

# %%
after_scatter = [[1, 32, 29, 20], [6, 6, 36, 28], [15, 16, 11, 40], [28, 30, 26, 16]]
buffers = [list(torch.tensor(row).tensor_split(4)) for row in after_scatter]
for step in range(3):
    D.allgather_step(buffers, step)
    print(f"after allgather step {step + 1}:", [torch.cat(b).tolist() for b in buffers])

# %% [markdown]
# The whole ring, both phases, and the counts the notes give for it: each rank
# sends 6 values and receives 6, with 3 additions and 3 overwrites — against the
# naive root's 12 received, 12 sent and 12 additions.

# %%
ring = D.SimulatedRing(data)
result = ring.run()
print(ring.table("allgather"))
print("every rank equals torch.stack(rows).sum(0):", all(torch.equal(b, torch.tensor(data).sum(0)) for b in result))
for rank, (c, n) in enumerate(zip(ring.counters, D.simulate_naive(data).counters)):
    print(f"rank {rank}: ring sent {c.sent} received {c.received} additions {c.additions} overwrites "
          f"{c.overwrites}  | naive sent {n.sent:2} received {n.received:2} additions {n.additions:2}")

# %% [markdown]
# **Time.** The notes count the naive method as 24 transfer times (the root receives
# 12 values, then sends 12) plus 12 additions, and the ring as 12 transfer times
# (6 sent + 6 received) plus 3 additions and 3 overwrites. That treats a send and a
# receive as taking turns. Network links are full-duplex: in each ring step a rank
# sends and receives *at once*, so the ring's 6 steps take 6 transfer times, not 12.
# The root of the naive method cannot overlap like that: it must receive everything
# before it can send the result. Section 4 turns this into a cost model.

# %%
ring = D.SimulatedRing(data)
ring.run()
per_step = max(len(s.values) for s in ring.history[0].sends)
print("ring, counted as the notes do:", ring.counters[0].sent + ring.counters[0].received, "transfer times")
print("ring, full-duplex:", len(ring.history) * per_step, "transfer times (", len(ring.history), "steps of",
      per_step, "value )")
print("naive root:", naive.counters[0].received + naive.counters[0].sent, "transfer times")

# %% [markdown]
# The **ring stepper** draws the same run: the ranks on a circle, one colour per
# chunk, darker as a chunk holds more ranks' values, arrows for the step's messages,
# and the counters under each rank. Drag the slider through the scatter-reduce
# (steps 1–3) and the allgather (4–6). It uses your 7.1 and 7.2.

# %% tags=["nbval-ignore-output"]
from widgets import ring_stepper

ring_stepper()

# %% [markdown]
# ## 3. Real processes on torch.distributed
#
# Now every rank is a process with its own memory, and the only way to share is to
# send. `run_ranks(fn, N)` forks N processes; each sets one thread
# (`torch.set_num_threads(1)`, or N ranks on a few cores fight over threads), joins a
# gloo process group through a `FileStore` in a fresh temporary directory, runs `fn`
# and returns its result. Under `torch.distributed` sits **c10d**, PyTorch's C++
# communication layer: the process group classes (gloo here, NCCL on GPUs), the
# key-value stores that ranks meet through, and what DDP and `torchrun` build on.

# %%
for info in run_ranks(ex.who_am_i, 4):
    print(info)

# %% [markdown]
# Three things about gloo that a careful collective has to guard against, each
# checked here in real processes:
#
# * **Strided tensors are reduced wrongly.** `dist.all_reduce` on `base[::2]` reduces
#   the first four elements of *memory* instead of the view's four elements: the
#   view gets partly wrong values, and elements *outside* the view change. No error.
# * **int16 is refused** ("Invalid scalar type").
# * **AVG on integers fails**: the final division cannot write floats into an
#   integer tensor.

# %%
for rank, result in enumerate(run_ranks(ex.gloo_pitfalls, 2)):
    if rank == 0:
        for key, value in result.items():
            print(f"{key}: {value}")
print("correct sum of the view:", (torch.arange(8.0)[::2] * 2).tolist())

# %% [markdown]
# And the deadlock: if every rank first calls the *blocking* `dist.send`, each waits
# for a receiver that is itself stuck sending. With a 2 s timeout it ends in an
# error instead of forever. This is why the ring posts the send and the receive
# together (`dist.isend` + `dist.irecv`, then waits for both): `Ring.exchange`.

# %%
ends = run_ranks(ex.blocking_send_first, 2, timeout=2)  # each: "timed out", or "peer gone" if the other gave up first
print("deadlocked until the timeout:", "timed out" in ends and "no deadlock" not in ends)

# %% [markdown]
# ## Exercise 7.3 — ring_allreduce_chunks
#
# `ring_allreduce(tensor, op=ReduceOp.SUM, group=None)` in `minikernel/distributed/ring.py`
# is a drop-in for `dist.all_reduce`. The careful parts are written: it first
# exchanges (length, dtype, op) with every rank, so a mismatch raises the same clear
# error everywhere before anything is sent; it works on a flat contiguous copy of a
# strided tensor and writes the result back; AVG travels as SUM and divides once.
# The ring itself is yours:
#
# `ring_allreduce_chunks(chunks, op, ring)` gets this rank's buffer cut into N
# chunks and a `Ring` (`ring.rank`, `ring.world_size`, `ring.exchange(send, recv)`).
# Run the schedule of 7.1 and 7.2 from one rank's point of view: in scatter-reduce
# step `s` send chunk `(r - s) % N`, receive chunk `(r - s - 1) % N` into a scratch
# tensor and `combine_` it in; in allgather step `s` send chunk `(r + 1 - s) % N` and
# receive chunk `(r - s) % N` straight into place.
#
# PyTorch's answer, in four processes:

# %%
for rank, result in enumerate(run_ranks(ex.all_reduce_ops, 4)):
    print(f"rank {rank}: {result}")

# %% [markdown]
# Yours:

# %%
for rank, result in enumerate(run_ranks(ex.ring_ops, 4)):
    print(f"rank {rank}: {result}")

# %% [markdown]
# The check: many lengths (fewer elements than ranks too), dtypes and ops, for 1 to
# 4 ranks, each compared with `dist.all_reduce` on the same input (exactly for
# integers, `allclose` for floats: the ring adds in a different order).

# %%
cases = [(n, dtype, op) for n in (0, 1, 3, 5, 64, 1001) for dtype, op in
         (("float32", "SUM"), ("float64", "AVG"), ("int64", "SUM"), ("int32", "MAX"), ("float16", "MIN"))]
for world in (1, 2, 3, 4):
    agree = run_ranks(ex.compare_with_all_reduce, world, cases)
    print(f"world {world}: {sum(map(sum, agree))} of {len(cases) * world} (rank, case) pairs equal dist.all_reduce")

# %% [markdown]
# The strided view that gloo got wrong, through your ring: the view is reduced, the
# rest of its base is untouched.

# %%
view, base = run_ranks(ex.ring_on_strided, 2)[0]
print("view:", view, " base:", base)

# %% [markdown]
# How much each rank sent and received: `2 (N - 1) / N` of the buffer, here 4 ranks
# and 1000 elements — 1500 each way, against the naive root's 3000.

# %%
for rank, (sent, received) in enumerate(run_ranks(ex.ring_traffic, 4, 1000)):
    print(f"rank {rank}: sent {sent}, received {received}")

# %% [markdown]
# **Failures are errors, not hangs.** Every wait has the timeout given to
# `init_process_group` (here `run_ranks`' 2 s). Ranks passing different lengths:
# every rank raises the same `MismatchError` before anything is sent.

# %%
for rank, outcome in enumerate(run_ranks(ex.mismatched_lengths, 3, timeout=2)):
    print(f"rank {rank}: {outcome}")

# %% [markdown]
# A rank that dies: the others raise `CollectiveError` within the timeout.
# (`launch` returns every rank's outcome instead of raising.)

# %%
for o in D.launch(ex.one_rank_dies, 3, timeout=2):
    print(f"rank {o.rank}:", o.value if o.ok else f"{type(o.error).__name__}: {o.error}")

# %% [markdown]
# A rank that never joins: the others name it.

# %%
for o in D.launch(ex.who_am_i, 3, timeout=2, absent={2}):
    print(f"rank {o.rank}:", o.value if o.ok else f"{type(o.error).__name__}: {o.error}")

# %% [markdown]
# ## 4. The cost model
#
# ## Exercise 7.4 — ring_cost
#
# The **alpha-beta model** prices a message of `n` bytes at `alpha + beta · n`:
# `alpha` is the latency every message pays, `beta` the time per byte. For N ranks
# of S bytes, on full-duplex links:
#
# * ring: `2 (N - 1)` steps of one `S / N` chunk each way, so each rank sends
#   `2 (N - 1) / N · S` bytes in `2 (N - 1) (alpha + S / N · beta)` seconds;
# * naive: the root receives `N - 1` buffers, then sends `N - 1`:
#   `(N - 1) · S` bytes each way, `2 (N - 1) (alpha + S · beta)` seconds.
#
# Write `ring_cost`, `naive_cost` (returning `Cost(messages, nbytes, seconds)` for the
# busiest rank) and `fit_alpha_beta` (a least-squares line through measured times)
# in `minikernel/distributed/cost.py`. First the notes' numbers, counted in values
# (`beta = 1` per value, no latency):

# %%
print("ring :", D.ring_cost(4, 4, alpha=0.0, beta=1.0))
print("naive:", D.naive_cost(4, 4, alpha=0.0, beta=1.0))

# %% [markdown]
# Per-rank traffic as the world grows, for 100 MB per rank: the ring's stays under
# 200 MB, the naive root's grows without bound.

# %%
for n in (2, 4, 8, 16, 64):
    ring_mb, naive_mb = D.ring_cost(n, 100e6, 0, 0).nbytes / 1e6, D.naive_cost(n, 100e6, 0, 0).nbytes / 1e6
    print(f"N = {n:2}: ring {ring_mb:6.1f} MB per rank, naive root {naive_mb:6.0f} MB")

# %% [markdown]
# The check against PyTorch: `fit_alpha_beta` must draw the same line as
# `torch.linalg.lstsq` on the same points.

# %%
sizes = [1e3, 1e5, 1e6, 4e6]
seconds = [3.1e-5, 1.2e-4, 9.8e-4, 3.9e-3]
A = torch.stack([torch.ones(4, dtype=torch.float64), torch.tensor(sizes, dtype=torch.float64)], 1)
lstsq = torch.linalg.lstsq(A, torch.tensor(seconds, dtype=torch.float64)[:, None]).solution.flatten().tolist()
alpha, beta = D.fit_alpha_beta(sizes, seconds)
print(f"yours: alpha {alpha:.4e} s, beta {beta:.4e} s/B   torch.linalg.lstsq: alpha {lstsq[0]:.4e}, beta {lstsq[1]:.4e}")

# %% [markdown]
# **Predicted vs measured.** Measure one-way message times between two ranks
# (half a ping-pong round trip) for several sizes, fit alpha and beta, predict the
# ring and the naive allreduce, and time them (plus `dist.all_reduce`) for 2 and 4
# ranks. Timings vary from run to run, so this cell's output is not compared. On a
# machine with fewer cores than ranks the processes take turns on the CPU and the
# model, which assumes every rank runs all the time, is optimistic; it also leaves
# out the additions (a third term, `gamma` per byte reduced).

# %% tags=["nbval-ignore-output"]
import matplotlib.pyplot as plt

from minikernel.course.bench import allreduce as bench

probe = [1 << k for k in range(8, 23, 2)]  # float32 elements
one_way = run_ranks(ex.ping_pong, 2, probe)[0]
alpha, beta = D.fit_alpha_beta([4 * n for n in probe], one_way)
print(f"fitted: alpha = {alpha * 1e6:.1f} µs, 1/beta = {1 / beta / 1e9:.2f} GB/s")
sizes = {f"{n}": n for n in (1 << 12, 1 << 16, 1 << 19, 1 << 21, 1 << 22)}
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, world in zip(axes, (2, 4)):
    rows = bench.measure(worlds=(world,), sizes=sizes, warmup=1, repeat=5)
    for method, colour in (("ring", "C0"), ("naive", "C1"), ("dist.all_reduce", "C2")):
        mine = [r for r in rows if r.method == method]
        _ = ax.loglog([4 * r.elements for r in mine], [r.ms for r in mine], "o-", color=colour, label=f"{method} measured")
    nbytes = [4 * n for n in sizes.values()]
    _ = ax.loglog(nbytes, [D.ring_cost(world, b, alpha, beta).seconds * 1e3 for b in nbytes], "--", color="C0",
                  label="ring predicted")
    _ = ax.loglog(nbytes, [D.naive_cost(world, b, alpha, beta).seconds * 1e3 for b in nbytes], "--", color="C1",
                  label="naive predicted")
    _ = ax.set(title=f"{world} ranks", xlabel="bytes per rank", ylabel="ms")
    _ = ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 5. SyncBatchNorm: global statistics from one allreduce
#
# With the batch split across ranks, each rank's BatchNorm would normalise with its
# own slice's mean and variance. SyncBatchNorm uses the whole batch's. Per channel,
# three numbers add up across ranks: the sum `Σx`, the sum of squares `Σx²` and the
# count `n`. One allreduce of `[Σx, Σx², n]` gives every rank `mean = Σx / n` and
# `var = Σx² / n - mean²`. (PyTorch's own SyncBatchNorm gathers per-rank means and
# inverse standard deviations instead, which loses less precision when the mean is
# large.)
#
# `torch.nn.SyncBatchNorm` only synchronises on GPUs. Outside a process group it
# quietly acts as a plain BatchNorm; inside one, on CPU tensors, it refuses:

# %%
print("no process group:", torch.nn.SyncBatchNorm(3)(torch.randn(4, 3)).shape)
print("in a rank:", run_ranks(ex.sync_batchnorm_module, 2)[0])

# %% [markdown]
# So on CPU, `minikernel.distributed.syncbn.sync_batch_norm` does it, in 2 ranks, and
# the result is checked against `F.batch_norm` on the concatenated batch (output and
# running statistics):

# %%
from minikernel.distributed.syncbn import batch_norm_reference, sync_bn_rank

full = torch.randn(10, 3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 2 + 5
per_rank = run_ranks(sync_bn_rank, 2, full)
out, running_mean, running_var = batch_norm_reference(full, channels=3)
print("output equals BatchNorm on the whole batch:", torch.allclose(torch.cat([y for y, _, _ in per_rank]), out))
print("running stats equal on every rank:", all(torch.allclose(m, running_mean) and torch.allclose(v, running_var)
                                                for _, m, v in per_rank))
local = torch.nn.functional.batch_norm(full[:5], None, None, training=True)
print("plain BatchNorm on rank 0's slice alone would differ:", not torch.allclose(local, out[:5]))

# %% [markdown]
# The same with your ring doing the one allreduce:

# %%
per_rank = run_ranks(sync_bn_rank, 2, full, D.ring_allreduce)
print("through ring_allreduce:", torch.allclose(torch.cat([y for y, _, _ in per_rank]), out))

# %% [markdown]
# ## 6. DistributedDataParallel: the same parameters as one process
#
# `torch.nn.DataParallel` is one process with one thread per GPU, on one machine: it
# splits each batch along `dim=0` across the GPUs and gathers the outputs on the
# first. Wrapping is one line; on a machine without GPUs it has no devices and
# simply calls the module:

# %%
from minikernel.distributed.ddp import ToyModel

dp = torch.nn.DataParallel(ToyModel())
print("device_ids:", dp.device_ids, "| output shape for a batch of 30:", tuple(dp(torch.randn(30, 10)).shape))

# %% [markdown]
# `DistributedDataParallel` (DDP) is one process per model replica, on one machine or
# many, and PyTorch recommends it even on one machine. Each DDP rank computes the
# gradient of its slice of the batch; during `backward()` DDP allreduces the
# gradients (in buckets, overlapped with the backward pass) and divides by the world
# size. With equal slices and a mean loss, every rank then steps with the gradient
# of the full batch.
#
# The notes (from PyTorch's DDP tutorial) say to seed every process the same so all
# replicas start equal. Current DDP broadcasts rank 0's parameters when it wraps the
# model, so here rank 1 deliberately builds its model from another seed. Train the
# tutorial's toy model for 5 SGD steps in 2 ranks, and in this process on the whole
# batch:

# %%
from minikernel.distributed.ddp import train_ddp_rank, train_single

ddp = run_ranks(train_ddp_rank, 2, 5, timeout=20)
single = train_single(5)
for rank, result in enumerate(ddp):
    same = all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(result["params"], single))
    print(f"rank {rank}: equal to rank 0 before DDP wrapped it: {result['same_before_wrap']}, after: "
          f"{result['same_after_wrap']}; after 5 steps equal to single-process training: {same}")

# %% [markdown]
# ## 7. torchrun: the same code on one machine or many
#
# `run_ranks` forks processes from this notebook. In real jobs a launcher starts one
# process per GPU or core, on every machine: `torchrun`. It sets, in each process,
#
# * `RANK` — its rank in the whole job, `0 .. WORLD_SIZE - 1`;
# * `WORLD_SIZE` — the number of processes in the job (nodes × processes per node);
# * `LOCAL_RANK` — its rank on its own machine (which GPU to take);
# * `MASTER_ADDR`, `MASTER_PORT` — the rendezvous point, so that
#   `dist.init_process_group("gloo")` needs no other argument.
#
# The notes launch with `python -m torch.distributed.launch --nproc_per_node=8 ...`,
# which passed `--local_rank` to the script. That launcher is deprecated:

# %%
import subprocess
import sys

proc = subprocess.run([sys.executable, "-m", "torch.distributed.launch", "--help"], capture_output=True, text=True)
print(next(line.split("FutureWarning: ")[1] for line in proc.stderr.splitlines() if "FutureWarning" in line))

# %% [markdown]
# `minikernel.distributed.demo` is a module written for torchrun: each rank builds its
# row of the notes' example, reduces it with your ring and with the naive method,
# and compares both with `dist.all_reduce`. Here is
# `torchrun --standalone --nproc-per-node 4 -m minikernel.distributed.demo`
# (`torchrun` is the script of `python -m torch.distributed.run`):

# %%
from minikernel.distributed.demo import run_torchrun

print(run_torchrun(4))

# %% [markdown]
# On several machines, run the same command on each, with the number of nodes and
# one shared rendezvous endpoint (any reachable host and free port):
#
# ```bash
# torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d \
#          --rdzv-endpoint node0.example.org:29400 --rdzv-id ring-demo \
#          -m minikernel.distributed.demo
# ```
#
# The transport stays PyTorch's (gloo over TCP); with several network interfaces,
# set `GLOO_SOCKET_IFNAME` to the one the machines share.
#
# ## Grade
#
# `python -m minikernel bench --allreduce` times the ring, the naive method and
# `dist.all_reduce` for 2 and 4 ranks and 1K, 1M and 16M floats (see the README for a
# measured table). To finish, the grader runs every chapter 07 test:

# %%
mk.grade("7.*")
