"""Exercise 3.7 at its edges: no inputs at all, a lone Tensor as ``grad_outputs``, and an explicit
retain_graph beside create_graph, as in torch."""
from __future__ import annotations

import pytest
import torch

import minikernel as mk
from minikernel import autograd as A
from tests.torch_versions import quoted_since


@pytest.mark.exercise("3.7")
def test_grad_with_no_inputs_is_refused_like_torch():
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises((RuntimeError, ValueError)) as theirs:
        torch.autograd.grad((tx * 2).sum(), [])
    # torch before 2.13 raises ValueError("grad requires non-empty inputs."); the docstring's
    # error (torch's from 2.13 on) is a RuntimeError naming the argument.
    expected = quoted_since("2.13", (type(theirs.value), str(theirs.value)),
                            (RuntimeError, "`inputs` argument to `grad()` cannot be empty."))
    x = mk.tensor([1.0, 2.0], requires_grad=True)
    try:
        A.grad((x * 2).sum(), [])
    except NotImplementedError:
        raise  # the stub: graded TODO
    except Exception as err:  # noqa: BLE001
        assert (type(err), str(err)) == expected
    else:
        raise AssertionError(f"no error; torch raised {expected[0].__name__}({expected[1]!r})")


@pytest.mark.exercise("3.7")
def test_a_lone_tensor_as_grad_outputs():
    tx = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    (expected,) = torch.autograd.grad(tx * tx, tx, grad_outputs=torch.tensor([1.0, 0.5, -1.0], dtype=torch.float64))
    x = mk.tensor([1.0, -2.0, 3.0], dtype=mk.float64, requires_grad=True)
    (got,) = A.grad(x * x, x, grad_outputs=mk.tensor([1.0, 0.5, -1.0], dtype=mk.float64))
    torch.testing.assert_close(got.to_torch(), expected)


@pytest.mark.parametrize("retain_graph", [False, None, True])
@pytest.mark.exercise("3.7")
def test_an_explicit_retain_graph_wins_over_create_graph(retain_graph):
    # retain_graph defaults to create_graph only when it is not given: an explicit False
    # frees the graph even with create_graph=True, and a second pass through it fails.
    outcomes = {}
    for lib, make, grad in (("torch", lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True),
                             torch.autograd.grad),
                            ("minikernel", lambda v: mk.tensor(v, dtype=mk.float64, requires_grad=True), A.grad)):
        x = make([1.0, -2.0])
        y = (x * x).sum()
        grad(y, x, retain_graph=retain_graph, create_graph=True)
        try:
            grad(y, x)
        except NotImplementedError:
            raise
        except RuntimeError:
            outcomes[lib] = "the graph was freed"
        else:
            outcomes[lib] = "the graph was kept"
    assert outcomes["minikernel"] == outcomes["torch"], (
        f"grad(y, x, retain_graph={retain_graph}, create_graph=True), then grad(y, x) again: torch says "
        f"{outcomes['torch']}, yours {outcomes['minikernel']}")
