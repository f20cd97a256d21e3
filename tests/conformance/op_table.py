"""The operator table: every public minikernel operator and Tensor method with a torch
counterpart, listed once with the inputs it is tried on (``test_op_table.py`` runs them all).

The declared operators' entries come from their declarations
(``minikernel/aten/native_functions.py``: each ``Samples`` becomes an entry here, and its
in-place variant another); the rest are written by hand below (``HAND_WRITTEN``).

An entry is ``Op(name, fn, inputs, grad)``: ``fn(lib, *tensors)`` is written with names
torch and minikernel share, so the same call runs through both; ``inputs`` is a hypothesis
strategy of tuples of torch tensors — 0-d, empty and size-1 dims, transposed, sliced with
steps, expanded, at a storage offset, in the dtypes the op takes. ``grad``: the op is
differentiable, so its gradients are compared with torch's and checked by ``gradcheck``.

Public names that are not operators (autograd state, interop, devices) are listed in
``NOT_OPERATORS`` with the reason; a name in neither list fails ``test_every_public_name_is_listed``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from hypothesis import strategies as st

from minikernel.aten.native_functions import FALLS_THROUGH, NATIVE_FUNCTIONS, NOT_DIFFERENTIABLE, Samples

FLOATS = (torch.float32, torch.float64)
NUMBERS = (torch.float32, torch.float64, torch.int64)
SHAPES = [(), (0,), (1,), (3,), (2, 3), (3, 1), (2, 1, 3), (0, 3)]


@st.composite
def tensors(draw, dtypes=FLOATS, shapes=SHAPES, positive: bool = False) -> torch.Tensor:
    """A tensor of one of ``shapes`` in one of five layouts: contiguous, transposed, every second
    element of a larger tensor, expanded from a size-1 dim, or at a storage offset."""
    shape = draw(st.sampled_from(shapes))
    dtype = draw(st.sampled_from(dtypes))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))

    def values(s):
        if dtype == torch.bool:
            return torch.rand(s, generator=g) > 0.5
        if dtype.is_floating_point:
            v = torch.randn(s, generator=g, dtype=torch.float64)
            return (v.abs() + 0.5 if positive else v).to(dtype)
        return torch.randint(1 if positive else -5, 6, s, generator=g).to(dtype)

    layout = draw(st.sampled_from(["contiguous", "transposed", "stepped", "expanded", "offset"]))
    if layout == "transposed" and len(shape) >= 2:
        return values(shape[::-1]).transpose(0, -1)
    if layout == "stepped" and shape:
        return values((shape[0] * 2, *shape[1:]))[::2]
    if layout == "expanded" and shape and 1 in shape:
        one = tuple(1 if s == 1 else s for s in shape)
        return values(one).expand(shape)
    if layout == "offset":
        return values((1 + (shape[0] if shape else 1), *shape[1:]))[1:] if shape else values((2,))[1]
    return values(shape)


def one(**kw):
    return st.tuples(tensors(**kw))


def two(same_shape: bool = False, **kw):
    """Two broadcastable tensors (or of one shape)."""
    @st.composite
    def pair(draw):
        a = draw(tensors(**kw))
        shapes = [tuple(a.shape)] if same_shape else [tuple(a.shape), tuple(a.shape[1:]), (), (1,) * a.dim()]
        return a, draw(tensors(shapes=shapes, **kw))
    return pair()


def matrices():
    @st.composite
    def pair(draw):
        n, k, m = draw(st.integers(1, 3)), draw(st.integers(0, 3)), draw(st.integers(1, 3))
        left = draw(st.sampled_from([(n, k), (k,), (2, n, k)]))
        right = draw(st.sampled_from([(k, m), (k,)]))
        return (draw(tensors(shapes=[left], dtypes=(torch.float64, torch.float32))),
                draw(tensors(shapes=[right], dtypes=(torch.float64, torch.float32))))
    return pair()


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable
    inputs: st.SearchStrategy
    grad: bool = True
    view: bool = False  #: the result shares the input's memory (strides are compared too)


def _dims(a):
    return range(-max(a.dim(), 1), max(a.dim(), 1))


#: The entries written by hand: calls that a declaration's ``Samples`` can't say (dims, several
#: calls in one, dunders and views of a declared operator); the declared operators' own
#: entries are made from ``minikernel/aten/native_functions.py`` (``DECLARED``, below).
HAND_WRITTEN = [
    # ---------------------------------------------------------------- element-wise
    Op("__add__", lambda L, a, b: a + b, two(dtypes=NUMBERS)),
    Op("__radd__", lambda L, a: 2 + a, one(dtypes=NUMBERS)),
    Op("__sub__", lambda L, a, b: a - b, two(dtypes=NUMBERS)),
    Op("__rsub__", lambda L, a: 2.5 - a, one()),
    Op("__mul__", lambda L, a, b: a * b, two(dtypes=NUMBERS)),
    Op("__rmul__", lambda L, a: 3 * a, one(dtypes=NUMBERS)),
    Op("__truediv__", lambda L, a, b: a / b, two(positive=True)),
    Op("__rtruediv__", lambda L, a: 2.0 / a, one(positive=True), grad=False),
    Op("__neg__", lambda L, a: -a, one(dtypes=NUMBERS)),
    Op("__pow__", lambda L, a, b: a ** b, two(positive=True)),
    Op("__rpow__", lambda L, a: 2 ** a, one()),
    Op("where", lambda L, a, b: L.where(a > 0, a, b), two()),
    Op("Tensor.where", lambda L, a, b: a.where(a > 0, b), two()),
    Op("clone", lambda L, a: a.clone(), one(dtypes=NUMBERS)),
    Op("contiguous", lambda L, a: a.contiguous(), one(dtypes=NUMBERS)),
    Op("__matmul__", lambda L, a, b: a @ b, matrices()),
    # ------------------------------------------------------------------ reductions
    Op("sum(dim)", lambda L, a: [a.sum(d, keepdim=k) for d in _dims(a) for k in (False, True)], one()),
    Op("mean", lambda L, a: [a.mean()] + [a.mean(d) for d in _dims(a)], one()),
    Op("max", lambda L, a: a.max(), one(shapes=[(), (1,), (3,), (2, 3), (2, 1, 3)])),
    Op("max(dim)", lambda L, a: [tuple(a.max(d, keepdim=True)) for d in _dims(a)],
       one(shapes=[(), (1,), (3,), (2, 3)]), grad=False),
    Op("amax", lambda L, a: [a.amax(d) for d in _dims(a)], one(shapes=[(), (1,), (3,), (2, 3), (2, 1, 3)])),
    Op("prod", lambda L, a: [a.prod()] + [a.prod(d) for d in _dims(a)], one()),
    # ----------------------------------------------------------------------- views
    Op("view", lambda L, a: a.view(-1) if a.is_contiguous() else a.view(a.shape), one(dtypes=NUMBERS), view=True),
    Op("view_as", lambda L, a: a.view_as(a), one(), view=True),
    Op("reshape", lambda L, a: [a.reshape(-1), a.reshape(1, -1)], one(dtypes=NUMBERS)),
    Op("reshape_as", lambda L, a: a.reshape_as(a.reshape(-1)), one()),
    Op("flatten", lambda L, a: a.flatten(), one()),
    Op("unflatten", lambda L, a: a.unflatten(0, (1, -1)), one(shapes=[(3,), (2, 3), (0, 3)])),
    Op("permute", lambda L, a: a.permute(*reversed(range(a.dim()))), one(dtypes=NUMBERS), view=True),
    Op("transpose", lambda L, a: a.transpose(0, -1), one(dtypes=NUMBERS), view=True),
    Op("swapdims", lambda L, a: a.swapdims(0, -1), one(), view=True),
    Op("swapaxes", lambda L, a: a.swapaxes(-1, 0), one(), view=True),
    Op("movedim", lambda L, a: a.movedim(0, -1), one(), view=True),
    Op("moveaxis", lambda L, a: a.moveaxis(-1, 0), one(), view=True),
    Op("t", lambda L, a: a.t(), one(shapes=[(), (3,), (2, 3), (0, 3), (3, 1)]), view=True),
    Op("T", lambda L, a: a.T, one(shapes=[(), (3,), (2, 3), (0, 3)]), view=True),
    Op("mT", lambda L, a: a.mT, one(shapes=[(2, 3), (2, 1, 3), (0, 3)]), view=True),
    Op("mH", lambda L, a: a.mH, one(shapes=[(2, 3), (2, 1, 3)]), view=True),
    Op("adjoint", lambda L, a: a.adjoint(), one(shapes=[(2, 3), (3, 1)]), view=True),
    Op("H", lambda L, a: a.H, one(shapes=[(), (2, 3), (3, 1)]), view=True),
    Op("expand", lambda L, a: a.expand(2, *a.shape), one(dtypes=NUMBERS), view=True),
    Op("expand_as", lambda L, a: a.expand_as(L.zeros(2, *a.shape)), one(), view=True),
    Op("squeeze", lambda L, a: [a.squeeze()] + [a.squeeze(d) for d in _dims(a)], one()),
    Op("squeeze(dims)", lambda L, a: [a.squeeze(tuple(range(a.dim()))), a.squeeze((0, -1))], one()),
    Op("unsqueeze", lambda L, a: [a.unsqueeze(d) for d in range(-a.dim() - 1, a.dim() + 1)], one(), view=True),
    Op("narrow", lambda L, a: a.narrow(0, 0, 1), one(shapes=[(1,), (3,), (2, 3)]), view=True),
    Op("select", lambda L, a: a.select(-1, 0), one(shapes=[(1,), (3,), (2, 3)]), view=True),
    Op("diagonal", lambda L, a: a.diagonal(), one(shapes=[(2, 3), (3, 1), (0, 3), (2, 1, 3)]), view=True),
    Op("unfold", lambda L, a: [a.unfold(0, 1, 1), a.unfold(-1, 2, 1), a.unfold(0, 2, 2)],
       one(shapes=[(), (1,), (3,), (2, 3), (0, 3)])),
    Op("unbind", lambda L, a: a.unbind(0), one(shapes=[(1,), (3,), (2, 3)])),
    Op("split", lambda L, a: a.split(1), one(shapes=[(1,), (3,), (2, 3)])),
    Op("split(sizes)", lambda L, a: a.split([1, a.shape[0] - 1]), one(shapes=[(1,), (3,), (2, 3)])),
    Op("chunk", lambda L, a: a.chunk(2), one(shapes=[(1,), (3,), (2, 3)])),
    Op("as_strided", lambda L, a: a.contiguous().as_strided((2,), (1,)), one(shapes=[(3,), (2, 3)]), grad=False),
    # --------------------------------------------------------------------- joining
    Op("cat", lambda L, a, b: L.cat([a, b], 0), two(same_shape=True, dtypes=NUMBERS)),
    Op("stack", lambda L, a, b: L.stack([a, b], -1), two(same_shape=True, dtypes=NUMBERS)),
    # ---------------------------------------------------------------- indexing
    Op("__getitem__", lambda L, a: [a[..., None], a[a > 0]] + ([a[0], a[::2], a[[0, 0]], a[L.tensor([0])]]
                                                              if a.dim() and a.shape[0] else []), one()),
    # ------------------------------------------- in-place (on a copy of the input)
    Op("zero_", lambda L, a: a.clone().zero_(), one()),
    Op("fill_", lambda L, a: a.clone().fill_(1.5), one(dtypes=NUMBERS)),
    Op("copy_", lambda L, a, b: a.clone().copy_(b), two(dtypes=NUMBERS)),
    Op("__iadd__", lambda L, a, b: a.clone().__iadd__(b), two()),
    Op("__isub__", lambda L, a, b: a.clone().__isub__(b), two()),
    Op("__imul__", lambda L, a, b: a.clone().__imul__(b), two()),
    Op("__itruediv__", lambda L, a, b: a.clone().__itruediv__(b), two(positive=True)),
    Op("__setitem__", lambda L, a, b: _setitems(L, a.clone(), b), two()),
    # ------------------------------------------------------------ scalars and sizes
    Op("__bool__", lambda L, a: bool(a), one(shapes=[(), (1,), (3,), (0,)]), grad=False),
    Op("__float__", lambda L, a: float(a), one(shapes=[(), (1,), (3,)]), grad=False),
    Op("__int__", lambda L, a: int(a), one(shapes=[(), (1,), (3,)], dtypes=NUMBERS), grad=False),
    Op("__index__", lambda L, a: [10, 20, 30][a], one(shapes=[(), (1,)], dtypes=NUMBERS, positive=True), grad=False),
    Op("__len__", lambda L, a: len(a), one(), grad=False),
    Op("item", lambda L, a: a.item(), one(shapes=[(), (1,), (3,)]), grad=False),
    Op("tolist", lambda L, a: a.tolist(), one(dtypes=NUMBERS), grad=False),
    Op("size", lambda L, a: (tuple(a.size()), [a.size(d) for d in _dims(a)] if a.dim() else []), one(), grad=False),
    Op("shape", lambda L, a: tuple(a.shape), one(), grad=False),
    Op("stride", lambda L, a: a.stride(), one(), grad=False),
    Op("storage_offset", lambda L, a: a.storage_offset(), one(), grad=False),
    Op("dim", lambda L, a: a.dim(), one(), grad=False),
    Op("ndim", lambda L, a: a.ndim, one(), grad=False),
    Op("numel", lambda L, a: a.numel(), one(), grad=False),
    Op("element_size", lambda L, a: a.element_size(), one(dtypes=NUMBERS), grad=False),
    Op("is_contiguous", lambda L, a: a.is_contiguous(), one(), grad=False),
    Op("dtype", lambda L, a: str(a.dtype).removeprefix("torch."), one(dtypes=NUMBERS), grad=False),
    # ------------------------------------------------------------------- factories
    Op("tensor", lambda L, a: L.tensor(a.tolist()), one(dtypes=NUMBERS), grad=False),
    Op("zeros", lambda L, a: L.zeros(*a.shape), one(), grad=False),
    Op("ones", lambda L, a: L.ones(a.shape, dtype=L.float64), one(), grad=False),
]


def _strategy(samples: Samples, inplace: bool = False) -> st.SearchStrategy:
    """The inputs a declaration's ``Samples`` asks for (in-place variants: float copies)."""
    dtypes = NUMBERS if samples.dtypes == "numbers" and not inplace else FLOATS
    if samples.tensors == "matrices":
        return matrices()
    if samples.tensors == 1:
        return one(dtypes=dtypes, positive=samples.positive)
    if samples.tensors == 2:
        return two(dtypes=dtypes, positive=samples.positive)
    raise ValueError(f"Samples(tensors={samples.tensors!r}): 1, 2 or 'matrices'")


def _call(name: str, args: tuple, inplace: bool) -> Callable:
    def fn(L, first, *rest):
        return getattr(first.clone() if inplace else first, name)(*rest, *args)
    return fn


def declared_ops(natives=NATIVE_FUNCTIONS) -> list[Op]:
    """An entry per declared operator with ``Samples`` (named after its first method), and
    one per in-place variant (its first in-place method, on a copy)."""
    made = []
    for native in natives:
        if not isinstance(native.samples, Samples):
            continue
        grad = native.autograd not in (NOT_DIFFERENTIABLE, FALLS_THROUGH)
        name = native.methods[0]
        made.append(Op(name, _call(name, native.samples.args, False), _strategy(native.samples), grad))
        if native.inplace_methods:
            name = native.inplace_methods[0]
            made.append(Op(name, _call(name, native.samples.args, True), _strategy(native.samples, True), grad))
    return made


DECLARED = declared_ops()
OPS = DECLARED + HAND_WRITTEN


def _setitems(L, a, b):
    """Every kind of index assignment, one after another, on ``a``."""
    a[...] = b
    if a.dim() and a.shape[0]:
        a[0] = 2.0
        a[[0]] = 3.0
        a[L.tensor([0, 0])] = -1.0
        a[::2] = a[::2] * 2
    a[a > 0] = 0.5
    return a


#: public names that are not operators, and why
NOT_OPERATORS = {
    "Tensor": "the class itself", "grade": "the course's grader",
    "float32": "a dtype", "float64": "a dtype", "int32": "a dtype", "int64": "a dtype", "bool_": "a dtype",
    "bool": "a dtype",
    "no_grad": "grad mode (tests/ch03)", "enable_grad": "grad mode", "set_grad_enabled": "grad mode",
    "is_grad_enabled": "grad mode", "inference_mode": "grad mode (test_api_additions.py)",
    "is_inference_mode_enabled": "grad mode",
    "backward": "autograd entry (fuzzer, tests/ch03)", "register_hook": "hooks (tests/ch03, ch04)",
    "register_post_accumulate_grad_hook": "hooks (test_api_behaviour.py)",
    "retain_grad": "autograd state (fuzzer)", "retains_grad": "autograd state", "requires_grad": "autograd state",
    "requires_grad_": "autograd state", "grad": "autograd state", "grad_fn": "autograd state",
    "is_leaf": "autograd state", "output_nr": "autograd state", "detach": "autograd state (fuzzer)",
    "detach_": "autograd state", "data": "autograd state",
    "from_torch": "interop with torch", "to_torch": "interop with torch", "to_numpy": "interop with numpy",
    "cpu": "devices (tests/ch02)", "cuda": "devices (tests/ch02)", "to": "devices (tests/ch02)",
    "device": "devices", "is_cuda": "devices", "data_ptr": "memory identity (tests/ch01)",
    "untyped_storage": "memory identity (tests/ch01)", "type": "legacy type name (tests/ch01)",
}
