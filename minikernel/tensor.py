"""A Tensor: a header (shape, strides, storage offset) over a flat numpy storage.

Everything that moves the header around (``view``, ``permute``, ``expand``,
slicing, ``contiguous``) calls the chapter-01 exercises in ``strides.py``; the
code here only checks arguments and builds new headers, the way ATen's
``TensorImpl`` sits on top of a ``Storage``.

Memory is shared with PyTorch both ways: ``Tensor.from_torch(t)`` and
``t.to_torch()`` never copy, so a write through one is seen by the other.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import device as dev
from . import strides as S
from ._C.grad_mode import is_grad_enabled
from .aten import shape_rules as R
from .aten.memory_overlap import check_overlap
from .device import Device, DeviceLike
from .dispatch.keys import ALWAYS, DispatchKey, DispatchKeySet
from .kernels.layout import contiguous_strides
from .strides import Shape, Storage
from .tensor_autograd import AutogradMixin
from .tensor_backends import functions, route
from .tensor_ops import OperatorsMixin

#: dtypes a Tensor can hold (numpy dtypes; torch names in ``_TORCH_NAMES``).
float32, float64, int64, int32, bool_ = (np.dtype(n) for n in ("float32", "float64", "int64", "int32", "bool"))
_TORCH_NAMES = {float32: "float32", float64: "float64", int64: "int64", int32: "int32", bool_: "bool"}
#: PyTorch's scalar type names (``FloatTensor``, and "result type Float can't be cast ..." messages).
_SCALAR_NAMES = {float32: "Float", float64: "Double", int64: "Long", int32: "Int", bool_: "Bool"}


def _sizes(args: tuple) -> tuple[int, ...]:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` / ``f(torch.Size([2, 3]))`` like torch."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"sizes must be ints, got {a!r} of type {type(a).__name__}")
    return tuple(int(a) for a in args)


def _check_index_first(x: Any, key: Any) -> None:
    """torch's first checks of an index, before any view is taken: a slice alone (not in a
    tuple) has its step checked, then a 0-d ``x`` refuses it with its own message; ints and
    slices: too many of them, then each int's range and slice's step, left to right."""
    if isinstance(key, slice):
        R.check_slice_step(key.step)
        if x.ndim == 0:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        return
    parts = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(k, (int, np.integer, slice)) and not isinstance(k, bool) for k in parts):
        return
    if len(parts) > x.ndim:
        if x.ndim == 0 and any(isinstance(k, (int, np.integer)) for k in parts):
            raise IndexError(R.ZERO_DIM_INDEX)
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    for d, k in enumerate(parts):  # left to right, before any view is taken (or its history read)
        if isinstance(k, slice):
            R.check_slice_step(k.step)
        elif not -x.shape[d] <= k < x.shape[d]:
            raise IndexError(f"index {int(k)} is out of bounds for dimension {d} with size {x.shape[d]}")


def _is_device_array(array: Any) -> bool:
    """A numba CUDA device array (real or simulated): the storage of a "cuda" tensor."""
    return not isinstance(array, np.ndarray) and hasattr(array, "copy_to_host")


def _address(array: Any) -> int:
    """Address of a storage's first byte: host memory for numpy, device memory for CUDA arrays."""
    if isinstance(array, np.ndarray):
        return array.ctypes.data
    if hasattr(array, "device_ctypes_pointer"):
        return array.device_ctypes_pointer.value or 0
    return array._ary.ctypes.data  # the simulator keeps "device" memory in a numpy array


#: A tensor's dispatch keys by backend (``Tensor._dispatch_keys``).
_CPU_KEYS, _CUDA_KEYS = ALWAYS.add(DispatchKey.CPU), ALWAYS.add(DispatchKey.CUDA)

#: torch's dim wrapping and its IndexError (``aten/shape_rules.py``).
_wrap_dim = R.wrap_dim


class UntypedStorage:
    """The raw memory under one or more tensors (like ``torch.UntypedStorage``)."""

    def __init__(self, array: Storage):
        self._array = array

    def data_ptr(self) -> int:
        return _address(self._array) if self._array.nbytes else 0  # torch: 0 when empty

    def nbytes(self) -> int:
        return self._array.nbytes

    def __len__(self) -> int:
        return self._array.nbytes


class Tensor(AutogradMixin, OperatorsMixin):
    """A strided view of a flat storage.

    Args:
        storage: 1-D numpy array holding the elements (a numba CUDA device array
            for a ``"cuda"`` tensor).
        shape: size of each dimension.
        strides: storage step of each dimension (in elements, not bytes).
        offset: storage position of element (0, 0, ...).

    Use ``minikernel.tensor(data)`` or ``Tensor.from_torch(t)`` rather than
    calling this directly.
    """

    def __init__(self, storage: Storage, shape: Sequence[int], strides: Sequence[int], offset: int = 0):
        if not (isinstance(storage, np.ndarray) or _is_device_array(storage)) or storage.ndim != 1:
            raise TypeError("storage must be a 1-D numpy array (or numba CUDA device array)")
        if storage.dtype not in _TORCH_NAMES:
            raise TypeError(f"unsupported dtype {storage.dtype}; use one of "
                            f"{', '.join(_TORCH_NAMES.values())}")
        shape, strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)
        if len(shape) != len(strides):
            raise RuntimeError(f"mismatch in length of strides and shape: shape {list(shape)}, "
                               f"strides {list(strides)}")
        if any(s < 0 for s in shape) or any(s < 0 for s in strides) or offset < 0:
            raise RuntimeError(f"sizes, strides and offset must be non-negative, got shape "
                               f"{list(shape)}, strides {list(strides)}, offset {offset}")
        needed = 0 if 0 in shape else offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
        if needed > storage.size:
            raise RuntimeError(
                f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage offset {offset}"
                f" need a storage of {needed} elements, but it has {storage.size}")
        self._storage, self._shape, self._strides, self._offset = storage, shape, strides, int(offset)
        self._init_autograd()

    # ----------------------------------------------------------------- header
    @property
    def shape(self) -> Shape:
        return self._shape

    def size(self, dim: int | None = None):
        return self._shape if dim is None else self._shape[_wrap_dim(dim, self.ndim)]

    def stride(self, dim: int | None = None):
        return self._strides if dim is None else self._strides[_wrap_dim(dim, self.ndim)]

    def storage_offset(self) -> int:
        return self._offset

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return math.prod(self._shape)

    @property
    def dtype(self) -> np.dtype:
        return self._storage.dtype

    def element_size(self) -> int:
        return self._storage.dtype.itemsize

    @property
    def device(self) -> Device:
        """``device(type='cpu')`` for a numpy storage, ``device(type='cuda', index=0)`` on the GPU."""
        return Device("cuda", 0) if _is_device_array(self._storage) else Device("cpu")

    def _dispatch_keys(self) -> DispatchKeySet:
        """This tensor's dispatch keys (``torch._C._dispatch_keys(t)``): its backend and the
        layers every tensor passes through (chapter 09, ``minikernel/dispatch``)."""
        return _CUDA_KEYS if _is_device_array(self._storage) else _CPU_KEYS

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def untyped_storage(self) -> UntypedStorage:
        return UntypedStorage(self._storage)

    def data_ptr(self) -> int:
        """Address of element (0, 0, ...): the storage's address plus offset·itemsize (0 if empty)."""
        if not self.numel():
            return 0  # like torch: a tensor without elements has no address
        return _address(self._storage) + self._offset * self._storage.dtype.itemsize

    def is_contiguous(self) -> bool:
        return S.is_contiguous(self._shape, self._strides)

    def _with(self, shape: Sequence[int], strides: Sequence[int], offset: int | None = None) -> "Tensor":
        """A new header over the same storage (and the same version counter)."""
        out = Tensor(self._storage, shape, strides, self._offset if offset is None else offset)
        out._make_view_of(self)
        return out

    # ------------------------------------------------------------------ views
    def as_strided(self, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> "Tensor":
        """Any header over this tensor's storage (``aten::as_strided``); not recorded by autograd."""
        return route("as_strided", self, tuple(size), tuple(stride), storage_offset)

    # Each view goes through the dispatcher (``aten::view``, ...): the Autograd key records it
    # when a gradient is involved, the backend computes the header (``aten/shape.py``: your
    # chapter 01 code). Shape checks and their messages: ``aten/shape_rules.py``, on every path.
    def view(self, *shape) -> "Tensor":
        if not shape:
            raise TypeError('view() missing 1 required positional arguments: "size"')
        return route("view", self, _sizes(shape))

    def reshape(self, *shape) -> "Tensor":
        """A view when the strides allow one, else a contiguous copy (like torch)."""
        if not shape:
            raise TypeError('reshape() missing 1 required positional arguments: "shape"')
        return route("reshape", self, _sizes(shape))

    def permute(self, *dims) -> "Tensor":
        if not dims:
            raise TypeError('permute() missing 1 required positional arguments: "dims"')
        return route("permute", self, _sizes(dims))

    def transpose(self, dim0: int, dim1: int) -> "Tensor":
        return route("transpose", self, dim0, dim1)

    def t(self) -> "Tensor":
        return route("t", self)

    def expand(self, *sizes) -> "Tensor":
        if not sizes:
            raise TypeError('expand() missing 1 required positional arguments: "size"')
        return route("expand", self, _sizes(sizes))

    def contiguous(self) -> "Tensor":
        """``self`` if already contiguous, else a row-major copy (exercise 1.7)."""
        return route("contiguous", self)

    def expand_as(self, other: "Tensor") -> "Tensor":
        return self.expand(other.shape)

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.view(other.shape)

    def reshape_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other.shape)

    @property
    def T(self) -> "Tensor":  # noqa: N802 - torch's name
        """All dims reversed (``x.permute(n-1, ..., 0)``); torch allows it for ndim != 2 too."""
        return self.permute(tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> "Tensor":  # noqa: N802 - torch's name
        """The last two dims swapped (a batch of matrices transposed)."""
        if self.ndim == 0:
            return self  # torch hands a 0-d tensor back as it is
        if self.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                               f"{self.ndim}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def mH(self) -> "Tensor":  # noqa: N802 - torch's name
        """The conjugate transpose of a batch of matrices: ``mT`` for minikernel's real dtypes."""
        if self.ndim == 1:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.mT

    def adjoint(self) -> "Tensor":
        return self.mH

    @property
    def H(self) -> "Tensor":  # noqa: N802 - torch's name
        """The conjugate transpose of a matrix: ``t()`` for real dtypes; 0-d and 2-d tensors only."""
        if self.ndim not in (0, 2):
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
        return self.t() if self.ndim else self

    def movedim(self, source, destination) -> "Tensor":
        """``source`` dims moved to ``destination`` positions, the others in order (a ``permute``)."""
        order = R.movedim_order(self.ndim, source, destination)
        if self.ndim == 0:
            return route("alias", self)  # nothing to move: torch returns an alias
        return self.permute(order)

    moveaxis = movedim

    def swapdims(self, dim0: int, dim1: int) -> "Tensor":
        """``transpose(dim0, dim1)`` under numpy's name."""
        return self.transpose(dim0, dim1)

    swapaxes = swapdims

    # Views with no chapter 01 exercise: numpy's header (``aten/shape.py``). ``narrow``, ``flatten``,
    # ``unflatten`` and ``chunk`` are compositions, as in PyTorch (CompositeImplicitAutograd).
    def select(self, dim: int, index: int) -> "Tensor":
        return route("select.int", self, dim, index)

    def narrow(self, dim: int, start: int, length: int) -> "Tensor":
        return route("slice.Tensor", self, *R.narrow_slice(self._shape, dim, start, length))

    def squeeze(self, dim=None) -> "Tensor":
        if dim is None:
            return route("squeeze", self)
        if isinstance(dim, (tuple, list)):
            return route("squeeze.dims", self, tuple(dim))
        return route("squeeze.dim", self, dim)

    def unsqueeze(self, dim: int) -> "Tensor":
        return route("unsqueeze", self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        shape = R.flatten_shape(self._shape, start_dim, end_dim)
        return self if shape is None else self.reshape(shape)

    def unflatten(self, dim: int, sizes) -> "Tensor":
        return self.view(R.unflatten_shape(self._shape, dim, sizes))

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> "Tensor":
        return route("diagonal", self, offset, dim1, dim2)

    def unfold(self, dimension: int, size: int, step: int) -> "Tensor":
        """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim (a view)."""
        return route("unfold", self, dimension, size, step)

    def unbind(self, dim: int = 0) -> tuple:
        return route("unbind.int", self, dim)

    def split(self, split_size, dim: int = 0) -> tuple:
        if isinstance(split_size, (tuple, list)):
            return route("split_with_sizes", self, tuple(split_size), dim)
        return route("split.Tensor", self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        return self.split(R.chunk_split_size(self._shape, chunks, dim), dim)

    # --------------------------------------------------------------- indexing
    def __getitem__(self, key: Any) -> "Tensor":
        """Ints and slices (chapter 01's headers), and ``...``, ``None``, integer tensors and boolean
        masks (the autograd path's numpy indexing), like torch."""
        _check_index_first(self, key)
        lone, key = key, key if isinstance(key, tuple) else (key,)
        if self.ndim == 0 and any(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key):
            raise IndexError(R.ZERO_DIM_INDEX)
        if not all(isinstance(k, (int, np.integer, slice)) and not isinstance(k, bool) for k in key):
            return functions.getitem(self, key)
        return route("index", self, lone if isinstance(lone, slice) else key)  # (a lone slice is always sliced)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``t[key] = value``, like torch: the indexed view, then ``fill_`` (a number) or ``copy_``
        (a tensor, broadcast) into it; with integer tensors, lists or masks in ``key``,
        ``index_put_`` (``autograd/index_put.py``). While recording, a write through a view
        gives the base a ``CopySlices`` node, an ``index_put_`` an ``IndexPutBackward0``."""
        _check_index_first(self, key)
        parts = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, (int, np.integer, slice)) and not isinstance(k, bool) for k in parts):
            functions.setitem(self, key, value)  # None, ..., lists, tensors, masks
        elif isinstance(value, Tensor):
            copy_to(self._written(parts), value)
        elif isinstance(value, (bool, int, float, np.generic)):
            fill_into(self._written(parts), value)
        else:
            self[key].copy_(tensor(value, dtype=self.dtype))

    def _written(self, key: tuple) -> "Tensor":
        """What ``self[key] = v`` writes into: ``self`` itself when every part of ``key`` is a slice
        of everything (torch's setitem skips those, so the write is recorded on ``self``, not as a
        ``CopySlices`` through a view), else the view ``self[key]``."""
        if all(isinstance(k, slice) and k.start in (None, 0) and k.step in (None, 1)
               and (k.stop is None or k.stop >= n) for k, n in zip(key, self.shape)) and len(key) <= self.ndim:
            return self
        return self[key]

    # ----------------------------------------------------- writing in place
    # aten::copy_, fill_.Scalar, zero_ (``aten/copy.py``): the backend writes, ADInplaceOrView bumps the
    # version, the Autograd kernel records (``autograd/inplace.py``).
    def copy_(self, src: "Tensor") -> "Tensor":
        """Write ``src`` (broadcast to this shape, cast to this dtype) into this tensor's memory."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}")
        check_overlap(self, [src])  # torch's refusals of a write that would read what it overwrote
        return route("copy_", self, src)

    def fill_(self, value: Any) -> "Tensor":
        """Every element becomes ``value`` (a number or a one-element tensor)."""
        if isinstance(value, Tensor):
            if value.ndim:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                                   f"{value.ndim} dimensions.")
            value = value.item()
        return route("fill_.Scalar", self, value)

    def zero_(self) -> "Tensor":
        return route("zero_", self)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    # ------------------------------------------------------ values and interop
    def _numpy_view(self) -> np.ndarray:
        """A numpy array over the same memory with the same header."""
        if self.is_cuda:
            raise TypeError("this tensor is on cuda: its memory is not host memory. Copy it with .cpu() first")
        item = self._storage.itemsize
        return np.lib.stride_tricks.as_strided(
            self._storage[self._offset:] if self.numel() else self._storage,
            self._shape, tuple(s * item for s in self._strides))

    def to_numpy(self) -> np.ndarray:
        """A copy of the values as a numpy array of this shape (copied from the GPU if needed)."""
        return self.cpu()._numpy_view().copy()

    def tolist(self):
        return self.cpu()._numpy_view().tolist()

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        host = self.cpu()
        return host._storage[host._offset].item()

    def _scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __bool__(self) -> bool:
        if self.numel() != 1:  # torch's words: `if t:` on several values is ambiguous
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if self.numel() == 0 else 'more than one value'}"
                               f" is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    # ---------------------------------------------------------------- devices
    def to(self, device: DeviceLike) -> "Tensor":
        """This tensor on ``device`` ("cpu" or "cuda"): ``self`` if already there, else a copy.

        Like ``torch.Tensor.to`` (``memory_format=torch.preserve_format``): a
        non-overlapping, dense tensor keeps its strides (a transposed matrix stays
        transposed); any other view is packed densely in the same dimension order
        (the strides ``torch.empty_like`` gives). Copies to the GPU are synchronous,
        as torch's are from pageable memory.
        """
        target = dev.device(device)
        if target.type == self.device.type:
            return self
        return route("_to_copy", self, device=target)

    def cpu(self) -> "Tensor":
        """``self.to("cpu")``."""
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        """``self.to("cuda")`` (a real GPU, or numba's CUDA simulator without one)."""
        return self.to("cuda")

    @classmethod
    def from_torch(cls, t) -> "Tensor":
        """A Tensor over the same memory as the CPU torch tensor ``t`` (no copy)."""
        import torch

        if not isinstance(t, torch.Tensor):
            raise TypeError(f"from_torch expects a torch.Tensor, got {type(t).__name__}")
        if t.device.type != "cpu" or t.layout != torch.strided:
            raise TypeError(f"from_torch needs a dense CPU tensor, got device={t.device}, "
                            f"layout={t.layout}; call .cpu() / .to_dense() first")
        if str(t.dtype).removeprefix("torch.") not in _TORCH_NAMES.values():
            raise TypeError(f"unsupported dtype {t.dtype}; use one of {', '.join(_TORCH_NAMES.values())}")
        storage = t.untyped_storage()
        whole = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))
        return cls(whole.numpy(), t.shape, t.stride(), t.storage_offset())

    def to_torch(self):
        """A torch tensor over the same memory, with the same shape, strides and offset."""
        import torch

        if self.is_cuda:
            raise TypeError("to_torch() shares memory, so it needs a cpu tensor; use .cpu().to_torch() for a copy")
        return torch.from_numpy(self._storage).as_strided(self._shape, self._strides, self._offset)

    def type(self) -> str:
        """The legacy type name, like ``torch.FloatTensor``: ``minikernel.FloatTensor``."""
        return f"minikernel.{_SCALAR_NAMES[self.dtype]}Tensor"

    def __repr__(self) -> str:
        if not self.is_cuda:
            return self._autograd_repr(repr(self.to_torch()))
        text = repr(self.cpu().to_torch())  # torch writes the device before the dtype
        at = text.find(", dtype=") if ", dtype=" in text else len(text) - 1
        return f"{text[:at]}, device='cuda:0'{text[at:]}"


def fill_into(target: Tensor, value: Any) -> None:
    """The write of ``target[...] = number``: torch makes the number a 0-d tensor and fills with it,
    which refuses a target naming one element twice (an expanded view), as ``fill_(number)`` does not;
    into a 0-d target (the same shape as the value) torch copies instead."""
    if target.ndim == 0:
        target.copy_(tensor(value, dtype=target.dtype))
        return
    check_overlap(target, [])
    target.fill_(value)


def copy_to(target: Tensor, value: Tensor) -> None:
    """The write of ``target[...] = value`` (torch's ``copy_to``): a value of another shape is
    broadcast first, so it is read through stride-0 dims (which never count as overlapping);
    a target naming one element twice is refused either way. A 0-d value goes torch's
    ``fill_(Tensor)`` way: copied from a clone when it shares the target's memory (so
    ``x[None] = x`` is no overlap)."""
    check_overlap(target, [])
    if value.shape != target.shape:
        if value.ndim == 0 and not value.is_cuda and not (is_grad_enabled() and value.requires_grad):
            target.fill_(value)  # torch fills with a 0-d value
            return
        if value.ndim == 0 and not value.is_cuda and value._storage is target._storage:
            value = value.clone()  # torch's fill_(Tensor) of a value that aliases the target
        ones = next((i for i, n in enumerate(value.shape) if n != 1), value.ndim)
        value = value.reshape(value.shape[ones:])  # torch views the value without its leading 1s, then expands
        value = value.expand(target.shape)
    target.copy_(value)


def typename(obj: Any) -> str:
    """A short type name for error messages, as ``torch.typename`` writes it:
    ``"int"``, ``"list"``, ``"minikernel.FloatTensor"``, ``"torch.FloatTensor"``."""
    if isinstance(obj, Tensor) or type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "is_leaf"):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    return qualname if module in {"", "builtins"} else f"{module}.{qualname}"


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A new contiguous Tensor holding a copy of ``data`` (nested lists, scalars, arrays).

    Like ``torch.tensor``: Python floats become float32, ints int64 (numpy arrays and
    scalars keep their dtype), unless ``dtype`` says otherwise (a numpy dtype or a name such as ``"float64"``).
    ``requires_grad=True`` makes it a leaf of the autograd graph (chapter 03).
    """
    array = np.array(data, dtype=dtype)
    if dtype is None and not isinstance(data, (np.ndarray, np.generic)) and array.dtype == np.float64:
        array = array.astype(np.float32)
    if array.dtype not in _TORCH_NAMES:
        raise TypeError(f"unsupported dtype {array.dtype}; use one of {', '.join(_TORCH_NAMES.values())}")
    if requires_grad and array.dtype.kind != "f":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    out = Tensor(array.reshape(-1), array.shape, contiguous_strides(array.shape), 0)
    out._requires_grad = bool(requires_grad)
    return out


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """``torch.cat(tensors, dim=0)``: the tensors one after another along ``dim``."""
    return route("cat", tensors, dim)


def where(condition: Tensor, input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's name
    """``torch.where(condition, input, other)``: ``input`` where ``condition`` holds, else ``other``."""
    return route("where", condition, input, other)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """``torch.stack(tensors, dim=0)``: the tensors side by side along a new dimension ``dim``."""
    return route("stack", tensors, dim)


def _factory(name: str, sizes: tuple, dtype: Any, device: DeviceLike, requires_grad: bool) -> Tensor:
    """``aten::<name>`` through the dispatcher (BackendSelect picks the device's backend)."""
    out = route(name, _sizes(sizes), dtype=dtype, device=device)
    out.requires_grad_(requires_grad)
    return out


def zeros(*size: Any, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """``torch.zeros(*size, dtype=None, device=None, requires_grad=False)``: float32 unless ``dtype`` says
    otherwise, on the CPU unless ``device`` says otherwise."""
    if not size:
        raise TypeError('zeros() missing 1 required positional arguments: "size"')
    return _factory("zeros", size, dtype, device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """``torch.ones(*size, dtype=None, device=None, requires_grad=False)``."""
    if not size:
        raise TypeError('ones() missing 1 required positional arguments: "size"')
    return _factory("ones", size, dtype, device, requires_grad)
