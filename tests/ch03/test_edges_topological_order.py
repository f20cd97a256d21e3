"""Exercise 3.1 at its edge: several roots, the same root twice, and a root that another root
sends a gradient to — each node still runs once, after every node that feeds it, as in torch."""
from __future__ import annotations

import pytest
import torch

import minikernel as mk
from minikernel import autograd as A


def _graph(lib, x):
    y = x * 2.0
    return [y.exp(), y.exp(), y, y.tanh()], y  # roots: two of one kind, y itself, and one more


@pytest.mark.exercise("3.1")
@pytest.mark.parametrize("pick", [[0, 0, 2], [2, 0, 0], [2, 2], [3, 2, 0, 3]])
def test_repeated_roots_and_a_root_below_another(pick):
    tx = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    troots, _ = _graph(torch, tx * 1.0)
    ran, seen, stack = [], set(), [r.grad_fn for r in troots]
    while stack:  # one pre-hook on each node, recording the order torch runs them in
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        name = node.name()
        if name != "torch::autograd::AccumulateGrad":
            node.register_prehook(lambda grads, name=name: ran.append(name) and None)
        stack.extend(n for n, _ in node.next_functions)
    chosen = [troots[i] for i in pick]
    torch.autograd.backward(chosen, [torch.ones_like(r) for r in chosen])
    mx = mk.tensor([0.5, -1.0], requires_grad=True)
    mroots, _ = _graph(mk, mx * 1.0)
    order = A.topological_order([mroots[i].grad_fn for i in pick])
    assert len({id(n) for n in order}) == len(order), f"a node comes twice: {[n.name() for n in order]}"
    names = [n.name() for n in order if n.name() != "AccumulateGrad"]
    assert names == ran, f"order {names} vs torch's {ran}"
