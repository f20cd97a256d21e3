"""Backward formulas (PyTorch keeps its own in ``tools/autograd/derivatives.yaml``).

Each function receives the gradient of an operation's output and what the
forward saved, and returns the gradients of the inputs, shaped like the inputs.
Write them with ``minikernel.autograd.functions`` (``F.mul``, ``F.matmul``, ...) or with
Tensor operators: either way they are recorded when ``create_graph=True``, which
is what makes second derivatives work.

Broadcasting is the one subtlety every binary formula shares: if ``a`` of shape
(3, 1) was broadcast to (2, 3, 4) in the forward pass, each element of ``a`` was
used 2*4 times, so its gradient is the *sum* of those 8 gradients
(``sum_to_shape``, exercise 3.2).
"""
from __future__ import annotations

from numbers import Number
from typing import Optional, Sequence, Union

from ..course.exercise import exercise
from ..tensor import Tensor
from ..tensor_backends import functions as F  # noqa: F401 - for your exercises

# F is minikernel.autograd.functions, reached through the registry at call time: the op
# modules import this one for their backward formulas, so this one can't import them.

Shape = tuple[int, ...]
Grad = Optional[Tensor]


@exercise("3.2")
def sum_to_shape(grad: Tensor, shape: Sequence[int]) -> Tensor:
    """Sum ``grad`` (the broadcast shape) back down to ``shape`` (an input's shape).

    Two steps, like ``torch.Tensor.sum_to_size``:

    1. sum away the leading dimensions ``grad`` has and ``shape`` lacks;
    2. sum, keeping the dimension, every dimension where ``shape`` has 1 and
       ``grad`` has another size (more, or 0: an empty dimension sums to 1).

    Example: grad (2, 3, 4) to shape (3, 1): sum dim 0 -> (3, 4), then dim 1 with
    keepdim -> (3, 1).

    Matches: ``grad.sum_to_size(shape)``. Use ``F.sum(x, dim, keepdim)``.
    """
    # TODO(3.2): ≈5 lines
    raise NotImplementedError("exercise 3.2 (sum_to_shape) is not implemented yet")


@exercise("3.4")
def mul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``out = a * b`` (broadcast): ``d/da = grad * b``, ``d/db = grad * a``, each summed to its input's shape.

    Matches: the gradients torch's ``MulBackward0`` produces.
    """
    # TODO(3.4): ≈2 lines
    raise NotImplementedError("exercise 3.4 (mul_backward) is not implemented yet")


@exercise("3.4")
def div_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``out = a / b``: ``d/da = grad / b``, ``d/db = -grad * a / b²``, each summed to its input's shape.

    Matches: torch's ``DivBackward0``.
    """
    # TODO(3.4): ≈3 lines
    raise NotImplementedError("exercise 3.4 (div_backward) is not implemented yet")


@exercise("3.4")
def pow_backward(grad: Tensor, base: Tensor, exponent: Union[Tensor, Number], result: Tensor) -> tuple[Tensor, Grad]:
    """``out = base ** exponent``.

    * ``d/dbase = grad * exponent * base ** (exponent - 1)``, and 0 where
      ``exponent == 0`` (PyTorch's choice: ``0 * 0 ** -1`` would be nan);
    * ``d/dexponent = grad * out * log(base)`` — only when ``exponent`` is a Tensor
      (return ``None`` for it otherwise). PyTorch sets this to 0 where ``base == 0``
      and ``exponent >= 0`` (the limit), instead of ``0 * -inf = nan``:
      use ``F.where``.

    Each summed to its input's shape. Matches: torch's ``PowBackward0``/``PowBackward1``.
    """
    # TODO(3.4): ≈7 lines
    raise NotImplementedError("exercise 3.4 (pow_backward) is not implemented yet")


@exercise("3.5")
def matmul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``out = a @ b``: ``d/da = grad @ bᵀ``, ``d/db = aᵀ @ grad`` (ᵀ swaps the last two dims).

    The cases ``torch.matmul`` allows:

    * a 1-D ``a`` is a row ``(1, k)``, a 1-D ``b`` a column ``(k, 1)``; the
      forward removed that dimension from ``out``, so put it back into ``grad``
      first (reshape), and return gradients of the 1-D shapes;
    * batch dimensions broadcast, so each gradient is summed to its input's shape.

    Matches: torch's ``MmBackward0`` / ``DotBackward0`` and batched matmul.
    """
    # TODO(3.5): ≈10 lines
    raise NotImplementedError("exercise 3.5 (matmul_backward) is not implemented yet")


@exercise("3.6")
def max_backward(grad: Tensor, x: Tensor, result: Tensor) -> Tensor:
    """``out = x.max()`` (a 0-d tensor): the gradient goes to the maximal elements.

    When several elements tie for the maximum, PyTorch shares the gradient evenly
    between them: ``mask = F.eq(x, result)``, then ``F.div(F.mul(grad, mask), F.sum(mask))``.
    Use the ``F`` functions, not operators: ``grad * mask`` on tensors outside autograd
    runs chapter 02's kernels, which take no bool tensors (``mul_cpu`` not implemented
    for 'Bool'); ``F.mul`` promotes the mask to ``grad``'s dtype, as torch does.

    Matches: torch's ``MaxBackward1`` (``evenly_distribute_backward``).
    """
    # TODO(3.6): ≈3 lines
    raise NotImplementedError("exercise 3.6 (max_backward) is not implemented yet")


@exercise("3.6")
def max_dim_backward(grad: Tensor, indices: Tensor, shape: Shape, dim: int, keepdim: bool) -> Tensor:
    """``values, indices = x.max(dim, keepdim)``: all of ``grad`` goes to the element
    at ``indices`` along ``dim`` (the first maximum); every other element gets 0.

    Build a tensor of ``shape`` that is 0 except at the chosen positions, then
    multiply by ``grad`` with the reduced dimension put back (size 1) so it
    broadcasts. ``F.eq`` against an ``arange`` along ``dim`` gives the mask.

    Matches: torch's ``MaxBackward0`` (``value_selecting_reduction_backward``).
    """
    # TODO(3.6): ≈8 lines
    raise NotImplementedError("exercise 3.6 (max_dim_backward) is not implemented yet")
