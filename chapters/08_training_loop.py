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
# # Chapter 08 — The training loop: optimizers, schedules, clipping, data, saving
#
# Every training loop is the same four lines, repeated: `optimizer.zero_grad()`,
# forward, `loss.backward()`, `optimizer.step()` — plus, once per epoch,
# `scheduler.step()`. This chapter opens each piece: what an optimizer keeps per
# parameter and how **param groups** give different parameters different options;
# SGD's momentum and Adam's moments; learning-rate **schedules**; gradient
# **clipping** by one norm over all gradients; torch's **DataLoader** (samplers,
# batch samplers, collate, workers); **saving** (state dicts, pickled modules,
# TorchScript); and what `train()`/`eval()` change. You rebuild the optimizers, a
# scheduler and clipping in `minikernel/optim/` and `minikernel/clip_grad.py`, and the
# chapter ends by training one model twice — with torch, and with minikernel's
# modules, autograd, optimizer, scheduler and clipping — to the same loss curve.
#
# **How each exercise goes.** First PyTorch's behaviour, then your function on the
# same input, then a check cell that prints your answer beside PyTorch's. Until you
# write a function, the cells that need it show a short box ("Exercise 8.2 (sgd) is
# not written yet", where and how to grade it) — that is expected; Run All goes on
# and every other cell runs. The cells that call `.backward()` on minikernel
# tensors also need chapter 03's exercises.
#
# **Stuck?** Each exercise has a reference under `solutions/` (`solutions/optim/` and
# `solutions/clip_grad.py`). To use it and go on, set `MINIKERNEL_SOLUTIONS` before
# starting JupyterLab (`MINIKERNEL_SOLUTIONS=8.2 make lab`, or `8.*` for the whole
# chapter, or `all`) — it is read once when `minikernel` is imported, so after
# changing it restart the kernel.
#
# **Grading.** The last cell runs `minikernel.grade("8.*")`; from a terminal,
# `make grade ARGS="'8.*'"` or `python -m minikernel grade 8.2`.

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
import collections
import contextlib
import copy
import inspect
import io
import logging
import pickle
import sys
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

import minikernel as mk
import minikernel.autograd.functions as F
import minikernel.nn as mk_nn
from minikernel import clip_grad, data, optim, saving
from minikernel.course import libtorch_build, notebook_display
from minikernel.course.checking import agree
from minikernel.optim import adam as mk_adam
from minikernel.optim import lr_scheduler
from minikernel.optim import optimizer as mk_optimizer
from minikernel.optim import sgd as mk_sgd
from widgets.dashboard import Dashboard

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__)

# %% [markdown]
# ## 1. One iteration: zero_grad → forward → backward → step
#
# PyTorch's documentation recommends this order, with the scheduler stepped once
# per epoch, after the optimizer. Here is the loop of the notes on a one-matrix
# "model", three samples and an exponentially decaying learning rate:

# %%
torch.manual_seed(0)
model = [torch.nn.Parameter(torch.randn(2, 2))]
dataset = [(torch.randn(2), torch.randn(2)) for _ in range(3)]
optimizer = torch.optim.SGD(model, 0.1)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
for epoch in range(3):
    for input, target in dataset:
        optimizer.zero_grad()
        output = model[0] @ input
        loss = torch.nn.functional.mse_loss(output, target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: lr {scheduler.get_last_lr()[0]:.3f}, last loss {loss.item():.4f}")
    scheduler.step()

# %% [markdown]
# `zero_grad()` comes first because `backward()` *adds* into `.grad`: forget it and
# each step uses the sum of all gradients so far. (Its default is
# `set_to_none=True`: the gradients become `None`, not zeros.)

# %%
w = torch.tensor([1.0, 2.0], requires_grad=True)
for i in range(3):
    (w * w).sum().backward()
    print(f"after backward {i + 1}: w.grad = {w.grad.tolist()}")
torch.optim.SGD([w], lr=0.1).zero_grad()
print("after zero_grad():", w.grad)

# %% [markdown]
# Stepping the scheduler before the optimizer skips the first learning rate; torch
# notices (it wraps `optimizer.step` to know whether it ran) and warns:

# %%
w = torch.zeros(2, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sched.step()
print(caught[0].category.__name__ + ":", str(caught[0].message).split(". ")[0] + ".")

# %% [markdown]
# ## 2. Param groups
#
# An optimizer holds a list of **param groups**: dicts with a `"params"` list and the
# options for those parameters. A group that does not set an option takes the
# optimizer's default. The notes' first form — one learning rate for the backbone, a
# smaller one for the classifier, the same momentum for both:

# %%
torch.manual_seed(0)
net = torch.nn.Sequential(collections.OrderedDict(base=torch.nn.Linear(4, 8), classifier=torch.nn.Linear(8, 2)))
opt = torch.optim.SGD([{"params": net.base.parameters()},
                       {"params": net.classifier.parameters(), "lr": 1e-3}], lr=1e-2, momentum=0.9)
for i, group in enumerate(opt.param_groups):
    print(f"group {i}: {len(group['params'])} tensors, lr {group['lr']}, momentum {group['momentum']}")

# %% [markdown]
# The notes' second form, common in detection code: weights with weight decay,
# BatchNorm scales and all biases without. The optimizer starts with one group and
# `add_param_group` adds the others; each gets every option it does not set:

# %%
torch.manual_seed(0)
convnet = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10))
g0, g1, g2 = [], [], []  # BatchNorm weights, other weights, biases
for v in convnet.modules():
    if hasattr(v, "bias") and isinstance(v.bias, torch.nn.Parameter):
        g2.append(v.bias)
    if isinstance(v, torch.nn.BatchNorm2d):
        g0.append(v.weight)
    elif hasattr(v, "weight") and isinstance(v.weight, torch.nn.Parameter):
        g1.append(v.weight)
opt = torch.optim.SGD(g0, lr=0.01, momentum=0.937, nesterov=True)
opt.add_param_group({"params": g1, "weight_decay": 5e-4})
opt.add_param_group({"params": g2})
print([[tuple(p.shape) for p in g["params"]] for g in opt.param_groups])
print(opt)

# %% [markdown]
# `add_param_group` checks what it is given. A parameter may be in one group only;
# sets are refused (their order changes between runs, and the state dict numbers
# parameters by order); only leaves can be optimized; named and unnamed parameters
# cannot mix. A parameter twice in the same group only warns (for now):

# %%
a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
for group in ({"params": [b, a]}, {"params": {b}}, {"params": [a * 2]}, {"params": [("b", b)]},
              {"params": [b, 3]}, [b]):
    try:
        torch.optim.SGD([a], lr=0.1).add_param_group(group)
    except (TypeError, ValueError) as err:
        print(f"{type(err).__name__}: {err}")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.optim.SGD([a, a], lr=0.1)
print(f"{caught[0].category.__name__}: {caught[0].message}")

# %% [markdown]
# ## Exercise 8.1 — add_param_group
#
# `minikernel.optim.Optimizer.__init__` calls `add_param_group` for each group, and
# so does `optimizer.add_param_group(...)`. Write it as a function of the list of
# groups, the new group and the defaults (`minikernel/optim/optimizer.py`): normalize
# `"params"` to a list (a single tensor, a list, a generator; not a set), split off
# names, check every parameter, fill in the defaults, refuse overlaps, append. The
# docstring lists torch's checks in order, with their messages. Until you do, no
# minikernel optimizer can be built.

# %%
p1, p2 = mk.tensor([1.0, 2.0], requires_grad=True), mk.tensor([3.0], requires_grad=True)
groups_81 = []
mk_optimizer.add_param_group(groups_81, {"params": [p1], "lr": 0.5}, {"lr": 0.1, "momentum": 0.9})
mk_optimizer.add_param_group(groups_81, {"params": p2}, {"lr": 0.1, "momentum": 0.9})
groups_81

# %% [markdown]
# The check builds the same layouts with `minikernel.optim.SGD` and `torch.optim.SGD`
# and compares, per group, the number of parameters and the options (an error counts
# as its type):

# %%
mk_params = [mk.tensor([1.0, 2.0], requires_grad=True), mk.tensor([3.0], requires_grad=True),
             mk.tensor([[4.0]], requires_grad=True)]
torch_params = [torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0], requires_grad=True),
                torch.tensor([[4.0]], requires_grad=True)]
layouts = {
    "one list": lambda a, b, c: [a, b, c],
    "two groups": lambda a, b, c: [{"params": [a]}, {"params": [b, c], "lr": 1e-3, "weight_decay": 0.1}],
    "a tensor as params": lambda a, b, c: [{"params": a}, {"params": (b, c), "momentum": 0.0}],
    "a generator": lambda a, b, c: [{"params": (p for p in (a, b))}],
    "named": lambda a, b, c: [("w", a), ("b", b)],
    "a set": lambda a, b, c: [{"params": {a}}],
    "overlap": lambda a, b, c: [{"params": [a, b]}, {"params": [b]}],
    "not a tensor": lambda a, b, c: [a, 3.0],
    "empty": lambda a, b, c: [],
}
agree(lambda name: [(len(g["params"]), g["lr"], g["momentum"], g["weight_decay"], "param_names" in g)
                    for g in optim.SGD(layouts[name](*mk_params), lr=0.1, momentum=0.9).param_groups],
      lambda name: [(len(g["params"]), g["lr"], g["momentum"], g["weight_decay"], "param_names" in g)
                    for g in torch.optim.SGD(layouts[name](*torch_params), lr=0.1, momentum=0.9).param_groups],
      [(name,) for name in layouts])

# %% [markdown]
# With your `add_param_group`, the notes' weight/BatchNorm/bias split on minikernel
# tensors prints the same optimizer as torch's above:

# %%
twin = {id(p): mk.Tensor.from_torch(p.detach().clone()).requires_grad_() for p in convnet.parameters()}
mk_opt = optim.SGD([twin[id(p)] for p in g0], lr=0.01, momentum=0.937, nesterov=True)
mk_opt.add_param_group({"params": [twin[id(p)] for p in g1], "weight_decay": 5e-4})
mk_opt.add_param_group({"params": [twin[id(p)] for p in g2]})
print("same groups and options as torch's:", repr(mk_opt) == repr(opt),
      mk_opt.state_dict()["param_groups"] == opt.state_dict()["param_groups"])

# %% [markdown]
# ## 3. SGD with momentum
#
# For each parameter θ with gradient g, `torch.optim.SGD` does (in this order):
#
# $$
# \begin{aligned}
# g &\leftarrow g + \lambda\,\theta &&\text{(weight\_decay } \lambda\text{)}\\
# b &\leftarrow \mu\, b + (1-\tau)\, g \quad (b = g \text{ at the first step}) &&\text{(momentum } \mu\text{, dampening } \tau)\\
# g &\leftarrow g + \mu\, b \text{ (nesterov) or } b &&\\
# \theta &\leftarrow \theta - \text{lr}\cdot g
# \end{aligned}
# $$
#
# The momentum buffer `b` is the optimizer's state for that parameter. With a
# constant gradient of 1 and μ = 0.9 it grows 1, 1.9, 2.71, ... towards 1/(1-μ) = 10:

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
opt = torch.optim.SGD([x], lr=0.1, momentum=0.9)
for step in range(3):
    x.grad = torch.ones(2)
    opt.step()
    print(f"step {step + 1}: x = {[round(v, 4) for v in x.tolist()]}, "
          f"buffer = {[round(v, 4) for v in opt.state[x]['momentum_buffer'].tolist()]}")
try:
    torch.optim.SGD([x], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# A parameter whose `.grad` is `None` is skipped entirely — no decay, no momentum.
# A zero gradient is not skipped: momentum keeps it moving. That is the practical
# difference between `zero_grad()` and `zero_grad(set_to_none=False)`:

# %%
for set_to_none in (True, False):
    x = torch.tensor([1.0], requires_grad=True)
    opt = torch.optim.SGD([x], lr=0.1, momentum=0.9)
    x.grad = torch.ones(1)
    opt.step()
    opt.zero_grad(set_to_none=set_to_none)
    opt.step()
    print(f"set_to_none={set_to_none}: grad {x.grad}, x after the second step {x.item():.4f}")

# %% [markdown]
# ## Exercise 8.2 — sgd
#
# `minikernel.optim.SGD.step()` collects, per group, the parameters that have a
# gradient and their buffers, and calls your `sgd(params, grads, momentum_buffer_list,
# weight_decay, momentum, lr, dampening, nesterov, maximize)` — the arguments of
# torch's functional `torch.optim.sgd.sgd` (called with keywords). Compute with numpy on the tensors' own
# memory (`values.array(t)`), put new buffers into the list, and bump each parameter's
# version after writing it. The constant-gradient run of section 3:

# %%
x_82 = mk.tensor([1.0, 2.0], requires_grad=True)
x_82.grad = mk.tensor([1.0, 1.0])
buffers_82 = [None]
for step in range(3):
    mk_sgd.sgd([x_82], [x_82.grad], buffers_82, weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0,
               nesterov=False, maximize=False)
    print(f"step {step + 1}: x = {[round(v, 4) for v in x_82.tolist()]}, "
          f"buffer = {[round(v, 4) for v in buffers_82[0].tolist()]}")

# %% [markdown]
# The check trains twin parameters for 30 steps with the same random gradients, in
# two groups with different options (Nesterov momentum and weight decay in one,
# dampening and `maximize` in the other), some steps with a gradient missing:

# %%
torch.manual_seed(1)
start = [torch.randn(3, 2), torch.randn(4), torch.randn(2)]
torch_params = [t.clone().requires_grad_() for t in start]
mk_params = [mk.Tensor.from_torch(t.clone()).requires_grad_() for t in start]
make_groups = lambda ps: [{"params": ps[:2], "nesterov": True, "weight_decay": 0.01},  # noqa: E731
                          {"params": ps[2:], "dampening": 0.3, "maximize": True, "lr": 0.05}]
torch_opt = torch.optim.SGD(make_groups(torch_params), lr=0.1, momentum=0.9)
mk_opt = optim.SGD(make_groups(mk_params), lr=0.1, momentum=0.9)
for step in range(30):
    for i, (tp, mp) in enumerate(zip(torch_params, mk_params)):
        g = None if (step + i) % 7 == 0 else torch.randn(tp.shape)
        tp.grad, mp.grad = g, (None if g is None else mk.Tensor.from_torch(g.clone()))
    torch_opt.step()
    mk_opt.step()
print("parameters equal to torch's (float tolerance):",
      [torch.allclose(mp.to_torch(), tp.detach(), rtol=1e-5, atol=1e-6) for mp, tp in zip(mk_params, torch_params)])
print("momentum buffers equal:", all(torch.allclose(mk_opt.state[mp]["momentum_buffer"].to_torch(),
                                                    torch_opt.state[tp]["momentum_buffer"], rtol=1e-5, atol=1e-6)
                                     for mp, tp in zip(mk_params, torch_params)))

# %% [markdown]
# ## 4. Adam and AdamW
#
# Adam keeps two moving averages per parameter, of the gradient (m) and of its square
# (v), corrects their start-up bias, and steps by m / (√v + ε): every coordinate moves
# by about `lr`, whatever the gradient's scale.
#
# $$
# m \leftarrow \beta_1 m + (1-\beta_1) g,\quad v \leftarrow \beta_2 v + (1-\beta_2) g^2,\quad
# \theta \leftarrow \theta - \frac{\text{lr}}{1-\beta_1^t}\,\frac{m}{\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon}
# $$
#
# Weight decay can enter in two places. **Adam** adds λθ to the gradient (an L2
# penalty) — which the normalization then rescales. **AdamW** shrinks θ itself by
# `lr·λ` before the step ("decoupled"). With a zero gradient the difference is stark:
# Adam's decay moves each coordinate by about `lr` per step whatever its size (0.1
# here), AdamW's multiplies it by 1 − lr·λ (here 0.99: 1 % of its value per step).

# %%
for name in ("Adam", "AdamW"):
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = getattr(torch.optim, name)([x], lr=0.1, weight_decay=0.1)
    trace = []
    for _ in range(3):
        x.grad = torch.zeros(2)
        opt.step()
        trace.append([round(v, 4) for v in x.tolist()])
    print(f"{name:<5}: {trace}   state: {sorted(opt.state[x])}, step {opt.state[x]['step']}")

# %% [markdown]
# `torch.optim.AdamW` is `Adam` with `decoupled_weight_decay=True` (and a default
# weight decay of 0.01): one implementation, two classes. `amsgrad=True` divides by
# the largest v seen so far instead of the current one.
#
# ## Exercise 8.3 — adam
#
# `adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad,
# beta1, beta2, lr, weight_decay, eps, maximize, decoupled_weight_decay)` updates the
# parameters and all their state in place; `state_steps` holds 0-d float32 tensors, as
# torch's `state["step"]` is. The zero-gradient AdamW run:

# %%
x_83 = mk.tensor([1.0, -2.0], requires_grad=True)
x_83.grad = mk.tensor([0.0, 0.0])
state_83 = [mk.tensor(0.0), mk.tensor([0.0, 0.0]), mk.tensor([0.0, 0.0])]  # step, exp_avg, exp_avg_sq
for _ in range(3):
    mk_adam.adam([x_83], [x_83.grad], [state_83[1]], [state_83[2]], [], [state_83[0]], amsgrad=False, beta1=0.9,
                 beta2=0.999, lr=0.1, weight_decay=0.1, eps=1e-8, maximize=False, decoupled_weight_decay=True)
    print([round(v, 4) for v in x_83.tolist()])

# %% [markdown]
# The check: Adam, AdamW and AdamW with amsgrad, 40 steps of random gradients each,
# against torch:

# %%
torch.manual_seed(2)
for name, options in (("Adam", {"weight_decay": 0.01}), ("AdamW", {}), ("AdamW", {"amsgrad": True, "betas": (0.5, 0.9)})):
    start = [torch.randn(3, 2), torch.randn(5)]
    torch_params = [t.clone().requires_grad_() for t in start]
    mk_params = [mk.Tensor.from_torch(t.clone()).requires_grad_() for t in start]
    torch_opt = getattr(torch.optim, name)(torch_params, lr=0.01, **options)
    mk_opt = getattr(optim, name)(mk_params, lr=0.01, **options)
    for step in range(40):
        for tp, mp in zip(torch_params, mk_params):
            tp.grad = torch.randn(tp.shape) * 10 ** (step % 3 - 1)
            mp.grad = mk.Tensor.from_torch(tp.grad.clone())
        torch_opt.step()
        mk_opt.step()
    same = all(torch.allclose(mp.to_torch(), tp.detach(), rtol=1e-5, atol=1e-6)
               for mp, tp in zip(mk_params, torch_params))
    same_state = all(torch.allclose(mk_opt.state[mp][key].to_torch(), torch_opt.state[tp][key], rtol=1e-5, atol=1e-6)
                     for mp, tp in zip(mk_params, torch_params) for key in torch_opt.state[tp])
    print(f"{name} {options}: parameters equal to torch's {same}, state equal {same_state}, "
          f"same options {repr(mk_opt) == repr(torch_opt)}")

# %% [markdown]
# ## 5. Learning-rate schedules
#
# A scheduler rewrites `group["lr"]` of every group. At construction it stores each
# group's starting lr as `group["initial_lr"]` (the *base* lr) and already applies
# epoch 0; each `scheduler.step()` moves to the next epoch. `LambdaLR` sets
# `lr = base_lr · lr_lambda(epoch)`. The notes' example: x = [1, 2], loss `sum(x)` (so
# the gradient is always [1, 1]), base lr 0.1 and `lr_lambda = (epoch + 1)²`:

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
optimizer = torch.optim.SGD([x], 0.1)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: (epoch + 1) ** 2)
for i in range(3):
    optimizer.zero_grad()
    y = torch.sum(x)
    y.backward()
    print(f"before optimizer.step(): x.grad {x.grad.tolist()}, x {[round(v, 4) for v in x.tolist()]}")
    optimizer.step()
    print(f"after optimizer.step():  x {[round(v, 4) for v in x.tolist()]}")
    scheduler.step()
    print("lr now:", [round(lr, 4) for lr in scheduler.get_last_lr()])

# %% [markdown]
# The lr used at step i is 0.1·(i+1)² — 0.1, 0.4, 0.9 — so x goes [1, 2] → [0.9, 1.9] →
# [0.5, 1.5] → [-0.4, 0.6]. The notes read the lr with `scheduler.get_lr()`. In
# current PyTorch that is the method the scheduler calls *inside* `step()` to compute
# the next lrs; called from outside it warns and points to `get_last_lr()`:

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("get_lr():", [round(v, 4) for v in scheduler.get_lr()], " get_last_lr():",
          [round(v, 4) for v in scheduler.get_last_lr()])
print(f"{caught[0].category.__name__}: {caught[0].message}")

# %% [markdown]
# With several groups, `lr_lambda` may be a list — one function per group — and the
# lrs come back as a list, one per group. The notes' second example: lrs 1 and 2,
# lambdas (e+1)² and e+1:

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
z = torch.tensor(3.0, requires_grad=True)
optimizer = torch.optim.SGD([{"params": [x], "lr": 1}, {"params": [z], "lr": 2}])
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, [lambda e: (e + 1) ** 2, lambda e: e + 1])
print(scheduler.get_last_lr())
for i in range(2):
    optimizer.zero_grad()
    y = torch.sum(x) + z
    y.backward()
    optimizer.step()
    scheduler.step()
    print(scheduler.get_last_lr())
try:
    torch.optim.lr_scheduler.LambdaLR(optimizer, [lambda e: 1.0])
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# (`torch.optim.SGD` is called here without `lr`: current PyTorch defaults it to
# 1e-3; both groups set their own anyway.)
#
# ## Exercise 8.4 — expand_lr_lambdas, lambda_lrs
#
# `minikernel.optim.lr_scheduler.LambdaLR` calls `expand_lr_lambdas(lr_lambda,
# num_groups)` once (one function per group, or torch's ValueError) and
# `lambda_lrs(base_lrs, lr_lambdas, last_epoch)` at every step. Note what the lambda
# multiplies: the *base* lr, every time.

# %%
lambdas_84 = lr_scheduler.expand_lr_lambdas(lambda e: (e + 1) ** 2, 2)
print(len(lambdas_84), lr_scheduler.lambda_lrs([1, 2], lambdas_84, 2))

# %% [markdown]
# minikernel's schedulers only read and write `param_groups`, so they can drive a
# torch optimizer too. The check steps both schedulers over the same kind of
# optimizer and prints the lrs after construction and after each of four steps:

# %%
for lrs, lr_lambda in (([0.1], lambda e: (e + 1) ** 2), ([1, 2], [lambda e: (e + 1) ** 2, lambda e: e + 1]),
                       ([0.5, 0.5], (lambda e: 0.9 ** e, lambda e: min(1.0, (e + 1) / 3)))):
    seen = {}
    for name, sched_module in (("yours", lr_scheduler), ("torch", torch.optim.lr_scheduler)):
        opt = torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs])
        sched = sched_module.LambdaLR(opt, lr_lambda)
        seen[name] = [[round(v, 4) for v in sched.get_last_lr()]]
        for _ in range(4):
            opt.step()
            sched.step()
            seen[name].append([round(v, 4) for v in sched.get_last_lr()])
    print(f"yours: {seen['yours']}\ntorch: {seen['torch']}  {'ok' if seen['yours'] == seen['torch'] else 'DIFFERENT'}")

# %% [markdown]
# And the notes' two examples again, now entirely in minikernel: tensors, autograd,
# `optim.SGD` and `LambdaLR` (this cell needs chapter 03's exercises, and 8.1, 8.2
# and 8.4):

# %%
x_mk = mk.tensor([1.0, 2.0], requires_grad=True)
optimizer_mk = optim.SGD([x_mk], 0.1)
scheduler_mk = lr_scheduler.LambdaLR(optimizer_mk, lambda epoch: (epoch + 1) ** 2)
for i in range(3):
    optimizer_mk.zero_grad()
    F.sum(x_mk).backward()
    optimizer_mk.step()
    scheduler_mk.step()
    print(f"x {[round(v, 4) for v in x_mk.tolist()]}, lr now {[round(v, 4) for v in scheduler_mk.get_last_lr()]}")
z_mk = mk.tensor(3.0, requires_grad=True)
optimizer_mk = optim.SGD([{"params": [x_mk], "lr": 1}, {"params": [z_mk], "lr": 2}])
scheduler_mk = lr_scheduler.LambdaLR(optimizer_mk, [lambda e: (e + 1) ** 2, lambda e: e + 1])
print(scheduler_mk.get_last_lr())
for i in range(2):
    optimizer_mk.zero_grad()
    F.add(F.sum(x_mk), z_mk).backward()
    optimizer_mk.step()
    scheduler_mk.step()
    print(scheduler_mk.get_last_lr())

# %% [markdown]
# ### StepLR and CosineAnnealingLR
#
# Two more schedules, complete in `minikernel/optim/lr_scheduler.py`: `StepLR`
# multiplies the lr by `gamma` every `step_size` epochs; `CosineAnnealingLR` follows a
# half cosine from the base lr down to `eta_min` in `T_max` epochs (and back up after
# that). Both compute the next lr from the current one, as torch's do. Each side
# drives a torch optimizer here:

# %%
schedules = {}
for label, make in (("StepLR(step_size=4, gamma=0.5)", lambda m, o: m.StepLR(o, step_size=4, gamma=0.5)),
                    ("CosineAnnealingLR(T_max=10, eta_min=0.01)", lambda m, o: m.CosineAnnealingLR(o, 10, 0.01)),
                    ("LambdaLR(warm-up 5)", lambda m, o: m.LambdaLR(o, lambda e: min(1.0, (e + 1) / 5)))):
    for side, module in (("yours", lr_scheduler), ("torch", torch.optim.lr_scheduler)):
        opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
        sched = make(module, opt)
        lrs = []
        for epoch in range(24):
            lrs.append(sched.get_last_lr()[0])
            opt.step()
            sched.step()
        schedules[label, side] = lrs
    print(f"{label}: equal to torch's {schedules[label, 'yours'] == schedules[label, 'torch']}; "
          f"first epochs {[round(v, 4) for v in schedules[label, 'torch'][:6]]}")

# %%
figure, ax = plt.subplots(figsize=(7, 3))
for (label, side), lrs in schedules.items():
    if side == "torch":
        _ = ax.plot(lrs, label=label)
ax.set_xlabel("epoch")
ax.set_ylabel("lr")
_ = ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 6. Gradient clipping: one norm over all gradients
#
# `torch.nn.utils.clip_grad_norm_(parameters, max_norm)` computes **one** norm over
# all the gradients, as if they were concatenated into a single vector, and if it
# exceeds `max_norm` scales *every* gradient by the same factor `max_norm / (norm +
# 1e-6)`. The update keeps its direction; only its length shrinks. Clipping each
# tensor on its own would not:

# %%
a, b = torch.zeros(2, requires_grad=True), torch.zeros(1, requires_grad=True)
a.grad, b.grad = torch.tensor([3.0, 4.0]), torch.tensor([12.0])
total = torch.nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
print("total norm:", total.item(), "= norm of [3, 4, 12]:", torch.linalg.vector_norm(torch.tensor([3.0, 4.0, 12.0])).item())
print("clipped together:", [round(v, 4) for v in a.grad.tolist()], [round(v, 4) for v in b.grad.tolist()])
a.grad, b.grad = torch.tensor([3.0, 4.0]), torch.tensor([12.0])
torch.nn.utils.clip_grad_norm_(a, 1.0)
torch.nn.utils.clip_grad_norm_(b, 1.0)
print("clipped one by one:", [round(v, 4) for v in a.grad.tolist()], [round(v, 4) for v in b.grad.tolist()],
      "(a different direction)")

# %% [markdown]
# `norm_type=inf` takes the largest absolute value instead. A non-finite norm (an
# inf or NaN gradient) cannot be clipped: with `error_if_nonfinite=True` it is a
# RuntimeError; by default the gradients are scaled anyway — into zeros and NaN.
#
# The notes show PyTorch 1.9's source, which scales only `if clip_coef < 1`. Current
# PyTorch always multiplies by the coefficient clamped to 1 (a branch on the value
# would make the CPU wait for the GPU) — so the gradients are written even when
# nothing is clipped, as their version counter shows:

# %%
a.grad = torch.tensor([3.0, -4.0])
print("inf norm:", torch.nn.utils.clip_grad_norm_(a, 1.0, norm_type="inf").item(), [round(v, 4) for v in a.grad.tolist()])
a.grad = torch.tensor([float("inf"), 1.0])
try:
    torch.nn.utils.clip_grad_norm_(a, 1.0, error_if_nonfinite=True)
except RuntimeError as err:
    print("RuntimeError:", err)
print("error_if_nonfinite=False:", torch.nn.utils.clip_grad_norm_(a, 1.0).item(), a.grad.tolist())
a.grad = torch.tensor([0.3, 0.4])
version = a.grad._version
torch.nn.utils.clip_grad_norm_(a, max_norm=100.0)
print("norm 0.5 < 100: unchanged", [round(v, 4) for v in a.grad.tolist()], "but written:", a.grad._version > version)

# %% [markdown]
# ## Exercise 8.5 — get_total_norm, clip_grads_with_norm_
#
# torch splits `clip_grad_norm_` into two public functions, and so does
# `minikernel/clip_grad.py`: `get_total_norm(tensors, norm_type, error_if_nonfinite)`
# (the norm of the per-tensor norms; torch's error text) and
# `clip_grads_with_norm_(parameters, max_norm, total_norm)` (scale every gradient in
# place by `min(max_norm / (total_norm + 1e-6), 1)`). `clip_grad_norm_` calls one, then
# the other; `minikernel.nn.utils.clip_grad_norm_` is the same function under torch's
# name.

# %%
a_85, b_85 = mk.tensor([0.0, 0.0], requires_grad=True), mk.tensor([0.0], requires_grad=True)
a_85.grad, b_85.grad = mk.tensor([3.0, 4.0]), mk.tensor([12.0])
print("total norm:", clip_grad.get_total_norm([a_85.grad, b_85.grad]))
print(clip_grad.clip_grad_norm_([a_85, b_85], max_norm=1.0), a_85.grad, b_85.grad)

# %% [markdown]
# The check compares total norms (rounded to 5 significant digits) for several norm
# types, and the clipped gradients of `clip_grad_norm_`:

# %%
cases = [([[3.0, 4.0], [12.0]], 2.0), ([[3.0, 4.0], [12.0]], 1.0), ([[3.0, -4.0], [1.0]], float("inf")),
         ([[1e-3, 2e-3], [5.0, -5.0, 1.0]], 3.0), ([[0.5]], 0.5), ([[float("inf"), 1.0]], 2.0), ([], 2.0)]
agree(lambda gs, p: float(f"{clip_grad.get_total_norm([mk.tensor(g) for g in gs], p).item():.5g}"),
      lambda gs, p: float(f"{torch.nn.utils.get_total_norm([torch.tensor(g) for g in gs], p).item():.5g}"), cases)
agree(lambda gs, p: clip_grad.get_total_norm([mk.tensor(g) for g in gs], p, error_if_nonfinite=True).item(),
      lambda gs, p: torch.nn.utils.get_total_norm([torch.tensor(g) for g in gs], p, error_if_nonfinite=True).item(),
      [([[float("inf"), 1.0]], 2.0), ([[1.0], [float("nan")]], float("inf"))])
for grads, p in cases + [([[float("nan"), 1.0], [2.0]], 2.0)]:
    mk_ps = [mk.tensor([0.0] * len(g), requires_grad=True) for g in grads]
    torch_ps = [torch.zeros(len(g), requires_grad=True) for g in grads]
    for mp, tp, g in zip(mk_ps, torch_ps, grads):
        mp.grad, tp.grad = mk.tensor(g), torch.tensor(g)
    clip_grad.clip_grad_norm_(mk_ps, 1.0, p)
    torch.nn.utils.clip_grad_norm_(torch_ps, 1.0, p)
    print(f"{str(grads):<34} p={p:<4}  clipped gradients equal to torch's:",
          all(torch.allclose(mp.grad.to_torch(), tp.grad, equal_nan=True) for mp, tp in zip(mk_ps, torch_ps)))

# %% [markdown]
# ## 7. Data loading with torch's DataLoader
#
# ```
# DataLoader(dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
#            num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
#            timeout=0, worker_init_fn=None, *, prefetch_factor=2, persistent_workers=False)
# ```
#
# A map-style **Dataset** has `__len__` and `__getitem__`. The notes' dataset returns
# numpy arrays; the default `collate_fn` stacks a batch of them into one tensor.
# `drop_last=True` drops the short last batch. (The examples live in
# `minikernel/data.py`, so that worker processes can import them.)

# %%
print(inspect.getsource(data.NegatedPairs))
print(list(DataLoader(data.NegatedPairs(5), batch_size=2)))
print(list(DataLoader(data.NegatedPairs(5), batch_size=2, drop_last=True)))

# %% [markdown]
# A **sampler** yields one index at a time; the DataLoader wraps it in a
# **BatchSampler** that groups `batch_size` indices (and drops the rest with
# `drop_last`). `shuffle=True` just picks a `RandomSampler`:

# %%
print(list(SequentialSampler(range(5))), list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)))
loader = DataLoader(data.NegatedPairs(5), batch_size=2, shuffle=True)
print(type(loader.sampler).__name__, type(loader.batch_sampler).__name__, loader.batch_sampler.batch_size)
torch.manual_seed(0)
print(list(RandomSampler(range(5))))

# %% [markdown]
# So `batch_sampler` — a sampler yielding whole lists of indices — replaces
# `batch_size`, `shuffle`, `sampler` and `drop_last`, and giving both is an error.
# A plain `sampler` with `shuffle=True` is one too:

# %%
for options in ({"batch_size": 2}, {"shuffle": True}, {"sampler": SequentialSampler(range(10))}, {"drop_last": True}):
    try:
        DataLoader(data.NegatedPairs(10), batch_sampler=data.NeighbourBatches(3), **options)
    except ValueError as err:
        print(f"batch_sampler and {list(options)[0]}: ValueError: {err}")
try:
    DataLoader(data.NegatedPairs(10), sampler=SequentialSampler(range(10)), shuffle=True)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# The notes' custom batch sampler yields `[i, i+1]`, and their `collate_fn` prints what
# it receives. It receives the list of **samples** of the batch — not their indices, as
# the notes say. The dataset does not check its index, so indices past `len(dataset)`
# (the sampler goes up to [19, 20] over 10 samples) are not caught. The sampler has no
# `__len__`: iterating works, `len(loader)` does not.

# %%
print(inspect.getsource(data.NeighbourBatches))
loader = DataLoader(data.NegatedPairs(10), batch_sampler=data.NeighbourBatches(20),
                    collate_fn=lambda samples: print("collate_fn got", samples) or samples)
batches = list(loader)
print(len(batches), "batches; the last:", batches[-1])
try:
    len(loader)
except TypeError as err:
    print("TypeError:", err)

# %% [markdown]
# ### Two workers
#
# With `num_workers=2` two processes load batches (batch 0 by worker 0, batch 1 by
# worker 1, ...) and the main process receives them in order. Each worker holds its own
# copy of the dataset. For a map-style dataset that is fine: each worker is asked for
# different indices. Current PyTorch seeds `random`, torch and numpy in every worker
# from a base seed drawn in the main process, so random draws differ per worker and
# repeat under `torch.manual_seed`. (Older versions left numpy's state as forked —
# every worker drew the same numbers — and tutorials used `worker_init_fn` to seed
# it.) The results are printed sorted, from the main process:

# %%
draws = {}
for run in range(2):
    torch.manual_seed(0)
    batches = list(DataLoader(data.WhoLoadedMe(8), batch_size=2, num_workers=2, collate_fn=list))
    draws[run] = sorted(sample for batch in batches for sample in batch)
print("(index, worker, draw):", [(i, w, round(d, 3)) for i, w, d in draws[0]])
print("the same draws again under the same seed:", draws[0] == draws[1])
print("workers draw different numbers:", len({round(d, 6) for _, _, d in draws[0]}) == 8)

# %% [markdown]
# An **iterable** dataset is different: every worker iterates its own full copy, so
# two workers deliver everything twice. `worker_init_fn(worker_id)` runs in each worker
# before its first sample and can give it its own slice (torch's documentation
# example):

# %%
print(inspect.getsource(data.split_range_per_worker))
for init in (None, data.split_range_per_worker):
    numbers = sorted(DataLoader(data.RangeStream(0, 7), batch_size=None, num_workers=2, worker_init_fn=init))
    print(f"worker_init_fn={getattr(init, '__name__', None)}: {numbers}")

# %% [markdown]
# ## 8. Saving and loading
#
# ### state_dict
#
# The recommended way: save the **state dict** — an ordered dict from parameter and
# buffer names to tensors — and load it into a freshly built model of the same class.
# The file holds only tensors, so it loads with `torch.load`'s default
# `weights_only=True` (PyTorch ≥ 2.6), which refuses to run arbitrary pickled code.

# %%
tmp = Path(tempfile.mkdtemp())
torch.manual_seed(0)
my_model = saving.MyModule()
torch.save(my_model.state_dict(), tmp / "xxx.pth")
restored = saving.MyModule()
print(restored.load_state_dict(torch.load(tmp / "xxx.pth")))
print(list(my_model.state_dict()), "equal:",
      all(torch.equal(p, q) for p, q in zip(my_model.state_dict().values(), restored.state_dict().values())))

# %% [markdown]
# An optimizer has a state dict too: its state per parameter (momentum buffers,
# Adam's moments), with parameters replaced by their positions 0, 1, 2, ..., and its
# param groups without the tensors. Loading it into a new optimizer over new
# parameters resumes training exactly:

# %%
torch.manual_seed(0)
grads = [torch.randn(3) for _ in range(6)]
runs = {}
for resume in (False, True):
    w = torch.zeros(3, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.1)
    for i, g in enumerate(grads):
        if resume and i == 3:
            torch.save(opt.state_dict(), tmp / "opt.pth")
            w = w.detach().clone().requires_grad_()
            opt = torch.optim.Adam([w], lr=0.1)
            opt.load_state_dict(torch.load(tmp / "opt.pth"))
        w.grad = g.clone()
        opt.step()
    runs[resume] = w.detach()
print({k: v for k, v in torch.load(tmp / "opt.pth")["param_groups"][0].items() if k in ("lr", "betas", "params")},
      sorted(torch.load(tmp / "opt.pth")["state"][0]))
print("resumed run equal to the uninterrupted one:", torch.equal(runs[False], runs[True]))

# %% [markdown]
# The same with minikernel's Adam (exercises 8.1 and 8.3). Its state holds
# minikernel tensors, which `torch.load(weights_only=True)` would refuse; a deep copy
# stands in for the file:

# %%
runs_mk = {}
for resume in (False, True):
    w_mk = mk.tensor([0.0, 0.0, 0.0], requires_grad=True)
    opt_mk = optim.Adam([w_mk], lr=0.1)
    for i, g in enumerate(grads):
        if resume and i == 3:
            saved = copy.deepcopy(opt_mk.state_dict())
            w_mk = w_mk.detach().clone().requires_grad_()
            opt_mk = optim.Adam([w_mk], lr=0.1)
            opt_mk.load_state_dict(saved)
        w_mk.grad = mk.Tensor.from_torch(g.clone())
        opt_mk.step()
    runs_mk[resume] = w_mk.to_torch().clone()
print("resumed equal to uninterrupted:", torch.equal(runs_mk[False], runs_mk[True]),
      " equal to torch's:", torch.allclose(runs_mk[True], runs[True], rtol=1e-5, atol=1e-6))

# %% [markdown]
# ### Pickling the whole module
#
# `torch.save(model)` pickles the module object itself. The notes advise against it
# ("sometimes it cannot be loaded, the reason is unclear"). The reason: a pickle stores
# an instance as *a reference to its class* — module path and class name — plus its
# `__dict__`; loading imports that module and looks the name up. Move or rename the
# class's file and the file no longer loads. Current PyTorch also refuses such a file
# by default (`weights_only=True`). The class below lives in a file `netdefs.py`
# written to a temporary folder:

# %%
(tmp / "netdefs.py").write_text(
    "import torch\n\nclass Net(torch.nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(2, 1)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n")
sys.path.insert(0, str(tmp))
import netdefs  # noqa: E402

torch.save(netdefs.Net(), tmp / "model.pth")
print("the pickle names the class:", b"netdefs" in (tmp / "model.pth").read_bytes())
try:
    torch.load(tmp / "model.pth")
except pickle.UnpicklingError as err:
    print("weights_only=True: UnpicklingError:", str(err).split(".")[0] + ".")
print("weights_only=False:", type(torch.load(tmp / "model.pth", weights_only=False)).__name__)
(tmp / "netdefs.py").rename(tmp / "networks.py")  # the class moves to another file
del sys.modules["netdefs"]
try:
    torch.load(tmp / "model.pth", weights_only=False)
except ModuleNotFoundError as err:
    print("after the move: ModuleNotFoundError:", err)
sys.path.remove(str(tmp))

# %% [markdown]
# ### TorchScript: trace versus script
#
# TorchScript turns a module into a program that runs without Python (and loads from
# C++). `torch.jit.trace` runs the module once on an example input and records the
# operations it sees; `torch.jit.script` compiles the module's source. A branch that
# depends on the data — the notes' `MyDecisionGate` — shows the difference: the trace
# records only the branch its example took (and warns), so it gives the wrong answer
# for an input that would take the other branch; the script keeps the `if`.
#
# In PyTorch 2.13 both are deprecated in favour of `torch.compile` and `torch.export`
# (each call warns, as printed below); they still work.

# %%
print(inspect.getsource(saving.DecisionGate))
x_pos, x_neg = torch.ones(2), -torch.ones(2)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    traced = torch.jit.trace(saving.DecisionGate(), x_pos)
    scripted = torch.jit.script(saving.DecisionGate())
for message in dict.fromkeys(f"{w.category.__name__}: {str(w.message).split('. ')[0]}" for w in caught):
    print(message)
print("eager   ", saving.DecisionGate()(x_neg).tolist())
print("traced  ", traced(x_neg).tolist(), "  <- wrong: the trace returns x whatever its sign")
print("scripted", scripted(x_neg).tolist())
print(traced.code)
print(scripted.code)

# %% [markdown]
# A scripted (or traced) module saves to one file holding the code and the weights,
# and loads without the Python class:

# %%
scripted.save(str(tmp / "yy.pt"))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    loaded = torch.jit.load(str(tmp / "yy.pt"))
print(type(loaded).__name__, loaded(x_neg).tolist(), loaded(x_pos).tolist())

# %% [markdown]
# ### Trace inside script inside trace: the notes' RNN
#
# The two mix. The notes nest them four deep (`minikernel/saving.py`): a **scripted**
# `DecisionGate` inside `MyCell`, which is **traced** (a scripted submodule is *called*
# by the trace, so the `if` survives); `MyRNNLoop` runs a Python `for` over the time
# steps and is **scripted** (a trace would unroll the loop to the example's length);
# `WrapRNN` around it is **traced** again. `.code` prints each level as TorchScript's
# Python-like source; `.graph` is the IR underneath (typed values `%name`, `aten::`
# operators, `prim::Loop` for the loop).

# %%
torch.manual_seed(0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    wrapped = torch.jit.trace(saving.WrapRNN(), torch.rand(10, 3, 4))
print(wrapped.code)
print(wrapped.loop.code)
print(wrapped.loop.cell.code)
print(wrapped.loop.cell.dg.code)
ir = str(wrapped.loop.graph)
print("MyRNNLoop's IR has a prim::Loop:", "prim::Loop" in ir, "| its operators:",
      sorted({line.split("aten::")[1].split("(")[0] for line in ir.splitlines() if "aten::" in line}))

# %%
wrapped.save(str(tmp / "wrapped_rnn.pt"))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    loaded_rnn = torch.jit.load(str(tmp / "wrapped_rnn.pt"))
xs = torch.rand(7, 3, 4)                 # 7 steps: the loop is not fixed to the example's 10
print("loaded equals the original on 7 steps:", torch.equal(loaded_rnn(xs), wrapped(xs)))

# %% [markdown]
# ### The same file in C++, and training in C++
#
# The file holds the TorchScript printed above — its code, compiled to IR — and the
# weights; nothing in it needs Python. `minikernel/course/cpp/libtorch_side.cpp` is a
# C++ program of about a hundred lines linked against **libtorch**, the C++ library the
# torch wheel already ships (headers in `torch/include`; `libtorch_cpu.so` and
# `libc10.so` in `torch/lib` — the same code Python's `torch` calls into). Its `load`
# mode is the two lines that matter:
#
# ```cpp
# torch::jit::script::Module module = torch::jit::load(model_path);   // IR + weights
# torch::Tensor out = module.forward({input}).toTensor();           // libtorch's interpreter
# ```
#
# The interpreter walks the graph — the `prim::Loop`, the `if` of the gate, the
# `aten::` operators — calling the same kernels as Python, with no Python in the
# process. Its `train` mode is the notes' other path, the **C++ frontend**: the same API
# spelled in C++ — `torch::manual_seed(0)`, `torch::randn({8, 3})`,
# `torch::nn::Linear linear(3, 1)`, `torch::optim::SGD sgd(linear->parameters(),
# torch::optim::SGDOptions(0.1))`, then `sgd.zero_grad()`, `torch::mse_loss(...)`,
# `loss.backward()`, `sgd.step()`.
#
# `minikernel.course.libtorch_build` compiles it with `g++` in one command (printed
# below) into a cache folder (`~/.cache/minikernel/libtorch/`), keyed by the source,
# torch's version and the compiler's, so only the first run builds. **That first build
# takes about a minute** (48 s and 72 s measured on two cores shared with other work;
# parsing the torch headers is most of it), so wait for the cell; later runs start at once. Without a C++ compiler — `make lab` installs none — the
# cell says so in one line, and the comparison after it uses the C++ output recorded
# with the course.

# %% tags=["nbval-ignore-output"]
built = libtorch_build.build()
torch_dir = str(Path(torch.__file__).parent)
print(" ".join(libtorch_build.compile_command("g++", libtorch_build.SOURCE, Path("libtorch_side")))
      .replace(torch_dir, "$TORCH").replace(str(libtorch_build.SOURCE.parent), "cpp"))
x_cpp = torch.rand(5, 3, 4, generator=torch.Generator().manual_seed(8))  # 5 steps, its own generator
cpp_load = libtorch_build.load_and_run(tmp / "wrapped_rnn.pt", x_cpp)
cpp_train = libtorch_build.train(steps=5, lr=0.1)
print(f"built with {built.compiler}; both modes ran here" if built.path and not (cpp_load.note or cpp_train.note)
      else cpp_load.note or cpp_train.note or built.reason)

# %% [markdown]
# Python's answers beside the C++ program's. The Python training loop is the C++ one
# line for line; with the same seed, the same `randn` and the same `Linear`
# initialisation (Kaiming-uniform weights), the losses agree.

# %%
print("Python forward(x):", [round(v, 4) for v in loaded_rnn(x_cpp)[0].tolist()], "... (row 0 of 3)")
if cpp_load.text:
    out_cpp = libtorch_build.parse_tensor(cpp_load.text)
    print("C++    forward(x):", [round(v, 4) for v in out_cpp[0].tolist()])
    print("shape", list(out_cpp.shape), "| torch.allclose(C++, Python):", torch.allclose(out_cpp, loaded_rnn(x_cpp)))
with torch.random.fork_rng():  # the C++ program's training, in Python; the chapter's random state is kept
    torch.manual_seed(0)
    x_lin = torch.randn(8, 3)
    y_lin = x_lin @ torch.tensor([1.0, -2.0, 0.5]).reshape(3, 1) + 0.3
    linear = torch.nn.Linear(3, 1)
    sgd = torch.optim.SGD(linear.parameters(), lr=0.1)
    losses_py = []
    for _ in range(5):
        sgd.zero_grad()
        loss = torch.nn.functional.mse_loss(linear(x_lin), y_lin)
        loss.backward()
        sgd.step()
        losses_py.append(loss.item())
print("Python losses:", [round(v, 5) for v in losses_py])
if cpp_train.text:
    losses_cpp = libtorch_build.parse_losses(cpp_train.text)
    print("C++    losses:", [round(v, 5) for v in losses_cpp])
    print("torch.allclose(C++, Python):", torch.allclose(torch.tensor(losses_cpp), torch.tensor(losses_py)))

# %% [markdown]
# ### After TorchScript: torch.fx, torch.export, torch.compile
#
# PyTorch 2 captures graphs three other ways. Each sees the program differently, and
# each stops somewhere else — the `if` on a tensor's value is the test.
#
# **torch.fx** runs `forward` once on *proxies* that record every call, giving a
# `GraphModule`: a graph you can edit in Python, and its regenerated code. A proxy has
# no value, so `if x.sum() > 0` cannot be decided: `TraceError`.

# %%
cell_gm = torch.fx.symbolic_trace(saving.MyCell(torch.nn.Identity()))
print(cell_gm.graph)
try:
    torch.fx.symbolic_trace(saving.DecisionGate())
except torch.fx.proxy.TraceError as err:
    print("DecisionGate: TraceError:", err)

# %% [markdown]
# A **graph pass** walks the nodes and rewrites them. This one swaps `tanh` for
# `sigmoid` and recompiles; the new module's code shows it, and it computes what the
# edited formula says.

# %%
for fx_node in cell_gm.graph.nodes:
    if fx_node.op == "call_function" and fx_node.target is torch.tanh:
        fx_node.target = torch.sigmoid
cell_gm.recompile()
print(cell_gm.code.strip())
xc, hc = torch.rand(3, 4), torch.rand(3, 4)
print("equals sigmoid(linear(x) + h):", torch.allclose(cell_gm(xc, hc)[0], torch.sigmoid(cell_gm.linear(xc) + hc)))

# %% [markdown]
# **torch.export** traces down to ATen operators with symbolic shapes, for running
# without Python (AOTInductor, ExecuTorch). It refuses to guess a data-dependent
# branch; `torch.cond(pred, true_fn, false_fn, operands)` writes the branch so that
# both sides are captured (`CondGate`), and the exported program takes either at run
# time.

# %%
logging.getLogger("torch.fx.experimental.symbolic_shapes").setLevel(logging.ERROR)
try:
    with contextlib.redirect_stderr(io.StringIO()):  # export also prints the partial graph it traced
        torch.export.export(saving.DecisionGate(), (x_pos,))
except Exception as err:  # torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode
    print("DecisionGate:", type(err).__name__ + ":", str(err).splitlines()[0])
exported = torch.export.export(saving.CondGate(), (x_pos,))
print(exported.graph_module.code.strip())
print("both branches:", exported.module()(x_neg).tolist(), exported.module()(x_pos).tolist())

# %% [markdown]
# **torch.compile** captures with TorchDynamo, which reads the function's Python
# bytecode as it runs. Where it meets something it cannot put in a graph — here the
# `if` on a tensor — it does not fail: it **breaks the graph**, lets Python decide, and
# starts a new graph after. A backend receives each captured graph; the one below just
# records them and runs them unchanged (the default backend, Inductor, would generate
# and compile C++ for each — tens of seconds on this machine, so not here).

# %%
captured = []


def recording_backend(gm, example_inputs):
    captured.append(gm)
    return gm.forward


torch._dynamo.reset()
compiled_gate = torch.compile(saving.DecisionGate(), backend=recording_backend)
print(compiled_gate(x_neg).tolist(), compiled_gate(x_pos).tolist(), "| graphs captured:", len(captured))
for gm in captured:
    print(gm.code.strip().split("\n", 1)[1])

# %% [markdown]
# Two graphs for one function: the condition up to the break, then the branch that
# ran (`-x`); the `x` branch needs no graph. A second call reuses the cached graphs.
# In short: **TorchScript** compiles a Python subset (script) or records one run
# (trace); **fx** records calls symbolically and is easy to transform; **export**
# captures the whole program or refuses, with `torch.cond` for branches;
# **compile** captures what it can and falls back to Python at every break.

# %% [markdown]
# ## 9. train() and eval()
#
# A module starts in training mode; `model.eval()` switches it (and every submodule)
# off, `model.train()` back on. Only layers that behave differently care. **Dropout**
# in training zeroes each element with probability p and multiplies the others by
# 1/(1-p), so the expected value is unchanged; in evaluation it is the identity. The
# notes' numbers, with p = 0.3 (1/0.7 = 1.4286):

# %%
model = torch.nn.Sequential(torch.nn.Dropout(0.3))
print("training by default:", model.training)
torch.manual_seed(8)
model.train()
print("train:", model(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])))
model.eval()
print("eval: ", model(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])))

# %% [markdown]
# `minikernel.nn.Dropout` (chapter 04) draws its mask with torch's generator the way
# torch does, so after the same seed it drops the same elements:

# %%
model_mk = mk_nn.Sequential(mk_nn.Dropout(0.3))
torch.manual_seed(8)
model_mk.train()
print("train:", model_mk(mk.tensor([1.0, 2.0, 3.0, 4.0, 5.0])))
model_mk.eval()
print("eval: ", model_mk(mk.tensor([1.0, 2.0, 3.0, 4.0, 5.0])))

# %% [markdown]
# **BatchNorm** in training normalizes with the statistics of the current batch and
# updates its running averages (`momentum=0.1`); in evaluation it normalizes with the
# running averages and updates nothing. So the same input gives different outputs:

# %%
bn = torch.nn.BatchNorm1d(2)
batch = torch.tensor([[1.0, 10.0], [3.0, 30.0], [5.0, 50.0]])
print("train:", [[round(v, 4) for v in row] for row in bn(batch).tolist()])
print("running mean", [round(v, 4) for v in bn.running_mean.tolist()], "running var",
      [round(v, 4) for v in bn.running_var.tolist()], "batches", bn.num_batches_tracked.item())
bn.eval()
print("eval: ", [[round(v, 4) for v in row] for row in bn(batch).tolist()])
print("running mean unchanged:", [round(v, 4) for v in bn.running_mean.tolist()])

# %% [markdown]
# ## 10. The whole loop, twice
#
# One small regression network, trained twice from the same initial weights on the
# same shuffled mini-batches: once with torch, once with minikernel — its `nn`
# modules (chapter 04), autograd (chapter 03), your AdamW with two param groups
# (weights with decay, biases without), your LambdaLR warm-up, your
# `clip_grad_norm_`, and chapter 06's GradScaler. Every piece of the loop is
# minikernel's except the data loading.
#
# The GradScaler is chapter 06's `minikernel.amp.GradScaler`, which works on torch
# tensors. Two adapters in `minikernel/optim/grad_view.py` let it scale a minikernel
# loss (`scale_loss(scaler, loss)` for `scaler.scale(loss)`) and see a minikernel
# optimizer (`TorchGradView(optimizer)`: the same groups, with torch tensors sharing
# the gradients' memory, and a `step()` that steps the minikernel optimizer). In
# float32 without autocast nothing overflows: the scale (a power of two) only
# grows, and scaling then unscaling changes no bit — it is here to show the whole
# loop in place.
#
# A dashboard records both runs: the loss, the learning rate and the scale of each,
# and the activations and gradient norms of the minikernel model. With a visdom
# server (`make lab` starts one) it draws live while the cells run; without one, it
# draws inline when asked, after the runs.

# %% tags=["nbval-ignore-output"]
dashboard = Dashboard(env="ch08", live=False, log_y=("loss",))

# %%
torch.manual_seed(0)
X = torch.randn(256, 8)
y = torch.tanh(X @ torch.randn(8, 1)) + 0.1 * torch.randn(256, 1)
loader = DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True,
                    generator=torch.Generator().manual_seed(0))
epochs = [list(loader) for _ in range(8)]  # the same shuffled batches for both runs
torch_net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
initial_weights = copy.deepcopy(torch_net.state_dict())
curves = {}

net = torch_net
opt = torch.optim.AdamW([{"params": [p for n, p in net.named_parameters() if n.endswith("weight")]},
                         {"params": [p for n, p in net.named_parameters() if n.endswith("bias")], "weight_decay": 0.0}],
                        lr=1e-2, weight_decay=0.01)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: min(1.0, (epoch + 1) / 3))
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=20)
losses, clipped, step = [], 0, 0
for batches in epochs:
    for xb, yb in batches:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(xb), yb)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        clipped += torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0).item() > 1.0
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
        dashboard.log(step, run="torch", loss=loss.item(), lr=opt.param_groups[0]["lr"], scale=scaler.get_scale())
        step += 1
    sched.step()
curves["torch"] = losses
print(f"torch: {step} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}, clipped {clipped} times, "
      f"lr {sched.get_last_lr()}, scale {scaler.get_scale()}")

# %% [markdown]
# The same loop in minikernel. Only the loss is written out: mean((out - y)²).

# %%
net = mk_nn.Sequential(mk_nn.Linear(8, 32), mk_nn.ReLU(), mk_nn.Linear(32, 1))
net.load_state_dict({name: mk.Tensor.from_torch(w.clone()) for name, w in initial_weights.items()})
dashboard.watch(net)
opt = optim.AdamW([{"params": [p for n, p in net.named_parameters() if n.endswith("weight")]},
                   {"params": [p for n, p in net.named_parameters() if n.endswith("bias")], "weight_decay": 0.0}],
                  lr=1e-2, weight_decay=0.01)
sched = lr_scheduler.LambdaLR(opt, lambda epoch: min(1.0, (epoch + 1) / 3))
scaler = mk.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=20)
view = optim.TorchGradView(opt)
losses, clipped, step = [], 0, 0
for batches in epochs:
    for xb, yb in batches:
        opt.zero_grad()
        out = net(mk.Tensor.from_torch(xb))
        loss = F.mean(F.pow(F.sub(out, mk.Tensor.from_torch(yb)), 2))
        optim.scale_loss(scaler, loss).backward()
        scaler.unscale_(view)
        clipped += mk_nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0).item() > 1.0
        scaler.step(view)
        scaler.update()
        losses.append(loss.item())
        dashboard.log(step, run="minikernel", loss=loss.item(), lr=opt.param_groups[0]["lr"], scale=scaler.get_scale())
        step += 1
    sched.step()
curves["minikernel"] = losses
print(f"minikernel: {step} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}, clipped {clipped} times, "
      f"lr {sched.get_last_lr()}, scale {scaler.get_scale()}")
print("the same loss at every step (float tolerance):",
      torch.allclose(torch.tensor(curves["minikernel"]), torch.tensor(curves["torch"]), rtol=1e-4, atol=1e-6))
print("the same final weights:", all(torch.allclose(p.to_torch(), q, rtol=1e-4, atol=1e-5)
                                     for p, q in zip(net.parameters(), torch_net.parameters())))

# %% [markdown]
# The two loss curves on one plot (the minikernel one dashed, on top of torch's):

# %%
figure, ax = plt.subplots(figsize=(7, 3))
for name, curve in curves.items():
    _ = ax.plot(curve, label=name, linestyle="-" if name == "torch" else "--")
ax.set_yscale("log")
ax.set_xlabel("step")
ax.set_ylabel("MSE loss")
_ = ax.legend()
plt.show()

# %% [markdown]
# The dashboard: both runs' loss, learning rate and scale, and the minikernel model's
# activations and gradient norms (in visdom, env `ch08`, when a server runs):

# %% tags=["nbval-ignore-output"]
dashboard.show()
dashboard.close()

# %% [markdown]
# ## 11. Reproducibility
#
# A run is reproducible when every random number generator starts from the same seed
# and every kernel is deterministic. The seeds: Python's `random`, numpy, torch
# (`torch.manual_seed` seeds the CPU *and*, through `torch.cuda.manual_seed_all`, every
# CUDA device; `cuda.manual_seed_all` is a separate, current function that seeds only
# the GPUs, and `cuda.manual_seed` only the current one). `PYTHONHASHSEED` fixes the
# hashes of `str` and `bytes`, which are salted per process, and with them the
# iteration order of a set of strings; dicts keep insertion order whatever the seed.
# It is read at interpreter start, so set it outside Python (below: one child
# interpreter per seed). DataLoader workers get their own seeds (§7).

# %%
import os  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402


def draw(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return random.random(), float(np.random.rand()), torch.rand(1).item()


print("same seed, same numbers:", draw(0) == draw(0), "| PYTHONHASHSEED set here:", "PYTHONHASHSEED" in os.environ)
order_of = "w = ['apple', 'banana', 'cherry', 'date', 'elder']; print([x[0] for x in set(w)], list(dict.fromkeys(w))[0])"
for hash_seed in ("0", "0", "1"):
    child = subprocess.run([sys.executable, "-c", order_of], env={**os.environ, "PYTHONHASHSEED": hash_seed},
                           capture_output=True, text=True, check=True)
    print(f"PYTHONHASHSEED={hash_seed}: set order, first dict key:", child.stdout.strip())

# %% [markdown]
# Kernels: some GPU kernels (atomic adds in `index_add_`, scatter, some convolution
# algorithms) give run-to-run differences. `torch.use_deterministic_algorithms(True)`
# makes PyTorch pick deterministic implementations and *raise* where none exists.
# The notes' `torch.set_deterministic(True)` (1.7) was its first name and is gone.
# cuDNN has two more switches: `cudnn.deterministic`, and `cudnn.benchmark`, which
# times several convolution algorithms on the first call of each shape and keeps the
# fastest (the choice may vary between runs). Unlike MXNet, PyTorch does **not**
# autotune by default: `benchmark` is False.

# %%
print("torch.set_deterministic exists:", hasattr(torch, "set_deterministic"))
torch.use_deterministic_algorithms(True)
print("deterministic algorithms:", torch.are_deterministic_algorithms_enabled())
torch.use_deterministic_algorithms(False)
print("cudnn.benchmark default:", torch.backends.cudnn.benchmark, "| cudnn.deterministic default:",
      torch.backends.cudnn.deterministic)

# %% [markdown]
# ## 12. More of the loop from the notes
#
# **Counting and freezing parameters.** `sum(p.numel() for p in model.parameters())`
# counts them. Fine-tuning freezes a backbone with `requires_grad_(False)`: its
# parameters get no gradient (and backward does not even reach them), and a
# replaced head trains alone — or with a larger learning rate in its own param group.
# Layers created but never called are still initialized and counted.

# %%
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
print("parameters:", sum(p.numel() for p in net.parameters()))
net[0].requires_grad_(False)
net[2] = torch.nn.Linear(8, 2)      # a new head
opt_ft = torch.optim.SGD([{"params": net[2].parameters(), "lr": 0.1}], lr=0.01)
net(torch.randn(5, 4)).pow(2).mean().backward()
print("backbone grad:", net[0].weight.grad, "| head grad set:", net[2].weight.grad is not None,
      "| trainable:", sum(p.numel() for p in net.parameters() if p.requires_grad))


class WithSpare(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.spare = torch.nn.Linear(4, 2), torch.nn.Linear(4, 1000)   # spare is never called

    def forward(self, x):
        return self.used(x)


print("a layer forward never calls is still initialized and counted:",
      sum(p.numel() for p in WithSpare().parameters()), "parameters")

# %% [markdown]
# **`model.zero_grad()` vs `optimizer.zero_grad()`.** The first clears every
# parameter of the model, the second every parameter the optimizer holds — the same
# set in a simple loop, different when one optimizer drives part of a model or one
# model's parameters are split across optimizers. Both set `.grad = None` by default
# (`set_to_none=True`), which frees the memory; `set_to_none=False` writes zeros.

# %%
opt_ft.zero_grad()
print("after optimizer.zero_grad(): head", net[2].weight.grad, "| other layers untouched:",
      all(p.grad is None for p in net.parameters()))
net(torch.randn(5, 4)).pow(2).mean().backward()
net.zero_grad(set_to_none=False)
print("model.zero_grad(set_to_none=False):", float(net[2].weight.grad.abs().sum()))

# %% [markdown]
# **Gradient accumulation.** Gradients add up over backward calls (chapter 03), so
# a batch of 64 can be run as two of 32 with the loss halved, stepping once: the
# update is the same (up to rounding) — except for BatchNorm, which would see 32 rows
# at a time.

# %%
torch.manual_seed(0)
data64, target64 = torch.randn(64, 4), torch.randn(64, 3)
nets = [torch.nn.Linear(4, 3) for _ in range(2)]
nets[1].load_state_dict(nets[0].state_dict())
torch.nn.functional.mse_loss(nets[0](data64), target64).backward()
for half in (slice(0, 32), slice(32, 64)):
    (torch.nn.functional.mse_loss(nets[1](data64[half]), target64[half]) / 2).backward()
print("accumulated 2×32 equals 64:", torch.allclose(nets[0].weight.grad, nets[1].weight.grad, atol=1e-6))

# %% [markdown]
# **Losses the notes add.** `MSELoss` and `L1Loss` average the squared and the
# absolute errors; an L1 penalty is added to the loss by hand (`λ·Σ|w|` — the notes
# build an `L1Loss` and never use it). For label smoothing the notes give a
# hand-written `LSR` module and an inline version for the training loop, both putting
# ε/(C−1) on each wrong class; `CrossEntropyLoss(label_smoothing=ε)` is not the same
# loss as either (chapter 04 runs all three and takes them apart). The built-in's
# target is 1 − ε + ε/C on the class and ε/C on the others; the notes' inline loop
# puts 1 − ε and ε/(C−1); their module adds ε/(C−1) to *every* entry of a one-hot row
# holding 1 − ε, so its rows sum to 1 + ε/(C−1). Here are the three, each built as the
# notes and the docs write it:

# %%
logits, labels = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]]), torch.tensor([0, 2])
eps, n_cls = 0.1, 3
N = labels.size(0)
builtin_target = torch.full((N, n_cls), eps / n_cls).scatter_(1, labels[:, None], 1 - eps + eps / n_cls)
inline_target = torch.full((N, n_cls), eps / (n_cls - 1)).scatter_(1, labels[:, None], 1 - eps)
module_target = torch.zeros(N, n_cls).scatter_add_(1, labels.view(N, -1), torch.full((N, 1), 1 - eps))
module_target += eps / (n_cls - 1)
log_prob = logits.log_softmax(1)
print("built-in label_smoothing=0.1:", round(torch.nn.CrossEntropyLoss(label_smoothing=eps)(logits, labels).item(), 4),
      "| the same target by hand:", round((-(builtin_target * log_prob).sum() / N).item(), 4))
print("the notes' inline loop:      ", round((-(inline_target * log_prob).sum() / N).item(), 4))
print("the notes' LSR module:       ", round((-(module_target * log_prob).sum(1)).mean().item(), 4),
      "| its target rows sum to", [round(v, 4) for v in module_target.sum(1).tolist()])
l1 = 1e-3 * sum(p.abs().sum() for p in net.parameters())
print("L1 penalty term:", round(l1.item(), 6))
pred, goal = torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.5, 2.0, 1.0])
print("MSELoss:", round(torch.nn.MSELoss()(pred, goal).item(), 4), "= (0.25 + 0 + 9) / 3 | L1Loss:",
      round(torch.nn.L1Loss()(pred, goal).item(), 4), "= (0.5 + 0 + 3) / 3")

# %% [markdown]
# **`F.dropout` is not switched off by `eval()`.** `nn.Dropout` reads the module's
# `training` flag; the functional form has its own `training=True` default, so a
# forward written with `F.dropout(x, 0.5)` keeps dropping in evaluation. Pass
# `training=self.training`.

# %%
class FunctionalDropout(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, 0.5)


fd = FunctionalDropout().eval()
torch.manual_seed(0)
print("eval(), F.dropout(x, 0.5):", fd(torch.ones(6)).tolist())

# %% [markdown]
# **More schedulers.** `MultiStepLR` multiplies by γ at given epochs;
# `ReduceLROnPlateau` watches a metric you pass to `step(metric)` and cuts the rate
# when it stops improving for `patience` epochs; schedulers can be **chained** — two on
# one optimizer multiply their factors (`ChainedScheduler` steps them together).

# %%
def lrs(make, steps=8, metrics=None):
    p = torch.zeros(1, requires_grad=True)
    o = torch.optim.SGD([p], lr=1.0)
    scheds = make(o)
    out = []
    for epoch in range(steps):
        o.step()
        for sch in scheds:
            sch.step(metrics[epoch]) if metrics else sch.step()
        out.append(round(o.param_groups[0]["lr"], 4))
    return out


print("MultiStepLR([2, 5], 0.1):    ", lrs(lambda o: [torch.optim.lr_scheduler.MultiStepLR(o, [2, 5], 0.1)]))
print("ReduceLROnPlateau(patience=1):", lrs(lambda o: [torch.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1)],
                                              metrics=[5, 4, 4, 4, 3, 3, 3, 3]))
print("Exponential(0.9) + StepLR(3): ", lrs(lambda o: [torch.optim.lr_scheduler.ExponentialLR(o, 0.9),
                                                      torch.optim.lr_scheduler.StepLR(o, 3, 0.5)]))
print("0.9^epoch · 0.5^(epoch // 3): ", [round(0.9 ** e * 0.5 ** (e // 3), 4) for e in range(1, 9)])

# %% [markdown]
# **No weight decay on biases.** The notes build two groups to exempt biases from
# weight decay, but key them `'parameters'`; an optimizer's group must say `'params'`
# (chapter 08 §2), so their snippet stops with a `KeyError`. With the right key, the
# bias group gets `weight_decay=0` and the other the default.

# %%
decayed = torch.nn.Linear(3, 2)
named = list(decayed.named_parameters())
try:
    torch.optim.SGD([{"parameters": [p for n, p in named if n.endswith("bias")], "weight_decay": 0},
                     {"parameters": [p for n, p in named if not n.endswith("bias")]}],
                    lr=1e-2, momentum=0.9, weight_decay=1e-4)
except KeyError as err:
    print("the notes' groups:", type(err).__name__, err)
fixed = torch.optim.SGD([{"params": [p for n, p in named if n.endswith("bias")], "weight_decay": 0},
                         {"params": [p for n, p in named if not n.endswith("bias")]}],
                        lr=1e-2, momentum=0.9, weight_decay=1e-4)
print("with 'params': weight_decay per group", [g["weight_decay"] for g in fixed.param_groups])

# %% [markdown]
# **The linear scaling rule.** Training with k times larger batches, the notes scale
# the learning rate by k (Goyal et al.: lr = base lr × batch / 256, with a warm-up).
# Why: one SGD step on a batch of kB averages k small-batch gradients, so with lr × k
# it moves as far as k small steps would — as long as the gradient hardly changes over
# those k steps. Below, one step of lr·8 on 64 samples against eight steps of lr on 8
# samples each: close for a small lr, apart once the steps are large enough for the
# gradient to change on the way.

# %%
def k_small_vs_one_big(lr: float, k: int = 8):
    torch.manual_seed(0)
    x, y = torch.randn(8 * k, 4), torch.randn(8 * k, 1)
    small, big = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
    big.load_state_dict(small.state_dict())
    start = small.weight.detach().clone()
    opt_small, opt_big = torch.optim.SGD(small.parameters(), lr=lr), torch.optim.SGD(big.parameters(), lr=lr * k)
    for part in range(k):  # k steps on batches of 8
        opt_small.zero_grad()
        torch.nn.functional.mse_loss(small(x[8 * part:8 * part + 8]), y[8 * part:8 * part + 8]).backward()
        opt_small.step()
    opt_big.zero_grad()
    torch.nn.functional.mse_loss(big(x), y).backward()  # one step on all 8k samples, lr × k
    opt_big.step()
    with torch.no_grad():  # how far the two runs end apart, per how far the big step moved
        return ((small.weight - big.weight).abs().max() / (big.weight - start).abs().max()).item()


for lr in (1e-4, 1e-3, 1e-2, 1e-1):
    print(f"base lr {lr:g}: 8 small steps vs one step with lr x 8 end {k_small_vs_one_big(lr):.1%} "
          "of the step apart")

# %% [markdown]
# **A held-out test loop.** The notes' classification loop measures accuracy on data
# the model never trained on, in `eval()` mode and under `no_grad()` (chapter 03 §11),
# with `torch.max(out, 1)` giving the predicted class. Accuracy on the training data
# alone says how well the model memorized, not how well it generalizes.

# %%
torch.manual_seed(0)
points = torch.randn(600, 2)
classes = (points[:, 0] * points[:, 1] > 0).long()                 # XOR-like quadrants
train_x, train_y, test_x, test_y = points[:400], classes[:400], points[400:], classes[400:]
clf = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
opt_clf = torch.optim.Adam(clf.parameters(), lr=0.02)
for epoch in range(200):
    clf.train()
    opt_clf.zero_grad()
    torch.nn.functional.cross_entropy(clf(train_x), train_y).backward()
    opt_clf.step()


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        _, predicted = torch.max(model(x), 1)                      # (values, indices): the class is the index
    return (predicted == y).float().mean().item()


print(f"accuracy on the 400 training points {accuracy(clf, train_x, train_y):.3f}, "
      f"on the 200 held-out points {accuracy(clf, test_x, test_y):.3f}")

# %% [markdown]
# ## Grade chapter 08
#
# Runs the tests of every exercise 8.x against PyTorch: your param groups against
# torch's over generated layouts (and every error and warning), SGD and Adam/AdamW
# against `torch.optim` over generated gradient sequences (options, groups, missing
# gradients, checkpoints resumed mid-run), LambdaLR trajectories, and clipping over
# generated gradients, norm types and infs.

# %%
mk.grade("8.*")
