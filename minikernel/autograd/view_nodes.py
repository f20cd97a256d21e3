"""The nodes of views written in place and of ``as_strided`` (``CopySlices``,
``AsStridedBackward0``); they live below the Tensor, in ``minikernel/_C/view_nodes.py``."""
from .._C.view_nodes import AsStridedBackward, CopySlices, Geometry, geometry

__all__ = ["CopySlices", "AsStridedBackward", "Geometry", "geometry"]
