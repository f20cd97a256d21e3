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

``pipelined_ring_cost`` (complete code, not an exercise) adds the additions
(``gamma`` seconds per byte reduced) and the reference ring's pieces: cutting each
chunk into ``P`` pieces hides all additions but one, for ``P`` times the latency.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from ..course.exercise import exercise
from .pieces import PIECE_BYTES, piece_count


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


def pipelined_ring_cost(world_size: int, nbytes: float, alpha: float, beta: float, gamma: float = 0.0,
                        piece_bytes: int = PIECE_BYTES) -> Cost:
    """Cost of the reference ring, whose chunks travel as ``P`` pieces and whose additions overlap the transfers.

    Each chunk of ``S / N`` bytes is cut into ``P = ceil(S / N / piece_bytes)`` pieces of
    ``m = S / (N P)`` bytes. One piece takes ``t = alpha + m beta`` over a link and
    ``g = gamma m`` to add. Each phase streams ``(N - 1) P`` pieces over every link
    back to back; in the scatter-reduce a piece can be forwarded only once it has
    been added, which the next ``P - 1`` transfers hide unless ``g > (P - 1) t``::

        seconds = 2 (N - 1) P t  +  (N - 2) max(0, g - (P - 1) t)  +  g

    With ``P >= 2`` and additions no slower than the link (``gamma <= beta``) that is
    ``2 (N - 1) (P alpha + S / N beta) + gamma S / (N P)``: the bytes cost what they
    cost unpipelined, each piece pays ``alpha`` again, and only the last piece's
    addition shows. The best piece count balances the two:
    ``P* = sqrt(gamma S / (2 N (N - 1) alpha))``. With ``P = 1`` every addition shows:
    ``2 (N - 1) t + (N - 1) g``. (When additions are slower than transfers the
    formula is optimistic: the adder, not the link, sets the pace.)

    ``alpha`` and ``beta`` are a link's as a ring step uses it: every rank sending and
    receiving at once (``examples.exchange_times``), with as many ranks sharing the
    machine's cores as in the allreduce being predicted.

    Returns ``Cost(2 (N - 1) P, 2 (N - 1) / N S, seconds)``; one rank or no bytes cost nothing.
    """
    if world_size < 1 or nbytes < 0:
        raise ValueError(f"pipelined_ring_cost needs world_size >= 1 and nbytes >= 0, got world_size={world_size}, "
                         f"nbytes={nbytes}")
    n, chunk = world_size, nbytes / world_size
    p = piece_count(chunk, piece_bytes)
    if n == 1 or p == 0:
        return Cost(0, 0.0, 0.0)
    t, g = alpha + chunk / p * beta, gamma * chunk / p
    seconds = 2 * (n - 1) * p * t + (n - 2) * max(0.0, g - (p - 1) * t) + g
    return Cost(2 * (n - 1) * p, 2 * (n - 1) * chunk, seconds)
