"""How processes find each other: ranks from launchers, and torchrun across "nodes".

``torch.distributed.launch`` (1.6) started ``nproc_per_node`` processes on each node
and numbered them node by node; ``torchrun`` sets the same variables. Underneath,
every launcher and ``init_process_group`` meet through a c10d **store**: a small
key-value server (``TCPStore`` on the master's address and port, or a ``FileStore``
on a shared file) where ranks announce themselves, wait for each other and exchange
the addresses the backend then connects to. That is the rendezvous.
"""
from __future__ import annotations

import socket
import subprocess
import sys

ENV_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "OMP_NUM_THREADS")


def launch_env(nproc_per_node: int, nnodes: int, node_rank: int, local_rank: int) -> dict[str, int]:
    """What ``torch.distributed.launch`` (1.6) put in each process's environment.

    ``WORLD_SIZE = nproc_per_node * nnodes`` and ``RANK = nproc_per_node * node_rank +
    local_rank``: ranks are numbered node by node. torchrun numbers them the same way
    with a static rendezvous (``--node-rank``); with an elastic ``c10d`` rendezvous the
    nodes get their ``GROUP_RANK`` in the order they joined.

    Example::

        >>> launch_env(4, 2, 1, 3)["RANK"]
        7
    """
    if not (0 <= node_rank < nnodes and 0 <= local_rank < nproc_per_node):
        raise ValueError(f"need 0 <= node_rank < nnodes and 0 <= local_rank < nproc_per_node, got node_rank="
                         f"{node_rank}, nnodes={nnodes}, local_rank={local_rank}, nproc_per_node={nproc_per_node}")
    return {"RANK": nproc_per_node * node_rank + local_rank, "WORLD_SIZE": nproc_per_node * nnodes,
            "LOCAL_RANK": local_rank, "LOCAL_WORLD_SIZE": nproc_per_node, "GROUP_RANK": node_rank}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_nodes(nnodes: int = 2, nproc_per_node: int = 2, timeout: float = 120.0) -> list[dict[str, str]]:
    """Start ``nnodes`` torchrun agents on this machine, as if on ``nnodes`` nodes; return every
    worker's variables (``ENV_VARS``), sorted by RANK.

    Each agent runs ``torchrun --nnodes N --node-rank K --nproc-per-node P --master-addr
    127.0.0.1 --master-port PORT --no-python sh -c 'echo RANK=$RANK ...'``: a static
    rendezvous, the agents meeting in a TCPStore served by node 0's agent; each worker
    is a shell that prints its variables (``--no-python`` runs a command instead of a
    Python script).
    """
    port = free_port()
    echo = "echo " + " ".join(f"{name}=${{{name}:--}}" for name in ENV_VARS)
    procs = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--node-rank={k}",
         f"--nproc-per-node={nproc_per_node}", "--master-addr=127.0.0.1", f"--master-port={port}",
         "--no-python", "sh", "-c", echo], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k in range(nnodes)]
    rows = []
    try:
        for k, proc in enumerate(procs):
            out, err = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"torchrun on node {k} exited with {proc.returncode}:\n{err[-2000:]}")
            rows += [dict(item.split("=", 1) for item in line.split()) for line in out.splitlines() if "RANK=" in line]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return sorted(rows, key=lambda row: int(row["RANK"]))

