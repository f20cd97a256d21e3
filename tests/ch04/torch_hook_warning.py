"""The full backward hooks' warning when no input of the module requires grad, on every torch
the course admits.

From torch 2.11 on, the output node's hook warns ``NO_INPUT_GRAD_WARNING`` (stacklevel=5)
just before it calls the full backward hooks itself, as exercise 4.3's docstring specifies.
torch before 2.11 runs the same branch without the warning. On such a torch,
``torch_warns_when_no_input_needs_grad`` adds it there: that branch is the one place that
calls ``BackwardHook._pack_with_none`` with no indices (the grad_input of all None), so a
wrapper of it warns at that call, one frame deeper (stacklevel=6 points at the same line as
2.11's). From 2.11 on it changes nothing.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Iterator

from torch.utils.hooks import BackwardHook

from minikernel.nn.backward_hooks import NO_INPUT_GRAD_WARNING
from tests.torch_versions import torch_before


@contextmanager
def torch_warns_when_no_input_needs_grad() -> Iterator[None]:
    if not torch_before("2.11"):
        yield
        return
    plain = BackwardHook._pack_with_none

    def pack_with_none(self, indices, values, size):
        if len(indices) == 0 and len(values) == 0:
            warnings.warn(NO_INPUT_GRAD_WARNING, stacklevel=6)
        return plain(self, indices, values, size)

    BackwardHook._pack_with_none = pack_with_none
    try:
        yield
    finally:
        BackwardHook._pack_with_none = plain
