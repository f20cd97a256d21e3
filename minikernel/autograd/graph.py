"""``torch.autograd.graph``: ``Node``, ``saved_tensors_hooks``, the hooks' ``RemovableHandle``.
The graph's classes live below the Tensor, in ``minikernel/_C/graph.py`` (as torch's nodes are
C++ in ``torch._C``): a Tensor holds its node."""
from .._C.graph import (
    Edge,
    Grads,
    Node,
    RemovableHandle,
    SavedTensor,
    add_hook,
    gradient_edge,
    saved_tensors_hooks,
    walk,
)

__all__ = ["Node", "Edge", "Grads", "RemovableHandle", "SavedTensor", "saved_tensors_hooks", "add_hook",
           "gradient_edge", "walk"]
