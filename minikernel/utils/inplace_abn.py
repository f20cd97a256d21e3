"""In-place activated BatchNorm (Rota Bulò et al., 2018): BN + leaky ReLU that saves only its output.

Training-mode ``BatchNorm`` followed by ``LeakyReLU`` saves two activation-sized
tensors for backward: BN its input x, the activation its output y (chapter 10 §1
measures them). In-place ABN saves **only y**, written over x's memory, and in
backward *recomputes* what it needs by inverting the two steps:

* z = y where y ≥ 0, y / slope elsewhere      (leaky ReLU is invertible for slope > 0)
* x̂ = (z − β) / γ                             (the affine step; γ must not be 0)

Then the usual BatchNorm backward over the reduction axes (N·H·W elements per
channel, invstd = 1/√(var + eps) with the biased variance):

* dz = dy · (1 where y ≥ 0, slope elsewhere)
* dβ = Σ dz,  dγ = Σ dz·x̂
* dx = γ·invstd · (dz − mean(dz) − x̂·mean(dz·x̂))

The running statistics are updated as ``BatchNorm`` does (unbiased variance, momentum).
"""
from __future__ import annotations

import torch


def _shape(x: torch.Tensor) -> list[int]:
    return [1, -1] + [1] * (x.dim() - 2)  # broadcast a per-channel vector over (N, C, ...)


class InPlaceABNFunction(torch.autograd.Function):
    """``leaky_relu(batch_norm(x), slope)`` computed in x's memory; saves y, γ, β, invstd."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, momentum, eps, slope):
        if slope <= 0:
            raise ValueError(f"in-place ABN inverts the activation: slope must be > 0, got {slope}")
        if (weight == 0).any():
            raise ValueError("in-place ABN divides by the BN weight γ in backward: it must have no zeros")
        dims = [0] + list(range(2, x.dim()))
        count = x.numel() // x.shape[1]
        var, mean = torch.var_mean(x, dim=dims, correction=0)
        invstd = torch.rsqrt(var + eps)
        with torch.no_grad():
            running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
            running_var.mul_(1 - momentum).add_(var * count / max(count - 1, 1), alpha=momentum)
        s = _shape(x)
        x.sub_(mean.view(s)).mul_((invstd * weight).view(s)).add_(bias.view(s))   # x is now z
        torch.nn.functional.leaky_relu_(x, slope)                                   # ... and now y
        ctx.mark_dirty(x)
        ctx.save_for_backward(x, weight, bias, invstd)
        ctx.slope = slope
        return x

    @staticmethod
    def backward(ctx, dy):
        y, weight, bias, invstd = ctx.saved_tensors
        s = _shape(y)
        dims = [0] + list(range(2, y.dim()))
        positive = y >= 0
        z = torch.where(positive, y, y / ctx.slope)               # undo the activation
        x_hat = (z - bias.view(s)) / weight.view(s)               # undo the affine step
        dz = torch.where(positive, dy, dy * ctx.slope)
        dbias = dz.sum(dims)
        dweight = (dz * x_hat).sum(dims)
        dx = (weight * invstd).view(s) * (dz - dz.mean(dims, keepdim=True)
                                          - x_hat * (dz * x_hat).mean(dims, keepdim=True))
        return dx, dweight, dbias, None, None, None, None, None


class InPlaceABN(torch.nn.BatchNorm2d):
    """``BatchNorm2d`` + ``LeakyReLU(slope)`` in one in-place step (training mode).

    Args:
        num_features (int): channels C of an (N, C, H, W) input.
        slope (float, optional): the leaky ReLU's negative slope (> 0). Default: ``0.01``.
        eps, momentum: as ``BatchNorm2d``.

    Its input is overwritten, so it must not be needed elsewhere (a leaf that
    requires grad is refused by autograd, as any in-place op on it). In eval mode it
    is ``leaky_relu(batch_norm(x))`` with the running statistics, out of place.
    """

    def __init__(self, num_features: int, slope: float = 0.01, eps: float = 1e-5, momentum: float = 0.1):
        super().__init__(num_features, eps=eps, momentum=momentum)
        self.slope = slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return torch.nn.functional.leaky_relu(super().forward(x), self.slope)
        self.num_batches_tracked += 1
        return InPlaceABNFunction.apply(x, self.weight, self.bias, self.running_mean, self.running_var,
                                        self.momentum, self.eps, self.slope)
