"""minikernel: PyTorch's internals, rebuilt by you, checked against PyTorch.

``MINIKERNEL_SOLUTIONS`` picks which exercises run the reference solutions
(see ``minikernel.course.exercise``); it is read once, when this package is imported.
"""
from . import device  # first: picks the CUDA simulator before numba is imported (chapter 02)
from . import strides
from .course import exercise
from . import autograd, custom_functions, derivatives, functions  # chapter 03
from .graph import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from . import nn  # chapter 04
from . import amp  # chapter 06
from . import distributed  # chapter 07
from .course.grading import grade
from .tensor import Tensor, bool_, float32, float64, int32, int64, tensor
from . import kernels, ops  # noqa: E402  chapter 02
from . import norm  # noqa: E402  chapter 05
from . import clip_grad, optim  # noqa: E402  chapter 08
from . import ao, utils  # noqa: E402  chapter 10

exercise.check_selection()

__all__ = ["Tensor", "tensor", "grade", "float32", "float64", "int32", "int64", "bool_",
           "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]
