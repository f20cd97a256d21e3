"""Twin parameters for chapter 08: the same values as torch leaves and as minikernel
leaves (separate memory), gradients set directly from torch-made values — no backward
pass, so these tests need no chapter 03 exercise."""
from __future__ import annotations

from typing import Optional, Sequence

import torch
from hypothesis import strategies as st

from minikernel.autograd import values
from minikernel.tensor import Tensor

Shape = tuple[int, ...]


def leaves(shapes: Sequence[Shape], dtype=torch.float64, seed: int = 0) -> tuple[list[torch.Tensor], list[Tensor]]:
    """torch parameters and minikernel parameters with equal values (not shared memory)."""
    g = torch.Generator().manual_seed(seed)
    made = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
    return ([t.clone().requires_grad_() for t in made],
            [Tensor.from_torch(t.clone()).requires_grad_() for t in made])


def mk_tensor(t: torch.Tensor) -> Tensor:
    """A minikernel tensor holding a copy of ``t``."""
    return Tensor.from_torch(t.detach().clone())


def set_grads(torch_params, mk_params, grads: Sequence[Optional[torch.Tensor]]) -> None:
    """p.grad = g on both sides (copies; None leaves the parameter without a gradient)."""
    for tp, mp, g in zip(torch_params, mk_params, grads):
        tp.grad = None if g is None else g.clone()
        mp.grad = None if g is None else mk_tensor(g)


def as_torch(t: Tensor) -> torch.Tensor:
    return torch.from_numpy(values.array(t).copy())


def first_difference(got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> str:
    """Where two same-shaped tensors first differ beyond ``torch.isclose``'s tolerance:
    printed values can look the same (float64 shown to 4 digits), so name the element."""
    if got.shape != expected.shape:
        return f"shape {tuple(got.shape)}, torch's {tuple(expected.shape)}"
    bad = ~torch.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return "no element differs"
    index = tuple(int(i) for i in bad.nonzero()[0])
    g, e = got[index].item(), expected[index].item()
    return (f"first difference at index {list(index)}: yours {g!r}, torch's {e!r} (|difference| {abs(g - e):.3g}, "
            f"allowed {atol + rtol * abs(e):.3g}); {int(bad.sum())} of {bad.numel()} elements differ")


def assert_close(mk_params, torch_params, rtol: float = 1e-9, atol: float = 1e-12, what: str = "parameter") -> None:
    for i, (m, t) in enumerate(zip(mk_params, torch_params)):
        got, expected = as_torch(m), t.detach()
        assert got.dtype == expected.dtype, f"{what} {i}: dtype {got.dtype}, torch's {expected.dtype}"
        assert torch.allclose(got, expected, rtol=rtol, atol=atol), (
            f"{what} {i} differs from torch's: {first_difference(got, expected, rtol, atol)}")


@st.composite
def gradient_runs(draw, max_params: int = 3, max_steps: int = 5, allow_none: bool = True):
    """(shapes, seed, steps): steps is a list of per-step lists of gradients (or None),
    the gradients made with torch from the seed."""
    shapes = draw(st.lists(st.lists(st.integers(1, 4), min_size=0, max_size=2).map(tuple),
                           min_size=1, max_size=max_params))
    seed = draw(st.integers(0, 2**16))
    n_steps = draw(st.integers(1, max_steps))
    present = draw(st.lists(st.lists(st.booleans() if allow_none else st.just(True),
                                     min_size=len(shapes), max_size=len(shapes)),
                            min_size=n_steps, max_size=n_steps))
    scale = draw(st.sampled_from([1.0, 1e-3, 100.0]))
    g = torch.Generator().manual_seed(seed + 1)
    steps = [[torch.randn(s, generator=g, dtype=torch.float64) * scale if keep else None
              for s, keep in zip(shapes, row)] for row in present]
    return shapes, seed, steps
