"""The same small modules written for torch and for minikernel, and hooks that record.

``classes(TORCH)`` and ``classes(MK)`` return modules with the same names and
structure. They are built only with ``register_parameter``, ``register_buffer``
and ``add_module`` (complete code), never through ``Module.__setattr__``
(exercise 4.1), so a test of a later exercise reaches its own stub first.
Models are described by a small spec (nested tuples) that ``build`` turns into a
module tree of either framework; weights come from one torch generator, so both
trees hold the same numbers.

Hooks are described by ``HookSpec``s; ``make_hook`` turns one into a hook of
either framework that appends an event to a list (what it was called with,
summarised as numpy arrays) and may return a replacement.
"""
from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import torch
from hypothesis import strategies as st

import minikernel.nn as mknn
import minikernel.nn.hooks as mk_hooks
from minikernel.autograd import functions as F
from minikernel.tensor import Tensor as MkTensor

TORCH = SimpleNamespace(
    name="torch", nn=torch.nn, Tensor=torch.Tensor, hooks=torch.nn.modules.module,
    mul=torch.mul, add=torch.add, tanh=torch.tanh, relu=torch.relu, sum=torch.sum,
    linear=lambda x, w, b: torch.add(torch.matmul(x, w.t()), b),
    param=lambda t: torch.nn.Parameter(t.detach().clone()),
    tensor=lambda t, requires_grad=False: t.detach().clone().requires_grad_(requires_grad),
    numpy=lambda t: t.detach().numpy().copy())
MK = SimpleNamespace(
    name="minikernel", nn=mknn, Tensor=MkTensor, hooks=mk_hooks,
    mul=F.mul, add=F.add, tanh=F.tanh, relu=F.relu, sum=F.sum,
    linear=lambda x, w, b: F.add(F.matmul(x, F.transpose(w, 0, 1)), b),
    param=lambda t: mknn.Parameter(MkTensor.from_torch(t.detach().clone())),
    tensor=lambda t, requires_grad=False: MkTensor.from_torch(t.detach().clone()).requires_grad_(requires_grad),
    numpy=lambda t: t.to_numpy().copy())
FRAMEWORKS = (MK, TORCH)  # minikernel first: in student mode its stub is reached first


def classes(fw: SimpleNamespace) -> SimpleNamespace:
    """Module classes for framework ``fw``; the same class names on both sides."""
    nn = fw.nn

    class Double(nn.Module):
        def forward(self, x):
            return fw.mul(x, 2.0)

    class Tanh(nn.Module):
        def forward(self, x):
            return fw.tanh(x)

    class Shift(nn.Module):
        """Takes a keyword argument: what with_kwargs hooks see and may replace."""

        def forward(self, x, *, by=1.0):
            return fw.add(x, by)

    class Dense(nn.Module):
        def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
            super().__init__()
            self.register_parameter("weight", fw.param(weight))
            self.register_parameter("bias", fw.param(bias))

        def forward(self, x):
            return fw.linear(x, self.weight, self.bias)

    class Chain(nn.Module):
        """Children called one after another (like Sequential, written here for both sides)."""

        def __init__(self, *children):
            super().__init__()
            for i, child in enumerate(children):
                self.add_module(str(i), child)

        def forward(self, x):
            for child in self._modules.values():
                x = child(x)
            return x

    class Branch(nn.Module):
        """Two children on the same input, summed: a fan-out in the graph."""

        def __init__(self, left, right):
            super().__init__()
            self.add_module("left", left)
            self.add_module("right", right)

        def forward(self, x):
            return fw.add(self.left(x), self.right(x))

    class Twice(nn.Module):
        """One child called twice in one forward."""

        def __init__(self, inner):
            super().__init__()
            self.add_module("inner", inner)

        def forward(self, x):
            return self.inner(self.inner(x))

    class Pair(nn.Module):
        """Two inputs (the second may be a non-tensor) and a tuple of two outputs."""

        def forward(self, x, y, scale=1.0):
            return fw.mul(fw.mul(x, y), scale), fw.tanh(x)

    return SimpleNamespace(Double=Double, Tanh=Tanh, Shift=Shift, Dense=Dense, Chain=Chain, Branch=Branch,
                           Twice=Twice, Pair=Pair)


CLASSES = {fw.name: classes(fw) for fw in FRAMEWORKS}

# --------------------------------------------------------------------- models
WIDTH = 3  # every layer maps WIDTH features to WIDTH features


def build(spec: Any, fw: SimpleNamespace, weights: dict[int, tuple], shared: dict | None = None):
    """Turn a spec into a module tree of ``fw``.

    Specs: ``"double" | "tanh" | "shift" | ("dense", k) | ("chain", [specs]) |
    ("branch", a, b) | ("twice", spec) | ("shared", k, spec)`` — the last builds
    ``spec`` once and reuses that very module wherever key ``k`` appears again.
    ``weights[k]`` are the torch tensors of dense layer ``k``.
    """
    c = CLASSES[fw.name]
    shared = {} if shared is None else shared
    if spec == "double":
        return c.Double()
    if spec == "tanh":
        return c.Tanh()
    if spec == "shift":
        return c.Shift()
    kind = spec[0]
    if kind == "dense":
        return c.Dense(*weights[spec[1]])
    if kind == "chain":
        return c.Chain(*[build(s, fw, weights, shared) for s in spec[1]])
    if kind == "branch":
        return c.Branch(build(spec[1], fw, weights, shared), build(spec[2], fw, weights, shared))
    if kind == "twice":
        return c.Twice(build(spec[1], fw, weights, shared))
    if kind == "shared":
        if spec[1] not in shared:
            shared[spec[1]] = build(spec[2], fw, weights, shared)
        return shared[spec[1]]
    raise ValueError(f"unknown spec {spec!r}")


def dense_keys(spec: Any) -> set[int]:
    if isinstance(spec, str):
        return set()
    if spec[0] == "dense":
        return {spec[1]}
    return set().union(*(dense_keys(s) for s in (spec[1] if spec[0] == "chain" else spec[1:])
                         if not isinstance(s, int)))


def make_weights(spec: Any, seed: int) -> dict[int, tuple]:
    gen = torch.Generator().manual_seed(seed)
    return {k: (torch.randn(WIDTH, WIDTH, generator=gen, dtype=torch.float64),
                torch.randn(WIDTH, generator=gen, dtype=torch.float64)) for k in sorted(dense_keys(spec))}


def leaves() -> st.SearchStrategy:
    return st.one_of(st.sampled_from(["double", "tanh", "shift"]), st.integers(0, 3).map(lambda k: ("dense", k)))


def specs(max_leaves: int = 6) -> st.SearchStrategy:
    """Module trees: chains, branches, a child called twice, one module used in two places."""
    def extend(children):
        return st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda cs: ("chain", cs)),
            st.tuples(st.just("branch"), children, children),
            children.map(lambda c: ("twice", c)),
            st.tuples(st.just("shared"), st.integers(0, 1), children))
    return st.recursive(leaves(), extend, max_leaves=max_leaves)


def names(model) -> dict[int, str]:
    """id(module) -> its first dotted name ("" for the root); a shared module keeps its first name."""
    out: dict[int, str] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        out.setdefault(id(module), name or "<root>")
    return out


# ---------------------------------------------------------------------- hooks
@dataclass(frozen=True)
class HookSpec:
    """One hook: where (a module index in named_modules order, or None: global), what kind,
    how it is registered and what it returns."""

    kind: str            # "pre" | "fwd" | "bwpre" | "bw"
    target: int | None   # index into the list of modules; None = global hook
    action: str = "none"  # "none" | "scale" | "single" (pre: return a non-tuple) | "raise"
    with_kwargs: bool = False
    prepend: bool = False
    always_call: bool = False
    tag: int = 0


def summary(value: Any) -> Any:
    """What a hook saw, comparable across frameworks: tensors as numpy arrays (same dtype)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.detach().numpy().copy(), value.requires_grad)
    if isinstance(value, MkTensor):
        return ("tensor", value.to_numpy().copy(), value.requires_grad)
    if isinstance(value, (tuple, list)):
        return tuple(summary(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, summary(v)) for k, v in value.items()))
    return value


def same(a: Any, b: Any, path: str = "") -> None:
    """Assert two summaries are equal: arrays of the same dtype, to 1e-9 (float64; 1e-5 otherwise)
    relative to their largest entry (gradients are sums in different orders on the two sides; a
    small entry made by cancellation keeps an error of the size of the large ones)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), f"{path}: {a!r} vs {b!r}"
        assert a.shape == b.shape, f"{path}: shape {a.shape} vs {b.shape}"
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} vs {b.dtype}"
        finite = np.abs(b[np.isfinite(b)])
        scale = float(finite.max()) if finite.size else 0.0
        tol = 1e-9 if a.dtype == np.float64 else 1e-5
        assert np.allclose(a, b, rtol=tol, atol=tol * scale + 1e-12, equal_nan=True), f"{path}: {a} vs {b}"
    elif isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        assert len(a) == len(b), f"{path}: {len(a)} vs {len(b)} entries:\n{a}\nvs\n{b}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


class HookError(Exception):
    """What a hook with action "raise" raises (the same class on both sides)."""


def make_hook(spec: HookSpec, fw: SimpleNamespace, events: list, module_names: dict[int, str]) -> Callable:
    """A hook of ``fw`` that records ``(kind, tag, module name, what it saw)`` and acts as ``spec`` says."""
    def who(module):
        return module_names.get(id(module), type(module).__name__)

    def scaled(value, factor):
        return value if not isinstance(value, fw.Tensor) else fw.mul(value, factor)

    def act(result):
        if spec.action == "raise":
            raise HookError(f"hook {spec.tag} refuses")
        return result if spec.action != "none" else None

    if spec.kind == "pre" and spec.with_kwargs:
        def hook(module, args, kwargs):
            events.append(("pre_kw", spec.tag, who(module), summary(args), summary(kwargs)))
            return act((tuple(scaled(a, 0.5) for a in args), dict(kwargs)))
    elif spec.kind == "pre":
        def hook(module, args):
            events.append(("pre", spec.tag, who(module), summary(args)))
            if spec.action == "single":
                return scaled(args[0], 0.5) if len(args) == 1 else None
            return act(tuple(scaled(a, 0.5) for a in args))
    elif spec.kind == "fwd" and spec.with_kwargs:
        def hook(module, args, kwargs, output):
            events.append(("fwd_kw", spec.tag, who(module), summary(args), summary(kwargs), summary(output)))
            return act(fw.add(output, 1.0) if isinstance(output, fw.Tensor) else output)
    elif spec.kind == "fwd":
        def hook(module, args, output):
            events.append(("fwd", spec.tag, who(module), summary(args), summary(output)))
            return act(fw.add(output, 1.0) if isinstance(output, fw.Tensor) else output)
    elif spec.kind == "bwpre":
        def hook(module, grad_output):
            events.append(("bwpre", spec.tag, who(module), summary(grad_output)))
            return act(tuple(None if g is None else fw.mul(g, 3.0) for g in grad_output))
    elif spec.kind == "bw":
        def hook(module, grad_input, grad_output):
            events.append(("bw", spec.tag, who(module), summary(grad_input), summary(grad_output)))
            return act(tuple(None if g is None else fw.mul(g, 2.0) for g in grad_input))
    else:
        raise ValueError(spec.kind)
    return hook


def register(spec: HookSpec, fw: SimpleNamespace, modules: list, events: list, module_names: dict[int, str]):
    """Register ``spec``'s hook on ``modules[spec.target]`` (or globally); return the handle."""
    hook = make_hook(spec, fw, events, module_names)
    if spec.target is None:
        if spec.kind == "pre":
            return fw.hooks.register_module_forward_pre_hook(hook)
        if spec.kind == "fwd":
            return fw.hooks.register_module_forward_hook(hook, with_kwargs=spec.with_kwargs,
                                                         always_call=spec.always_call)
        if spec.kind == "bwpre":
            return fw.hooks.register_module_full_backward_pre_hook(hook)
        return fw.hooks.register_module_full_backward_hook(hook)
    module = modules[spec.target % len(modules)]
    if spec.kind == "pre":
        return module.register_forward_pre_hook(hook, prepend=spec.prepend, with_kwargs=spec.with_kwargs)
    if spec.kind == "fwd":
        return module.register_forward_hook(hook, prepend=spec.prepend, with_kwargs=spec.with_kwargs,
                                            always_call=spec.always_call)
    if spec.kind == "bwpre":
        return module.register_full_backward_pre_hook(hook, prepend=spec.prepend)
    return module.register_full_backward_hook(hook, prepend=spec.prepend)


def hook_specs(kinds: tuple[str, ...], actions: tuple[str, ...] = ("none", "scale"),
               max_size: int = 6) -> st.SearchStrategy:
    one = st.builds(HookSpec, kind=st.sampled_from(kinds), target=st.one_of(st.none(), st.integers(0, 20)),
                    action=st.sampled_from(actions), with_kwargs=st.booleans(), prepend=st.booleans(),
                    always_call=st.booleans())
    return st.lists(one, max_size=max_size).map(
        lambda hs: [HookSpec(**{**h.__dict__, "tag": i,
                                "with_kwargs": h.with_kwargs and h.kind in ("pre", "fwd") and
                                (h.kind == "fwd" or h.target is not None)})
                    for i, h in enumerate(hs)])


@contextlib.contextmanager
def no_global_hooks():
    """Leave no global hook behind, on either side, whatever happens inside.

    The minikernel side is cleared directly, not through ``handle.remove()``:
    cleaning up must not depend on exercise 4.4.
    """
    try:
        yield
    finally:
        for fw in FRAMEWORKS:
            for name in ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_with_kwargs",
                         "_global_forward_hooks_always_called", "_global_backward_pre_hooks",
                         "_global_backward_hooks"):
                getattr(fw.hooks, name).clear()
            fw.hooks._global_is_full_backward_hook = None


def outcome(fn: Callable, *args, **kwargs) -> tuple[str, Any]:
    """("ok", result) or ("raised", (type name, message)); a stub's NotImplementedError propagates."""
    try:
        return "ok", fn(*args, **kwargs)
    except NotImplementedError as err:
        if "exercise" in str(err):
            raise
        return "raised", (type(err).__name__, str(err))
    except Exception as err:  # noqa: BLE001 - the error is the result being compared
        return "raised", (type(err).__name__, str(err))


def plain(message: str) -> str:
    """A minikernel message in torch's words, for comparing error texts."""
    return message.replace("minikernel.nn.", "torch.nn.").replace("minikernel.", "torch.").replace(
        "minikernel ", "torch ")


def ordered(d: dict) -> OrderedDict:
    return OrderedDict(d)
