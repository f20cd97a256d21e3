"""``torchrun --max-restarts 1 ... -m minikernel.distributed.elastic_demo``: a worker dies, the job goes on.

TorchElastic (``torch.distributed.elastic``, under ``torchrun``) runs an *agent* on
every node that starts the workers and watches them. When one fails, the agent
stops the others and starts the whole group again, up to ``--max-restarts`` times;
each new worker sees ``TORCHELASTIC_RESTART_COUNT`` (0 on the first attempt), and
the ranks rendezvous anew (with ``--nnodes MIN:MAX`` nodes may also join or leave: a
membership change is handled the same way, by restarting the workers, but it does not
count against ``--max-restarts``; ``elastic_membership`` runs a node joining).

Nothing of the failed workers survives a restart, so the training script must
resume by itself: here rank 0 saves a checkpoint (model, optimizer, next step)
after every step, written to a temporary file and renamed so it is never half
written, and every worker loads it on start. On the first attempt rank 1 exits
with an error at step ``--fail-at``; the agent restarts both workers, which resume
from the last checkpoint. The parameters at the end are those of a run without the
failure (``ddp.train_single`` on the whole batches: DDP's equal slices give the same
SGD steps).

Rank 0 saves its result (restart count, the step it resumed from, parameters) to
``--out``; ``run_elastic`` starts torchrun and returns it, with the agent's lines
about the failure.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .ddp import ToyModel, toy_batches


class InjectedFailure(RuntimeError):
    """The failure this demo provokes, once, in rank 1."""


def load_checkpoint(path: str, model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Load ``path`` into ``model`` and ``optimizer`` if it exists; return the step to resume at."""
    if not os.path.exists(path):
        return 0
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["step"]


def save_checkpoint(path: str, model: nn.Module, optimizer: torch.optim.Optimizer, step: int) -> None:
    """Write the checkpoint to a temporary file, then rename it over ``path`` (never half written)."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path + ".tmp")
    os.replace(path + ".tmp", path)


def attempt_store(timeout: datetime.timedelta) -> dist.Store:
    """The agent's store (``MASTER_ADDR:MASTER_PORT``), with keys prefixed by this attempt.

    The agent's store outlives the workers: the keys the failed attempt's process
    group wrote (each rank's gloo address among them) are still there after a
    restart, so a new rank could read a dead peer's address and fail to connect.
    A prefix per ``TORCHELASTIC_RESTART_COUNT`` gives every attempt fresh keys.
    """
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                          int(os.environ["WORLD_SIZE"]), is_master=False, timeout=timeout)
    return dist.PrefixStore(f"attempt{os.environ['TORCHELASTIC_RESTART_COUNT']}", store)


def train(checkpoint: str, steps: int, fail_at: int | None, lr: float = 0.1, seed: int = 0) -> dict:
    """In a torchrun worker: DDP training of ``ToyModel`` that resumes from ``checkpoint``."""
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    torch.manual_seed(seed)
    model = DDP(ToyModel())
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    start = load_checkpoint(checkpoint, model, optimizer)
    for step, (x, y) in enumerate(toy_batches(steps, seed=seed + 1)):
        if step < start:
            continue
        if restart == 0 and rank == 1 and step == fail_at:
            raise InjectedFailure(f"rank 1 fails at step {step} (attempt {restart})")
        mine = slice(rank * len(x) // world, (rank + 1) * len(x) // world)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x[mine]), y[mine]).backward()
        optimizer.step()
        if rank == 0:
            save_checkpoint(checkpoint, model, optimizer, step + 1)
        dist.barrier()  # nobody runs ahead of the last checkpoint
    return {"restart_count": restart, "resumed_at": start, "world_size": world,
            "params": [p.detach().clone() for p in model.module.parameters()]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torchrun --max-restarts 1 ... -m minikernel.distributed.elastic_demo",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="checkpoint file (shared by the workers)")
    parser.add_argument("--out", required=True, help="where rank 0 saves its result")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--fail-at", type=int, default=None, help="step at which rank 1 fails on the first attempt")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds any collective may wait")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group("gloo", store=attempt_store(timeout), rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]), timeout=timeout)
    try:
        result = train(args.checkpoint, args.steps, args.fail_at)
        if dist.get_rank() == 0:
            torch.save(result, args.out)
    finally:
        dist.destroy_process_group()
    return 0


def run_elastic(steps: int = 6, fail_at: int | None = 3, max_restarts: int = 1, nproc: int = 2,
                timeout: float = 120.0) -> dict:
    """Run this module under ``torchrun --standalone --max-restarts MAX_RESTARTS``; return rank 0's result.

    The dict holds ``restart_count``, ``resumed_at``, ``world_size`` and ``params``
    (those of the last attempt), ``returncode`` (torchrun's), and ``agent``: the
    agent's log lines that say a worker failed or that the group restarts.
    """
    with tempfile.TemporaryDirectory(prefix="minikernel-elastic-") as directory:
        out = os.path.join(directory, "result.pt")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               f"--max-restarts={max_restarts}", "--monitor-interval=0.1", "-m", "minikernel.distributed.elastic_demo",
               "--checkpoint", os.path.join(directory, "checkpoint.pt"), "--out", out, "--steps", str(steps)]
        cmd += [] if fail_at is None else ["--fail-at", str(fail_at)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        agent = [line.split("] ", 1)[-1] for line in proc.stderr.splitlines()
                 if "FAILED" in line or "restart" in line.lower() or "InjectedFailure:" in line]
        if not os.path.exists(out):
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise RuntimeError(f"torchrun exited with {proc.returncode} and no result:\n{tail}")
        result = torch.load(out)
    return {**result, "returncode": proc.returncode, "agent": agent}


if __name__ == "__main__":
    sys.exit(main())
