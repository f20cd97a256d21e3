"""The DDP tutorial's ToyMpModel (one process, two devices) and DDP's device_ids checks.

Oracles: ``ddp.ToyModel`` built with the same seed, ``ddp.train_single``, and torch's own
error texts (read in ``torch/nn/parallel/distributed.py``).
"""
from __future__ import annotations

import torch

from minikernel.distributed import run_ranks
from minikernel.distributed.ddp import ToyModel, train_single
from minikernel.distributed.toy_mp import ToyMpModel, ddp_refusals, error_text, train_mp_ddp_rank, without_the_move


def test_toy_mp_model_computes_what_toy_model_computes():
    torch.manual_seed(0)
    single = ToyModel()
    torch.manual_seed(0)
    split = ToyMpModel("cpu", "cpu")
    x = torch.randn(7, 10)
    torch.testing.assert_close(split(x), single(x), rtol=0, atol=0)


def test_the_move_between_devices_is_needed():
    model = ToyMpModel("cpu", "meta")
    x = torch.randn(3, 10)
    assert model(x).device.type == "meta" and model(x).shape == (3, 5)
    assert error_text(without_the_move, model, x).startswith("RuntimeError: Tensor on device meta is not on the "
                                                             "expected device cpu")


def test_ddp_around_toy_mp_model_equals_one_process():
    single = train_single(3)
    for params in run_ranks(train_mp_ddp_rank, 2, 3, timeout=20, deadline=90):
        for got, want in zip(params, single, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_ddp_refuses_several_device_ids_in_one_process():
    refusals = run_ranks(ddp_refusals, 1, timeout=20, deadline=60)[0]
    assert refusals["DDP(model, device_ids=[0, 1])"] == ("ValueError: device_ids can only be None or contain a "
                                                          "single element.")
    assert "only work with single-device/multiple-device GPU modules or CPU modules" in \
        refusals["DDP(model, device_ids=[0])"]
    assert refusals["DDP(ToyMpModel('cpu', 'meta'))"].endswith("locate in {'cpu', 'meta'}.")
