"""Exercise 8.3 at the edges of its options: weight decay of 0 and 1, coupled and decoupled,
betas of 0, amsgrad and maximize, over several steps, against ``torch.optim.Adam``."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from minikernel.autograd import values
from minikernel.optim import adam as mk_adam
from tests.ch08.torch_adam import torch_adam
from tests.ch08.twins import as_torch, assert_close, leaves, set_grads

EDGES = [dict(weight_decay=w, decoupled_weight_decay=d, betas=b, amsgrad=a, maximize=x, lr=0.1, eps=1e-8)
         for w, d, b, a, x in itertools.product([0.0, 1.0], [False, True], [(0.9, 0.999), (0.0, 0.0)],
                                                [False, True], [False, True])]


@pytest.mark.exercise("8.3")
@pytest.mark.parametrize("options", EDGES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_adam_matches_torch_at_the_edges_of_its_options(options):
    shapes = [(3,), (2, 2)]
    tparams, mparams = leaves(shapes, seed=6)
    topt = torch_adam("Adam", tparams, **options)
    zeros = [[values.wrap(np.zeros(p.shape, p.dtype)) for p in mparams] for _ in range(3)]
    steps = [values.wrap(np.zeros((), np.float32)) for _ in mparams]
    g = torch.Generator().manual_seed(8)
    for step in range(3):
        set_grads(tparams, mparams, [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes])
        topt.step()
        mk_adam.adam(mparams, [p.grad for p in mparams], zeros[0], zeros[1], zeros[2] if options["amsgrad"] else [],
                     steps, amsgrad=options["amsgrad"], beta1=options["betas"][0], beta2=options["betas"][1],
                     lr=options["lr"], weight_decay=options["weight_decay"], eps=options["eps"],
                     maximize=options["maximize"], decoupled_weight_decay=options["decoupled_weight_decay"])
        assert_close(mparams, tparams)
        for i, p in enumerate(tparams):
            for key, got in (("exp_avg", zeros[0][i]), ("exp_avg_sq", zeros[1][i])):
                assert torch.allclose(as_torch(got), topt.state[p][key], rtol=1e-9, atol=1e-12), f"step {step}: {key} {i}"
