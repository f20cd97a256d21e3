"""Inputs for the chapter 05 tests: float tensors under several layouts, LayerNorm shapes."""
from __future__ import annotations

import math

import torch
from hypothesis import strategies as st

from minikernel import Tensor
from tests.ch02.strategies import laid_out

FLOATS = [torch.float32, torch.float64]


def randn(shape, dtype=torch.float64, seed: int = 0, scale: float = 3.0, shift: float = 0.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (shift + scale * torch.randn(tuple(shape), generator=g, dtype=torch.float64)).to(dtype)




@st.composite
def float_tensors(draw, max_dims: int = 4, max_side: int = 4, min_side: int = 0):
    shape = tuple(draw(st.lists(st.integers(min_side, max_side), max_size=max_dims)))
    dtype = draw(st.sampled_from(FLOATS))
    return laid_out(randn(shape, dtype, draw(st.integers(0, 2**16))), draw(st.data()))


@st.composite
def reductions(draw, ndim: int):
    """A ``dim`` argument as torch takes it: None, an int (maybe negative), or a list of dims."""
    kind = draw(st.sampled_from(["none", "int", "list"] if ndim else ["none", "int"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-max(ndim, 1), max(ndim, 1) - 1))
    dims = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return [d - ndim if draw(st.booleans()) else d for d in dims]


@st.composite
def layer_norm_cases(draw, max_lead: int = 3, max_norm: int = 3, max_side: int = 5, dtypes=FLOATS):
    """(x, normalized_shape, weight, bias): leading dims (maybe empty or size 0), 1-3 normalized dims."""
    lead = tuple(draw(st.lists(st.integers(0, 4), max_size=max_lead)))
    norm = tuple(draw(st.lists(st.integers(1, max_side), min_size=1, max_size=max_norm)))
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**16))
    x = laid_out(randn(lead + norm, dtype, seed, shift=draw(st.sampled_from([0.0, 5.0]))), draw(st.data()))
    weight = randn(norm, dtype, seed + 1) if draw(st.booleans()) else None
    bias = randn(norm, dtype, seed + 2) if draw(st.booleans()) else None
    return x, norm, weight, bias


def mk(t):
    """A minikernel Tensor over the same memory (None stays None)."""
    return None if t is None else Tensor.from_torch(t)


def tolerance(dtype: torch.dtype, n: int = 1) -> dict:
    """assert_close tolerances: float64 tight, float32 loose enough for sums of ``n`` terms."""
    if dtype == torch.float64:
        return dict(rtol=1e-9, atol=1e-9)
    return dict(rtol=2e-4, atol=2e-4 * max(1.0, math.sqrt(n)))
