"""Exercise 3.1 at its edge: several roots, the same root twice, and a root that another root
sends a gradient to — each node still runs once, after every node that feeds it, as in torch;
and leaves' AccumulateGrad nodes, of one sequence number, ready at once run as they arrived."""
from __future__ import annotations

import itertools

import pytest
import torch

import minikernel as mk
from minikernel import autograd as A
from minikernel.autograd.graph import gradient_edge
from tests.helpers import leaves_pair


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


def _three_inputs(base):
    class Three(base):
        @staticmethod
        def forward(ctx, a, b, c):
            return a * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad, grad, grad  # the three leaves' AccumulateGrad nodes get ready together
    return Three


@pytest.mark.exercise("3.1")
@pytest.mark.parametrize("created", list(itertools.permutations(range(3))), ids=str)
def test_leaves_ready_together_run_in_the_order_their_gradients_arrive(created):
    # AccumulateGrad nodes share one sequence number; among those ready at once torch runs
    # them in the order they were reached (here a, b, c), whatever order they were made in.
    theirs, mine = leaves_pair(*(torch.tensor(float(i)) for i in range(3)))
    ran = []
    for i, t in enumerate(theirs):
        t.register_hook(lambda g, i=i: ran.append(i))
    _three_inputs(torch.autograd.Function).apply(*theirs).backward()
    accumulators = {}
    for i in created:  # minikernel's accumulators made in this order: in memory, not in use
        accumulators[id(gradient_edge(mine[i])[0])] = i
    out = _three_inputs(A.Function).apply(*mine)
    order = [accumulators[id(n)] for n in A.topological_order([out.grad_fn]) if id(n) in accumulators]
    assert order == ran, (
        f"the leaves' AccumulateGrad nodes run in the order {order}, torch's {ran} (of equal sequence "
        "numbers the node that became ready first runs first: break ties by arrival, e.g. a counter)")
