"""The graph itself (complete code, no exercise): what forward records, compared with torch."""
from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minikernel as mk
from minikernel.autograd import functions as F
from tests.ch03 import programs as P
from tests.helpers import leaves_pair


def _short(node) -> str | None:
    """A node's name without torch's C++ namespace ("torch::autograd::AccumulateGrad")."""
    return None if node is None else node.name().rsplit("::", 1)[-1]


def _names(fn) -> list:
    """The (name, [next names]) of every node reachable from fn's result, breadth first."""
    out, queue, seen = [], [fn.grad_fn], set()
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nxt = [_short(n) for n, _ in node.next_functions]
        out.append((_short(node), nxt))
        queue.extend(n for n, _ in node.next_functions)
    return out


@pytest.mark.parametrize("expr", [
    lambda x, w: (x * w + 1).relu().sum(),
    lambda x, w: ((x - w) ** 2).mean(),
    lambda x, w: (x / w).exp().tanh().sigmoid().sum(1),
    lambda x, w: (x.t() @ w).view(-1).max(),
    lambda x, w: x.permute(1, 0).expand(2, 3, 2).sum(0),
    lambda x, w: (x @ w.t()).log().neg(),
])
def test_recorded_graph_matches_torch(expr):
    theirs, mine = leaves_pair(torch.rand(2, 3) + 0.5, torch.rand(2, 3) + 0.5)
    assert _names(expr(*mine)) == _names(expr(*theirs))


@given(st.data())
def test_forward_values_match_torch(data):
    n = data.draw(st.integers(1, 3))
    values = data.draw(P.leaves(n))
    program = data.draw(P.programs(n))
    theirs, mine = leaves_pair(*values)
    for t, m in zip(P.run(program, theirs), P.run(program, mine)):
        assert m.requires_grad == t.requires_grad and m.is_leaf == t.is_leaf
        torch.testing.assert_close(m.to_torch(), t.detach(), rtol=1e-12, atol=1e-12)


def test_leaves_and_requires_grad_like_torch():
    x = mk.tensor([1.0, 2.0], requires_grad=True)
    c = mk.tensor([3.0, 4.0])
    y = x * c
    assert (x.is_leaf, c.is_leaf, y.is_leaf) == (True, True, False)
    assert (x.requires_grad, c.requires_grad, y.requires_grad) == (True, False, True)
    assert F.mul(c, 2).grad_fn is None and F.mul(c, 2).is_leaf
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    assert (x + 1).grad_fn.next_functions[0][0] is acc  # one AccumulateGrad per leaf
    assert y.grad_fn.next_functions[1] == (None, 0)
    assert repr(y).endswith("grad_fn=<MulBackward0>)") and repr(x).endswith("requires_grad=True)")


def test_no_grad_and_detach_like_torch():
    x = mk.tensor([1.0, 2.0], requires_grad=True)
    with mk.no_grad():
        y = x * 2
        with mk.enable_grad():
            z = x * 2
    assert y.grad_fn is None and not y.requires_grad and z.grad_fn is not None
    d = x.detach()
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    with mk.no_grad():
        x[0] = 5.0  # allowed without recording, like torch; bumps the shared version
    assert d.tolist() == [5.0, 2.0] and x._version == d._version == 1


def test_bad_requests_raise_torchs_errors():
    x = mk.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="floating point"):
        mk.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        mk.tensor([1.0]).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        x + mk.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.matmul(mk.tensor([[1.0, 2.0]], requires_grad=True), mk.tensor([[1.0, 2.0]]))
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        mk.tensor(1.0).backward()
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        y.backward()


def test_non_leaf_grad_warns_like_torch():
    x = mk.tensor([1.0], requires_grad=True)
    y = x * 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert y.grad is None
    assert any("not a leaf Tensor" in str(w.message) for w in caught)


def test_inplace_on_a_non_leaf_rebases_its_history():
    theirs, mine = leaves_pair(torch.tensor([-1.0, 2.0]))
    for x in (theirs[0], mine[0]):
        y = x * 3
        before = y.grad_fn
        y.relu_()
        assert y.grad_fn is not before and y.grad_fn.name() == "ReluBackward0"
        assert y.grad_fn.next_functions[0][0] is before
    assert mine[0]._version == 0


def test_views_of_tensors_that_require_grad_share_memory():
    x = mk.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    for v in (x.view(3, 2), x.t(), x.permute(1, 0), x.expand(2, 2, 3), x[1], x[:, 1:]):
        assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert x.t().stride() == (1, 3) and x[:, 1:].storage_offset() == 1
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(6)
    assert x.t().reshape(6).tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
