"""The core below the Tensor, as ``torch._C`` is below ``torch.Tensor``: grad mode
(``grad_mode``), the graph's nodes, edges, saved tensors and hooks (``graph``), and the nodes
of views (``view_nodes``). None of them imports the Tensor; the Tensor imports them.
``minikernel.autograd`` shows them to users (``autograd.grad_mode``, ``autograd.graph``)."""
from . import grad_mode, graph, view_nodes

__all__ = ["grad_mode", "graph", "view_nodes"]
