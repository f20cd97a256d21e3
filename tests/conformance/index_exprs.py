"""Random index expressions for the fuzzer: ``t[idx]``, ``t[idx] = value``, ``t[idx] += value``.

An expression is drawn as plain data (so a program stays printable and replayable) and
made into a real index for a given tensor when the step runs:

* ``("int", k)``, ``("slice", start, stop, step)`` (negative start/stop, steps of 1–3,
  sometimes a negative or zero step, which both libraries refuse), ``("none",)``,
  ``("ellipsis",)``, ``("list", [k, ...])``, ``("tensor", [k, ...])`` (int64);
* ``("mask", bits)``: a 1-d boolean tensor, as long as the dimension it lands on
  (``bits`` repeated), or of ``len(bits)`` where that dimension is unknown;
* ``("full_mask", threshold)``: ``t > threshold``, the whole index.

An index is one part or a tuple of 1–3 parts, with at most one ``...`` (minikernel refuses
two, as numpy does; torch reads them its own way). Most draws fit the tensor; the rest are
errors both libraries must raise with the same type. Values written: a number, a 0-d
tensor (``b.sum()``), a 1-element tensor (``b.flatten()[:1]``) or the pool tensor ``b`` as is.
"""
from __future__ import annotations

import random
from typing import Any

#: index parts that consume one dimension of the indexed tensor
_CONSUMES = {"int", "slice", "list", "tensor", "mask"}


def _small(rng: random.Random) -> int:
    return rng.choice([0, 0, 1, -1, 2, -2, 3])


def _part(rng: random.Random) -> tuple:
    kind = rng.choice(["int", "int", "slice", "slice", "slice", "none", "ellipsis", "list", "tensor", "mask"])
    if kind == "int":
        return ("int", _small(rng))
    if kind == "slice":
        start = rng.choice([None, None, 0, 1, -1, -2, 2])
        stop = rng.choice([None, None, 1, 2, -1, 3, 0])
        step = rng.choice([None, None, 1, 2, 3]) if rng.random() < 0.95 else rng.choice([-1, 0])
        return ("slice", start, stop, step)
    if kind in ("list", "tensor"):
        return (kind, [_small(rng) for _ in range(rng.randint(1, 3))])
    if kind == "mask":
        return ("mask", [rng.random() < 0.5 for _ in range(rng.randint(1, 3))])
    return (kind,)


def draw_index(rng: random.Random) -> tuple:
    """An index expression: ``("one", part)``, ``("tuple", [parts])`` or ``("full_mask", threshold)``."""
    roll = rng.random()
    if roll < 0.1:
        return ("full_mask", rng.choice([0.0, -0.5, 0.5]))
    if roll < 0.45:
        return ("one", _part(rng))
    parts = [_part(rng) for _ in range(rng.randint(1, 3))]
    if sum(p[0] == "ellipsis" for p in parts) > 1:  # refused on purpose (docs/conformance.md): keep the first
        parts = [p for i, p in enumerate(parts) if p[0] != "ellipsis" or i == [q[0] for q in parts].index("ellipsis")]
    return ("tuple", parts)


def _dim_of(parts: list, i: int, ndim: int) -> int | None:
    """The dimension of the indexed tensor that part ``i`` lands on (None: cannot tell)."""
    kinds = [p[0] for p in parts]
    if "ellipsis" not in kinds[:i]:
        return sum(k in _CONSUMES for k in kinds[:i])
    return ndim - sum(k in _CONSUMES for k in kinds[i:])


def _make(lib: Any, part: tuple, x: Any, dim: int | None) -> Any:
    kind = part[0]
    if kind == "int":
        return part[1]
    if kind == "slice":
        return slice(*part[1:])
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "list":
        return list(part[1])
    if kind == "tensor":
        return lib.tensor(part[1], dtype=lib.int64)
    bits = part[1]
    length = x.shape[dim] if dim is not None and 0 <= dim < x.dim() else len(bits)
    mask = lib.zeros(length, dtype=lib.int64)  # then compared: a bool tensor also when empty
    for k in range(length):
        mask[k] = int(bits[k % len(bits)])
    return mask > 0


def build_index(lib: Any, x: Any, spec: tuple) -> Any:
    """The index ``spec`` stands for, made with ``lib`` for the tensor ``x``."""
    if spec[0] == "full_mask":
        return x.detach() > spec[1]
    if spec[0] == "one":
        return _make(lib, spec[1], x, 0)
    parts = spec[1]
    return tuple(_make(lib, part, x, _dim_of(parts, i, x.dim())) for i, part in enumerate(parts))


def draw_value(rng: random.Random) -> str:
    """How the written value is made: ``"number"``, ``"0d"``, ``"one"`` or ``"tensor"``."""
    return rng.choice(["number", "number", "0d", "one", "tensor"])


def make_value(kind: str, b: Any) -> Any:
    """The value written, from the pool tensor ``b`` (a number ignores it)."""
    if kind == "number":
        return 0.75
    if kind == "0d":
        return b.sum()
    if kind == "one":
        return b.flatten()[:1]
    return b


def read(lib: Any, a: Any, spec: tuple) -> Any:
    """``a[idx]``."""
    return a[build_index(lib, a, spec)]


def write(lib: Any, a: Any, b: Any, spec: tuple, value: str) -> None:
    """``a[idx] = value``."""
    a[build_index(lib, a, spec)] = make_value(value, b)


def add_into(lib: Any, a: Any, b: Any, spec: tuple, value: str) -> None:
    """``a[idx] += value``: a read, an out-of-place add and a write, as Python runs it."""
    idx = build_index(lib, a, spec)
    a[idx] += make_value(value, b)
