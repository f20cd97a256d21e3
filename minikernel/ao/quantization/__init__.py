"""Affine quantization and Conv/Linear+BatchNorm folding (``torch.ao.quantization``).

* ``quantize``  ``quantize_per_tensor``/``dequantize_per_tensor`` (exercise 10.4),
                ``quantize_per_channel``/``dequantize_per_channel`` (exercise 10.5)
* ``fuse``      ``fuse_conv_bn_weights``/``fuse_linear_bn_weights`` (exercise 10.6) and
                the module-level ``fuse_conv_bn_eval``/``fuse_linear_bn_eval``

Where PyTorch keeps them: the quantize functions are ``torch.quantize_per_tensor`` and
``torch.quantize_per_channel``; observers, ``quantize_dynamic`` and ``fuse_modules``
are in ``torch.ao.quantization`` (older notes say ``torch.quantization``, which is now
an alias kept for compatibility); the folding arithmetic is ``torch.nn.utils.fusion``.
In PyTorch 2.13 all of ``torch.ao.quantization`` and the quantized dtypes are
deprecated in favour of the separate ``torchao`` package.
"""
from . import fuse, quantize
from .fuse import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .quantize import dequantize_per_channel, dequantize_per_tensor, quantize_per_channel, quantize_per_tensor

__all__ = ["dequantize_per_channel", "dequantize_per_tensor", "fuse", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "quantize", "quantize_per_channel", "quantize_per_tensor"]
