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
# # Chapter 05 — LayerNorm and std/var: derivations, stable statistics, CPU and GPU kernels
#
# Every normalization layer computes a mean and a variance, and every one of them
# has to decide *which* variance (divide by $n$ or by $n-1$?), *over which elements*
# (BatchNorm, LayerNorm and InstanceNorm differ only there), and *how* (two passes,
# or one pass that can lose every digit). This chapter derives each formula, checks
# each step against PyTorch, and then has you write the statistics and the LayerNorm
# kernels — forward and backward, on the CPU and the GPU.
#
# **Where you work.** `minikernel/norm/stats.py` (5.1, two-pass variance),
# `minikernel/norm/online.py` (5.2 Welford's update, 5.3 Chan's merge),
# `minikernel/norm/cpu.py` (5.4, 5.5: LayerNorm forward and backward with numba) and
# `minikernel/norm/gpu.py` (5.6, 5.7: the same with numba CUDA). Each stub's docstring
# states the math and the PyTorch call it must match. The host side — argument
# checks with PyTorch's messages, the 2-D view, output allocation, device dispatch —
# is complete code in `minikernel/norm/native.py`.
#
# **How each exercise goes**, as in the earlier chapters: PyTorch first, then your
# function on the same input, then a check cell. Until you write a function, the
# cells that need it show a short box ("Exercise 5.1 (two_pass_var) is not written
# yet", where and how to grade it) and Run All goes on. **Stuck?** `MINIKERNEL_SOLUTIONS=5.1 make lab` (or `5.*`, or
# `all`) switches on a reference; restart the kernel after changing it. **Grading:**
# the last cell, or `make grade ARGS="'5.*'"`.

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
import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F

import minikernel as mk
from minikernel import Tensor
from minikernel.course import notebook_display
from minikernel.norm import native_layer_norm, native_layer_norm_backward, online, std, var, var_mean

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__, "| minikernel's cuda device usable:", mk.device.is_available())

# %% [markdown]
# ## 1. Mean and variance
#
# For values $x_1, \dots, x_n$:
#
# $$\bar x = \frac{1}{n}\sum_{i=1}^{n} x_i, \qquad
#   \sigma^2_{\text{biased}} = \frac{1}{n}\sum_{i=1}^{n} (x_i - \bar x)^2, \qquad
#   s^2 = \frac{1}{n-1}\sum_{i=1}^{n} (x_i - \bar x)^2 .$$
#
# The first is the variance *of these $n$ numbers* (a "population" variance); the
# second, with Bessel's correction, is the usual *estimate* of the variance of the
# distribution they were drawn from. On the classic eight values (mean 5, squared
# deviations summing to 32):

# %%
x8 = torch.tensor([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
squares = ((x8 - x8.mean()) ** 2).sum()
print("mean", x8.mean().item(), "| sum of squared deviations", squares.item())
print("divided by n   :", (squares / 8).item(), "= torch.var(x, correction=0):", x8.var(correction=0).item())
print("divided by n-1 :", round((squares / 7).item(), 6), "= torch.var(x):", round(x8.var().item(), 6))

# %% [markdown]
# ## 2. Why $n - 1$: Bessel's correction
#
# Let the $x_i$ be independent with mean $\mu$ and variance $\sigma^2$. Expand around
# the true mean (the cross term vanishes because $\sum_i (x_i - \bar x) = 0$):
#
# $$\sum_i (x_i - \bar x)^2 = \sum_i (x_i - \mu)^2 - n(\bar x - \mu)^2 .$$
#
# Take expectations: $\mathbb{E}\sum_i (x_i-\mu)^2 = n\sigma^2$, and
# $\mathbb{E}(\bar x-\mu)^2 = \operatorname{Var}(\bar x) = \sigma^2/n$, so
#
# $$\mathbb{E}\sum_i (x_i - \bar x)^2 = n\sigma^2 - \sigma^2 = (n-1)\,\sigma^2 .$$
#
# Deviations from the *sample's own* mean are smaller than from the true mean (the
# sample mean sits in the middle of the sample): dividing by $n$ underestimates
# $\sigma^2$ by the factor $(n-1)/n$; dividing by $n-1$ removes the bias. First the
# identity, on one sample with a known $\mu$:

# %%
g = torch.Generator().manual_seed(1)
mu, sigma = 3.0, 2.0
sample = mu + sigma * torch.randn(6, generator=g, dtype=torch.float64)
left = ((sample - sample.mean()) ** 2).sum()
right = ((sample - mu) ** 2).sum() - 6 * (sample.mean() - mu) ** 2
print("sum (x - xbar)^2 =", round(left.item(), 10), "| sum (x - mu)^2 - n (xbar - mu)^2 =", round(right.item(), 10))

# %% [markdown]
# Then the expectations, by simulation: 200 000 samples of $n = 5$ values from
# $\mathcal{N}(0, \sigma^2 = 4)$. The biased estimator averages $4 \cdot 4/5 = 3.2$,
# the corrected one $4$; and $\operatorname{Var}(\bar x) = \sigma^2/n = 0.8$. (The
# square root of an unbiased variance is still a biased standard deviation — by
# Jensen's inequality $\mathbb{E}\,s < \sigma$ — which is why the last number is below 2.)

# %%
g = torch.Generator().manual_seed(2)
draws = sigma * torch.randn(200_000, 5, generator=g, dtype=torch.float64)
print("E[var, correction=0] ~", round(draws.var(1, correction=0).mean().item(), 2), " (n-1)/n sigma^2 =", 4 * 4 / 5)
print("E[var, correction=1] ~", round(draws.var(1).mean().item(), 2), " sigma^2 =", sigma**2)
print("Var(xbar)            ~", round(draws.mean(1).var().item(), 2), " sigma^2 / n =", sigma**2 / 5)
print("E[std, correction=1] ~", round(draws.std(1).mean().item(), 2), " < sigma =", sigma)

# %% [markdown]
# ## 3. PyTorch's `correction` argument and its defaults
#
# `torch.var` and `torch.std` divide by $\max(0,\ n - \text{correction})$.
# **`correction=1` is the default** (unbiased, as the notes say); `correction=0` is
# the biased variance; any number is allowed. The older spelling `unbiased=True/False`
# still works and means `correction=1/0`. (`correction` came in 2021, pytorch/pytorch
# PR #50903, as extra overloads; the documented signature became `correction` in 2.0,
# as the `versionchanged:: 2.0` note in torch's docstrings says.)
# `n` is the number of elements each result summarizes, so reducing several
# dimensions multiplies their sizes.

# %%
x34 = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 8.0, 16.0], [0.0, 0.0, 1.0, 1.0]])
print("default       :", x34.var(1))
print("correction=0  :", x34.var(1, correction=0))
print("unbiased=False:", torch.var(x34, 1, unbiased=False), "(the legacy spelling)")
print("correction=2  :", x34.var(1, correction=2))
print("over dims (0, 1), keepdim:", x34.var((0, 1), keepdim=True), "| n =", x34.numel())
print("var_mean      :", torch.var_mean(x34, 1, correction=0))

# %% [markdown]
# With nothing left to divide by — one element and `correction=1`, or a correction
# as large as $n$ — the divisor is clamped to 0: `nan` (0/0) or `inf`, with a warning:

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print(torch.tensor([3.0]).std(), torch.tensor([1.0, 2.0]).var(correction=2))
for w in caught:
    print("UserWarning:", str(w.message).split(" (Triggered")[0])

# %% [markdown]
# **LayerNorm uses the biased variance** (`correction=0`), although `torch.var`
# defaults to the unbiased one: the notes' manual version rescales `x.var()` by
# $(C-1)/C$. The same holds for BatchNorm's normalization — but BatchNorm's
# *running* variance, the estimate kept for inference, is updated with the
# unbiased one (shown with `momentum=1.0`, so the running value is the last batch's):

# %%
B, C = 3, 4
xl, wl, bl = torch.rand(B, C), torch.rand(C), torch.rand(C)
out1 = F.layer_norm(xl, (C,), wl, bl, eps=1e-5)
mean, var_unbiased = xl.mean(dim=1, keepdim=True), xl.var(dim=1, keepdim=True)
out2 = (xl - mean) / torch.sqrt(var_unbiased * (C - 1) / C + 1e-5) * wl + bl
print("layer_norm == (x - mean) / sqrt(var * (C-1)/C + eps) * w + b:", torch.allclose(out1, out2, atol=1e-6))
bn = torch.nn.BatchNorm1d(3, momentum=1.0)
xb = torch.randn(4, 3, 5)
yb = bn(xb)
print("BatchNorm normalizes with correction=0:",
      torch.allclose(yb, (xb - xb.mean((0, 2), keepdim=True)) / torch.sqrt(xb.var((0, 2), keepdim=True, correction=0) + 1e-5), atol=1e-6))
print("running_var is the unbiased variance:  ", torch.allclose(bn.running_var, xb.var((0, 2))))

# %% [markdown]
# ## Exercise 5.1 — two_pass_var
#
# The two-pass algorithm is the definition read literally: pass 1 computes the
# mean, pass 2 sums squared deviations *from that mean* and divides by
# $\max(0, n - \text{correction})$. Deviations are small numbers, so nothing large
# is subtracted from anything large (section 4 shows why that matters).
# `minikernel.norm.var` (and `std`, `var_mean`, `std_mean`) does PyTorch's argument
# handling — `dim` as an int, a list or None, negative dims, `keepdim`, the legacy
# `unbiased` form, the warning — and calls your `two_pass_var(x, dims, correction,
# keepdim)` on a numpy array. PyTorch:

# %%
x3 = torch.randn(2, 3, 4, dtype=torch.float64)
print(torch.var(x3, (0, 2), correction=0, keepdim=True).flatten())

# %% [markdown]
# Yours, on the same tensor:

# %%
var(Tensor.from_torch(x3), (0, 2), correction=0, keepdim=True)

# %%
m3 = Tensor.from_torch(x3)
for dim, kwargs in [(None, {}), (1, {}), ((0, 2), {"correction": 0, "keepdim": True}), (-1, {"correction": 2}),
                    ([2, -3], {"correction": 0.5}), (None, {"unbiased": False})]:
    mine, theirs = var(m3, dim, **kwargs), torch.var(x3, dim, **kwargs)
    same = mine.shape == tuple(theirs.shape) and torch.allclose(mine.to_torch(), theirs)
    print(f"var(x, {str(dim):7}, {str(kwargs):31}) shape {str(mine.shape):10} {'ok' if same else 'DIFFERENT'}")
print("std  :", "ok" if torch.allclose(std(m3, 1).to_torch(), x3.std(1)) else "DIFFERENT")
v, m = var_mean(m3, -1, correction=0)
tv, tm = torch.var_mean(x3, -1, correction=0)
print("var_mean:", "ok" if torch.allclose(v.to_torch(), tv) and torch.allclose(m.to_torch(), tm) else "DIFFERENT")

# %% [markdown]
# ## 4. One pass, and catastrophic cancellation
#
# Expanding the square gives a formula that needs only two running sums — one pass
# over the data, and sums that simply add up across parts (which is why the notes'
# SyncBN section uses it):
#
# $$\sum_i (x_i - \bar x)^2 = \sum_i x_i^2 - 2\bar x \sum_i x_i + n\bar x^2
#   = \sum_i x_i^2 - \frac{\left(\sum_i x_i\right)^2}{n},
#   \qquad \sigma^2 = \overline{x^2} - \bar x^{\,2}.$$
#
# Exact in real numbers, dangerous in floating point: both terms are about
# $n\bar x^2$, and when $|\bar x| \gg \sigma$ their difference is smaller than the
# rounding error of either. Take float32 data with mean $10^4$ and standard
# deviation $10^{-2}$ (variance $10^{-4}$): $\overline{x^2} \approx 10^8$, and
# float32 numbers near $10^8$ are 8 apart.

# %%
g = torch.Generator().manual_seed(0)
drift = (1e4 + 1e-2 * torch.randn(10_000, generator=g, dtype=torch.float64)).float()
values = drift.numpy()
truth = values.astype(np.float64).var(ddof=1)  # the variance of these float32 values, computed in float64
print("spacing of float32 numbers near 1e8:", np.spacing(np.float32(1e8)))
print("true variance ~", f"{truth:.4g}")
naive = float(online.one_pass_var(values))
print("one pass, float32: off by 100% or more:", abs(naive - truth) >= truth)
print("one pass, float64: relative error < 1e-3:", abs(online.one_pass_var(values.astype(np.float64)) - truth) < 1e-3 * truth)
print("two passes (torch.var, float32): relative error < 1e-3:", abs(drift.var().item() - truth) < 1e-3 * truth)

# %% [markdown]
# The one-pass result is garbage: its digits are the rounding errors of two sums
# near $10^8$ (which ones depends on the order of the additions), and it can come
# out negative — a variance below zero. float64 survives this example only because
# it has 29 more bits to lose.

# %% [markdown]
# ## Exercise 5.2 — welford_update
#
# Welford's online algorithm keeps one pass *and* stability. Its state is the
# triple $(n, \bar x_n, M_{2,n})$ with $M_{2,n} = \sum_{i\le n} (x_i - \bar x_n)^2$;
# a new value updates it with deviations only:
#
# $$n' = n + 1, \quad \delta = x - \bar x_n, \quad
#   \bar x_{n'} = \bar x_n + \frac{\delta}{n'}, \quad
#   M_{2,n'} = M_{2,n} + \delta\,(x - \bar x_{n'}) .$$
#
# (The last line follows from section 2's identity with $\bar x_n$ in the role of
# $\mu$: adding $x$ raises $M_2$ by $\frac{n}{n+1}\delta^2$, and
# $\delta (x - \bar x_{n'}) = \delta \cdot \frac{n}{n+1}\delta$.) The variance is
# $M_2 / (n - \text{correction})$. PyTorch has no Python-level Welford, so its
# two-pass `var` is the oracle:

# %%
print("torch:", x8.var().item(), "| count 8, mean", x8.mean().item(), ", M2 =", (x8.var(correction=0) * 8).item())

# %% [markdown]
# Yours — `online.welford` streams the values through your `welford_update`,
# accumulating in the values' dtype:

# %%
online.welford(x8.numpy())

# %%
count, mean8, m2 = online.welford(x8.numpy())
print("count", count, "mean", mean8, "M2", m2, "| var", m2 / (count - 1), "vs torch", x8.var().item())
welford32 = float(online.welford_var(values))  # the drifting float32 data of section 4, float32 accumulators
print("Welford, float32 accumulators: relative error", f"{abs(welford32 - truth) / truth:.1%}",
      "| one pass was off by 100% or more:", abs(naive - truth) >= truth)

# %% [markdown]
# A few percent in float32 — and the remaining error is not cancellation but the
# running mean itself: near $10^4$ float32 numbers are $\approx 10^{-3}$ apart, a
# tenth of the data's standard deviation, so every $\delta/n'$ added to the mean is
# rounded. Two passes over the data (5.1) are the most accurate when the data can be
# read twice; Welford is for when it cannot (streams, and one-pass GPU kernels).

# %% [markdown]
# ## Exercise 5.3 — welford_merge
#
# Parallel code computes triples on separate parts and must combine them — threads
# of a GPU block, or the ranks of a SyncBatchNorm. With $\delta = \bar x_b - \bar x_a$
# and $n = n_a + n_b$ (Chan, Golub & LeVeque):
#
# $$\bar x = \bar x_a + \delta\,\frac{n_b}{n}, \qquad
#   M_2 = M_{2,a} + M_{2,b} + \delta^2\,\frac{n_a n_b}{n} .$$
#
# Again section 2's identity: each part's sum of squares about the *overall* mean
# is its own $M_2$ plus $n_a(\bar x_a - \bar x)^2$, and the two such terms add up to
# $\delta^2 n_a n_b / n$. The merge with a single value ($n_b = 1$, $M_{2,b} = 0$) is
# exactly Welford's update. PyTorch's answer for two parts put together:

# %%
part_a, part_b = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64), torch.tensor([10.0, 11.0], dtype=torch.float64)
whole = torch.cat([part_a, part_b])
print("torch on the concatenation: mean", whole.mean().item(), "M2", (whole.var(correction=0) * 5).item())

# %%
triple_a = (3.0, part_a.mean().item(), (part_a.var(correction=0) * 3).item())
triple_b = (2.0, part_b.mean().item(), (part_b.var(correction=0) * 2).item())
online.welford_merge(*triple_a, *triple_b)

# %%
merged = online.welford_merge(*triple_a, *triple_b)
print("merge of the parts' triples:", "ok" if np.allclose(merged, (5.0, whole.mean().item(),
                                                                   (whole.var(correction=0) * 5).item())) else "DIFFERENT")
for chunks in (2, 16, 100):  # stream each chunk, then merge: what parallel threads would do
    parallel = float(online.welford_var(values, chunks=chunks))
    print(f"{chunks:3} chunks, float32: relative error {abs(parallel - truth) / truth:.1%}")

# %% [markdown]
# Each merge's $\delta$ is a difference of two float32 means near $10^4$, rounded
# like them, and each chunk's running mean is rounded as in 5.2: the error stays at a
# few percent whatever the number of chunks (it does not simply grow with it: 2 chunks
# beat the single stream's 3.0% here), against the one-pass formula's total loss.

# %% [markdown]
# ## 5. SyncBatchNorm: global statistics from every rank
#
# With the batch split across GPUs, BatchNorm on each GPU sees only its own slice;
# SyncBatchNorm normalizes with the statistics of the *whole* batch. The notes'
# recipe needs one allreduce: each rank contributes, per channel, $\sum x$,
# $\sum x^2$ and its count; summed over ranks,
# $\bar x = \sum\sum x / \sum n$ and $\sigma^2 = \sum\sum x^2/\sum n - \bar x^2$ —
# section 4's one-pass formula. Four "ranks" holding slices of one batch, per channel:

# %%
batch = torch.randn(8, 3, 5, dtype=torch.float64)
ranks = batch.split([1, 2, 2, 3])  # uneven slices: the counts matter
per_rank = [(r.sum((0, 2)), (r * r).sum((0, 2)), torch.full((3,), r.numel() / 3, dtype=torch.float64)) for r in ranks]
sums, sumsqs, counts = (torch.stack(t) for t in zip(*per_rank))  # what one SUM allreduce adds up
gmean, gvar = online.stats_from_sums(sums.numpy(), sumsqs.numpy(), counts.numpy())  # (channel 0 .. 2 at once)
tvar, tmean = torch.var_mean(batch, (0, 2), correction=0)
print("global mean:", "ok" if np.allclose(gmean, tmean.numpy()) else "DIFFERENT",
      "| global var:", "ok" if np.allclose(gvar, tvar.numpy()) else "DIFFERENT")

# %% [markdown]
# Fine for centred float64 data — and exactly as fragile as section 4 otherwise. The
# same four ranks with float32 activations of mean $10^4$ and std $10^{-2}$, one channel:

# %%
shifted = (1e4 + 1e-2 * batch[:, 0]).float()
slices = shifted.split([1, 2, 2, 3])
truth0 = shifted.double().var(correction=0).item()
f32 = np.float32
_, sums_var = online.stats_from_sums([s.sum().numpy() for s in slices], [(s * s).sum().numpy() for s in slices],
                                     [f32(s.numel()) for s in slices])
print("from (sum, sum of squares, count) in float32: relative error > 100%:", abs(float(sums_var) - truth0) > truth0)

# %% [markdown]
# Per-rank Welford triples merged with your 5.3 keep the digits (each rank's
# triple here comes from torch's two-pass statistics of its slice):

# %%
triples = [(f32(s.numel()), s.mean().numpy(), (s.var(correction=0) * s.numel()).numpy()) for s in slices]
_, merged_var = online.stats_from_triples(*zip(*triples))
print("from (count, mean, M2) merged in float32: relative error", f"{abs(float(merged_var) - truth0) / truth0:.1%}")

# %% [markdown]
# **What current PyTorch does.** Its `SyncBatchNorm` (in
# `torch/nn/modules/_functions.py`) does not allreduce sums of squares: each rank
# computes its mean and inverse std (`torch.batch_norm_stats`), the ranks
# *all_gather* (mean, invstd, count), and `torch.batch_norm_gather_stats_with_counts`
# merges them — a parallel-Welford combination. The backward allreduces two sums per
# channel, $\sum dy$ and $\sum dy\,(x-\bar x)$, the terms of section 7's formula.
# The lines, from the installed PyTorch:

# %%
import inspect

from torch.nn.modules import _functions

source = inspect.getsource(_functions.SyncBatchNorm).splitlines()
keys = ("def forward", "torch.batch_norm_stats(", "dist.all_gather(", "batch_norm_gather_stats_with_counts(",
        "def backward", "torch.batch_norm_backward_reduce(", "torch.distributed.all_reduce(")
for line in source:
    if any(k in line for k in keys):
        print(line.strip())

# %% [markdown]
# Those kernels exist only for CUDA — this course's PyTorch is a CPU build, so
# chapter 07 runs SyncBatchNorm's statistics over real processes (gloo) with the
# sums formula in float64 instead:

# %%
try:
    torch.batch_norm_stats(torch.randn(4, 3), 1e-5)
except NotImplementedError as err:
    print("NotImplementedError:", str(err).splitlines()[0][:78], "...")

# %% [markdown]
# **Converting a model.** `torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)`
# replaces every `BatchNorm*d` of a model (recursively) by a `SyncBatchNorm` carrying
# the same parameters and running statistics — done before wrapping the model in
# DDP. (The notes' `convertBNtoSyncBN` from another blog is not valid Python; this
# is the function to call.) Outside a process group, in eval mode, it computes what
# BatchNorm computes:

# %%
import copy

torch.manual_seed(0)
plain = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
plain.train()(torch.randn(8, 3, 6, 6))  # some running statistics to copy
synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(plain))
print([type(m).__name__ for m in synced])
print("running stats copied:", torch.equal(synced[1].running_var, plain[1].running_var))
probe = torch.randn(2, 3, 6, 6)
print("eval outputs equal:", torch.allclose(synced.eval()(probe), plain.eval()(probe)))

# %% [markdown]
# **A running average as a buffer.** BatchNorm's running statistics are *buffers*:
# tensors in the state dict that are not parameters (no gradient, not seen by the
# optimizer), updated in place during `forward` in training mode. The notes' recipe
# for any running average, checked against BatchNorm's own update
# (running ← (1 − momentum)·running + momentum·batch statistic, with the unbiased
# variance, section 3):

# %%
class RunningMoments(torch.nn.Module):
    def __init__(self, channels, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("mean", torch.zeros(channels))
        self.register_buffer("var", torch.ones(channels))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                var, mean = torch.var_mean(x, dim=(0, 2, 3))  # correction=1: unbiased
                self.mean.mul_(1 - self.momentum).add_(mean, alpha=self.momentum)
                self.var.mul_(1 - self.momentum).add_(var, alpha=self.momentum)
        return x


moments, reference = RunningMoments(4), torch.nn.BatchNorm2d(4)
for _ in range(3):
    sample = torch.randn(8, 4, 5, 5) * 3 + 1
    moments(sample), reference(sample)
print("buffers in the state dict:", list(moments.state_dict()), "| parameters:", list(moments.parameters()))
print("same running mean and var as BatchNorm2d:", torch.allclose(moments.mean, reference.running_mean),
      torch.allclose(moments.var, reference.running_var))

# %% [markdown]
# ## 6. LayerNorm forward
#
# LayerNorm normalizes each sample over its trailing `normalized_shape` dimensions
# (all $N$ elements of one group), with the biased variance:
#
# $$\mu = \frac1N\sum_j x_j, \quad \sigma^2 = \frac1N\sum_j (x_j-\mu)^2, \quad
#   \text{rstd} = \frac{1}{\sqrt{\sigma^2+\epsilon}}, \quad
#   \hat x_j = (x_j - \mu)\,\text{rstd}, \quad y_j = \hat x_j\, w_j + b_j .$$
#
# The notes' second example, a `normalized_shape` of two dimensions, by hand:

# %%
Bn, L, C1, C2 = 1, 2, 4, 3
normalized_shape = [C1, C2]
x4 = torch.rand([Bn, L, C1, C2])
w4, b4 = torch.rand(normalized_shape), torch.rand(normalized_shape)
out1 = F.layer_norm(x4, normalized_shape, w4, b4, eps=1e-5)
features = C1 * C2
mean4 = x4.mean(dim=[-1, -2], keepdim=True)
var4 = x4.var(dim=[-1, -2], keepdim=True)
out2 = (x4 - mean4) / torch.sqrt(var4 * (features - 1) / features + 1e-5) * w4 + b4
print("max |out1 - out2| < 1e-6:", (out1 - out2).abs().max().item() < 1e-6)

# %% [markdown]
# `F.layer_norm` calls `torch.native_layer_norm`, which returns three tensors: the
# output, and the **mean** and **rstd** that the backward pass reuses — shaped like
# the input with the normalized dimensions reduced to 1:

# %%
out, mean_t, rstd_t = torch.native_layer_norm(x4, normalized_shape, w4, b4, 1e-5)
print("out", tuple(out.shape), "| mean", tuple(mean_t.shape), "| rstd", tuple(rstd_t.shape))
print("rstd == 1/sqrt(var(correction=0) + eps):",
      torch.allclose(rstd_t, 1 / torch.sqrt(x4.var(dim=[-1, -2], keepdim=True, correction=0) + 1e-5)))

# %% [markdown]
# ## Exercise 5.4 — layer_norm_forward_cpu
#
# minikernel's `native_layer_norm` checks the arguments like PyTorch, views the
# input as a contiguous `(rows, n)` matrix — `rows` is the product of the leading
# dimensions, `n` of `normalized_shape` — and calls your kernel, compiled with
# `numba.njit(parallel=True)`: rows are independent, so `prange` over rows, three
# passes per row (sum, squared deviations, output). A row of 1024 floats is 4 KiB
# and stays in the L1 cache, so the extra pass is nearly free. PyTorch:

# %%
xf, wf, bf = torch.randn(2, 3, 8), torch.randn(8), torch.randn(8)
print(torch.native_layer_norm(xf, (8,), wf, bf, 1e-5)[1].flatten())

# %%
native_layer_norm(Tensor.from_torch(xf), (8,), Tensor.from_torch(wf), Tensor.from_torch(bf), 1e-5)[1]

# %%
torch.manual_seed(4)
for shape, normalized, affine in [((2, 3, 8), (8,), True), ((2, 3, 8), (3, 8), False), ((5, 1), (1,), True),
                                  ((4, 2, 3, 5), (2, 3, 5), True), ((300, 150), (150,), True)]:
    xs = torch.randn(shape)
    ws, bs = (torch.randn(normalized), torch.randn(normalized)) if affine else (None, None)
    mine = native_layer_norm(Tensor.from_torch(xs), normalized, *(Tensor.from_torch(t) if t is not None else None
                                                                 for t in (ws, bs)), 1e-5)
    theirs = torch.native_layer_norm(xs, normalized, ws, bs, 1e-5)
    same = all(a.shape == tuple(b.shape) and torch.allclose(a.to_torch(), b, atol=1e-5) for a, b in zip(mine, theirs))
    print(f"{str(shape):14} over {str(normalized):10} affine={affine!s:5} (out, mean, rstd) {'ok' if same else 'DIFFERENT'}")

# %% [markdown]
# ## 7. LayerNorm backward: the derivation
#
# One group of $N$ values, an upstream gradient $dy = \partial L/\partial y$. Write
# $x_c = x - \mu$ (so $\sum_j x_{c,j} = 0$), $\hat x = x_c\,\text{rstd}$. Step by step,
# each checked against PyTorch's autograd on the same computation written out in
# torch with `retain_grad()` on every intermediate:

# %%
torch.manual_seed(6)  # each cell that draws seeds itself: its numbers do not depend on earlier cells
N = 6
xr = (torch.randn(2, N, dtype=torch.float64) * 2 + 1).requires_grad_()
wr = torch.randn(N, dtype=torch.float64).requires_grad_()
br = torch.randn(N, dtype=torch.float64).requires_grad_()
dy = torch.randn(2, N, dtype=torch.float64)
eps = 1e-5
mu_r = xr.mean(-1, keepdim=True)
xc = xr - mu_r
var_r = (xc * xc).mean(-1, keepdim=True)
rstd_r = (var_r + eps) ** -0.5
xhat = xc * rstd_r
y = xhat * wr + br
for t in (mu_r, xc, var_r, rstd_r, xhat):
    t.retain_grad()
y.backward(dy)
print("y equals F.layer_norm:", torch.allclose(y, F.layer_norm(xr, (N,), wr, br, eps)))

# %% [markdown]
# **Step 1 — the parameters.** $y_j = \hat x_j w_j + b_j$, so summing over the rows
# (every row uses the same $w$, $b$): $\;dw_j = \sum_{\text{rows}} dy_j\,\hat x_j$,
# $\;db_j = \sum_{\text{rows}} dy_j$.
#
# **Step 2 — into $\hat x$:** $\;g_j := \partial L/\partial \hat x_j = dy_j\, w_j$.

# %%
g_r = dy * wr.detach()
print("dw = sum dy * xhat:", torch.allclose(wr.grad, (dy * xhat.detach()).sum(0)),
      "| db = sum dy:", torch.allclose(br.grad, dy.sum(0)), "| dL/dxhat = dy * w:", torch.allclose(xhat.grad, g_r))

# %% [markdown]
# **Step 3 — into rstd and the variance.** $\hat x_j = x_{c,j}\,\text{rstd}$ with one
# rstd per row: $\;\partial L/\partial\,\text{rstd} = \sum_j g_j x_{c,j}$. And
# $\text{rstd} = (\sigma^2+\epsilon)^{-1/2}$, so
# $\;\partial L/\partial \sigma^2 = -\tfrac12 (\sigma^2+\epsilon)^{-3/2}\sum_j g_j x_{c,j}
#   = -\tfrac12\,\text{rstd}^3 \sum_j g_j x_{c,j}$.

# %%
xc_d, rstd_d = xc.detach(), rstd_r.detach()
d_rstd = (g_r * xc_d).sum(-1, keepdim=True)
d_var = -0.5 * rstd_d**3 * d_rstd
print("dL/drstd:", torch.allclose(rstd_r.grad, d_rstd), "| dL/dvar:", torch.allclose(var_r.grad, d_var))

# %% [markdown]
# **Step 4 — into $x_c$ and $\mu$.** $x_c$ reaches $L$ twice: through $\hat x$ and
# through $\sigma^2 = \frac1N\sum_j x_{c,j}^2$:
# $\;\partial L/\partial x_{c,j} = g_j\,\text{rstd} + \partial L/\partial\sigma^2 \cdot \tfrac{2}{N} x_{c,j}$.
# And $x_c = x - \mu$: $\;\partial L/\partial \mu = -\sum_j \partial L/\partial x_{c,j}
#   = -\text{rstd}\sum_j g_j - \tfrac{2}{N}\,\partial L/\partial\sigma^2 \sum_j x_{c,j}
#   = -\text{rstd}\sum_j g_j$ — the second term vanishes since $\sum_j x_{c,j} = 0$.

# %%
d_xc = g_r * rstd_d + d_var * 2 / N * xc_d
d_mu = -rstd_d * g_r.sum(-1, keepdim=True)
print("dL/dxc:", torch.allclose(xc.grad, d_xc), "| dL/dmu = -rstd * sum g:", torch.allclose(mu_r.grad, d_mu))

# %% [markdown]
# **Step 5 — into $x$.** $x$ reaches $L$ through $x_c$ directly and through $\mu =
# \frac1N\sum_j x_j$:
#
# $$\frac{\partial L}{\partial x_j} = \frac{\partial L}{\partial x_{c,j}} + \frac1N \frac{\partial L}{\partial \mu}
#   = g_j\,\text{rstd} - \frac{\text{rstd}^3}{N}\, x_{c,j} \sum_k g_k x_{c,k} - \frac{\text{rstd}}{N}\sum_k g_k .$$
#
# With $x_{c,j}\,\text{rstd} = \hat x_j$ the middle term is
# $\frac{\text{rstd}}{N}\hat x_j \sum_k g_k \hat x_k$, and everything shares the factor
# $\text{rstd}/N$:
#
# $$\boxed{\;dx_j = \frac{\text{rstd}}{N}\Big(N g_j - \sum_k g_k - \hat x_j \sum_k g_k \hat x_k\Big),
#   \qquad g = dy \cdot w\;}$$
#
# Two sums per row ($\sum g$ and $\sum g\hat x$) — the same two that SyncBatchNorm's
# backward allreduces.

# %%
xhat_d = xhat.detach()
dx_steps = d_xc + d_mu / N
dx_boxed = rstd_d / N * (N * g_r - g_r.sum(-1, keepdim=True) - xhat_d * (g_r * xhat_d).sum(-1, keepdim=True))
print("step 5 sum:", torch.allclose(xr.grad, dx_steps), "| boxed formula:", torch.allclose(xr.grad, dx_boxed))

# %% [markdown]
# `torch.autograd.gradcheck` compares autograd's gradients with finite differences.
# In float64 LayerNorm passes; in float32 the finite differences themselves are too
# coarse and gradcheck reports failure (and warns) even though the formula is right
# — use float64 to check gradients:

# %%
torch.manual_seed(7)
x64 = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
print("gradcheck float64:", torch.autograd.gradcheck(lambda t: F.layer_norm(t, (5,)), (x64,)))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    print("gradcheck float32:", torch.autograd.gradcheck(lambda t: F.layer_norm(t, (5,)), (x64.detach().float().requires_grad_(),),
                                                         raise_exception=False))

# %% [markdown]
# ## Exercise 5.5 — layer_norm_backward_cpu
#
# Autograd calls `native_layer_norm_backward(dy, x, normalized_shape, mean, rstd,
# weight, bias, output_mask)` with the forward's saved mean and rstd. Your CPU
# kernel computes $dx$ row by row (in parallel, like the forward), and $dw$, $db$ —
# sums *across* rows. Rows running on different threads must not add into the same
# `dw[j]`: give each task its own partial sums and add them up at the end. PyTorch's
# backward of the derivation's example:

# %%
_, mean_r, rstd_saved = torch.native_layer_norm(xr.detach(), (N,), wr.detach(), br.detach(), eps)
print(torch.ops.aten.native_layer_norm_backward(dy, xr.detach(), (N,), mean_r, rstd_saved, wr.detach(), br.detach(),
                                                [True, True, True])[1])

# %%
native_layer_norm_backward(*(Tensor.from_torch(t) for t in (dy, xr.detach())), (N,),
                           *(Tensor.from_torch(t) for t in (mean_r, rstd_saved, wr.detach(), br.detach())))[1]

# %%
mine = native_layer_norm_backward(*(Tensor.from_torch(t) for t in (dy, xr.detach())), (N,),
                                  *(Tensor.from_torch(t) for t in (mean_r, rstd_saved, wr.detach(), br.detach())))
print("derivation example (dx, dw, db) vs autograd:",
      "ok" if all(torch.allclose(a.to_torch(), b) for a, b in zip(mine, (xr.grad, wr.grad, br.grad))) else "DIFFERENT")
for shape, normalized in [((2, 3, 8), (8,)), ((4, 2, 3, 5), (3, 5)), ((200, 64), (64,))]:
    xs = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    ws = torch.randn(normalized, dtype=torch.float64, requires_grad=True)
    bs = torch.randn(normalized, dtype=torch.float64, requires_grad=True)
    dys = torch.randn(shape, dtype=torch.float64)
    expected = torch.autograd.grad(F.layer_norm(xs, normalized, ws, bs), (xs, ws, bs), dys)
    _, ms, rs = torch.native_layer_norm(xs.detach(), normalized, ws.detach(), bs.detach(), 1e-5)
    got = native_layer_norm_backward(*(Tensor.from_torch(t) for t in (dys, xs.detach())), normalized,
                                     *(Tensor.from_torch(t) for t in (ms, rs, ws.detach(), bs.detach())))
    same = all(torch.allclose(a.to_torch(), b) for a, b in zip(got, expected))
    print(f"{str(shape):14} over {str(normalized):8} (dx, dw, db) vs torch.autograd.grad: {'ok' if same else 'DIFFERENT'}")

# %% [markdown]
# ## 8. The GPU kernels
#
# On the GPU, **one block per row**: the block's threads split the row
# (thread $t$ takes columns $t, t+T, t+2T, \dots$, so neighbouring threads read
# neighbouring addresses), and a row's sum needs all of them — a shared-memory tree
# reduction, chapter 02's 2.8. `minikernel/norm/gpu.py` provides it as
# `block_sum(partial, value)`, which returns the block's total to every thread. The
# forward calls it twice (sum, then squared deviations); the backward's $dx$ calls it
# twice ($\sum g$, $\sum g\hat x$); and $dw$, $db$ — sums down each column — get one
# thread per column. PyTorch's CUDA kernels reduce inside a warp with shuffles (and
# across warps through shared memory), carrying Welford triples that they merge with
# 5.3's formula. Without a GPU these run on numba's CUDA simulator, with small
# blocks (`minikernel.norm.sizes.NORM_THREADS` is 8 there, 64 on a GPU), so the
# examples are small: a row of 19 values is more than two simulated blocks wide.

# %% [markdown]
# ## Exercise 5.6 — layer_norm_forward_gpu
#
# PyTorch (on the CPU — the oracle) for three rows of 19 values:

# %%
torch.manual_seed(8)
ng = 19
xg, wg, bg = torch.randn(3, ng), torch.randn(ng), torch.randn(ng)
print(torch.native_layer_norm(xg, (ng,), wg, bg, 1e-5)[2].flatten())

# %%
native_layer_norm(*(Tensor.from_torch(t).cuda() for t in (xg,)), (ng,),
                  *(Tensor.from_torch(t).cuda() for t in (wg, bg)), 1e-5)[2]

# %%
gout = native_layer_norm(Tensor.from_torch(xg).cuda(), (ng,), Tensor.from_torch(wg).cuda(), Tensor.from_torch(bg).cuda(), 1e-5)
print("on", gout[0].device, "(out, mean, rstd):",
      "ok" if all(torch.allclose(a.cpu().to_torch(), b, atol=1e-5)
                  for a, b in zip(gout, torch.native_layer_norm(xg, (ng,), wg, bg, 1e-5))) else "DIFFERENT")

# %% [markdown]
# ## Exercise 5.7 — layer_norm_backward_gpu
#
# Two kernels: `layer_norm_backward_gpu` ($dx$, one block per row) and
# `layer_norm_param_grads_gpu` ($dw$, $db$, one thread per column). PyTorch:

# %%
torch.manual_seed(9)
dyg = torch.randn(3, ng)
_, mg, rg = torch.native_layer_norm(xg, (ng,), wg, bg, 1e-5)
expected_g = torch.ops.aten.native_layer_norm_backward(dyg, xg, (ng,), mg, rg, wg, bg, [True, True, True])
print(expected_g[2][:6])

# %%
native_layer_norm_backward(*(Tensor.from_torch(t).cuda() for t in (dyg, xg)), (ng,),
                           *(Tensor.from_torch(t).cuda() for t in (mg, rg, wg, bg)))[2]

# %%
got_g = native_layer_norm_backward(*(Tensor.from_torch(t).cuda() for t in (dyg, xg)), (ng,),
                                   *(Tensor.from_torch(t).cuda() for t in (mg, rg, wg, bg)))
print("on", got_g[0].device, "(dx, dw, db):",
      "ok" if all(torch.allclose(a.cpu().to_torch(), b, atol=1e-4) for a, b in zip(got_g, expected_g)) else "DIFFERENT")

# %% [markdown]
# ## 9. Which elements: BatchNorm, LayerNorm, InstanceNorm
#
# The three layers compute the same statistics over different sets of elements.
# For an `(N, C, L)` batch (samples, channels, length):
#
# | layer | reduces | one mean and variance per |
# |---|---|---|
# | BatchNorm | dims $(0, 2)$: $N$ and $L$ | channel |
# | LayerNorm (`normalized_shape=(C, L)`) | dims $(1, 2)$: $C$ and $L$ | sample |
# | InstanceNorm | dim $2$: $L$ | sample and channel |
#
# BatchNorm's statistics mix samples — which is why it behaves differently in
# training and evaluation, needs running estimates, and needs SyncBatchNorm when the
# batch is split. LayerNorm and InstanceNorm treat each sample alone. Each layer, by
# hand with `torch.var_mean(..., correction=0)` over its dims:

# %%
torch.manual_seed(10)
xn = torch.randn(4, 3, 5, dtype=torch.float64)
for name, dims, layer in [("BatchNorm", (0, 2), lambda t: F.batch_norm(t, None, None, training=True)),
                          ("LayerNorm", (1, 2), lambda t: F.layer_norm(t, t.shape[1:])),
                          ("InstanceNorm", (2,), lambda t: F.instance_norm(t))]:
    v_, m_ = torch.var_mean(xn, dims, correction=0, keepdim=True)
    print(f"{name:12} = (x - mean) / sqrt(var + eps) over dims {str(dims):6}:",
          torch.allclose(layer(xn), (xn - m_) / torch.sqrt(v_ + 1e-5)), "| statistics:", tuple(v_.shape))

# %% [markdown]
# The **normalization explorer** draws it: pick a layer and one of its statistics,
# and the cells it averages light up; the table lists every statistic — computed by
# *your* `var_mean` (5.1), checked against `torch.var_mean`.

# %% tags=["nbval-ignore-output"]
from widgets import norm_explorer

norm_explorer((2, 3, 4), kind="BatchNorm")

# %% [markdown]
# ## 10. `nn.LayerNorm` on your kernels
#
# `minikernel.nn.functional.layer_norm` is an autograd `Function` (chapter 03):
# its forward calls `native_layer_norm` — your 5.4 — and saves `mean` and `rstd`;
# its backward calls `native_layer_norm_backward` — your 5.5 — with them, exactly
# PyTorch's `NativeLayerNormBackward0`. `minikernel.nn.LayerNorm` is the Module
# around it (chapter 04), with `torch.nn.LayerNorm`'s arguments, parameters (ones
# and zeros) and repr. PyTorch:

# %%
torch.manual_seed(11)
xm = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
tln = torch.nn.LayerNorm((3, 4), dtype=torch.float64)
tout = tln(xm)
print(tln, "|", tout.grad_fn.name())

# %% [markdown]
# Yours, on the same input, gradients through your backward kernel:

# %%
mln = mk.nn.LayerNorm((3, 4), dtype="float64")
mx = Tensor.from_torch(xm.detach().clone()).requires_grad_()
mout = mln(mx)
print(mln, "|", mout.grad_fn.name())

# %%
mln = mk.nn.LayerNorm((3, 4), dtype="float64")
mx = Tensor.from_torch(xm.detach().clone()).requires_grad_()
ym = mln(mx)
mk.autograd.functions.sum(mk.autograd.functions.mul(ym, ym)).backward()  # the loss sum(y**2)
(tln(xm) ** 2).sum().backward()
print("repr as torch's:", repr(mln) == repr(tln))
for name, mine, theirs in [("x", mx.grad, xm.grad), ("weight", mln.weight.grad, tln.weight.grad),
                           ("bias", mln.bias.grad, tln.bias.grad)]:
    print(f"grad of {name:6}:", "ok" if torch.allclose(mine.to_torch(), theirs) else "DIFFERENT")

# %% [markdown]
# ## 11. How fast
#
# `python -m minikernel bench -k ch05` times the reference kernels against PyTorch
# on a 4096 × 1024 float32 LayerNorm: `native_layer_norm` against
# `torch.native_layer_norm`, and forward + backward against the same plus
# `torch.ops.aten.native_layer_norm_backward` (outputs allocated on both sides). The
# same rows here (timings vary; they are not compared by the notebook checks):

# %% tags=["nbval-ignore-output"]
from minikernel.course.bench import rows_norm  # importing it registers chapter 05's rows
from minikernel.course.bench.timing import ROWS, format_table, run_row

print(format_table([run_row(r, warmup=3, repeat=15) for r in ROWS if r.name.startswith("ch05")]))

# %% [markdown]
# ## Grade chapter 05
#
# Runs the tests of every exercise 5.x against PyTorch: `var`/`std` over drawn
# shapes, dims and corrections; Welford and Chan against `torch.var` (and the
# float32 cancellation case); the LayerNorm kernels against `torch.native_layer_norm`,
# `native_layer_norm_backward` and `torch.autograd.grad` in float64, on the CPU and on
# the GPU (simulator), plus a compile of the GPU kernels for a real GPU.

# %%
mk.grade("5.*")
