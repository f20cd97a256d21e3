"""minikernel: PyTorch's internals, rebuilt by you, checked against PyTorch.

This file only gathers the package; nothing depends on the order it imports in, except
``openmp_policy``, first: for the grading commands it sets OpenMP's wait policy, which
OpenMP reads once, when torch loads it. Every module imports what it needs: numba comes
through ``numba_setup.py`` (after ``device.py`` chose between the GPU and numba's CUDA
simulator), and the operators are registered with the dispatcher once, by
``aten/registration.py``, which imports every layer it registers.

``MINIKERNEL_SOLUTIONS`` picks which exercises run the reference solutions
(see ``minikernel.course.exercise``); it is read once, when this package is imported.
"""
from . import openmp_policy  # first: before anything imports torch

# isort: split
from . import (
    amp,  # chapter 06
    ao,  # chapter 10
    aten,  # every operator, declared once (aten/native_functions.py)
    autograd,  # chapter 03
    clip_grad,  # chapter 08
    device,
    distributed,  # chapter 07
    kernels,  # chapter 02
    library,  # chapter 09
    nn,  # chapter 04
    norm,  # chapter 05
    optim,  # chapter 08
    strides,  # chapter 01
    tensor_backends,
    utils,  # chapter 10
)
from .aten import registration
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .course import exercise
from .course.grading import grade
from .tensor import Tensor, bool_, cat, float32, float64, int32, int64, ones, stack, tensor, where, zeros

bool = bool_  # noqa: A001 - torch.bool; bool_ (numpy's spelling) stays for existing code

exercise.check_selection()

__all__ = ["Tensor", "tensor", "zeros", "ones", "grade", "float32", "float64", "int32", "int64", "bool_",
           "bool", "cat", "stack", "where", "no_grad", "enable_grad", "inference_mode", "is_inference_mode_enabled", "set_grad_enabled", "is_grad_enabled"]
