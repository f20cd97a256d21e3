"""The steps every operator shares, between ``x + y`` and the kernel: PyTorch's
``TensorIterator`` (``aten/src/ATen/TensorIterator.cpp``) and the checks around it.

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

The operators that take these steps sit beside this module, named after ATen's
files: ``unary_ops.py`` and ``binary_ops.py`` (the map and zip kernels), ``reduce_ops.py``,
``linalg.py`` (matmul), ``tensor_compare.py``. Each comes as PyTorch's three variants:
functional (``add(a, b)``), ``out=`` (``add(a, b, out=c)``, the workhorse) and in-place
(``a.add_(b)``, which is ``add(a, b, out=a)``).

An operator with no chapter 02 kernel takes the same steps up to the allocation and then
computes on the numpy reference backend (``kernels/reference.py``, CPU only):
``reference_pointwise``.
"""
from __future__ import annotations

import builtins
import math
from numbers import Integral, Real
from typing import Callable, Optional, Sequence, Union

import numpy as np

from .. import device as dev, strides as S
from .._C.grad_mode import is_grad_enabled
from ..kernels import jit, launch, layout, reference
from ..numba_setup import cuda
from ..tensor import _SCALAR_NAMES, Tensor, float32, int64
from . import shape_rules
from .memory_overlap import check_overlap

Number = Union[int, float]


Operand = Union[Tensor, int, float]


SUPPORTED = launch.KERNEL_DTYPES  # float32, float64, int64


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
        storage = cuda.device_array(size, dtype=dtype)
    else:
        storage = np.empty(size, dtype=dtype)
    return Tensor(storage, shape, strides, 0)


def scalar_tensor(value: Number, dtype: np.dtype, where: str) -> Tensor:
    """A 0-d tensor holding a Python number (torch's "wrapped number")."""
    host = np.array([value], dtype=dtype)
    if where == "cuda":
        return Tensor(cuda.to_device(host), (), (), 0)
    return Tensor(host, (), (), 0)


def _reshaped(result: Tensor, shape, strides, offset: int) -> Tensor:
    """A new header over a result's own fresh memory: like ``_with``, but no view (nobody else
    holds that memory), so the caller gets a tensor of its own, as torch's results are."""
    return Tensor(result._storage, tuple(shape), tuple(strides), offset)


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


# ------------------------------------------------ the numpy reference backend
def reference_pointwise(name: str, fn: Callable, dtype: np.dtype, *operands: Operand, compute_dtype=None) -> Tensor:
    """Broadcast ``operands``, allocate the result (``dtype``), then ``fn`` on the reference backend."""
    for x in operands:
        _check_operand(x, name)
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{name}(): at least one operand must be a minikernel Tensor")
    where = device_of(name, *tensors)
    inputs = [x if isinstance(x, Tensor) else scalar_tensor(x, compute_dtype or dtype, where) for x in operands]
    shape: tuple = ()
    for t in inputs:  # the library's rule (no exercise of yours runs here)
        shape = tuple(shape_rules.broadcast_shape(shape, t.shape))
    headers = [_computed_header(t, t.dtype) for t in inputs]
    out = empty(shape, layout.output_strides(shape, headers), dtype, where)
    cast = compute_dtype or dtype
    reference.apply(lambda *xs: fn(*(x.astype(cast, copy=False) for x in xs)), out,
                    *(stride0_view(t, shape) for t in inputs))
    return out
