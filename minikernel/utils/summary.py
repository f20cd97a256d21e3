"""A Keras-style model summary built from forward hooks (what pytorch-summary printed).

``summary(model, example)`` hangs a forward hook on every leaf module, runs one
forward pass under ``torch.no_grad()``, and removes the hooks. Each row is one
call of a leaf module, in call order: its name from ``named_modules()``, its type,
the output's shape and the number of parameters the module itself owns
(``sum(p.numel() for p in module.parameters(recurse=False))``). A module called
twice gives two rows but its parameters are counted once in the totals.

Example::

    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    >>> print(summary(net, torch.zeros(1, 2)))
    layer  type    output shape  params
    0      Linear  (1, 8)            24
    1      ReLU    (1, 8)             0
    2      Linear  (1, 3)            27
    total params: 51 (trainable 51)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Row:
    name: str
    type: str
    output_shape: tuple[int, ...] | None
    params: int


@dataclass(frozen=True)
class Summary:
    rows: tuple[Row, ...]
    total_params: int
    trainable_params: int

    def __str__(self) -> str:
        table = [("layer", "type", "output shape", "params")]
        table += [(r.name, r.type, str(r.output_shape) if r.output_shape is not None else "-", str(r.params))
                  for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(4)]
        lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                 for row in table]
        lines.append(f"total params: {self.total_params} (trainable {self.trainable_params})")
        return "\n".join(lines)


def _shape(output: Any) -> tuple[int, ...] | None:
    if isinstance(output, torch.Tensor):
        return tuple(output.shape)
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return tuple(output[0].shape)
    return None


def summary(model: torch.nn.Module, *example: Any) -> Summary:
    """Call ``model(*example)`` once with a hook on every leaf module; see the module doc.

    Args:
        model (torch.nn.Module): the model to describe.
        *example: the inputs of one forward call.

    Totals count each parameter once (``model.parameters()`` deduplicates shared ones).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"summary needs a torch.nn.Module, got {type(model).__name__}")
    rows: list[Row] = []
    handles = []
    for name, module in model.named_modules():
        if next(module.children(), None) is None:  # a leaf
            def hook(m, args, output, name=name):
                own = sum(p.numel() for p in m.parameters(recurse=False))
                rows.append(Row(name or type(m).__name__, type(m).__name__, _shape(output), own))
            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(*example)
    finally:
        for h in handles:
            h.remove()
    params = list(model.parameters())
    return Summary(tuple(rows), sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad))
