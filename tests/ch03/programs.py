"""Random expression graphs, run the same way through torch and minikernel.

A *program* is a list of steps ``(op name, operand indices)`` over a growing pool
of tensors that starts with the leaves; each step appends its result. Operands
are drawn with replacement, so one tensor feeds several later steps (diamonds,
shared sub-expressions). Every shape is a broadcast of (2, 3), so any two pool
entries can be combined. The ops are written with methods and operators that
torch and minikernel name alike, so one program runs on both.
"""
from __future__ import annotations

import torch
from hypothesis import strategies as st

UNARY = {
    "exp": lambda a: a.tanh().exp(),  # tanh first: chains of exp stay finite
    "tanh": lambda a: a.tanh(),
    "sigmoid": lambda a: a.sigmoid(),
    "relu": lambda a: a.relu(),
    "neg": lambda a: -a,
    "log": lambda a: (a * a + 1).log(),
    "square": lambda a: a ** 2,
    "cube": lambda a: a.pow(3),
    "sum_last": lambda a: a.sum(-1, keepdim=True) if a.dim() else a,
    "mean_first": lambda a: a.mean(0, keepdim=True) if a.dim() == 2 else a,
    "sum_all": lambda a: a.sum(),
    "max_all": lambda a: a.max() if a.numel() else a,
    "max_last": lambda a: a.max(-1, keepdim=True).values if a.dim() else a,
}
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1),
    "rsub": lambda a, b: 2.0 - a * b,
}
#: ops whose backward needs no exercise beyond the engine (3.1, 3.3) for equal shapes
PLAIN_UNARY = ["exp", "tanh", "sigmoid", "relu", "neg"]
PLAIN_BINARY = ["add", "sub"]
LEAF_SHAPES = [(2, 3), (3,), (1, 3), (2, 1), ()]


@st.composite
def leaves(draw, count: int, shapes=LEAF_SHAPES, strided: bool = True) -> list[torch.Tensor]:
    """``count`` float64 leaves; a (2, 3) leaf may be a transposed (non-contiguous) one."""
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    out = []
    for _ in range(count):
        shape = draw(st.sampled_from(shapes))
        if strided and shape == (2, 3) and draw(st.booleans()):
            out.append(torch.randn(3, 2, generator=g, dtype=torch.float64).t())
        else:
            out.append(torch.randn(shape, generator=g, dtype=torch.float64))
    return out


@st.composite
def programs(draw, n_leaves: int, unary=tuple(UNARY), binary=tuple(BINARY), max_steps: int = 8):
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        pool = n_leaves + len(steps)
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(unary)), (draw(st.integers(0, pool - 1)),)))
        else:
            steps.append((draw(st.sampled_from(binary)),
                          (draw(st.integers(0, pool - 1)), draw(st.integers(0, pool - 1)))))
    return steps


def run(program, leaves, hook=None):
    """Evaluate ``program``; ``hook(i, tensor)`` is called on each new pool entry.
    Returns the pool (leaves first)."""
    pool = list(leaves)
    for name, operands in program:
        fn = UNARY.get(name) or BINARY[name]
        pool.append(fn(*(pool[i] for i in operands)))
        if hook is not None:
            hook(len(pool) - 1, pool[-1])
    return pool


def scalar_of(pool, n_leaves):
    """One scalar that depends on every computed entry (so every step gets a gradient)."""
    total = pool[n_leaves].sum()
    for t in pool[n_leaves + 1:]:
        total = total + t.sum()
    return total
