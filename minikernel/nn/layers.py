"""A few layers on top of ``Module``: Linear, ReLU, Dropout, Sequential (``torch.nn``'s, same
constructor arguments, reprs and behaviour)."""
from __future__ import annotations

import math
import operator
from collections import OrderedDict
from itertools import islice
from typing import Any, Iterator, Optional, Union

import numpy as np

from ..autograd import values as V
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, float32
from . import functional as NF
from .module import Module
from .parameter import Parameter


def _uniform_(param: Tensor, bound: float) -> None:
    """Fill ``param`` from U(-bound, bound) drawn by torch's generator, as ``torch.nn.init.uniform_``
    does: after the same ``torch.manual_seed``, a Linear starts with torch's weights."""
    import torch

    values = torch.empty(param.shape, dtype=getattr(torch, str(param.dtype))).uniform_(-bound, bound)
    with no_grad():
        param.copy_(Tensor.from_torch(values))  # aten::copy_: the version goes up once, as torch's uniform_'s


class Linear(Module):
    """``y = x @ weight.T + bias`` (``torch.nn.Linear``).

    Args:
        in_features (int): size of each input sample.
        out_features (int): size of each output sample.
        bias (bool, optional): learn an additive bias. Default: ``True``
        device (str, optional): only ``"cpu"`` (or None). Default: ``None``
        dtype (optional): float32 (default) or float64.

    ``weight`` (out_features, in_features) and ``bias`` (out_features) start
    from U(-1/sqrt(in_features), 1/sqrt(in_features)), drawn like torch's
    ``reset_parameters`` (kaiming_uniform_ with a=sqrt(5)).

    Example::

        >>> torch.manual_seed(0); fc = Linear(2, 3)
        >>> fc
        Linear(in_features=2, out_features=3, bias=True)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Optional[str] = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if device not in (None, "cpu"):
            raise ValueError(f"minikernel.nn layers live on the cpu, got device={device!r}")
        dtype = np.dtype(float32 if dtype is None else dtype)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(V.zeros((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(V.zeros((out_features,), dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        fan_in = self.in_features
        gain = math.sqrt(2.0 / (1 + math.sqrt(5) ** 2))  # kaiming_uniform_(a=sqrt(5)) on the weight
        _uniform_(self.weight, math.sqrt(3.0) * (gain / math.sqrt(fan_in)) if fan_in else 0.0)
        if self.bias is not None:
            _uniform_(self.bias, 1 / math.sqrt(fan_in) if fan_in > 0 else 0)

    def forward(self, input: Tensor) -> Tensor:
        return NF.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class ReLU(Module):
    """``max(x, 0)`` element-wise (``torch.nn.ReLU``).

    Args:
        inplace (bool, optional): overwrite the input. Default: ``False``
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return NF.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Dropout(Module):
    """Randomly zero elements with probability ``p`` while training (``torch.nn.Dropout``).

    In training mode each element is zeroed with probability ``p`` and the others
    are scaled by 1/(1-p), so the expected output equals the input; after
    ``eval()`` the layer is the identity (it returns its input).

    Args:
        p (float, optional): probability of an element to be zeroed. Default: 0.5
        inplace (bool, optional): overwrite the input. Default: ``False``
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return NF.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Sequential(Module):
    """Modules called one after another (``torch.nn.Sequential``); children named "0", "1", ...
    or by an ``OrderedDict``'s keys.

    Example::

        >>> model = Sequential(Linear(2, 16), ReLU(), Linear(16, 3))
        >>> model[0], len(model)
        (Linear(in_features=2, out_features=16, bias=True), 3)
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _item_by_idx(self, iterator: Iterator[Any], idx: int) -> Any:
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return next(islice(iterator, idx % size, None))

    def __getitem__(self, idx: Union[slice, int]) -> Module:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._item_by_idx(iter(self._modules.values()), idx)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input
