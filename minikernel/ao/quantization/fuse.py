r"""Folding an eval-mode BatchNorm into the Conv or Linear before it.

In eval mode BatchNorm is a fixed per-channel affine map of the layer's output
``z = W x + b``:

.. math::  \mathrm{BN}(z) = \gamma \frac{z - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta
           = \underbrace{\frac{\gamma}{\sqrt{\sigma^2+\epsilon}}}_{s} (W x + b - \mu) + \beta

so one layer with ``W' = s · W`` (row ``c`` of the weight, output channel ``c``, times
``s[c]``) and ``b' = s · (b − μ) + β`` computes the same: one op fewer at inference,
and the pattern quantized inference relies on (``torch.ao.quantization.fuse_modules``
does this for ``[conv, bn]`` and ``[linear, bn]``). In training mode BN uses each
batch's own statistics, so nothing can be folded.
"""
from __future__ import annotations

import copy

import torch

from minikernel.course.exercise import exercise


@exercise("10.6")
def fuse_conv_bn_weights(conv_w: torch.Tensor, conv_b: torch.Tensor | None, bn_rm: torch.Tensor, bn_rv: torch.Tensor,
                         bn_eps: float, bn_w: torch.Tensor | None, bn_b: torch.Tensor | None,
                         transpose: bool = False) -> tuple[torch.nn.Parameter, torch.nn.Parameter]:
    """The fused convolution's weight and bias: ``W' = s·W`` per output channel, ``b' = s·(b − μ) + β``.

    * ``s = bn_w / sqrt(bn_rv + bn_eps)`` (torch: ``bn_w * torch.rsqrt(bn_rv + bn_eps)``).
    * A missing ``conv_b`` is zeros, a missing ``bn_w`` ones, a missing ``bn_b`` zeros
      (shaped like ``bn_rm``).
    * Output channels are dim 0 of a Conv weight ``(out, in, kh, kw)`` and dim 1 of a
      ConvTranspose weight ``(in, out, kh, kw)`` (``transpose=True``): reshape ``s`` to
      broadcast along that dim, whatever the number of spatial dims.
    * Return ``torch.nn.Parameter``s in the dtypes of ``conv_w`` and ``conv_b`` (of
      ``conv_w`` when there is no bias), with ``requires_grad`` of ``conv_w`` and of
      ``conv_b``: a frozen weight (``requires_grad=False``) stays frozen, and a bias
      made of zeros (``torch.zeros_like(bn_rm)``, as torch does) gets ``False``.

    Matches: ``torch.nn.utils.fusion.fuse_conv_bn_weights``. ≈10 lines.
    """
    # TODO(10.6): ≈10 lines
    raise NotImplementedError("exercise 10.6 (fuse_conv_bn_weights) is not implemented yet")


@exercise("10.6")
def fuse_linear_bn_weights(linear_w: torch.Tensor, linear_b: torch.Tensor | None, bn_rm: torch.Tensor,
                           bn_rv: torch.Tensor, bn_eps: float, bn_w: torch.Tensor,
                           bn_b: torch.Tensor) -> tuple[torch.nn.Parameter, torch.nn.Parameter]:
    """The fused Linear's weight ``(out, in)`` and bias: row ``c`` times ``s[c]``, ``b' = s·(b − μ) + β``.

    A missing ``linear_b`` is zeros like ``bn_rm``. ``s`` may have one element (a
    ``BatchNorm1d(1)``): it then scales every row. Dtypes and ``requires_grad`` as in
    ``fuse_conv_bn_weights``.

    Matches: ``torch.nn.utils.fusion.fuse_linear_bn_weights``. ≈6 lines.
    """
    # TODO(10.6): ≈6 lines
    raise NotImplementedError("exercise 10.6 (fuse_linear_bn_weights) is not implemented yet")


def fuse_conv_bn_eval(conv: torch.nn.Module, bn: torch.nn.Module, transpose: bool = False) -> torch.nn.Module:
    """A new conv module computing ``bn(conv(x))`` of eval mode in one layer.

    Matches ``torch.nn.utils.fusion.fuse_conv_bn_eval`` (same AssertionErrors).
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_eval(linear: torch.nn.Linear, bn: torch.nn.Module) -> torch.nn.Linear:
    """A new Linear computing ``bn(linear(x))`` of eval mode in one layer.

    Matches ``torch.nn.utils.fusion.fuse_linear_bn_eval`` (same AssertionErrors).
    """
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
