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
# # Chapter 03 — Autograd graphs: what `loss.backward()` walks
#
# Every operation on a tensor that requires grad does two things at once: it computes
# its result *now* (the graph is built eagerly, as the code runs), and it records a
# **node** that knows how to send a gradient back to its inputs. `loss.backward()`
# then walks those nodes from the loss to the leaves, applying the chain rule at
# each one. This chapter takes that machine apart in PyTorch, then has you rebuild
# it: the order the nodes run in, the engine, the backward formulas of the common
# operations, `autograd.grad`, a custom `Function` and `gradcheck`.
#
# **How each exercise goes.** PyTorch first, then your code on the same input, then
# a check that prints both. Until you write a function, the cells that need it show
# a short box ("Exercise 3.3 (run_backward) is not written yet", where and how to
# grade it) and Run All goes on.
# Any `backward()` in minikernel needs the engine (3.1 and 3.3), so the minikernel
# cells before section 3.3 only build graphs.
#
# **Values.** As in PyTorch, a Function's forward calls the same kernels as everything
# else, through the dispatcher below the Autograd key: your chapter 02 kernels, or,
# while one is unfinished, minikernel's numpy reference backend in its place, so this
# chapter works whether or not chapter 02 is done.
#
# **Where.** Your code goes in `minikernel/autograd/` (the package mirrors
# `torch.autograd`): `engine.py` (3.1, 3.3), `derivatives.py` (3.2, 3.4–3.6), `api.py`
# (3.7), `custom_functions.py` (3.8) and `finite_differences.py` (3.9).
#
# **Stuck?** References are in the same files under `solutions/autograd/`; switch one on with
# `MINIKERNEL_SOLUTIONS=3.3 make lab` (read once at import: restart the kernel after
# changing it). **Grading:** the last cell, or `python -m minikernel grade '3.*'`.

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
from minikernel import autograd as A
from minikernel.autograd import derivatives as D
from minikernel.autograd import finite_differences as G
from minikernel.autograd import functions as F
from minikernel.course import notebook_display
from minikernel.course.checking import agree
from minikernel.autograd.custom_functions import MyReLU

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__)

# %% [markdown]
# ## 1. The graph is built as the code runs
#
# `Y_hat` is computed the moment its line runs, whatever comes after it. Each result
# remembers the node that made it (`grad_fn`); each node lists where its gradients go
# next (`next_functions`: one `(node, input number)` per input, `None` for an input
# that needs no gradient). Leaves that require grad end in an `AccumulateGrad` node
# (C++ name `torch::autograd::AccumulateGrad`), which adds into `leaf.grad`.

# %%
w = torch.tensor([[3.0, 1.0]], requires_grad=True)
b = torch.tensor([[3.0]], requires_grad=True)
X = torch.randn(10, 2)
Y = torch.randn(10, 1)
Y_hat = X @ w.t() + b          # computed now
loss = torch.mean(torch.pow(Y_hat - Y, 2))
print("loss:", loss.detach())
node = loss.grad_fn
while node is not None:
    print(f"{node.name():<34} -> {[n.name() if n is not None else None for n, _ in node.next_functions]}")
    node = node.next_functions[0][0]

# %% [markdown]
# ## 2. backward on a scalar and on a non-scalar
#
# For f(x) = a·x² + b·x + c at x = 0 with a = 1, b = −2, c = 1 the derivative is 2ax + b = −2.
# A non-scalar `y` needs a `gradient` of its shape: `y.backward(gradient)` computes the
# vector–Jacobian product gradientᵀ·∂y/∂x, the same as `(y * gradient).sum().backward()`.

# %%
a, b_, c = torch.tensor(1.0), torch.tensor(-2.0), torch.tensor(1.0)
x = torch.tensor(0.0, requires_grad=True)
(a * torch.pow(x, 2) + b_ * x + c).backward()
print("scalar: dy/dx =", x.grad)

x = torch.tensor([[0.0, 0.0], [1.0, 2.0]], requires_grad=True)
y = a * torch.pow(x, 2) + b_ * x + c
print("y =", y)
y.backward(gradient=torch.ones(2, 2))
print("with gradient=ones:\n", x.grad)
x.grad = None
(a * torch.pow(x, 2) + b_ * x + c).mul(torch.ones(2, 2)).sum().backward()
print("via sum(y * gradient):\n", x.grad)

# %% [markdown]
# ## 3. Leaves, non-leaves, hooks and retain_grad
#
# `x = 3; y1 = x + 1; y2 = 2x; loss = (y1 − y2)²`. Only leaves keep their gradient:
# x.grad = 2(y1 − y2)·(1 − 2) = 2·(4 − 6)·(−1) = 4, while `y1.grad`, `y2.grad` and
# `loss.grad` stay None (PyTorch warns when you read them). To see a non-leaf's
# gradient, register a hook (called with it during backward) or call `retain_grad()`.
# The hooks fire in the order the engine runs the nodes: `y2`'s node was created
# after `y1`'s, and among ready nodes the engine runs the newest first.

# %%
x = torch.tensor(3.0, requires_grad=True)
y1 = x + 1
y2 = 2 * x
loss = (y1 - y2) ** 2
y1.register_hook(lambda grad: print("y1 grad:", grad))
y2.register_hook(lambda grad: print("y2 grad:", grad))
loss.retain_grad()
loss.backward()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("x.grad:", x.grad, "| y1.grad:", y1.grad, "| y2.grad:", y2.grad, "| loss.grad:", loss.grad)
print("warnings about non-leaf .grad:", len(caught))
print("is_leaf:", x.is_leaf, y1.is_leaf, y2.is_leaf, loss.is_leaf)

# %% [markdown]
# A common definition — "a leaf is a tensor the user created *and* that requires
# grad" — is not PyTorch's. Any tensor **not produced by a recorded operation** is a
# leaf, whether it requires grad or not; and a result computed from tensors that need
# no gradient is not recorded, so it is a leaf too. What is special about leaves that
# require grad is only that backward *fills* their `.grad`.

# %%
plain = torch.ones(2)
print("created, no grad:", plain.is_leaf, "| computed from it:", (plain * 2).is_leaf,
      "| computed from a grad-requiring leaf:", (x * 2).is_leaf)

# %% [markdown]
# ## 4. The graph is freed after backward
#
# Backward frees what the nodes saved (here `PowBackward0` saved `y1 − y2`). A second
# backward through the same graph raises, unless the first kept it with
# `retain_graph=True`. Gradients *accumulate*: that is why training loops zero them.

# %%
x = torch.tensor(3.0, requires_grad=True)
loss = ((x + 1) - 2 * x) ** 2
loss.backward(retain_graph=True)
loss.backward()
print("after two backward calls x.grad =", x.grad, "(4 + 4)")
try:
    loss.backward()
except RuntimeError as err:
    print("RuntimeError:", str(err)[:95], "...")

# %% [markdown]
# ## 5. backward vs autograd.grad; higher derivatives
#
# Both run the same engine. `backward` accumulates into the leaves' `.grad`;
# `torch.autograd.grad(outputs, inputs)` returns the gradients and leaves `.grad`
# alone. With `create_graph=True` the backward computation is itself recorded, so a
# gradient can be differentiated again: for y = a·x² + b·x + c, dy/dx = 2ax + b and
# d²y/dx² = 2a. That is also how a **gradient penalty** (a loss on the gradient's
# norm) is trained.

# %%
x = torch.tensor(0.0, requires_grad=True)
y = a * torch.pow(x, 2) + b_ * x + c
(dy_dx,) = torch.autograd.grad(y, x, create_graph=True)
(d2y_dx2,) = torch.autograd.grad(dy_dx, x)
print("dy/dx =", dy_dx.item(), " d2y/dx2 =", d2y_dx2.item(), " x.grad =", x.grad)

w5 = torch.tensor([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
inp5 = torch.tensor([[1.0, 2.0], [-0.5, 0.7]], requires_grad=True)
out5 = ((inp5 @ w5).tanh() ** 2).sum()
(g_inp5,) = torch.autograd.grad(out5, inp5, create_graph=True)
penalty5 = g_inp5.pow(2).sum()
(out5 + penalty5).backward()
print("penalty:", round(penalty5.item(), 6), " w.grad:", w5.grad)

# %% [markdown]
# `autograd.grad` takes several inputs (one gradient each) and several outputs (their
# gradients are summed). For y1 = x1·x2 and y2 = x1 + x2 at (1, 2): ∂y1/∂(x1, x2) =
# (2, 1); of y1 + y2, (3, 2). The first call keeps the graph for the second
# (`retain_graph=True`).

# %%
x1, x2 = torch.tensor(1.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
y1, y2 = x1 * x2, x1 + x2
print("d y1:", torch.autograd.grad(y1, [x1, x2], retain_graph=True))
print("d (y1 + y2):", torch.autograd.grad([y1, y2], [x1, x2]))

# %% [markdown]
# **Backward through a cut.** The chain rule lets you run backward in pieces — what
# pipeline and model parallelism do, one piece per device. Cut the graph at `y` with
# `y_in = y.clone().detach().requires_grad_()`, run the second half from `y_in`,
# backward to `y_in.grad`, then continue with `y.backward(y_in.grad)`: the leaf gets
# the same gradient as one backward through the whole graph.

# %%
w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
y = (w * 3).tanh()                      # first half (device 0, say)
y_in = y.clone().detach().requires_grad_()
z = (y_in ** 2).sum()                   # second half (device 1)
z.backward()
y.backward(y_in.grad)
whole = w.detach().clone().requires_grad_()
((whole * 3).tanh() ** 2).sum().backward()
print("in two pieces:", w.grad, "\nin one:       ", whole.grad, torch.allclose(w.grad, whole.grad))

# %% [markdown]
# And gradients are what optimizers consume: SGD (lr 0.01) on f(x) = x² − 2x + 1 from
# x = 0 walks to the minimum x = 1, f = 0 in 500 steps (chapter 08 opens the optimizer).

# %%
x = torch.tensor(0.0, requires_grad=True)
opt = torch.optim.SGD([x], lr=0.01)
for _ in range(500):
    opt.zero_grad()
    y = a * torch.pow(x, 2) + b_ * x + c
    y.backward()
    opt.step()
print("x =", round(x.item(), 4), " y =", round((a * x ** 2 + b_ * x + c).item(), 6))

# %% [markdown]
# ## 6. A custom Function: the notes' MyReLU
#
# A `torch.autograd.Function` subclass supplies both halves: `forward` computes and
# saves what backward needs (`ctx.save_for_backward`), `backward` maps the output's
# gradient to the inputs'. With X = [[−1, −1], [1, 1]], w = [[3, 1]], b = [[3]] and
# Y = [[2, 3]] the notes print w.grad = [[4.5, 4.5]] and b.grad = [[4.5]].

# %%
class TorchMyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


w = torch.tensor([[3.0, 1.0]], requires_grad=True)
b = torch.tensor([[3.0]], requires_grad=True)
X = torch.tensor([[-1.0, -1.0], [1.0, 1.0]])
Y = torch.tensor([[2.0, 3.0]])
Y_hat = TorchMyReLU.apply(X @ w.t() + b)
torch.mean(torch.pow(Y_hat - Y, 2)).backward()
print("w.grad:", w.grad, " b.grad:", b.grad, " node:", Y_hat.grad_fn.name())

# %% [markdown]
# ## 7. In-place operations, and when they are allowed
#
# Overwriting a tensor is fine when no node needs its old value: `relu` keeps its
# *result* (dy/dx = (y > 0)), so `relu_` on a fresh intermediate works. `exp` also
# keeps its result, so overwriting that result breaks backward: every tensor has a
# **version counter**, bumped by each in-place write, and a node checks the versions
# of what it saved. `detach()` shares memory (and the counter) with its source.

# %%
x = torch.tensor([-1.0, 2.0], requires_grad=True)
h = x * 3
h.relu_()                 # fine: ReluBackward0 needs only the output
h.sum().backward()
print("relu_ allowed, x.grad =", x.grad)
z = x.exp()
z.add_(1)                 # ExpBackward0 saved z, now at version 1
try:
    z.sum().backward()
except RuntimeError as err:
    print("RuntimeError:", str(err)[:120], "...")
d = x.detach()
print("detach shares memory:", d.data_ptr() == x.data_ptr(), "| requires_grad:", d.requires_grad)

# %% [markdown]
# So a ReLU may run in place, which saves one activation's memory per layer. The
# notes switch every ReLU of a model at once with `model.apply(fn)`, which calls `fn`
# on each submodule:

# %%
relu_net = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4), torch.nn.ReLU())
relu_net.apply(lambda m: setattr(m, "inplace", True) if isinstance(m, torch.nn.ReLU) else None)
print(relu_net)
relu_net(torch.randn(3, 2)).sum().backward()
print("backward still works:", relu_net[0].weight.grad.shape)

# %% [markdown]
# **clone and detach.** They answer two different questions: *new memory?* and *in the
# graph?* `clone()` copies and stays in the graph (`CloneBackward0`: gradients flow
# back to the source); `detach()` shares the memory and leaves the graph. The notes'
# idiom `source.clone().detach()` makes an independent copy (add
# `.requires_grad_()` for a new leaf); `detach().clone()` gives the same and skips
# recording the clone.

# %%
src = torch.ones(2, requires_grad=True) * 1.0   # a non-leaf, so clone has a graph to join
for name, out in [("clone()", src.clone()), ("detach()", src.detach()), ("clone().detach()", src.clone().detach()),
                  ("detach().clone()", src.detach().clone())]:
    print(f"{name:17} new memory: {out.data_ptr() != src.data_ptr()!s:5}  in graph: {out.requires_grad!s:5}"
          f"  grad_fn: {type(out.grad_fn).__name__ if out.grad_fn else None}")

# %% [markdown]
# A detached tensor has its own *header*. Older docs warned that `resize_` or
# `transpose_` on it would raise; on 2.13 they just change the detached header — the
# original keeps its shape — while data writes still reach both, and every in-place
# call (the `t_()` too) bumps the shared version counter.

# %%
x = torch.ones(2, 3, requires_grad=True)
d = x.detach()
d.t_()
print("after d.t_(): d", tuple(d.shape), "x", tuple(x.shape))
d.zero_()
print("after d.zero_(): x =", x.detach().flatten().tolist(), "version", x._version)

# %% [markdown]
# **In place through a view.** A view (`a[0]`, `a.t()`, `a.view(...)`) shares memory
# with its base (`view._base`) and the base's version counter. Writing through the view
# changes the base too, so the base's *history* must change with it: its `grad_fn`
# becomes `CopySlices`, which runs the in-place op's backward on the part the view
# covers and passes the rest of the base's gradient through unchanged; every view of
# the base then reaches the graph through it (`AsStridedBackward0`). In-place through
# a view of a leaf that requires grad is refused, like in-place on the leaf itself.

# %%
root = torch.ones(2, 2, requires_grad=True)
a = root.clone()
row = a[0]
row.mul_(2)                  # writes into a: a's history is rewritten
print("a.grad_fn:", type(a.grad_fn).__name__, "| row.grad_fn:", type(row.grad_fn).__name__,
      "| shared version:", a._version, row._version, "| row._base is a:", row._base is a)
a.sum().backward()
print("root.grad:", root.grad.tolist())   # row 0 was doubled: gradient 2 there, 1 elsewhere
try:
    root[0].mul_(2)
except RuntimeError as err:
    print("RuntimeError:", err)


# %% [markdown]
# `gradcheck` compares a Function's backward with finite differences (in float64:
# in float32 rounding alone breaks the tolerance); `gradgradcheck` does the same for
# the backward of backward. The notes' `Square`:

# %%
class TorchSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * 2 * x


xd = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
print("gradcheck:", torch.autograd.gradcheck(TorchSquare.apply, xd),
      " gradgradcheck:", torch.autograd.gradgradcheck(TorchSquare.apply, xd))
with warnings.catch_warnings(record=True) as caught:  # torch warns that the input is not float64
    warnings.simplefilter("always")
    verdict = torch.autograd.gradcheck(TorchSquare.apply, xd.detach().float().requires_grad_(), raise_exception=False)
print("float32 gradcheck:", verdict, "| warning:", str(caught[0].message)[:62], "...")

# %% [markdown]
# The notes' bigger custom Function: a 2-D convolution (after PyTorch's
# conv-bn tutorial). Its backward is two convolutions — the input's gradient is a
# *transposed* convolution of the output's gradient with the weight, the weight's
# gradient a convolution of the input with the output's gradient (batch and channel
# axes swapped). `@once_differentiable` declares that backward itself is not
# differentiable: it runs without recording, so its result carries no graph and a
# second derivative is unavailable instead of silently wrong (`gradgradcheck` fails).
# The notes check it on a (10, 3, 7, 7) input with five 3×3 filters; smaller shapes
# keep the cell fast (gradcheck perturbs every
# input element twice).

# %%
from torch.autograd.function import once_differentiable  # noqa: E402


class Conv2D(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, weight):
        ctx.save_for_backward(X, weight)
        return torch.nn.functional.conv2d(X, weight)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        X, weight = ctx.saved_tensors
        grad_X = torch.nn.functional.conv_transpose2d(grad_out, weight)
        grad_weight = torch.nn.functional.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        return grad_X, grad_weight


torch.manual_seed(0)
weight = torch.rand(2, 3, 3, 3, requires_grad=True, dtype=torch.double)
Xc = torch.rand(2, 3, 5, 5, requires_grad=True, dtype=torch.double)
print("gradcheck:", torch.autograd.gradcheck(Conv2D.apply, (Xc, weight)))
print("same gradients as F.conv2d:", all(torch.allclose(g, h) for g, h in zip(
    torch.autograd.grad(Conv2D.apply(Xc, weight).sum(), (Xc, weight)),
    torch.autograd.grad(torch.nn.functional.conv2d(Xc, weight).sum(), (Xc, weight)))))
(g_x,) = torch.autograd.grad(Conv2D.apply(Xc, weight).sum(), Xc, create_graph=True)
print("create_graph=True, but the gradient has no graph: requires_grad =", g_x.requires_grad)

# %% [markdown]
# ## 8. The same graph in minikernel
#
# minikernel records the same nodes with the same names (`minikernel/_C/graph.py`,
# `minikernel/autograd/functions.py`). Building a graph needs none of your code; running it
# backward does.

# %%
mw = mk.tensor([[3.0, 1.0]], requires_grad=True)
mb = mk.tensor([[3.0]], requires_grad=True)
mX = mk.Tensor.from_torch(X.clone())
m_loss = ((mX @ mw.t() + mb - mk.Tensor.from_torch(Y.clone())) ** 2).mean()
print(m_loss)
node = m_loss.grad_fn
while node is not None:
    print(f"{node.name():<20} -> {[n.name() if n is not None else None for n, _ in node.next_functions]}")
    node = node.next_functions[0][0]

# %% [markdown]
# ## Exercise 3.1 — topological_order
#
# Which node may run when? A node runs once every node that sends it a gradient has
# run; among the ready ones PyTorch picks the newest (largest sequence number). Here
# is the order PyTorch ran the nodes of a diamond-shaped graph, recorded with node
# pre-hooks:

# %%
tx = torch.tensor(0.5, requires_grad=True)
t_a = tx.exp()
t_out = (t_a + tx.tanh()).sigmoid() + t_a
torch_order, seen, stack = [], set(), [t_out.grad_fn]
while stack:
    n = stack.pop()
    if n is not None and n not in seen:
        seen.add(n)
        n.register_prehook(lambda grads, name=n.name().split("::")[-1]: torch_order.append(name))
        stack.extend(m for m, _ in n.next_functions)
t_out.backward()
print(torch_order)

# %% [markdown]
# Your `topological_order` in `minikernel/autograd/engine.py` (≈15 lines, `heapq`, no
# recursion) on the same expression:

# %%
mx = mk.tensor(0.5, requires_grad=True)
m_a = mx.exp()
m_out = (m_a + mx.tanh()).sigmoid() + m_a
print([n.name() for n in A.topological_order([m_out.grad_fn])])

# %%
mx = mk.tensor(0.5, requires_grad=True)
m_a = mx.exp()
m_out = (m_a + mx.tanh()).sigmoid() + m_a
print("same order as torch:", [n.name() for n in A.topological_order([m_out.grad_fn])] == torch_order)

# %% [markdown]
# ## Exercise 3.2 — sum_to_shape
#
# An input of shape (3, 1) broadcast to (2, 3, 4) was used 2·4 times per element, so
# its gradient is the sum of those 8 contributions: PyTorch's `sum_to_size`.

# %%
g = torch.arange(24.0).view(2, 3, 4)
print(g.sum_to_size(3, 1).flatten().tolist(), g.sum_to_size(4).tolist(), g.sum_to_size(1, 1, 4).flatten().tolist())

# %%
mg = mk.Tensor.from_torch(g)
print(D.sum_to_shape(mg, (3, 1)))

# %%
agree(lambda shape: D.sum_to_shape(mg, shape).to_torch().flatten().tolist(),
      lambda shape: g.sum_to_size(shape).flatten().tolist(),
      [((3, 1),), ((4,),), ((1, 1, 4),), ((2, 3, 4),), ((),), ((2, 1, 1),)])

# %% [markdown]
# ## Exercise 3.3 — run_backward, accumulate_grad
#
# The engine: seed the roots' gradients, run the nodes in `topological_order`, add up
# what arrives at each node (an `InputBuffer` per node), pass each node's results along
# its `next_functions`; at a leaf `AccumulateGrad` calls your `accumulate_grad`.
# PyTorch on an expression using only operations whose backward is already written
# (add, sub, exp, tanh, sigmoid), with hooks on the two branches:

# %%
x = torch.tensor(0.5, requires_grad=True)
y1, y2 = x.tanh(), x.exp()
y1.register_hook(lambda g: print("y1 grad:", round(g.item(), 6)))
y2.register_hook(lambda g: print("y2 grad:", round(g.item(), 6)))
loss = (y1 - y2 + y1).sigmoid()
loss.backward()
print("x.grad:", round(x.grad.item(), 6))
loss = (x.tanh() - x.exp() + x.tanh()).sigmoid()
loss.backward()
print("after a second backward, accumulated:", round(x.grad.item(), 6))

# %%
mx = mk.tensor(0.5, requires_grad=True)
my1, my2 = mx.tanh(), mx.exp()
my1.register_hook(lambda g: print("y1 grad:", round(g.item(), 6)))
my2.register_hook(lambda g: print("y2 grad:", round(g.item(), 6)))
m_loss = (my1 - my2 + my1).sigmoid()
m_loss.backward()
print("x.grad:", round(mx.grad.item(), 6))
m_loss = (mx.tanh() - mx.exp() + mx.tanh()).sigmoid()
m_loss.backward()
print("after a second backward, accumulated:", round(mx.grad.item(), 6))

# %% [markdown]
# And the engine's other duties: freeing the graph, refusing a second backward, the
# version check, and in-place writes through a view (the base's `CopySlices` node).

# %%
mx = mk.tensor([1.0, 2.0], requires_grad=True)
m_y = mx.exp().sum()
m_y.backward()
try:
    m_y.backward()
except RuntimeError as err:
    print("second backward:", str(err)[:60], "...")
m_z = mx.exp().exp()
m_z.add_(1)
try:
    m_z.sum().backward()
except RuntimeError as err:
    print("version check:", str(err)[:92], "...")
m_root = mk.ones(2, 2, requires_grad=True)
m_a = m_root.clone()
m_a[0].exp_()                # CopySlices, as in torch (section 7); exp's backward is no exercise
m_a.sum().backward()
print("through a view:", m_a.grad_fn.name(), "| root.grad:", m_root.grad.to_numpy().astype(float).round(4).tolist())

# %% [markdown]
# No recursion: a chain of 10 000 operations backpropagates (Python's default
# recursion limit is 1000).

# %%
mx = mk.tensor(0.0, requires_grad=True)
m_y = mx
for _ in range(10_000):
    m_y = m_y + mx
m_y.backward()
print("d/dx of x + x + ... (10 001 terms):", mx.grad.item())

# %% [markdown]
# ## Exercise 3.4 — mul_backward, div_backward, pow_backward
#
# With mul and pow in place the notes' example runs in minikernel: x.grad = 4, and
# the hooks print y2's gradient (4) before y1's (−4), as PyTorch did in section 3.

# %%
mx = mk.tensor(3.0, requires_grad=True)
my1 = mx + 1
my2 = 2 * mx
m_loss = (my1 - my2) ** 2
my1.register_hook(lambda grad: print("y1 grad:", grad))
my2.register_hook(lambda grad: print("y2 grad:", grad))
m_loss.retain_grad()
m_loss.backward()
print("x.grad:", mx.grad, "| loss.grad:", m_loss.grad)

# %%
ta = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
tb = torch.tensor([[0.5], [2.0]], dtype=torch.float64)
tg = torch.randn(2, 3, dtype=torch.float64)
for op in ("mul", "div", "pow"):
    p, q = ta.clone().requires_grad_(), tb.clone().requires_grad_()
    theirs = torch.autograd.grad(getattr(torch, op)(p, q), (p, q), tg)
    extra = [mk.Tensor.from_torch(ta ** tb)] if op == "pow" else []
    mine = getattr(D, f"{op}_backward")(*[mk.Tensor.from_torch(v.clone()) for v in (tg, ta, tb)], *extra)
    same = all(m.shape == tuple(t.shape) and torch.allclose(m.to_torch(), t) for m, t in zip(mine, theirs))
    print(f"{op}_backward: shapes {[m.shape for m in mine]}, same as torch: {same}")

# %% [markdown]
# ## Exercise 3.5 — matmul_backward
#
# d(a @ b)/da = grad @ bᵀ and d/db = aᵀ @ grad — plus the 1-D and batched cases of
# `torch.matmul`.

# %%
for sa, sb in [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)), ((2, 2, 3), (3, 4)), ((1, 2, 3), (2, 3, 1))]:
    p = torch.randn(sa, dtype=torch.float64, requires_grad=True)
    q = torch.randn(sb, dtype=torch.float64, requires_grad=True)
    out = torch.matmul(p, q)
    g = torch.randn(out.shape, dtype=torch.float64)
    theirs = torch.autograd.grad(out, (p, q), g)
    mine = D.matmul_backward(*(mk.Tensor.from_torch(v.detach().clone()) for v in (g, p, q)))
    same = all(m.shape == tuple(t.shape) and torch.allclose(m.to_torch(), t) for m, t in zip(mine, theirs))
    print(f"{str(sa):>9} @ {str(sb):<9} -> {str(tuple(out.shape)):<9} same as torch: {same}")

# %% [markdown]
# ## Exercise 3.6 — max_backward, max_dim_backward
#
# `x.max()` with ties shares the gradient evenly; `x.max(dim)` sends it to the index
# it returned.

# %%
tx = torch.tensor([1.0, 3.0, 3.0], requires_grad=True)
tx.max().backward()
print("torch, max():", tx.grad.tolist())
tx2 = torch.tensor([[1.0, 3.0, 3.0], [4.0, 0.0, 4.0]], requires_grad=True)
tx2.max(1).values.sum().backward()
print("torch, max(1):", tx2.grad.tolist())

# %%
mx = mk.tensor([1.0, 3.0, 3.0])
print("max_backward:", D.max_backward(mk.tensor(1.0), mx, F.max(mx)).tolist())
mx2 = mk.tensor([[1.0, 3.0, 3.0], [4.0, 0.0, 4.0]])
values, indices = F.max(mx2, 1)
print("max_dim_backward:", D.max_dim_backward(mk.tensor([1.0, 1.0]), indices, (2, 3), 1, False).tolist())

# %% [markdown]
# And through the engine, as `x.max().backward()`:

# %%
mx = mk.tensor([1.0, 3.0, 3.0], requires_grad=True)
mx.max().backward()
mx2 = mk.tensor([[1.0, 3.0, 3.0], [4.0, 0.0, 4.0]], requires_grad=True)
mx2.max(1).values.sum().backward()
print("yours, max():", mx.grad.tolist(), "| max(1):", mx2.grad.tolist())

# %% [markdown]
# ## Exercise 3.7 — grad
#
# `autograd.grad` with `create_graph=True`: the second derivative of a·x² + b·x + c,
# and the gradient penalty of section 5, in minikernel.

# %%
mx = mk.tensor(0.0, requires_grad=True)
m_y = 1.0 * mx ** 2 + -2.0 * mx + 1.0
(m_dy,) = A.grad(m_y, mx, create_graph=True)
(m_d2y,) = A.grad(m_dy, mx)
print("dy/dx =", m_dy.item(), " d2y/dx2 =", m_d2y.item(), " x.grad =", mx.grad)

# %%
mw = mk.tensor([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
m_inp = mk.tensor([[1.0, 2.0], [-0.5, 0.7]], requires_grad=True)
m_out = ((m_inp @ mw).tanh() ** 2).sum()
(m_g,) = A.grad(m_out, m_inp, create_graph=True)
m_penalty = (m_g ** 2).sum()
(m_out + m_penalty).backward()
print("penalty:", round(m_penalty.item(), 6), " w.grad:", mw.grad)
print("same as torch:", abs(m_penalty.item() - penalty5.item()) < 1e-5, torch.allclose(mw.grad.to_torch(), w5.grad))

# %% [markdown]
# ## Exercise 3.8 — my_relu_forward, my_relu_backward
#
# The notes' MyReLU as a minikernel `Function` (`minikernel/autograd/custom_functions.py`):
# w.grad should be [[4.5, 4.5]] and b.grad [[4.5]], as with PyTorch in section 6.

# %%
mw = mk.tensor([[3.0, 1.0]], requires_grad=True)
mb = mk.tensor([[3.0]], requires_grad=True)
mX = mk.tensor([[-1.0, -1.0], [1.0, 1.0]])
mY = mk.tensor([[2.0, 3.0]])
m_hat = MyReLU.apply(mX @ mw.t() + mb)
((m_hat - mY) ** 2).mean().backward()
print("w.grad:", mw.grad, " b.grad:", mb.grad, " node:", m_hat.grad_fn.name())

# %% [markdown]
# ## Exercise 3.9 — numerical_jacobian, gradcheck
#
# Your `gradcheck` must give PyTorch's verdict: True for a correct backward, False
# for one that is 1% off.

# %%
class TorchScaledSquare(torch.autograd.Function):
    factor = 1.0  # 1.0: a correct backward; anything else: a wrong one

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x * TorchScaledSquare.factor


class MkScaledSquare(A.Function):
    factor = 1.0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x * MkScaledSquare.factor


torch_verdicts = []
for TorchScaledSquare.factor in (1.0, 1.01):
    torch_verdicts.append(torch.autograd.gradcheck(TorchScaledSquare.apply, xd, raise_exception=False))
print("torch:", torch_verdicts)

# %%
m_in = mk.Tensor.from_torch(xd.detach().clone()).requires_grad_()
verdicts = []
for MkScaledSquare.factor in (1.0, 1.01):
    verdicts.append(G.gradcheck(MkScaledSquare.apply, [m_in], raise_exception=False))
print("yours:", verdicts, "| same verdicts as torch:", verdicts == torch_verdicts)

# %% [markdown]
# ## 9. Watching backward: the graph viewer
#
# The same expression in both libraries, side by side: torch's graph on the left
# (with the saved tensors its nodes hold), minikernel's on the right. Move the slider
# to step through backward in execution order: the running node turns orange, the
# ones that ran turn green, and the table shows the gradient arriving at each node.
# (The viewer runs backward once on each graph and restores the leaves' `.grad`.
# minikernel's side needs your exercises 3.1 and 3.3; it says so until then.)
# The pictures are drawn by graphviz's `dot`. Without it (`make lab` does not install
# it) each picture cell shows the drawing stored with the course (`chapters/figures/`,
# uncoloured) under one line that says how to install graphviz and draw your own.

# %% tags=["nbval-ignore-output"]
from widgets import GraphViewer, graph_picture

tw = torch.tensor([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
tin = torch.tensor([[1.0, 2.0]])
mw = mk.Tensor.from_torch(tw.detach().clone()).requires_grad_()
min_ = mk.Tensor.from_torch(tin.clone())
GraphViewer(((tin @ tw).tanh() * 2).sum(), ((min_ @ mw).tanh() * 2).sum(), params={"w": (tw, mw)})

# %% [markdown]
# The drawing alone is a plain SVG (`widgets.graph_svg`; `widgets.graph_picture`
# adds a PNG of it for viewers that do not draw SVG), here for torch's graph of the
# loss of section 1:

# %% tags=["nbval-ignore-output"]
w = torch.tensor([[3.0, 1.0]], requires_grad=True)
b = torch.tensor([[3.0]], requires_grad=True)
Y_hat = X @ w.t() + b
graph_picture(torch.mean(torch.pow(Y_hat - Y, 2)), params={"w": w, "b": b})

# %% [markdown]
# The notes draw the same graph with torchviz's `make_dot(y, params=...)`, which
# writes a graphviz file and renders it with `dot` (no network needed). Below, its
# drawing on the left beside `graph_svg`'s on the right: the same nodes (blue: the
# named parameters, grey: backward nodes, `AccumulateGrad` above each leaf);
# torchviz omits the saved tensors.
# (`widgets.hiddenlayer_compat.make_dot_svg` only renames torchviz's node ids,
# which are memory addresses, so the picture is the same every run.)

# %% tags=["nbval-ignore-output"]
from IPython.display import HTML  # noqa: E402

from widgets.hiddenlayer_compat import autograd_compare_html  # noqa: E402

HTML(autograd_compare_html(torch.mean(torch.pow(X @ w.t() + b - Y, 2)), params={"w": w, "b": b}))

# %% [markdown]
# ## 10. Layers instead of operations: hiddenlayer
#
# An autograd graph shows every operation; for a model one usually wants its layers.
# hiddenlayer 0.3 drew those through an ONNX export path that is gone from
# PyTorch 2; `widgets.hiddenlayer_compat` gives it a new importer (torch.fx with
# shape propagation), so `build_graph` works again. On the left the layers (Conv and
# ReLU folded into one box), on the right the autograd graph of the same forward pass
# (torchviz's `make_dot` draws the same kind of graph when it is installed).

# %% tags=["nbval-ignore-output"]
from IPython.display import HTML

from widgets import hiddenlayer_compat

model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                            torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 2))
HTML(hiddenlayer_compat.compare_html(model, torch.randn(1, 1, 8, 8)))

# %% [markdown]
# ## 11. Turning recording off: no_grad, inference_mode — and what eval() does not do
#
# Recording costs memory: every node keeps what its backward needs until backward
# runs. When no backward will follow — evaluation, inference, an optimizer's update
# of its parameters — switch recording off:
#
# * `with torch.no_grad():` results get no `grad_fn` and `requires_grad=False`; the
#   tensors are ordinary and may later enter a graph.
# * `with torch.inference_mode():` the same, and more: its results are *inference
#   tensors* with no version counter and no view tracking, a little faster, but they
#   may never be saved for a backward nor be written in place outside the mode.
# * `model.eval()` changes **none of this**. It flips `training` on every submodule,
#   which only changes what layers such as Dropout and BatchNorm compute (chapter 08
#   §9); the graph is recorded as before. Validation code wants both: `model.eval()`
#   *and* `torch.no_grad()`.

# %%
model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5))
inp = torch.ones(1, 3)
model.eval()
out_eval = model(inp)
print("eval():        grad_fn", type(out_eval.grad_fn).__name__, "| requires_grad", out_eval.requires_grad)
with torch.no_grad():
    out_ng = model(inp)
print("no_grad():     grad_fn", out_ng.grad_fn, "| requires_grad", out_ng.requires_grad)
with torch.inference_mode():
    out_inf = model(inp)
print("inference_mode: grad_fn", out_inf.grad_fn, "| is_inference", out_inf.is_inference(),
      "| no_grad result is_inference", out_ng.is_inference())
w_new = torch.ones(3, requires_grad=True)
print("no_grad result in a later graph:", (out_ng[0] * w_new).sum().requires_grad)
for what, op in [("saved for backward", lambda: (out_inf[0] * w_new).sum().backward()),
                 ("written in place", lambda: out_inf.add_(1))]:
    try:
        op()
    except RuntimeError as err:
        print(f"inference tensor {what}: RuntimeError:", str(err).split(".")[0])

# %% [markdown]
# `torch.set_grad_enabled(flag)` is the switchable form (a train/validate loop can use
# `with torch.set_grad_enabled(training):`), and `@torch.no_grad()` decorates a
# function. An optimizer's `step()` runs under no_grad — that is why updating a leaf
# in place there is allowed:

# %%
with torch.set_grad_enabled(False):
    print("set_grad_enabled(False):", (w_new * 2).requires_grad, "| is_grad_enabled:", torch.is_grad_enabled())
try:
    w_new.sub_(0.1)
except RuntimeError as err:
    print("outside: RuntimeError:", err)
with torch.no_grad():
    w_new.sub_(0.1)          # what SGD's step does: p -= lr * p.grad
print("inside no_grad:", w_new)

# %% [markdown]
# ## Grade

# %%
mk.grade("3.*")
