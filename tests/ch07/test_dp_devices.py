"""DataParallel's device_ids[0] check, run by torch's own code on stand-in devices (no GPU needed).

Oracle: the message in torch's ``DataParallel.forward``, read from the installed source.
"""
from __future__ import annotations

import inspect

import torch

from minikernel.distributed import run_ranks
from minikernel.distributed.dp_devices import dataparallel_checks


def test_forward_refuses_a_module_that_is_not_on_device_ids_0():
    seen = run_ranks(dataparallel_checks, 1, 3, timeout=20, deadline=60)[0]
    assert seen["device_ids"] == [0, 1, 2] and seen["src_device_obj"] == "privateuseone:0"
    assert seen["output_device"] == 0
    assert "(device_ids[0]) but found one of" in inspect.getsource(torch.nn.DataParallel.forward)
    assert seen["forward"] == ("RuntimeError: module must have its parameters and buffers on device privateuseone:0 "
                               "(device_ids[0]) but found one of them on device: cpu")


def test_the_stand_in_devices_stay_in_their_process():
    run_ranks(dataparallel_checks, 1, timeout=20, deadline=60)
    assert torch.nn.DataParallel(torch.nn.Linear(2, 2)).device_ids == []
