"""``minikernel.nn.Parameter``: a Tensor that a Module registers as one of its parameters.

A Parameter is an ordinary leaf tensor with ``requires_grad=True`` and one more
property: assigning it to a Module attribute (``self.weight = Parameter(...)``)
files it under the module's ``_parameters`` (exercise 4.1), so that
``parameters()``, ``state_dict()`` and optimizers find it.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..tensor import Tensor, float32


class Parameter(Tensor):
    """A leaf tensor that is a module parameter (``torch.nn.Parameter``).

    Shares memory with ``data`` (no copy), like torch's.

    Args:
        data (Tensor, optional): the values. Default: an empty float32 tensor.
        requires_grad (bool, optional): whether the parameter requires gradient.
            Default: ``True``

    Example::

        >>> w = Parameter(minikernel.tensor([[1.0, 2.0]]))
        >>> w.requires_grad, w.is_leaf
        (True, True)
    """

    def __init__(self, data: Optional[Tensor] = None, requires_grad: bool = True):
        if data is None:
            data = Tensor(np.zeros(0, float32), (0,), (1,), 0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a minikernel Tensor as data, got {type(data).__name__}; "
                            f"convert a torch tensor with minikernel.Tensor.from_torch(t)")
        super().__init__(data._storage, data._shape, data._strides, data._offset)
        self._vc = data._vc  # one memory, one version counter
        self.requires_grad_(requires_grad)

    # AutogradMixin builds these with type(self)(storage, ...): a Parameter's are plain Tensors,
    # as torch's are (p.detach() is not a Parameter).
    def detach(self) -> Tensor:
        out = Tensor(self._storage, self._shape, self._strides, self._offset)
        out._vc = self._vc
        return out

    @property
    def data(self) -> Tensor:
        return Tensor(self._storage, self._shape, self._strides, self._offset)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
