"""Shape rules and their error texts, in one place.

Every operation that changes a tensor's header checks its arguments here, whether
it runs on chapter 02's kernel path or on the autograd path, so the two paths
refuse bad input with the same exception and the same message (PyTorch's).
Pure arithmetic on tuples of ints: nothing here knows about Tensors.
"""
from __future__ import annotations

import math
from typing import Sequence

Shape = tuple[int, ...]

VIEW_NOT_POSSIBLE = ("view size is not compatible with input tensor's size and stride (at least one dimension "
                     "spans across two contiguous subspaces). Use .reshape(...) instead.")
ZERO_DIM_INDEX = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ "
                  "to convert a 0-dim tensor to a number")


def check_slice_step(step) -> None:
    """torch's errors for a slice's step (``x[::0]``, ``x[::-1]``): tensors have no negative strides."""
    if step is not None and step == 0:
        raise ValueError("slice step cannot be zero")
    if step is not None and step < 0:
        raise ValueError("step must be greater than zero")


def wrap_dim(dim: int, ndim: int) -> int:
    """``dim`` counted from the front (``-1`` is the last); torch's IndexError when out of range.

    A 0-d tensor accepts dims -1 and 0, as in torch.
    """
    low, high = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not low <= dim <= high:
        raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})")
    return dim + ndim if dim < 0 else dim


def wrap_dims(dims: Sequence[int], ndim: int) -> tuple[int, ...]:
    return tuple(wrap_dim(int(d), ndim) for d in dims)


def check_sizes(shape: Sequence[int]) -> Shape:
    """Sizes of a new tensor: non-negative ints (``torch.empty``'s check)."""
    shape = tuple(int(s) for s in shape)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> Shape:
    """The shape two operands broadcast to (``torch.broadcast_shapes``), with the error
    element-wise ops give when they don't: aligned from the right, each pair of sizes
    must be equal or contain a 1."""
    if any(s < 0 for s in (*a, *b)):
        raise ValueError("Attempting to broadcast a dimension with negative length!")  # torch.broadcast_shapes
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            dim = max(len(a), len(b)) - i
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {dim}")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def infer_shape(shape: Sequence[int], numel: int) -> Shape:
    """``view``/``reshape``'s target with its one ``-1`` filled in (``at::infer_size``)."""
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def check_permute(dims: Sequence[int], ndim: int) -> tuple[int, ...]:
    """``permute(dims)``: one entry per dimension, each named once; returns them wrapped."""
    if len(dims) != ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal "
                           f"to len(dims) = {len(dims)}")
    dims = wrap_dims(dims, ndim)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return dims


def expand_shape(shape: Sequence[int], sizes: Sequence[int], type_name: str = "minikernel.FloatTensor") -> Shape:
    """``expand(sizes)``'s result shape (``-1`` keeps a size), with torch's errors."""
    shape, sizes = tuple(shape), tuple(int(s) for s in sizes)
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand({type_name}{{{list(shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    out = []
    for d in reversed(range(len(sizes))):  # torch checks from the last dim
        n = sizes[d]
        if d < lead:
            if n < 0:
                raise RuntimeError(f"The expanded size of the tensor ({n}) isn't allowed in a leading, "
                                   f"non-existing dimension {d}")
            out.append(n)
            continue
        old = shape[d - lead]
        if n == -1:
            n = old
        if old != n and old != 1:
            raise RuntimeError(f"The expanded size of the tensor ({n}) must match the existing size ({old}) at "
                               f"non-singleton dimension {d}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(shape)}")
        out.append(n)
    return tuple(reversed(out))


def squeeze_dims(shape: Sequence[int], dim: int | Sequence[int] | None) -> tuple[int, ...]:
    """Which dims ``squeeze(dim)`` removes: the size-1 ones among ``dim`` (all dims when None)."""
    ndim = len(shape)
    if dim is None:
        dims: tuple[int, ...] = tuple(range(ndim))
    elif isinstance(dim, (tuple, list)):
        dims = wrap_dims(dim, ndim)
        wrapped = [d % max(ndim, 1) for d in dims]  # a 0-d tensor's dims wrap as a 1-d one's, as in torch
        for d in wrapped:  # torch's check, as for a reduction's dims (``(0, -1)`` of a 1-d tensor)
            if wrapped.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    else:
        dims = (wrap_dim(int(dim), ndim),)
    return tuple(sorted({d for d in dims if ndim and shape[d] == 1}))


def unsqueeze_dim(dim: int, ndim: int) -> int:
    """Where ``unsqueeze(dim)`` puts the new size-1 dim (``dim`` may be ``ndim``, or negative)."""
    return wrap_dim(dim, ndim + 1)


def split_sizes(size: int, split_size: int | Sequence[int], dim: int) -> list[int]:
    """The pieces ``split(split_size, dim)`` cuts a dimension of ``size`` into (``torch.split``)."""
    if isinstance(split_size, (tuple, list)):
        sizes = [int(s) for s in split_size]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                               f"size at dimension {dim}), but got split_sizes={sizes}")
        return sizes
    split_size = int(split_size)
    if split_size < 0 or (split_size == 0 and size != 0):
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
                           if split_size == 0 else f"split expects split_size be non-negative, but got "
                           f"split_size={split_size}")
    if size == 0:
        return [0]
    return [min(split_size, size - start) for start in range(0, size, split_size)]


def chunk_sizes(size: int, chunks: int, dim: int) -> list[int]:
    """``chunk(chunks, dim)``: pieces of ``ceil(size / chunks)`` (so maybe fewer than ``chunks``)."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    return split_sizes(size, max(1, -(-size // chunks)) if size else 0, dim) if size else [0] * 1


def narrow_range(size: int, start: int, length: int, dim: int) -> int:
    """``narrow(dim, start, length)``: the wrapped start, after torch's range checks."""
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start + size if start < 0 else start
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return start


# ----- ops that torch composes of others (CompositeImplicitAutograd): their arguments for those
def narrow_slice(shape: Sequence[int], dim: int, start: int, length: int) -> tuple[int, int, int]:
    """``narrow(dim, start, length)`` as ``slice.Tensor``'s ``(dim, start, end)``, after torch's checks."""
    if not shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, len(shape))
    start = narrow_range(shape[dim], start, length, dim)
    return dim, start, start + length


def flatten_shape(shape: Sequence[int], start_dim: int, end_dim: int) -> Shape | None:
    """The shape ``flatten(start_dim, end_dim)`` reshapes to; None when it returns the tensor itself."""
    if not shape:
        return (1,)
    start, end = wrap_dim(start_dim, len(shape)), wrap_dim(end_dim, len(shape))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return None
    return (*shape[:start], math.prod(shape[start:end + 1]), *shape[end + 1:])


def unflatten_shape(shape: Sequence[int], dim: int, sizes: Sequence[int]) -> Shape:
    """The shape ``unflatten(dim, sizes)`` views as: dim ``dim`` split into ``sizes`` (one may be -1)."""
    if not shape:
        raise RuntimeError(f"unflatten got an unexpected error: Dimension specified as {dim} but tensor has no "
                           f"dimensions")
    dim = wrap_dim(dim, len(shape))
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inner = infer_shape(sizes, shape[dim]) if -1 in sizes or math.prod(sizes) == shape[dim] else None
    if inner is None:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shape[dim]}) in the input tensor")
    return (*shape[:dim], *inner, *shape[dim + 1:])


def chunk_split_size(shape: Sequence[int], chunks: int, dim: int) -> int:
    """``chunk(chunks, dim)`` as ``split``'s ``split_size``: ``ceil(size / chunks)`` (0 for an empty dim)."""
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = shape[wrap_dim(dim, len(shape))]
    return max(1, -(-size // chunks)) if size else 0


def movedim_order(ndim: int, source, destination) -> tuple[int, ...]:
    """The ``permute`` order of ``movedim(source, destination)``: each source dim lands at its
    destination, the other dims fill the remaining places in their order (torch's errors)."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    src, dst = [wrap_dim(int(d), ndim) for d in src], [wrap_dim(int(d), ndim) for d in dst]
    if ndim == 0:
        return ()
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    order: list = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    return tuple(next(rest) if o is None else o for o in order)
