"""A tensor's header, read the same way from a torch tensor and a minikernel Tensor (chapter 01).

PyTorch keeps a tensor's header in a C++ ``TensorImpl`` (``c10/core/TensorImpl.h``);
minikernel keeps it in ``Tensor``'s attributes (``tensor.py``, ``tensor_autograd.py``).
Both answer the same Python calls, so ``header`` asks them and nothing else:
``size()``, ``stride()``, ``storage_offset()``, ``dtype``, ``device``, the storage's
address, ``_version``, and the autograd part: ``requires_grad``, ``grad_fn``,
``is_leaf`` and ``_base``.
"""
from __future__ import annotations

from typing import Any


def header(t: Any, base: Any = None) -> dict[str, Any]:
    """The header fields of ``t`` (a torch tensor or a minikernel Tensor) as plain values.

    ``dtype`` without the ``torch.`` prefix, ``device`` as its string, ``grad_fn`` as its
    ``name()`` (None without one). With ``base`` given, ``"storage"`` says whether ``t``
    reads ``base``'s storage (``"base's"``) or another (``"own"``), and ``"_base"``
    whether ``t._base`` is ``base``; without it, ``"storage"`` is the storage's address.
    """
    grad_fn = t.grad_fn
    same = base is not None and t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    return {
        "size": tuple(t.size()),
        "stride": tuple(t.stride()),
        "storage_offset": t.storage_offset(),
        "dtype": str(t.dtype).removeprefix("torch."),
        "device": str(t.device),
        "storage": t.untyped_storage().data_ptr() if base is None else ("base's" if same else "own"),
        "_version": t._version,
        "requires_grad": t.requires_grad,
        "grad_fn": None if grad_fn is None else grad_fn.name(),
        "is_leaf": t.is_leaf,
        "_base": (t._base is not None) if base is None else (t._base is base),
    }


def summary(t: Any, base: Any = None) -> str:
    """``header(t, base)`` on one line: ``size (4, 3) stride (1, 4) offset 0 v1 base's grad_fn=None``."""
    h = header(t, base)
    return (f"size {h['size']} stride {h['stride']} offset {h['storage_offset']} {h['dtype']} "
            f"v{h['_version']} {h['storage']} grad_fn={h['grad_fn']}")
