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
# # Chapter 01 — Strides: how a tensor finds its elements
#
# A PyTorch tensor is two things: a **storage**, one flat block of memory, and a
# **header** that says how to read it — a *shape*, a *stride* per dimension and a
# *storage offset*. Slicing, transposing, `view` and `expand` never touch the
# storage: they write a new header. This chapter shows that in PyTorch, then has you
# write the arithmetic behind it in `minikernel/strides.py`. Your functions are what
# `minikernel.Tensor` calls for `view`, `permute`, `expand`, slicing and `contiguous`.
#
# **How each exercise goes.** First PyTorch's behaviour, then your function on the
# same input, then a check cell that prints your answer beside PyTorch's. Until you
# write a function, each cell that needs it shows a short box instead — which
# exercise, which file and function to write, how to grade it — with PyTorch's
# answers still printed where a check cell compares; Run All goes on, and every
# other cell runs.
#
# **Stuck?** Each exercise has a reference in `solutions/strides.py`. To use it and go
# on, set `MINIKERNEL_SOLUTIONS` before starting JupyterLab (`MINIKERNEL_SOLUTIONS=1.2
# make lab`, or `1.*` for the whole chapter, or `all`) — it is read once when
# `minikernel` is imported, so after changing it restart the kernel.
#
# **Grading.** The last cell runs `minikernel.grade("1.*")`; from a terminal,
# `make grade` or `python -m minikernel grade 1.2`.

# %%
import torch

import minikernel as mk
from minikernel import strides as S
from minikernel.course import notebook_display
from minikernel.course.checking import agree

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__)

# %% [markdown]
# ## 1. Header and storage
#
# `b = a[2:]` makes a new header over the same storage: it starts two elements in
# (storage offset 2). Writing through `b` changes `a`. We compare addresses with `==`
# instead of printing them, because addresses change from run to run.
#
# *Older tutorials call `a.storage()`: that returns a `TypedStorage`, deprecated since
# PyTorch 2.0. Today the storage is `a.untyped_storage()`, a plain block of bytes.*

# %%
a = torch.arange(5)
b = a[2:]
print("a:", a, " b:", b)
print("b's offset:", b.storage_offset(), " stride:", b.stride())
print("same storage:", a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())
print("storage bytes:", a.untyped_storage().nbytes(), "=", a.numel(), "elements x", a.element_size(), "bytes")

# %%
b[1] = 0  # b[1] is a[3]
print("a:", a, " b:", b)

# %% [markdown]
# The **stride** of a dimension is how many storage elements you skip to move one
# step along it. A freshly made tensor is *row-major*: the last dimension has
# stride 1, and each earlier one skips a whole row of the later ones.

# %%
print(torch.arange(6).reshape(2, 3).stride())
print(torch.arange(6).view(3, 2).stride())
print(torch.empty(2, 3, 4).stride())

# %% [markdown]
# Element `[i, j]` lives at storage position `offset + i·stride[0] + j·stride[1]`.
# Take a 2×2 tensor of 32-bit integers, each 4 bytes. Row `x[1, :]` is a view that
# starts at offset 2; column `x[:, 0]` has stride 2 — one gap element between its
# entries.

# %%
x = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
row, col = x[1, :], x[:, 0]
print("x.stride():", x.stride(), " element size:", x.element_size(), "bytes")
print("x[1, 0] is", (x[1, 0].data_ptr() - x.data_ptr()) // x.element_size(), "elements past x[0, 0]")
print("row x[1, :]:", row, "offset", row.storage_offset(), "stride", row.stride())
print("col x[:, 0]:", col, "offset", col.storage_offset(), "stride", col.stride())

# %% [markdown]
# `torch.as_strided` builds any header over a storage. With `torch.arange` as the
# storage, each element's *value* is its storage position, which makes headers easy
# to read:

# %%
storage = torch.arange(20)
t = torch.as_strided(storage, size=(3, 4), stride=(5, 1), storage_offset=2)
t

# %% [markdown]
# Every header change above had a picture in mind. The **stride explorer** draws it:
# the logical grid (what you index) above the storage strip (what is in memory), each
# cell coloured by the storage position it reads. Pick a PyTorch operation, or type a
# shape, strides and offset. It computes positions with *your* `to_index` and
# `index_to_position`, so it asks you to finish those first.

# %% tags=["nbval-ignore-output"]
from widgets import stride_explorer

stride_explorer()

# %% [markdown]
# ## Exercise 1.1 — contiguous_strides
#
# Row-major strides for a shape: `strides[-1] = 1`, and
# `strides[i] = strides[i+1] · max(shape[i+1], 1)`. PyTorch counts a size-0
# dimension as 1 here, so an empty tensor still gets sensible strides.

# %%
print(torch.empty(2, 3, 4).stride(), torch.empty(2, 0, 3).stride(), torch.empty(()).stride())

# %% [markdown]
# Your function, on the same shapes (write it in `minikernel/strides.py`):

# %%
S.contiguous_strides((2, 3, 4))

# %%
agree(S.contiguous_strides, lambda shape: torch.empty(shape).stride(),
      [((2, 3, 4),), ((5,),), ((),), ((2, 0, 3),), ((1, 1, 7),)])

# %% [markdown]
# `minikernel.tensor(data)` uses it to lay out new tensors:

# %%
m = mk.tensor([[1, 2, 3], [4, 5, 6]])
print(m.shape, m.stride(), m.storage_offset())

# %% [markdown]
# ## Exercise 1.2 — index_to_position
#
# The sum at the heart of every strided kernel:
# `position = offset + Σ index[i] · strides[i]`. PyTorch computes it for every
# element you read; here `t` is the `as_strided` tensor from above, so its values
# *are* positions.

# %%
print(t[1, 2].item(), t[2, 3].item())

# %%
S.index_to_position((1, 2), (5, 1), 2)

# %%
agree(S.index_to_position, lambda index, strides, offset: storage.as_strided((3, 4), strides, offset)[index].item(),
      [((1, 2), (5, 1), 2), ((2, 3), (5, 1), 2), ((0, 0), (5, 1), 0), ((2, 1), (1, 3), 4)])

# %% [markdown]
# Slicing a `minikernel.Tensor` calls it to find the new offset — the notes' example
# again, on minikernel:

# %%
ma = mk.Tensor.from_torch(torch.arange(5))
mb = ma[2:]
mb[1] = 0
print("a:", ma.tolist(), " b:", mb.tolist(), " b's offset:", mb.storage_offset())

# %% [markdown]
# ## Exercise 1.3 — to_index
#
# The inverse question: which multi-index is the *n*-th element in row-major order?
# Peel dimensions off from the last: `i_k = n % shape[k]`, then `n //= shape[k]`.
# A kernel that runs one thread per output element uses exactly this to find its
# element.

# %%
print([int(i) for i in torch.unravel_index(torch.tensor(7), (2, 3, 4))])

# %%
S.to_index(7, (2, 3, 4))

# %%
agree(lambda n, shape: tuple(S.to_index(n, shape)),
      lambda n, shape: tuple(int(i) for i in torch.unravel_index(torch.tensor(n), shape)),
      [(0, (2, 3, 4)), (7, (2, 3, 4)), (23, (2, 3, 4)), (5, (6,)), (0, (1, 1))])

# %% [markdown]
# ## Exercise 1.4 — broadcast_shape, broadcast_index
#
# Broadcasting aligns shapes at the right; per dimension the sizes must be equal or
# one of them 1. PyTorch refuses anything else with a `RuntimeError`:

# %%
print(torch.broadcast_shapes((2, 1, 3), (4, 1)))
try:
    torch.broadcast_shapes((2, 3), (4,))
except RuntimeError as err:
    print("RuntimeError:", err)

# %%
S.broadcast_shape((2, 1, 3), (4, 1))

# %%
agree(S.broadcast_shape, torch.broadcast_shapes,
      [((2, 1, 3), (4, 1)), ((3,), ()), ((1,), (5, 0)), ((2, 3), (4,)), ((2, 1), (3, 1, 1))])

# %% [markdown]
# A broadcast tensor reads each small element many times. `broadcast_index` says
# which element of the small tensor index `(i, j, k)` of the big one reads: drop the
# extra leading dimensions and use 0 where the small one has size 1. In PyTorch the
# broadcast view has stride 0 in those dimensions:

# %%
small = torch.tensor([[10], [20]])  # shape (2, 1)
big = small.expand(3, 2, 4)
print(big.stride(), big[2, 1, 3].item())

# %%
S.broadcast_index((2, 1, 3), (3, 2, 4), (2, 1))

# %%
agree(lambda i: small[tuple(S.broadcast_index(i, (3, 2, 4), (2, 1)))].item(), lambda i: big[i].item(),
      [((0, 0, 0),), ((2, 1, 3),), ((1, 0, 2),)])

# %% [markdown]
# ## Exercise 1.5 — infer_size, view_strides
#
# `view` changes the shape without copying, so it must find strides that read the
# same elements in the same order. On a contiguous tensor that always works (and a
# `-1` is inferred):

# %%
v = torch.arange(12)
print(v.view(3, 4).stride(), v.view(4, -1).shape)

# %% [markdown]
# A transpose scrambles the layout: `t()` swaps the strides, the result is no longer
# contiguous, and `view(3, 4)` is refused. `reshape` copies instead — its result does
# not share the storage.

# %%
m26 = torch.arange(12).view(2, 6)
m62 = m26.t()
print("stride:", m62.stride(), " contiguous:", m62.is_contiguous())
try:
    m62.view(3, 4)
except RuntimeError as err:
    print("RuntimeError:", err)
m34 = m62.reshape(3, 4)
print(m34)
print("reshape shares storage:", m34.untyped_storage().data_ptr() == m26.untyped_storage().data_ptr())

# %% [markdown]
# The rule: walk the old dimensions from the right and group them into **chunks** —
# runs where `stride[d-1] == stride[d] · shape[d]`, i.e. memory you could walk with
# one pointer. New dimensions may split or merge a chunk freely but must not straddle
# two. `(2, 6)` with strides `(1, 2)` is two chunks of one dimension each, and a
# 4-sized new dimension would straddle them. Write `infer_size` (the `-1`, with
# PyTorch's errors) and `view_strides` (strides, or `None` where PyTorch refuses):

# %%
print(S.infer_size((4, -1), 12), S.view_strides((6, 2), (1, 6), (3, 4)))

# %%
agree(S.view_strides, lambda shape, strides, new: torch.empty(24).as_strided(shape, strides).view(new).stride(),
      [((2, 6), (6, 1), (3, 4)), ((6, 2), (1, 6), (3, 4)), ((6, 2), (1, 6), (6, 2, 1)),
       ((2, 3, 4), (12, 1, 3), (2, 12)), ((2, 3, 4), (12, 1, 3), (6, 4)), ((2, 3), (3, 1), (-1,))],
      refused=None)  # where torch's view raises, view_strides returns None

# %% [markdown]
# Bad shapes get PyTorch's own errors from `infer_size`:

# %%
agree(S.infer_size, lambda shape, n: torch.empty(n).view(shape).shape,
      [((4, -1), 12), ((-1, -1), 12), ((5, -1), 12), ((-1, 0), 0), ((0, 3), 0)])

# %% [markdown]
# Now `minikernel.Tensor.view` refuses exactly what PyTorch refuses:

# %%
mt = mk.Tensor.from_torch(torch.arange(12).view(2, 6).t())
try:
    mt.view(3, 4)
except RuntimeError as err:
    print("RuntimeError:", err)

# %% [markdown]
# ## Exercise 1.6 — permute_strides, expand_strides, is_contiguous
#
# `permute` reorders the header: dimension `i` of the result is dimension `dims[i]`
# of the input. `expand` repeats elements without copying by giving stride 0 to
# every dimension it stretches. `is_contiguous` checks row-major order, ignoring
# size-1 dimensions, whose stride never matters.

# %%
p = torch.empty(2, 3, 4).permute(2, 0, 1)
e = torch.tensor([[1], [2]]).expand(3, 2, 5)
print(p.shape, p.stride(), p.is_contiguous())
print(e.shape, e.stride(), e.is_contiguous())
print(torch.empty(3, 1).as_strided((3, 1), (1, 99)).is_contiguous())

# %%
print(S.permute_strides((2, 3, 4), (12, 4, 1), (2, 0, 1)), S.expand_strides((2, 1), (1, 1), (3, 2, 5)))

# %%
agree(S.expand_strides, lambda shape, strides, new: torch.empty(8).as_strided(shape, strides).expand(new).stride(),
      [((2, 1), (1, 1), (3, 2, 5)), ((3,), (1,), (1, 3)), ((3,), (1,), (2, -1)), ((2, 3), (3, 1), (2, 4)),
       ((2,), (1,), (-1, 2))])

# %%
agree(S.is_contiguous, lambda shape, strides: torch.empty(99).as_strided(shape, strides).is_contiguous(),
      [((2, 3), (3, 1)), ((3, 2), (1, 3)), ((3, 1), (1, 99)), ((2, 0), (5, 7)), ((4,), (2,))])

# %% [markdown]
# ## Exercise 1.7 — contiguous
#
# `contiguous()` returns the tensor itself when it is already contiguous, otherwise
# a row-major copy: for each ordinal `i`, read the element at
# `index_to_position(to_index(i, shape), strides, offset)`. It is the loop every
# element-wise kernel of the next chapter runs.

# %%
print(m62.contiguous().stride(), m62.contiguous().flatten().tolist())

# %%
S.contiguous(torch.arange(12).numpy(), (6, 2), (1, 6), 0)

# %%
agree(lambda shape, strides, offset: S.contiguous(torch.arange(30).numpy(), shape, strides, offset).tolist(),
      lambda shape, strides, offset: torch.arange(30).as_strided(shape, strides, offset).contiguous().flatten(),
      [((6, 2), (1, 6), 0), ((2, 3), (0, 1), 4), ((3, 2, 2), (1, 6, 3), 2), ((0, 3), (3, 1), 0)])

# %% [markdown]
# With all of chapter 01 done, `minikernel.Tensor` reshapes like PyTorch: a view
# when the strides allow, a copy (through your `contiguous`) when not.

# %%
r = mk.Tensor.from_torch(torch.arange(12).view(2, 6)).t().reshape(3, 4)
print(r.stride(), r.tolist())

# %% [markdown]
# ## Grade chapter 01
#
# Runs the tests of every exercise 1.x against PyTorch (hypothesis tries shapes with
# size-0 and size-1 dimensions, offsets, transposes, expands and views of views) and
# shows one row per exercise.

# %%
mk.grade("1.*")
