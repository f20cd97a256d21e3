"""LayerNorm as a Module and a differentiable function, on chapter 05's kernels.

``layer_norm`` is an autograd ``Function`` whose forward is ``native_layer_norm``
(your exercise 5.4, or 5.6 on the GPU) and whose backward is
``native_layer_norm_backward`` (5.5 / 5.7) with the mean and rstd saved by the
forward — the same split as PyTorch's ``NativeLayerNormBackward0``. ``LayerNorm``
is the Module around it, with ``torch.nn.LayerNorm``'s arguments, parameters and repr.

Unlike the other differentiable ops (which compute with numpy, so that they work
without chapter 02), these values come from your chapter 05 kernels: this is
where they are used.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ..autograd import values as V
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..norm.native import native_layer_norm, native_layer_norm_backward
from ..tensor import Tensor, float32
from ..torch_release import torch_at_least
from .module import Module
from .parameter import Parameter

ShapeArg = Union[int, Sequence[int]]

__all__ = ["LayerNorm", "LayerNormFunction", "layer_norm"]


class LayerNormFunction(Function):
    """``LayerNormFunction.apply(input, weight, bias, normalized_shape, eps)``; its node is
    named ``NativeLayerNormBackward0``, like PyTorch's."""

    _torch_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                normalized_shape: tuple[int, ...], eps: float) -> Tensor:
        out, mean, rstd = native_layer_norm(input, normalized_shape, weight, bias, eps)
        ctx.save_for_backward(input, weight, bias, mean, rstd)
        ctx.normalized_shape = normalized_shape
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        if is_grad_enabled():  # the engine records the backward only for create_graph=True
            raise RuntimeError("layer_norm's backward runs the chapter 05 kernels, which autograd cannot "
                               "differentiate again: create_graph=True (double backward) is not supported "
                               "through minikernel.nn.functional.layer_norm")
        input, weight, bias, mean, rstd = ctx.saved_tensors
        mask = ctx.needs_input_grad[:3]
        dx, dw, db = native_layer_norm_backward(grad_out, input, ctx.normalized_shape, mean, rstd, weight, bias,
                                                mask)
        return (dx if mask[0] else None), dw, db, None, None


def _shape(normalized_shape: ShapeArg) -> tuple[int, ...]:
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(normalized_shape, bool):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def layer_norm(input: Tensor, normalized_shape: ShapeArg, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Layer normalization over the trailing ``normalized_shape`` dimensions, differentiable.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with the biased variance of
    each group of ``prod(normalized_shape)`` trailing elements.

    Args:
        input (Tensor): float32 or float64, on the CPU (the autograd layer's device).
        normalized_shape (int or sequence of ints): the trailing dimensions to normalize.
        weight (Tensor, optional): shape ``normalized_shape``. Default: ``None`` (ones)
        bias (Tensor, optional): shape ``normalized_shape``. Default: ``None`` (zeros)
        eps (float, optional): added to the variance. Default: ``1e-5``

    Example::

        >>> x = minikernel.tensor([[1.0, 2.0, 4.0]], requires_grad=True)
        >>> layer_norm(x, (3,)).grad_fn.name()
        'NativeLayerNormBackward0'

    Matches: ``torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)``,
    values and gradients (``x``, ``weight`` and ``bias``).
    """
    return LayerNormFunction.apply(input, weight, bias, _shape(normalized_shape), float(eps))


class LayerNorm(Module):
    r"""Layer normalization with learnable per-element scale and shift (``torch.nn.LayerNorm``).

    Args:
        normalized_shape (int or sequence of ints): the trailing dimensions to normalize over.
        eps (float, optional): added to the variance. Default: ``1e-5``
        elementwise_affine (bool, optional): learn ``weight`` (ones) and ``bias`` (zeros) of
            shape ``normalized_shape``. Default: ``True``
        bias (bool, optional): with ``elementwise_affine``, learn the bias too. Default: ``True``
        device (str, optional): only ``"cpu"`` (or None). Default: ``None``
        dtype (optional): float32 (default) or float64.

    Example::

        >>> ln = LayerNorm((3, 4))
        >>> ln
        LayerNorm((3, 4), eps=1e-05, elementwise_affine=True, bias=True)
    """

    def __init__(self, normalized_shape: ShapeArg, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Optional[str] = None, dtype: Any = None) -> None:
        super().__init__()
        if device not in (None, "cpu"):
            raise ValueError(f"minikernel.nn layers live on the cpu, got device={device!r}")
        dtype = np.dtype(float32 if dtype is None else dtype)
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(V.zeros(self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(V.zeros(self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight 1, bias 0 (``torch.nn.init.ones_``/``zeros_``: written in place, versions + 1)."""
        if self.elementwise_affine:
            with no_grad():
                self.weight.fill_(1.0)
                if self.bias is not None:
                    self.bias.zero_()

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """torch's: ``bias=`` from torch 2.12 on (``torch_release``), as the installed torch prints it."""
        text = f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        return f"{text}, bias={self.bias is not None}" if torch_at_least(2, 12) else text
