"""Views, the contiguous copy, and joins (ATen's ``TensorShape.cpp``): the CPU/CUDA backend
kernels of ``aten::view``, ``aten::permute``, ``aten::expand``, ``aten::select.int``,
``aten::cat``, ...

**Views with a chapter 01 exercise** (``view``, ``reshape``, ``permute``, ``transpose``,
``t``, ``expand``, ``contiguous``). A view is a new header over the same memory. Each
kernel computes that header with your chapter 01 code (``infer_size``/``view_strides``,
``permute_strides``, ``expand_strides``; ``contiguous`` for the copy). Autograd's view
Functions call the same kernels through the dispatcher, so there is one path. Inside the
dispatcher, while the exercise a kernel needs is still its stub, numpy computes the same
header instead (``numpy_header``: numpy's views follow torch's rules), so later chapters
run whether or not chapter 01 is finished; chapter 01 and its exercise tests switch that
off (``launch.set_reference_fallback``).

**Views with no chapter 01 exercise** (``select``, ``slice``, ``squeeze``, ``unsqueeze``,
``diagonal``, ``unbind``, ``split``, ``split_with_sizes``, ``unfold``): numpy's view of the
input's header (``numpy_header``: no data is read, so any device works). The Autograd
kernel records them (``autograd/shape_ops.py``) and calls these kernels below Autograd
for the values, and again for their backward (zeros, the same view, ``copy_``): one
compute path per op. ``narrow``, ``flatten``, ``unflatten`` and ``chunk`` are
compositions of these and ``view``/``reshape``, as in PyTorch (``Tensor`` methods), so a
dispatch mode sees what torch's sees.

**Joins** (``cat``, ``stack``): they check what torch checks (a non-empty list, equal
sizes off the joined dim, one number of dimensions), promote the dtypes as
``torch.result_type`` does over the list, and write a new contiguous tensor on the numpy
reference backend, CPU only. The graph (``CatBackward0``, ``StackBackward0``) is
``autograd/joining.py``'s.

The shape checks and their messages are ``shape_rules.py``'s on every path; indexing
(``x[1, ::2]``) is ``indexing.py``'s.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from .. import strides as S
from ..kernels import jit, launch
from ..kernels.layout import contiguous_strides
from ..tensor import Tensor, _wrap_dim
from . import shape_rules as R
from .tensor_iterator import result_type
from .unary_ops import contiguous as map_contiguous


# ------------------------------------------ views with a chapter 01 exercise
def _stand_in(*exercises: Callable) -> bool:
    """Whether numpy computes the header: inside the dispatcher, and one of ``exercises`` is a stub."""
    return launch.stand_in_allowed() and any(jit.stub_error(fn) is not None for fn in exercises)


def numpy_header(x: Tensor, fn: Callable[[np.ndarray], np.ndarray]) -> Tensor:
    """``x`` viewed through numpy's ``fn``: computed on a header over one element (no data is
    read), so it works for a tensor on any device."""
    item = x.dtype.itemsize
    buffer = np.zeros(1, x.dtype)
    array = np.lib.stride_tricks.as_strided(buffer, x.shape, tuple(s * item for s in x.stride()))
    out = fn(array)
    moved = out.__array_interface__["data"][0] - buffer.__array_interface__["data"][0]
    return x._with(out.shape, tuple(s // item for s in out.strides), x.storage_offset() + moved // item)


def view(x: Tensor, shape: Sequence[int]) -> Tensor:
    """``x.view(*shape)``: the same memory read in another shape, if the strides allow it."""
    shape = R.infer_shape(tuple(shape), x.numel())
    if _stand_in(S.infer_size, S.view_strides):
        try:
            return numpy_header(x, lambda a: np.reshape(a, shape, copy=False))
        except ValueError:
            raise RuntimeError(R.VIEW_NOT_POSSIBLE) from None
    new_shape = S.infer_size(shape, x.numel())
    new_strides = S.view_strides(x.shape, x.stride(), new_shape)
    if new_strides is None:
        raise RuntimeError(R.VIEW_NOT_POSSIBLE)
    return x._with(new_shape, new_strides)


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """A view when the strides allow one, else a view of a contiguous copy (like torch)."""
    try:
        return view(x, shape)
    except RuntimeError as err:
        if str(err) != R.VIEW_NOT_POSSIBLE:
            raise
    out = view(contiguous(x), shape)
    out._base = None  # a view of a private copy is no view of x: torch's _unsafe_view isn't one either
    return out


def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    dims = R.check_permute(tuple(dims), x.ndim)
    if _stand_in(S.permute_strides):
        return numpy_header(x, lambda a: np.transpose(a, dims))
    shape, strides = S.permute_strides(x.shape, x.stride(), dims)
    return x._with(shape, strides)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    if x.ndim == 0:
        return x._with(x.shape, x.stride())  # a new view (torch's transpose never returns self)
    dim0, dim1 = _wrap_dim(dim0, x.ndim), _wrap_dim(dim1, x.ndim)
    order = list(range(x.ndim))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    return permute(x, order)


def t(x: Tensor) -> Tensor:
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return transpose(x, 0, 1) if x.ndim == 2 else x._with(x.shape, x.stride())  # a 1-d t() is a new view


def expand(x: Tensor, sizes: Sequence[int]) -> Tensor:
    shape = R.expand_shape(x.shape, tuple(sizes), x.type())  # torch's errors; -1 resolved
    if _stand_in(S.expand_strides):
        return numpy_header(x, lambda a: np.broadcast_to(a, shape))
    return x._with(shape, S.expand_strides(x.shape, x.stride(), tuple(sizes)))


def contiguous(x: Tensor) -> Tensor:
    """``x`` if row-major contiguous, else a row-major copy (your ``contiguous``, 1.7; on the GPU
    the map kernel's copy, exercise 2.6)."""
    if x.is_contiguous():
        return x
    if x.is_cuda:
        return map_contiguous(x)
    if _stand_in(S.contiguous):
        flat = np.ascontiguousarray(x._numpy_view()).reshape(-1)
    else:
        flat = S.contiguous(x._storage, x.shape, x.stride(), x.storage_offset())
    return Tensor(flat, x.shape, contiguous_strides(x.shape), 0)


def as_strided(x: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset=None) -> Tensor:
    """A header of ``size`` and ``stride`` over ``x``'s storage, at ``storage_offset`` (``x``'s
    own when None). Matches ``torch.as_strided``."""
    return x._with(size, stride, storage_offset)


# ------------------------------------------ views with no chapter 01 exercise
def _at(dim: int, index) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` that indexes dimension ``dim`` with ``index`` (an int or a slice)."""
    return lambda a: a[(slice(None),) * dim + (index, Ellipsis)]


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """``x.select(dim, index)``: drop ``dim``, keeping position ``index`` (``x[..., index, ...]``)."""
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = R.wrap_dim(dim, x.ndim)
    size = x.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension "
                         f"{dim}")
    return numpy_header(x, _at(dim, index % size if size else index))


def slice_(x: Tensor, dim: int = 0, start: Optional[int] = None, end: Optional[int] = None,
           step: int = 1) -> Tensor:
    """``aten::slice.Tensor``: positions ``start:end:step`` of ``dim`` (clamped like Python's slices)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return numpy_header(x, _at(R.wrap_dim(dim, x.ndim), slice(start, end, step)))


def squeeze(x: Tensor) -> Tensor:
    """Remove every size-1 dim."""
    return _squeezed(x, R.squeeze_dims(x.shape, None))


def squeeze_dim(x: Tensor, dim: int) -> Tensor:
    """Remove ``dim`` if its size is 1 (else a view of all of ``x``)."""
    return _squeezed(x, R.squeeze_dims(x.shape, dim))


def squeeze_dims(x: Tensor, dim: Sequence[int]) -> Tensor:
    """Remove the size-1 dims among ``dim``."""
    return _squeezed(x, R.squeeze_dims(x.shape, tuple(dim)))


def _squeezed(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    return numpy_header(x, lambda a: np.squeeze(a, axis=dims) if dims else a[...])


def alias(x: Tensor) -> Tensor:
    """A new header over the same memory, same shape and strides (``x[...]``, ``x[:]``)."""
    return numpy_header(x, lambda a: a)


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """A new size-1 dim at position ``dim`` (which may be ``x.ndim``)."""
    dim = R.unsqueeze_dim(dim, x.ndim)
    shape, strides = x.shape, x.stride()
    stride = 1 if dim == x.ndim else shape[dim] * strides[dim]  # torch's rule (numpy's differs at size 0 and 1)
    return x._with(shape[:dim] + (1,) + shape[dim:], strides[:dim] + (stride,) + strides[dim:])


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, moved to the last dim (``torch.diagonal``)."""
    d1, d2 = R.wrap_dim(dim1, x.ndim), R.wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return numpy_header(x, lambda a: np.diagonal(a, offset, d1, d2))


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim`` (``torch.unbind``)."""
    if x.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = R.wrap_dim(dim, x.ndim)
    return tuple(numpy_header(x, _at(dim, i)) for i in range(x.shape[dim]))


def _pieces(x: Tensor, dim: int, sizes: Sequence[int]) -> tuple[Tensor, ...]:
    starts = np.cumsum([0, *sizes[:-1]])
    return tuple(numpy_header(x, _at(dim, slice(int(s), int(s) + n))) for s, n in zip(starts, sizes))


def split(x: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``aten::split.Tensor``: pieces of ``split_size`` along ``dim``, the last maybe smaller."""
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = R.wrap_dim(dim, x.ndim)
    return _pieces(x, dim, R.split_sizes(x.shape[dim], split_size, dim))


def split_with_sizes(x: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of the given sizes along ``dim``."""
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = R.wrap_dim(dim, x.ndim)
    return _pieces(x, dim, R.split_sizes(x.shape[dim], list(split_sizes), dim))


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim
    (``torch.Tensor.unfold``): windows that overlap share memory, so the result names an element
    several times."""
    dim = R.wrap_dim(dimension, x.ndim)
    length = x.shape[dim] if x.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if x.ndim == 0:
        return x._with((size,), (1,))
    stride = x.stride()[dim]
    shape = x.shape[:dim] + ((length - size) // step + 1,) + x.shape[dim + 1:] + (size,)
    strides = x.stride()[:dim] + (stride * step,) + x.stride()[dim + 1:] + (stride,)
    return x._with(shape, strides)


# ------------------------------------------------------------------- joins
def _tensors(name: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {list(tensors).index(t)} in argument 0, but got "
                            f"{type(t).__name__}")
    if any(t.is_cuda for t in tensors):
        raise RuntimeError(f"{name}(): minikernel joins cpu tensors only; move them with .cpu() first")
    return list(tensors)


def _wrap(values: np.ndarray) -> Tensor:
    flat = np.array(values, order="C").reshape(-1)
    return Tensor(flat, values.shape, contiguous_strides(values.shape), 0)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors one after another along ``dim``. Matches ``torch.cat`` (1-d empty tensors are
    skipped, as torch's legacy rule allows)."""
    tensors = _tensors("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    dtype = result_type(*tensors)
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    first = kept[0]
    d = R.wrap_dim(dim, first.ndim)
    for i, t in enumerate(tensors):
        if t.ndim == 1 and t.shape[0] == 0:
            continue
        if t.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {t.ndim}")
        for k, (a, b) in enumerate(zip(first.shape, t.shape)):
            if k != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but "
                                   f"got size {b} for tensor number {i} in the list.")
    return _wrap(np.concatenate([t.to_numpy().astype(dtype) for t in kept], axis=d))


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors side by side along a new dimension ``dim``. Matches ``torch.stack``."""
    tensors = _tensors("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = R.wrap_dim(dim, tensors[0].ndim + 1)
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    dtype = result_type(*tensors)
    return _wrap(np.stack([t.to_numpy().astype(dtype) for t in tensors], axis=d))
