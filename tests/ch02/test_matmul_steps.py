"""Chapter 02's matmul steps (``minikernel/kernels/matmul_steps.py``): each computes torch's
product, for any 2-D sizes. No ``exercise`` marker: these are reference points, not exercises."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from minikernel.kernels import matmul_steps


@pytest.mark.parametrize("name", list(matmul_steps.STEPS))
@settings(max_examples=25)
@given(n=st.integers(1, 40), inner=st.integers(0, 40), m=st.integers(1, 40),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_each_step_computes_torchs_product(name, n, inner, m, dtype):
    a, b = torch.randn(n, inner, dtype=dtype), torch.randn(inner, m, dtype=dtype)
    got = matmul_steps.run(matmul_steps.STEPS[name], a.numpy(), b.numpy())
    assert got.dtype == a.numpy().dtype
    np.testing.assert_allclose(got, (a.double() @ b.double()).numpy(), rtol=1e-4, atol=1e-4)


def test_operands_that_do_not_multiply_are_refused_with_their_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\) float32 and \(4, 5\) float32"):
        matmul_steps.run(matmul_steps.ijk, np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
