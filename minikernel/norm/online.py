"""Exercises 5.2 and 5.3: variance in one pass that does not cancel — Welford and Chan.

The textbook one-pass formula keeps two running sums and subtracts at the end::

    var = (Σx² - (Σx)² / n) / (n - c)

Both sums are about ``n · mean²``; when ``|mean| >> std`` their difference is a few
units in the last place of two huge numbers (catastrophic cancellation). With
float32 data of mean 1e4 and std 1e-2, ``Σx²/n`` is 1e8 and float32 holds it to
about ±4: the variance (1e-4) is gone, and the result can be negative.

**Welford's** online algorithm (5.2) keeps ``(count, mean, M2)`` instead, where
``M2 = Σ(x - mean)²`` over the values seen so far, and updates them with
deviations from the *current* mean — small numbers, no cancellation.
**Chan's** merge (5.3) combines two such triples computed on separate parts of
the data: the step a parallel reduction needs (threads of a GPU block, ranks of
a SyncBatchNorm), and what PyTorch's CUDA kernels use.

The accumulators have the type of the values: float32 data is accumulated in
float32 here, which is the hard case for every method.
"""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from ..course.exercise import exercise

Scalar = Union[float, np.floating]      #: one value; np.float32 stays float32 in arithmetic
Triple = tuple[Scalar, Scalar, Scalar]  #: (count, mean, M2), all of one type

__all__ = ["welford_update", "welford_merge", "welford", "welford_var", "one_pass_var", "merge_all",
           "stats_from_sums", "stats_from_triples"]


@exercise("5.2")
def welford_update(count: Scalar, mean: Scalar, m2: Scalar, x: Scalar) -> Triple:
    """Fold one value ``x`` into the running ``(count, mean, M2)``; return the new triple.

    Welford (1962)::

        count' = count + 1
        delta  = x - mean           (deviation from the old mean)
        mean'  = mean + delta / count'
        M2'    = M2 + delta * (x - mean')   (old deviation times new deviation)

    Start from ``(0, 0, 0)``. After ``n`` values, ``mean`` is their mean and
    ``M2 = Σ(x_i - mean)²``, so ``M2 / (n - correction)`` is their variance. All four
    arguments share one type (the count too: float32 counts are exact up to 2**24,
    and PyTorch keeps a float count in its Welford state for the same reason), so
    float32 arithmetic stays float32.

    Matches: after streaming ``values``, ``mean == torch.mean(values)`` and
    ``M2 / count == torch.var(values, correction=0)``.
    """
    # TODO(5.2): ≈4 lines
    raise NotImplementedError("exercise 5.2 (welford_update) is not implemented yet")


@exercise("5.3")
def welford_merge(count_a: Scalar, mean_a: Scalar, m2_a: Scalar,
                  count_b: Scalar, mean_b: Scalar, m2_b: Scalar) -> Triple:
    """Combine the triples of two disjoint parts A and B into the triple of A ∪ B.

    Chan, Golub & LeVeque (1979)::

        count = count_a + count_b
        delta = mean_b - mean_a
        mean  = mean_a + delta * (count_b / count)
        M2    = m2_a + m2_b + delta² * (count_a * count_b / count)

    The last term is the spread *between* the two parts' means. Use this form, not the
    weighted average ``(count_a·mean_a + count_b·mean_b) / count``: parts with the same
    mean must merge to exactly that mean (delta is 0). If one part is
    empty (count 0), return the other's triple unchanged (no division by zero).
    Keep the arguments' type, as in 5.2.

    Matches: merging the triples of ``a`` and ``b`` gives ``count = len(a) + len(b)``,
    ``mean == torch.cat([a, b]).mean()`` and ``M2 / count == torch.cat([a, b]).var(correction=0)``.
    """
    # TODO(5.3): ≈7 lines
    raise NotImplementedError("exercise 5.3 (welford_merge) is not implemented yet")


# ---------------------------------------------------------------------- plumbing
def _values(values: Union[np.ndarray, Sequence[float]]) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind != "f":
        array = array.astype(np.float64)
    return array.reshape(-1)


def welford(values: Union[np.ndarray, Sequence[float]], chunks: int = 1) -> Triple:
    """``(count, mean, M2)`` of ``values`` by your Welford update, accumulated in their dtype.

    With ``chunks > 1`` the values are split into that many consecutive parts, each
    part streamed on its own (as threads or ranks would, in parallel), and the
    parts' triples merged with your 5.3, left to right.

    Example::

        >>> welford(np.array([1.0, 2.0, 4.0]))   # (3.0, 2.333..., 4.666...)
    """
    array = _values(values)
    if chunks < 1:
        raise ValueError(f"chunks must be at least 1, got {chunks}")
    zero = array.dtype.type(0)
    triples = []
    for part in np.array_split(array, chunks):
        state = (zero, zero, zero)
        for x in part:
            state = welford_update(*state, x)
        triples.append(state)
    return merge_all(triples)


def merge_all(triples: Sequence[Triple]) -> Triple:
    """Fold ``triples`` left to right with your ``welford_merge`` (5.3)."""
    if not triples:
        raise ValueError("merge_all needs at least one (count, mean, M2) triple")
    state = tuple(triples[0])
    for other in triples[1:]:
        state = welford_merge(*state, *other)
    return state


def welford_var(values: Union[np.ndarray, Sequence[float]], correction: float = 1, chunks: int = 1) -> Scalar:
    """Variance from Welford's triple: ``M2 / max(0, count - correction)``."""
    count, _, m2 = welford(values, chunks)
    with np.errstate(divide="ignore", invalid="ignore"):
        return m2 / type(m2)(max(0.0, float(count) - correction))


def one_pass_var(values: Union[np.ndarray, Sequence[float]], correction: float = 1) -> Scalar:
    """The one-pass textbook formula ``(Σx² - (Σx)²/n) / (n - correction)``, in the values' dtype.

    The sums themselves are accurate (numpy adds pairwise); what fails is the
    subtraction of two nearly equal large numbers.
    """
    array = _values(values)
    t = array.dtype.type
    n = t(array.size)
    total, squares = array.sum(dtype=array.dtype), (array * array).sum(dtype=array.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (squares - total * total / n) / t(max(0.0, array.size - correction))


def stats_from_sums(sums: Sequence[Scalar], squares: Sequence[Scalar], counts: Sequence[Scalar]) -> tuple[Scalar, Scalar]:
    """Global ``(mean, biased var)`` from per-part ``(Σx, Σx², n)``: what one SUM allreduce gives SyncBN.

    ``mean = ΣΣx / Σn``, ``var = ΣΣx² / Σn - mean²``, computed in the sums' dtype. Each
    argument has one entry per part (axis 0); further axes (channels) are kept.
    """
    dtype = np.asarray(sums).dtype
    total, sq, n = (np.asarray(v).sum(axis=0, dtype=dtype) for v in (sums, squares, counts))
    mean = total / n
    return mean, sq / n - mean * mean


def stats_from_triples(counts: Sequence[Scalar], means: Sequence[Scalar], m2s: Sequence[Scalar]) -> tuple[Scalar, Scalar]:
    """Global ``(mean, biased var)`` from per-part ``(n, mean, M2)``, merged with your 5.3."""
    count, mean, m2 = merge_all(list(zip(counts, means, m2s)))
    return mean, m2 / count
