"""What a :class:`~widgets.dashboard.Dashboard` records, apart from how it is drawn.

Per training step: scalars (loss, learning rate, a GradScaler's scale, ...), the
mean, standard deviation and histogram of each watched layer's output, and the
gradient norm of each parameter. Both renderers (visdom, matplotlib) read this
log, so it can be checked without any server.

The statistics are the torch calls they name, computed on the values as they
are (16-bit floats are upcast to float32 first, as ``torch.std`` of a float16
tensor accumulates in float16 and overflows easily):

* ``mean = x.mean()``, ``std = x.std()`` (unbiased, Bessel's correction: NaN for
  a single element, as torch gives);
* histogram: ``numpy.histogram(x, bins, range=(x.min(), x.max()))`` (the bins of
  ``torch.histogram``) over the finite values, counts divided by the number of
  elements;
* gradient norm: ``torch.linalg.vector_norm(p.grad)`` (the 2-norm that
  ``clip_grad_norm_`` adds up over parameters).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import torch

Step = int
LayerName = str
ParamName = str


def to_torch(value: Any) -> torch.Tensor | None:
    """``value`` as a detached CPU-or-device torch tensor, or None if it is no tensor.

    Accepts torch tensors and anything with ``to_numpy()`` (minikernel tensors);
    other objects (tuples, None, ints) give None.
    """
    if isinstance(value, torch.Tensor):
        return value.detach()
    to_numpy = getattr(value, "to_numpy", None)
    if callable(to_numpy):
        return torch.from_numpy(np.ascontiguousarray(to_numpy()))
    return None


def first_tensor(output: Any) -> torch.Tensor | None:
    """The tensor a forward hook reports: the output itself, or the first tensor in a tuple/list."""
    found = to_torch(output)
    if found is not None or not isinstance(output, (tuple, list)):
        return found
    for item in output:
        found = to_torch(item)
        if found is not None:
            return found
    return None


def _as_float(x: torch.Tensor) -> torch.Tensor:
    # float32 and float64 stay as they are (so the numbers equal torch's on the same
    # tensor); 16-bit floats, integers and bools are upcast to float32.
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


@dataclass(frozen=True)
class Histogram:
    """Fractions of the elements in each bin: ``len(edges) == len(fractions) + 1``."""

    step: Step
    fractions: tuple[float, ...]
    edges: tuple[float, ...]


@dataclass(frozen=True)
class ActivationStats:
    """Mean, std and histogram (fractions per bin, bin edges) of one layer's output."""

    mean: float
    std: float
    fractions: tuple[float, ...]
    edges: tuple[float, ...]


def activation_stats(output: torch.Tensor, bins: int = 30) -> ActivationStats:
    """Mean, unbiased std and a ``bins``-bin histogram of ``output`` (see the module doc)."""
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    x = _as_float(output.detach()).reshape(-1)
    n = x.numel()
    if n == 0:
        raise ValueError("cannot summarize an empty tensor")
    mean = x.mean().item()
    std = x.std().item() if n > 1 else math.nan  # torch warns and returns NaN for n == 1
    finite = x[torch.isfinite(x)].cpu()
    if finite.numel():
        lo, hi = finite.min().item(), finite.max().item()
        if lo == hi:  # one value: a bin around it
            lo, hi = lo - 0.5, hi + 0.5
        # numpy, not torch.histogram: the same bins, without waking torch's thread
        # pool for a few hundred numbers on every forward call.
        counts, edges = np.histogram(finite.double().numpy(), bins=bins, range=(lo, hi))
        fractions = tuple((counts / n).tolist())
        edge_list = tuple(edges.tolist())
    else:
        fractions, edge_list = (), ()
    return ActivationStats(mean, std, fractions, edge_list)


def grad_norm(grad: Any) -> float:
    """``torch.linalg.vector_norm(grad)`` as a float (grad: torch or minikernel tensor)."""
    g = to_torch(grad)
    if g is None:
        raise TypeError(f"expected a gradient tensor, got {type(grad).__name__}")
    return torch.linalg.vector_norm(_as_float(g)).item()


@dataclass
class Series:
    """One line: the steps and values logged so far (non-finite values kept as they are)."""

    steps: list[Step] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def append(self, step: Step, value: float) -> None:
        self.steps.append(step)
        self.values.append(float(value))

    def finite_points(self) -> tuple[list[Step], list[float]]:
        """The points a plot can draw (inf and NaN left out)."""
        points = [(s, v) for s, v in zip(self.steps, self.values) if math.isfinite(v)]
        return [s for s, _ in points], [v for _, v in points]


@dataclass
class DashboardLog:
    """Everything logged so far.

    ``scalars[window][trace]`` is a :class:`Series` (a window per scalar name, a
    trace per run); ``activation_mean[layer]``, ``activation_std[layer]`` and
    ``grad_norms[param]`` are Series; ``histograms[layer]`` is the latest
    :class:`Histogram` of that layer.
    """

    scalars: dict[str, dict[str, Series]] = field(default_factory=dict)
    activation_mean: dict[LayerName, Series] = field(default_factory=dict)
    activation_std: dict[LayerName, Series] = field(default_factory=dict)
    histograms: dict[LayerName, Histogram] = field(default_factory=dict)
    grad_norms: dict[ParamName, Series] = field(default_factory=dict)
    records: int = 0

    def record(self, step: Step, scalars: Mapping[tuple[str, str], float],
               activations: Mapping[LayerName, ActivationStats],
               grad_norms: Mapping[ParamName, float]) -> None:
        """Add one step: ``scalars`` maps ``(window, trace)`` to a value."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise TypeError(f"step must be an int, got {type(step).__name__}")
        step = int(step)
        for (window, trace), value in scalars.items():
            self.scalars.setdefault(window, {}).setdefault(trace, Series()).append(step, value)
        for layer, stats in activations.items():
            self.activation_mean.setdefault(layer, Series()).append(step, stats.mean)
            self.activation_std.setdefault(layer, Series()).append(step, stats.std)
            self.histograms[layer] = Histogram(step, stats.fractions, stats.edges)
        for name, norm in grad_norms.items():
            self.grad_norms.setdefault(name, Series()).append(step, norm)
        self.records += 1


@dataclass
class Panel:
    """One plot, the same in both renderers: a visdom window or a matplotlib axes.

    ``traces[name] = (xs, ys)`` holds the finite points only. ``kind`` is
    ``"lines"`` (a value per step) or ``"histogram"`` (a step line over bin edges).
    """

    id: str
    title: str
    xlabel: str
    ylabel: str
    traces: dict[str, tuple[list[float], list[float]]]
    kind: str = "lines"
    log_y: bool = False


def _histogram_points(h: Histogram) -> tuple[list[float], list[float]]:
    # A step line: the value of bin i from edges[i] to edges[i + 1].
    if not h.fractions:
        return [], []
    return list(h.edges), list(h.fractions) + [h.fractions[-1]]


def _positive(points: tuple[list[float], list[float]]) -> tuple[list[float], list[float]]:
    # A log axis cannot show zero or negative values.
    kept = [(x, y) for x, y in zip(*points) if y > 0]
    return [x for x, _ in kept], [y for _, y in kept]


def panels(log: DashboardLog, log_y: frozenset[str] = frozenset(),
           labels: Mapping[LayerName, str] | None = None) -> list[Panel]:
    """The plots of ``log``: a panel per scalar (log y axis if its name is in
    ``log_y``), then activation mean, std and histograms (a line per layer, named
    ``labels[layer]`` if given), then gradient norms."""
    label = (lambda layer: labels.get(layer, layer)) if labels else (lambda layer: layer)
    out = [Panel(f"scalar-{window}", window, "step", window,
                 {trace: _positive(series.finite_points()) if window in log_y else series.finite_points()
                  for trace, series in traces.items()},
                 log_y=window in log_y)
           for window, traces in log.scalars.items()]
    if log.activation_mean:
        out.append(Panel("activation-mean", "activation mean per layer", "step", "mean",
                         {label(k): s.finite_points() for k, s in log.activation_mean.items()}))
        out.append(Panel("activation-std", "activation std per layer", "step", "std",
                         {label(k): s.finite_points() for k, s in log.activation_std.items()}))
        step = max(h.step for h in log.histograms.values())
        out.append(Panel("activation-histogram", f"activation histograms (step {step})", "value",
                         "fraction of elements",
                         {label(k): _histogram_points(h) for k, h in log.histograms.items()},
                         kind="histogram"))
    if log.grad_norms:
        out.append(Panel("grad-norm", "gradient norm per parameter", "step", "‖grad‖₂",
                         {k: _positive(s.finite_points()) for k, s in log.grad_norms.items()}, log_y=True))
    return out
