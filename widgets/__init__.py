"""Interactive views for the chapters (ipywidgets).

Each view is drawn with the learner's own minikernel functions and says which
exercise to finish while one is still a stub: ``stride_explorer`` (chapter 01),
``GraphViewer`` (03, torch's and your autograd graph side by side),
``kernel_trace`` (02), ``dispatch_trace`` (09), ``norm_explorer`` (05), ``scaler_diagram`` (06), ``ring_stepper`` (07). ``Dashboard``
(chapter 04, used again in 06) streams a training run to visdom, or draws it inline.
"""
from .stride_explorer import stride_explorer
from .graph_render import graph_svg  # chapter 03
from .static_view import graph_picture  # chapter 03
from .graph_viewer import GraphViewer, graph_viewer  # chapter 03
from .kernel_trace import kernel_trace  # chapter 02
from .scaler_diagram import scaler_diagram  # chapter 06
from .ring_stepper import ring_stepper  # chapter 07
from .dashboard import Dashboard  # chapter 04
from .norm_explorer import norm_explorer  # chapter 05
from .dispatch_trace import dispatch_trace  # chapter 09

__all__ = ["stride_explorer", "kernel_trace", "scaler_diagram", "ring_stepper", "Dashboard", "norm_explorer",
           "GraphViewer", "graph_viewer", "graph_svg", "graph_picture", "dispatch_trace"]
