"""Chapter 03 edge cases of the engine (3.3): nodes that receive no gradient, and where .grad is added.

Every node in the topological order is reachable from the roots, but not every one
receives a gradient: a ``backward(inputs=[y])`` stops at ``y``'s node, so what lies
beyond it gets nothing, and a backward that returns None for an input sends nothing
down that edge. Such nodes are skipped, as torch skips them.

Adding to an existing ``.grad``: in place when not recording (a reference to the
old ``.grad`` sees the sum, as in torch), out of place when recording (with
``create_graph`` the old tensor is left as it was, and the sum has a graph).
The gradient returned for an input (``inputs``, as ``autograd.grad`` asks) passes
through the hooks registered on that input, as torch's does.
Only add, sum and custom Functions are used: their backwards are not exercises.
"""
from __future__ import annotations

import warnings

import pytest
import torch

import minikernel as mk
from minikernel.autograd.graph import gradient_edge
from tests.helpers import leaves_pair

VALUES = torch.tensor([1.5, -2.0, 0.5], dtype=torch.float64)


def _t(x) -> torch.Tensor | None:
    return x if x is None or isinstance(x, torch.Tensor) else x.to_torch()


@pytest.mark.exercise("3.3")
def test_backward_with_inputs_skips_the_nodes_beyond_them():
    got = {}
    for lib, (x,) in zip(("torch", "minikernel"), leaves_pair(VALUES)):
        w = (x + 1.0) + 2.0  # x's AccumulateGrad and an Add node lie beyond w
        z = (w + w).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns that a non-leaf's .grad is being populated
            z.backward(inputs=[w])
            got[lib] = (_t(w.grad), x.grad)
    assert got["minikernel"][1] is None, ".grad of a leaf beyond the inputs must stay None (its node gets no gradient)"
    assert torch.equal(got["minikernel"][0], got["torch"][0]), (
        f"the input's .grad is {got['minikernel'][0]}, torch's {got['torch'][0]}")


def _none_for_second(function_base):
    class FirstOnly(function_base):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad, None  # b gets no gradient: the nodes behind it receive nothing

    return FirstOnly


@pytest.mark.exercise("3.3")
def test_a_node_that_receives_no_gradient_is_skipped():
    grads = {}
    for lib, (x, w), base in zip(("torch", "minikernel"), leaves_pair(VALUES, VALUES * 3),
                                 (torch.autograd.Function, mk.autograd.Function)):
        behind = (w + 1.0) + w  # two Add nodes and w's AccumulateGrad, all reachable, none fed
        out = _none_for_second(base).apply(x + 0.5, behind)
        out.sum().backward()
        grads[lib] = (_t(x.grad), w.grad)
    assert grads["torch"][1] is None
    assert grads["minikernel"][1] is None, f"w.grad is {grads['minikernel'][1]}; torch leaves it None"
    assert torch.equal(grads["minikernel"][0], grads["torch"][0])


@pytest.mark.exercise("3.3")
def test_a_second_pass_adds_in_place_into_the_existing_grad():
    seen = {}
    for lib, (x,) in zip(("torch", "minikernel"), leaves_pair(VALUES)):
        x.sum().backward()
        first = x.grad
        (x + x).sum().backward()
        seen[lib] = (_t(first).clone(), _t(x.grad).clone())
    assert torch.equal(seen["torch"][0], seen["torch"][1])  # torch added into the same tensor
    assert torch.equal(seen["minikernel"][1], seen["torch"][1]), f".grad is {seen['minikernel'][1]}, torch's {seen['torch'][1]}"
    assert torch.equal(seen["minikernel"][0], seen["torch"][0]), (
        "a reference to .grad taken before the second backward should see the sum (torch adds in place when "
        f"not recording: variable.grad += grad); it holds {seen['minikernel'][0]}")


@pytest.mark.exercise("3.3")
def test_a_recorded_pass_adds_out_of_place_and_keeps_the_graph():
    seen = {}
    for lib, (x, v) in zip(("torch", "minikernel"), leaves_pair(VALUES, torch.tensor(2.0))):
        x.sum().backward()  # a plain first .grad of ones
        first = x.grad
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about the reference cycle create_graph makes
            (x + x).sum().backward(v, create_graph=True)  # the new gradient 2v requires grad
        total = x.grad
        assert total is not None and total.requires_grad and total.grad_fn is not None, (
            f"{lib}: with create_graph the sum old .grad + new gradient is recorded")
        total.sum().backward(inputs=[v])  # d/dv sum(1 + 2v) = 2 * numel
        seen[lib] = (_t(first).detach().clone(), _t(total).detach().clone(), _t(v.grad).clone())
    names = ("the old .grad (left as it was: the sum is a new tensor)", ".grad", "v.grad through the recorded sum")
    for what, mine, theirs in zip(names, seen["minikernel"], seen["torch"]):
        assert torch.equal(mine, theirs), f"{what}: {mine}, torch's {theirs}"



@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("wanted", ["x", "w", "w,x"])
def test_the_gradient_returned_for_an_input_passes_through_its_hooks(wanted):
    # autograd.grad's path through the engine, called directly (exercise 3.7 not needed):
    # each input's gradient goes through the hooks registered on it; an input whose node
    # also runs (w, with x beyond it) is returned before its hook, which then runs once.
    got = {}
    for lib, (x,) in zip(("torch", "minikernel"), leaves_pair(VALUES)):
        x.register_hook(lambda g: g * 10)
        w = x + 1.0
        w.register_hook(lambda g: g * 3)
        z = (w + w).sum()
        inputs = [{"x": x, "w": w}[name] for name in wanted.split(",")]
        if lib == "torch":
            got[lib] = torch.autograd.grad(z, inputs)
        else:
            grads = mk.autograd.engine.run_backward([gradient_edge(z)], [mk.tensor(1.0, dtype=mk.float64)],
                                                    False, False, inputs=[gradient_edge(t) for t in inputs])
            got[lib] = [_t(g) for g in grads]
    for name, mine, theirs in zip(wanted.split(","), got["minikernel"], got["torch"]):
        assert mine is not None and torch.equal(mine, theirs), (
            f"grad(z, [{wanted}]) for {name}: {mine}, torch's {theirs} (pass it through node.hooked(slot, grad))")
