"""Chapter 07's cost model: how long an allreduce should take, and why the ring wins.

The **alpha-beta model** prices one message of ``n`` bytes at ``alpha + beta * n``
seconds: ``alpha`` is the latency (start-up cost of any message, however small)
and ``beta`` the time per byte (1 / bandwidth). A rank can send one message and
receive another at the same time (full-duplex links).

For ``N`` ranks each holding ``S`` bytes:

=========  =====================================  ==========================  =========================
method     messages the busiest rank sends        bytes it sends (and gets)   seconds
=========  =====================================  ==========================  =========================
ring       ``2 (N - 1)`` (one per step)           ``2 (N - 1) / N · S``       ``2 (N - 1) (alpha + S / N · beta)``
naive      ``N - 1`` (root: the result, to each)  ``(N - 1) · S``             ``2 (N - 1) (alpha + S · beta)``
=========  =====================================  ==========================  =========================

The ring's traffic per rank is below ``2 S`` however many ranks there are; the
naive root's grows with ``N``. The ring pays ``2 (N - 1)`` latencies, so for tiny
buffers the naive method can still win.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from ..course.exercise import exercise


class Cost(NamedTuple):
    """The predicted cost of one allreduce for its busiest rank."""

    messages: int    #: messages that rank sends (it receives as many or more)
    nbytes: float    #: bytes that rank sends (it receives as many)
    seconds: float   #: alpha-beta time of the whole allreduce


@exercise("7.4")
def ring_cost(world_size: int, nbytes: float, alpha: float, beta: float) -> Cost:
    """Cost of a ring allreduce of ``nbytes`` per rank over ``world_size`` ranks.

    ``2 (N - 1)`` steps; in each, every rank sends one chunk of ``S / N`` bytes and
    receives one at the same time, so a step takes ``alpha + S / N * beta``::

        messages = 2 (N - 1);  nbytes = 2 (N - 1) / N * S;  seconds = 2 (N - 1) (alpha + S / N * beta)

    One rank costs nothing. Raise ValueError for ``world_size < 1`` or ``nbytes < 0``.

    Matches: the traffic of ``SimulatedRing`` (6 values sent per rank for the notes'
    4 ranks of 4 values) and of ``ring_allreduce`` (``Ring.sent``).
    """
    # TODO(7.4): ≈6 lines
    raise NotImplementedError("exercise 7.4 (ring_cost) is not implemented yet")


@exercise("7.4")
def naive_cost(world_size: int, nbytes: float, alpha: float, beta: float) -> Cost:
    """Cost of the naive allreduce, for its root (the busiest rank).

    The root receives ``N - 1`` whole buffers one after another, then sends the
    result ``N - 1`` times::

        messages = N - 1;  nbytes = (N - 1) * S;  seconds = 2 (N - 1) (alpha + S * beta)

    One rank costs nothing. Raise ValueError for ``world_size < 1`` or ``nbytes < 0``.

    Matches: ``simulate_naive``'s root (12 values sent, 12 received for the notes' example).
    """
    # TODO(7.4): ≈6 lines
    raise NotImplementedError("exercise 7.4 (naive_cost) is not implemented yet")


@exercise("7.4")
def fit_alpha_beta(nbytes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """Fit ``seconds ≈ alpha + beta * nbytes`` to measured message times (least squares).

    Minimise ``sum((alpha + beta * x_i - t_i) ** 2)``: with the means ``x̄``, ``t̄``,
    ``beta = sum((x_i - x̄)(t_i - t̄)) / sum((x_i - x̄) ** 2)`` and ``alpha = t̄ - beta * x̄``.
    Raise ValueError when the lengths differ or fewer than two distinct sizes are given.

    Matches: ``torch.linalg.lstsq(torch.stack([torch.ones(n), x], 1), t[:, None]).solution``
    (in float64), which returns ``[[alpha], [beta]]``.
    """
    # TODO(7.4): ≈8 lines
    raise NotImplementedError("exercise 7.4 (fit_alpha_beta) is not implemented yet")
