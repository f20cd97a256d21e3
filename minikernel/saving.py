"""Chapter 08's saving examples: torch modules to save, load, trace and script.

* ``MyModule``      the notes' module (one ``Linear(3, 3)``): its ``state_dict`` round trip;
* ``DecisionGate``  the notes' ``MyDecisionGate``: ``x`` if ``x.sum() > 0`` else ``-x``,
  a branch that depends on the data — what ``torch.jit.trace`` cannot record and
  ``torch.jit.script`` can.

They live in the package (not in a notebook cell) because TorchScript reads a
module's source code, and ``torch.save(model)`` pickles a reference to the class by
its import path.
"""
from __future__ import annotations

import torch


class MyModule(torch.nn.Module):
    """``y = Linear(3, 3)(x)``."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


class DecisionGate(torch.nn.Module):
    """``x`` when its elements sum to a positive number, else ``-x``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x
        return -x
