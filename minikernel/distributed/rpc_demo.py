"""``torch.distributed.rpc``: model parallelism by remote calls, two processes on this machine.

DDP replicates the model and allreduces gradients; RPC instead lets one process
*call* another: run a function there (``rpc_sync`` waits for the result,
``rpc_async`` returns a future), or build an object there and keep a handle to it
(``remote`` returns an ``RRef``, a reference to a value owned by another worker).
With a module held in an RRef, a model can be cut across processes: the trainer
runs the first half, sends the activations to the owner of the second half, and
gets its output back.

Backward crosses the processes too: inside ``dist_autograd.context()``, every RPC
records a send/recv pair in the autograd graph, ``dist_autograd.backward(ctx, [loss])``
runs backward on both sides, and each gradient stays in the context of the process
that owns the parameter (not in ``.grad``). ``DistributedOptimizer`` steps every
parameter, local or remote, through their RRefs.

The agent (TensorPipe) is started here with ``_transports=["uv"]`` (plain TCP
through libuv) and a ``file://`` rendezvous in a temporary directory, so no port can
clash; ``rpc_timeout`` bounds every call. Run each function in the two ranks of
``run_ranks(fn, 2, init_file)``: rank 0 is ``"trainer"``, rank 1 ``"ps"``.
"""
from __future__ import annotations

import os
import warnings

import torch
import torch.distributed as dist
import torch.distributed.autograd as dist_autograd
import torch.distributed.rpc as rpc
from torch import nn

from .ddp import ToyModel, toy_batches

with warnings.catch_warnings():  # torch.distributed.optim scripts torch's own optimizers at import,
    warnings.simplefilter("ignore", DeprecationWarning)  # and torch.jit.script now warns that it is deprecated
    from torch.distributed.optim import DistributedOptimizer

NAMES = ("trainer", "ps")
RPC_TIMEOUT_S = 10.0


def start_rpc(init_file: str, timeout: float = RPC_TIMEOUT_S) -> str:
    """Join the RPC group of 2 as ``NAMES[rank]``; return this worker's name."""
    rank = dist.get_rank()
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"file://{init_file}", rpc_timeout=timeout,
                                              _transports=["uv"])
    rpc.init_rpc(NAMES[rank], rank=rank, world_size=len(NAMES), rpc_backend_options=options)
    return NAMES[rank]


def where_am_i(x: torch.Tensor) -> tuple[str, int, torch.Tensor]:
    """Run by RPC: the name and process id of the worker that runs it, and ``2 * x``."""
    return rpc.get_worker_info().name, os.getpid(), 2 * x


def rpc_basics_rank(init_file: str) -> dict | None:
    """In a rank of 2: ``rpc_sync``, ``rpc_async`` and an ``RRef``, called from the trainer.

    Returns (on the trainer; ``None`` on ``"ps"``, which only serves calls) a dict:
    the trainer's pid, what ``rpc_sync`` and ``rpc_async`` returned, the RRef's
    owner and whether it is owned here, and the output of a remote ``Linear`` called
    through the RRef beside a local ``Linear`` loaded with its state_dict (fetched by RPC).
    """
    me = start_rpc(init_file)
    out = None
    if me == "trainer":
        x = torch.arange(3.0)
        sync = rpc.rpc_sync("ps", where_am_i, args=(x,))
        futures = [rpc.rpc_async("ps", torch.add, args=(x, k)) for k in range(3)]
        rref = rpc.remote("ps", nn.Linear, args=(3, 2))  # built in "ps", only a handle here
        y = rref.rpc_sync().forward(x)                   # the method runs on the owner
        state = rpc.rpc_sync("ps", _state_of, args=(rref,))
        local = nn.Linear(3, 2)
        local.load_state_dict(state)
        out = {"pid": os.getpid(), "rpc_sync": sync, "rpc_async": [f.wait() for f in futures],
               "owner": rref.owner().name, "is_owner": rref.is_owner(), "remote_forward": y.detach(),
               "local_forward": local(x).detach()}
    rpc.shutdown()  # waits until every worker is done
    return out


def _state_of(rref: rpc.RRef) -> dict:
    """Run by the owner: the state_dict of the module that ``rref`` holds."""
    return {k: v.clone() for k, v in rref.local_value().state_dict().items()}


def _param_rrefs(rref: rpc.RRef) -> list[rpc.RRef]:
    """Run by the owner: an RRef for each parameter of the module that ``rref`` holds."""
    return [rpc.RRef(p) for p in rref.local_value().parameters()]


def _parameters_of(rref: rpc.RRef) -> list[torch.Tensor]:
    """Run by the owner: copies of the parameters of the module that ``rref`` holds."""
    return [p.detach().clone() for p in rref.local_value().parameters()]


class RemoteToyModel(nn.Module):
    """``ToyModel`` cut in two: ``net1 -> relu`` here, ``net2`` owned by another worker.

    Built from a ``ToyModel`` (so it starts with the same weights); ``net2`` is sent
    to ``owner`` once, at construction, and from then on only activations (forward)
    and their gradients (backward) cross.
    """

    def __init__(self, model: ToyModel, owner: str):
        super().__init__()
        self.net1, self.relu = model.net1, model.relu
        self.net2_rref = rpc.remote(owner, _copy_module, args=(model.net2,))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net2_rref.rpc_sync().forward(self.relu(self.net1(x)))

    def parameter_rrefs(self) -> list[rpc.RRef]:
        """RRefs of every parameter, local ones first: what ``DistributedOptimizer`` takes."""
        return [rpc.RRef(p) for p in self.net1.parameters()] + rpc.rpc_sync(
            self.net2_rref.owner(), _param_rrefs, args=(self.net2_rref,))


def _copy_module(module: nn.Module) -> nn.Module:
    """Run by the owner: keep the module it was sent (RPC pickled it across)."""
    return module


def train_rpc_rank(init_file: str, steps: int = 3, lr: float = 0.1, seed: int = 0) -> list[torch.Tensor] | None:
    """In a rank of 2: train ``RemoteToyModel`` from the trainer with distributed autograd.

    Same start, batches and SGD steps as ``ddp.train_single(steps, lr, seed)``; the
    trainer returns all four parameters (``net2``'s fetched from ``"ps"``), ``"ps"``
    returns ``None``.
    """
    me = start_rpc(init_file)
    out = None
    if me == "trainer":
        torch.manual_seed(seed)
        model = RemoteToyModel(ToyModel(), "ps")
        optimizer = DistributedOptimizer(torch.optim.SGD, model.parameter_rrefs(), lr=lr)
        for x, y in toy_batches(steps, seed=seed + 1):
            with dist_autograd.context() as ctx:
                loss = nn.functional.mse_loss(model(x), y)
                dist_autograd.backward(ctx, [loss])  # through "ps" and back; grads kept in ctx
                optimizer.step(ctx)
        remote = rpc.rpc_sync("ps", _parameters_of, args=(model.net2_rref,))
        out = [p.detach().clone() for p in model.net1.parameters()] + remote
    rpc.shutdown()
    return out
