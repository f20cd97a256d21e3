"""Matrix products (ATen's ``LinearAlgebra.cpp``): ``matmul``, with broadcast batch
dimensions, on your chapter 02 matmul kernel (exercises 2.5, 2.9) after
``tensor_iterator.py``'s checks.
"""
from __future__ import annotations

from ..kernels import launch, layout
from ..tensor import Tensor, bool_, float32, float64, int32, int64
from .tensor_iterator import _check_dtype, _reshaped, _shape_text, broadcast_shapes, broadcast_to, device_of, empty

#: PyTorch's C type names, in matmul's messages.
_C_NAMES = {float32: "float", float64: "double", int64: "long int", int32: "int", bool_: "bool"}


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
