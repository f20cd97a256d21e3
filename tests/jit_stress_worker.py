"""One process of the kernel-cache stress harness (tests/test_jit_concurrency.py).

Run as ``python jit_stress_worker.py VARIANT PATHS WORKLOAD`` with the course tree on
PYTHONPATH: imports minikernel (whatever ``index_to_position`` the tree holds now:
VARIANT says which, ``correct`` or ``no_offset``), prints ``ready``, waits for a line
on stdin, then runs every chapter 02 kernel (WORKLOAD ``full``; ``quick``: map and
zip for int64 and float32) through Tensor operations on inputs that
are views with a storage offset, and checks each result against torch: against the
torch call itself for the correct helper, and against the same call on the inputs
read from storage position 0 for the helper that forgets the offset (what that
learner's code computes). Prints one line per mismatch and exits 1 if there was any.
"""
from __future__ import annotations

import sys

import torch

import minikernel  # noqa: F401 - imports the kernels, compiles nothing yet
from minikernel import Tensor, strides

DTYPES = (torch.float32, torch.int64)
QUICK_DTYPES = (torch.int64, torch.float32)


def _view(shape, dtype, seed, offset=3):
    """A view of shape ``shape`` starting ``offset`` elements into its storage."""
    g = torch.Generator().manual_seed(seed)
    n = offset + int(torch.tensor(shape).prod())
    base = torch.randn(n, generator=g, dtype=torch.float64).mul(4).to(dtype) if dtype.is_floating_point \
        else torch.randint(-9, 10, (n,), generator=g, dtype=dtype)
    return base[offset:].view(shape)


def _cases(dtype):
    """(name, function of one or two tensors, inputs) for every kernel."""
    a, b = _view((5, 7), dtype, 1), _view((5, 7), dtype, 2)
    m, k = _view((4, 6), dtype, 3), _view((6, 5), dtype, 4)
    cases = [("neg", lambda x: -x, (a,)), ("add scalar", lambda x: x + 2, (a,)), ("sub", lambda x, y: x - y, (a, b)),
             ("mul", lambda x, y: x * y, (a, b)), ("sum dim", lambda x: x.sum(1), (a,)),
             ("amax dim", lambda x: x.amax(0), (a,)),
             ("matmul", lambda x, y: x @ y, (m, k))]
    if dtype.is_floating_point:
        cases += [("exp", lambda x: x.exp(), (a,)), ("div", lambda x, y: x / y, (a, b))]
    return cases


def _as_learner_reads(t: torch.Tensor, variant: str) -> torch.Tensor:
    return t if variant == "correct" else t.as_strided(t.shape, t.stride(), 0)


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.is_floating_point:
        return torch.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    return torch.equal(got, want)


def main() -> int:
    variant, paths, workload = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    loaded = "correct" if strides.index_to_position([1], [1], 5) == 6 else "no_offset"
    if loaded != variant:
        print(f"harness error: expected the {variant} helper, this process loaded the {loaded} one", flush=True)
        return 2
    print("ready", flush=True)
    sys.stdin.readline()
    bad = 0
    for path in paths:
        for dtype in DTYPES if workload == "full" else QUICK_DTYPES:
            for name, fn, inputs in _cases(dtype)[:None if workload == "full" else 3]:
                mine = [Tensor.from_torch(t) for t in inputs]
                if path == "gpu":
                    mine = [x.cuda() for x in mine]
                got = fn(*mine).cpu().to_torch()
                # the helper that forgets the offset reads from position 0 of what the kernel
                # gets: the view itself on the CPU, a copy at offset 0 on the GPU (exact then)
                want = fn(*[_as_learner_reads(t, variant if m.storage_offset() else "correct")
                            for t, m in zip(inputs, mine)])
                if not _close(got, want):
                    bad += 1
                    print(f"MISMATCH {path} {name} {dtype} with the {variant} helper:\n"
                          f"got {got.tolist()}\nwant {want.tolist()}", flush=True)
    print(f"done {bad} mismatches", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
