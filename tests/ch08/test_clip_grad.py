"""Exercise 8.5 (minikernel/clip_grad.py): one norm over all gradients, against torch.nn.utils."""
from __future__ import annotations

import math
import warnings

import pytest
import torch
from hypothesis import given, strategies as st

from minikernel import clip_grad as C
from tests.ch08.twins import as_torch, leaves, mk_tensor, set_grads
from tests.torch_versions import quoted_since

INF, NAN = float("inf"), float("nan")
NORMS = [2.0, 1.0, 3.0, 0.5, INF, "inf", 2]


@st.composite
def clipping_cases(draw):
    shapes = draw(st.lists(st.lists(st.integers(1, 4), max_size=2).map(tuple), min_size=0, max_size=4))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    scale = draw(st.sampled_from([1.0, 1e-3, 50.0]))
    grads = [torch.randn(s, generator=g, dtype=dtype) * scale if draw(st.integers(0, 4)) else None for s in shapes]
    if grads and draw(st.integers(0, 5)) == 0:  # an overflowed gradient
        i = draw(st.integers(0, len(grads) - 1))
        if grads[i] is not None:
            grads[i].view(-1)[0] = draw(st.sampled_from([INF, -INF, NAN]))
    return shapes, dtype, grads


def _run(clip, params, *args):
    """(total norm, error, warnings) of clip(params, *args); stubs go through."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            total, error = clip(params, *args), None
        except NotImplementedError:
            raise
        except RuntimeError as err:
            total, error = None, str(err)
    # numpy's own RuntimeWarnings (inf * 0, ...) are not part of the comparison
    return total, error, [str(w.message) for w in caught if not issubclass(w.category, RuntimeWarning)]


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.allclose(a, b, rtol=1e-5, atol=1e-7, equal_nan=True)


@pytest.mark.exercise("8.5")
@given(clipping_cases(), st.sampled_from(NORMS), st.sampled_from([1.0, 0.5, 5.0, 1e-3]), st.booleans())
def test_clip_grad_norm_matches_torch(case, norm_type, max_norm, error_if_nonfinite):
    shapes, dtype, grads = case
    tparams, mparams = leaves(shapes, dtype=dtype)
    set_grads(tparams, mparams, grads)
    mine = _run(C.clip_grad_norm_, mparams, max_norm, norm_type, error_if_nonfinite)
    theirs = _run(torch.nn.utils.clip_grad_norm_, tparams, max_norm, norm_type, error_if_nonfinite)
    assert mine[1:] == theirs[1:], "the same error and warnings as torch"
    if theirs[0] is not None:
        assert _same(as_torch(mine[0]), theirs[0]), f"total norm {mine[0]} vs torch's {theirs[0]}"
    for i, (m, t) in enumerate(zip(mparams, tparams)):
        assert (m.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert _same(as_torch(m.grad), t.grad), f"gradient {i} after clipping:\n{m.grad}\nvs torch's\n{t.grad}"


@pytest.mark.exercise("8.5")
@given(clipping_cases(), st.sampled_from(NORMS))
def test_get_total_norm_matches_torch(case, norm_type):
    _, _, grads = case
    present = [g for g in grads if g is not None]
    mine = _run(C.get_total_norm, [mk_tensor(g) for g in present], norm_type, True)
    theirs = _run(torch.nn.utils.get_total_norm, present, norm_type, True)
    assert mine[1:] == theirs[1:]
    if theirs[0] is not None:
        assert _same(as_torch(mine[0]), theirs[0])


@pytest.mark.exercise("8.5")
def test_one_norm_over_all_gradients_as_if_concatenated():
    """[3, 4] and [12]: norms 5 and 12, total 13 — the norm of [3, 4, 12], not 5 + 12."""
    tparams, mparams = leaves([(2,), (1,)], dtype=torch.float32)
    set_grads(tparams, mparams, [torch.tensor([3.0, 4.0]), torch.tensor([12.0])])
    total = C.clip_grad_norm_(mparams, max_norm=1.0)
    assert total.item() == pytest.approx(13.0)
    clipped = torch.cat([as_torch(p.grad) for p in mparams])
    assert torch.allclose(clipped, torch.tensor([3.0, 4.0, 12.0]) / (13 + 1e-6))
    assert torch.linalg.vector_norm(clipped).item() == pytest.approx(1.0, abs=1e-6)


@pytest.mark.exercise("8.5")
def test_a_single_tensor_inf_norm_and_versions():
    _, (p,) = leaves([(3,)], dtype=torch.float32)
    p.grad = mk_tensor(torch.tensor([3.0, -4.0, 0.0]))
    version = p.grad._version
    total = C.clip_grad_norm_(p, 1.0, norm_type="inf")
    assert total.item() == 4.0 and str(total.dtype) == "float32" and total.shape == ()
    assert as_torch(p.grad).tolist() == pytest.approx([0.75, -1.0, 0.0])
    assert p.grad._version > version, "bump each gradient's version after writing it"


EMPTY_GENERATOR = "`parameters` is an empty generator, no gradient clipping will occur."


@pytest.mark.exercise("8.5")
def test_nothing_to_clip():
    for params in ([], (p for p in [])):
        mine = _run(C.clip_grad_norm_, params, 1.0)
        theirs = _run(torch.nn.utils.clip_grad_norm_, [] if isinstance(params, list) else (p for p in []), 1.0)
        # torch before 2.11 gives no warning for an empty generator; the library's docstring does (2.11's)
        documented = [EMPTY_GENERATOR] if not isinstance(params, list) else []
        assert mine[1:] == quoted_since("2.11", theirs[1:], (theirs[1], documented))
        assert as_torch(mine[0]).tolist() == theirs[0].tolist() == 0.0 and str(mine[0].dtype) == "float32"
    _, (p,) = leaves([(2,)])
    total = C.clip_grad_norm_([p], 1.0)  # no gradient yet
    assert total.item() == 0.0 and p.grad is None
    assert math.isinf(C.get_total_norm([mk_tensor(torch.tensor([INF]))]).item())


def test_torch_import_path():
    import minikernel.nn as mk_nn

    assert mk_nn.utils.clip_grad_norm_ is C.clip_grad_norm_
    assert mk_nn.utils.get_total_norm is C.get_total_norm and mk_nn.utils.clip_grads_with_norm_ is C.clip_grads_with_norm_
