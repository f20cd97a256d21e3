"""minikernel: PyTorch's internals, rebuilt by you, checked against PyTorch.

``MINIKERNEL_SOLUTIONS`` picks which exercises run the reference solutions
(see ``minikernel.exercise``); it is read once, when this package is imported.
"""
from . import device  # first: picks the CUDA simulator before numba is imported (chapter 02)
from . import exercise, strides
from . import amp  # chapter 06
from . import distributed  # chapter 07
from .grading import grade
from .tensor import Tensor, bool_, float32, float64, int32, int64, tensor
from . import kernels, ops  # noqa: E402  chapter 02

exercise.check_selection()

__all__ = ["Tensor", "tensor", "grade", "float32", "float64", "int32", "int64", "bool_"]
