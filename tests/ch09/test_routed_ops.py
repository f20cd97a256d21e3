"""Every Tensor operation goes through the dispatcher: writes, copies, factories and the
views with no chapter 01 exercise are ``aten::`` operators, so a dispatch mode sees them.

Torch is the oracle: the same Python code runs under a minikernel ``LoggingMode`` and a
torch ``TorchDispatchMode``, and the lists of operators they see are compared; in-place
writes bump the version counter once, as torch's do; gradients through the routed ops
are torch's (``assert_autograd_same_as_torch``). The mode and version tests need no
exercise (the library's dispatcher, and its numpy stand-in for unfinished kernels);
the gradient tests need the engine (3.3).
"""
from __future__ import annotations

from typing import Callable

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import minikernel as mk
from minikernel import dispatch as D
from tests.helpers import assert_autograd_same_as_torch

#: torch.tensor's marker for a tensor made from Python data; minikernel.tensor is no operator
_NOT_AN_OP = {"aten::lift_fresh"}


class _TorchLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = "aten::" + str(func).removeprefix("aten.").removesuffix(".default")
        self.names.append(name)
        return func(*args, **(kwargs or {}))


def _seen(program: Callable, lib, *tensors) -> list[str]:
    """The operators a logging mode sees while ``program(lib, *tensors)`` runs."""
    if lib is torch:
        with _TorchLog() as log:
            program(lib, *tensors)
        return [n for n in log.names if n not in _NOT_AN_OP]
    with D.LoggingMode() as log:
        program(lib, *tensors)
    return [name for name, _ in log.log]


def _setitem(key, value) -> Callable:
    def program(lib, x, *_):
        x[key] = value
    return program


def _mask(lib, x, mask):
    x[mask] = 5.0


#: name -> program(lib, x, other); x is 3x4 (ones), other a 4-vector (zeros), both made outside the mode
PROGRAMS = {
    "copy_": lambda lib, x, o: x.copy_(o),
    "fill_": lambda lib, x, o: x.fill_(2.0),
    "zero_": lambda lib, x, o: x.zero_(),
    "clone": lambda lib, x, o: x.clone(),
    "as_strided": lambda lib, x, o: x.as_strided((2, 2), (1, 2), 1),
    "zeros": lambda lib, x, o: lib.zeros(2, 3),
    "ones": lambda lib, x, o: lib.ones(2, 3, dtype=lib.float64),
    "select": lambda lib, x, o: x.select(0, 1),
    "narrow": lambda lib, x, o: x.narrow(1, 1, 2),
    "squeeze": lambda lib, x, o: x.unsqueeze(0).squeeze(),
    "squeeze(dim)": lambda lib, x, o: x.squeeze(0),
    "squeeze(dims)": lambda lib, x, o: x.squeeze((0, 1)),
    "unflatten": lambda lib, x, o: x.unflatten(1, (2, 2)),
    "diagonal": lambda lib, x, o: x.diagonal(1),
    "unbind": lambda lib, x, o: x.unbind(1),
    "split": lambda lib, x, o: x.split(3, 1),
    "split(sizes)": lambda lib, x, o: x.split([1, 3], 1),
    "chunk": lambda lib, x, o: x.chunk(2, 0),
    "to(same device)": lambda lib, x, o: x.to("cpu"),
    "x[None, 0]": lambda lib, x, o: x[None, 0],
    "x[..., 1]": lambda lib, x, o: x[..., 1],
    "x[1:, None, ::2]": lambda lib, x, o: x[1:, None, ::2],
    "x[...]": lambda lib, x, o: x[...],
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_logging_mode_sees_the_ops_torchs_mode_sees(name):
    program = PROGRAMS[name]
    theirs = _seen(program, torch, torch.ones(3, 4), torch.zeros(4))
    ours = _seen(program, mk, mk.ones(3, 4), mk.zeros(4))
    assert ours == theirs


@pytest.mark.parametrize("key", ["int tensor", "mask", "tensor and slice"])
def test_advanced_indexing_is_index_tensor(key):
    t = torch.arange(12.0).reshape(3, 4)
    make = {"int tensor": lambda lib, x: lib.tensor([2, 0, 2]),
            "mask": lambda lib, x: x > 4,
            "tensor and slice": lambda lib, x: (slice(1, None), lib.tensor([3, 1]))}[key]
    seen, values = [], []
    for lib, x in ((torch, t.clone()), (mk, mk.Tensor.from_torch(t.clone()))):
        index = make(lib, x)
        seen.append(_seen(lambda lib, x, index=index: values.append(x[index]), lib, x))
    assert seen[1] == seen[0] and seen[0][-1] == "aten::index.Tensor"  # after the slice, in its case
    assert values[1].tolist() == values[0].tolist()


def test_a_masked_assignment_is_index_put_():
    t = torch.ones(3, 4)
    m = mk.Tensor.from_torch(t.clone())
    assert _seen(_mask, mk, m, m > 0) == _seen(_mask, torch, t, t > 0) == ["aten::index_put_"]


def test_a_copy_to_another_device_is_to_copy():
    """torch's ``to`` of another device (here meta, which every torch build has) or dtype is ``_to_copy``;
    so is minikernel's ``.cuda()``/``.cpu()`` (numba's CUDA simulator without a GPU)."""
    t = torch.ones(2)
    with _TorchLog() as theirs:
        t.to("meta")
    x = mk.ones(2, 3).t()
    with D.LoggingMode() as ours:
        there = x.cuda()
        back = there.cpu()
    assert [n for n, _ in ours.log] == ["aten::_to_copy"] * 2 and theirs.names == ["aten::_to_copy"]
    assert there.is_cuda and back.stride() == x.stride() and back.tolist() == x.tolist()


def test_a_factory_goes_to_its_devices_backend_through_backend_select():
    for device, backend in (("cpu", "CPU"), ("cuda", "CUDA")):
        with D.trace() as steps:
            out = mk.zeros(2, 3, device=device)
        assert [(s.op, s.key) for s in steps] == [("aten::zeros", "BackendSelect"), ("aten::zeros", backend)]
        assert out.device.type == device and out.tolist() == torch.zeros(2, 3).tolist()


def test_autograd_writes_an_inplace_result_with_copy_below_autograd():
    """The autograd layer computes an in-place op out of place and stores it with ``aten::copy_``,
    which bumps the version once (ADInplaceOrView), as torch's ``mul_`` does (torch's mode sees
    ``mul_`` itself: its autograd kernel redispatches the in-place op)."""
    x = mk.ones(3, requires_grad=True)
    y = x * 1
    before = y._version
    with D.trace() as steps, D.LoggingMode() as log:
        y.mul_(2)
    # y's old values kept for backward (torch saves original_self too), the op out of place, the write
    assert [n for n, _ in log.log] == ["aten::clone", "aten::mul", "aten::copy_"]
    assert ("aten::copy_", "ADInplaceOrView") in [(s.op, s.key) for s in steps]
    t = torch.ones(3, requires_grad=True) * 1
    t.mul_(2)
    assert y._version - before == t._version == 1


WRITES = {
    "copy_": lambda x, lib: x.copy_(lib.zeros(4, dtype=x.dtype)),
    "fill_": lambda x, lib: x.fill_(3),
    "zero_": lambda x, lib: x.zero_(),
    "t[0] = number": lambda x, lib: x.__setitem__(0, 7.0),
    "t[1:, 2] = tensor": lambda x, lib: x.__setitem__((slice(1, None), 2), lib.ones(2, dtype=x.dtype)),
    "t[mask] = number": lambda x, lib: x.__setitem__(x > 0.5, 2.0),
    "t[..., 1] = number": lambda x, lib: x.__setitem__((Ellipsis, 1), 4.0),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_a_write_bumps_the_version_once_like_torchs(name):
    t = torch.rand(3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    m = mk.Tensor.from_torch(t.clone())
    view_t, view_m = t[1:], m[1:]
    WRITES[name](t, torch)
    WRITES[name](m, mk)
    assert m._version == t._version == 1 and view_m._version == view_t._version
    assert m.tolist() == t.tolist()


# ------------------------------------------------------------- gradients (the engine: 3.3)
# Only ops whose backward is no exercise (add, views, writes): the grade of 3.3 needs no later exercise.
GRADIENT_PROGRAMS = {
    "select": lambda x, lib: (x + x).select(1, -1),
    "narrow": lambda x, lib: (x + x).narrow(0, 1, 2),
    "squeeze/unsqueeze": lambda x, lib: (x + x).unsqueeze(1).squeeze(1).unsqueeze(0).squeeze((0,)),
    "diagonal": lambda x, lib: (x + x).diagonal(-1),
    "unbind": lambda x, lib: (x + x).unbind(1)[2],
    "split": lambda x, lib: (x + x).split([1, 3], 1)[1],
    "chunk": lambda x, lib: (x + x).chunk(2, 0)[1],
    "flatten/unflatten": lambda x, lib: (x + x).flatten().unflatten(0, (4, 3)),
    "clone": lambda x, lib: x.clone() + x,
    "copy_ into a non-leaf": lambda x, lib: (x + 0).copy_(x.select(0, 0) + x.select(0, 1)),
    "fill_ a view of a non-leaf": lambda x, lib: _through_view(x, lambda v: v.fill_(2.0)),
    "zero_ a view of a non-leaf": lambda x, lib: _through_view(x, lambda v: v.zero_()),
    "setitem a slice": lambda x, lib: _assign(x, (slice(None), 1), x.select(1, 0) + 4),
    "setitem a mask": lambda x, lib: _assign(x, x > 0.5, 9.0) + 0,  # its node: CopyBackwards, not IndexPut
}


def _through_view(x, write):
    y = x + 0
    write(y[1:, ::2])
    return y


def _assign(x, key, value):
    y = x + 0
    y[key] = value
    return y


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("name", list(GRADIENT_PROGRAMS))
def test_gradients_through_the_routed_ops_are_torchs(name):
    values = torch.rand(3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert_autograd_same_as_torch(GRADIENT_PROGRAMS[name], values)


NO_GRAD_WRITES = {
    "fill_": lambda w, lib: w.fill_(2.0),
    "zero_": lambda w, lib: w.zero_(),
    "copy_": lambda w, lib: w.copy_(lib.zeros(3)),
    "mul_": lambda w, lib: w.mul_(2.0),
    "add_": lambda w, lib: w.add_(w),
}


@pytest.mark.parametrize("name", list(NO_GRAD_WRITES))
def test_under_no_grad_a_write_to_a_leaf_that_requires_grad_is_the_write_alone(name):
    """torch's autograd kernels only redispatch under ``no_grad`` (nothing to record): a mode sees
    the one in-place op, and the version goes up once."""
    write, seen, versions = NO_GRAD_WRITES[name], [], []
    for lib in (torch, mk):
        w = lib.ones(3, requires_grad=True)
        other = lib.zeros(3)  # made outside the mode
        with lib.no_grad():
            names = _seen(lambda lib, w, other=other: write(w, lib) if name != "copy_" else w.copy_(other), lib, w)
        seen.append([n.replace("aten::mul_.Tensor", "aten::mul_").replace("aten::add_.Tensor", "aten::add_")
                     for n in names])
        versions.append(w._version)
    assert seen[1] == seen[0]
    assert versions[1] == versions[0] == 1


@pytest.mark.exercise("4.5")  # modules (4.1) and load_state_dict (4.5)
def test_layers_start_and_load_with_torchs_parameter_versions():
    """Parameters are written in place by their initialization and by ``load_state_dict``
    (``aten::copy_``/``fill_``/``zero_`` under ``no_grad``), one version each, as torch's."""
    def versions(lib):
        lin, ln = lib.nn.Linear(3, 2), lib.nn.LayerNorm(2)
        made = [p._version for m in (lin, ln) for p in m.parameters()]
        ln.load_state_dict(ln.state_dict())
        loaded = [p._version for p in ln.parameters()]
        (lin.weight.sum() + lin.bias.sum()).backward()
        lin.zero_grad(set_to_none=False)
        return made, loaded, lin.weight.grad.tolist()
    assert versions(mk) == versions(torch)
