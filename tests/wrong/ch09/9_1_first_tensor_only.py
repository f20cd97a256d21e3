"""Only the first tensor argument's keys are taken: a second tensor's extra keys are lost."""
from __future__ import annotations

from minikernel.dispatch import state
from minikernel.dispatch.keys import DispatchKey, keyset

EXERCISE = "9.1"


def compute_keys(op, args, kwargs):
    tensors = op.schema.tensor_arguments(args, kwargs)
    keys = tensors[0]._dispatch_keys() if tensors else keyset(DispatchKey.BackendSelect, DispatchKey.CPU)
    return (keys | state.local_include()) - state.local_exclude()
