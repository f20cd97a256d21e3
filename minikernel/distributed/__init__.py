"""Chapter 07: allreduce — simulated in one process, then across real processes.

=================  ==========================================================
``simulate``       a recorded ring over in-process ranks (exercises 7.1, 7.2)
``ring``           ``ring_allreduce`` over torch.distributed (exercise 7.3)
``naive``          ``naive_allreduce``: gather on rank 0, reduce, send back
``cost``           the alpha-beta cost model (exercise 7.4), and the pipelined ring's
``pieces``         a chunk cut into pieces: the pipelining unit of the reference ring
``transport``      point-to-point links with timeouts, metadata check, errors
``launch``         ``run_ranks``: N forked rank processes on gloo, results back
``syncbn``         SyncBatchNorm's global statistics from one allreduce
``ddp``            DistributedDataParallel vs one process on the full batch
``data_parallel``  DataParallel's replicate / scatter / parallel_apply / gather on CPU
``bucketing``      DDP's bucket assignment (exercise 7.5)
``reducer``        DDP's reducer: hooks, buckets, in-order allreduces (exercise 7.6)
``mini_ddp``       a small DistributedDataParallel on 7.5, 7.6 and your ring
``ddp_compare``    torch's DDP and mini_ddp side by side (bucket logs, gradients)
``dp_vs_ddp``      DataParallel vs DDP: bytes moved per step (counted), step times
``dp_devices``     DataParallel's ``device_ids[0]`` check on stand-in devices
``toy_mp``         the DDP tutorial's ``ToyMpModel``; DDP's ``device_ids`` refusals
``rpc_demo``       ``torch.distributed.rpc``: remote calls, RRefs, a model split by RPC
``elastic_demo``   ``torchrun --max-restarts``: a worker fails, the job resumes
``demo``           ``torchrun ... -m minikernel.distributed.demo``
``bench``          ``python -m minikernel bench --allreduce``
=================  ==========================================================
"""
from torch.distributed import ReduceOp

from .bucketing import compute_bucket_assignment_by_size
from .cost import Cost, fit_alpha_beta, naive_cost, pipelined_ring_cost, ring_cost
from .launch import Outcome, RankError, launch, run_ranks
from .naive import naive_allreduce
from .ops import combine_
from .mini_ddp import DistributedDataParallel
from .reducer import Reducer, finalize_backward, mark_ready
from .ring import ring_allreduce, ring_allreduce_chunks
from .simulate import (NOTES_EXAMPLE, Counters, Send, SimulatedRing, allgather_step, scatter_reduce_step,
                       simulate_naive)
from .transport import CollectiveError, MismatchError, Ring

__all__ = ["ReduceOp", "compute_bucket_assignment_by_size", "DistributedDataParallel", "Reducer",
           "finalize_backward", "mark_ready", "Cost", "fit_alpha_beta", "naive_cost", "ring_cost",
           "pipelined_ring_cost", "Outcome", "RankError", "launch",
           "run_ranks", "naive_allreduce", "combine_", "ring_allreduce", "ring_allreduce_chunks", "NOTES_EXAMPLE",
           "Counters", "Send", "SimulatedRing", "allgather_step", "scatter_reduce_step", "simulate_naive",
           "CollectiveError", "MismatchError", "Ring"]
