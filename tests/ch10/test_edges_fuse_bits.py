"""Exercise 10.6 bit for bit: every conv dimensionality (1-d, 2-d, 3-d), plain and transposed, and
Linear, in float32, float64 and mixed dtypes, with and without a bias and batch-norm affine
parameters, frozen or trainable weights.

Oracle: ``torch.nn.utils.fusion.fuse_conv_bn_weights`` / ``fuse_linear_bn_weights`` on the same
tensors. ``rsqrt`` and ``1 / sqrt`` round differently in about one float32 element in eight, so
only torch's own sequence of operations gives torch's bits.
"""
from __future__ import annotations

import itertools

import pytest
import torch
from torch.nn.utils import fusion

from minikernel.ao.quantization import fuse as F

DTYPES = [(torch.float32, torch.float32), (torch.float64, torch.float64), (torch.float32, torch.float64)]


def _bn(c, dtype, g, affine):
    rm = torch.randn(c, generator=g, dtype=dtype)
    rv = torch.rand(c, generator=g, dtype=dtype) * 3 + 1e-3
    w = torch.randn(c, generator=g, dtype=dtype) if affine else None
    b = torch.randn(c, generator=g, dtype=dtype) if affine else None
    return rm, rv, w, b


def _same(got, expected, what):
    assert isinstance(got, torch.nn.Parameter), f"{what}: return a Parameter"
    assert got.dtype == expected.dtype and got.shape == expected.shape, (
        f"{what}: dtype/shape {got.dtype}/{tuple(got.shape)}, torch's {expected.dtype}/{tuple(expected.shape)}")
    assert got.requires_grad == expected.requires_grad, f"{what}: requires_grad {got.requires_grad}, torch's"
    differ = (got.detach() != expected.detach()).sum().item()
    assert differ == 0, f"{what}: {differ} of {got.numel()} elements differ from torch's bits"


@pytest.mark.exercise("10.6")
@pytest.mark.parametrize("dims,transpose", list(itertools.product([1, 2, 3], [False, True])))
@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda d: f"{d[0]}-bn{d[1]}".replace("torch.", ""))
@pytest.mark.parametrize("bias,affine,frozen", [(True, True, False), (False, True, False), (True, False, True),
                                                (False, False, True)])
def test_conv_fusion_is_torchs_bit_for_bit(dims, transpose, dtypes, bias, affine, frozen):
    g = torch.Generator().manual_seed(10 * dims + transpose)
    c_in, c_out = 3, 5
    conv_dtype, bn_dtype = dtypes
    shape = ((c_in, c_out) if transpose else (c_out, c_in)) + (2,) * dims
    conv_w = torch.randn(shape, generator=g, dtype=conv_dtype).requires_grad_(not frozen)
    conv_b = torch.randn(c_out, generator=g, dtype=conv_dtype).requires_grad_(not frozen) if bias else None
    bn = _bn(c_out, bn_dtype, g, affine)
    args = (conv_w, conv_b, bn[0], bn[1], 1e-5, bn[2], bn[3], transpose)
    expected = fusion.fuse_conv_bn_weights(*args)
    got = F.fuse_conv_bn_weights(*args)
    _same(got[0], expected[0], "weight")
    _same(got[1], expected[1], "bias")


@pytest.mark.exercise("10.6")
@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda d: f"{d[0]}-bn{d[1]}".replace("torch.", ""))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("features", [4, 1])
def test_linear_fusion_is_torchs_bit_for_bit(dtypes, bias, features):
    g = torch.Generator().manual_seed(features)
    lin_dtype, bn_dtype = dtypes
    w = torch.randn(4, 6, generator=g, dtype=lin_dtype).requires_grad_()
    b = torch.randn(4, generator=g, dtype=lin_dtype).requires_grad_() if bias else None
    rm, rv, bw, bb = _bn(features, bn_dtype, g, True)
    args = (w, b, rm, rv, 1e-3, bw, bb)
    expected = fusion.fuse_linear_bn_weights(*args)
    got = F.fuse_linear_bn_weights(*args)
    _same(got[0], expected[0], "weight")
    _same(got[1], expected[1], "bias")
