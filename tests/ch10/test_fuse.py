"""Exercise 10.6 (minikernel/ao/quantization/fuse.py): BatchNorm folded into Conv/Linear.

Oracle: ``torch.nn.utils.fusion`` (weights and biases, in float64 to tight tolerance;
types, dtypes and ``requires_grad``) and, independently, eval-mode ``bn(conv(x))``
computed by torch's modules.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, strategies as st
from torch.nn.utils import fusion as torch_fusion

from minikernel.ao.quantization import fuse as F

CONVS = {
    "conv1d": (lambda c_in, c_out, bias: torch.nn.Conv1d(c_in, c_out, 3, bias=bias), torch.nn.BatchNorm1d, (7,), False),
    "conv2d": (lambda c_in, c_out, bias: torch.nn.Conv2d(c_in, c_out, (3, 2), padding=1, bias=bias),
               torch.nn.BatchNorm2d, (6, 5), False),
    "conv3d": (lambda c_in, c_out, bias: torch.nn.Conv3d(c_in, c_out, 2, bias=bias), torch.nn.BatchNorm3d, (4, 3, 3),
               False),
    "conv_transpose2d": (lambda c_in, c_out, bias: torch.nn.ConvTranspose2d(c_in, c_out, 3, stride=2, bias=bias),
                         torch.nn.BatchNorm2d, (4, 4), True),
}


def _trained_bn(bn: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Give BN running statistics and affine parameters far from their defaults."""
    g = torch.Generator().manual_seed(seed)
    n = bn.num_features
    bn.running_mean.copy_(torch.randn(n, generator=g, dtype=bn.running_mean.dtype) * 3)
    bn.running_var.copy_(torch.rand(n, generator=g, dtype=bn.running_var.dtype) * 5 + 0.01)
    if bn.affine:
        with torch.no_grad():
            bn.weight.copy_(torch.randn(n, generator=g) * 2)
            bn.bias.copy_(torch.randn(n, generator=g))
    return bn.eval()


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.exercise("10.6")
@given(st.sampled_from(sorted(CONVS)), st.booleans(), st.booleans(), st.integers(1, 5), st.integers(1, 5),
       st.integers(0, 2**16), st.sampled_from([1e-5, 1e-3, 0.5]))
def test_fused_conv_equals_eval_batchnorm_after_conv(kind, bias, affine, c_in, c_out, seed, eps):
    make_conv, make_bn, spatial, transpose = CONVS[kind]
    torch.manual_seed(seed)
    conv = make_conv(c_in, c_out, bias).double().eval()
    bn = _trained_bn(make_bn(c_out, eps=eps, affine=affine).double(), seed)
    args = (conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    ours = F.fuse_conv_bn_weights(*args)
    theirs = torch_fusion.fuse_conv_bn_weights(*args)
    for name, o, t in zip(("weight", "bias"), ours, theirs):
        assert isinstance(o, torch.nn.Parameter), f"return the fused {name} as a torch.nn.Parameter"
        assert _close(o.detach(), t.detach()), f"fused {name} differs from torch.nn.utils.fusion's"
        assert o.requires_grad == t.requires_grad, f"fused {name}: requires_grad"
    fused = F.fuse_conv_bn_eval(conv, bn, transpose)
    x = torch.randn(2, c_in, *spatial, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(fused(x), bn(conv(x)), rtol=1e-9, atol=1e-10), "fused conv != bn(conv(x)) in eval mode"


@pytest.mark.exercise("10.6")
@given(st.booleans(), st.integers(1, 6), st.integers(1, 6), st.booleans(), st.integers(0, 2**16))
def test_fused_linear_equals_eval_batchnorm_after_linear(bias, n_in, n_out, one_feature, seed):
    torch.manual_seed(seed)
    linear = torch.nn.Linear(n_in, n_out, bias=bias).double().eval()
    bn = _trained_bn(torch.nn.BatchNorm1d(1 if one_feature else n_out).double(), seed)
    args = (linear.weight, linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    ours = F.fuse_linear_bn_weights(*args)
    theirs = torch_fusion.fuse_linear_bn_weights(*args)
    for name, o, t in zip(("weight", "bias"), ours, theirs):
        assert isinstance(o, torch.nn.Parameter), f"return the fused {name} as a torch.nn.Parameter"
        assert o.dtype == t.dtype and o.requires_grad == t.requires_grad
        assert torch.allclose(o.detach(), t.detach(), rtol=1e-10, atol=1e-12), f"fused {name} differs from torch's"
    fused = F.fuse_linear_bn_eval(linear, bn)
    x = torch.randn(5, n_in, dtype=torch.float64)
    with torch.no_grad():
        expected = bn(linear(x)) if not one_feature else bn(linear(x).reshape(-1, 1)).reshape(5, n_out)
        assert torch.allclose(fused(x), expected, rtol=1e-9, atol=1e-10), "fused linear != bn(linear(x)) in eval mode"


@pytest.mark.exercise("10.6")
def test_dtypes_of_the_layer_are_kept():
    conv = torch.nn.Conv2d(2, 3, 1).half()
    bn = _trained_bn(torch.nn.BatchNorm2d(3), 0)  # float32 statistics
    args = (conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    ours = F.fuse_conv_bn_weights(*args)
    theirs = torch_fusion.fuse_conv_bn_weights(*args)
    assert [o.dtype for o in ours] == [t.dtype for t in theirs] == [torch.float16, torch.float16]
    conv_nb = torch.nn.Conv2d(2, 3, 1, bias=False).double()
    ours = F.fuse_conv_bn_weights(conv_nb.weight, None, *args[2:])
    theirs = torch_fusion.fuse_conv_bn_weights(conv_nb.weight, None, *args[2:])
    assert [o.dtype for o in ours] == [t.dtype for t in theirs]
    assert [o.requires_grad for o in ours] == [t.requires_grad for t in theirs]


@pytest.mark.exercise("10.6")
def test_fuse_modules_gives_the_same_layer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), _trained_bn(torch.nn.BatchNorm2d(4), 1), torch.nn.ReLU())
    model.eval()
    theirs = torch.ao.quantization.fuse_modules(model, [["0", "1"]])
    ours = F.fuse_conv_bn_eval(model[0], model[1])
    assert torch.allclose(ours.weight, theirs[0].weight, rtol=1e-6, atol=1e-7)
    assert torch.allclose(ours.bias, theirs[0].bias, rtol=1e-6, atol=1e-7)


# Not an exercise: the module-level checks around it.

def test_fusion_refuses_training_mode_like_torch():
    conv, bn = torch.nn.Conv2d(1, 2, 1), torch.nn.BatchNorm2d(2)
    for fuse in (F.fuse_conv_bn_eval, torch_fusion.fuse_conv_bn_eval):
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            fuse(conv, bn)
    linear, bn1 = torch.nn.Linear(2, 3).eval(), torch.nn.BatchNorm1d(4).eval()
    for fuse in (F.fuse_linear_bn_eval, torch_fusion.fuse_linear_bn_eval):
        with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
            fuse(linear, bn1)


@pytest.mark.exercise("10.6")
@pytest.mark.parametrize("layer", ["conv3d", "conv_transpose1d", "linear"])
def test_frozen_layers_stay_frozen_like_torch(layer):
    """A weight or bias with ``requires_grad=False`` gives a fused Parameter with ``requires_grad=False``."""
    torch.manual_seed(0)
    if layer == "linear":
        module, bn, fuse, torch_fuse = (torch.nn.Linear(3, 4).double(), torch.nn.BatchNorm1d(4), F.fuse_linear_bn_weights,
                                        torch_fusion.fuse_linear_bn_weights)
        extra = ()
    else:
        make = {"conv3d": lambda: torch.nn.Conv3d(2, 4, 2), "conv_transpose1d": lambda: torch.nn.ConvTranspose1d(2, 4, 3)}
        module, bn, fuse, torch_fuse = (make[layer]().double(), torch.nn.BatchNorm1d(4), F.fuse_conv_bn_weights,
                                        torch_fusion.fuse_conv_bn_weights)
        extra = (layer == "conv_transpose1d",)
    bn = _trained_bn(bn.double(), 2)
    for frozen in (("weight",), ("bias",), ("weight", "bias")):
        for name, p in module.named_parameters():
            p.requires_grad_(name not in frozen)
        args = (module.weight, module.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, *extra)
        ours, theirs = fuse(*args), torch_fuse(*args)
        assert [o.requires_grad for o in ours] == [t.requires_grad for t in theirs], f"frozen {frozen}"
        for o, t in zip(ours, theirs):
            assert _close(o.detach(), t.detach())
