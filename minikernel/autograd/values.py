"""How the autograd layer gets values: from the backend, below the autograd keys.

As in PyTorch, a Function's forward computes with the same kernels every other
call uses: ``compute("add", a, b)`` calls ``aten::add`` through the dispatcher
with the autograd keys excluded (PyTorch's ``AutoDispatchBelowADInplaceOrView``),
so it reaches the CPU backend — your chapter 02 kernel, or the numpy reference
backend while that kernel is unfinished (``kernels/reference.py``). One compute
path per op, one set of shape errors.

The factories (``zeros``, ``ones``, ``full``) and ``write`` (an in-place op's result
stored with ``aten::copy_``) go through the dispatcher too. The other helpers turn
numpy arrays into Tensors (a fresh contiguous storage, or a header over an existing
storage for views), for the few formulas that still work on numpy arrays
(advanced indexing, ``prod``'s backward).
"""
from __future__ import annotations

from numbers import Number
from typing import Sequence, Union

import numpy as np

from .. import dispatch
from ..aten import shape_rules
from ..aten.tensor_iterator import result_type, scalar_tensor
from ..dispatch import DispatchKey
from ..kernels.layout import contiguous_strides
from ..tensor import _TORCH_NAMES, Tensor, _sizes

Operand = Union[Tensor, int, float]


def compute(name: str, *args, **kwargs) -> Tensor:
    """``aten::<name>(*args)`` on the backend: the dispatcher below Autograd and ADInplaceOrView."""
    with dispatch.exclude_keys(DispatchKey.Autograd, DispatchKey.ADInplaceOrView):
        return dispatch.registry.get(name)(*args, **kwargs)


def call(name: str, *args) -> Tensor:
    """``aten::<name>(*args)`` from the top of the key set: a mode sees it, Autograd records it."""
    return dispatch.registry.get(name)(*args)


def array(t: Tensor) -> np.ndarray:
    """A numpy array over ``t``'s memory (no copy)."""
    if t.is_cuda:
        raise RuntimeError("minikernel's autograd runs on the CPU: move the tensor with .cpu() first")
    return t._numpy_view()


def wrap(values: np.ndarray, dtype: np.dtype | None = None) -> Tensor:
    """A new contiguous Tensor holding ``values`` (cast to ``dtype`` if given)."""
    values = np.asarray(values)
    if dtype is not None and values.dtype != dtype:
        values = values.astype(dtype)
    if values.dtype not in _TORCH_NAMES:
        raise TypeError(f"unsupported dtype {values.dtype}")
    flat = np.array(values, order="C", copy=True).reshape(-1)
    return Tensor(flat, values.shape, contiguous_strides(values.shape), 0)


def view_of(base: Tensor, values: np.ndarray) -> Tensor:
    """A Tensor header over ``base``'s storage for a numpy view of it (shares memory and version)."""
    storage = base._storage
    item = storage.itemsize
    if values.size == 0:
        out = Tensor(storage, values.shape, contiguous_strides(values.shape), 0)
    else:
        start = values.__array_interface__["data"][0] - storage.__array_interface__["data"][0]
        out = Tensor(storage, values.shape, tuple(s // item for s in values.strides), start // item)
    out._make_view_of(base)
    return out


def result_dtype(*operands: Operand) -> np.dtype:
    """PyTorch's type promotion (``torch.result_type``), as the kernels compute it (``aten/tensor_iterator.py``)."""
    return result_type(*operands)


def operand(x: Operand, dtype: np.dtype) -> Tensor:
    """A Tensor for ``x``; a Python number becomes a 0-d tensor of ``dtype``
    (PyTorch "wraps" scalars the same way; such a tensor never requires grad)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, bool) or not isinstance(x, Number):
        raise TypeError(f"expected a minikernel Tensor or a Python number, got {type(x).__name__}")
    return scalar_tensor(x, dtype, "cpu")


#: PyTorch's broadcasting rule and error (``aten/shape_rules.py``, shared with the kernel path).
broadcast_shape = shape_rules.broadcast_shape


def stand_in(shape: Sequence[int], dtype: np.dtype) -> Tensor:
    """Zeros of ``shape`` over one element (all strides 0): a placeholder for a tensor
    a backward formula receives but whose gradient nobody asked for."""
    return Tensor(np.zeros(1, dtype), tuple(shape), (0,) * len(shape), 0)


def zeros_like(x: Tensor) -> Tensor:
    return zeros(x.shape, dtype=x.dtype)


def ones_like(x: Tensor) -> Tensor:
    return ones(x.shape, dtype=x.dtype)


def zeros(*shape: int, dtype=np.float32) -> Tensor:
    """``zeros(2, 3)`` or ``zeros((2, 3))``, like torch: ``aten::zeros`` on the CPU backend."""
    return compute("zeros", _sizes(shape), dtype=dtype)


def ones(*shape: int, dtype=np.float32) -> Tensor:
    return compute("ones", _sizes(shape), dtype=dtype)


def full(shape: Sequence[int], value, dtype: np.dtype) -> Tensor:
    return compute("full", tuple(shape), value, dtype=dtype)


def write(x: Tensor, values: Tensor) -> None:
    """Store ``values`` into ``x``'s memory (cast to its dtype) with ``aten::copy_`` below Autograd:
    the backend writes, and ADInplaceOrView bumps ``x``'s version once, as for any in-place op."""
    with dispatch.exclude_keys(DispatchKey.Autograd):
        dispatch.registry.get("copy_")(x, values)
