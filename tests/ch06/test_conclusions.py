"""Chapter 06's printed conclusions about Apex's replacements, recomputed: the dtypes of
O0–O3 done with torch, why O2 kept float32 master weights, SyncBatchNorm's conversion,
and DDP's delayed all-reduce (with its refusal of SyncBatchNorm on CPU modules)."""
from __future__ import annotations

import copy
import os

import pytest
import torch
import torch.distributed as dist


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 4))


def test_autocast_is_o1_weights_stay_float32_outputs_are_bfloat16():
    net = _model()
    with torch.autocast("cpu", torch.bfloat16):
        out = net(torch.randn(32, 8))
    out.float().sum().backward()
    assert out.dtype == torch.bfloat16
    assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in net.parameters())


def test_o2_by_hand_keeps_batchnorm_float32_and_o3_casts_everything():
    o2, o3 = _model().to(torch.bfloat16), _model().to(torch.bfloat16)
    o2[1].float()
    x = torch.randn(32, 8, dtype=torch.bfloat16)
    assert o2(x).dtype == o3(x).dtype == torch.bfloat16
    assert (o2[0].weight.dtype, o2[1].weight.dtype) == (torch.bfloat16, torch.float32)
    assert {p.dtype for p in o3.parameters()} == {torch.bfloat16}


def test_small_updates_vanish_in_bfloat16_and_accumulate_in_float32():
    w16, w32 = torch.tensor(1.0, dtype=torch.bfloat16), torch.tensor(1.0)
    for _ in range(100):
        w16 -= 0.001
        w32 -= 0.001
    assert w16.item() == 1.0
    assert abs(w32.item() - 0.9) < 1e-4
    assert torch.finfo(torch.bfloat16).eps == 2 ** -7 and torch.finfo(torch.float16).eps == 2 ** -10


def test_convert_sync_batchnorm_swaps_the_layer_and_keeps_its_state():
    net = _model()
    for _ in range(3):
        net(torch.randn(32, 8))
    synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(net))
    assert [type(m) for m in synced] == [torch.nn.Linear, torch.nn.SyncBatchNorm, torch.nn.ReLU, torch.nn.Linear]
    assert net.state_dict().keys() == synced.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), synced.state_dict().values()))
    x = torch.randn(32, 8)
    assert torch.equal(net.eval()(x), synced.eval()(x))


@pytest.fixture
def one_process_group(tmp_path):
    dist.init_process_group("gloo", store=dist.FileStore(os.path.join(tmp_path, "store"), 1), rank=0,
                            world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_ddp_refuses_syncbatchnorm_on_cpu_modules(one_process_group):
    synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(_model())
    with pytest.raises(ValueError, match="SyncBatchNorm layers only work with GPU modules"):
        torch.nn.parallel.DistributedDataParallel(synced)


def test_ddp_delayed_all_reduce_under_autocast_gives_the_plain_gradients(one_process_group):
    net, plain = _model(), _model()
    delayed = [(name, p) for name, p in net.named_parameters() if name != "0.weight"]
    ddp = torch.nn.parallel.DistributedDataParallel(net, delay_all_reduce_named_params=delayed,
                                                    param_to_hook_all_reduce=net[0].weight)
    assert ddp.bucket_bytes_cap == 25 * 2 ** 20
    assert ddp.parameters_to_ignore == {name for name, _ in delayed}
    x, y = torch.randn(32, 8), torch.randn(32, 4)
    scaler = torch.amp.GradScaler("cpu")
    for wrapped in (ddp, plain):
        with torch.autocast("cpu", torch.bfloat16):
            out = wrapped(x)
        scaler.scale(torch.nn.functional.mse_loss(out.float(), y)).backward()
    assert out.dtype == torch.bfloat16
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(net.parameters(), plain.parameters()))
