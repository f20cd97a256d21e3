"""Chapter 01: how a shape, strides and an offset address a flat storage.

A tensor is a *header* (shape, strides, storage offset) over a flat *storage*.
Element ``index = (i0, i1, ...)`` lives at storage position::

    offset + i0 * strides[0] + i1 * strides[1] + ...

Every function here is an exercise; the Tensor methods in ``tensor.py`` call them,
so your code is what makes ``view``, ``permute``, ``expand`` and slicing work.
The reference for each is in ``solutions/strides.py`` (switch one on with
``MINIKERNEL_SOLUTIONS=1.2`` if you are stuck and want to go on).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .course.exercise import exercise

Shape = tuple[int, ...]      #: sizes of each dimension, e.g. (2, 3)
Strides = tuple[int, ...]    #: storage steps per dimension, e.g. (3, 1)
Index = tuple[int, ...]      #: one multi-index, e.g. (1, 2)
Storage = np.ndarray         #: flat 1-D numpy array holding the elements


@exercise("1.1")
def contiguous_strides(shape: Sequence[int]) -> Strides:
    """Row-major (C-order) strides for ``shape``.

    The last dimension has stride 1; each earlier one steps over a whole row of
    the later ones: ``strides[i] = strides[i+1] * max(shape[i+1], 1)``.
    (A size-0 dimension counts as 1 here, as in PyTorch; a 0-d shape ``()`` has
    strides ``()``.) Returns a tuple.

    Matches: ``torch.empty(shape).stride()``, e.g. (2, 3, 4) -> (12, 4, 1).
    """
    # TODO(1.1): ≈5 lines
    raise NotImplementedError("exercise 1.1 (contiguous_strides) is not implemented yet")


@exercise("1.2")
def index_to_position(index: Sequence[int], strides: Sequence[int], offset: int = 0) -> int:
    """Storage position of a multi-index: ``offset + sum(index[i] * strides[i])``.

    Matches: ``torch.as_strided(storage, shape, strides, offset)[index]`` is
    ``storage[index_to_position(index, strides, offset)]``.
    """
    # TODO(1.2): ≈3 lines
    raise NotImplementedError("exercise 1.2 (index_to_position) is not implemented yet")


@exercise("1.3")
def to_index(ordinal: int, shape: Sequence[int]) -> Index:
    """The multi-index of the ``ordinal``-th element in row-major order.

    The inverse of counting 0, 1, 2, ... through ``shape`` with the last
    dimension fastest: peel dimensions off from the last, ``i_k = ordinal % shape[k]``,
    ``ordinal //= shape[k]``. Raise IndexError if ``ordinal`` is not in
    ``range(prod(shape))``.

    Matches: ``torch.unravel_index(torch.tensor(ordinal), shape)``.
    """
    # TODO(1.3): ≈7 lines
    raise NotImplementedError("exercise 1.3 (to_index) is not implemented yet")


@exercise("1.4")
def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> Shape:
    """The shape two tensors broadcast to.

    Align the shapes at their last dimension (pad the shorter one with 1s on the
    left); per dimension the sizes must be equal or one of them 1, and the result
    takes the other. Otherwise raise ``RuntimeError`` whose message names both whole
    shapes as tuples (``str(tuple(a))``, e.g. ``(2, 3)``: the test looks for them),
    the dimension and its two sizes. Size 0 against 1 broadcasts to 0.

    Matches: ``torch.broadcast_shapes(a, b)`` (and its RuntimeError).
    """
    # TODO(1.4): ≈10 lines
    raise NotImplementedError("exercise 1.4 (broadcast_shape) is not implemented yet")


@exercise("1.4")
def broadcast_index(big_index: Sequence[int], big_shape: Sequence[int], shape: Sequence[int]) -> Index:
    """The index into a tensor of ``shape`` that broadcasting reads for ``big_index``.

    ``shape`` broadcasts to ``big_shape``; drop ``big_index``'s extra leading
    dimensions and use 0 wherever ``shape`` has size 1.

    Matches: ``torch.broadcast_to(x, big_shape)[big_index] == x[broadcast_index(...)]``.
    """
    # TODO(1.4): ≈6 lines
    raise NotImplementedError("exercise 1.4 (broadcast_index) is not implemented yet")


@exercise("1.5")
def infer_size(shape: Sequence[int], numel: int) -> Shape:
    """``shape`` with its one ``-1`` (if any) replaced so the product is ``numel``.

    Raise ``RuntimeError`` like torch for: two -1s ("only one dimension can be
    inferred"), a size below -1 ("invalid shape dimension -2 at index 0 of shape [-2]"), a product that
    cannot match ("shape '[4, -1]' is invalid for input of size 6"), and a -1 next
    to a 0 ("cannot reshape tensor of 0 elements into shape [-1, 0] because the
    unspecified dimension size -1 can be any value and is ambiguous").

    Matches: ``torch.empty(numel).view(shape).shape`` and its errors.
    """
    # TODO(1.5): ≈15 lines
    raise NotImplementedError("exercise 1.5 (infer_size) is not implemented yet")


@exercise("1.5")
def view_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> Optional[Strides]:
    """The strides a ``view(new_shape)`` gets, or None where torch's view refuses.

    ``new_shape`` may hold one -1 (resolve it with ``infer_size``). A view never
    copies, so it must address the same elements in the same order. Walk both
    shapes from the right in *chunks*: a run of old dimensions that are laid out
    contiguously with respect to each other (``strides[d-1] == strides[d] * shape[d]``,
    size-1 dimensions ignored) can be split or merged freely, and the new
    dimensions that cover exactly that chunk get strides ``chunk_base_stride *``
    (product of the new sizes to their right within the chunk). If a new
    dimension would span two chunks, return None.

    Size-1 dimensions: an input dimension of size 1 never ends a chunk, whatever
    its stride (torch ignores that stride); a new dimension of size 1 gets the
    stride the rule above gives it (``chunk_base_stride`` times the product of the
    new sizes to its right within the chunk). A 0-d input (``shape == ()``, one
    element) views to any shape of one element with every stride 1.

    Tensors with zero elements: the same strides if ``new_shape == shape``,
    otherwise contiguous strides (size-0 counted as 1).

    Matches: ``torch.as_strided(x, shape, strides).view(new_shape).stride()``,
    or the "view size is not compatible" RuntimeError where this returns None.
    """
    # TODO(1.5): ≈25 lines
    raise NotImplementedError("exercise 1.5 (view_strides) is not implemented yet")


@exercise("1.6")
def permute_strides(shape: Sequence[int], strides: Sequence[int], dims: Sequence[int]) -> tuple[Shape, Strides]:
    """Shape and strides after ``permute(dims)``: dimension ``i`` of the result is
    dimension ``dims[i]`` of the input. ``dims`` is a permutation of range(ndim)
    (already checked and with negative dims resolved by ``Tensor.permute``).

    Matches: ``x.permute(dims).shape``, ``x.permute(dims).stride()``.
    """
    # TODO(1.6): ≈2 lines
    raise NotImplementedError("exercise 1.6 (permute_strides) is not implemented yet")


@exercise("1.6")
def expand_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> Strides:
    """Strides after ``expand(new_shape)``: no copy, repeated elements get stride 0.

    Align the shapes at the right and walk from the last dimension. -1 or an
    equal size keeps the stride; a size-1 dimension expanded to another size gets
    stride 0. A new leading dimension counts as size 1 with the stride it would
    have in a contiguous layout (the size times the stride of the dimension after
    it), so it too gets stride 0 unless its size is 1. A 0-d tensor expands to all
    zero strides. Raise ``RuntimeError`` like torch when ``new_shape`` has fewer
    dimensions than ``shape``, when a non-singleton dimension would change size,
    or when -1 is given for a new leading dimension.

    Matches: ``x.expand(new_shape).stride()`` and its errors.
    """
    # TODO(1.6): ≈15 lines
    raise NotImplementedError("exercise 1.6 (expand_strides) is not implemented yet")


@exercise("1.6")
def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether ``shape``/``strides`` is row-major contiguous, by torch's rule.

    A tensor with zero elements is contiguous. Otherwise, from the last dimension,
    each dimension of size != 1 must have stride equal to the product of the sizes
    after it; size-1 dimensions may have any stride.

    Matches: ``torch.as_strided(x, shape, strides).is_contiguous()``.
    """
    # TODO(1.6): ≈8 lines
    raise NotImplementedError("exercise 1.6 (is_contiguous) is not implemented yet")


@exercise("1.7")
def contiguous(storage: Storage, shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> Storage:
    """Copy the elements that (shape, strides, offset) address into a fresh flat
    storage in row-major order, so the result is addressed by
    ``contiguous_strides(shape)`` and offset 0.

    For each ordinal ``i`` in ``range(prod(shape))``:
    ``out[i] = storage[index_to_position(to_index(i, shape), strides, offset)]``.
    The result is 1-D, of length ``prod(shape)`` and of ``storage``'s dtype.

    Matches: ``torch.as_strided(t, shape, strides, offset).contiguous().flatten()``.
    """
    # TODO(1.7): ≈5 lines
    raise NotImplementedError("exercise 1.7 (contiguous) is not implemented yet")
