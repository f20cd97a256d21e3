"""``torch.autograd.grad_mode``: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode``. The state itself lives below the Tensor, in ``minikernel/_C/grad_mode.py``
(as torch's lives in ``torch._C``): the Tensor reads it."""
from .._C.grad_mode import (
    backward_running,
    enable_grad,
    engine_running,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "backward_running", "engine_running"]
