"""``torchrun --nnodes 1:2 --rdzv-backend c10d ...``: a second node joins a running job.

With ``--nnodes MIN:MAX`` and a dynamic rendezvous (``--rdzv-backend c10d``), a job
starts once ``MIN`` nodes have met (after ``last_call_timeout`` more seconds of waiting
for others) and accepts up to ``MAX``. An agent that arrives later waits in the
rendezvous; every running agent checks ``num_nodes_waiting()`` while its workers are
healthy, and when it is above 0 it stops its workers and all agents meet again in a
new round, with the new node counted: the workers restart with a larger
``WORLD_SIZE``. A membership change does not count as a retry: it happens with
``--max-restarts 0``, and ``TORCHELASTIC_RESTART_COUNT`` stays 0.

As after a failure, nothing of the stopped workers survives, so the script resumes
from its checkpoint (``elastic_demo.load_checkpoint``; on several machines the file
would have to be on storage that every node sees). Here the two "nodes" are two
agents on this machine (``--local-addr 127.0.0.1``), one worker each. Node A starts
alone (world 1) and trains on whole batches; at step ``--grow-at`` its worker writes a
marker file and waits; ``run_membership`` then starts node B, the agents meet again,
and the two workers (world 2, DDP) finish the steps on half batches each. Equal halves
average to the whole batch's gradient, so the parameters at the end are those of
``ddp.train_single`` on the whole batches.

The agents run with ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``. By default the agents
share one TCPStore with the workers, and the node of rank 0 publishes its address for
it in the first round only: in the round the joining node enters, that node waits for
an address nobody writes again (``DynamicRendezvousHandler.next_rendezvous``, torch
2.13), and both agents hang. With the variable set, each round's rank 0 publishes an
address and a free port, and the workers' rank 0 serves a new store there
(``init_process_group``'s ``env://``), empty of the earlier round's keys.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .ddp import ToyModel, toy_batches
from .elastic_demo import load_checkpoint, save_checkpoint
from .rendezvous import free_port

MARKER = "waiting-for-a-second-node"
# a fresh store every round; INFO: the agent logs its rounds and the nodes it sees waiting
AGENT_ENV = {**os.environ, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1", "LOGLEVEL": "INFO"}


def train(directory: str, steps: int, grow_at: int, wait: float, lr: float = 0.1, seed: int = 0) -> dict:
    """In a torchrun worker: DDP training of ``ToyModel``, resumed from the checkpoint in ``directory``.

    Alone (world 1) at step ``grow_at``, the worker writes the marker file and waits
    up to ``wait`` seconds for its agent to stop it (a node joined); past that it raises.
    The checkpoint keeps ``worlds``: the world size each finished step ran with.
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    checkpoint = os.path.join(directory, "checkpoint.pt")
    worlds_file = checkpoint + ".worlds"
    torch.manual_seed(seed)
    model = DDP(ToyModel())
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    start = load_checkpoint(checkpoint, model, optimizer)
    worlds = torch.load(worlds_file) if start else []
    for step, (x, y) in enumerate(toy_batches(steps, seed=seed + 1)):
        if step < start:
            continue
        if world == 1 and step == grow_at:
            open(os.path.join(directory, MARKER), "w").close()
            time.sleep(wait)  # the agent stops this process when the second node arrives
            raise RuntimeError(f"no second node joined within {wait} s")
        mine = slice(rank * len(x) // world, (rank + 1) * len(x) // world)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x[mine]), y[mine]).backward()
        optimizer.step()
        if rank == 0:
            worlds.append(world)
            torch.save(worlds, worlds_file)
            save_checkpoint(checkpoint, model, optimizer, step + 1)
        dist.barrier()  # nobody runs ahead of the last checkpoint
    return {"restart_count": int(os.environ["TORCHELASTIC_RESTART_COUNT"]), "resumed_at": start,
            "world_size": world, "worlds": worlds,
            "params": [p.detach().clone() for p in model.module.parameters()]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torchrun --nnodes 1:2 ... -m minikernel.distributed.elastic_membership",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="folder for the checkpoint, the marker and the result")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--grow-at", type=int, default=3, help="step at which a lone worker waits for a second node")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds any collective or the wait may take")
    args = parser.parse_args(argv)
    if not 0 < args.grow_at < args.steps:
        parser.error(f"--grow-at must be in 1..{args.steps - 1} (steps before and after the join), got {args.grow_at}")
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group("gloo", timeout=timeout)  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    try:
        result = train(args.dir, args.steps, args.grow_at, args.timeout)
        if dist.get_rank() == 0:
            torch.save(result, os.path.join(args.dir, "result.pt"))
    finally:
        dist.destroy_process_group()
    return 0


def agent_command(port: int, directory: str, steps: int, grow_at: int, host: bool, timeout: float) -> list[str]:
    """The torchrun line of one "node": 1 worker, 1 to 2 nodes, c10d rendezvous at 127.0.0.1:``port``."""
    conf = f"last_call_timeout=1,join_timeout={int(timeout)},close_timeout=5,is_host={str(host).lower()}"
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes=1:2", "--nproc-per-node=1",
            "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=membership",
            f"--rdzv-conf={conf}", "--local-addr=127.0.0.1", "--max-restarts=0", "--monitor-interval=0.1",
            "-m", "minikernel.distributed.elastic_membership", "--dir", directory, "--steps", str(steps),
            "--grow-at", str(grow_at), "--timeout", str(timeout)]


def _stop(proc: subprocess.Popen) -> None:
    """Kill ``proc``'s process group (the agent and its workers) if it still runs, and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
    proc.wait()


def _agent_lines(text: str) -> list[str]:
    """The agent's log lines that give each round's number of nodes, or see a node waiting."""
    keys = ("group_world_size=", "new nodes")
    return [line.split("] ", 1)[-1].strip() for line in text.splitlines() if any(k in line for k in keys)]


def run_membership(steps: int = 6, grow_at: int = 3, timeout: float = 120.0) -> dict:
    """Start node A, then node B once A's worker waits at ``grow_at``; return rank 0's result.

    The dict holds ``restart_count``, ``resumed_at``, ``world_size`` (the last round's),
    ``worlds`` (the world size of each step), ``params``, ``returncodes`` (the two
    agents') and ``agent`` (node A's log lines about rounds and waiting nodes). Both
    agents are killed, with their workers, if anything takes longer than ``timeout``.
    """
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="minikernel-membership-") as directory:
        port = free_port()
        logs = [open(os.path.join(directory, f"agent{k}.log"), "w+") for k in range(2)]
        procs: list[subprocess.Popen] = []
        try:
            for k, wait_for in enumerate((None, MARKER)):
                while wait_for and not os.path.exists(os.path.join(directory, wait_for)):
                    if procs[0].poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("node A ended or took too long before it waited for node B")
                    time.sleep(0.05)
                procs.append(subprocess.Popen(agent_command(port, directory, steps, grow_at, k == 0, timeout),
                                              stdout=logs[k], stderr=subprocess.STDOUT, start_new_session=True,
                                              env=AGENT_ENV))
            returncodes = [p.wait(timeout=max(deadline - time.monotonic(), 1)) for p in procs]
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            for p in procs:
                _stop(p)
            tail = "".join(log.seek(0) or log.read() for log in logs).strip().splitlines()[-30:]
            raise RuntimeError(f"the two-node job did not finish: {err}\n" + "\n".join(tail)) from err
        finally:
            for p in procs:
                _stop(p)
        logs[0].seek(0)
        agent = _agent_lines(logs[0].read())
        for log in logs:
            log.close()
        out = os.path.join(directory, "result.pt")
        if not os.path.exists(out):
            raise RuntimeError(f"the agents exited with {returncodes} and no result")
        result = torch.load(out)
    return {**result, "returncodes": returncodes, "agent": agent}


if __name__ == "__main__":
    sys.exit(main())
