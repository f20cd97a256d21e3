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
# Is the course's package installed in this kernel? If not, this says what to run.
import importlib.util

if missing := [m for m in ("minikernel", "torch", "numba", "ipywidgets") if importlib.util.find_spec(m) is None]:
    raise ModuleNotFoundError(
        f"this kernel cannot import {', '.join(missing)}. On your machine: run `make lab` in the course's "
        "folder and open the chapter from the lab it starts (its kernel has everything). In a hosted "
        "notebook (Colab, Kaggle, JupyterHub): run `%pip install -e ..` in a cell (`..` is the course's "
        "folder, the one with pyproject.toml), then restart the kernel.")

# %%
import warnings

import torch

import minikernel as mk
from minikernel import strides as S
from minikernel.course import notebook_display
from minikernel.course.checking import agree

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
mk.kernels.launch.set_reference_fallback(False)  # views here use your code; later chapters let numpy stand in
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
except NotImplementedError:
    raise  # exercise 1.5 unfinished: its box says what to write
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
# ## 2. dtypes: the catalogue, inference and promotion
#
# The header also names the **dtype**: how many bytes an element takes and how to
# read them. PyTorch's dtypes mirror numpy's (there is no string dtype). Each has a
# long and a short name, a size, and — for floats — a range and a precision
# (`torch.finfo`; chapter 06 looks at float16 and bfloat16 closely):

# %%
catalogue = [(torch.float64, "double"), (torch.float32, "float"), (torch.float16, "half"),
             (torch.bfloat16, None), (torch.int64, "long"), (torch.int32, "int"), (torch.int16, "short"),
             (torch.int8, "char"), (torch.uint8, "byte"), (torch.bool, None)]
for dt, method in catalogue:
    kind = "float" if dt.is_floating_point else "bool" if dt == torch.bool else "int"
    limits = torch.finfo(dt) if dt.is_floating_point else torch.iinfo(dt) if kind == "int" else None
    print(f"{str(dt):15} {torch.empty((), dtype=dt).element_size()} byte(s)  {kind:5}  "
          f"{'.' + method + '()' if method else '':10} max {limits.max if limits else True}")

# %% [markdown]
# **Inference.** `torch.tensor` picks the dtype from the Python value: an `int`
# gives int64, a `float` gives the *default dtype* float32 (not numpy's float64), a
# `bool` gives bool. `dtype=` overrides it; a numpy array keeps its own dtype.
# Casts (`.float()`, `.long()`, `.half()`, `.int()`, `.double()`, `.char()`,
# `.byte()`, `.type(dtype)`, `.type_as(other)`) make a new tensor unless it
# already has that dtype. `.dim()` counts the dimensions — the brackets of the
# literal.

# %%
import numpy as np

for value in (1, 2.0, True):
    print(f"torch.tensor({value!r}):", torch.tensor(value).dtype)
print("dtype=torch.int32:", torch.tensor(1, dtype=torch.int32).dtype,
      "| np.array(2.0):", torch.tensor(np.array(2.0)).dtype)
i = torch.tensor(1)
print(i.float(), i.type(torch.float), i.type_as(torch.tensor(0.5)), i.char().dtype, i.byte().dtype, i.half().dtype)
print("the same tensor when the dtype is already right:", i.long() is i)
print("dim:", torch.tensor(True).dim(), torch.tensor([1.0, 2.0]).dim(), torch.tensor([[1, 2], [3, 4]]).dim(),
      torch.zeros(3, 32, 32).dim(), torch.zeros(8, 3, 32, 32).dim())
print("item:", torch.tensor(2.5).item(), "| tolist:", torch.tensor([[1, 2], [3, 4]]).tolist())

# %% [markdown]
# **Promotion.** When dtypes meet in an operation, the result takes the "highest"
# *category* (bool < integer < float), and within a category the larger size. A 0-d
# tensor or a Python number takes part differently. A *Python number* of a higher
# category gives that category's default dtype: an int32 tensor plus the Python float
# 2.5 is float32 (the default float), not float64. A *0-d tensor* of a higher category
# keeps its own dtype: the int32 tensor plus a 0-d float64 tensor is float64, plus a
# 0-d float16 tensor float16. Within the same category a 0-d tensor does not widen a
# tensor with dimensions: float32 `[1.0]` plus a 0-d float64 stays float32, while a
# 1-element float64 *vector* makes it float64. int8 + uint8 needs int16 to hold both
# ranges. `torch.result_type` answers without computing:

# %%
int32_vec = torch.tensor([1, 2], dtype=torch.int32)
print("int32 + Python 2.5:       ", (int32_vec + 2.5).dtype)
print("int32 + 0-d float64 2.5:  ", (int32_vec + torch.tensor(2.5, dtype=torch.float64)).dtype)
print("int32 + 0-d float16 2.5:  ", (int32_vec + torch.tensor(2.5, dtype=torch.float16)).dtype)
print("float32 + 0-d float64:    ", (torch.tensor([1.0]) + torch.tensor(2.5, dtype=torch.float64)).dtype)
print("float32 + [1.0] float64:  ", (torch.tensor([1.0]) + torch.tensor([1.0], dtype=torch.float64)).dtype)
print("int8 + uint8:             ", (torch.tensor([1], dtype=torch.int8) + torch.tensor([1], dtype=torch.uint8)).dtype)
print("result_type(int64, 2.5):  ", torch.result_type(torch.tensor([1]), 2.5))
print("result_type(bool, 7):     ", torch.result_type(torch.tensor([True]), 7))

# %% [markdown]
# ## 3. Sharing memory with numpy and DLPack
#
# `torch.from_numpy(arr)` and `tensor.numpy()` do not copy: tensor and array are two
# headers over one block of memory. The notes' example: adding to the array in place
# (`np.add(out=)`) changes the tensor, and `add_` on the tensor changes the array.
# `clone()` (or `torch.tensor(arr)`) copies, and the link is gone.

# %%
arr = np.zeros(3)
tensor = torch.from_numpy(arr)
np.add(arr, 1, out=arr)
print("after np.add(arr, 1, out=arr):", tensor)
tensor.add_(1)
print("after tensor.add_(1):         ", arr)
copied = torch.from_numpy(arr).clone()
copied.add_(1)
print("after clone().add_(1):        ", arr, "(unchanged)")
print("same memory:", tensor.data_ptr() == arr.ctypes.data,
      "| .numpy() too:", tensor.numpy().ctypes.data == arr.ctypes.data)

# %% [markdown]
# **DLPack** is the same handshake between *any* two array libraries (numpy, CuPy,
# JAX, TensorFlow ...): one side exports a capsule describing pointer, shape, strides
# and dtype; the other wraps it without a copy. `torch.from_dlpack` and
# `np.from_dlpack` take any object with a `__dlpack__` method:

# %%
arr = np.arange(6.0).reshape(2, 3)[:, 1:]   # a strided view in numpy
t_dl = torch.from_dlpack(arr)
print(t_dl.shape, "strides", t_dl.stride(), "same memory:", t_dl.data_ptr() == arr.ctypes.data)
back = np.from_dlpack(torch.arange(4))
back[0] = 100
print("np.from_dlpack of a tensor shares it too:", back)

# %% [markdown]
# Every CPU dtype converts, `int8` ("CharTensor") and `float16` ("HalfTensor") included
# — an old table in the notes says they cannot. `bfloat16` is the exception: numpy has
# no such type.

# %%
print(torch.tensor([-1, 2], dtype=torch.int8).numpy(), torch.tensor([0.5], dtype=torch.float16).numpy().dtype)
try:
    torch.tensor([0.5], dtype=torch.bfloat16).numpy()
except TypeError as err:
    print("TypeError:", err)

# %% [markdown]
# ## 4. Negative steps are refused; flip copies
#
# numpy's `a[::-1]` is a view with a negative stride. PyTorch's strides are never
# negative (the kernels and the autograd formulas assume it), so `t[::-1]` is refused,
# and so is `from_numpy` of a negative-stride array — copy it first. `flip` reverses
# by **copying**: its result has a fresh storage with positive strides. Indexing with a
# reversed index list (the notes' horizontal flip) copies too.

# %%
t = torch.arange(5)
try:
    t[::-1]
except ValueError as err:
    print("t[::-1]: ValueError:", err)
reversed_np = np.arange(5)[::-1]
print("numpy's strides (bytes):", reversed_np.strides)
try:
    torch.from_numpy(reversed_np)
except ValueError as err:
    print("from_numpy: ValueError:", str(err).split(". (")[0])
print("from_numpy(arr.copy()):", torch.from_numpy(reversed_np.copy()))
f = t.flip(0)
print("flip:", f, "stride", f.stride(),
      "shares storage:", f.untyped_storage().data_ptr() == t.untyped_storage().data_ptr())
img = torch.arange(6).view(2, 3)
by_index = img[:, torch.arange(2, -1, -1)]
print("reversed index:", by_index.tolist(), "== flip(1):", torch.equal(by_index, img.flip(1)))

# %% [markdown]
# ## 5. A small view keeps a big storage alive
#
# A view holds a reference to the whole storage, not to the part it reads. Keep a
# three-element slice of a 40 MB tensor, drop the big tensor, and the 40 MB stay
# allocated for as long as the slice lives (ezyang compares it with Java's old
# `substring`). `clone()` copies just the part you need and lets the big block go.

# %%
big = torch.zeros(10_000_000)
small = big[:3]
del big
print("small view still holds", small.untyped_storage().nbytes() // 2**20, "MiB")
small = small.clone()
print("after clone():", small.untyped_storage().nbytes(), "bytes")

# %% [markdown]
# ## 6. Slicing views; indexing with a list or mask copies
#
# A slice (`x[1:]`, `x[:, 0]`, `x[None]`) is a new header over the same storage:
# the result's `_base` is `x`. An index *list* or a boolean *mask* ("advanced
# indexing") picks arbitrary elements, which no single stride can describe, so the
# result is a **copy** (`_base` is None, writes do not reach `x`). The notes' `x[[0, 2],
# None]` mixes both: the list copies rows 0 and 2, `None` adds a dimension — the same
# as `x[[0, 2]].view(-1, 1)`:

# %%
x = torch.arange(3.0)
print(x[[0, 2], None].tolist(), "equal:", torch.equal(x[[0, 2], None], x[[0, 2]].view(-1, 1)))
grid = torch.arange(12).reshape(3, 4).clone()  # its own storage, so views of it have _base grid
for name, part in [("grid[1:]", grid[1:]), ("grid[:, 0]", grid[:, 0]), ("grid[None]", grid[None]),
                   ("grid[[0, 2]]", grid[[0, 2]]), ("grid[grid > 8]", grid[grid > 8])]:
    print(f"{name:15} view: {part._base is grid!s:5}  shares storage: "
          f"{part.untyped_storage().data_ptr() == grid.untyped_storage().data_ptr()}")
picked = grid[[0, 2]]
picked[0, 0] = 100
print("writing into the copy leaves grid alone:", grid[0, 0].item())
grid[[0, 2], 0] = -1          # as an assignment target, advanced indexing writes in place (index_put_)
print("grid[[0, 2], 0] = -1 writes:", grid[:, 0].tolist())

# %% [markdown]
# ## 7. Tensor API snippets from the notes, on PyTorch 2.13
#
# Older notes and blog posts carry snippets that no longer hold. Each one run:
#
# * **Legacy constructors.** `torch.IntTensor(1)` is *not* the tensor `[1]`: an
#   integer argument is a *size*, and the memory is not initialized (the notes print
#   `tensor([5])` — whatever was in memory). With a list it is data. Use
#   `torch.tensor(data, dtype=)`, `torch.zeros(size, dtype=)` or `torch.empty`.

# %%
print(torch.IntTensor(1).shape, "(uninitialized) | IntTensor([1]):", torch.IntTensor([1]),
      "| IntTensor(2, 4).zero_():", torch.IntTensor(2, 4).zero_().shape)
print(torch.Tensor(np.array(2.0)), torch.BoolTensor(np.array([1, 0, 2, 0])),
      "torch.Tensor is float32:", torch.Tensor([1]).dtype)

# %% [markdown]
# * **`set_default_tensor_type`** is deprecated since 2.1 (it warns); use
#   `torch.set_default_dtype` (and `set_default_device`).
# * **`Variable`** has been a no-op since 0.4: it returns a plain `Tensor`, and
#   `.data` is only an unsafe `detach()`. Convert with `.detach().cpu().numpy()`.
# * **"There is no `torch.permute`; `transpose` works only on 2-D"**: both exist and
#   work on any number of dimensions.
# * **`F.normalize(torch.tensor([[6, 8]]))`** does not give `[[0.6, 0.8]]`: the norm
#   needs a float tensor, and int64 raises. With `[[6.0, 8.0]]` it does.
# * **Named tensors** (`names=`, `align_to`), a prototype in 1.x, are gone.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.set_default_tensor_type(torch.FloatTensor)
print("set_default_tensor_type:", str(caught[0].message).split(",")[0])
torch.set_default_dtype(torch.float32)

from torch.autograd import Variable  # noqa: E402

v = Variable(torch.ones(2), requires_grad=True)
print("Variable(...) gives", type(v).__name__, "| requires_grad:", v.requires_grad, "| numpy:", v.detach().numpy())

cube = torch.zeros(2, 3, 5)
print("torch.permute:", torch.permute(cube, (2, 0, 1)).shape, "| transpose(0, 2) on 3-D:", cube.transpose(0, 2).shape,
      "| chained transposes == permute:", torch.equal(cube.transpose(0, 2).transpose(1, 2), cube.permute(2, 0, 1)))

try:
    torch.nn.functional.normalize(torch.tensor([[6, 8]]))
except RuntimeError as err:
    print("F.normalize(int64): RuntimeError:", err)
print("F.normalize(float):", torch.nn.functional.normalize(torch.tensor([[6.0, 8.0]])))
try:
    torch.zeros(2, 3, names=("N", "C"))
except TypeError as err:
    print("named tensors: TypeError:", err)

# %% [markdown]
# The rest of the notes' snippets, which still hold: `resize_` changes the size
# whatever the data (and may reallocate — avoid it); `cat` joins along a dimension
# while `stack` adds one; a one-hot matrix by `scatter_`; `nonzero`; pairwise
# distances by broadcasting (`X1[:, None, :] - X2` has shape (n1, n2, d)); and a
# tensor ↔ PIL image round trip (HWC bytes ↔ CHW floats in [0, 1], a `permute`).

# %%
r = torch.arange(6.0)
r.resize_(2, 2)
print("resize_(2, 2):", r.tolist())
parts = [torch.zeros(10, 5)] * 3
print("cat:", tuple(torch.cat(parts, dim=0).shape), "stack:", tuple(torch.stack(parts, dim=0).shape))
labels = torch.tensor([0, 2, 1])
print("one-hot:", torch.zeros(3, 4).scatter_(1, labels[:, None], 1.0).tolist())
sparse = torch.tensor([0, 3, 0, 5])
print("nonzero:", torch.nonzero(sparse).flatten().tolist(), "count:", torch.count_nonzero(sparse).item())
X1, X2 = torch.tensor([[0.0, 0.0], [3.0, 4.0]]), torch.tensor([[0.0, 0.0], [6.0, 8.0], [3.0, 0.0]])
dist = (X1[:, None, :] - X2).pow(2).sum(-1).sqrt()
print("pairwise distances:", dist.tolist(), "== torch.cdist:", torch.allclose(dist, torch.cdist(X1, X2)))

# %%
from PIL import Image  # noqa: E402

pixels = torch.randint(0, 256, (4, 6, 3), dtype=torch.uint8)           # H, W, C bytes, as PIL stores them
image = Image.fromarray(pixels.numpy())
as_tensor = torch.from_numpy(np.array(image)).permute(2, 0, 1).float() / 255
print(image.size, image.mode, "->", tuple(as_tensor.shape), as_tensor.dtype,
      "in [0, 1]:", bool(as_tensor.min() >= 0 and as_tensor.max() <= 1))
back_img = Image.fromarray(torch.clamp(as_tensor * 255, 0, 255).round().byte().permute(1, 2, 0).numpy())
print("round trip exact:", torch.equal(torch.from_numpy(np.array(back_img)), pixels))

# %% [markdown]
# ## 8. What the header holds: `TensorImpl`, and the autograd part
#
# In PyTorch the header is a C++ object, `c10::TensorImpl` (ezyang's notes: a fixed
# layout, the fields every tensor has first, then whatever a subclass adds). The wheel
# installs its C++ headers under `torch/include`, so its data members can be read from
# the very version that runs here (`minikernel/course/torch_source.py` reads them):

# %%
from minikernel.course import tensor_header, torch_source

members = torch_source.data_members("c10/core/TensorImpl.h", "TensorImpl")
print(len(members), "data members in TensorImpl; the first ten:", members[:10])
print("then one-bit flags such as", members[10], "and last", members[-1])
print("a subclass adds its own: SparseTensorImpl", torch_source.data_members("ATen/SparseTensorImpl.h", "SparseTensorImpl"))

# %% [markdown]
# Each member answers a Python call: `sizes_and_strides_` is `size()` and `stride()`,
# `storage_offset_` is `storage_offset()`, `data_type_` is `dtype`, `device_opt_` is
# `device`, `storage_` is `untyped_storage()`, `version_counter_` is `_version` (one
# counter shared by a tensor and the views made of it: a write through any of them
# bumps it for all). There is
# no layout member: `TensorImpl::layout()` derives `t.layout` from the dispatch keys
# in `key_set_` (a sparse tensor has the `SparseCPU` key). And `autograd_meta_` holds
# `requires_grad`, `grad_fn`, `grad` and, for a view, `_base`. minikernel's `Tensor`
# keeps the same fields as attributes; `tensor_header.header` asks either kind of
# tensor the same Python calls:

# %%
base = torch.arange(12.0).reshape(3, 4).clone()   # its own storage
view = base.t()
base.fill_(0.0)   # one write through the base: the view's version moves too
print(tensor_header.header(view, base), "| layout:", view.layout)
sparse = base.to_sparse()
print("sparse:", sparse.layout, "| its keys:", torch._C._dispatch_keys(sparse))

# %% [markdown]
# The check: the same views made of a minikernel Tensor and of a torch tensor, with one
# write through the base after the view is made, have the same header: size, strides,
# offset, dtype, version, which storage, and `grad_fn` (each side starts from its own
# fresh `zeros(3, 4)` base).

# %%
views = {"b.t()": lambda b: b.t(), "b[1:, ::2]": lambda b: b[1:, ::2], "b.view(2, 6)": lambda b: b.view(2, 6),
         "b[:, 1]": lambda b: b[:, 1], "b[1].expand(2, 4)": lambda b: b[1].expand(2, 4),
         "b.permute(1, 0)[2:]": lambda b: b.permute(1, 0)[2:]}


def view_after_write(b, name):
    v = views[name](b)
    b.fill_(1.0)
    return tensor_header.summary(v, b)


agree(lambda name: view_after_write(mk.Tensor.from_torch(torch.zeros(3, 4)), name),
      lambda name: view_after_write(torch.zeros(3, 4), name), [(name,) for name in views])

# %% [markdown]
# **The autograd part.** Before PyTorch 0.4 a tensor that took part in autograd was
# wrapped in a separate `Variable` object holding `grad`, `grad_fn` and
# `requires_grad`. 0.4 merged the two: there is one `Tensor` class, and the autograd
# fields live in an `AutogradMeta` that `TensorImpl::autograd_meta_` points to, and it
# is optional: the pointer may be null, which reads as all defaults (the comment in
# `TensorImpl.h`, printed below). A view records its base in a subclass,
# `DifferentiableViewMeta`. Their members, from the wheel:

# %%
print("AutogradMeta:", torch_source.data_members("torch/csrc/autograd/variable.h", "AutogradMeta"))
print("DifferentiableViewMeta adds:", torch_source.data_members("torch/csrc/autograd/variable.h", "DifferentiableViewMeta"))
print(*torch_source.header_lines("c10/core/TensorImpl.h", r"autograd_meta_ can be nullptr|AutogradMeta; intuitively|field set to null"),
      sep="\n")

# %% [markdown]
# What a plain tensor reports is those defaults. A leaf that requires grad and the
# result of an operation on it fill them in. An *inference tensor* (made under
# `torch.inference_mode()`) has no autograd part at all, not even for a view, so its
# view does not know its base. And `torch.autograd.Variable` survives only as a name:
# calling it returns a plain `Tensor` over the same memory, and every tensor passes
# `isinstance(t, Variable)`.

# %%
from torch.autograd import Variable  # noqa: E402

plain = torch.ones(4)
print("plain:  requires_grad", plain.requires_grad, "| grad_fn", plain.grad_fn, "| grad", plain.grad,
      "| is_leaf", plain.is_leaf, "| _base", plain._base)
leaf = torch.ones(4, requires_grad=True)
out = leaf * 2
print("leaf:   requires_grad", leaf.requires_grad, "| is_leaf", leaf.is_leaf,
      "|| leaf * 2: grad_fn", out.grad_fn.name(), "| is_leaf", out.is_leaf)
print("view of plain: _base is plain:", plain[1:]._base is plain)
with torch.inference_mode():
    frozen = torch.ones(4)
    frozen_view = frozen[1:]
print("inference tensor's view: _base", frozen_view._base, "| is_inference", frozen_view.is_inference())
wrapped = Variable(plain)
print("Variable(plain): type", type(wrapped).__name__, "| is torch.Tensor:", type(wrapped) is torch.Tensor,
      "| same memory:", wrapped.data_ptr() == plain.data_ptr(), "| isinstance(plain, Variable):",
      isinstance(plain, Variable))

# %% [markdown]
# minikernel does not make the part lazy: every `Tensor` carries its autograd
# attributes from the start (`_init_autograd` in `minikernel/tensor_autograd.py`);
# there is no pointer to save. What they report agrees with torch:

# %%
autograd_views = {"plain": lambda b: b, "leaf": lambda b: b.requires_grad_(),
                  "leaf.t()": lambda b: b.requires_grad_().t(), "leaf.detach()": lambda b: b.requires_grad_().detach()}


def autograd_case(b, name):
    h = tensor_header.header(autograd_views[name](b), b)
    return h["requires_grad"], h["grad_fn"], h["is_leaf"], h["_base"]


agree(lambda name: autograd_case(mk.Tensor.from_torch(torch.ones(2, 3)), name),
      lambda name: autograd_case(torch.ones(2, 3), name), [(name,) for name in autograd_views])

# %% [markdown]
# ## Grade chapter 01
#
# Runs the tests of every exercise 1.x against PyTorch (hypothesis tries shapes with
# size-0 and size-1 dimensions, offsets, transposes, expands and views of views) and
# shows one row per exercise.

# %%
mk.grade("1.*")
