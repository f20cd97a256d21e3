"""One helper to run the same call through torch and minikernel, and the
hypothesis strategies that generate strided tensors for it."""
from __future__ import annotations

import math
from typing import Any, Callable

import torch
from hypothesis import strategies as st

import minikernel
from minikernel import Tensor

MAX_DIMS, MAX_SIDE = 4, 4


def _run(op: Callable, *args) -> tuple[Any, BaseException | None]:
    try:
        return op(*args), None
    except NotImplementedError:
        raise  # a stub: let it through so the grader reports TODO
    except Exception as err:  # noqa: BLE001 - the error *is* the result being compared
        return None, err


def assert_same_as_torch(op: Callable, *inputs: torch.Tensor, check_message: bool = False,
                         shares_storage: bool | None = None) -> Any:
    """Run ``op`` on torch tensors and on minikernel tensors over the same memory.

    Compares what the lesson is about: either both raise the same exception type
    (and message, with ``check_message``), or both return tensors with equal shape,
    strides, storage offset, dtype and values. ``shares_storage`` (True/False) also
    checks whether the result shares memory with the first input; None checks that
    it shares exactly when torch's does.

    Returns torch's result.
    """
    expected, torch_error = _run(op, *inputs)
    got, mk_error = _run(op, *[Tensor.from_torch(t) for t in inputs])
    if torch_error is not None or mk_error is not None:
        assert type(mk_error) is type(torch_error), (
            f"torch raised {torch_error!r}, minikernel raised {mk_error!r}")
        if check_message:
            assert str(mk_error) == str(torch_error)
        return None
    if not isinstance(expected, torch.Tensor):
        assert got == expected, f"minikernel gave {got!r}, torch gave {expected!r}"
        return expected
    assert isinstance(got, Tensor), f"expected a minikernel Tensor, got {type(got).__name__}"
    assert got.shape == tuple(expected.shape), f"shape {got.shape} != torch's {tuple(expected.shape)}"
    assert got.stride() == expected.stride(), f"strides {got.stride()} != torch's {expected.stride()}"
    assert got.storage_offset() == expected.storage_offset(), (
        f"storage offset {got.storage_offset()} != torch's {expected.storage_offset()}")
    assert str(got.dtype) == str(expected.dtype).removeprefix("torch.")
    assert torch.equal(got.to_torch(), expected), f"values differ:\n{got}\nvs torch's\n{expected}"
    source = inputs[0].untyped_storage().data_ptr()
    torch_shares = expected.untyped_storage().data_ptr() == source
    mk_shares = got.untyped_storage().data_ptr() == source
    assert mk_shares == (torch_shares if shares_storage is None else shares_storage), (
        f"result {'shares' if mk_shares else 'does not share'} the input's storage; "
        f"torch's {'does' if torch_shares else 'does not'}")
    return expected


# ------------------------------------------------------------------ strategies
def shapes(max_dims: int = MAX_DIMS, max_side: int = MAX_SIDE, min_dims: int = 0) -> st.SearchStrategy:
    """Shapes with size-0 and size-1 dimensions included."""
    return st.lists(st.integers(0, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


@st.composite
def headers(draw, max_dims: int = MAX_DIMS, max_side: int = MAX_SIDE, nonempty: bool = False):
    """(shape, strides, offset) with arbitrary non-negative strides (overlaps, zeros, gaps)."""
    shape = draw(shapes(max_dims, max_side))
    if nonempty:
        shape = tuple(max(1, s) for s in shape)
    strides = tuple(draw(st.lists(st.integers(0, 30), min_size=len(shape), max_size=len(shape))))
    offset = draw(st.integers(0, 5))
    return shape, strides, offset


def storage_for(shape, strides, offset, dtype=torch.int64) -> torch.Tensor:
    """A 1-D arange just large enough for the header: each value is its position."""
    needed = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if math.prod(shape) else offset
    return torch.arange(max(needed, 1), dtype=dtype)


def as_strided(shape, strides, offset, dtype=torch.int64) -> torch.Tensor:
    return torch.as_strided(storage_for(shape, strides, offset, dtype), shape, strides, offset)


@st.composite
def strided_tensors(draw, max_dims: int = MAX_DIMS, max_side: int = MAX_SIDE, dtype=torch.int64):
    """Torch tensors made the way real code makes them: an arange viewed to a shape,
    then a few of slice / select / transpose / permute / expand / view."""
    shape = draw(shapes(max_dims, max_side))
    pad = draw(st.integers(0, 3))
    t = torch.arange(math.prod(shape) + pad, dtype=dtype)[pad:].view(shape)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["slice", "select", "transpose", "permute", "expand", "view"]))
        if op == "slice" and t.dim():
            d = draw(st.integers(0, t.dim() - 1))
            start, step = draw(st.integers(0, t.shape[d])), draw(st.integers(1, 3))
            t = t[(slice(None),) * d + (slice(start, None, step),)]
        elif op == "select" and t.dim() and t.shape[0]:
            t = t[draw(st.integers(0, t.shape[0] - 1))]
        elif op == "transpose" and t.dim() >= 2:
            t = t.transpose(*draw(st.lists(st.integers(0, t.dim() - 1), min_size=2, max_size=2, unique=True)))
        elif op == "permute" and t.dim():
            t = t.permute(*draw(st.permutations(range(t.dim()))))
        elif op == "expand" and t.dim() < max_dims:
            t = t.unsqueeze(0).expand(draw(st.integers(0, 3)), *t.shape)
        elif op == "view":
            choices = [(-1,), (*t.shape, 1), (1, *t.shape)]
            choices += [(*t.shape[:d], t.shape[d] * t.shape[d + 1], *t.shape[d + 2:]) for d in range(t.dim() - 1)]
            try:
                t = t.view(draw(st.sampled_from(choices)))
            except RuntimeError:
                pass  # torch refuses this view (it spans two chunks); keep t
    return t


# ------------------------------------------------------------------- autograd
def leaves_pair(*values: torch.Tensor) -> tuple[list[torch.Tensor], list[Tensor]]:
    """The same leaves twice, float64 copies that require grad: torch's and minikernel's."""
    theirs = [v.detach().clone().double().requires_grad_() for v in values]
    mine = [Tensor.from_torch(v.detach().clone()).requires_grad_() for v in theirs]
    return theirs, mine


def assert_backward_same_as_torch(fn: Callable, *values: torch.Tensor, grad: torch.Tensor | None = None,
                                  rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Run ``fn`` forward and backward on torch leaves and on minikernel leaves made
    from ``values``; the outputs and every leaf's ``.grad`` must agree (float64).

    ``fn`` receives the leaves and may use operators, Tensor methods, or
    ``minikernel.autograd.functions`` / ``torch`` functions picked by the leaves' type.
    ``grad`` is the gradient of the output (default: ones).
    """
    theirs, mine = leaves_pair(*values)
    expected, got = fn(*theirs), fn(*mine)
    assert isinstance(got, Tensor), f"expected a minikernel Tensor, got {type(got).__name__}"
    assert got.shape == tuple(expected.shape), f"output shape {got.shape} != torch's {tuple(expected.shape)}"
    torch.testing.assert_close(got.to_torch(), expected.detach(), rtol=rtol, atol=atol, equal_nan=True)
    g = torch.ones_like(expected) if grad is None else grad.double()
    expected.backward(g)
    got.backward(Tensor.from_torch(g.clone()))
    for i, (t, m) in enumerate(zip(theirs, mine)):
        if t.grad is None:
            assert m.grad is None, f"leaf {i}: torch left .grad None, minikernel has {m.grad}"
            continue
        assert m.grad is not None, f"leaf {i}: torch computed a gradient, minikernel's .grad is None"
        torch.testing.assert_close(m.grad.to_torch(), t.grad, rtol=rtol, atol=atol, equal_nan=True,
                                   msg=lambda msg, i=i: f"leaf {i} gradient differs from torch's: {msg}")


def _grad_fn_name(t: Any) -> str | None:
    node = t.grad_fn
    return None if node is None else (type(node).__name__ if isinstance(t, torch.Tensor) else node.name())


def assert_autograd_same_as_torch(program: Callable, *values: torch.Tensor, backward: bool = True,
                                  message_until: str | None = "", rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Run ``program(leaves, lib)`` with torch (``lib=torch``) and with minikernel
    (``lib=minikernel``) on float64 leaves made from ``values``, then backward from its
    first result (with ones), and compare everything the autograd lesson is about:

    * errors, at forward or at backward: the same type, and the same message
      (``message_until``: compare up to and including that text; ``""``: the whole
      message; None: the type only);
    * every result: shape, dtype, values, ``_version`` and ``grad_fn``'s name;
    * after backward, every leaf's ``.grad``.

    ``program`` returns a tensor or a tuple of tensors (the first is the root).
    """
    theirs, mine = leaves_pair(*values)
    expected, torch_error = _run(program, *theirs, torch)
    got, mk_error = _run(program, *mine, minikernel)
    if torch_error is None and mk_error is None and backward:
        root_t = expected[0] if isinstance(expected, tuple) else expected
        root_m = got[0] if isinstance(got, tuple) else got
        _, torch_error = _run(lambda: root_t.backward(torch.ones_like(root_t)))
        _, mk_error = _run(lambda: root_m.backward(Tensor.from_torch(torch.ones_like(root_t).detach())))
    if torch_error is not None or mk_error is not None:
        assert type(mk_error) is type(torch_error), f"torch raised {torch_error!r}, minikernel raised {mk_error!r}"
        if message_until is not None:
            want, have = str(torch_error), str(mk_error).replace("minikernel.", "torch.")
            if message_until:
                assert message_until in want, f"{message_until!r} is not in torch's message {want!r}"
                want = want[:want.index(message_until) + len(message_until)]
                have = have[:len(want)]
            assert have == want, f"message differs from torch's:\n  {have}\n  {want}"
        return
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for i, (t, m) in enumerate(zip(expected, got)):
        assert isinstance(m, Tensor), f"result {i}: expected a minikernel Tensor, got {type(m).__name__}"
        assert m.shape == tuple(t.shape), f"result {i}: shape {m.shape} != torch's {tuple(t.shape)}"
        assert str(m.dtype) == str(t.dtype).removeprefix("torch."), f"result {i}: dtype {m.dtype} vs {t.dtype}"
        torch.testing.assert_close(m.detach().to_torch(), t.detach(), rtol=rtol, atol=atol, equal_nan=True)
        assert m._version == t._version, f"result {i}: version {m._version} != torch's {t._version}"
        assert _grad_fn_name(m) == _grad_fn_name(t), (
            f"result {i}: grad_fn {_grad_fn_name(m)} != torch's {_grad_fn_name(t)}")
    for i, (t, m) in enumerate(zip(theirs, mine)):
        if t.grad is None:
            assert m.grad is None, f"leaf {i}: torch left .grad None, minikernel has {m.grad}"
            continue
        assert m.grad is not None, f"leaf {i}: torch computed a gradient, minikernel's .grad is None"
        torch.testing.assert_close(m.grad.to_torch(), t.grad, rtol=rtol, atol=atol, equal_nan=True,
                                   msg=lambda msg, i=i: f"leaf {i} gradient differs from torch's: {msg}")
