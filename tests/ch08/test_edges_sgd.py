"""Exercise 8.2 at the edges of every option: momentum, dampening and weight decay of 0 and 1,
nesterov, maximize, over several steps, against ``torch.optim.SGD``."""
from __future__ import annotations

import itertools

import pytest
import torch

from minikernel.optim import sgd as mk_sgd
from tests.ch08.twins import as_torch, assert_close, leaves, set_grads

EDGES = [dict(momentum=m, dampening=d, weight_decay=w, nesterov=n, maximize=x, lr=lr)
         for m, d, w, n, x, lr in itertools.product([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [False, True],
                                                    [False, True], [1.0, 0.25])
         if not n or (m > 0 and d == 0)]


@pytest.mark.exercise("8.2")
@pytest.mark.parametrize("options", EDGES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_sgd_matches_torch_at_the_edges_of_its_options(options):
    shapes = [(3,), (2, 2)]
    tparams, mparams = leaves(shapes, seed=5)
    topt = torch.optim.SGD(tparams, **options)
    buffers = [None] * len(shapes)
    g = torch.Generator().manual_seed(7)
    for step in range(3):
        set_grads(tparams, mparams, [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes])
        topt.step()
        mk_sgd.sgd(mparams, [p.grad for p in mparams], buffers, **options)
        assert_close(mparams, tparams)
        for i, p in enumerate(tparams):
            expected = topt.state[p].get("momentum_buffer")
            assert (buffers[i] is None) == (expected is None), f"step {step}, buffer {i}: made when torch's is not"
            if expected is not None:
                assert torch.allclose(as_torch(buffers[i]), expected, rtol=1e-9, atol=1e-12), f"step {step}, buffer {i}"
