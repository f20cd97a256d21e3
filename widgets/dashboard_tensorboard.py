"""A :class:`~widgets.dashboard.Dashboard`'s panels as TensorBoard event files.

The same records the visdom and matplotlib renderers draw, written with
``torch.utils.tensorboard.SummaryWriter`` (what the notes did with tensorboardX):

* every scalar of ``log`` (``loss``, ``lr``, ``scale``, ...) with ``add_scalar``
  under its own name, and each parameter's gradient norm as ``grad_norm/<name>``;
* histograms with ``add_histogram``: each watched layer's output
  (``activation/<layer>``), each parameter (``weight/<name>``) and its gradient
  (``grad/<name>``), every ``every``-th step (histograms are the costly part);
* the model's graph with ``add_graph`` (a ``torch.jit.trace`` of a
  ``torch.nn.Module``; see :meth:`TensorBoardWriter.add_graph`).

A dashboard's runs become TensorBoard runs: ``<logdir>/<env>/<run>`` (``run``
``None`` writes to ``<env>/default``), so TensorBoard draws the ``torch`` and
``minikernel`` runs of chapter 04 as two lines in each chart. View them with
``python -m minikernel tensorboard`` (or ``tensorboard --logdir runs --host 127.0.0.1``).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping

import torch
from torch.utils.tensorboard import SummaryWriter

from minikernel.course.tensorboard_server import default_logdir

from .dashboard_log import to_torch

EVENT_PREFIX = "events.out.tfevents."


def resolve_logdir(tensorboard: bool | str | Path) -> Path:
    """The directory a ``Dashboard(tensorboard=...)`` writes under.

    ``True`` means ``$MINIKERNEL_TENSORBOARD_DIR`` or ``<repository>/runs`` (where
    ``python -m minikernel tensorboard`` looks); a string or Path is used as is.
    """
    if tensorboard is True:
        return default_logdir()
    if isinstance(tensorboard, (str, Path)) and str(tensorboard):
        return Path(tensorboard)
    raise TypeError(f"tensorboard must be True or a directory, got {tensorboard!r}")


def clear_events(directory: Path) -> int:
    """Delete the event files under ``directory`` (a new dashboard starts an empty
    env, as in visdom); other files are left alone. Returns how many were deleted."""
    removed = 0
    if directory.is_dir():
        for path in directory.rglob(EVENT_PREFIX + "*"):
            path.unlink()
            removed += 1
    return removed


class TensorBoardWriter:
    r"""One ``SummaryWriter`` per run, under ``logdir/env``.

    Args:
        logdir (str or Path): the TensorBoard log directory.
        env (str): the dashboard's env; its old event files are deleted.

    Example::

        >>> writer = TensorBoardWriter("runs", "ch04")
        >>> writer.scalars(0, "torch", {"loss": 1.1})
        >>> writer.close()   # runs/ch04/torch/events.out.tfevents.*
    """

    def __init__(self, logdir: str | Path, env: str):
        self.root = Path(logdir) / env
        clear_events(self.root)
        self._writers: dict[str, SummaryWriter] = {}

    def run_dir(self, run: str | None) -> Path:
        return self.root / (run or "default")

    def writer(self, run: str | None) -> SummaryWriter:
        key = run or "default"
        if key not in self._writers:
            # max_queue/flush_secs: small runs reach the disk (and TensorBoard) quickly.
            self._writers[key] = SummaryWriter(str(self.run_dir(run)), max_queue=100, flush_secs=2)
        return self._writers[key]

    def scalars(self, step: int, run: str | None, values: Mapping[str, float]) -> None:
        """``add_scalar(name, value, step)`` for each value (non-finite ones left out, as in the plots)."""
        w = self.writer(run)
        for name, value in values.items():
            if math.isfinite(value):
                w.add_scalar(name, value, step)

    def histograms(self, step: int, run: str | None, tensors: Mapping[str, torch.Tensor]) -> None:
        """``add_histogram(tag, values, step)`` of each tensor's finite values."""
        w = self.writer(run)
        for tag, tensor in tensors.items():
            values = tensor.detach().float().reshape(-1).cpu()
            values = values[torch.isfinite(values)]
            if values.numel():
                w.add_histogram(tag, values, step)

    def add_graph(self, model: Any, example_input: Any, run: str | None = None) -> None:
        """The graph of ``model`` called on ``example_input`` (``SummaryWriter.add_graph``).

        TensorBoard's graph comes from ``torch.jit.trace``, so ``model`` must be a
        ``torch.nn.Module``: a minikernel model is no torch module and cannot be traced.
        """
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"add_graph traces a torch.nn.Module with torch.jit.trace; got "
                            f"{type(model).__name__}: pass the torch model (minikernel models are not traceable)")
        self.writer(run).add_graph(model, example_input)

    def flush(self) -> None:
        for w in self._writers.values():
            w.flush()

    def close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers.clear()

    @property
    def runs(self) -> list[str]:
        return sorted(self._writers)


def parameter_tensors(named: Iterable[tuple[str, Any]]) -> dict[str, torch.Tensor]:
    """``weight/<name>`` and ``grad/<name>`` tensors for :meth:`TensorBoardWriter.histograms`."""
    out: dict[str, torch.Tensor] = {}
    for name, p in named:
        value = to_torch(p)
        if value is not None:
            out[f"weight/{name}"] = value
        grad = to_torch(getattr(p, "grad", None))
        if grad is not None:
            out[f"grad/{name}"] = grad
    return out
