"""The tensor API learners reach for, forward, backward and errors against torch.

Views (select, narrow, squeeze, ...), indexing with ``...``, ``None``, integer
tensors and boolean masks, multi-output views, in-place writes, ``prod`` and
``backward(inputs=...)``. Backward runs the engine (exercises 3.1 and 3.3); the
roots go through ``exp`` so the gradients differ from element to element.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import minikernel as mk
from minikernel.aten import binary_ops, shape_rules
from tests.helpers import assert_autograd_same_as_torch

# backward needs the engine (3.3, built on 3.1); no node below needs a later exercise
engine = pytest.mark.exercise("3.3")


def grid(*shape):
    return torch.arange(float(np.prod(shape))).reshape(shape) / 10


VIEWS = {
    "select": lambda x, lib: x.select(1, -1),
    "narrow": lambda x, lib: x.narrow(2, 1, 2),
    "squeeze_all": lambda x, lib: x.unsqueeze(0).squeeze(),
    "squeeze_dim": lambda x, lib: x.unsqueeze(1).squeeze(1),
    "squeeze_tuple": lambda x, lib: x.unsqueeze(0).unsqueeze(-1).squeeze((0, -1)),
    "squeeze_not_one": lambda x, lib: x.squeeze(0),
    "unsqueeze_neg": lambda x, lib: x.unsqueeze(-1),
    "flatten": lambda x, lib: x.flatten(1),
    "flatten_all": lambda x, lib: x.flatten(),
    "unflatten": lambda x, lib: x.unflatten(2, (2, -1)),
    "diagonal": lambda x, lib: x.diagonal(1, 1, 2),
    "T": lambda x, lib: x.T,
    "mT": lambda x, lib: x.mT,
    "expand_as": lambda x, lib: x[:1].expand_as(x),
    "view_as": lambda x, lib: x.view_as(x.reshape(4, 6)),
    "reshape_as": lambda x, lib: x.transpose(0, 1).reshape_as(x.reshape(6, 4)),
    "ellipsis": lambda x, lib: x[..., 1],
    "none": lambda x, lib: x[None, 1, :, None],
    "int_tensor": lambda x, lib: x[lib.tensor([1, 1, 0])],
    "int_tensor_2d": lambda x, lib: x[:, lib.tensor([[2, 0], [0, 0]])],
    "bool_mask": lambda x, lib: x[x > 1.0],
    "list": lambda x, lib: x[[1, 0]],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_and_indexing_forward(name):
    assert_autograd_same_as_torch(VIEWS[name], grid(2, 3, 4), backward=False)


@pytest.mark.parametrize("name", sorted(VIEWS))
@engine
def test_views_and_indexing_backward(name):
    assert_autograd_same_as_torch(lambda x, lib: VIEWS[name](x, lib).exp(), grid(2, 3, 4))


MULTI = {
    "unbind": lambda x, lib: x.unbind(1),
    "split": lambda x, lib: x.split(3, 2),
    "split_sizes": lambda x, lib: x.split([1, 3], 2),
    "chunk": lambda x, lib: x.chunk(3, 2),
    "chunk_more_than_size": lambda x, lib: x.chunk(5, 0),
}


@pytest.mark.parametrize("name", sorted(MULTI))
@engine
def test_multi_output_views(name):
    def program(x, lib):
        pieces = MULTI[name](x, lib)
        total = pieces[0].exp().sum()
        for p in pieces[2:]:  # leave piece 1 unused: its gradient is zeros
            total = total + p.exp().sum()
        return (total, *pieces)

    assert_autograd_same_as_torch(program, grid(2, 3, 4))


def test_multi_output_views_refuse_in_place():
    assert_autograd_same_as_torch(lambda x, lib: x.clone().unbind()[0].mul_(2), grid(3, 2))
    assert_autograd_same_as_torch(lambda x, lib: x.clone().split(1)[1].add_(1), grid(3, 2))


ERRORS = {
    "select_range": lambda x, lib: x.select(0, 5),
    "select_dim": lambda x, lib: x.select(3, 0),
    "narrow_length": lambda x, lib: x.narrow(2, 3, 2),
    "narrow_start": lambda x, lib: x.narrow(2, 9, 1),
    "squeeze_dim": lambda x, lib: x.squeeze(4),
    "unsqueeze_dim": lambda x, lib: x.unsqueeze(5),
    "unflatten": lambda x, lib: x.unflatten(2, (3, 2)),
    "diagonal_same": lambda x, lib: x.diagonal(0, 1, 1),
    "split_sizes": lambda x, lib: x.split([1, 2], 2),
    "chunk_zero": lambda x, lib: x.chunk(0),
    "permute_count": lambda x, lib: x.permute(0, 1),
    "permute_duplicate": lambda x, lib: x.permute(0, 0, 1),
    "expand_size": lambda x, lib: x.expand(2, 3, 5),
    "expand_fewer": lambda x, lib: x.expand(4),
    "view_numel": lambda x, lib: x.view(5, -1),
    "view_two_inferred": lambda x, lib: x.view(-1, -1),
    "view_strides": lambda x, lib: x.transpose(0, 1).view(-1),
    "index_range": lambda x, lib: x[2],
    "index_too_many": lambda x, lib: x[0, 0, 0, 0],
    "index_tensor_range": lambda x, lib: x[lib.tensor([0, 7])],
    "index_zero_dim": lambda x, lib: x.sum()[0],
    "mT_vector": lambda x, lib: x[0, 0].mT,
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_shape_errors_are_torchs(name):
    assert_autograd_same_as_torch(ERRORS[name], grid(2, 3, 4), backward=False)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_permute_and_expand_errors_do_not_depend_on_requires_grad(requires_grad):
    for bad in (lambda t: t.permute(0), lambda t: t.permute(1, 1), lambda t: t.expand(3, 4)):
        with pytest.raises(RuntimeError) as theirs:
            bad(torch.ones(2, 3, requires_grad=requires_grad))
        with pytest.raises(RuntimeError) as mine:
            bad(mk.ones(2, 3, requires_grad=requires_grad))
        assert str(mine.value).replace("minikernel.", "torch.") == str(theirs.value)


# --------------------------------------------------------------- in-place writes
@engine
@pytest.mark.parametrize("case", ["copy_broadcast", "fill", "zero", "setitem_slice", "setitem_mask",
                                  "setitem_tensor_value"])
def test_writes_are_recorded(case):
    programs = {
        "copy_broadcast": lambda x, w, lib: (lambda a: (a[1:].copy_(w.exp()), a)[1].exp())(x.clone()),
        "fill": lambda x, w, lib: (lambda a: (a[0].fill_(2.0), a)[1].exp())(x.clone()),
        "zero": lambda x, w, lib: (lambda a: (a[:, 1].zero_(), a)[1].exp())(x.clone()),
        "setitem_slice": lambda x, w, lib: (lambda a: (a.__setitem__((slice(None), 0), 7.0), a)[1].exp())(x.clone()),
        "setitem_mask": lambda x, w, lib: (lambda a: (a.__setitem__(a > 0.3, 0.0), a)[1].exp())(x.clone()),
        "setitem_tensor_value": lambda x, w, lib: (lambda a: (a.__setitem__(1, w.exp()), a)[1].exp())(x.clone()),
    }
    assert_autograd_same_as_torch(programs[case], grid(2, 3), torch.tensor([0.5, -1.0, 2.0]))


def test_writes_into_a_leaf_that_requires_grad_are_refused():
    assert_autograd_same_as_torch(lambda x, lib: x.zero_(), grid(2, 3))
    assert_autograd_same_as_torch(lambda x, lib: x.__setitem__(0, 1.0), grid(2, 3))
    assert_autograd_same_as_torch(lambda x, lib: x[0].fill_(1.0), grid(2, 3))


@pytest.mark.parametrize("method", ["zero_", "fill_", "copy_"])
def test_writes_outside_autograd(method):
    theirs, mine = torch.arange(6.0).reshape(2, 3), mk.tensor(np.arange(6.0).reshape(2, 3))
    args = {"zero_": (), "fill_": (4.0,), "copy_": (torch.tensor([1.0, 2.0, 3.0]),)}[method]
    margs = tuple(mk.Tensor.from_torch(a) if isinstance(a, torch.Tensor) else a for a in args)
    getattr(theirs, method)(*args)
    getattr(mine, method)(*margs)
    assert torch.equal(mine.to_torch(), theirs) and mine._version == theirs._version


# ------------------------------------------------------------------- prod
@engine
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("values", ["no_zero", "one_zero", "two_zeros"])
def test_prod_backward_with_zeros(dim, values):
    x = {"no_zero": torch.tensor([[1.5, 2.0, -3.0], [0.5, 4.0, 2.0]]),
         "one_zero": torch.tensor([[1.5, 0.0, -3.0], [0.5, 4.0, 2.0]]),
         "two_zeros": torch.tensor([[0.0, 0.0, -3.0], [0.5, 0.0, 2.0]])}[values]
    assert_autograd_same_as_torch(lambda x, lib: x.prod() if dim is None else x.prod(dim), x)
    assert_autograd_same_as_torch(lambda x, lib: x.prod(0, keepdim=True), x)


# ------------------------------------------------------------- backward(inputs)
@engine
def test_backward_with_inputs_accumulates_only_into_them():
    def program(x, w, lib):
        h = (x + w).exp()
        h.retain_grad()
        root = h.sum()
        root.backward(inputs=[w, h])
        return h.grad.detach() if h.grad is not None else h, w.grad

    assert_autograd_same_as_torch(program, grid(3), torch.tensor([1.0, 2.0, 3.0]), backward=False)


def test_backward_with_empty_inputs_is_refused():
    assert_autograd_same_as_torch(lambda x, lib: x.exp().sum().backward(inputs=[]), grid(3), backward=False)


# ------------------------------------------------------ grad mode, small defects
def test_set_grad_enabled_as_a_call_switches_at_once():
    for lib in (torch, mk):
        lib.set_grad_enabled(False)
        try:
            assert not lib.is_grad_enabled()
        finally:
            lib.set_grad_enabled(True)
        assert lib.is_grad_enabled()
        with lib.set_grad_enabled(False):
            assert not lib.is_grad_enabled()
        assert lib.is_grad_enabled()


def test_no_grad_decorates_a_generator_function():
    seen = {}
    for lib in (torch, mk):
        @lib.no_grad()
        def gen():
            yield lib.is_grad_enabled()
            yield lib.is_grad_enabled()

        it = gen()
        inside = [next(it), lib.is_grad_enabled(), next(it)]
        seen[lib.__name__] = inside
    assert seen["minikernel"] == seen["torch"] == [False, True, False]


def test_requires_grad_on_a_non_leaf():
    assert_autograd_same_as_torch(lambda x, lib: (x.clone()).requires_grad_(), grid(3), backward=False)
    assert_autograd_same_as_torch(lambda x, lib: (x.clone()).requires_grad_(False), grid(3), backward=False)


def test_tensor_from_numpy_scalar_keeps_its_dtype():
    for value in (np.float64(1.5), np.float32(1.5), np.int64(3), 1.5):
        assert str(mk.tensor(value).dtype) == str(torch.tensor(value).dtype).removeprefix("torch.")


def test_broadcast_shape_refuses_negative_sizes():
    for a, b in [((-1,), (1,)), ((-1, 3), (1,))]:
        with pytest.raises(ValueError) as theirs:
            torch.broadcast_shapes(a, b)
        with pytest.raises(ValueError) as mine:
            shape_rules.broadcast_shape(a, b)
        assert str(mine.value) == str(theirs.value)


def test_out_that_requires_grad_is_refused():
    a, out = torch.ones(3), torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError) as theirs:
        torch.mul(a, a, out=out)
    with pytest.raises(RuntimeError) as mine:
        binary_ops.mul(mk.Tensor.from_torch(a), mk.Tensor.from_torch(a), out=mk.zeros(3, requires_grad=True))
    assert str(mine.value) == str(theirs.value)
