"""``minikernel.nn`` (chapter 04): Module, Parameter, hooks, and a few layers.

Names and behaviour follow ``torch.nn``: build the same model with both, copy
the weights across, and every hook fires in the same order with the same
arguments. The exercises are in ``module.py`` (4.1), ``hooks.py`` (4.2, 4.4),
``backward_hooks.py`` (4.3) and ``state.py`` (4.5).
"""
from . import functional
from . import utils  # chapter 08: clip_grad_norm_
from .hooks import (RemovableHandle, register_module_backward_hook, register_module_forward_hook,
                    register_module_forward_pre_hook, register_module_full_backward_hook,
                    register_module_full_backward_pre_hook)
from .layers import Dropout, Linear, ReLU, Sequential
from .module import Module
from .normalization import LayerNorm  # chapter 05
from .parameter import Parameter

__all__ = ["Module", "Parameter", "Linear", "ReLU", "Dropout", "Sequential", "functional", "RemovableHandle",
           "register_module_forward_pre_hook", "register_module_forward_hook", "register_module_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]
