"""Chapter 08's saving examples: torch modules to save, load, trace and script.

* ``MyModule``      the notes' module (one ``Linear(3, 3)``): its ``state_dict`` round trip;
* ``DecisionGate``  the notes' ``MyDecisionGate``: ``x`` if ``x.sum() > 0`` else ``-x``,
  a branch that depends on the data — what ``torch.jit.trace`` cannot record and
  ``torch.jit.script`` can;
* ``MyCell``, ``MyRNNLoop``, ``WrapRNN``  the notes' nesting of the two: a scripted gate
  inside a traced cell inside a scripted loop inside a traced wrapper;
* ``CondGate``      the gate's branch as ``torch.cond``, for ``torch.export``.

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


class MyCell(torch.nn.Module):
    """The notes' RNN cell: ``h' = tanh(gate(linear(x)) + h)``, returned twice (output and state)."""

    def __init__(self, gate: torch.nn.Module) -> None:
        super().__init__()
        self.dg = gate
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


class MyRNNLoop(torch.nn.Module):
    """A Python loop over the time steps of ``xs`` (T, 3, 4), calling a *traced* ``MyCell``.

    The cell is traced once here, with a *scripted* ``DecisionGate`` inside it, so the
    trace keeps the gate's ``if`` (a scripted submodule is called, not unrolled). Script
    this module to keep its loop: tracing would unroll it to the example's length.
    """

    def __init__(self) -> None:
        super().__init__()
        example = (torch.rand(3, 4), torch.rand(3, 4))
        self.cell = torch.jit.trace(MyCell(torch.jit.script(DecisionGate())), example)

    def forward(self, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


class WrapRNN(torch.nn.Module):
    """``relu`` of a scripted ``MyRNNLoop``'s output; the notes *trace* this outer module."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = torch.jit.script(MyRNNLoop())

    def forward(self, xs: torch.Tensor) -> torch.Tensor:
        y, h = self.loop(xs)
        return torch.relu(y)


class CondGate(torch.nn.Module):
    """``DecisionGate`` with its branch written as ``torch.cond``, which ``torch.export`` can capture."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda t: t.clone(), lambda t: -t, (x,))
