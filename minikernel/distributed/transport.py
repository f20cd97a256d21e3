"""Point-to-point links over ``torch.distributed``, with a timeout on every wait.

The transport is PyTorch's: ``dist.isend``/``dist.irecv`` on the gloo backend
(TCP between processes, on one machine or many). What this module adds is what a
collective needs around them:

* **a timeout on every wait** (``Work.wait(timeout)``), taken from the one given to
  ``init_process_group``, so a rank that died or never arrives makes the others
  raise instead of hanging;
* **clear errors**: gloo's "Connection reset by peer" or "Timed out waiting 3000ms"
  become a ``CollectiveError`` that says which rank was lost and what to check;
* **metadata first**: before any data moves, every rank learns every other rank's
  length, dtype and op (``check_agreement``), so a mismatch raises the same clear
  error on every rank instead of corrupting memory or aborting the receiver;
* **counters**: elements sent and received, for the cost model.

Why not blocking ``dist.send``/``dist.recv``? If every rank sends first, every rank
waits for a receiver that is itself sending: a deadlock. Posting the send and the
receive together (``isend`` + ``irecv``) lets both go at once.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.distributed as dist

from .ops import KNOWN_DTYPES, Op, dtype_code, dtype_from_code, op_name

ProcessGroup = dist.ProcessGroup
#: used when the group's own timeout cannot be read (torch's default is 30 minutes)
FALLBACK_TIMEOUT = datetime.timedelta(minutes=30)


class CollectiveError(RuntimeError):
    """A collective could not finish: a peer died, timed out, or disagreed."""


class MismatchError(CollectiveError):
    """Ranks passed different lengths, dtypes or ops; raised on every rank before any transfer."""


def group_timeout(group: Optional[ProcessGroup] = None) -> datetime.timedelta:
    """The timeout ``init_process_group(timeout=...)`` (or ``new_group``) gave this group.

    PyTorch keeps it on the gloo backend object; there is no public getter, so fall
    back to ``FALLBACK_TIMEOUT`` if that ever moves.
    """
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    try:
        return pg._get_backend(torch.device("cpu")).options._timeout
    except (AttributeError, RuntimeError):
        return FALLBACK_TIMEOUT


def _explain(err: BaseException, me: int, peer: int, doing: str, what: str, timeout: datetime.timedelta) -> str:
    """Turn gloo's message into one that says what happened and what to do."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    gloo = text.split("] ", 1)[-1]  # drop the "[.../pair.cc:537]" source location
    if "caused pair closure" in text:
        return (f"{what}: rank {me} cannot {doing} rank {peer}: an earlier timeout closed that connection, so "
                "this process group is unusable now. Destroy it (dist.destroy_process_group()) and start again.")
    if "timed out" in text.lower() or "wait timeout" in text.lower():
        return (f"{what}: rank {me} waited {timeout.total_seconds():g} s to {doing} rank {peer} and gave up. "
                f"Rank {peer} is stuck, has died, or is not calling {what}; look at its output. "
                f"(The timeout is the one given to init_process_group.) gloo: {gloo}")
    return (f"{what}: rank {me} lost its connection to rank {peer} while trying to {doing} it: that process "
            f"exited or failed; look at its error first. gloo: {gloo}")


@dataclass
class Pending:
    """Transfers started by ``Ring.start_send``/``start_recv``; ``wait()`` finishes them."""

    ring: "Ring"
    works: list = field(default_factory=list)  # (Work, peer rank, "send to"/"receive from")

    def wait(self) -> None:
        """Wait for every transfer, at most the group's timeout each; raise CollectiveError on failure."""
        works, self.works = self.works, []
        for work, peer, doing in works:
            try:
                work.wait(self.ring.timeout)
            except NotImplementedError:
                raise
            except RuntimeError as err:
                raise CollectiveError(_explain(err, self.ring.rank, peer, doing, self.ring.what,
                                               self.ring.timeout)) from err

    def __iadd__(self, other: "Pending") -> "Pending":
        self.works += other.works
        other.works = []
        return self


@dataclass
class Ring:
    """This rank's view of a ring: its neighbours, the timeout, and traffic counters.

    Ranks are numbered within ``group`` (``0 .. world_size - 1``); rank ``r`` sends
    to ``next = (r + 1) % world_size`` and receives from ``prev = (r - 1) % world_size``.

    Attributes:
        rank (int): this process's rank in the group.
        world_size (int): number of ranks in the group.
        group (ProcessGroup or None): the group (None: the default group).
        timeout (timedelta): the longest any single wait may take.
        what (str): the collective running, for error messages.
        sent (int): elements this rank has sent so far.
        received (int): elements this rank has received so far.
        messages (int): messages this rank has sent so far (empty chunks are not sent).
    """

    rank: int
    world_size: int
    group: Optional[ProcessGroup] = None
    timeout: datetime.timedelta = FALLBACK_TIMEOUT
    what: str = "ring"
    sent: int = 0
    received: int = 0
    messages: int = 0

    @classmethod
    def of(cls, group: Optional[ProcessGroup] = None, what: str = "ring") -> "Ring":
        """The ring of the calling process in ``group`` (default: the whole world)."""
        if not dist.is_initialized():
            raise RuntimeError(f"{what} needs a process group: call torch.distributed.init_process_group"
                               "('gloo', ...) first, or start the ranks with minikernel.distributed.run_ranks "
                               "or torchrun")
        rank = dist.get_rank(group)
        if rank < 0:
            raise ValueError(f"{what}: this process (global rank {dist.get_rank()}) is not a member of the group "
                             "it was given; only the group's members may call it")
        return cls(rank, dist.get_world_size(group), group, group_timeout(group), what)

    @property
    def next(self) -> int:
        return (self.rank + 1) % self.world_size

    @property
    def prev(self) -> int:
        return (self.rank - 1) % self.world_size

    def _global(self, rank: int) -> int:
        return rank if self.group is None else dist.get_global_rank(self.group, rank)

    def _post(self, start, tensor: torch.Tensor, peer: int, doing: str):
        """``start`` (dist.isend or dist.irecv) for ``peer``, with gloo's errors explained.

        A peer that died before this call shows up here, not in ``wait``: gloo refuses
        to post on a connection it already saw closed.
        """
        try:
            return start(tensor, self._global(peer), group=self.group)
        except NotImplementedError:
            raise
        except RuntimeError as err:
            raise CollectiveError(_explain(err, self.rank, peer, doing, self.what, self.timeout)) from err

    def start_send(self, tensor: torch.Tensor, to: int) -> Pending:
        """Start sending ``tensor`` (contiguous) to group rank ``to``; empty tensors send nothing."""
        pending = Pending(self)
        if tensor.numel():
            if not tensor.is_contiguous():  # gloo would fail, and the peer would see a closed connection
                raise ValueError(f"{self.what}: can only send contiguous memory; call .contiguous() first")
            pending.works.append((self._post(dist.isend, tensor, to, "send to"), to, "send to"))
            self.sent += tensor.numel()
            self.messages += 1
        return pending

    def start_recv(self, tensor: torch.Tensor, frm: int) -> Pending:
        """Start receiving into ``tensor`` (contiguous) from group rank ``frm``; empty: nothing."""
        pending = Pending(self)
        if tensor.numel():
            if not tensor.is_contiguous():
                raise ValueError(f"{self.what}: can only receive into contiguous memory")
            pending.works.append((self._post(dist.irecv, tensor, frm, "receive from"), frm, "receive from"))
            self.received += tensor.numel()
        return pending

    def start_exchange(self, send: torch.Tensor, recv: torch.Tensor) -> Pending:
        """Start sending ``send`` to ``next`` while receiving ``recv`` from ``prev``."""
        pending = self.start_recv(recv, self.prev)
        pending += self.start_send(send, self.next)
        return pending

    def exchange(self, send: torch.Tensor, recv: torch.Tensor) -> None:
        """Send ``send`` to the next rank and receive ``recv`` from the previous one, both at once.

        Returns when both are done. Every rank calls it in the same step, so rank
        ``r``'s send is rank ``r + 1``'s receive: their sizes must match (an empty
        tensor on both sides sends nothing). Raises CollectiveError if a
        neighbour is lost or silent for longer than the timeout.
        """
        self.start_exchange(send, recv).wait()


def check_agreement(tensor: torch.Tensor, op: Op, ring: Ring) -> None:
    """Exchange (length, dtype, op) with every rank before any data moves.

    Every rank sends its three integers straight to every other rank and receives
    theirs (``isend``/``irecv``, all posted at once: one message latency, where an
    ``all_gather`` passes them around the ring in ``N - 1``), waiting with the
    group's timeout. Every rank then holds the same table, so if two ranks disagree
    every rank raises the same MismatchError, and nothing was sent. (Sent anyway, a
    length mismatch makes the receiver abort on a too-small buffer; a dtype mismatch
    of the same byte count is silently reinterpreted.) These messages are not
    counted in ``ring.sent``: they are not the collective's data.
    """
    mine = torch.tensor([tensor.numel(), dtype_code(tensor.dtype), int(op)], dtype=torch.int64)
    table = mine.repeat(ring.world_size, 1)  # row q: rank q's three numbers; this rank's row is in place
    others = [q for q in range(ring.world_size) if q != ring.rank]
    pending = Pending(ring)
    try:
        for q in others:
            pending.works.append((ring._post(dist.irecv, table[q], q, "receive from"), q, "receive from"))
        for q in others:
            pending.works.append((ring._post(dist.isend, mine, q, "send to"), q, "send to"))
        pending.wait()
    except CollectiveError as err:
        raise CollectiveError(
            f"{ring.what}: rank {ring.rank} exchanged (length, dtype, op) with every rank first, and not "
            f"all answered within {ring.timeout.total_seconds():g} s: some rank died, is stuck, or is not "
            f"calling {ring.what}. gloo: {str(err).split('gloo: ')[-1]}") from err
    rows = [tuple(int(v) for v in row) for row in table.tolist()]
    if len(set(rows)) > 1:
        ops = {int(o): o for o in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.MIN,
                                   dist.ReduceOp.PRODUCT)}
        lines = "; ".join(f"rank {r}: {n} elements of {dtype_from_code(d)}, op "
                          f"{op_name(ops[o]) if o in ops else o}" for r, (n, d, o) in enumerate(rows))
        raise MismatchError(f"{ring.what}: the ranks disagree ({lines}). Every rank must pass a tensor with the "
                            "same number of elements and the same dtype, and the same op. Nothing was sent.")


__all__ = ["CollectiveError", "MismatchError", "Pending", "Ring", "check_agreement", "group_timeout",
           "KNOWN_DTYPES"]
