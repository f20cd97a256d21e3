"""Chapter 10: memory, speed and debugging (``torch.utils``).

* ``checkpoint``    ``checkpoint``/``checkpoint_sequential``: recompute instead of saving
                    (exercise 10.1: the recomputing Function's forward and backward)
* ``saved_tensors`` ``SavedTensorMeter``: what autograd saves for backward, in bytes
* ``op_trace``      ``OpTrace``: every torch call's shapes and dtypes, via a TorchFunctionMode
* ``data``          a small multi-process ``DataLoader`` (exercises 10.2 and 10.3)

These work on torch tensors: the lesson is how PyTorch spends memory and time, so the
measurements run on PyTorch's own autograd and data pipeline.
"""
from . import checkpoint, data, op_trace, saved_tensors

__all__ = ["checkpoint", "data", "op_trace", "saved_tensors"]
