"""Chapter 10: memory, speed and debugging (``torch.utils``).

* ``checkpoint``    ``checkpoint``/``checkpoint_sequential``: recompute instead of saving
                    (exercise 10.1: the recomputing Function's forward and backward)
* ``saved_tensors`` ``SavedTensorMeter``: what autograd saves for backward, in bytes
* ``op_trace``      ``OpTrace``: every torch call's shapes and dtypes, via a TorchFunctionMode
* ``data``          a small multi-process ``DataLoader`` (exercises 10.2 and 10.3)
* ``summary``       a Keras-style model summary from forward hooks (chapter 04)
* ``cuda_tour``     chapter 10's CUDA section: what runs where, with and without a GPU
* ``inplace_abn``   BatchNorm + leaky ReLU saving only its output (in-place ABN)

These work on torch tensors: the lesson is how PyTorch spends memory and time, so the
measurements run on PyTorch's own autograd and data pipeline.
"""
from . import checkpoint, cuda_tour, data, inplace_abn, op_trace, saved_tensors, summary

__all__ = ["checkpoint", "cuda_tour", "data", "inplace_abn", "op_trace", "saved_tensors", "summary"]
