"""Tensor operations: what happens between ``x + y`` and the kernel.

PyTorch runs every operator through the same steps (the notes' "what writing a
kernel involves"), and so does minikernel:

1. **Device dispatch** — all operands on one device; pick that device's kernel
   (``kernels/launch.py``). An unfinished kernel stops here, the way PyTorch raises
   ``NotImplementedError: Could not run 'aten::add' with arguments from the 'CUDA'
   backend`` when no kernel is registered.
2. **dtype dispatch** — the result dtype by PyTorch's promotion rules; minikernel's
   kernels take float32, float64 and int64, anything else is refused here.
3. **Error checks** — shapes broadcast (your ``broadcast_shape``, 1.4), ``out=``
   has the right shape, a castable dtype, and no overlap that a parallel kernel
   would get wrong.
4. **Allocate the output** — with the strides PyTorch would give it
   (``kernels/layout.py``), unless ``out=`` was passed.
5. **Run the kernel** — inputs broadcast with your ``expand`` (1.6); the kernel
   itself is exercise 2.2–2.9.

Each operation comes as PyTorch's three variants: functional (``add(a, b)``),
``out=`` (``add(a, b, out=c)``, the workhorse) and in-place (``a.add_(b)``, which is
``add(a, b, out=a)``).
"""
from __future__ import annotations

import builtins
import math
from collections import namedtuple
from numbers import Integral, Real
from typing import Optional, Sequence, Union

import numpy as np

from . import device as dev
from . import shape_rules, strides as S
from ._C.grad_mode import is_grad_enabled
from .memory_overlap import check_overlap
from .kernels import jit, launch, layout, reference
from .kernels.scalar_ops import BINARY, MAX, REDUCE, SUM, UNARY
from .tensor import _SCALAR_NAMES, Tensor, _wrap_dim, bool_, float32, float64, int32, int64

Number = Union[int, float]
Operand = Union[Tensor, int, float]

SUPPORTED = launch.KERNEL_DTYPES  # float32, float64, int64
#: PyTorch's C type names, in matmul's messages.
_C_NAMES = {float32: "float", float64: "double", int64: "long int", int32: "int", bool_: "bool"}
_FLOAT_RESULT = ("exp", "log", "sigmoid")  # integer inputs give float32, like torch


# ------------------------------------------------------------------ dispatch
def _check_operand(x: object, name: str) -> None:
    if isinstance(x, Tensor):
        return
    if isinstance(x, bool) or not isinstance(x, Real):
        raise TypeError(f"{name}(): operands must be minikernel Tensors or Python int/float, "
                        f"got {type(x).__name__}")


def device_of(name: str, *tensors: Optional[Tensor]) -> str:
    """First dispatch: the one device all tensors are on ("cpu" or "cuda")."""
    present = [t for t in tensors if t is not None]
    first = present[0].device
    for t in present[1:]:
        if t.device != first:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                               f"devices, {first} and {t.device}! ({name})")
    if first.type == "cuda":
        dev.check_cuda()
    return first.type


def _check_dtype(name: str, where: str, dtype: np.dtype) -> None:
    """Second dispatch: the kernels exist for float32, float64 and int64 only (the numpy
    reference backend, when the dispatcher lets it stand in, also takes int32 and bool)."""
    if dtype in _SCALAR_NAMES and launch.fallback_allowed(where):
        return
    if dtype not in SUPPORTED:
        raise RuntimeError(f'"{name}_{where}" not implemented for \'{_SCALAR_NAMES.get(dtype, dtype)}\': '
                           f"minikernel's kernels take float32, float64 and int64 tensors")


def _promote(x: Optional[np.dtype], y: Optional[np.dtype]) -> Optional[np.dtype]:
    if x is None or y is None:
        return x if y is None else y
    if x == y:
        return x
    if (x.kind == "f") == (y.kind == "f"):
        return np.promote_types(x, y)  # float32+float64 -> float64, int32+int64 -> int64, bool+int -> int
    return x if x.kind == "f" else y


def result_type(*operands: Operand) -> np.dtype:
    """PyTorch's type promotion for float32/float64/int64 tensors and Python numbers.

    Tensors with dimensions decide first, then 0-d tensors, then Python numbers
    (a float counts as float32, an int as int64) — but a lower class still lifts an
    integer result to floating point.

    Matches: ``torch.result_type(a, b)``.
    """
    dims = zero = wrapped = None
    for x in operands:
        if isinstance(x, Tensor):
            if x.ndim:
                dims = _promote(dims, x.dtype)
            else:
                zero = _promote(zero, x.dtype)
        else:
            wrapped = _promote(wrapped, int64 if isinstance(x, Integral) else float32)

    def combine(higher, lower):
        if higher is None:
            return lower
        if lower is None or higher.kind == "f":
            return higher
        return _promote(higher, lower) if lower.kind == "f" else higher

    return combine(dims, combine(zero, wrapped))


# ------------------------------------------- chapter 01's helpers, or the library's
def broadcast_shapes(where: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """The shapes broadcast together with your ``broadcast_shape`` (1.4), after the
    library's rule has refused shapes that do not broadcast with torch's message (the
    one error every path gives). Inside the dispatcher, while 1.4 is still its stub,
    the library's result stands in."""
    checked: tuple[int, ...] = ()
    for s in shapes:
        checked = tuple(shape_rules.broadcast_shape(checked, s))
    if launch.fallback_allowed(where) and jit.stub_error(S.broadcast_shape) is not None:
        return checked
    shape: tuple[int, ...] = ()
    for s in shapes:
        shape = tuple(S.broadcast_shape(shape, s))
    return shape


def stride0_view(t: Tensor, shape: Sequence[int]) -> Tensor:
    """``t`` viewed at the broadcast ``shape``: new and size-1 dims get stride 0 (the library's expand)."""
    shape = tuple(shape)
    lead = len(shape) - t.ndim
    strides = tuple(0 if d < lead or (t.shape[d - lead] == 1 and n != 1) else t.stride(d - lead)
                    for d, n in enumerate(shape))
    return t._with(shape, strides, t.storage_offset())


def broadcast_to(t: Tensor, shape: Sequence[int], where: str) -> Tensor:
    """``t.expand(*shape)`` with your ``expand_strides`` (1.6); inside the dispatcher, while
    1.6 is still its stub, the library's ``stride0_view`` stands in."""
    if tuple(t.shape) == tuple(shape):
        return t
    if launch.fallback_allowed(where) and jit.stub_error(S.expand_strides) is not None:
        return stride0_view(t, shape)
    return t._with(tuple(shape), S.expand_strides(t.shape, t.stride(), tuple(shape)), t.storage_offset())


def _can_cast(src: np.dtype, dst: np.dtype) -> bool:
    """Floating point results may not be written into integer outputs (torch.can_cast)."""
    return not (src.kind == "f" and dst.kind in "iub")


# ----------------------------------------------------------------- outputs
def _computed_header(t: Tensor, dtype: np.dtype) -> tuple[tuple, tuple]:
    """(shape, strides) of ``t`` as the computation sees it: torch first converts an input
    of another dtype into a copy (``t.to(dtype)``), whose strides decide the output's."""
    if t.dtype == dtype:
        return t.shape, t.stride()
    return t.shape, layout.copy_strides(t.shape, t.stride())


def empty(shape: Sequence[int], strides: Sequence[int], dtype: np.dtype, where: str) -> Tensor:
    """A new tensor on ``where`` with this header (values uninitialized)."""
    shape, strides = tuple(shape), tuple(strides)
    size = 1 + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) if math.prod(shape) else 0
    if where == "cuda":
        from numba import cuda

        storage = cuda.device_array(size, dtype=dtype)
    else:
        storage = np.empty(size, dtype=dtype)
    return Tensor(storage, shape, strides, 0)


def scalar_tensor(value: Number, dtype: np.dtype, where: str) -> Tensor:
    """A 0-d tensor holding a Python number (torch's "wrapped number")."""
    host = np.array([value], dtype=dtype)
    if where == "cuda":
        from numba import cuda

        return Tensor(cuda.to_device(host), (), (), 0)
    return Tensor(host, (), (), 0)


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _refuse_out_with_grad(name: str, out: Tensor, *inputs: Operand, inplace: bool) -> None:
    """``out=`` results are not recorded, so torch refuses them while any argument requires grad."""
    if inplace or not is_grad_enabled():
        return
    if any(isinstance(t, Tensor) and t.requires_grad for t in (out, *inputs)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           f"but one of the arguments requires grad.")


def check_out(name: str, out: Tensor, shape: Sequence[int], dtype: np.dtype, where: str,
              inputs: Sequence[Tensor], inplace: bool = False) -> None:
    """Refuse an ``out=`` (or in-place target) the kernel could not fill correctly, like torch."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): out must be a minikernel Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        if inplace:
            raise RuntimeError(f"output with shape {_shape_text(out.shape)} doesn't match the broadcast "
                               f"shape {_shape_text(shape)}")
        raise RuntimeError(f"{name}(): out= has shape {_shape_text(out.shape)} but the result has shape "
                           f"{_shape_text(shape)}; minikernel does not resize outputs, pass one of the "
                           "result's shape")
    if not _can_cast(dtype, out.dtype):
        raise RuntimeError(f"result type {_SCALAR_NAMES[dtype]} can't be cast to the desired output type "
                           f"{_SCALAR_NAMES.get(out.dtype, out.dtype)}")
    _check_dtype(name, where, out.dtype)
    check_overlap(out, inputs)


# -------------------------------------------------------------- element-wise
def unary(name: str, a: Tensor, out: Optional[Tensor] = None, inplace: bool = False) -> Tensor:
    """``neg``, ``exp``, ``log``, ``relu``, ``sigmoid`` (and ``copy``): one input, the map kernel."""
    _check_operand(a, name)
    if out is not None:
        _refuse_out_with_grad(name, out, a, inplace=inplace)
    where = device_of(name, a, out)
    _check_dtype(name, where, a.dtype)
    dtype = float32 if (name in _FLOAT_RESULT and a.dtype.kind != "f") else a.dtype
    launch.check_runnable(where, "map")
    if out is None:
        out = empty(a.shape, layout.output_strides(a.shape, [_computed_header(a, dtype)]), dtype, where)
    else:
        check_out(name, out, a.shape, dtype, where, [a], inplace)
    launch.map_(UNARY[name], out, a)
    return out


def binary(name: str, a: Operand, b: Operand, out: Optional[Tensor] = None, inplace: bool = False) -> Tensor:
    """``add``, ``sub``, ``mul``, ``div``: two inputs broadcast together, the zip kernel."""
    _check_operand(a, name)
    _check_operand(b, name)
    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{name}(): at least one operand must be a minikernel Tensor")
    if out is not None:
        _refuse_out_with_grad(name, out, a, b, inplace=inplace)
    where = device_of(name, *tensors, out)
    for t in tensors:
        _check_dtype(name, where, t.dtype)
    dtype = result_type(a, b)
    if name == "div" and dtype.kind != "f":
        dtype = float32  # true division: integers give the default float dtype
    launch.check_runnable(where, "zip")
    a = a if isinstance(a, Tensor) else scalar_tensor(a, dtype, where)
    b = b if isinstance(b, Tensor) else scalar_tensor(b, dtype, where)
    shape = broadcast_shapes(where, a.shape, b.shape)
    if out is None:
        inputs = [_computed_header(a, dtype), _computed_header(b, dtype)]
        out = empty(shape, layout.output_strides(shape, inputs), dtype, where)
    else:
        check_out(name, out, shape, dtype, where, [a, b], inplace)
    launch.zip_(BINARY[name], out, broadcast_to(a, shape, where), broadcast_to(b, shape, where))
    return out


def contiguous(a: Tensor) -> Tensor:
    """``a`` if it is row-major contiguous, else a contiguous copy made by the map kernel."""
    if layout.is_contiguous(a.shape, a.stride()):
        return a
    return unary("copy", a, out=empty(a.shape, layout.contiguous_strides(a.shape), a.dtype, a.device.type))


def neg(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``-a``. Matches ``torch.neg(a, out=out)``."""
    return unary("neg", a, out)


def exp(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``e**a`` (float32 for int64 input). Matches ``torch.exp(a, out=out)``."""
    return unary("exp", a, out)


def log(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """Natural log, nan below 0 (float32 for int64 input). Matches ``torch.log(a, out=out)``."""
    return unary("log", a, out)


def relu(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``max(a, 0)``, NaN kept. Matches ``torch.relu(a)`` (torch has no out= for relu; minikernel does)."""
    return unary("relu", a, out)


def sigmoid(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``1 / (1 + e**-a)`` (float32 for int64 input). Matches ``torch.sigmoid(a, out=out)``."""
    return unary("sigmoid", a, out)


def add(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a + b`` with broadcasting and type promotion. Matches ``torch.add(a, b, out=out)``."""
    return binary("add", a, b, out)


def sub(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a - b``. Matches ``torch.sub(a, b, out=out)``."""
    return binary("sub", a, b, out)


def mul(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a * b``. Matches ``torch.mul(a, b, out=out)``."""
    return binary("mul", a, b, out)


def div(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a / b``, true division (float32 for two int64 inputs). Matches ``torch.div(a, b, out=out)``."""
    return binary("div", a, b, out)


# ---------------------------------------------------------------- reductions
def _identity(op: int, dtype: np.dtype):
    if op == SUM or dtype.kind == "b":
        return dtype.type(0)
    return dtype.type(-np.inf) if dtype.kind == "f" else dtype.type(np.iinfo(dtype).min)


def _reshaped(result: Tensor, shape, strides, offset: int) -> Tensor:
    """A new header over a result's own fresh memory: like ``_with``, but no view (nobody else
    holds that memory), so the caller gets a tensor of its own, as torch's results are."""
    return Tensor(result._storage, tuple(shape), tuple(strides), offset)


def _flat(a: Tensor) -> Tensor:
    """All of ``a``'s elements as one 1-D tensor: a strided view when the layout allows, else a copy."""
    shape, (strides,) = layout.iteration_layout(a.shape, a.stride())
    if len(shape) == 1:
        return a._with((a.numel(),), strides, a.storage_offset())
    copy = contiguous(a)
    return copy._with((a.numel(),), (1,), copy.storage_offset())


def _reduce(name: str, a: Tensor, dim: Union[None, int, Sequence[int]], keepdim: bool) -> Tensor:
    """Fold one dimension, several (one after another), or all (``dim=None``) with the reduce kernel."""
    _check_operand(a, name)
    if not isinstance(a, Tensor):
        raise TypeError(f"{name}() expects a minikernel Tensor, got {type(a).__name__}")
    if isinstance(dim, (tuple, list)):
        wrapped = [_wrap_dim(int(d), builtins.max(a.ndim, 1)) for d in dim]
        for d in wrapped:
            if wrapped.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = sorted(wrapped, reverse=True)
        if not dims:
            return _reduce(name, a, None, keepdim)
        for d in dims:  # the last first, so the other dims keep their numbers
            a = _reduce(name, a, d, True)
        if keepdim or not a.ndim:
            return a
        shape = tuple(n for i, n in enumerate(a.shape) if i not in dims)
        return _reshaped(a, shape, layout.contiguous_strides(shape), a.storage_offset())
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))):
        raise TypeError(f"{name}(): minikernel reduces one dimension at a time: pass dim as an int, or "
                        f"nothing to reduce all elements; got {dim!r}")
    where = device_of(name, a)
    _check_dtype(name, where, a.dtype)
    op = REDUCE["max" if name in ("amax", "max") else "sum"]
    dtype = int64 if op == SUM and a.dtype.kind in "biu" else a.dtype  # torch sums integers and bools as int64
    launch.check_runnable(where, "reduce")
    if dim is None:
        if op == MAX and a.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        flat = _flat(a) if a.numel() else a._with((0,), (1,), 0)
        out = empty((1,), (1,), dtype, where)
        launch.reduce_(op, _identity(op, dtype), out, flat, 0)
        shape = (1,) * a.ndim if keepdim else ()
        return _reshaped(out, shape, (1,) * len(shape), 0)
    d = _wrap_dim(int(dim), a.ndim)
    if op == MAX and a.ndim and a.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    kept = tuple(1 if i == d else n for i, n in enumerate(a.shape))
    out = empty(kept, layout.contiguous_strides(kept), dtype, where)
    launch.reduce_(op, _identity(op, dtype), out, a, d)
    if keepdim or a.ndim == 0:
        return out
    shape = kept[:d] + kept[d + 1:]
    return _reshaped(out, shape, layout.contiguous_strides(shape), 0)


def sum(a: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - torch's name
    """Sum of all elements, or along ``dim``. Matches ``torch.sum(a)`` / ``torch.sum(a, dim, keepdim)``."""
    return _reduce("sum", a, dim, keepdim)


def amax(a: Tensor, dim: Union[int, tuple] = (), keepdim: bool = False) -> Tensor:
    """Largest element (NaN if any), overall or along ``dim``. Matches ``torch.amax(a, dim, keepdim)``."""
    return _reduce("amax", a, None if dim in ((), None) else dim, keepdim)


#: ``torch.return_types.max``: what ``max(dim)`` returns.
MaxResult = namedtuple("max", ["values", "indices"])


def max(a: Tensor, dim: Optional[int] = None, keepdim: bool = False):  # noqa: A001 - torch's name
    """Largest element of ``a`` (``torch.max(a)``), or along ``dim`` the values and the
    index of each row's first maximum (``torch.max(a, dim, keepdim)``).

    The values come from the reduce kernel; the indices from the numpy reference
    backend (no chapter 02 kernel computes them).
    """
    if dim is None:
        return _reduce("max", a, None, keepdim)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"max(): dim must be an int, got {dim!r}")
    values = _reduce("max", a, int(dim), keepdim)
    d = _wrap_dim(int(dim), builtins.max(a.ndim, 1))
    where = device_of("max", a)
    indices = empty(values.shape, layout.contiguous_strides(values.shape), int64, where)
    if a.ndim:
        reference.apply(lambda x: np.argmax(x, axis=d, keepdims=True).reshape(values.shape), indices, a)
    else:
        reference.apply(lambda x: np.zeros((), np.int64), indices, a)
    return MaxResult(values, indices)


def mean(a: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Average: the reduce kernel's sum divided by the count (zip kernel). Matches ``torch.mean``."""
    _check_operand(a, "mean")
    if a.dtype.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating "
                           f"point or complex dtype. Got: {_SCALAR_NAMES.get(a.dtype, a.dtype)}")
    total = sum(a, dim, keepdim)
    dims = () if dim is None else (dim if isinstance(dim, (tuple, list)) else (dim,))
    count = a.numel() if not dims else (math.prod(a.shape[d] for d in {_wrap_dim(int(d), a.ndim) for d in dims})
                                           if a.ndim else 1)
    return binary("div", total, float(count), out=total, inplace=True)


# -------------------------------------------------------------------- matmul
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with broadcast batch dimensions. Matches ``torch.matmul(a, b)`` (``a @ b``).

    1-D operands are treated like torch: a vector on the left is a row ``(1, k)``, on
    the right a column ``(k, 1)``, and that dimension is removed from the result.
    """
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul(): both operands must be minikernel Tensors, got {type(a).__name__} "
                        f"and {type(b).__name__}")
    where = device_of("matmul", a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_C_NAMES.get(a.dtype, a.dtype)} != {_C_NAMES.get(b.dtype, b.dtype)}")
    _check_dtype("matmul", where, a.dtype)
    launch.check_runnable(where, "matmul")
    left = a if a.ndim >= 2 else a._with((1, a.shape[0]), (0, a.stride(0)), a.storage_offset())
    right = b if b.ndim >= 2 else b._with((b.shape[0], 1), (b.stride(0), 0), b.storage_offset())
    (n, k), (k2, m) = left.shape[-2:], right.shape[-2:]
    if k != k2:
        if a.ndim == 2 and b.ndim == 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
        raise RuntimeError(f"matmul: the last dimension of the first operand ({k}, shape {_shape_text(a.shape)}) "
                           f"must match the second-to-last of the second ({k2}, shape {_shape_text(b.shape)})")
    batch = broadcast_shapes(where, left.shape[:-2], right.shape[:-2])
    shape = (*batch, n, m)
    out = empty(shape, layout.contiguous_strides(shape), a.dtype, where)
    launch.matmul_(out, broadcast_to(left, (*batch, n, k), where), broadcast_to(right, (*batch, k, m), where))
    keep = [d for d in range(len(shape)) if not ((a.ndim == 1 and d == len(shape) - 2) or
                                                 (b.ndim == 1 and d == len(shape) - 1))]
    if len(keep) == len(shape):
        return out
    final = tuple(shape[d] for d in keep)
    return _reshaped(out, final, layout.contiguous_strides(final), 0)
