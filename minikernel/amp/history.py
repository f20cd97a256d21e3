"""A per-step record of a mixed-precision run: loss, scale, skipped steps.

The chapter's training loop appends one row per iteration and plots it inline
with matplotlib; a live dashboard can read the same lists.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


def format_scale(scale: float) -> str:
    """``2^16`` for a power of two (scales usually are), else ``%g``."""
    if scale > 0 and math.isfinite(scale):
        mantissa, exponent = math.frexp(scale)
        if mantissa == 0.5:
            return f"2^{exponent - 1}"
    return f"{scale:g}"


@dataclass
class AmpHistory:
    """Loss, scale (before ``update()``) and skipped flag of every recorded step.

    Example::

        >>> history = AmpHistory()
        >>> scale = scaler.get_scale()
        >>> scaler.step(optimizer); scaler.update()
        >>> history.record(loss.item(), scale, skipped=scaler.get_scale() < scale)
    """

    losses: list[float] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)
    skipped: list[bool] = field(default_factory=list)

    def record(self, loss: float, scale: float, skipped: bool) -> None:
        """Append one step. ``scale`` is the factor the step's gradients were scaled by."""
        if not isinstance(skipped, bool):
            raise TypeError(f"skipped must be a bool, got {type(skipped).__name__}")
        self.losses.append(float(loss))
        self.scales.append(float(scale))
        self.skipped.append(skipped)

    def __len__(self) -> int:
        return len(self.losses)

    def skipped_steps(self) -> list[int]:
        """Indices of the steps whose optimizer step was skipped (inf/NaN gradients)."""
        return [i for i, s in enumerate(self.skipped) if s]

    def scale_changes(self) -> list[tuple[int, float]]:
        """``(step, scale)`` wherever the scale differs from the step before (and step 0)."""
        return [(i, s) for i, s in enumerate(self.scales) if i == 0 or s != self.scales[i - 1]]

    def summary(self) -> str:
        """Steps, skipped steps, scale changes and first/last loss, in a few lines."""
        if not self:
            return "no steps recorded"
        changes = ", ".join(f"{i}: {format_scale(s)}" for i, s in self.scale_changes())
        return (f"{len(self)} steps, {len(self.skipped_steps())} skipped: {self.skipped_steps()}\n"
                f"scale by step: {changes}\n"
                f"loss: first {self.losses[0]:.4g}, last {self.losses[-1]:.4g}")

    def plot(self, title: str = "", axes=None):
        """Loss (log scale) and scale per step, skipped steps marked; returns the figure."""
        import matplotlib.pyplot as plt

        if axes is None:
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
        fig = axes[0].figure
        steps = range(len(self))
        finite = [(i, l) for i, l in zip(steps, self.losses) if math.isfinite(l) and l > 0]
        if finite:
            axes[0].plot(*zip(*finite), color="#1f77b4")
        axes[0].set_yscale("log")
        axes[0].set(xlabel="step", ylabel="loss", title=f"{title} loss".strip())
        axes[1].step(list(steps), self.scales, where="post", color="#2ca02c")
        axes[1].set_yscale("log", base=2)
        axes[1].set(xlabel="step", ylabel="scale", title=f"{title} scale".strip())
        for ax in axes:
            for i in self.skipped_steps():
                ax.axvline(i, color="#d62728", alpha=0.35, linewidth=1)
        fig.tight_layout()
        return fig
