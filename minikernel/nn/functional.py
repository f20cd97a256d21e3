"""``minikernel.nn.functional``: the layers' maths as functions (``torch.nn.functional``).

Written with ``minikernel.autograd.functions`` (the autograd layer, values computed with
numpy), so they record the graph and never need the chapter 02 kernels.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..autograd import functions as F
from ..autograd import values as V
from ..tensor import Tensor


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``input @ weight.T + bias``, with ``weight`` of shape (out_features, in_features).

    Matches: ``torch.nn.functional.linear`` (values; the node names differ: torch
    fuses 2-D ``linear`` into one ``AddmmBackward0``).
    """
    out = F.matmul(input, F.transpose(weight, 0, 1))
    return out if bias is None else F.add(out, bias)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)`` element-wise; ``inplace=True`` overwrites ``input``.

    Matches: ``torch.nn.functional.relu``.
    """
    return F.inplace("relu", input) if inplace else F.relu(input)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``, so the
    expected value is unchanged; when not ``training``, return ``input`` itself.

    The mask is drawn with torch's generator the way torch's CPU dropout draws it
    (``bernoulli_(1 - p)`` on a tensor like ``input``), so after the same
    ``torch.manual_seed`` both drop the same elements.

    Args:
        input (Tensor): any shape.
        p (float, optional): probability of zeroing an element. Default: 0.5
        training (bool, optional): apply dropout (else the identity). Default: ``True``
        inplace (bool, optional): overwrite ``input``. Default: ``False``

    Matches: ``torch.nn.functional.dropout``.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        mask = V.wrap(np.zeros((), input.dtype))
    else:
        import torch

        noise = torch.empty(input.shape, dtype=getattr(torch, str(input.dtype))).bernoulli_(1 - p)
        mask = V.wrap(noise.numpy() / np.asarray(1 - p, dtype=input.dtype))
    return F.inplace("mul", input, mask) if inplace else F.mul(input, mask)
from .normalization import layer_norm  # noqa: E402,F401 - chapter 05: LayerNorm on its kernels
