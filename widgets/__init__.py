"""Interactive views for the chapters (ipywidgets).

``stride_explorer`` (chapter 01) draws how a shape, strides and an offset address
a flat storage, computed with your own ``minikernel.strides`` functions.
"""
from .stride_explorer import stride_explorer
from .kernel_trace import kernel_trace  # chapter 02
from .scaler_diagram import scaler_diagram  # chapter 06
from .ring_stepper import ring_stepper  # chapter 07

__all__ = ["stride_explorer"]
