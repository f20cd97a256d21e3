"""Tensor arithmetic: the operators and methods that compute (chapter 02 onwards).

Each one calls an operator (``aten::add``, ...) through minikernel's dispatcher
(chapter 09, ``tensor_backends.py`` registers the kernels): the Autograd key's
kernel records the graph when autograd is involved (chapter 03), otherwise the
backend key's kernel runs ``minikernel.ops`` — device dispatch, dtype dispatch,
checks, output allocation, then your chapter 02 kernel. Mixed into ``Tensor``
(``tensor.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .tensor_backends import route

if TYPE_CHECKING:
    from .tensor import Tensor


class OperatorsMixin:
    """``+ - * / @``, their in-place forms, and the element-wise and reduction methods."""

    def __add__(self, other):
        return _route("add", self, other)

    def __radd__(self, other):
        return _route("add", other, self)

    def __sub__(self, other):
        return _route("sub", self, other)

    def __rsub__(self, other):
        return _route("sub", other, self)

    def __mul__(self, other):
        return _route("mul", self, other)

    def __rmul__(self, other):
        return _route("mul", other, self)

    def __truediv__(self, other):
        return _route("div", self, other)

    def __rtruediv__(self, other):
        return _route("div", other, self)

    def __neg__(self):
        return _route("neg", self)

    def __matmul__(self, other):
        return _route("matmul", self, other)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def add(self, other) -> "Tensor":
        return _route("add", self, other)

    def sub(self, other) -> "Tensor":
        return _route("sub", self, other)

    def mul(self, other) -> "Tensor":
        return _route("mul", self, other)

    def div(self, other) -> "Tensor":
        return _route("div", self, other)

    def add_(self, other) -> "Tensor":
        return _inplace("add", self, other)

    def sub_(self, other) -> "Tensor":
        return _inplace("sub", self, other)

    def mul_(self, other) -> "Tensor":
        return _inplace("mul", self, other)

    def div_(self, other) -> "Tensor":
        return _inplace("div", self, other)

    def neg(self) -> "Tensor":
        return _route("neg", self)

    def exp(self) -> "Tensor":
        return _route("exp", self)

    def log(self) -> "Tensor":
        return _route("log", self)

    def relu(self) -> "Tensor":
        return _route("relu", self)

    def sigmoid(self) -> "Tensor":
        return _route("sigmoid", self)

    def neg_(self) -> "Tensor":
        return _inplace("neg", self)

    def exp_(self) -> "Tensor":
        return _inplace("exp", self)

    def log_(self) -> "Tensor":
        return _inplace("log", self)

    def relu_(self) -> "Tensor":
        return _inplace("relu", self)

    def sigmoid_(self) -> "Tensor":
        return _inplace("sigmoid", self)

    def sum(self, dim=None, keepdim: bool = False) -> "Tensor":
        return _route("sum", self, dim, keepdim)

    def mean(self, dim=None, keepdim: bool = False) -> "Tensor":
        return _route("mean", self, dim, keepdim)

    def amax(self, dim=(), keepdim: bool = False) -> "Tensor":
        return _route("amax", self, dim, keepdim)

    def max(self, dim: int | None = None, keepdim: bool = False) -> "Tensor":
        return _route("max", self, dim, keepdim)

    def matmul(self, other) -> "Tensor":
        return _route("matmul", self, other)

    # ------------- no chapter 02 kernel: the Autograd key's kernel computes them
    def __pow__(self, exponent):
        return _route("pow", self, exponent)

    def __rpow__(self, base):
        return _route("pow", base, self)

    def prod(self, dim=None, keepdim: bool = False) -> "Tensor":
        return _route("prod", self, dim, keepdim)

    def where(self, condition, other) -> "Tensor":
        """``torch.where(condition, self, other)``."""
        return _route("where", condition, self, other)

    def pow(self, exponent) -> "Tensor":
        return _route("pow", self, exponent)

    def tanh(self) -> "Tensor":
        return _route("tanh", self)

    def tanh_(self) -> "Tensor":
        return _route("tanh_", self)

    def __gt__(self, other):
        return _route("gt", self, other)

    def __lt__(self, other):
        return _route("lt", self, other)

    def __ge__(self, other):
        return _route("ge", self, other)

    def __le__(self, other):
        return _route("le", self, other)

    def eq(self, other) -> "Tensor":
        return _route("eq", self, other)


_route = route


def _inplace(name: str, self, other=None):
    """In-place ops: ``aten::<name>_``; the version bump happens at ADInplaceOrView (or in the autograd layer)."""
    return _route(f"{name}_", self) if other is None else _route(f"{name}_", self, other)
