"""The smallest programs that show divergences ``make fuzz`` found, each run through torch and
minikernel by the fuzzer's own engine (``programs.run_program``: values, shapes, ``_version``,
``grad_fn`` names and gradients compared after every step):

* ``fill_``/``zero_`` into an expanded view of a tensor that requires grad: torch checks no
  overlap for a fill, so the write goes through and the view's history is rebased;
* ``t[...] += v`` on a view made while its base did not require grad, ``v`` requiring grad:
  the read's view is written (the base takes a history), then ``t`` itself, whose node was not
  regenerated since, counts as a leaf that requires grad and is refused; read its ``grad_fn``
  first and the write goes through, in both;
* a two-input op (``mul``, ``matmul``) one of whose inputs has no gradient edge (it does not
  require grad, or is a view taken under ``no_grad``): torch saves an input only for a
  gradient that has an edge, so writing into the other input afterwards breaks no backward
  (and writing into the saved one does);
* writes of a tensor into itself through an index: a 0-d value goes torch's ``fill_(Tensor)``
  way (copied from a clone when it shares the target's memory: ``x[None] = x`` is no overlap),
  and a value with leading 1s is viewed without them first (``x[[0]] = x`` for an empty x
  of shape (1, 0, 3) is another tensor, so the same-tensor refusal does not apply; a strided
  x is "too hard" to decide and goes through);
* an in-place op whose operand shares part of the written memory (``t[..., :1] += t.flatten()[:1]``):
  torch's kernel reads each element as it writes, so ``t[1, 0]`` gets the new ``t[0, 0]``, also
  while recording;
* ``zero_`` on a ``matmul`` result that torch returns as a view (its composite ends with a
  transpose): torch's ``grad_fn`` becomes ``AsStridedBackward0`` (docs/conformance.md).
"""
from __future__ import annotations

import pytest
import torch

import minikernel
from tests.conformance.programs import run_program

PROGRAMS = {
    "fill_ into an expanded view": [
        ("leaves", [(3,), (2, 3)], [True, True], 5325),
        ("op", "add", [1, 0], False),
        ("op", "permute", [2], False),
        ("op", "expand", [3], False),
        ("inplace", "fill_", [4], False),
        ("op", "relu", [4], False),
        ("backward", False, False),
    ],
    "zero_ into an expanded view of a leaf's clone": [
        ("leaves", [(2, 1)], [True], 7),
        ("op", "clone", [0], False),
        ("op", "expand", [1], False),
        ("inplace", "zero_", [2], False),
        ("op", "square", [1], False),
        ("backward", False, False),
    ],
    "zero_ on a batched matmul result": [
        ("leaves", [(2, 3), (3,)], [True, True], 11),
        ("op", "unsqueeze", [1], False),
        ("op", "none_index", [2], False),
        ("op", "expand", [3], False),
        ("op", "matmul", [0, 4], False),
        ("inplace", "zero_", [5], False),
        ("op", "select0", [5], False),
        ("backward", False, False),
    ],
    "t[...] += v on a view whose base takes a history in the read": [
        ("leaves", [(2, 3), ()], [False, True], 3),
        ("op", "t", [0], False),
        ("inplace", "iadd_index_expr", [2, 1], False, ("one", ("ellipsis",)), "one"),
        ("op", "exp", [0], False),
        ("backward", False, False),
    ],
    "x[None] = x for a 0-d result that requires grad": [
        ("leaves", [(3,)], [True], 36058),
        ("op", "max_all", [0], False),
        ("inplace", "set_index_expr", [1, 1], False, ("tuple", [("none",)]), "tensor"),
        ("backward", False, False),
    ],
    "x[[0]] = x for x of shape (1, 0, 3)": [
        ("leaves", [(0, 3), (2, 3)], [False, True], 5),
        ("op", "index_expr", [0], False, ("one", ("none",))),
        ("inplace", "set_list_tensor", [2, 2], False),
        ("op", "exp", [1], False),
        ("backward", False, False),
    ],
    "x[x > 0] = x for x a strided view": [
        ("leaves", [(2, 3)], [True], 58477),
        ("op", "sigmoid", [0], True),
        ("op", "select_last", [1], False),
        ("op", "unsqueeze", [2], True),
        ("inplace", "set_mask_tensor", [3, 3], False),
        ("op", "exp", [0], False),
        ("backward", False, False),
    ],
    "mul by a view taken under no_grad, the other operand written after": [
        ("leaves", [(2, 3), (2, 3)], [True, True], 13165),
        ("op", "split0", [1], True),
        ("op", "clone", [0], False),
        ("op", "mul", [3, 2], False),
        ("inplace", "mul_2", [3], False),
        ("backward", False, False),
    ],
    "matmul by a tensor that does not require grad, the other operand written after": [
        ("leaves", [(2, 3), (3,)], [True, False], 15632),
        ("op", "clone", [0], False),
        ("op", "matmul", [2, 1], False),
        ("inplace", "mul_2", [2], False),
        ("backward", False, False),
    ],
    "matmul by a tensor that does not require grad, that tensor written after": [
        ("leaves", [(2, 3), (3,)], [True, False], 15632),
        ("op", "clone", [0], False),
        ("op", "matmul", [2, 1], False),
        ("inplace", "mul_2", [1], False),
        ("backward", False, False),
    ],
    "t[..., :1] += t.flatten()[:1]": [
        ("leaves", [(2, 3)], [True], 28110),
        ("op", "sigmoid", [0], False),
        ("inplace", "iadd_index_expr", [1, 1], False, ("tuple", [("ellipsis",), ("slice", None, 1, None)]), "one"),
        ("backward", False, False),
    ],
    "add_ into an empty expanded view of the operand": [
        ("leaves", [(0, 3)], [True], 52578),
        ("op", "sub", [0, 0], False),
        ("op", "expand", [1], False),
        ("inplace", "add_", [2, 1], False),
        ("op", "mul", [1, 0], False),
        ("backward", True, False),
    ],
}


#: programs whose comparison ends before backward: both refuse a write after the values changed
#: (``run_program`` stops there), so they need no exercise
STOPS_BEFORE_BACKWARD = {"t[...] += v on a view whose base takes a history in the read"}


@pytest.mark.exercise("3.9")  # every other program ends in backward (student mode: TODO)
@pytest.mark.parametrize("case", sorted(set(PROGRAMS) - STOPS_BEFORE_BACKWARD))
def test_minimal_program_matches_torch(case):
    run_program(PROGRAMS[case])


@pytest.mark.parametrize("case", sorted(STOPS_BEFORE_BACKWARD))
def test_minimal_program_refused_before_backward_matches_torch(case):
    run_program(PROGRAMS[case])


def _write_into_stale_view(lib, read_grad_fn_first: bool):
    base = lib.zeros(2, 3, dtype=lib.float64)
    view = base.t()
    value = lib.tensor([2.0], dtype=lib.float64, requires_grad=True)
    alias = view[...]
    alias += value  # base takes a history (CopySlices); view's node is not regenerated yet
    if read_grad_fn_first:
        assert view.grad_fn is not None
    try:
        view[...] = alias
    except RuntimeError as err:
        return str(err)
    return view.grad_fn.name().removeprefix("torch::autograd::") if lib is not torch else type(view.grad_fn).__name__


@pytest.mark.parametrize("read_grad_fn_first", [False, True])
def test_write_into_a_view_whose_base_took_a_history_like_torch(read_grad_fn_first):
    assert _write_into_stale_view(minikernel, read_grad_fn_first) == _write_into_stale_view(torch, read_grad_fn_first)


def _overlapping_inplace(lib, op: str, requires_grad: bool) -> list:
    base = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64, requires_grad=requires_grad)
    a = base * 1
    column = a[..., :1]
    getattr(column, op)(a.flatten()[:1])  # the operand is a[0, 0], which the op writes first
    node = a.grad_fn
    name = None if node is None else type(node).__name__ if lib is torch else node.name()
    return a.detach().flatten().tolist(), name


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
def test_an_inplace_op_reads_what_it_wrote_before_like_torch(op, requires_grad):
    assert _overlapping_inplace(minikernel, op, requires_grad) == _overlapping_inplace(torch, op, requires_grad)
