"""Indexing and in-place writes where minikernel once differed from torch (found by the fuzzer's
index expressions), each run through both: the order of torch's index errors, writes into
expanded memory, which node records a write, views made under ``no_grad``, what
``autograd.grad`` captures for an input whose node runs, ``retain_grad`` through a view,
``mark_dirty`` on a view, out-of-range indices that pick nothing, and which writes of a value
sharing the written memory torch refuses."""
from __future__ import annotations

import pytest
import torch

import minikernel as mk
from tests.conformance.programs import _functions


def _name(lib, t):
    node = t.grad_fn
    if node is None:
        return None
    return type(node).__name__ if lib is torch else node.name()


def _outcome(lib, fn):
    """What ``fn(lib)`` did: ("raised", type, first words of the message) or ("gave", its summary)."""
    try:
        return ("gave", fn(lib))
    except NotImplementedError:
        raise  # an exercise's stub: the test reports TODO
    except (IndexError, ValueError, RuntimeError, TypeError) as err:
        return ("raised", type(err).__name__, str(err).split(".")[0])


def _same(fn):
    theirs, mine = _outcome(torch, fn), _outcome(mk, fn)
    assert mine == theirs
    return mine


T0, T1, T2 = (lambda L: L.tensor(5.0)), (lambda L: L.zeros(3)), (lambda L: L.zeros(2, 3))
BAD_KEYS = {
    "lone zero step on 0-d": (T0, slice(0, 1, 0)), "lone negative step on 0-d": (T0, slice(None, None, -1)),
    "lone slice on 0-d": (T0, slice(0, 1)), "tuple slice on 0-d": (T0, (slice(0, 1, 0),)),
    "too many before a zero step": (T1, (5, slice(None, None, 0))),
    "zero step before an int": (T2, (slice(None, None, 0), 5)), "int before a zero step": (T2, (5, slice(None, None, 0))),
    "negative step before an int": (T2, (slice(None, None, -1), 5)),
    "too many with None and a list": (T1, (slice(None, None, 0), None, [0])),
    "zero step before an index array": (T2, ([5], slice(None, None, 0))),
    "ellipsis, zero step on 0-d": (T0, (Ellipsis, slice(None, None, 0))),
    "None, zero step on 0-d": (T0, (None, slice(None, None, 0))),
}


@pytest.mark.parametrize("case", sorted(BAD_KEYS))
@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_index_errors_come_in_torchs_order(case, write):
    make, key = BAD_KEYS[case]

    def run(L):
        x = make(L)
        if write:
            x[key] = 1.0
        else:
            x[key]  # noqa: B018 - the read is what is tested
    assert _same(run)[0] == "raised"


WRITES = {
    "x[..., -1] = number": lambda L, x: x.__setitem__((Ellipsis, -1), -1.0),
    "x[...] = number": lambda L, x: x.__setitem__(Ellipsis, 2.0),
    "x[:, 0] = 0-d tensor": lambda L, x: x.__setitem__((slice(None), 0), L.tensor(2.0)),
    "x[None] = number": lambda L, x: x.__setitem__(None, 2.0),
    "x[0] = number (no overlap)": lambda L, x: x.__setitem__(0, 2.0),
    "x[..., -1].fill_(number)": lambda L, x: x[..., -1].fill_(3.0),
    "x.zero_()": lambda L, x: x.zero_(),
}


@pytest.mark.parametrize("case", sorted(WRITES))
def test_setitem_into_an_expanded_tensor_is_refused_like_torch(case):
    _same(lambda L: WRITES[case](L, L.zeros(1).expand(2, 1)) or "wrote")


RECORDED = {
    "x[:] = w": lambda L, x, w: x.__setitem__(slice(None), w),
    "x[:2, :3] = w": lambda L, x, w: x.__setitem__((slice(None, 2), slice(None, 3)), w),
    "x[...] = w": lambda L, x, w: x.__setitem__(Ellipsis, w),
    "x[0:1] = 0.5": lambda L, x, w: x.__setitem__(slice(0, 1), 0.5),
    "x[None] = 0.5": lambda L, x, w: x.__setitem__(None, 0.5),
    "x[0] = w[0]": lambda L, x, w: x.__setitem__(0, w[0]),
}


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("case", sorted(RECORDED))
def test_which_node_records_a_write_like_torch(case):
    def run(L):
        x = L.ones(2, 3, requires_grad=True) * 1
        leaf = L.ones(2, 3, requires_grad=True)
        RECORDED[case](L, x, leaf * 3)
        (x * L.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        return _name(L, x), None if leaf.grad is None else leaf.grad.tolist()
    _same(run)


def test_a_lone_slice_is_a_slice_and_a_tuple_of_whole_slices_an_alias_like_torch():
    keys = [slice(None), (slice(None),), Ellipsis, (slice(None), slice(None)), slice(0, 2), (slice(None), slice(0, 3))]
    _same(lambda L: [_name(L, (L.ones(2, 3, requires_grad=True) * 1)[k]) for k in keys])


@pytest.mark.parametrize("source_requires_grad", [False, True])
def test_a_view_made_under_no_grad_refuses_a_recorded_write_like_torch(source_requires_grad):
    def run(L):
        s = L.tensor([5.0, 6.0], requires_grad=source_requires_grad)
        with L.no_grad():
            v = s[0:]
        v[0:].mul_(L.tensor(1.0, requires_grad=True))
    _same(run)

    def direct(L):
        with L.no_grad():
            v = L.tensor(5.0).movedim(0, -1)
        v[None] = L.ones(1, requires_grad=True)
    _same(direct)


@pytest.mark.exercise("3.7")
def test_grad_captures_an_input_before_its_hooks_when_its_node_runs_like_torch():
    def run(L):
        a = L.ones(3, requires_grad=True)
        c = a * 1
        c.register_hook(lambda g: g * 2)
        both = L.autograd.grad((c * 3).sum(), [a, c])
        alone = L.autograd.grad((c * 3).sum(), [c])
        return [g.tolist() for g in both + alone]
    _same(run)


@pytest.mark.exercise("3.3")
def test_retain_grad_follows_a_base_written_through_a_view_like_torch():
    def run(L):
        leaf = L.ones(3, requires_grad=True)
        y = leaf * 2
        y.retain_grad()
        y[..., -1] = -1.0
        (y * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y.grad.tolist(), leaf.grad.tolist()
    _same(run)


@pytest.mark.exercise("3.3")
def test_mark_dirty_on_a_view_then_backward_through_the_view_like_torch():
    def run(L):
        leaf = L.ones(1, 3, requires_grad=True)
        a = leaf[[0, 0]]
        v = a[..., None]
        _functions(L)["double_"].apply(v)
        ((a * 4).sum() + (v * 5).sum()).backward()
        return leaf.grad.tolist(), _name(L, a), _name(L, v)
    _same(run)


def test_indices_out_of_range_that_pick_nothing_are_no_error_like_torch():
    def run(L):
        a = L.zeros(3, 3)
        a[L.tensor([3]), 2:1:2] += L.ones(1)
        read = L.ones(2, 1)[1:-1, [-2, -1]]
        b = L.zeros(2, 1)
        picked = b[L.tensor([3]), L.tensor([False])]  # an empty mask: the indices broadcast to nothing
        b[L.tensor([3]), L.tensor([False])] = 1.0
        return a.sum().item(), list(read.shape), list(picked.shape), b.sum().item()
    _same(run)


def test_a_value_of_the_wrong_shape_is_refused_before_an_index_out_of_range_like_torch():
    def run(L):
        x = L.zeros(2, 3)
        x[L.tensor([1, 2]), 0:3:2] = L.ones(3)
    assert _same(run)[1] == "RuntimeError"


def test_an_int_out_of_range_is_refused_before_a_view_history_is_read_like_torch():
    def run(L):
        base = L.zeros(0, 3, requires_grad=True).tanh()
        with L.no_grad():
            view = base[1:]
        base.mul_(2)
        view.__setitem__(0, view[0] + 1)
    _same(run)




SELF_WRITES = {
    "a[None] = a, a transposed": (lambda L: L.ones(2, 1).t(), None),
    "a[0] = a, a of shape (1, 3)": (lambda L: L.ones(1, 3), (0,)),
    "a[0:1] = a, a of shape (2, 3)": (lambda L: L.ones(2, 3), (slice(0, 1),)),
}


@pytest.mark.parametrize("case", sorted(SELF_WRITES))
def test_writing_a_tensor_into_a_view_of_itself_like_torch(case):
    """torch views the value without its leading 1s before it expands it, so the value's strides,
    and with them whether its memory overlaps the target's fully or partly, are torch's."""
    make, key = SELF_WRITES[case]

    def run(L):
        a = make(L)
        a[key] = a
        x = L.zeros(2, 3)
        x[0] = L.ones(1, 1, 3) * 2
        x[1, 0:1] = L.ones(1, 1) * 3
        return a.tolist(), x.tolist()
    _same(run)


OVERLAPPING_WRITES = {  # a[key] = a one-element view of a's own memory
    "two masks": lambda L: (L.tensor([False, True]), L.tensor([True])),
    "a mask and an integer tensor": lambda L: (L.tensor([False, True]), L.tensor([0])),
    "one mask": lambda L: (L.tensor([[False], [True]]),),
    "a mask and a slice": lambda L: (L.tensor([False, True]), slice(None)),
    "an integer tensor": lambda L: (L.tensor([1]),),
}


@pytest.mark.parametrize("case", sorted(OVERLAPPING_WRITES))
def test_a_write_of_a_value_sharing_the_written_memory_like_torch(case):
    """torch fills through ``masked_fill_`` (no overlap check) only for one mask and a one-element
    value; with a second mask or an integer index its ``index_put_`` refuses the shared memory."""
    def write(lib):
        a = lib.tensor([[1.0], [2.0]], dtype=lib.float64)
        a[OVERLAPPING_WRITES[case](lib)] = a.view(-1)[:1]
        return a.flatten().tolist()
    assert _outcome(mk, write) == _outcome(torch, write)
