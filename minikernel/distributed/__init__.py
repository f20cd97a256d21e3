"""Chapter 07: allreduce — simulated in one process, then across real processes.

=================  ==========================================================
``simulate``       a recorded ring over in-process ranks (exercises 7.1, 7.2)
``ring``           ``ring_allreduce`` over torch.distributed (exercise 7.3)
``naive``          ``naive_allreduce``: gather on rank 0, reduce, send back
``cost``           the alpha-beta cost model (exercise 7.4)
``transport``      point-to-point links with timeouts, metadata check, errors
``launch``         ``run_ranks``: N forked rank processes on gloo, results back
``syncbn``         SyncBatchNorm's global statistics from one allreduce
``ddp``            DistributedDataParallel vs one process on the full batch
``demo``           ``torchrun ... -m minikernel.distributed.demo``
``bench``          ``python -m minikernel bench --allreduce``
=================  ==========================================================
"""
from torch.distributed import ReduceOp

from .cost import Cost, fit_alpha_beta, naive_cost, ring_cost
from .launch import Outcome, RankError, launch, run_ranks
from .naive import naive_allreduce
from .ops import combine_
from .ring import ring_allreduce, ring_allreduce_chunks
from .simulate import (NOTES_EXAMPLE, Counters, Send, SimulatedRing, allgather_step, scatter_reduce_step,
                       simulate_naive)
from .transport import CollectiveError, MismatchError, Ring

__all__ = ["ReduceOp", "Cost", "fit_alpha_beta", "naive_cost", "ring_cost", "Outcome", "RankError", "launch",
           "run_ranks", "naive_allreduce", "combine_", "ring_allreduce", "ring_allreduce_chunks", "NOTES_EXAMPLE",
           "Counters", "Send", "SimulatedRing", "allgather_step", "scatter_reduce_step", "simulate_naive",
           "CollectiveError", "MismatchError", "Ring"]
