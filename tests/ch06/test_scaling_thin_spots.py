"""Exercise 6.3 with an inverse scale above 1 (after the scale has backed off below 1): a finite
gradient can overflow when it is unscaled. torch checks the gradient *before* multiplying, so
``found_inf`` stays 0 and the gradient becomes inf.

Oracle: ``torch._amp_foreach_non_finite_check_and_unscale_``, bit for bit.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.amp import scaling as S

BIG = {torch.float32: 3e38, torch.bfloat16: 3e38, torch.float16: 60000.0}


@pytest.mark.exercise("6.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_a_finite_gradient_that_overflows_when_unscaled_is_not_an_inf(dtype):
    """Check each gradient for inf/NaN before multiplying it by ``inv_scale``."""
    grads = [torch.tensor([BIG[dtype], 1.0, -BIG[dtype]], dtype=dtype), torch.tensor([0.5, 2.0], dtype=dtype)]
    inv_scale = torch.tensor([4.0])
    theirs, their_found = [g.clone() for g in grads], torch.zeros(1)
    torch._amp_foreach_non_finite_check_and_unscale_(theirs, their_found, inv_scale)
    ours, our_found = [g.clone() for g in grads], torch.zeros(1)
    S.non_finite_check_and_unscale_(ours, our_found, inv_scale.clone())
    assert their_found.item() == 0.0
    assert our_found.item() == 0.0, "a gradient that was finite before unscaling is no inf: check before multiplying"
    for got, want in zip(ours, theirs):
        assert torch.equal(got, want)
