"""The differentiable operations, as functions: ``F.mul(a, b)``, ``F.sum(x, dim)``, ...

Every operation is a ``Function`` (``function.py``) with a static ``forward`` that
computes the values (numpy, see ``values.py``) and saves what backward needs, and a
static ``backward`` that turns the gradient of the output into gradients of the
inputs. They live by family, forward and backward side by side: ``pointwise.py``,
``views.py``, ``reductions.py``, ``linalg.py``; in-place forms in ``inplace.py``.
Backward formulas are written with these functions, so that with
``create_graph=True`` they are recorded too and can be differentiated again
(second derivatives, gradient penalties).

The formulas that are exercises (3.2 broadcast reduction, 3.4 mul/div/pow,
3.5 matmul, 3.6 max) live in ``derivatives.py``.

Used as ``minikernel.autograd.functions.mul(a, b)`` (imported as ``F``), or through
the Tensor operators when a tensor requires grad: ``a * b``.
"""
from __future__ import annotations

from .api import backward  # noqa: F401 - Tensor.backward's entry (tensor_backends)
from .engine import AccumulateGrad  # noqa: F401 - a leaf's node (Tensor._grad_accumulator)
from .index_put import IndexPut, index_put_, setitem  # noqa: F401
from .indexing import AdvancedIndex, getitem  # noqa: F401
from .inplace import inplace  # noqa: F401
from .joining import Cat, Stack, cat, stack  # noqa: F401
from .linalg import Dot, Matmul, Mm, matmul  # noqa: F401
from .pointwise import (  # noqa: F401
    Add,
    Clone,
    Div,
    Exp,
    Log,
    Mul,
    Neg,
    Pow,
    PowScalarBase,
    PowTensor,
    Relu,
    Sigmoid,
    Sub,
    Tanh,
    Where,
    add,
    clone,
    div,
    eq,
    exp,
    ge,
    gt,
    le,
    log,
    lt,
    mul,
    neg,
    pow,
    relu,
    sigmoid,
    sub,
    tanh,
    where,
)
from .reductions import Amax, Max, MaxDim, MaxResult, Mean, MeanDim, Prod, Sum, SumDim, amax, max, mean, prod, sum  # noqa: F401
from .shape_ops import (  # noqa: F401
    alias,
    diagonal,
    select,
    slice_,
    split,
    split_with_sizes,
    squeeze,
    squeeze_dim,
    squeeze_dims,
    unbind,
    unfold,
    unsqueeze,
)
from .values import ones, ones_like, zeros, zeros_like  # noqa: F401
from .views import (  # noqa: F401
    Expand,
    Index,
    Permute,
    T,
    Transpose,
    View,
    expand,
    index,
    permute,
    reshape,
    t,
    transpose,
    view,
)


def index_tensor(x, indices: tuple):
    """``aten::index.Tensor``'s Autograd kernel: ``x[indices]`` with integer tensors or masks, recorded."""
    return AdvancedIndex.apply(x, indices)


def contiguous(x):
    """``aten::contiguous``'s Autograd kernel: ``x`` itself when contiguous, else a recorded
    row-major copy (torch records ``CloneBackward0``)."""
    return x if x.is_contiguous() else clone(x, True)
