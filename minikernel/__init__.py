"""minikernel: PyTorch's internals, rebuilt by you, checked against PyTorch.

``MINIKERNEL_SOLUTIONS`` picks which exercises run the reference solutions
(see ``minikernel.course.exercise``); it is read once, when this package is imported.
"""
from . import device  # first: picks the CUDA simulator before numba is imported (chapter 02)
from . import strides
from .course import exercise
from . import autograd  # chapter 03
from . import kernels, tensor_backends  # chapters 01-02
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from .tensor import Tensor, bool_, cat, float32, float64, int32, int64, ones, stack, tensor, where, zeros
from . import aten  # every operator, declared once (aten/native_functions.py)
from .aten import registration  # noqa: F401 - registers them with the dispatcher (chapter 09)
from . import nn  # chapter 04
from . import norm  # chapter 05
from . import amp  # chapter 06
from . import distributed  # chapter 07
from . import clip_grad, optim  # chapter 08
from . import library  # chapter 09
from . import ao, utils  # chapter 10
from .course.grading import grade

exercise.check_selection()

__all__ = ["Tensor", "tensor", "zeros", "ones", "grade", "float32", "float64", "int32", "int64", "bool_",
           "cat", "stack", "where", "no_grad", "enable_grad", "inference_mode", "is_inference_mode_enabled", "set_grad_enabled", "is_grad_enabled"]
