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
# # Chapter 04 — Hooks and Module internals
#
# A hook is a plug-in: a function you hang on a module or a tensor, which PyTorch
# calls at a fixed point of its work — before `forward`, after it, when a
# gradient arrives. It adds a feature (printing, recording, clipping, checking)
# without touching the model's code. This chapter opens `torch.nn.Module` to see
# where hooks live and in which order a call runs them, then has you rebuild that
# machinery in `minikernel/nn/`:
#
# | exercise | file | what |
# |---|---|---|
# | 4.1 | `minikernel/nn/module.py` | `module_setattr`: `self.fc = Linear(...)` files the layer under `_modules` |
# | 4.2 | `minikernel/nn/hooks.py` | `run_forward_pre_hooks`, `run_forward_hooks`: the forward half of `_call_impl` |
# | 4.3 | `minikernel/nn/backward_hooks.py` | `setup_input_hook`, `setup_output_hook`: full backward hooks |
# | 4.4 | `minikernel/nn/hooks.py` | `remove_hook`: what `handle.remove()` does |
# | 4.5 | `minikernel/nn/state.py` | `module_state_dict`, `load_from_state_dict` |
#
# Then the hooks at work: capturing activations, clipping gradients, finding where
# a NaN first appears, and a live dashboard of a small training run.
#
# **How each exercise goes.** PyTorch's behaviour first, then your function on the
# same input, then a check cell that prints your result beside PyTorch's. Until you
# write a function, the cells that need it show a short box ("Exercise 4.1
# (module_setattr) is not written yet", where and how to grade it) and Run All goes on.
# Building any layer (`minikernel.nn.Linear(2, 3)`) needs 4.1, so do that one first;
# backward passes need chapter 03's engine.
#
# **Stuck?** Each exercise has a reference in `solutions/nn/`. Set
# `MINIKERNEL_SOLUTIONS` before starting JupyterLab (`MINIKERNEL_SOLUTIONS=4.1 make
# lab`, `4.*`, or `all`); it is read once, when `minikernel` is imported, so restart
# the kernel after changing it.
#
# **Grading.** The last cell runs `minikernel.grade("4.*")`; from a terminal,
# `python -m minikernel grade '4.*'`.

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

import numpy as np
import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

import minikernel as mk
import minikernel.nn as mknn
from minikernel.autograd import functions as F
from minikernel.course import notebook_display
from minikernel.course.checking import agree
from minikernel.nn.tracing import CallTrace, attribute_kind

notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
torch.set_num_threads(1)  # tiny tensors: one thread is faster than waking several for each op
print(torch.__version__)

# %% [markdown]
# ## 1. A hook on every module
#
# `register_module_forward_pre_hook` registers a *global* forward pre-hook: it runs
# before the `forward` of every module in the process — here it prints each
# module's input. The hook receives the module and a tuple of the positional
# arguments (keyword arguments go to `forward` only).

# %%
def custom_pre_forward_hook(module, input):
    print(type(module).__name__, input)


handle = register_module_forward_pre_hook(custom_pre_forward_hook)


class A(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.count = 0

    def forward(self, x):
        self.count += 1
        return x


a = A()
x = a(torch.rand([2]))
print("count:", a.count)
_ = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())(x)  # nested modules print too

# %% [markdown]
# A global hook stays until its handle removes it; otherwise every module of the
# process keeps printing:

# %%
handle.remove()
_ = a(x)
print("count:", a.count, "(nothing printed)")

# %% [markdown]
# ## 2. What a Module is made of
#
# `Module.__init__` creates a handful of dicts (with `super().__setattr__`, so that
# its own `__setattr__`, below, is not needed yet). Each registration method fills
# one of them. The notes listed PyTorch 1.6's; today there are more (`with_kwargs`
# and `always_call` flags, backward pre-hooks, state-dict pre/post hooks):

# %%
lin = torch.nn.Linear(2, 3)
print(list(vars(lin)))

# %% [markdown]
# `weight` and `bias` are not in `__dict__`: they sit in `_parameters`, and
# `Module.__getattr__` (called only when normal lookup fails) finds them there.
# The registration methods, on modules and for all modules at once:

# %%
print([m for m in dir(torch.nn.Module) if m.startswith(("register", "add_module"))])
print([f for f in dir(torch.nn.modules.module) if f.startswith("register_module_")])

# %% [markdown]
# `register_backward_hook` and `register_module_backward_hook` are deprecated
# (section 5 shows why); the state-dict hooks the notes list as private
# (`_register_state_dict_hook`, `_register_load_state_dict_pre_hook`) now have public
# forms. `minikernel.nn.Module` keeps the dicts it implements, under the same names:

# %%
print(list(vars(mknn.Module())))

# %% [markdown]
# ## 3. Registration through `__setattr__`
#
# Assigning an attribute of a module is sorted by type: a `Parameter` goes to
# `_parameters`, a `Module` to `_modules`, a value assigned to an existing buffer's
# name replaces the buffer; anything else — including a plain tensor — is an
# ordinary attribute. New buffers need `register_buffer`; `persistent=False` keeps
# one out of the `state_dict`.

# %%
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 3)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("mask", torch.ones(3), persistent=False)
        self.steps = 0
        self.cache = torch.zeros(1)

    def forward(self, x):
        return (self.fc(x) - self.mean) * self.mask * self.scale


net = Net()
for name in ["fc", "scale", "mean", "mask", "steps", "cache"]:
    print(f"{name:6} {attribute_kind(net, name)}")
print("in __dict__:", [k for k in vars(net) if not k.startswith("_")])

# %% [markdown]
# Once a name is a parameter, only a `Parameter` or `None` may replace it; the same
# for submodules (a `Module` or `None`) and buffers (a tensor or `None`):

# %%
for name, value in [("scale", torch.zeros(1)), ("fc", 3), ("mean", "zeros"), ("fc", None), ("steps", 5)]:
    try:
        setattr(net, name, value)
        print(f"net.{name} = {value!r}: fine, now {attribute_kind(net, name)}")
    except TypeError as err:
        print(f"net.{name} = {value!r}: TypeError: {err}")

# %% [markdown]
# ## Exercise 4.1 — module_setattr
#
# `minikernel.nn.Module.__setattr__` calls your `module_setattr(module, name, value)`
# (`minikernel/nn/module.py`). Its docstring lists the six cases in torch's order:
# a Parameter; an existing parameter's name; a Module; an existing submodule's name;
# an existing buffer's name; anything else. Your function on the same class:

# %%
class MkNet(mknn.Module):
    def __init__(self):
        super().__init__()
        self.fc = mknn.Linear(2, 3)
        self.scale = mknn.Parameter(mk.tensor([1.0]))
        self.register_buffer("mean", mk.tensor([0.0, 0.0, 0.0]))
        self.register_buffer("mask", mk.tensor([1.0, 1.0, 1.0]), persistent=False)
        self.steps = 0
        self.cache = mk.tensor([0.0])

    def forward(self, x):
        return F.mul(F.mul(F.sub(self.fc(x), self.mean), self.mask), self.scale)


mk_net = MkNet()
for name in ["fc", "scale", "mean", "mask", "steps", "cache"]:
    print(f"{name:6} {attribute_kind(mk_net, name)}")
print("in __dict__:", [k for k in vars(mk_net) if not k.startswith("_")])

# %%
agree(lambda name: attribute_kind(MkNet(), name), lambda name: attribute_kind(Net(), name),
      [("fc",), ("scale",), ("mean",), ("mask",), ("steps",), ("cache",), ("weight",)])

# %%
agree(lambda name, value: setattr(MkNet(), name, value), lambda name, value: setattr(Net(), name, value),
      [("scale", 3), ("fc", 3), ("mean", "zeros"), ("fc", None), ("scale", None), ("steps", 5)])

# %% [markdown]
# `minikernel.nn.Linear` starts from the weights torch's `Linear` draws after the
# same seed (U(-1/√in, 1/√in), drawn with torch's generator), so both compute the
# same function:

# %%
torch.manual_seed(0)
mk_lin = mknn.Linear(2, 3)
torch.manual_seed(0)
torch_lin = torch.nn.Linear(2, 3)
print(mk_lin)
print("same weights:", np.array_equal(mk_lin.weight.to_numpy(), torch_lin.weight.detach().numpy()))
print("same output:", np.allclose(mk_lin(mk.tensor([[1.0, -2.0]])).to_numpy(),
                                  torch_lin(torch.tensor([[1.0, -2.0]])).detach().numpy()))

# %% [markdown]
# ## 4. `_call_impl`: what `model(x)` does
#
# `Module.__call__` is `_call_impl` (`torch/nn/modules/module.py`). Stripped of
# tracing and compilation, with no hook anywhere it just calls `forward`; otherwise:
#
# 1. collect the backward hooks (section 5);
# 2. **forward pre-hooks**: the global ones, then the module's, each as
#    `hook(module, args)`; a returned value replaces `args` (a single value is
#    wrapped into a 1-tuple); with `with_kwargs=True`, `hook(module, args, kwargs)`
#    may return a new `(args, kwargs)`;
# 3. set up the full backward hooks on the inputs (section 5);
# 4. `result = forward(*args, **kwargs)`;
# 5. **forward hooks**: global, then the module's: `hook(module, args, result)`; a
#    returned value replaces `result`;
# 6. set up the full backward hooks on the outputs;
# 7. if anything raised: run the `always_call=True` forward hooks that did not run
#    yet, then re-raise.
#
# The loops go over a list taken when each loop starts: a hook removed or added
# during a call changes later loops and calls, not a loop already running.
# Watch the order on a two-layer model, with a pre-hook that multiplies the input
# by 10 and a forward hook that adds 1 to the output:

# %%
torch_events = []


def global_pre(module, args):
    torch_events.append(f"global pre-hook   {type(module).__name__}")


def local_pre(module, args):
    torch_events.append(f"pre-hook          {type(module).__name__}: input x10")
    return args[0] * 10  # a single value: wrapped into (value,)


def local_fwd(module, args, output):
    torch_events.append(f"forward hook      {type(module).__name__}: output +1")
    return output + 1


def global_fwd(module, args, output):
    torch_events.append(f"global fwd hook   {type(module).__name__}")


model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.ReLU())
handles = [register_module_forward_pre_hook(global_pre), register_module_forward_hook(global_fwd),
           model[0].register_forward_pre_hook(local_pre), model[0].register_forward_hook(local_fwd)]
out = model(torch.tensor([1.0, -2.0]))
for h in handles:
    h.remove()
print("\n".join(torch_events))
print("output:", out)

# %% [markdown]
# `Sequential` runs first (global hooks only), then `Identity` — global pre-hook,
# its own pre-hook (input ×10), forward, global forward hook, its own forward hook
# (+1) — then `ReLU`, whose input is `Identity`'s replaced output.
#
# With `with_kwargs=True` the pre-hook also sees (and may replace) keyword
# arguments; `always_call=True` forward hooks run even when the call fails:

# %%
class Shift(torch.nn.Module):
    def forward(self, x, *, by=0.0):
        if by < 0:
            raise ValueError("negative shift")
        return x + by


shift = Shift()
shift.register_forward_pre_hook(lambda m, args, kwargs: (args, {"by": kwargs["by"] * 100}), with_kwargs=True)
shift.register_forward_hook(lambda m, args, out: print("always_call hook saw output", out), always_call=True)
print(shift(torch.zeros(2), by=0.5))
try:
    shift(torch.zeros(2), by=-1.0)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# ## Exercise 4.2 — run_forward_pre_hooks, run_forward_hooks
#
# `minikernel.nn.Module._call_impl` follows the list above and calls your two
# runners (`minikernel/nn/hooks.py`) for steps 2 and 5. They work on a
# `ModuleCall` holding `args`, `kwargs` and `result`, and store each hook's
# replacement there at once — so if a later hook raises, the `always_call` hooks
# still see it, as in torch. An empty `Sequential` returns its input; with a
# pre-hook ×10 and a forward hook +1:

# %%
torch_box = torch.nn.Sequential()
torch_box.register_forward_pre_hook(lambda m, args: args[0] * 10)
torch_box.register_forward_hook(lambda m, args, out: out + 1)
print("torch:     ", torch_box(torch.tensor([1.0, -2.0])))
box = mknn.Sequential()
box.register_forward_pre_hook(lambda m, args: F.mul(args[0], 10.0))
box.register_forward_hook(lambda m, args, out: F.add(out, 1.0))
print("minikernel:", box(mk.tensor([1.0, -2.0])))

# %% [markdown]
# The keyword-argument hooks and an exception with an `always_call` hook, on the
# same `Shift` layer written for minikernel:

# %%
class MkShift(mknn.Module):
    def forward(self, x, *, by=0.0):
        if by < 0:
            raise ValueError("negative shift")
        return F.add(x, by)


mk_shift = MkShift()
mk_shift.register_forward_pre_hook(lambda m, args, kwargs: (args, {"by": kwargs["by"] * 100}), with_kwargs=True)
mk_shift.register_forward_hook(lambda m, args, out: print("always_call hook saw output", out), always_call=True)
print(mk_shift(mk.tensor([0.0, 0.0]), by=0.5))
try:
    mk_shift(mk.tensor([0.0, 0.0]), by=-1.0)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# `CallTrace` (`minikernel.nn.tracing`) hangs a recording hook of each kind on every
# module of a model — torch's or minikernel's — and lists what fired. The same
# two-layer network in both, weights copied from torch's:

# %%
torch.manual_seed(0)
torch_mlp = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
with CallTrace(torch_mlp, backward=False) as torch_trace:
    torch_mlp(torch.randn(5, 2))
print(torch_trace)

# %%
torch.manual_seed(0)
mk_mlp = mknn.Sequential(mknn.Linear(2, 4), mknn.ReLU(), mknn.Linear(4, 3))
with CallTrace(mk_mlp, backward=False) as mk_trace:
    mk_mlp(mk.Tensor.from_torch(torch.randn(5, 2)))
print("same events as torch:", mk_trace.events == torch_trace.events)

# %% [markdown]
# ## 5. Backward hooks: `register_backward_hook` vs `register_full_backward_hook`
#
# A module is not a node of the autograd graph: its forward may record many
# nodes. The old `register_backward_hook` (the one in the notes' `_call_impl`)
# simply hangs the hook on the `grad_fn` of the output — the *last* node of the
# forward — so its `grad_input` is that node's input gradient, not the module's.
# Here the last node is `tanh`, whose input is `3x`: the hook reports
# d loss/d(3x), a third of the true d loss/dx. Today PyTorch says so with a
# `FutureWarning`:

# %%
class ScaledTanh(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x * 3)


old = ScaledTanh()
old.register_backward_hook(lambda m, grad_input, grad_output: print("old hook: grad_input", grad_input))
x = torch.tensor([0.1, -0.2], requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    old(x).sum().backward()
for w in caught:
    print(f"{w.category.__name__}: {w.message}")
print("x.grad:", x.grad)

# %% [markdown]
# `register_full_backward_hook` reports the gradients at the module's borders:
# `grad_input` is d loss/d(each positional input), `grad_output` d loss/d(each
# output), and it may return a new `grad_input`. How does PyTorch see those
# borders? `_call_impl` routes the inputs, and then the outputs, through an
# identity `autograd.Function` (`BackwardHookFunction`): its two nodes are in the
# graph exactly where the module begins and ends. A backward pre-hook
# (`register_full_backward_pre_hook`) runs at the output node and may replace
# `grad_output` before it flows into the module.

# %%
full = ScaledTanh()
full.register_full_backward_pre_hook(lambda m, grad_output: print("pre-hook: grad_output", grad_output))
full.register_full_backward_hook(lambda m, grad_input, grad_output: print("full hook: grad_input", grad_input))
x = torch.tensor([0.1, -0.2], requires_grad=True)
y = full(x)
node, chain = y.grad_fn, []
while node is not None:
    chain.append(node.name())
    node = node.next_functions[0][0] if node.next_functions else None
print(" -> ".join(chain))
y.sum().backward()
print("x.grad:", x.grad)

# %% [markdown]
# ## Exercise 4.3 — setup_input_hook, setup_output_hook
#
# In `minikernel/nn/backward_hooks.py`, `BackwardHookFunction` is the identity
# Function and `BackwardHook` keeps one call's state. Write the two setups: route
# the tensors through the identity (`bw_hook.apply_on_tensors`) and register, on
# its node, the hook that captures `grad_output` and runs the pre-hooks (outputs)
# or runs the full backward hooks with `(module, grad_input, grad_output)`
# (inputs). Your functions on the same module:

# %%
class MkScaledTanh(mknn.Module):
    def forward(self, x):
        return F.tanh(F.mul(x, 3.0))


mk_full = MkScaledTanh()
mk_full.register_full_backward_pre_hook(lambda m, grad_output: print("pre-hook: grad_output", grad_output))
mk_full.register_full_backward_hook(lambda m, grad_input, grad_output: print("full hook: grad_input", grad_input))
mk_x = mk.tensor([0.1, -0.2], requires_grad=True)
mk_y = mk_full(mk_x)
node, chain = mk_y.grad_fn, []
while node is not None:
    chain.append(node.name())
    node = node.next_functions[0][0] if node.next_functions else None
print(" -> ".join(chain))
mk_y.sum().backward()
print("x.grad:", mk_x.grad)

# %%
seen = {}
for name, module, tensor in (("torch", ScaledTanh(), torch.tensor), ("minikernel", MkScaledTanh(), mk.tensor)):
    seen[name] = []
    module.register_full_backward_hook(lambda m, gin, gout, s=seen[name]: s.append((gin[0].tolist(), gout[0].tolist())))
    module.register_full_backward_pre_hook(lambda m, gout: (gout[0] * 2,))  # double grad_output
    inp = tensor([0.1, -0.2, 0.3], requires_grad=True)
    module(inp).sum().backward()
    seen[name].append(inp.grad.tolist())
print("torch:     ", np.round(seen["torch"][0][0], 6).tolist(), np.round(seen["torch"][1], 6).tolist())
print("minikernel:", np.round(seen["minikernel"][0][0], 6).tolist(), np.round(seen["minikernel"][1], 6).tolist())
print("same grad_input, grad_output and x.grad:", all(np.allclose(a, b) for a, b in zip(
    np.concatenate([np.ravel(v) for v in seen["torch"]]), np.concatenate([np.ravel(v) for v in seen["minikernel"]]))))

# %% [markdown]
# And the whole backward order of the two-layer network, torch's beside yours:

# %%
torch.manual_seed(0)
torch_mlp = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
with CallTrace(torch_mlp, forward=False) as torch_trace:
    torch_mlp(torch.randn(5, 2, requires_grad=True)).sum().backward()
print(torch_trace)

# %%
torch.manual_seed(0)
mk_mlp = mknn.Sequential(mknn.Linear(2, 4), mknn.ReLU(), mknn.Linear(4, 3))
with CallTrace(mk_mlp, forward=False) as mk_trace:
    F.sum(mk_mlp(mk.Tensor.from_torch(torch.randn(5, 2)).requires_grad_())).backward()
print("same events as torch:", mk_trace.events == torch_trace.events)

# %% [markdown]
# ## 6. Tensor hooks and module hooks
#
# Three places to hang a backward hook, from the finest to the coarsest:
#
# * a **tensor** hook, `t.register_hook(fn(grad))`: runs when the gradient of that one
#   tensor is ready (chapter 03); a returned tensor replaces it;
# * a **node** hook, `t.grad_fn.register_hook(fn(grad_inputs, grad_outputs))`: one
#   recorded operation — what the deprecated module hook used;
# * a **module** hook: the gradients at the module's borders, whatever happens inside.
#
# The module's `grad_output` is the gradient of its output tensor, which a tensor hook
# on that output sees too — the tensor hook first, since it runs as that gradient
# reaches the output's node:

# %%
lin = torch.nn.Linear(2, 2)
lin.register_full_backward_hook(lambda m, gin, gout: print("module hook, grad_output:", gout[0]))
out = lin(torch.ones(1, 2, requires_grad=True))
out.register_hook(lambda grad: print("tensor hook on the output:", grad))
(out * torch.tensor([[1.0, 10.0]])).sum().backward()

# %% [markdown]
# ## 7. What hooks are used for
#
# **Capturing activations.** A forward hook on an inner layer copies its output
# out — features for another model, or statistics for a dashboard — without
# changing `forward`:

# %%
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
features = {}
capture = model[1].register_forward_hook(lambda m, args, out: features.update(hidden=out.detach()))
logits = model(torch.randn(4, 2))
capture.remove()
print("hidden features:", tuple(features["hidden"].shape), " fraction zero after ReLU:",
      (features["hidden"] == 0).float().mean().item())

# %% [markdown]
# **Clipping gradients.** A tensor hook on each parameter replaces its gradient
# before it is accumulated into `.grad`:

# %%
x, target = torch.randn(16, 2), torch.randint(0, 3, (16,))
loss = torch.nn.functional.cross_entropy(model(x), target)
loss.backward(retain_graph=True)
print("largest gradient entry, unclipped:", round(max(p.grad.abs().max().item() for p in model.parameters()), 4))
model.zero_grad()
clips = [p.register_hook(lambda grad: grad.clamp(-0.05, 0.05)) for p in model.parameters()]
loss.backward()
print("largest gradient entry, clipped:  ", round(max(p.grad.abs().max().item() for p in model.parameters()), 4))
for h in clips:
    h.remove()

# %% [markdown]
# **Finding where a NaN first appears.** A global forward hook checks every
# module's output; the first module whose output is not finite is the culprit (its
# input was still fine, or its own pre-check would have fired first). Here a
# `Log` layer meets a negative input:

# %%
class Log(torch.nn.Module):
    def forward(self, x):
        return torch.log(x)


model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), Log(), torch.nn.Linear(4, 1))
names = {module: name for name, module in model.named_modules()}
first_bad = []


def check_finite(module, args, output):
    if not first_bad and not torch.isfinite(output).all():
        first_bad.append(f"{names[module]} ({type(module).__name__})")


watch = register_module_forward_hook(check_finite)
torch.manual_seed(1)
out = model(torch.randn(3, 2))
watch.remove()
print("output:", out.flatten().tolist())
print("first non-finite output from module", first_bad[0])

# %% [markdown]
# ## 8. Handles: removing hooks
#
# Every `register_*hook` returns a `RemovableHandle`. Hooks sit in an ordered dict
# keyed by the handle's id (one counter for all hooks, never reused); flags such as
# `with_kwargs` and `always_call` are ids in side dicts, and `remove()` deletes the id
# everywhere. The handle holds weak references, so it keeps no module alive; a
# `with` block removes its hook at the end. A hook may remove itself — a hook that
# runs once:

# %%
lin = torch.nn.Linear(2, 2)
calls = []
once = lin.register_forward_hook(lambda m, args, out: calls.append("once") or once.remove(), with_kwargs=False)
flagged = lin.register_forward_hook(lambda m, args, kwargs, out: calls.append("with kwargs"), with_kwargs=True)
for _ in range(3):
    lin(torch.ones(2))
print(calls)
print("hooks:", len(lin._forward_hooks), " with_kwargs flags:", len(lin._forward_hooks_with_kwargs))
flagged.remove()
print("hooks:", len(lin._forward_hooks), " with_kwargs flags:", len(lin._forward_hooks_with_kwargs))
with lin.register_forward_hook(lambda m, args, out: calls.append("inside with")):
    lin(torch.ones(2))
lin(torch.ones(2))
print(calls[-1:], "then no more")

# %% [markdown]
# ## Exercise 4.4 — remove_hook
#
# `minikernel.nn.RemovableHandle` is `minikernel.autograd.graph.RemovableHandle` (the tensor
# hooks' handle, same id counter) plus weak references to the hook dict and the flag
# dicts. Its `remove()` calls your `remove_hook(handle)` (`minikernel/nn/hooks.py`):

# %%
box = mknn.Sequential()
flag = box.register_forward_hook(lambda m, args, kwargs, out: None, with_kwargs=True)
flag.remove()
print("hooks:", len(box._forward_hooks), " with_kwargs flags:", len(box._forward_hooks_with_kwargs))
flag.remove()  # a second time: nothing left, no error

# %%
mk_lin, mk_calls = mknn.Linear(2, 2), []
mk_once = mk_lin.register_forward_hook(lambda m, args, out: mk_calls.append("once") or mk_once.remove())
mk_flagged = mk_lin.register_forward_hook(lambda m, args, kwargs, out: mk_calls.append("with kwargs"),
                                          with_kwargs=True)
for _ in range(3):
    mk_lin(mk.tensor([1.0, 1.0]))
mk_flagged.remove()
with mk_lin.register_forward_hook(lambda m, args, out: mk_calls.append("inside with")):
    mk_lin(mk.tensor([1.0, 1.0]))
mk_lin(mk.tensor([1.0, 1.0]))
print("same calls as torch:", mk_calls == calls, " hooks left:", len(mk_lin._forward_hooks),
      " flags left:", len(mk_lin._forward_hooks_with_kwargs))

# %% [markdown]
# ## 9. `state_dict` and `load_state_dict`
#
# `state_dict()` walks the tree and names every parameter and *persistent* buffer by
# its attribute path; the values are detached (same memory, no history).
# `load_state_dict` copies values in place and, with `strict=True` (the default),
# refuses keys that are missing or unexpected — listing every one:

# %%
net = Net()
print(list(net.state_dict()))
state = dict(net.state_dict())
del state["mean"]
state["fc.extra"], state["other"] = torch.zeros(1), torch.zeros(1)
try:
    net.load_state_dict(state)
except RuntimeError as err:
    torch_error = str(err)
    print("RuntimeError:", err)
print(net.load_state_dict(state, strict=False))
print(net.load_state_dict(net.state_dict()))

# %% [markdown]
# ## Exercise 4.5 — module_state_dict, load_from_state_dict
#
# `minikernel/nn/state.py`: `module_state_dict` writes one module's parameters and
# persistent buffers under its prefix and recurses into the children through their
# `state_dict` method; `load_from_state_dict` does one module's part of loading
# (`load_state_dict` walks the tree, hands each module the entries under its prefix,
# and turns the lists it collects into torch's error). On a module built with the
# `register_*` methods:

# %%
bare = mknn.Sequential()
bare.register_parameter("weight", mknn.Parameter(mk.tensor([1.0, 2.0])))
bare.register_buffer("count", mk.tensor([0.0]))
bare.register_buffer("mask", mk.tensor([1.0, 1.0]), persistent=False)
bare.add_module("head", mknn.Sequential())
bare.head.register_parameter("bias", mknn.Parameter(mk.tensor([0.5])))
print(list(bare.state_dict()))

# %%
mk_net = MkNet()
print("same keys as torch:", list(mk_net.state_dict()) == list(Net().state_dict()))
mk_state = dict(mk_net.state_dict())
del mk_state["mean"]
mk_state["fc.extra"], mk_state["other"] = mk.tensor([0.0]), mk.tensor([0.0])
try:
    mk_net.load_state_dict(mk_state)
except RuntimeError as err:
    print("RuntimeError:", err)
    print("same message as torch:", str(err).replace("MkNet", "Net") == torch_error)
print(mk_net.load_state_dict(mk_state, strict=False))

# %% [markdown]
# A torch model's weights load into the minikernel one (converted tensor by tensor),
# after which both compute the same outputs:

# %%
torch_net, mk_net = Net(), MkNet()
mk_net.load_state_dict({k: mk.Tensor.from_torch(v.clone()) for k, v in torch_net.state_dict().items()})
inp = torch.randn(4, 2)
print("same outputs:", np.allclose(torch_net(inp).detach().numpy(), mk_net(mk.Tensor.from_torch(inp)).to_numpy(),
                                   atol=1e-6))

# %% [markdown]
# ## 10. A live dashboard of a small training run
#
# Forward hooks on every layer feed `widgets.Dashboard`: per layer, the activation
# mean/std and histogram; per parameter, the gradient norm; and the loss and the
# learning rate. With a visdom server running (`make dashboard`, or `make lab`,
# which starts one beside JupyterLab; by hand: `python -m visdom.server`), it
# streams to http://127.0.0.1:8097 in env `ch04` while training runs; visdom keeps
# plots only in memory, so they are gone when the server stops unless you save the
# env from its page. Without a server it says so and draws the same panels here.
#
# The notes log the same things to TensorBoard (`SummaryWriter.add_scalar("Loss/train",
# ...)`, parameter histograms, `add_graph`). With `tensorboard=True` the dashboard
# also writes every record with `torch.utils.tensorboard.SummaryWriter`, into event
# files under `runs/ch04/<run>` at the top of the course: scalars and gradient
# norms each step, histograms of activations, weights and gradients every
# `every`-th step. Unlike visdom's plots they stay on disk. To see them, run
# `python -m minikernel tensorboard` in a terminal (TensorBoard on
# http://127.0.0.1:6006, offline; by hand: `tensorboard --logdir runs --host 127.0.0.1`).
# In a notebook, `%load_ext tensorboard` then `%tensorboard --logdir ../runs --host 127.0.0.1`
# shows the same page in an output cell.
#
# The data: two-dimensional spirals, three classes, 300 points; the model an MLP.

# %%
gen = torch.Generator().manual_seed(0)
n, classes = 100, 3
radius = torch.linspace(0.05, 1, n).repeat(classes)
angle = torch.cat([torch.linspace(c * 4.0, (c + 1) * 4.0, n) for c in range(classes)]) + 0.2 * torch.randn(
    n * classes, generator=gen)
points = torch.stack([radius * torch.sin(angle), radius * torch.cos(angle)], dim=1)
labels = torch.arange(classes).repeat_interleave(n)
print(points.shape, labels.bincount().tolist())

# %%
torch.manual_seed(0)
spiral_net = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                 torch.nn.Linear(32, 3))
initial_state = {k: v.clone() for k, v in spiral_net.state_dict().items()}
opt = torch.optim.SGD(spiral_net.parameters(), lr=0.5)

# %% tags=["nbval-ignore-output"]
from widgets.dashboard import Dashboard

dashboard = Dashboard(spiral_net, env="ch04", optimizer=opt, live=False, every=10, tensorboard=True)

# %%
losses = []
for step in range(300):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(spiral_net(points), labels)
    loss.backward()
    dashboard.log(step, run="torch", loss=loss.item())
    opt.step()
    losses.append(loss.item())
accuracy = (spiral_net(points).argmax(dim=1) == labels).float().mean().item()
print(f"loss {losses[0]:.2f} -> below 0.2: {losses[-1] < 0.2}; training accuracy above 80%: {accuracy > 0.8}")
print("watched layers:", dashboard.watched)

# %% [markdown]
# TensorBoard's *Graphs* tab shows a model's graph, which `add_graph` records by
# tracing one call with `torch.jit.trace` (so only a `torch.nn.Module` can be drawn
# this way; the dashboard's own hooks are paused while it traces). Anything else goes
# through the run's `SummaryWriter`: here the first layer's weights as an image
# (scaled to [0, 1]; the notes tile several with torchvision's `make_grid`):

# %% tags=["nbval-ignore-output"]
dashboard.add_graph(points[:4], run="torch")
first_weight = spiral_net[0].weight.detach()
picture = (first_weight - first_weight.min()) / (first_weight.max() - first_weight.min())
dashboard.tensorboard.writer("torch").add_image("layer 0 weight", picture[None], 299, dataformats="CHW")

# %% [markdown]
# The dashboard's hooks are forward hooks like any other, so it watches a
# minikernel model just the same — through your 4.2 runners. The same network from
# the same starting weights (copied with `load_state_dict`), the same plain
# gradient descent written with `minikernel.autograd.functions`, the cross-entropy as
# `-mean(log_softmax(z)[label])`:

# %%
mk_spiral = mknn.Sequential(mknn.Linear(2, 32), mknn.ReLU(), mknn.Linear(32, 32), mknn.ReLU(), mknn.Linear(32, 3))
mk_spiral.load_state_dict({k: mk.Tensor.from_torch(v.clone()) for k, v in initial_state.items()})
mk_points, one_hot = mk.Tensor.from_torch(points), mk.Tensor.from_torch(torch.eye(classes)[labels])
dashboard.watch(mk_spiral)
mk_losses = []
for step in range(300):
    z = mk_spiral(mk_points)
    shifted = F.sub(z, F.max(z, 1, keepdim=True).values)
    log_probs = F.sub(shifted, F.log(F.sum(F.exp(shifted), 1, keepdim=True)))
    loss = F.neg(F.mean(F.sum(F.mul(log_probs, one_hot), 1)))
    mk_spiral.zero_grad()
    loss.backward()
    dashboard.log(step, run="minikernel", loss=loss.item())
    with mk.no_grad():
        for p in mk_spiral.parameters():
            p.sub_(F.mul(p.grad, 0.5))
    mk_losses.append(loss.item())
print("first 100 steps equal to torch's (rtol 1e-4):", np.allclose(mk_losses[:100], losses[:100], rtol=1e-4))
print("final losses within 5%:", abs(mk_losses[-1] - losses[-1]) < 0.05 * losses[-1],
      "| minikernel %.3f, torch %.3f" % (mk_losses[-1], losses[-1]))

# %% [markdown]
# Step for step the curves agree until float32 rounding (the two libraries add in
# different orders) meets this run's loss spikes, which a learning rate of 0.5 makes
# chaotic: a gap of 1e-6 at step 100 grows to the size of the loss itself inside a
# spike, and both runs settle to the same final loss. Comparing training runs, compare the early
# steps closely and the end loosely.
#
# Both runs on the dashboard (in visdom when a server runs, env `ch04`): the two loss
# lines lie on top of each other outside the spikes, and so do, per layer and per parameter, the
# activations and gradient norms — each run has its own lines (`torch: 0 (Linear)`,
# `minikernel: 0 (Linear)`, ...), because `log` was given `run=`.

# %% tags=["nbval-ignore-output"]
dashboard.show()
dashboard.close()

# %% [markdown]
# What went to TensorBoard, read back with TensorBoard's own reader
# (`EventAccumulator`): one run directory per `run=`, and in each the loss of every
# step — the same numbers the dashboard recorded from the loops above — plus the
# histograms and, for the torch run, the image and the graph:

# %%
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

for run in ("torch", "minikernel"):
    if run not in dashboard.history.scalars["loss"]:  # the minikernel run needs exercises 4.1 and 4.2
        print(f"{run}: no run written yet: finish exercise 4.1 (module_setattr) and exercise 4.2 "
              "(run_forward_pre_hooks, run_forward_hooks), then run the cells above again")
        continue
    events = EventAccumulator(str(dashboard.tensorboard.run_dir(run)),
                              size_guidance={"scalars": 0, "histograms": 0}).Reload()
    tags = events.Tags()
    logged = [e.value for e in events.Scalars("loss")]
    recorded = dashboard.history.scalars["loss"][run].values
    print(f"{run}: {len(logged)} loss points, equal to the loop's: {np.allclose(logged, recorded)}; "
          f"{len(tags['histograms'])} histogram tags, e.g. {sorted(tags['histograms'])[:3]}; "
          f"images: {tags['images']}; graph: {tags['graph']}")

# %% [markdown]
# ### Visdom's other windows: scatter, stem, heatmap, image, text
#
# The dashboard draws lines (loss, learning rate, activation statistics, gradient
# norms) and histograms. The notes list visdom's other window kinds as well —
# `scatter`, `stem`, `heatmap`, `image` and `text` — which come from visdom's own
# client, `visdom.Visdom`. Here they show the spiral run: the points coloured by the
# class the trained network predicts, the loss every 30 steps as stems, the
# confusion matrix as a heatmap, the first layer's weights as an image, and a line
# of text.
#
# Each call turns its data into the window's JSON (plotly traces for the plots) and
# POSTs it to the server. With `offline=True, log_to_filename=...` the client writes
# those messages to a file instead, one JSON line per window, so the same calls run
# with or without a server. The file is also a way to keep windows that the server
# holds only in memory: `Visdom(...).replay_log(file)` sends them again to a running
# server, now or after it restarts (the other way is saving the env from its page).

# %%
import json
import tempfile
from pathlib import Path

import visdom

with torch.no_grad():
    predicted = spiral_net(points).argmax(dim=1)
confusion = torch.zeros(classes, classes)
confusion.index_put_((labels, predicted), torch.ones(len(labels)), accumulate=True)
class_names = [str(c) for c in range(classes)]
every_30 = np.arange(0, 300, 30)

visdom_log = Path(tempfile.mkdtemp(prefix="minikernel-ch04-")) / "ch04_windows.jsonl"
offline = visdom.Visdom(env="ch04", offline=True, log_to_filename=str(visdom_log))
offline.scatter(X=points.numpy(), Y=(predicted + 1).numpy(), win="spiral predictions",
                opts={"title": "predicted class", "legend": class_names, "markersize": 4})
offline.stem(X=np.array(losses)[every_30], Y=every_30, win="loss stems", opts={"title": "loss every 30 steps"})
offline.heatmap(X=confusion.numpy(), win="confusion", opts={"title": "confusion matrix (rows: true class)",
                                                            "rownames": class_names, "columnnames": class_names})
offline.image(picture[None].numpy(), win="layer 0 weight", opts={"title": "layer 0 weight (32 × 2)"})
offline.text(f"<b>spiral MLP</b>: 300 steps of SGD at lr 0.5, training accuracy {accuracy:.0%}", win="summary")

for line in visdom_log.read_text().splitlines():
    endpoint, message = json.loads(line)
    kinds = [part["type"] for part in message["data"]]
    print(f"/{endpoint} env {message['eid']!r}, window {message['win']!r:22}: {len(kinds)} × {sorted(set(kinds))}")
print("confusion matrix counts every point once:", int(confusion.sum()) == len(labels))

# %% [markdown]
# A scatter gets one plotly trace per class; visdom has no stem trace of its own —
# its `stem` is a line trace of vertical segments from 0 up to each value, with
# gaps between them. With a visdom server running, the next cell replays the file
# into env `ch04` beside the training plots; without one it says so and draws the
# same five windows here with matplotlib.

# %% tags=["nbval-ignore-output"]
from urllib.parse import urlsplit

import matplotlib.pyplot as plt

from widgets.visdom_client import is_visdom, resolve_server

server = resolve_server(None)
if is_visdom(server, 0.5):
    address = urlsplit(server)
    live = visdom.Visdom(server=f"{address.scheme}://{address.hostname}", port=address.port, env="ch04",
                         use_incoming_socket=False, raise_exceptions=True)
    live.replay_log(str(visdom_log))
    print(f"replayed {len(visdom_log.read_text().splitlines())} windows into env 'ch04': open {server}/env/ch04")
else:
    print(f"no visdom server at {server} (§10 says how to start one): the five windows, drawn here")
    fig, axes = plt.subplots(1, 5, figsize=(18, 3.4))
    for c in range(classes):
        chosen = predicted == c
        axes[0].scatter(points[chosen, 0], points[chosen, 1], s=6, label=class_names[c])
    axes[0].legend(title="predicted", fontsize=7)
    axes[1].stem(every_30, np.array(losses)[every_30])
    axes[2].imshow(confusion, cmap="viridis")
    axes[3].imshow(picture, cmap="gray", aspect="auto")
    axes[4].axis("off")
    axes[4].text(0.0, 0.5, f"spiral MLP: 300 steps of SGD\nat lr 0.5, training accuracy {accuracy:.0%}", fontsize=11)
    for ax, title in zip(axes, ("predicted class", "loss every 30 steps", "confusion matrix (rows: true class)",
                                "layer 0 weight (32 × 2)", "summary")):
        ax.set_title(title, fontsize=9)
    plt.show()

# %% [markdown]
# ## 11. hiddenlayer: History and Canvas
#
# The notes draw training curves with hiddenlayer 0.3: a `History` records metrics
# by step, and a `Canvas` redraws them while training runs. Both still work on
# today's PyTorch (the loss is converted with `.item()`, the weight with
# `.detach().numpy()`); its graph drawing, `hl.build_graph`, does not — it calls a
# private `torch.onnx` function that PyTorch 2 no longer has (chapter 03's
# `widgets.hiddenlayer_compat.install()` gives it a torch.fx importer instead):

# %%
import hiddenlayer as hl

try:
    hl.build_graph(spiral_net, torch.zeros(1, 2))
except AttributeError as err:
    print("AttributeError:", err)

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
hl_net = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
hl_opt = torch.optim.Adam(hl_net.parameters(), lr=0.02)
history, canvas = hl.History(), hl.Canvas()
for step in range(200):
    hl_opt.zero_grad()
    logits = hl_net(points)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    hl_opt.step()
    if step % 20 == 19:
        # rounded: the Canvas writes each metric's last value into its plot's title
        history.log(step, loss=round(loss.item(), 4),
                    accuracy=round((logits.argmax(1) == labels).float().mean().item(), 4),
                    hidden_weight=hl_net[0].weight.detach().numpy().copy())
        with canvas:
            canvas.draw_plot(history["loss"])
            canvas.draw_plot(history["accuracy"])
            canvas.draw_image(history["hidden_weight"])

# %%
print("steps logged:", history.steps)
print("metrics:", sorted(history.metrics))

# %% [markdown]
# ## 12. Module odds and ends from the notes
#
# The notes collect many small `nn.Module` recipes. Each one below runs on today's
# PyTorch; where the notes' version is outdated or buggy, the cell shows what
# holds instead.
#
# **A model summary and the parameter count.** pytorch-summary's Keras-style
# table is forward hooks again: `minikernel.utils.summary` hangs one on every leaf,
# runs one forward pass under `no_grad`, and removes them. The notes' two-layer
# ConvNet, with the parameter count `sum(p.numel() for p in model.parameters())`:

# %%
from minikernel.utils.summary import summary

torch.manual_seed(0)
convnet = torch.nn.Sequential(
    torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    torch.nn.Linear(16, 10))
print(summary(convnet, torch.zeros(2, 1, 28, 28)))
print("sum(p.numel()):", sum(p.numel() for p in convnet.parameters()))

# %% [markdown]
# **`nn` modules versus `nn.functional`.** A module holds its parameters and its
# train/eval state; the function takes them as arguments. The same ConvNet written
# with `F.conv2d`, `F.batch_norm`, ... on the module's own tensors gives the same
# output — flattening only *after* the convolutions (the notes' functional version
# flattens first, which breaks the conv). The pitfall: `F.dropout(x, p)` has
# `training=True` by default, so `model.eval()` does not switch it off unless the
# module passes `training=self.training`:

# %%
convnet.eval()
x28 = torch.randn(2, 1, 28, 28)
c1, bn, c2, fc = convnet[0], convnet[1], convnet[4], convnet[8]
h = torch.nn.functional.conv2d(x28, c1.weight, c1.bias, padding=1)
h = torch.nn.functional.batch_norm(h, bn.running_mean, bn.running_var, bn.weight, bn.bias, training=False)
h = torch.nn.functional.max_pool2d(torch.relu(h), 2)
h = torch.relu(torch.nn.functional.conv2d(h, c2.weight, c2.bias, padding=1))
h = torch.nn.functional.adaptive_avg_pool2d(h, 1).flatten(1)
print("functional == modules:", torch.allclose(torch.nn.functional.linear(h, fc.weight, fc.bias), convnet(x28)))


class FunctionalDropout(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, 0.5)  # training=True whatever the mode


class ModeAwareDropout(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, 0.5, training=self.training)


ones = torch.ones(8)
torch.manual_seed(0)
print("after eval(): F.dropout without training= :", FunctionalDropout().eval()(ones).tolist())
print("after eval(): training=self.training       :", ModeAwareDropout().eval()(ones).tolist())

# %% [markdown]
# **Initialization: `modules()` versus `children()`, and `apply`.** `children()`
# yields the direct submodules, `modules()` every module recursively (the root
# first). The notes' init loop walks `modules()` and picks layers by type;
# `model.apply(fn)` does the same walk. Layers that `forward` never uses are
# still built and initialized — they hold parameters, and their initialization
# draws from the random generator, which changes every later layer's weights:

# %%
block = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), torch.nn.Linear(3, 1))
print("children():", [type(m).__name__ for m in block.children()])
print("modules(): ", [type(m).__name__ for m in block.modules()])


def init_weights(m):
    if isinstance(m, torch.nn.Linear):
        torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        torch.nn.init.constant_(m.bias, 0.0)


block.apply(init_weights)
print("biases after apply:", [m.bias.tolist() for m in block.modules() if isinstance(m, torch.nn.Linear)])
block[1].weight = torch.nn.Parameter(torch.ones(1, 3))  # assigning a Parameter registers it
print("assigned weight is in parameters():", any(p is block[1].weight for p in block.parameters()))


class WithUnused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Linear(100, 100)  # never called in forward
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x)


torch.manual_seed(0)
plain_fc = torch.nn.Linear(2, 2)
torch.manual_seed(0)
with_unused = WithUnused()
print("parameters held by the unused layer:", sum(p.numel() for p in with_unused.unused.parameters()))
print("fc's weights equal those without the unused layer:", torch.equal(with_unused.fc.weight, plain_fc.weight))

# %% [markdown]
# **Reusing part of a model.** `Sequential(*list(model.children())[:k])` cuts the
# first k layers out (sharing their parameters, no copy); loading the common part
# of another model's state dict means keeping the keys that exist here with the same
# shape, then `load_state_dict(..., strict=False)`:

# %%
trunk = torch.nn.Sequential(*list(convnet.children())[:4])
print("trunk output:", tuple(trunk(x28).shape), " shares conv weight:", trunk[0].weight is convnet[0].weight)
torch.manual_seed(1)
other = torch.nn.Sequential(*[torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8)],
                            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 32, 3, padding=1))
mine = convnet.state_dict()
common = {k: v for k, v in other.state_dict().items() if k in mine and v.shape == mine[k].shape}
result = convnet.load_state_dict(common, strict=False)
print("loaded:", sorted(common)[:4], "...", len(common), "tensors")
print("left as they were:", result.missing_keys)

# %% [markdown]
# **Fine-tuning: freeze, replace the head, and which `zero_grad`.** Freezing is
# `requires_grad_(False)` on the backbone's parameters: backward then computes no
# gradient for them (`.grad` stays None). A replaced head is a new, trainable
# module. Torchvision's models took `pretrained=True` in the notes; since
# torchvision 0.13 that argument is deprecated for `weights=` (e.g.
# `resnet18(weights=ResNet18_Weights.DEFAULT)`); torchvision is not installed here
# and nothing is downloaded, so the backbone is the ConvNet above.
#
# `optimizer.zero_grad()` clears the gradients of the parameters *the optimizer
# holds*; `model.zero_grad()` those of every parameter of the model. They differ
# as soon as the optimizer holds only part of the model:

# %%
for p in convnet.parameters():
    p.requires_grad_(False)
convnet[8] = torch.nn.Linear(16, 4)  # a new head for 4 classes: trainable
convnet.train()
head_opt = torch.optim.SGD(convnet[8].parameters(), lr=0.1)
loss = torch.nn.functional.cross_entropy(convnet(x28), torch.tensor([0, 3]))
loss.backward()
print("backbone conv grad:", convnet[0].weight.grad, " head grad set:", convnet[8].weight.grad is not None)
print("trainable:", sum(p.numel() for p in convnet.parameters() if p.requires_grad), "of",
      sum(p.numel() for p in convnet.parameters()))
convnet[0].bias.requires_grad_(True)
loss = torch.nn.functional.cross_entropy(convnet(x28), torch.tensor([0, 3]))
loss.backward()
head_opt.zero_grad()
print("after optimizer.zero_grad(): unfrozen conv bias grad still set:", convnet[0].bias.grad is not None)
convnet.zero_grad()
print("after model.zero_grad():     unfrozen conv bias grad:", convnet[0].bias.grad)

# %% [markdown]
# **Losses.** `CrossEntropyLoss` is `log_softmax` followed by `NLLLoss`, so the
# model must output raw scores: a softmax before it computes something else.
# `MSELoss`/`L1Loss` are means of squared and absolute differences; an L1 penalty on
# the weights is added to the loss by hand (the notes' snippet builds an `L1Loss` it
# never uses). Label smoothing follows in its own cell.

# %%
torch.manual_seed(0)
scores, target = torch.randn(4, 5), torch.tensor([1, 0, 4, 2])
ce = torch.nn.CrossEntropyLoss()(scores, target)
print("CE == NLL(log_softmax):", torch.allclose(ce, torch.nn.functional.nll_loss(scores.log_softmax(1), target)))
print("CE of softmaxed scores differs:", round(ce.item(), 4), "vs",
      round(torch.nn.CrossEntropyLoss()(scores.softmax(1), target).item(), 4))
pred, goal = torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.5, 2.0, 2.0])
print("MSELoss:", torch.nn.MSELoss()(pred, goal).item(), " L1Loss:", torch.nn.L1Loss()(pred, goal).item())
net, lam = torch.nn.Linear(3, 1), 1e-2
mse = torch.nn.MSELoss()(net(pred), goal[:1])
(mse_grad,) = torch.autograd.grad(mse, net.weight, retain_graph=True)
l1_penalty = sum(p.abs().sum() for name, p in net.named_parameters() if "weight" in name)
(mse + lam * l1_penalty).backward()
print("the L1 term adds λ·sign(w) to the weight's gradient:",
      torch.allclose(net.weight.grad, mse_grad + lam * net.weight.sign()))

# %% [markdown]
# **Label smoothing: three versions that are not the same loss.** The notes smooth the
# labels in two ways, both with ε/(C−1) for the wrong classes: an `LSR` module (a one-hot
# row with 1−ε on the label by `scatter_add_`, *then* ε/(C−1) added to every entry, the
# label's included) and an inline version in the training loop (`full(ε/(C−1))`, then
# `scatter_` of 1−ε onto the label). `CrossEntropyLoss(label_smoothing=ε)`, built in
# since 1.10, mixes the one-hot target with the uniform one instead: 1−ε+ε/C on the
# label, ε/C elsewhere. Run side by side on the same scores (the module below is the
# notes' `LSR` with its argument checks and `reduction` options left out):

# %%
class LSR(torch.nn.Module):
    def __init__(self, e=0.1):
        super().__init__()
        self.e = e

    def forward(self, x, target):
        n, c = x.shape
        one_hot = torch.zeros(n, c).scatter_add_(1, target.view(n, -1), torch.full((n, 1), 1 - self.e))
        one_hot += self.e / (c - 1)
        return torch.sum(-x.log_softmax(1) * one_hot, dim=1).mean()


def notes_inline_loss(score, labels, C, e=0.1):
    N = labels.size(0)
    smoothed_labels = torch.full((N, C), e / (C - 1)).scatter_(1, labels[:, None], 1 - e)
    return -torch.sum(score.log_softmax(1) * smoothed_labels) / N


eps, C = 0.1, scores.shape[1]
builtin = torch.nn.CrossEntropyLoss(label_smoothing=eps)(scores, target)
print(f"built-in label_smoothing=0.1: {builtin.item():.4f}")
print(f"the notes' LSR module:        {LSR(eps)(scores, target).item():.4f}")
print(f"the notes' inline version:    {notes_inline_loss(scores, target, C, eps).item():.4f}")
target_rows = {"built-in": (1 - eps + eps / C, eps / C), "LSR module": (1 - eps + eps / (C - 1), eps / (C - 1)),
               "inline": (1 - eps, eps / (C - 1))}
for name, (on, off) in target_rows.items():
    print(f"{name:>10} target: label {on:.4f}, others {off:.4f}, row sums to {on + (C - 1) * off:.4f}")
print("built-in with ε == the inline version with ε·(C−1)/C:",
      torch.allclose(builtin, notes_inline_loss(scores, target, C, eps * (C - 1) / C)))
print("LSR module == inline + ε/(C−1)·plain CE:",
      torch.allclose(LSR(eps)(scores, target), notes_inline_loss(scores, target, C, eps) + eps / (C - 1) * ce))

# %% [markdown]
# So the built-in is a drop-in replacement for neither. Its ε spreads over all C classes
# (the label keeps ε/C of it); the inline version's over the C−1 others, which is the
# same loss once ε is rescaled by (C−1)/C. The `LSR` module's target is not a
# distribution at all: its rows sum to 1 + ε/(C−1), one extra ε/(C−1) on the label, so
# its loss is the inline one plus ε/(C−1) times the plain cross-entropy. Swapping one
# for another changes the loss a script reports and, for the module, the size of its
# gradients.

# %% [markdown]
# **Mixup.** Train on convex mixtures of two examples, x = λ·x_a + (1−λ)·x_b with λ
# drawn from Beta(α, α), and mix the losses the same way: λ·CE(out, y_a) +
# (1−λ)·CE(out, y_b). Cross-entropy is linear in its target, so that equals one
# cross-entropy against the mixed *soft* target λ·onehot(y_a) + (1−λ)·onehot(y_b) —
# which `CrossEntropyLoss` accepts as class probabilities:

# %%
torch.manual_seed(0)
inputs, classes_of = torch.randn(8, 5), torch.randint(0, 5, (8,))
lam = torch.distributions.Beta(0.4, 0.4).sample().item()
perm = torch.randperm(8)
mixed_in = lam * inputs + (1 - lam) * inputs[perm]
logits_mix = torch.nn.Linear(5, 5)(mixed_in)
two_losses = lam * torch.nn.functional.cross_entropy(logits_mix, classes_of) + (1 - lam) * \
    torch.nn.functional.cross_entropy(logits_mix, classes_of[perm])
soft = lam * torch.nn.functional.one_hot(classes_of, 5).float() + \
    (1 - lam) * torch.nn.functional.one_hot(classes_of[perm], 5).float()
print(f"λ = {lam:.3f}; mixed losses == CE with the mixed soft target:",
      torch.allclose(two_losses, torch.nn.functional.cross_entropy(logits_mix, soft)))

# %% [markdown]
# **`nn.Embedding`.** A lookup table of `num_embeddings` rows; `padding_idx`'s row
# starts at zero and never receives a gradient; `max_norm` renormalizes (in place)
# the rows it looks up whose norm exceeds it:

# %%
torch.manual_seed(0)
emb = torch.nn.Embedding(5, 3, padding_idx=0)
tokens = torch.tensor([[0, 2, 2], [4, 0, 1]])
emb(tokens).sum().backward()
print("padding row:", emb.weight[0].tolist(), " its grad:", emb.weight.grad[0].tolist())
print("grad of row 2 (looked up twice):", emb.weight.grad[2].tolist())
capped = torch.nn.Embedding(5, 3, max_norm=1.0)
capped(torch.tensor([1, 3]))
print("norms of rows 1, 3 after a lookup with max_norm=1:",
      [round(n, 4) for n in capped.weight.detach()[[1, 3]].norm(dim=1).tolist()])

# %% [markdown]
# **Ways to build a model.** `Sequential` for a chain; a `Module` subclass for
# anything else (control flow in `forward`, layers reused); nesting both. The notes'
# `MySequential` shows what `Sequential` does inside: each layer filed under
# `self._modules[str(i)]` — the dict `__setattr__` fills (section 3) — and called in
# order. A shape assertion at the top of `forward` catches a wrong input early:

# %%
class MySequential(torch.nn.Module):
    def __init__(self, *layers):
        super().__init__()
        for i, layer in enumerate(layers):
            self._modules[str(i)] = layer

    def forward(self, x):
        for layer in self._modules.values():
            x = layer(x)
        return x


class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = MySequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        self.out = torch.nn.Linear(4, 2)

    def forward(self, x):
        assert x.dim() == 2 and x.shape[1] == 4, f"expected (N, 4), got {tuple(x.shape)}"
        h = self.body(x)
        if h.sum() > 0:  # control flow in forward: fine in eager mode (chapter 08 §8 on tracing it)
            h = self.body(h)  # the same layers used twice
        return self.out(h)


torch.manual_seed(0)
layers = [torch.nn.Linear(4, 4), torch.nn.ReLU()]
mine_seq, torch_seq = MySequential(*layers), torch.nn.Sequential(*layers)
probe4 = torch.randn(3, 4)
print("MySequential == nn.Sequential:", torch.equal(mine_seq(probe4), torch_seq(probe4)),
      "| same state_dict keys:", list(mine_seq.state_dict()) == list(torch_seq.state_dict()))
gated = Gated()
print("nested names:", [name for name, _ in gated.named_modules()][1:])
try:
    gated(torch.randn(4))
except AssertionError as err:
    print("AssertionError:", err)

# %% [markdown]
# **The notes' project template.** The notes lay a project out in four files —
# `network.py` (the model), `dataset.py` (a `Dataset` with `__init__`,
# `__getitem__` and `__len__`), `train.py` (loader, loss, optimizer, the loop,
# a checkpoint every `save_interval` iterations) and `evaluate.py` (rebuild the
# model, load the checkpoint, `eval()`, forward) — and fill them with a template:
# `My_Network` (3×3 conv to 64 channels, BatchNorm, ReLU, 2×2 max-pool, a Linear
# from 64·14·14 to 512, Xavier initialization walked over `self.modules()`),
# `My_Dataset` reading "path label" lines from a text file, and training wrapped in
# `DataParallel`. The cell below writes the four files into a temporary folder
# with a dozen 28×28 images and runs `train.py` and `evaluate.py` as separate
# programs, as the template is meant to run. Changes from the notes: the device
# is the CPU (`DataParallel` then just calls the model, chapter 07 §6); the
# template's `super(network, self)` names a class that does not exist (a
# NameError on the first `My_Network()`), so the file says `super().__init__()`;
# and torchvision's `ToTensor` is done by hand (HWC bytes → CHW floats in [0, 1]).

# %%
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

project = {
    "network.py": '''
import torch
from torch import nn


class My_Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.fc = nn.Linear(64 * 14 * 14, 512)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.xavier_normal_(m.weight)
            elif isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):  # x: [n, 3, 28, 28]
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(x.view(x.size(0), -1))
''',
    "dataset.py": '''
import numpy as np
import torch
from PIL import Image


class My_Dataset(torch.utils.data.Dataset):
    def __init__(self, data_txt_path):
        lines = open(data_txt_path).read().splitlines()
        self.data_list = np.random.permutation(lines)  # shuffle the "path label" lines

    def __getitem__(self, index):
        image_path, label = self.data_list[index].split(" ")
        pixels = torch.from_numpy(np.array(Image.open(image_path).convert("RGB")))
        return pixels.permute(2, 0, 1).float() / 255, int(label)  # what ToTensor does

    def __len__(self):
        return len(self.data_list)
''',
    "train.py": '''
import numpy as np
import torch
from torch.nn import DataParallel

from dataset import My_Dataset
from network import My_Network

torch.set_num_threads(1)
torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cpu")
loader = torch.utils.data.DataLoader(My_Dataset("train.txt"), batch_size=4, shuffle=True)
model = DataParallel(My_Network().to(device))
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
model.train()
save_interval, losses, saved = 4, [], []
for epoch in range(3):
    for i, (data_input, label) in enumerate(loader):
        loss = criterion(model(data_input.to(device)), label.to(device).long())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        iters = epoch * len(loader) + i
        if iters % save_interval == 0:
            torch.save(model.state_dict(), "checkpoint.pt")
            saved.append(iters)
print("iterations:", len(losses), "| every loss finite:", bool(torch.tensor(losses).isfinite().all()),
      "| checkpoint written at iterations", saved)
''',
    "evaluate.py": '''
import torch
from torch.nn import DataParallel

from dataset import My_Dataset
from network import My_Network

model = DataParallel(My_Network())
state = torch.load("checkpoint.pt")
print("checkpoint keys carry DataParallel's prefix:", all(k.startswith("module.") for k in state))
model.load_state_dict(state)
model.eval()
images = torch.stack([My_Dataset("train.txt")[i][0] for i in range(4)])
with torch.no_grad():
    print("eval output:", tuple(model(images).shape), "| BatchNorm uses its running statistics:",
          not model.module.bn1.training)
''',
}
folder = Path(tempfile.mkdtemp(prefix="minikernel-ch04-project-"))
for name, text in project.items():
    (folder / name).write_text(text.lstrip())
gen_images = torch.Generator().manual_seed(0)
lines = []
for i in range(12):
    label = i % 4
    pixels = torch.rand(28, 28, 3, generator=gen_images) * 0.5 + 0.15 * label  # four classes by brightness
    Image.fromarray((pixels.clamp(0, 1) * 255).to(torch.uint8).numpy()).save(folder / f"img{i}.png")
    lines.append(f"img{i}.png {label}")
(folder / "train.txt").write_text("\n".join(lines))
print("files:", sorted(p.name for p in folder.iterdir() if p.suffix in (".py", ".txt")))
for script in ("train.py", "evaluate.py"):
    run = subprocess.run([sys.executable, script], cwd=folder, capture_output=True, text=True, timeout=120)
    print(f"$ python {script}\n{run.stdout}{run.stderr}", end="")

# %% [markdown]
# ## Grade chapter 04
#
# Runs the tests of every exercise 4.x against PyTorch: the same module trees built
# in both (chains, branches, a child called twice, a module shared by two parents),
# recording hooks of every kind hung on them, and the order, arguments and
# replacements compared call for call; removal before and during calls; exceptions
# raised inside hooks; state dicts with missing, unexpected, reshaped and non-tensor
# entries.

# %%
mk.grade("4.*")
