"""``minikernel.nn.utils`` (``torch.nn.utils``): gradient clipping, from chapter 08.

``clip_grad_norm_`` and its two halves live in ``minikernel/clip_grad.py``
(exercise 8.5); this module gives them torch's import path.
"""
from ..clip_grad import clip_grad_norm_, clip_grads_with_norm_, get_total_norm

__all__ = ["clip_grad_norm_", "clip_grads_with_norm_", "get_total_norm"]
