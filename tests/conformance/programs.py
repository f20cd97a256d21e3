"""Random programs run the same way through torch and minikernel (the fuzzer's engine).

A *program* is plain data — a list of steps ``(kind, name, operands, params)`` over a
growing pool of tensors that starts with a few float64 leaves — so a failing one can be
printed and replayed as a test (``tests/conformance/found/``). It is drawn once, with
torch running alongside to keep every index in range, then run on both libraries:

* ``op``: an out-of-place op or view (``exp``, ``t``, ``x[idx]``, ``cat`` ...) appends its
  result to the pool;
* ``inplace``: an in-place op on a pool entry (``add_``, ``x[idx] = v``, ``x[idx] += v``,
  ``fill_``, ``copy_`` ...), often on a view;
* ``index_expr``, ``set_index_expr``, ``iadd_index_expr``: a read, write or ``+=`` through a
  random index expression (``index_exprs.py``: ints, slices, None, ..., lists, integer
  tensors, masks, combined) carried in the step as data;
* every step may run under ``no_grad``;
* the last step is ``backward`` (maybe twice with ``retain_graph``) or ``autograd.grad``
  (maybe with ``create_graph`` and a second derivative).

After every step both sides must agree: both raise (the same exception type) or neither;
and every pool entry's values, shape, dtype, ``requires_grad``, ``is_leaf``, ``_version``
and ``grad_fn`` name, and at the end every leaf's ``.grad``.
"""
from __future__ import annotations

import random
import warnings
from typing import Any, Callable

import torch

import minikernel
from minikernel import Tensor
from tests.conformance import index_exprs as IX

Step = tuple  #: (kind, name, operand indices, no_grad[, index expression[, how the value is made]])
Program = list  #: [("leaves", shapes, requires_grad flags, seed), Step, ...]

LEAF_SHAPES = [(2, 3), (3,), (1, 3), (2, 1), (), (0, 3)]


def _mask(x, params):
    return x > params[0]


#: out-of-place ops and views: name -> (arity, fn(lib, *tensors, *params))
OPS: dict[str, tuple[int, Callable]] = {
    "exp": (1, lambda L, a: a.tanh().exp()),
    "tanh": (1, lambda L, a: a.tanh()),
    "sigmoid": (1, lambda L, a: a.sigmoid()),
    "relu": (1, lambda L, a: a.relu()),
    "neg": (1, lambda L, a: -a),
    "log": (1, lambda L, a: (a * a + 1).log()),
    "square": (1, lambda L, a: a ** 2),
    "sum": (1, lambda L, a: a.sum()),
    "sum_last": (1, lambda L, a: a.sum(-1, keepdim=True)),
    "mean_first": (1, lambda L, a: a.mean(0)),
    "max_all": (1, lambda L, a: a.max()),
    "clone": (1, lambda L, a: a.clone()),
    "detach": (1, lambda L, a: a.detach()),
    "contiguous": (1, lambda L, a: a.contiguous()),
    "t": (1, lambda L, a: a.t()),
    "T_last": (1, lambda L, a: a.transpose(0, -1)),
    "unsqueeze": (1, lambda L, a: a.unsqueeze(0)),
    "none_index": (1, lambda L, a: a[..., None]),
    "expand": (1, lambda L, a: a.expand(2, *a.shape)),
    "reshape": (1, lambda L, a: a.reshape(-1)),
    "view": (1, lambda L, a: a.view(-1)),
    "flatten": (1, lambda L, a: a.flatten()),
    "squeeze": (1, lambda L, a: a.squeeze()),
    "permute": (1, lambda L, a: a.permute(*reversed(range(a.dim())))),
    "movedim": (1, lambda L, a: a.movedim(0, -1)),
    "select0": (1, lambda L, a: a[0]),
    "select_last": (1, lambda L, a: a[..., -1]),
    "slice_step": (1, lambda L, a: a[::2]),
    "slice_tail": (1, lambda L, a: a[1:]),
    "list_index": (1, lambda L, a: a[[0, 0]]),
    "tensor_index": (1, lambda L, a: a[L.tensor([1, 0])]),
    "mask_index": (1, lambda L, a: a[a > 0]),
    "split0": (1, lambda L, a: a.split(1)[0]),
    "unbind_last": (1, lambda L, a: a.unbind(0)[-1]),
    "diagonal": (1, lambda L, a: a.diagonal()),
    "add": (2, lambda L, a, b: a + b),
    "sub": (2, lambda L, a, b: a - b),
    "mul": (2, lambda L, a, b: a * b),
    "div": (2, lambda L, a, b: a / (b * b + 1)),
    "rsub": (2, lambda L, a, b: 2.0 - a * b),
    "where": (2, lambda L, a, b: L.where(a > 0, a, b)),
    "matmul": (2, lambda L, a, b: a @ b),
    "cat": (2, lambda L, a, b: L.cat([a, b])),
    "stack": (2, lambda L, a, b: L.stack([a, b], -1)),
    "fn_square": (1, lambda L, a: _functions(L)["square"].apply(a)),
    "fn_cube": (1, lambda L, a: _functions(L)["cube"].apply(a)),
    "fn_split": (1, lambda L, a: _functions(L)["split"].apply(a)[0] + _functions(L)["split"].apply(a)[1]),
    "index_expr": (1, IX.read),
}

def _functions(lib) -> dict:
    """The same custom ``autograd.Function``s written once for either library (the Function API under test)."""
    F = lib.autograd.Function

    class Square(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    class Cube(F):  # torch 2's form: forward without ctx, then setup_context
        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    class SplitSign(F):  # two outputs, the second not differentiable; zeros for a missing gradient
        @staticmethod
        def forward(ctx, x):
            positive = (x > 0) * 1.0
            ctx.mark_non_differentiable(positive)
            return x * 2, positive

        @staticmethod
        def backward(ctx, grad, _unused):
            return grad * 2

    class DoubleInPlace(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return {"square": Square, "cube": Cube, "split": SplitSign, "double_": DoubleInPlace}


#: in-place ops on the first operand: name -> (arity, fn(lib, *tensors)) -> None
INPLACE: dict[str, tuple[int, Callable]] = {
    "add_": (2, lambda L, a, b: a.add_(b)),
    "sub_": (2, lambda L, a, b: a.sub_(b)),
    "mul_": (2, lambda L, a, b: a.mul_(b)),
    "mul_2": (1, lambda L, a: a.mul_(2)),
    "div_": (1, lambda L, a: a.div_(4)),
    "neg_": (1, lambda L, a: a.neg_()),
    "exp_": (1, lambda L, a: a.tanh_().exp_()),
    "relu_": (1, lambda L, a: a.relu_()),
    "sigmoid_": (1, lambda L, a: a.sigmoid_()),
    "zero_": (1, lambda L, a: a.zero_()),
    "fill_": (1, lambda L, a: a.fill_(1.5)),
    "copy_": (2, lambda L, a, b: a.copy_(b)),
    "iadd": (2, lambda L, a, b: a.__iadd__(b)),
    "set_int": (1, lambda L, a: a.__setitem__(0, 2.0)),
    "set_slice": (2, lambda L, a, b: a.__setitem__(slice(None, None, 2), b)),
    "set_last": (1, lambda L, a: a.__setitem__((Ellipsis, -1), -1.0)),
    "set_list": (1, lambda L, a: a.__setitem__([1, 0], 3.0)),
    "set_list_tensor": (2, lambda L, a, b: a.__setitem__([0], b)),
    "set_tensor_index": (1, lambda L, a: a.__setitem__(L.tensor([0, 0]), 0.5)),
    "set_mask": (1, lambda L, a: a.__setitem__(a > 0, 0.0)),
    "set_mask_tensor": (2, lambda L, a, b: a.__setitem__(a > 0, b)),
    "iadd_index": (1, lambda L, a: a.__setitem__(0, a[0] + 1)),
    "iadd_list": (1, lambda L, a: _iadd_item(a, [0, 1], 1.0)),
    "set_none": (1, lambda L, a: a.__setitem__(None, 7.0)),
    "set_index_expr": (2, IX.write),
    "iadd_index_expr": (2, IX.add_into),
    "fn_double_": (1, lambda L, a: _functions(L)["double_"].apply(a)),
    "hook_double": (1, lambda L, a: a.register_hook(lambda g: g * 2)),
    "retain_grad": (1, lambda L, a: a.retain_grad()),
}


#: steps that carry a drawn index expression (``index_exprs.py``), drawn more often than one name each
INDEX_EXPRS = ("index_expr", "set_index_expr", "iadd_index_expr")


def _iadd_item(a, key, value):
    a[key] += value


def draw_program(seed: int, max_steps: int = 12) -> Program:
    """A random program (plain data), drawn with ``seed``."""
    rng = random.Random(seed)
    n = rng.randint(1, 3)
    shapes = [rng.choice(LEAF_SHAPES) for _ in range(n)]
    flags = [rng.random() < 0.75 for _ in range(n)]
    program: Program = [("leaves", shapes, flags, rng.randint(0, 2**16))]
    pool = n
    for _ in range(rng.randint(1, max_steps)):
        kind = "inplace" if rng.random() < 0.35 else "op"
        table = INPLACE if kind == "inplace" else OPS
        name = rng.choice(sorted(table) + [n for n in INDEX_EXPRS if n in table] * 4)
        arity = table[name][0]
        operands = [rng.randrange(pool) for _ in range(arity)]
        no_grad = rng.random() < 0.1
        step = (kind, name, operands, no_grad)
        if name in INDEX_EXPRS:  # the drawn index expression (and how the value is made), as data
            step += (IX.draw_index(rng),) + ((IX.draw_value(rng),) if kind == "inplace" else ())
        program.append(step)
        if kind == "op":
            pool += 1
    end = rng.random()
    final = "grad" if end < 0.3 else "backward"
    program.append((final, rng.random() < 0.3, rng.random() < 0.3))  # (kind, retain/create, twice/second)
    return program


def _leaves(lib, spec) -> list:
    _, shapes, flags, seed = spec
    g = torch.Generator().manual_seed(seed)
    values = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes]
    if lib is torch:
        return [v.clone().requires_grad_(f) for v, f in zip(values, flags)]
    return [Tensor.from_torch(v.clone()).requires_grad_(f) for v, f in zip(values, flags)]


def _call(fn: Callable) -> tuple[Any, BaseException | None]:
    try:
        return fn(), None
    except NotImplementedError:
        raise  # an exercise's stub: the test reports TODO
    except Exception as err:  # noqa: BLE001 - the error is compared with torch's
        return None, err


def _grad_fn_name(t) -> str | None:
    node = t.grad_fn
    if node is None:
        return None
    name = node.name() if callable(getattr(node, "name", None)) else type(node).__name__
    return name.removeprefix("torch::autograd::")  # torch's C++ nodes: "torch::autograd::CopySlices"


#: torch's matmul is a composite: its last node is one of these (docs/conformance.md)
MATMUL_NODES = {"MmBackward0", "DotBackward0", "MvBackward0", "SqueezeBackward4", "TransposeBackward0",
                "ViewBackward0", "UnsafeViewBackward0", "BmmBackward0", "ExpandBackward0", "SqueezeBackward1",
                "CloneBackward0"}


#: ids of minikernel ``matmul`` results: torch's composite returns some of them as views (its last
#: node a transpose), whose ``grad_fn`` becomes ``AsStridedBackward0`` once they, or a view of
#: them, are written in place; minikernel's are no views (docs/conformance.md)
_MATMUL_RESULTS: set[int] = set()


def _from_matmul(m: Tensor) -> bool:
    return id(m) in _MATMUL_RESULTS or (m._base is not None and id(m._base) in _MATMUL_RESULTS)


#: torch's setitem fills with a 0-d *tensor* (``fill_.Tensor``, FillBackward3); minikernel's ``fill_``
#: takes numbers (FillBackward2) and a 0-d value that requires grad is copied (docs/conformance.md)
FILL_NODES = {"FillBackward2", "CopyBackwards"}


class Divergence(AssertionError):
    pass


#: id of a minikernel version counter -> how far torch's is ahead of it (see ``run_program``)
_VERSION_OFFSETS: dict[int, int] = {}


def _check_tensor(where: str, t: torch.Tensor, m: Tensor, version: bool = True) -> None:
    if not isinstance(m, Tensor):
        raise Divergence(f"{where}: minikernel gave {type(m).__name__}, torch a tensor")
    if m.shape != tuple(t.shape) or str(m.dtype) != str(t.dtype).removeprefix("torch."):
        raise Divergence(f"{where}: shape/dtype {m.shape} {m.dtype} vs torch's {tuple(t.shape)} {t.dtype}")
    if not torch.allclose(m.detach().to_torch(), t.detach(), rtol=1e-6, atol=1e-9, equal_nan=True):
        raise Divergence(f"{where}: values\n{m.detach().to_torch()}\nvs torch's\n{t.detach()}")
    if m.requires_grad != t.requires_grad:
        raise Divergence(f"{where}: requires_grad {m.requires_grad} vs torch's {t.requires_grad}")
    if version and m._version + _VERSION_OFFSETS.get(id(m._vc), 0) != t._version:
        raise Divergence(f"{where}: _version {m._version} vs torch's {t._version}")
    (t_name, t_err), (m_name, m_err) = _call(lambda: _grad_fn_name(t)), _call(lambda: _grad_fn_name(m))
    if _same_outcome(f"{where}: reading grad_fn", t_err, m_err):
        return  # both refuse a view whose base was modified in place
    if m.is_leaf != t.is_leaf:
        raise Divergence(f"{where}: is_leaf {m.is_leaf} vs torch's {t.is_leaf}")
    if t_name != m_name and not (m_name == "MatmulBackward0" and t_name in MATMUL_NODES) and not (
            t_name == "FillBackward3" and m_name in FILL_NODES) and not (
            t_name == "AsStridedBackward0" and _from_matmul(m)):
        raise Divergence(f"{where}: grad_fn {m_name} vs torch's {t_name}")


def _check_values(where: str, t: torch.Tensor, m: Tensor) -> None:
    """Values, shape and dtype only (what a gradient from ``autograd.grad`` is compared on)."""
    if m.shape != tuple(t.shape) or not torch.allclose(m.detach().to_torch(), t.detach(), rtol=1e-6, atol=1e-9,
                                                       equal_nan=True):
        raise Divergence(f"{where}: {m}\nvs torch's\n{t}")


def _same_outcome(where: str, t_err, m_err) -> bool:
    """Both raised (the same type: True, the step is skipped) or neither (False)."""
    if (t_err is None) != (m_err is None) or (t_err is not None and type(t_err) is not type(m_err)):
        raise Divergence(f"{where}: torch raised {t_err!r}, minikernel raised {m_err!r}")
    return t_err is not None


def run_program(program: Program) -> None:
    """Run ``program`` on torch and minikernel; raise ``Divergence`` at the first difference."""
    _VERSION_OFFSETS.clear()
    _MATMUL_RESULTS.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notes and non-leaf .grad reads
        _run_program(program)


def _run_program(program: Program) -> None:
    pools = {torch: _leaves(torch, program[0]), minikernel: _leaves(minikernel, program[0])}
    leaves = {lib: list(pool) for lib, pool in pools.items()}
    for i, step in enumerate(program[1:-1], 1):
        kind, name, operands, no_grad, *params = step
        where = f"step {i} {step}"
        outcome = {}
        before = [t.detach().clone() for t in pools[torch]]
        for lib in (torch, minikernel):
            fn = (OPS if kind == "op" else INPLACE)[name][1]
            args = [pools[lib][j] for j in operands]

            def call(fn=fn, lib=lib, args=args, off=no_grad, params=params):
                with lib.set_grad_enabled(not off):
                    return fn(lib, *args, *params)
            outcome[lib] = _call(call)
        (t_out, t_err), (m_out, m_err) = outcome[torch], outcome[minikernel]
        if t_err is not None and m_err is not None and _partly_written(pools, before):
            return  # torch wrote part of a refused index_put_ (docs/conformance.md): nothing more to compare
        if _same_outcome(where, t_err, m_err):
            if kind == "op":
                pools[torch].append(pools[torch][operands[0]])  # keep the pools aligned
                pools[minikernel].append(pools[minikernel][operands[0]])
            continue
        if kind == "op":
            pools[torch].append(t_out)
            pools[minikernel].append(m_out)
            if name == "matmul":  # torch's 1-d matmul ends in an in-place squeeze_ (docs/conformance.md)
                _VERSION_OFFSETS[id(m_out._vc)] = t_out._version - m_out._version
                _MATMUL_RESULTS.add(id(m_out))
        for k, (t, m) in enumerate(zip(pools[torch], pools[minikernel])):
            _check_tensor(f"{where}, pool[{k}]", t, m)
    _finish(program[-1], pools, leaves)


def _partly_written(pools: dict, before: list) -> bool:
    """Whether a step both libraries refused changed torch's values anyway: torch's ``index_put_``
    checks an index when it reaches it, after writing the elements before it; minikernel checks
    first and writes nothing."""
    return any(t.shape != b.shape or not torch.equal(t.detach(), b) for t, b in zip(pools[torch], before)
               if not (t.isnan().any() or b.isnan().any()))


def _finish(step: Step, pools: dict, leaves: dict) -> None:
    final, flag_a, flag_b = step
    roots = {}
    for lib in (torch, minikernel):
        parts = [p for p in pools[lib] if p.requires_grad and p.dtype in (torch.float64, minikernel.float64)]
        roots[lib] = parts
    if not roots[torch]:
        return
    where = f"final {step}"

    def loss(lib):
        total = None
        for k, p in enumerate(roots[lib]):
            term = (p * (k + 1)).sum()
            total = term if total is None else total + term
        return total

    if final == "backward":
        outcome = {lib: _call(lambda lib=lib: _backward(lib, loss(lib), flag_a, flag_b)) for lib in (torch, minikernel)}
        if _same_outcome(where, outcome[torch][1], outcome[minikernel][1]):
            return
        for k, (t, m) in enumerate(zip(pools[torch], pools[minikernel])):
            if t.retains_grad != m.retains_grad:
                raise Divergence(f"{where}: pool[{k}] retains_grad {m.retains_grad} vs torch's {t.retains_grad}")
            if t.retains_grad and (t.grad is None) != (m.grad is None):
                raise Divergence(f"{where}: pool[{k}] retained .grad {m.grad} vs torch's {t.grad}")
            if t.retains_grad and t.grad is not None:
                _check_values(f"{where}: pool[{k}] retained .grad", t.grad, m.grad)
        for k, (t, m) in enumerate(zip(leaves[torch], leaves[minikernel])):
            if (t.grad is None) != (m.grad is None):
                raise Divergence(f"{where}: leaf {k} .grad {m.grad} vs torch's {t.grad}")
            if t.grad is not None:
                _check_tensor(f"{where}: leaf {k} .grad", t.grad, m.grad, version=False)
        return
    wanted = [k for k, t in enumerate(leaves[torch]) if t.requires_grad]
    outcome = {lib: _call(lambda lib=lib: _grad(lib, loss(lib), [leaves[lib][k] for k in wanted], flag_a, flag_b))
               for lib in (torch, minikernel)}
    if _same_outcome(where, outcome[torch][1], outcome[minikernel][1]):
        return
    for k, t, m in zip(wanted, outcome[torch][0], outcome[minikernel][0]):
        if (t is None) != (m is None):
            raise Divergence(f"{where}: gradient of leaf {k}: {m} vs torch's {t}")
        if t is not None:
            _check_values(f"{where}: gradient of leaf {k}", t, m)


def _backward(lib, root, retain: bool, twice: bool) -> None:
    root.backward(retain_graph=retain or twice)
    if twice:
        root.backward()


def _grad(lib, root, inputs: list, create: bool, second: bool):
    grads = lib.autograd.grad(root, inputs, create_graph=create or second, allow_unused=True)
    if second and grads and grads[0] is not None and grads[0].requires_grad:
        again = lib.autograd.grad(grads[0].sum(), inputs, allow_unused=True)
        return tuple(grads) + tuple(again)
    return tuple(grads)
