"""minikernel.utils.inplace_abn: oracle = torch's BatchNorm2d + LeakyReLU in float64."""
from __future__ import annotations

import pytest
import torch

from minikernel.utils.inplace_abn import InPlaceABN
from minikernel.utils.saved_tensors import SavedTensorMeter


def _pair(slope=0.1, channels=4):
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(channels).double()
    with torch.no_grad():
        bn.weight.uniform_(-1.5, 1.5)  # negative γ too: the inversion divides by γ, not |γ|
        bn.bias.uniform_(-0.5, 0.5)
    abn = InPlaceABN(channels, slope=slope).double()
    abn.load_state_dict(bn.state_dict())
    return torch.nn.Sequential(bn, torch.nn.LeakyReLU(slope)), abn


@pytest.mark.parametrize("shape", [(8, 4, 5, 5), (3, 4, 7, 2)])
def test_output_gradients_and_running_stats_equal_torch(shape):
    ref, abn = _pair()
    x = torch.randn(*shape, dtype=torch.float64)
    w = torch.nn.Conv2d(4, 4, 1).double()  # the ABN input must be a non-leaf (it is overwritten)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = ref(w(xa)), abn(w(xb))
    g = torch.randn_like(ya)
    grads_ref = torch.autograd.grad(ya, [xa, ref[0].weight, ref[0].bias], g)
    grads_abn = torch.autograd.grad(yb, [xb, abn.weight, abn.bias], g)
    assert torch.allclose(ya, yb)
    for a, b in zip(grads_ref, grads_abn):
        assert torch.allclose(a, b, atol=1e-10)
    assert torch.allclose(ref[0].running_mean, abn.running_mean)
    assert torch.allclose(ref[0].running_var, abn.running_var)
    assert abn.num_batches_tracked.item() == 1


def test_saves_one_activation_instead_of_two():
    torch.manual_seed(0)
    x = torch.randn(8, 16, 16, 16)
    conv = torch.nn.Conv2d(16, 16, 3, padding=1)
    act_bytes = x.numel() * 4
    peaks = []
    for tail in ((torch.nn.BatchNorm2d(16), torch.nn.LeakyReLU(0.01)), (InPlaceABN(16),)):
        model = torch.nn.Sequential(conv, *tail)
        with SavedTensorMeter(exclude=model.parameters()) as meter:
            model(x).sum().backward()
        peaks.append(meter.peak_bytes)
    # one activation-sized tensor fewer; the rest differs by per-channel vectors (16 floats each)
    assert abs(peaks[0] - peaks[1] - act_bytes) <= 4 * 16 * 4


def test_eval_mode_and_errors():
    ref, abn = _pair()
    ref.eval(), abn.eval()
    x = torch.randn(2, 4, 3, 3, dtype=torch.float64)
    assert torch.allclose(ref(x), abn(x))
    abn.train()
    with torch.no_grad():
        abn.weight[0] = 0.0
    with pytest.raises(ValueError, match="no zeros"):
        abn(x.clone())
    with pytest.raises(ValueError, match="slope must be > 0"):
        InPlaceABN(4, slope=0.0).double()(x.clone())
