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
# # Chapter 09 — From a Python call to a kernel: the dispatcher
#
# Every chapter so far has called operators — `x + y`, `a @ b`, `loss.backward()` —
# and each call went through the same machine before any kernel ran: PyTorch's
# **dispatcher**. Each tensor carries a set of **dispatch keys**, one per layer that
# may want to see an operation on it (autocast, autograd, a Python mode, the backend).
# A call combines its tensors' keys with the thread's state and runs the kernel of the
# highest key; that kernel does its part and **redispatches** to the keys below, until
# a backend kernel computes. Autograd (chapter 03) and autocast (chapter 06) are not
# special code paths: they are keys.
#
# This chapter shows it on PyTorch — the keys of CPU, meta, requires-grad, autocast and
# subclass tensors; which layer a `TorchFunctionMode` and a `TorchDispatchMode` see; a
# `__torch_function__` tensor; a custom operator with `torch.library`, its backward, its
# fake kernel, `opcheck`, `gradcheck`, `torch.compile` and `torch.export`; and a map of
# the source tree with `add` followed from `native_functions.yaml` and
# `derivatives.yaml` to what was generated from them. Then minikernel's own dispatcher,
# which every minikernel tensor operator now goes through (`minikernel/dispatch/`).
#
# You rebuild four pieces (`minikernel/dispatch/rebuild.py`, `minikernel/library.py`):
# computing a call's key set (9.1), the dispatch loop with redispatch and fallthrough
# (9.2), the `Python` key's boxed fallback that hands a call to a mode (9.3), and the
# autograd side of a custom operator (9.4).
#
# **How each exercise goes.** PyTorch first, then your function on the same input,
# then a check printed beside PyTorch's answer. Until you write a function, its cells
# show the box "Exercise 9.k (...) is not written yet" and the rest of the notebook still runs.
#
# **Stuck?** The references are under `solutions/dispatch/` and `solutions/library.py`.
# Set `MINIKERNEL_SOLUTIONS` before starting JupyterLab (`MINIKERNEL_SOLUTIONS=9.2 make
# lab`, or `9.*`, or `all`) and restart the kernel after changing it: it is read once,
# when `minikernel` is imported.
#
# **Grading.** The last cell runs `minikernel.grade("9.*")`; from a terminal,
# `make grade ARGS="'9.*'"` or `python -m minikernel grade 9.2`.

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
import os
import re
import warnings

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import minikernel as mk
from minikernel import dispatch as D
from minikernel import library as mk_library
from minikernel.autograd import gradcheck as mk_gradcheck
from minikernel.course import notebook_display
from minikernel.dispatch import DispatchKey as K
from minikernel.dispatch import agreement
from minikernel.dispatch import rebuild as mine
from widgets import dispatch_trace

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*deprecated")
notebook_display.install()  # an unfinished exercise shows a short box, and Run All goes on
torch.manual_seed(0)
print(torch.__version__, "| minikernel from", mk.__name__)


def todo(err: NotImplementedError) -> None:
    """Show the box of the exercise a stub's error names."""
    notebook_display.show_todo(err)


# %% [markdown]
# ## 1. A tensor's dispatch keys
#
# `torch._C._dispatch_keys(t)` prints the key set a tensor brings to every call,
# lowest priority first. A plain CPU tensor has four: the backend `CPU`, then
# `ADInplaceOrView` (version counters and views), `AutogradCPU` and `AutocastCPU`.
# Note what is *not* there: `requires_grad` changes nothing — the Autograd key is on
# every tensor, and its kernel decides whether to record. A `meta` tensor (shapes and
# dtypes, no memory) has the `Meta` backend and no autocast key; sparse and quantized
# tensors bring their own backends — the extension points "device × layout × dtype"
# of ezyang's talk are simply different keys.

# %%
def keys(t: torch.Tensor) -> str:
    return str(torch._C._dispatch_keys(t))


print("cpu          ", keys(torch.ones(2)))
print("requires_grad", keys(torch.ones(2, requires_grad=True)))
print("meta         ", keys(torch.ones(2, device="meta")))
print("sparse       ", keys(torch.ones(2, 2).to_sparse()))
print("quantized    ", keys(torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8)))
print("same set with and without requires_grad:",
      torch._C._dispatch_keys(torch.ones(2)) == torch._C._dispatch_keys(torch.ones(2, requires_grad=True)))

# %% [markdown]
# Autocast's key is on every CPU tensor, yet `x + y` does not autocast: the thread's
# **exclude set** takes `AutocastCPU` out of every call until `torch.autocast` is
# entered. The thread's **include set** adds keys to every call (`BackendSelect`,
# which picks a backend for factory functions like `torch.ones` that have no tensor
# argument; the `Python` key while a mode is on). A call's keys are
# `(∪ tensors' keys | include) − exclude`; the highest one runs.

# %%
def tls() -> tuple[str, str]:
    return (str(torch._C._dispatch_tls_local_include_set()),
            "AutocastCPU excluded: " + str("AutocastCPU" in str(torch._C._dispatch_tls_local_exclude_set())))


print("outside autocast:", *tls())
with torch.autocast("cpu"):
    print("inside autocast: ", *tls())
    print("a @ b inside autocast:", (torch.ones(2, 2) @ torch.ones(2, 2)).dtype,
          "| a + b:", (torch.ones(2) + torch.ones(2)).dtype)


# %% [markdown]
# A tensor subclass that defines `__torch_dispatch__` adds the `Python` key to its
# own set (and `PythonTLSSnapshot`): every op on it reaches Python. This is how fake
# tensors, `DTensor` and functorch wrappers are built without touching C++.

# %%
class Wrapped(torch.Tensor):
    """A subclass that sees every aten op on it (and lets it run)."""

    @staticmethod
    def __new__(cls, data):
        return torch.Tensor._make_wrapper_subclass(cls, data.shape, dtype=data.dtype)

    def __init__(self, data):
        self.data_ = data

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = [a.data_ if isinstance(a, Wrapped) else a for a in args]
        print("  Wrapped sees", func)
        return func(*unwrap, **(kwargs or {}))


w = Wrapped(torch.ones(2))
print("subclass     ", keys(w))
print("w * 2 =", w * 2)

# %% [markdown]
# ## 2. Which layer sees what: `TorchFunctionMode` above, `TorchDispatchMode` below
#
# Two hooks let Python watch calls. A **`TorchFunctionMode`** (`__torch_function__`)
# runs *before* the dispatcher, in the Python binding — it sees the public API call
# `torch.add`, `Tensor.matmul`, `Tensor.backward`. A **`TorchDispatchMode`**
# (`__torch_dispatch__`) is the `Python` dispatch key, *below* Autograd — it sees the
# `aten` operators after autograd recorded and after composite ops decomposed
# (`matmul` of two matrices becomes `aten.mm`), and it sees the ops of the backward
# pass, which the engine runs through the same dispatcher.

# %%
class FunctionLog(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(getattr(func, "__qualname__", getattr(func, "__name__", str(func))))
        return func(*args, **(kwargs or {}))


class DispatchLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append(str(func))
        return func(*args, **(kwargs or {}))


a = torch.randn(2, 3, requires_grad=True)
b = torch.randn(3, 2)
with FunctionLog() as above, DispatchLog() as below:
    loss = torch.add(a @ b, 1.0).sum()
    loss.backward()
print("TorchFunctionMode sees:", [c for c in above.calls if not c.endswith("__get__")])
print("TorchDispatchMode sees:", below.calls)

# %% [markdown]
# The forward is three calls above and three aten ops below (`mm`, `add`, `sum`);
# then the backward: `ones_like` for the seed gradient, `expand` for `sum`'s backward,
# `t` and `mm` for `mm`'s (only `a` needs a gradient: one `mm`, not two), and
# a `detach` where `AccumulateGrad` stores `a.grad`. The function mode sees
# `Tensor.backward` once: everything after it happens in C++.
#
# ## 3. A `__torch_function__` tensor
#
# `__torch_function__` on a subclass is the older, lighter extension point: the
# subclass intercepts the Python-level call (no dispatch keys involved), which is
# enough for logging, units, or named dimensions. A logging tensor:

# %%
class LoggingTensor(torch.Tensor):
    log: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.log.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


x = torch.arange(4.0).as_subclass(LoggingTensor)
y = (x * 2).sum()
print("logged:", [n for n in LoggingTensor.log if not n.startswith("__")])
print("result type:", type(y).__name__, "| keys:", keys(x))

# %% [markdown]
# ## 4. A custom operator with `torch.library`
#
# `torch.library.custom_op` declares an operator once (its **schema** is inferred from
# the type hints) and registers its kernel (with no `device_types`, at
# `CompositeExplicitAutograd`: one kernel for every backend); `register_fake` gives the **Meta**
# kernel that computes only shapes and dtypes (what `torch.compile` and `torch.export`
# trace with); `register_autograd` gives the **Autograd** kernel's backward. The
# kernel below leaves PyTorch (numpy), so without these registrations neither
# autograd nor the compiler could see through it.

# %%
@torch.library.custom_op("ch09::numpy_sin", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.detach().cpu().numpy()))


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)


def sin_setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def sin_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos()


numpy_sin.register_autograd(sin_backward, setup_context=sin_setup_context)

print("schema:", torch.ops.ch09.numpy_sin.default._schema)
print("kernels at:", [k for k in ("CompositeExplicitAutograd", "CPU", "Meta", "Autograd", "AutogradCPU")
                      if torch._C._dispatch_has_kernel_for_dispatch_key("ch09::numpy_sin", k)])
x = torch.randn(5, dtype=torch.float64, requires_grad=True)
print("gradcheck:", torch.autograd.gradcheck(numpy_sin, (x,)))
report = torch.library.opcheck(numpy_sin, (torch.randn(3, requires_grad=True),))
print("opcheck:", report)

# %% [markdown]
# `opcheck` runs the op through the schema check, the fake kernel against the real
# one, the autograd registration and the `aot_dispatch` path the compiler uses. Now the
# compiler itself: a backend that only records the graph `torch.compile` hands it
# shows the custom op as one node — the compiler traced through it with the fake
# kernel, without calling numpy. `torch.export` gives the same op in its graph.

# %%
graphs = []


def record_graph(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


def f(t):
    return numpy_sin(t) * 2 + 1


compiled = torch.compile(f, backend=record_graph, fullgraph=True)
t = torch.randn(4)
print("compiled == eager:", torch.allclose(compiled(t), f(t)))
print("ops in the compiled graph:", [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"])


class Model(torch.nn.Module):
    def forward(self, t):
        return f(t)


exported = torch.export.export(Model(), (t,))
print("ops in the exported graph:", [str(n.target) for n in exported.graph.nodes if n.op == "call_function"])

# %% [markdown]
# ## 5. Where it lives: the source tree, and `add` from YAML to kernel
#
# PyTorch's repository (github.com/pytorch/pytorch), the parts this course touches:
#
# | directory | what | in this course |
# |---|---|---|
# | `torch/` | the Python package: `nn`, `optim`, `autograd`, `amp`, `library`, `_subclasses` (fake tensors) | chapters 03–10 |
# | `torch/csrc/` | the C++ behind `torch._C`: Python bindings, `autograd/` (engine, `Node`s, `VariableType`) | chapters 03, 04 |
# | `aten/src/ATen/native/` | the operators' kernels (`BinaryOps.cpp`, `cpu/`, `cuda/`) and `native_functions.yaml` | chapter 02 |
# | `c10/` | the core: `TensorImpl`, `Storage`, `DispatchKey.h`, `DispatchKeySet.h`, the dispatcher | chapters 01, 09 |
# | `tools/autograd/` | `derivatives.yaml` and the code generators (`gen_variable_type.py`, ...) | chapters 03, 09 |
# | `torchgen/` | the generator that turns `native_functions.yaml` into C++ | chapter 09 |
#
# Every operator is declared once in `aten/src/ATen/native/native_functions.yaml`.
# `add`'s entry, as in the installed torch 2.13 (quoted whole):
#
# ```yaml
# - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
#   device_check: NoCheck   # TensorIterator
#   structured_delegate: add.out
#   variants: function, method
#   dispatch:
#     SparseCPU, SparseCUDA, SparseMPS, SparseMeta: add_sparse
#     SparseCsrCPU, SparseCsrCUDA, SparseCsrMeta: add_sparse_csr
#     MkldnnCPU: mkldnn_add
#     ZeroTensor: add_zerotensor
#     NestedTensorCPU, NestedTensorHPU, NestedTensorCUDA: NestedTensor_add_Tensor
#   tags: [core, pointwise]
# ```
#
# and its backward in `tools/autograd/derivatives.yaml`:
#
# ```yaml
# - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
#   self: handle_r_to_c(self.scalar_type(), grad)
#   other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))
#   result: self_t + maybe_multiply(other_t, alpha)
# ```
#
# Both files ship in the wheel too, inside the `torchgen` package that torch installs
# beside itself (`torchgen/packaged/ATen/native/native_functions.yaml` and
# `torchgen/packaged/autograd/derivatives.yaml`: the quotes above are from there), and so
# does everything generated from them. The schema, and the kernels registered per key
# (the `dispatch:` section's keys among them):

# %%
print(torch.ops.aten.add.Tensor._schema)
dump = torch._C._dispatch_dump("aten::add.Tensor")
registered = re.findall(r"^(\w+(?:\[alias\])?): registered at (\S+?):\d+", dump, re.M)
for key, where in registered:
    if key in ("CPU", "Autograd[alias]", "SparseCPU", "MkldnnCPU", "ZeroTensor", "NestedTensorCPU", "Meta"):
        print(f"  {key:16} {where.split('pytorch/pytorch/')[-1].split('site-packages/')[-1]}")
print("registered at AutogradCPU itself:", any(key == "AutogradCPU" for key, _ in registered))
table = torch._C._dispatch_dump_table("aten::add.Tensor")
print("the computed table's AutogradCPU entry:",
      *[re.sub(r":\d+", "", line.split("pytorch/pytorch/")[-1]) for line in table.splitlines()
        if line.startswith("AutogradCPU:")])

# %% [markdown]
# `CPU`'s kernel is in the generated `RegisterCPU_*.cpp`. The autograd kernel, generated
# in `VariableType_*.cpp` from `derivatives.yaml`, is registered once, at the *alias*
# key `Autograd` (listed as `Autograd[alias]`), not at `AutogradCPU`: when the
# dispatcher computes an operator's table it copies an alias key's kernel into every
# key the alias stands for (`AutogradCPU`, `AutogradCUDA`, …), which is why the
# computed table's `AutogradCPU` entry names the same file. The autograd kernel records
# an `AddBackward0` node — whose saved `alpha` and name come from the YAML above —
# and redispatches. The wheel ships the generated C++ headers too:

# %%
include = os.path.join(os.path.dirname(torch.__file__), "include")
ops_dir = os.path.join(include, "ATen", "ops")
print("generated per-op headers:", len(os.listdir(ops_dir)), "files; for add:",
      sorted(n for n in os.listdir(ops_dir) if re.fullmatch(r"add(_\w+)?\.h", n) and "native" not in n)[:6])
with open(os.path.join(include, "torch", "csrc", "autograd", "generated", "Functions.h")) as fh:
    text = fh.read()
start = text.index("struct TORCH_API AddBackward0")
struct = text[start:text.index("};", start)]
print(struct.splitlines()[0], "...", *[line.strip() for line in struct.splitlines() if "alpha;" in line or "name()" in line],
      sep="\n  ")
print("grad_fn of a + b:", (torch.ones(1, requires_grad=True) + 1).grad_fn.name())
print("the Python binding torch.add is generated too:", torch.add is torch._C._VariableFunctions.add)

# %% [markdown]
# So `torch.add(a, b)` goes: the generated Python binding (`THPVariable_add`, which
# parses the arguments with `PythonArgParser` and releases the GIL) → `at::add` (the
# generated `ATen/ops/add.h`) → the dispatcher → the highest key's kernel
# (`AutogradCPU`: record `AddBackward0`) → redispatch → `CPU` (the structured kernel
# `add.out` that `structured_delegate` names, on `TensorIterator`, chapter 02's
# recipe).
#
# ## 6. minikernel's dispatcher
#
# `minikernel/dispatch/` is the same machine in a few hundred lines of Python: `keys.py`
# (`DispatchKey` in PyTorch's order, `DispatchKeySet` as bits), `schema.py`, `registry.py`
# (operators declared once, kernels per key, fallbacks, fallthrough, and each operator's
# dispatch table computed from them, as PyTorch computes the table of section 5),
# `extractor.py` (a call's key set from its arguments), `dispatcher.py` (the table lookup,
# redispatch, a trace) and `modes.py` (`DispatchMode`, the `Python` key's fallback).
# Every minikernel tensor operator is an `aten::` operator in it (declared once
# in `minikernel/aten/native_functions.py`, registered by `aten/registration.py`; more
# below): `Autograd` records the graph when an
# input requires grad and otherwise redispatches; `ADInplaceOrView` bumps the version
# of an in-place op's target; `CPU`/`CUDA` run the kernels of `minikernel/aten/`
# (`binary_ops.add`, ...) and your chapter 02 kernels. A minikernel tensor's keys, beside torch's:

# %%
print("minikernel:", mk.ones(2)._dispatch_keys().torch_names("cpu"))
print("torch:     ", keys(torch.ones(2)))
print("add's kernels:", D.registry.get("add").table())
print("add_'s kernels:", D.registry.get("add_").table())

# %% [markdown]
# Those tables are made from one declaration per operator, as PyTorch's are from the two
# YAML entries of section 5: `minikernel/aten/native_functions.py` gives `add` its schema
# (and the in-place variant `add_`, whose `Tensor(a!) self` says it writes `self`: hence
# the `ADInplaceOrView` kernel), the backend kernel (the YAML's `dispatch:`: `binary_ops.add`,
# in `minikernel/aten/binary_ops.py` as torch's is in `aten/src/ATen/native/BinaryOps.cpp`,
# after the shared steps of `aten/tensor_iterator.py`, `TensorIterator`'s job), what the
# `Autograd` key records (`derivatives.yaml`'s part: here the `Add` Function, whose
# backward holds the formula), the Tensor methods it provides (generated from the schema,
# as PyTorch generates its Python bindings) and the inputs the conformance tests try. A
# formula can also sit in the entry itself, as in `derivatives.yaml`: `sqrt` is one entry
# and one kernel, and its `SqrtBackward0` node is made from the formula.

# %%
from minikernel.aten import native_function  # noqa: E402

print(native_function("add").describe())
print(native_function("sqrt").describe())
print("Tensor.add, generated:", mk.Tensor.add.__doc__)
print("Tensor.sum's parameters, from its schema:", mk.Tensor.sum.__signature__)

# %% [markdown]
# One call, traced (the CPU kernel is your chapter 02 `zip`: until it is written the
# trace still shows the way down, and the box says which exercise it waits for):

# %%
p, q, r = mk.ones(2, 2), mk.ones(2, 2), mk.ones(2, 2, requires_grad=True)  # made before the trace
for text, call in [("p + q", lambda: p + q), ("p.mul_(q)", lambda: p.mul_(q)),
                   ("r + q, r requires grad", lambda: r + q)]:
    with D.trace() as steps:
        try:
            call()
        except NotImplementedError as err:
            steps.append(f"    (stops here: exercise {notebook_display.stub_id_in(err)} is not written yet)")
    print(text)
    for step in steps:
        print("  ", step)

# %% [markdown]
# With `requires_grad`, minikernel's Autograd kernel records the graph node and its
# Function's forward calls the op again with the Autograd keys excluded, so it reaches
# the CPU backend — as PyTorch's autograd kernel redispatches. The backend runs your
# chapter 02 kernel, or, while that one is unfinished, the numpy reference backend in
# its place (`minikernel/kernels/reference.py`): one compute path per op. The dispatch
# trace shows both sides for a few calls:

# %% tags=["nbval-ignore-output"]
dispatch_trace("a.mul_(b)")

# %% [markdown]
# ## Exercise 9.1 — compute_keys
#
# A call's key set: the union of the key sets of its **tensor arguments** (the schema
# says which: `op.schema.tensor_arguments(args, kwargs)`; each tensor's own set is
# `t._dispatch_keys()`), `{BackendSelect, CPU}` when there is none (a factory call),
# then `| state.local_include()` and `- state.local_exclude()` — in that order: a key
# both included and excluded is out. The check: the highest key of `a + b`, with
# autocast off and on, beside torch's.

# %%
add = D.registry.get("add")
try:
    for on in (False, True):
        with torch.autocast("cpu", enabled=on), D.include_keys(K.Autocast) if on else D.exclude_keys():
            ours = mine.compute_keys(add, (mk.ones(2), mk.ones(2)), {})
            torch_set = torch._C._dispatch_keys(torch.ones(2))
            if "AutocastCPU" in str(torch._C._dispatch_tls_local_exclude_set()):
                torch_set = torch_set.remove(torch._C.DispatchKey.AutocastCPU)
            print(f"autocast {'on ' if on else 'off'}: yours {ours}, highest {ours.highest().name} | torch's highest",
                  str(torch_set.highestPriorityTypeId()).split(".")[-1],
                  "| == the library's:", ours == add.key_extractor.get_dispatch_key_set((mk.ones(2), mk.ones(2)), {}))
except NotImplementedError as err:
    todo(err)

# %% [markdown]
# ## Exercise 9.2 — run_dispatch
#
# The loop: take the highest key; look up its kernel (`registry.lookup`: the op's own
# kernel, else the key's fallback); skip a `FALLTHROUGH`; refuse a key with neither, as
# PyTorch does ("Could not run 'op' with arguments from the 'CPU' backend"); otherwise
# call the kernel with the keys **below** its own, so a wrapping kernel can
# redispatch. The check: an operator with three layers, each redispatching through your
# loop.

# %%
op = D.registry.define("ch09::layered(Tensor x) -> Tensor")
visits = []


def layer(name):
    def kernel(keys, x):
        visits.append(name)
        return mine.run_dispatch(op, keys, (x,), {})
    return kernel


D.registry.impl(op, K.Autocast, layer("Autocast"), with_keys=True)
D.registry.impl(op, K.Autograd, layer("Autograd"), with_keys=True)
D.registry.impl_fallthrough(op, K.ADInplaceOrView)
D.registry.impl(op, K.CPU, lambda x: mk.tensor(np.cos(x.to_numpy())))
try:
    out = mine.run_dispatch(op, D.keyset(K.CPU, K.ADInplaceOrView, K.Autograd, K.Autocast), (mk.zeros(2),), {})
    print("visited:", visits, "→ CPU; result", out.tolist())
    lib = torch.library.Library("ch09", "FRAGMENT")
    lib.define("nokernel(Tensor x) -> Tensor")
    nokernel = D.registry.define("ch09::nokernel(Tensor x) -> Tensor")
    for name, call in [("torch", lambda: torch.ops.ch09.nokernel(torch.ones(1))),
                       ("yours", lambda: mine.run_dispatch(nokernel, D.keyset(K.CPU, K.Autograd), (mk.ones(1),), {}))]:
        try:
            call()
        except NotImplementedError as err:
            if notebook_display.stub_id_in(err):
                raise
            print(f"{name}: {str(err).splitlines()[0][:75]}")
except NotImplementedError as err:
    todo(err)

# %% [markdown]
# ## Exercise 9.3 — mode_fallback
#
# The `Python` key has one **boxed** kernel for every operator (it gets the op and its
# arguments as a tuple, not typed arguments): pop the innermost mode, exclude the keys
# above `Python` (they already ran) and keep `Python` only if more modes remain, call
# `mode.__dispatch__(op, args, kwargs)`, and restore everything afterwards — also when
# the mode raises. The check: two nested logging modes, yours beside torch's.

# %%
class Log(D.DispatchMode):
    def __init__(self, name, log):
        self.name, self.log = name, log

    def __dispatch__(self, op, args, kwargs):
        self.log.append(f"{self.name}: {op.name}")
        return op(*args, **kwargs)


class TorchLog(TorchDispatchMode):
    def __init__(self, name, log):
        super().__init__()
        self.name, self.log = name, log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append(f"{self.name}: {func}")
        return func(*args, **(kwargs or {}))


ch09_add = D.registry.define("ch09::add(Tensor self, Tensor other) -> Tensor")
D.registry.impl(ch09_add, K.CPU, lambda s, o: mk.tensor(s.to_numpy() + o.to_numpy()))
theirs, ours = [], []
one = torch.ones(1)
with TorchLog("outer", theirs), TorchLog("inner", theirs):
    torch.add(one, one)
print("torch:", theirs)
saved = D.registry._FALLBACKS[K.Python]
D.registry.fallback(K.Python, mine.mode_fallback)  # yours, for this cell: every operator's table follows
try:
    mk_one = mk.ones(1)  # made outside the modes, like torch's `one`
    with Log("outer", ours), Log("inner", ours):
        result = ch09_add(mk_one, mk_one)
    print("yours:", ours, "→", result.tolist())
except NotImplementedError as err:
    todo(err)
finally:
    D.registry.fallback(K.Python, saved)  # the library's again


# %% [markdown]
# ## 7. Your loop beside the library's table
#
# minikernel's dispatcher does not run your loop, nor one like it. Like PyTorch's
# `OperatorEntry`, it *computes* each operator's dispatch table whenever a kernel or a
# fallback is registered (`computeDispatchTableEntry`: the op's own kernel at that key,
# else the key's backend fallback, else nothing), and keeps the set of keys whose entry
# is fallthrough. A call ORs its tensors' key sets, applies the thread-local sets (the
# op's `key_extractor`), masks out the fallthrough keys and indexes the table with the
# highest key left (`Operator.kernel_for`): nothing is searched at call time. Your 9.1–9.3
# are the same semantics, interpreted step by step. `add`'s computed table, beside
# torch's for the same keys (`torch._C._dispatch_dump_table`, as in section 5: torch's
# `AutogradCPU` entry comes from the alias key `Autograd`, its `CUDA` entry from a default
# kernel for every backend, and its `Meta` kernel from `torch/_meta_registrations.py`;
# minikernel has no `Meta` kernel for `add`), then what the table and your loop pick for
# the keys of `a + b`:

# %%
torch_table = dict(line.split(": ", 1) for line in torch._C._dispatch_dump_table("aten::add.Tensor").splitlines())
torch_key = {"Autograd": "AutogradCPU", "Autocast": "AutocastCPU"}
our_table = add.dump_table()
for key in (k.name for k in sorted(K)):
    theirs = re.sub(r"registered at \S+ ", "", torch_table.get(torch_key.get(key, key), "(missing)"))
    print(f"{key:16} {our_table.get(key, '(missing)'):54} torch's {torch_key.get(key, key)}: {theirs}")
ab_keys = add.key_extractor.get_dispatch_key_set((mk.ones(2), mk.ones(2)), {})
print("\nfallthrough for add, masked out of every call:",
      D.DispatchKeySet(K) - D.DispatchKeySet(bits=add.key_extractor.non_fallthrough_keys))
print("a + b's keys:", ab_keys)
print("the table runs:", agreement.table_outcome(add, ab_keys))
try:
    print("your loop runs:", agreement.loop_outcome(mine.run_dispatch, add, ab_keys))
except NotImplementedError as err:
    todo(err)

# %% [markdown]
# The check: your loop against the tables, on every operator registered so far and every
# one of the 2⁸ key sets — the empty set, and sets where every key falls through,
# included. It runs your loop on a stand-in of each operator whose entries record which
# one was reached and which keys it was given, so no kernel computes anything.
# (`tests/ch09/test_table_agrees.py` does the same for 9.1's key sets and 9.3's modes.)

# %%
try:
    found = agreement.disagreements(mine.run_dispatch)
    print(f"{len(D.registry.operators())} operators × {len(agreement.every_key_set())} key sets:",
          "your loop and the tables agree" if not found else f"{len(found)} disagreements")
    for name, keys, table_says, loop_says in found[:3]:
        print(f"  {name} with {keys}\n    the table: {table_says}\n    your loop: {loop_says}")
except NotImplementedError as err:
    todo(err)

# %% [markdown]
# ## Exercise 9.4 — custom_op_forward, custom_op_backward
#
# *Needs chapter 03's engine and gradcheck* (exercises 3.1, 3.3, 3.7 and 3.9, and 1.6's
# `is_contiguous`): its tests run backward passes and `gradcheck` through your op. Still
# working on those? Switch on their references (`MINIKERNEL_SOLUTIONS=1.6,3.*`, then
# restart the kernel) and go on.
#
# `minikernel.library` mirrors `torch.library`: `custom_op` declares the operator and
# registers its backend kernel, `register_fake` its Meta kernel, and
# `register_autograd` puts a kernel at the `Autograd` key that, when an input requires
# grad, runs `CustomOpFunction.apply(op, keys, backward, setup_context, *args)`. Yours
# are its two halves: forward redispatches to the keys below Autograd and calls
# `setup_context(ctx, args, output)`; backward calls the user's `backward(ctx, grad)`
# and returns one entry per `apply` argument (`None` for the non-tensors). The check:
# the same numpy `sin` as in §4, gradients and `gradcheck` beside torch's.

# %%
@mk_library.custom_op("ch09::numpy_sin", mutates_args=())
def mk_numpy_sin(x: mk.Tensor) -> mk.Tensor:
    return mk.tensor(np.sin(x.to_numpy()))


def mk_sin_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def mk_sin_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * mk.tensor(np.cos(x.to_numpy()))


mk_numpy_sin.register_autograd(mk_sin_backward, setup_context=mk_sin_setup)
print("schema:", mk_numpy_sin.op.schema, "| kernels:", mk_numpy_sin.op.table())
values = np.array([0.5, -1.0, 2.0])
t = torch.tensor(values, requires_grad=True)
numpy_sin(t).sum().backward()
try:
    m = mk.tensor(values, requires_grad=True)
    mk_numpy_sin(m).sum().backward()
    print("torch's gradient:", t.grad.numpy(), "\nyours:           ", m.grad.to_numpy())
    print("gradcheck — torch:", torch.autograd.gradcheck(numpy_sin, (t.detach().requires_grad_(),)),
          "| yours:", mk_gradcheck(mk_numpy_sin, (mk.tensor(values, requires_grad=True),)))
except NotImplementedError as err:
    todo(err)

# %% [markdown]
# ## Grade chapter 09
#
# Runs the tests of every exercise 9.x: your key sets against the library's and
# torch's (with autocast on and off, include and exclude overlapping, on every
# operator), your loop against the library's tables (every operator and key set, and
# generated registrations: kernels, fallthroughs, fallbacks, missing kernels, torch's
# error), your mode fallback against the library's and nested `TorchDispatchMode`s, and
# custom-op gradients against `torch.library` and `gradcheck`.

# %%
mk.grade("9.*")
