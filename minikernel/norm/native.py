"""Host side of LayerNorm: checks, the 2-D view, device dispatch, launches.

PyTorch's ``F.layer_norm`` ends in ``torch.native_layer_norm(input,
normalized_shape, weight, bias, eps) -> (out, mean, rstd)``, and autograd calls
``native_layer_norm_backward`` with the saved ``mean`` and ``rstd``. This module is
minikernel's version of both. Before a kernel runs it

1. checks the arguments with PyTorch's messages (``normalized_shape`` must be the
   trailing dimensions of ``input``; ``weight``/``bias`` must have exactly that shape);
2. views the input as a C-contiguous ``(rows, n)`` matrix — ``n`` is the product of
   ``normalized_shape``, ``rows`` of the leading dimensions — copying only when the
   input is not contiguous (PyTorch's kernel calls ``.contiguous()`` too);
3. allocates ``out`` (the input's shape) and ``mean``/``rstd`` (the leading
   dimensions followed by ``len(normalized_shape)`` ones, as PyTorch returns them);
4. dispatches on the device: your CPU kernels (5.4, 5.5) or GPU kernels (5.6, 5.7).

A layer without ``weight``/``bias`` gets ones/zeros, so one kernel serves both.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numpy as np

from .. import device as dev
from ..kernels.jit import Kernel
from ..kernels.layout import contiguous_strides, is_contiguous
from ..tensor import Tensor
from . import cpu, gpu
from .sizes import NORM_THREADS, WIDE_LOAD

ShapeArg = Union[int, Sequence[int]]
Stats = tuple[Tensor, Tensor, Tensor]  #: (out, mean, rstd) or (dx, dw, db)

KERNELS = {
    "cpu": {"forward": Kernel("5.4", cpu, "layer_norm_forward_cpu"),
            "backward": Kernel("5.5", cpu, "layer_norm_backward_cpu")},
    "cuda": {"forward": Kernel("5.6", gpu, "layer_norm_forward_gpu"),
             "backward": Kernel("5.7", gpu, "layer_norm_backward_gpu"),
             "param_grads": Kernel("5.7", gpu, "layer_norm_param_grads_gpu")},
}

__all__ = ["native_layer_norm", "native_layer_norm_backward", "layer_norm", "KERNELS"]


def _text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _normalized_shape(normalized_shape: ShapeArg) -> tuple[int, ...]:
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(normalized_shape, bool):
        return (int(normalized_shape),)
    try:
        return tuple(int(s) for s in normalized_shape)
    except TypeError:
        raise TypeError(f"normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}") from None


def check_inputs(input: Tensor, normalized_shape: ShapeArg, weight: Optional[Tensor],
                 bias: Optional[Tensor]) -> tuple[tuple[int, ...], int, int]:
    """PyTorch's ``_check_layer_norm_inputs``: returns ``(normalized_shape, rows, n)``."""
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"layer_norm(): {name} must be a minikernel Tensor (or None for weight/bias), got "
                            f"{type(t).__name__}; wrap a torch tensor with Tensor.from_torch(t)")
    shape = _normalized_shape(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                           "one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{_text(t.shape)} and normalized_shape = {_text(shape)}")
    if input.ndim < len(shape) or input.shape[input.ndim - len(shape):] != shape:
        raise RuntimeError(f"Given normalized_shape={_text(shape)}, expected input with shape "
                           f"[*, {_text(shape)[1:-1]}], but got input of size{_text(input.shape)}")
    if input.dtype.kind != "f":
        raise RuntimeError(f"layer_norm is implemented for float32 and float64 inputs, not {input.dtype}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"layer_norm: {name} has dtype {t.dtype} but input has {input.dtype}; "
                               f"convert it (e.g. {name}.to(...)) so that all three match")
        if t is not None and t.device != input.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found {name} on "
                               f"{t.device} and input on {input.device}")
    n = math.prod(shape)
    return shape, math.prod(input.shape[:input.ndim - len(shape)]), n


# ------------------------------------------------------------ 2-D arrays
def _matrix(t: Tensor, rows: int, n: int):
    """``t``'s elements as a C-contiguous ``(rows, n)`` array on its device (a view when ``t`` is
    contiguous and, on the GPU, starts on a 16-byte boundary)."""
    return _flat(t, rows * n).reshape(rows, n)


def _flat(t: Tensor, size: int):
    """``t``'s ``size`` elements as a 1-D C-contiguous array on its device (see ``_matrix``)."""
    start = t.storage_offset()
    # The reference GPU kernel loads 16 bytes at once, which must start on a multiple of
    # 16: a GPU tensor that starts elsewhere is packed like a strided one.
    aligned = not t.is_cuda or (start * t._storage.dtype.itemsize) % WIDE_LOAD == 0
    if is_contiguous(t.shape, t.stride()) and aligned:  # layout's check: no chapter 01 exercise needed
        # (each slice of a numba device array is a new array object that looks up the CUDA
        # context: a whole storage is passed as it is)
        return t._storage if start == 0 and t._storage.size == size else t._storage[start:start + size]
    if t.is_cuda:  # a strided GPU tensor: pack it on the host (copying is not this chapter's topic)
        from numba import cuda

        return cuda.to_device(np.ascontiguousarray(t.cpu()._numpy_view()).reshape(-1))
    return np.ascontiguousarray(t._numpy_view()).reshape(-1)


def _vector(t: Optional[Tensor], n: int, fill: float, like: Tensor):
    """``weight``/``bias`` as an ``(n,)`` array; ones/zeros when the layer has none."""
    if t is not None:
        return _flat(t, n)
    values = np.full(n, fill, like.dtype)
    if like.is_cuda:
        from numba import cuda

        return cuda.to_device(values)
    return values


def _empty(shape: Sequence[int], like: Tensor) -> Tensor:
    shape = tuple(shape)
    size = math.prod(shape)
    if like.is_cuda:
        from numba import cuda

        storage = cuda.device_array(size, dtype=like.dtype)
    else:
        storage = np.empty(size, dtype=like.dtype)
    return Tensor(storage, shape, contiguous_strides(shape), 0)


def _fill(t: Tensor, value: float) -> Tensor:
    if t.is_cuda:
        t._storage.copy_to_device(np.full(t._storage.size, value, t.dtype))
    else:
        t._storage[...] = value
    return t


def _stat_shape(input: Tensor, normalized: tuple[int, ...]) -> tuple[int, ...]:
    return input.shape[:input.ndim - len(normalized)] + (1,) * len(normalized)


# ---------------------------------------------------------------- forward
def native_layer_norm(input: Tensor, normalized_shape: ShapeArg, weight: Optional[Tensor],
                      bias: Optional[Tensor], eps: float) -> Stats:
    """LayerNorm over the trailing ``normalized_shape`` dimensions: ``(out, mean, rstd)``.

    Args:
        input (Tensor): float32 or float64, on "cpu" or "cuda", any strides.
        normalized_shape (int or sequence of ints): the trailing dimensions to normalize over.
        weight (Tensor, optional): shape ``normalized_shape``; None means ones.
        bias (Tensor, optional): shape ``normalized_shape``; None means zeros.
        eps (float): added to the biased variance before the square root.

    Returns:
        ``out`` (the input's shape, contiguous), ``mean`` and ``rstd = 1/sqrt(var + eps)``,
        each of shape ``input.shape[:-len(normalized_shape)] + (1,) * len(normalized_shape)``.

    Example::

        >>> out, mean, rstd = native_layer_norm(Tensor.from_torch(torch.randn(2, 3, 4)), (3, 4), None, None, 1e-5)
        >>> mean.shape
        (2, 1, 1)

    Matches: ``torch.native_layer_norm(input, normalized_shape, weight, bias, eps)``.
    """
    normalized, rows, n = check_inputs(input, normalized_shape, weight, bias)
    where = input.device.type
    out = _empty(input.shape, input)
    mean, rstd = _empty(_stat_shape(input, normalized), input), _empty(_stat_shape(input, normalized), input)
    if rows == 0:  # nothing to compute: no kernel runs (as in PyTorch)
        return out, mean, rstd
    if n == 0:  # torch: mean 0, rstd nan (0/0) for an empty group
        return out, _fill(mean, 0.0), _fill(rstd, np.nan)
    kernel = KERNELS[where]["forward"]
    kernel.check_implemented()
    args = (_matrix(input, rows, n), _vector(weight, n, 1.0, input), _vector(bias, n, 0.0, input), float(eps),
            out._storage.reshape(rows, n), mean._storage, rstd._storage)
    if where == "cpu":
        kernel(*args, work=rows * n)
    else:
        kernel.launch(rows, NORM_THREADS, *args)
    return out, mean, rstd


def layer_norm(input: Tensor, normalized_shape: ShapeArg, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """The normalized output only (no autograd). Matches ``torch.layer_norm`` / ``F.layer_norm``'s value."""
    return native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


# --------------------------------------------------------------- backward
def native_layer_norm_backward(grad_out: Tensor, input: Tensor, normalized_shape: ShapeArg, mean: Tensor,
                               rstd: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                               output_mask: Sequence[bool] = (True, True, True)
                               ) -> tuple[Optional[Tensor], Optional[Tensor], Optional[Tensor]]:
    """Gradients ``(dx, dw, db)`` of LayerNorm, from the forward's saved ``mean`` and ``rstd``.

    ``dx = rstd/n · (n·g - Σg - x̂·Σ(g·x̂))`` per group with ``g = grad_out · weight``,
    ``dw = Σ grad_out · x̂`` and ``db = Σ grad_out`` over the leading dimensions.
    ``output_mask`` says which of the three are wanted; the others are None (and
    ``dw``/``db`` are None when the layer has no ``weight``/``bias``).

    Matches: ``torch.ops.aten.native_layer_norm_backward(grad_out, input,
    normalized_shape, mean, rstd, weight, bias, output_mask)``.
    """
    normalized, rows, n = check_inputs(input, normalized_shape, weight, bias)
    if not isinstance(grad_out, Tensor) or grad_out.shape != input.shape:
        raise RuntimeError(f"native_layer_norm_backward: grad_out must be a Tensor of the input's shape "
                           f"{_text(input.shape)}, got {getattr(grad_out, 'shape', type(grad_out).__name__)}")
    if grad_out.dtype != input.dtype or grad_out.device != input.device:
        raise RuntimeError("native_layer_norm_backward: grad_out must have the input's dtype and device")
    stats = _stat_shape(input, normalized)
    for name, t in (("mean", mean), ("rstd", rstd)):
        if not isinstance(t, Tensor) or math.prod(t.shape) != rows or t.dtype != input.dtype:
            raise RuntimeError(f"native_layer_norm_backward: {name} must be the forward's, of shape "
                               f"{_text(stats)} and dtype {input.dtype}")
    want_dx, want_dw, want_db = (bool(m) for m in output_mask)
    where = input.device.type
    table = KERNELS[where]
    dx = _empty(input.shape, input)
    dw = _empty(normalized, input)
    db = _empty(normalized, input)
    if rows == 0 or n == 0:
        _fill(dw, 0.0)
        _fill(db, 0.0)
    else:
        table["backward"].check_implemented()
        dy2, x2 = _matrix(grad_out, rows, n), _matrix(input, rows, n)
        m1, r1 = _matrix(mean, 1, rows).reshape(rows), _matrix(rstd, 1, rows).reshape(rows)
        w1 = _vector(weight, n, 1.0, input)
        dx2, dw1, db1 = dx._storage.reshape(rows, n), dw._storage, db._storage
        if where == "cpu":
            table["backward"](dy2, x2, m1, r1, w1, dx2, dw1, db1, work=rows * n)
        else:
            table["backward"].launch(rows, NORM_THREADS, dy2, x2, m1, r1, w1, dx2)
            table["param_grads"].launch((n + NORM_THREADS - 1) // NORM_THREADS, NORM_THREADS,
                                        dy2, x2, m1, r1, dw1, db1)
    return (dx if want_dx else None, dw if want_dw and weight is not None else None,
            db if want_db and bias is not None else None)
