"""Activation checkpointing: keep a segment's inputs, recompute its insides in backward.

Autograd keeps, for every op, the tensors its backward needs (``x`` for ``sin``, the
input and the weight for ``linear``...): the activation memory grows with depth.
``checkpoint(f, x)`` runs ``f`` without recording a graph and saves only ``x``; when
the gradient reaches it, it runs ``f(x)`` again with the graph on and backpropagates
through that fresh graph. Memory for compute: one more forward of every checkpointed
segment.

This module follows ``torch.utils.checkpoint.checkpoint(..., use_reentrant=True)``:
a custom ``torch.autograd.Function`` whose backward re-enters the autograd engine
(``torch.autograd.backward`` on the recomputed outputs). ``use_reentrant=False``, the
variant PyTorch recommends, gets the same gradients another way: it runs ``f`` with
the graph on but under ``saved_tensors_hooks`` that drop what would be saved and
recompute it on first use in backward; that also works with ``torch.autograd.grad``,
with inputs that need no gradient and with keyword arguments.

Works on torch tensors (the memory it saves is torch's).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from minikernel.course.exercise import exercise


@exercise("10.1")
def checkpoint_forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
    """Forward of the recomputing Function: run ``run_function(*args)`` and remember how to rerun it.

    * Keep ``run_function`` and ``preserve_rng_state`` on ``ctx``.
    * With ``preserve_rng_state``, keep the CPU generator's state
      (``torch.get_rng_state()``): a dropout inside must draw the same mask when rerun.
    * Save the tensor arguments with ``ctx.save_for_backward`` (so autograd checks that
      nobody modified them in place), and remember where they sat among ``args`` and
      the non-tensor arguments themselves.
    * Return ``run_function(*args)`` computed under ``torch.no_grad()`` — no graph, so
      nothing inside is saved. (Autograd already runs a Function's forward without
      recording; say so anyway.)

    Matches the forward of ``torch.utils.checkpoint.CheckpointFunction``
    (``checkpoint(run_function, *args, use_reentrant=True)``). ≈10 lines.
    """
    # TODO(10.1): ≈10 lines
    raise NotImplementedError("exercise 10.1 (checkpoint_forward) is not implemented yet")


@exercise("10.1")
def checkpoint_backward(ctx: Any, *grad_outputs: torch.Tensor) -> tuple:
    """Backward of the recomputing Function: rerun the segment with the graph on, backpropagate.

    * Rebuild the argument list: every saved tensor ``detach()``-ed (a new leaf, cut
      from the outer graph) with its ``requires_grad`` kept; non-tensors as they were.
    * Restore the generator state saved in forward while rerunning, and put the
      current state back afterwards (``torch.random.fork_rng(devices=[])`` then
      ``torch.set_rng_state``).
    * Rerun ``run_function`` under ``torch.enable_grad()`` (backward runs without grad
      mode), making the outputs a tuple if a single tensor came back.
    * ``torch.autograd.backward`` the outputs that require grad (tensors only: skip
      non-tensor outputs, integer tensors and tensors that need no gradient) with their
      ``grad_outputs``: this accumulates into the parameters used inside and into the
      detached inputs' ``.grad``. None of them requiring grad is a RuntimeError:
      ``"none of output has requires_grad=True, this checkpoint() is not necessary"``.
    * Return ``(None, None, *input_grads)``: nothing for ``run_function`` and
      ``preserve_rng_state``, then each argument's ``.grad`` (None for non-tensors).

    Matches the backward of ``torch.utils.checkpoint.CheckpointFunction``. ≈15 lines.
    """
    # TODO(10.1): ≈15 lines
    raise NotImplementedError("exercise 10.1 (checkpoint_backward) is not implemented yet")


_GRAD_REFUSED = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
                 "`inputs` parameter to .backward(). To resolve this error, you can either set use_reentrant=False, "
                 "or call .backward() without passing the `inputs` argument.")
_PASS_USE_REENTRANT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants.")


class CheckpointFunction(torch.autograd.Function):
    """``apply(run_function, preserve_rng_state, *args)``: ``run_function(*args)``, recomputed in backward."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        return checkpoint_forward(ctx, run_function, preserve_rng_state, *args)

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not torch.autograd._is_checkpoint_valid():  # autograd.grad or backward(inputs=...): torch refuses
            raise RuntimeError(_GRAD_REFUSED)
        return checkpoint_backward(ctx, *grad_outputs)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True) -> Any:
    """``function(*args)``, saving only ``args`` for backward and recomputing the rest.

    Matches ``torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=True,
    preserve_rng_state=...)``: same values, same gradients (also the same as
    ``use_reentrant=False``, which this module's docstring compares).

    Raises:
        ValueError: ``use_reentrant=False`` — this is the reentrant mechanism; use
            ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`` for the other.
    """
    if use_reentrant is None:
        warnings.warn(_PASS_USE_REENTRANT, stacklevel=2)  # torch's words (and its default, True)
    if use_reentrant is False:
        raise ValueError("minikernel's checkpoint is the recomputing Function (use_reentrant=True); for the "
                         "saved-tensor-hooks variant call torch.utils.checkpoint.checkpoint(..., use_reentrant=False)")
    if not any(torch.is_tensor(a) and a.requires_grad for a in args):
        # torch warns too: the Function's output would need no grad, so backward never reaches it.
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


def checkpoint_sequential(functions: torch.nn.Sequential | Sequence[Callable], segments: int, input: torch.Tensor,
                          use_reentrant: bool | None = None, preserve_rng_state: bool = True) -> torch.Tensor:
    """Run ``functions`` in order, in ``segments`` pieces; all but the last are checkpointed.

    Each piece has ``len(functions) // segments`` functions (the last one takes the
    rest); only the pieces' inputs stay saved through the forward. With N layers and
    k segments about k + N/k activations are alive at the peak, least near k = √N.

    Matches ``torch.utils.checkpoint.checkpoint_sequential(functions, segments, input,
    use_reentrant=True)``.
    """
    if isinstance(functions, torch.nn.Sequential):
        functions = list(functions.children())
    functions = list(functions)
    if not 1 <= segments <= max(len(functions), 1):
        raise ValueError(f"segments must be between 1 and the number of functions ({len(functions)}), got {segments}")

    def run(start: int, end: int) -> Callable:
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state)
    return run(end + 1, len(functions) - 1)(input)
