"""Chapter 06 at its edges: what ``unscale_grads_`` may write besides the gradients, and what it may not record.

Oracle: ``torch.amp.GradScaler("cpu")._unscale_grads_`` on the same optimizer state.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.amp import scaling as S


def _sgd(grads: list[torch.Tensor]) -> torch.optim.SGD:
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros_like(g))
        p.grad = g.clone()
        params.append(p)
    return torch.optim.SGD(params, lr=0.1)


@pytest.mark.exercise("6.3")
@pytest.mark.parametrize("grads", [[torch.tensor([1.0, float("inf")])],
                                   [torch.tensor([float("nan")], dtype=torch.float64), torch.ones(3)]])
def test_the_callers_found_inf_is_copied_not_written(grads):
    """Each device gets its own copy of ``found_inf`` (``to(device, copy=True)``): an inf/NaN is
    recorded in the returned tensor and the caller's ``found_inf`` stays 0, as torch's does."""
    results = {}
    for name, unscale in (("mine", S.unscale_grads_), ("torch", torch.amp.GradScaler("cpu")._unscale_grads_)):
        found_inf = torch.zeros(())
        per_device = unscale(_sgd(grads), torch.tensor(0.5), found_inf, False)
        results[name] = (found_inf.item(), {str(d): t.item() for d, t in per_device.items()},
                         [t.data_ptr() == found_inf.data_ptr() for t in per_device.values()])
    assert results["torch"] == (0.0, {"cpu": 1.0}, [False])  # the oracle's behaviour, as the docstring says
    assert results["mine"] == results["torch"], (
        f"(caller's found_inf, returned per device, returned is the caller's): {results['mine']} "
        f"vs torch's {results['torch']}")


def _grads_with_a_graph() -> torch.optim.SGD:
    """Gradients from backward(create_graph=True): they require grad and have a grad_fn."""
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    (p ** 3).sum().backward(create_graph=True)
    return torch.optim.SGD([p], lr=0.1)


@pytest.mark.exercise("6.3")
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_unscaling_is_not_recorded_into_a_gradients_graph():
    """Under ``torch.no_grad()`` the in-place multiply is not part of any graph: a gradient made
    with create_graph=True keeps the grad_fn it had, as torch's does (recorded, it would become
    the multiply's)."""
    results = {}
    for name, unscale in (("mine", S.unscale_grads_), ("torch", torch.amp.GradScaler("cpu")._unscale_grads_)):
        opt = _grads_with_a_graph()
        unscale(opt, torch.tensor(0.5), torch.zeros(()), False)
        grad = opt.param_groups[0]["params"][0].grad
        results[name] = (grad.detach().tolist(), type(grad.grad_fn).__name__)
    assert results["mine"] == results["torch"], (
        f"(the unscaled gradient, its grad_fn): {results['mine']} vs torch's {results['torch']}")
